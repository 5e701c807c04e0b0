package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"

	"github.com/etl-project/etl/chunk"
)

// TestShardFollowsTableOneRead: a refused insert that a change of the
// table explains is followed with exactly one read of the table
// (Options.Refresh), and the batch goes again at the same instant, fitted
// to the live table: re-projected when a column was dropped, converted by
// Options.Reshape when a column changed type. A second refusal of the same
// kind is not followed again: the batch fails.
func TestShardFollowsTableOneRead(t *testing.T) {
	t.Parallel()
	plan := func(t *testing.T, cols ...ColumnInfo) *Target {
		t.Helper()
		tg, err := Plan("default", "follow", cols, Mapping{})
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	t.Run("dropped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tg := plan(t, ColumnInfo{Name: "id", Type: "UInt64"}, ColumnInfo{Name: "msg", Type: "String"})
			live := plan(t, ColumnInfo{Name: "id", Type: "UInt64"})
			var reads atomic.Int32
			f := newFake("a")
			f.answer = func(_ context.Context, n int, c fakeCall) error {
				if slices.Contains(c.target.Schema.Names, "msg") {
					return &chgo.Exception{Code: proto.ErrNoSuchColumnInTable, Name: "DB::Exception", Message: "There is no column msg in table"}
				}
				return nil
			}
			o := ShardOptions{QueueCapacity: 4, MaxRows: 1,
				Refresh: func(context.Context) (*Target, error) { reads.Add(1); return live, nil },
				Reshape: func([]*chunk.Chunk, *Target) ([]*chunk.Chunk, error) {
					t.Error("Reshape called for a dropped column")
					return nil, fmt.Errorf("unexpected")
				},
			}
			s, a, _, res, _ := loopShard(t, o, tg, f)
			last := followed(t, s, f, a, tg)
			if got := reads.Load(); got != 1 {
				t.Errorf("the table was read %d times, want 1", got)
			}
			if !slices.Equal(last.target.Schema.Names, []string{"id"}) || !slices.Equal(last.ids, []uint64{0, 1, 2}) {
				t.Errorf("second insert: columns %v ids %v, want [id] [0 1 2]", last.target.Schema.Names, last.ids)
			}
			closeRun(t, s, res)
		})
	})
	// A refusal naming an unknown identifier is both a missing column and
	// a permanent error: the one read finds no column dropped and a type
	// changed, and the batch is converted.
	for _, code := range []proto.Error{proto.ErrTypeMismatch, proto.ErrUnknownIdentifier} {
		t.Run("retyped/"+code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tg := plan(t, ColumnInfo{Name: "id", Type: "UInt64"}, ColumnInfo{Name: "msg", Type: "String"})
				live := plan(t, ColumnInfo{Name: "id", Type: "UInt64"}, ColumnInfo{Name: "msg", Type: "Nullable(String)"})
				var reads, reshapes atomic.Int32
				f := newFake("a")
				f.answer = func(_ context.Context, _ int, c fakeCall) error {
					if c.target != live {
						return &chgo.Exception{Code: code, Name: "DB::Exception", Message: "column msg refused"}
					}
					return nil
				}
				o := ShardOptions{QueueCapacity: 4, MaxRows: 1,
					Refresh: func(context.Context) (*Target, error) { reads.Add(1); return live, nil },
					Reshape: func(chunks []*chunk.Chunk, to *Target) ([]*chunk.Chunk, error) {
						reshapes.Add(1)
						if to != live {
							t.Errorf("Reshape to %v, want the live target", to.Schema.Types)
						}
						return convertIDs(t, chunks, live), nil
					},
				}
				s, a, _, res, _ := loopShard(t, o, tg, f)
				last := followed(t, s, f, a, tg)
				if r, sh := reads.Load(), reshapes.Load(); r != 1 || sh != 1 {
					t.Errorf("the table was read %d times and the batch converted %d times, want 1 and 1", r, sh)
				}
				if !slices.Equal(last.ids, []uint64{0, 1, 2}) {
					t.Errorf("second insert ids %v, want [0 1 2]", last.ids)
				}
				closeRun(t, s, res)
			})
		})
	}
	t.Run("once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tg := plan(t, ColumnInfo{Name: "id", Type: "UInt64"}, ColumnInfo{Name: "msg", Type: "String"})
			live := plan(t, ColumnInfo{Name: "id", Type: "UInt64"}, ColumnInfo{Name: "msg", Type: "Nullable(String)"})
			var reads atomic.Int32
			f := newFake("a")
			f.answer = func(context.Context, int, fakeCall) error {
				return &chgo.Exception{Code: proto.ErrTypeMismatch, Name: "DB::Exception", Message: "Type mismatch for column msg"}
			}
			o := ShardOptions{QueueCapacity: 4, MaxRows: 1,
				Refresh: func(context.Context) (*Target, error) { reads.Add(1); return live, nil },
				Reshape: func(chunks []*chunk.Chunk, _ *Target) ([]*chunk.Chunk, error) {
					return convertIDs(t, chunks, live), nil
				},
			}
			s, a, _, res, _ := loopShard(t, o, tg, f)
			c := idChunk(t, tg, 0, 1)
			enqueue(t, s, c)
			synctest.Wait()
			if got := reads.Load(); got != 1 {
				t.Errorf("the table was read %d times, want 1 (a refusal is followed once per batch)", got)
			}
			if a.count(c) != 0 {
				t.Errorf("a batch refused after its conversion was acknowledged")
			}
			select {
			case err := <-res:
				if err == nil {
					t.Error("Run returned nil after a batch no replica takes")
				}
			default:
				t.Error("Run still runs after a batch no replica takes")
			}
		})
	})
}

// followed enqueues a chunk of ids 0..2 for tg on s, whose first insert
// f refuses, and checks that the batch was inserted again at the same
// instant and acknowledged once. It returns the second insert.
func followed(t *testing.T, s *Shard, f *fakeReplica, a *acks, tg *Target) fakeCall {
	t.Helper()
	c := idChunk(t, tg, 0, 3)
	t0 := time.Now()
	enqueue(t, s, c)
	synctest.Wait()
	if a.count(c) != 1 {
		t.Fatalf("acknowledged %d times, want 1", a.count(c))
	}
	if got := f.times(t0); !slices.Equal(got, []time.Duration{0, 0}) {
		t.Errorf("inserts at %v, want two at +0", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all[len(f.all)-1]
}

// convertIDs is a Reshape for tests: one chunk of live with the ids of
// chunks (id UInt64 first) and msg "m<id>".
func convertIDs(t *testing.T, chunks []*chunk.Chunk, live *Target) []*chunk.Chunk {
	t.Helper()
	var rows [][]any
	for _, c := range chunks {
		for r := 0; r < c.Rows; r++ {
			id := c.Cols[0].(*chunk.Fixed[uint64]).Data[r]
			rows = append(rows, []any{id, fmt.Sprintf("m%d", id)})
		}
	}
	return []*chunk.Chunk{buildChunk(t, live, 0, rows)}
}
