package clickhouse

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// TestShardNoAckAfterFailure: once a batch failed for good, a batch whose
// insert was in flight meanwhile is not acknowledged, even when its insert
// returns success afterwards (the shard has failed: its caller replays
// from the last commit, and OnDone must not move anything past it).
func TestShardNoAckAfterFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "fail")
		f := newFake("a")
		second := make(chan struct{})
		f.answer = func(ctx context.Context, n int, _ fakeCall) error {
			if n == 0 {
				<-second // fail once the second batch's insert runs
				return &ch.Exception{Code: 16, Name: "DB::Exception", Message: "No such column"}
			}
			close(second)
			<-ctx.Done() // the shard gives up on it; the insert lands anyway
			return nil
		}
		s, a, _, res, _ := loopShard(t, ShardOptions{QueueCapacity: 4, MaxRows: 1, MaxInflight: 2}, tg, f)
		first, next := idChunk(t, tg, 0, 1), idChunk(t, tg, 1, 1)
		enqueue(t, s, first, next)
		synctest.Wait()
		var ie *InsertError
		if err := <-res; !errors.As(err, &ie) || !Permanent(err) {
			t.Fatalf("Run returned %v, want a permanent *InsertError", err)
		}
		if a.count(first) != 0 || a.count(next) != 0 {
			t.Fatalf("acknowledged after the shard failed: chunk 0 %d times, chunk 1 %d times", a.count(first), a.count(next))
		}
	})
}

// TestShardSpaceAtHalf: after a refused TryEnqueue, OnSpace waits until the
// queue has drained to half its capacity, not for the first free slot.
func TestShardSpaceAtHalf(t *testing.T) {
	tg := idTarget(t, "space")
	spaces := 0
	s := NewShard(ShardOptions{Name: "0", Target: tg, Replicas: []Inserter{newFake("a")}, QueueCapacity: 4, MaxRows: 1,
		OnSpace: func() { spaces++ }, Metrics: NewMetrics(nil, nil), Log: testLog(t)})
	for i := range 4 {
		enqueue(t, s, idChunk(t, tg, i, 1))
	}
	if s.TryEnqueue(idChunk(t, tg, 4, 1)) {
		t.Fatal("a full queue took a chunk")
	}
	<-s.queue
	s.spaceIfFull()
	if spaces != 0 {
		t.Fatalf("OnSpace called with %d of 4 queued", len(s.queue))
	}
	<-s.queue
	s.spaceIfFull()
	if spaces != 1 {
		t.Fatalf("OnSpace called %d times once the queue drained to half, want 1", spaces)
	}
}

// TestShardChunkAlone: with no batch trigger set (exactly-once, where each
// chunk is a whole block), every chunk is a batch of its own, a chunk of
// no rows included (a block whose records were all refused, or whose
// offsets hold no record): it is acknowledged at once, not held until
// another chunk comes, and never merged with the next.
func TestShardChunkAlone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "alone")
		f := newFake("a")
		s, a, m, _, _ := loopShard(t, ShardOptions{QueueCapacity: 4, MaxInflight: 2}, tg, f)
		empty := idChunk(t, tg, 0, 0)
		enqueue(t, s, empty)
		synctest.Wait()
		if a.count(empty) != 1 {
			t.Fatalf("a chunk of no rows alone in the queue was acknowledged %d times, want 1", a.count(empty))
		}
		one, two := idChunk(t, tg, 0, 2), idChunk(t, tg, 2, 0)
		enqueue(t, s, one, two)
		synctest.Wait()
		if a.count(one) != 1 || a.count(two) != 1 {
			t.Fatalf("acknowledged %d and %d times, want once each", a.count(one), a.count(two))
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.all {
			if len(c.chunks) != 1 {
				t.Fatalf("an insert of %d chunks (%d rows): each chunk must be a batch of its own", len(c.chunks), c.rows)
			}
		}
		if got := flushes(m, "0", reasonRows); got != 3 {
			t.Fatalf("%v batches closed, want 3 (one per chunk)", got)
		}
	})
}
