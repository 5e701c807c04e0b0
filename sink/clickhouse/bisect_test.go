package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// rejectTable refuses, through its MATERIALIZED column, every row whose
// msg is not a date: the server's own CANNOT_PARSE_DATE (code 38).
const rejectTable = "(id UInt64, msg String, d Date MATERIALIZED toDate(msg)) ENGINE = MergeTree ORDER BY id"

// recordChunk builds a chunk of records at offsets [first, first+len(recs))
// of partition p, each record making the rows its ids say (msg "bad" for
// the ids in bad, a date otherwise), marked as the pipeline marks them.
func recordChunk(t *testing.T, tg *Target, p int32, first int64, recs [][]uint64, bad map[uint64]bool) *chunk.Chunk {
	t.Helper()
	c, err := chunk.New(tg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for k, ids := range recs {
		for _, id := range ids {
			msg := "2020-01-02"
			if bad[id] {
				msg = "bad"
			}
			appendValue(t, c.Cols[0], id)
			appendValue(t, c.Cols[1], msg)
			c.Rows++
		}
		off := first + int64(k)
		c.AddRange("events", p, 1, off, off+1)
		c.MarkRecord(off)
	}
	c.Measure()
	return c
}

// TestShardBisectsRefusedRows: a batch the server refuses for some rows'
// values is bisected down to the records behind them. Each is handed to
// OnRejected once, with its own rows, offset and the server's message;
// every other row is written once; the batch is acknowledged once.
func TestShardBisectsRefusedRows(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.rej "+rejectTable)
	c := connect(t, srv, "rej")
	tg := plan(t, c)
	m := NewMetrics(nil, nil)
	a := newAcks()

	type got struct {
		p        int32
		off      int64
		from, to int
		ids      string
		err      string
	}
	var (
		mu       sync.Mutex
		rejected []got
	)
	s := NewShard(ShardOptions{
		Name: "b", Client: c, Target: tg,
		QueueCapacity: 8, MaxRows: 1000, Linger: 200 * time.Millisecond, MaxInflight: 1,
		InitialBackoff: 10 * time.Millisecond,
		OnDone:         a.onDone, Log: testLog(t), Metrics: m,
		OnRejected: func(ctx context.Context, r Rejected) error {
			var ids []string
			for i := r.From; i < r.To; i++ {
				ids = append(ids, fmt.Sprint(r.Chunk.Cols[0].(*chunk.Fixed[uint64]).Data[i]))
			}
			mu.Lock()
			defer mu.Unlock()
			rejected = append(rejected, got{r.Partition, r.Offset, r.From, r.To, strings.Join(ids, ","), r.Err.Error()})
			return nil
		},
	})
	res, _ := runShard(t, s)

	// Chunk A (partition 0, offsets 100..): 40 records of one row; ids 7
	// and 31 are bad. Chunk B (partition 1, offsets 500..): 20 records of
	// two rows each; the second row of record 512 (id 1025) is bad, so
	// both of its rows are refused with it.
	bad := map[uint64]bool{7: true, 31: true, 1025: true}
	var recsA, recsB [][]uint64
	for i := uint64(0); i < 40; i++ {
		recsA = append(recsA, []uint64{i})
	}
	for i := uint64(0); i < 20; i++ {
		recsB = append(recsB, []uint64{1000 + 2*i, 1001 + 2*i})
	}
	ca := recordChunk(t, tg, 0, 100, recsA, bad)
	cb := recordChunk(t, tg, 1, 500, recsB, bad)
	if !s.TryEnqueue(ca) || !s.TryEnqueue(cb) {
		t.Fatal("enqueue refused")
	}
	eventually(t, 30*time.Second, "both chunks acknowledged", func() bool { return a.count(ca) == 1 && a.count(cb) == 1 })
	s.Close()
	if err := wait(t, res, 30*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}

	sort.Slice(rejected, func(i, j int) bool { return rejected[i].ids < rejected[j].ids })
	want := []got{
		{1, 512, 24, 26, "1024,1025", ""},
		{0, 131, 31, 32, "31", ""},
		{0, 107, 7, 8, "7", ""},
	}
	if len(rejected) != len(want) {
		t.Fatalf("rejected %+v, want %+v", rejected, want)
	}
	for i, w := range want {
		g := rejected[i]
		if g.p != w.p || g.off != w.off || g.from != w.from || g.to != w.to || g.ids != w.ids {
			t.Errorf("rejected[%d] = %+v, want %+v", i, g, w)
		}
		if !strings.Contains(g.err, "Cannot parse date") {
			t.Errorf("rejected[%d]: error %q does not carry the server's refusal", i, g.err)
		}
	}
	// Every good row once, no refused record's row.
	if got := srv.Query(t, "SELECT count(), uniqExact(id), countIf(id IN (7, 31, 1024, 1025)) FROM default.rej"); got != "76\t76\t0" {
		t.Fatalf("count, distinct, refused rows = %s, want 76 76 0", got)
	}
	if got := testutil.ToFloat64(m.bisections.WithLabelValues("b")); got != 1 {
		t.Errorf("etl_sink_bisections_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.rejected.WithLabelValues("b")); got != 3 {
		t.Errorf("etl_sink_rejected_records_total = %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("b", "permanent")); got != 0 {
		t.Errorf("etl_sink_errors_total{kind=permanent} = %v, want 0: the shard did not fail", got)
	}
	if calls, _ := a.total(); calls != 1 {
		t.Errorf("OnDone called %d times, want once for the batch", calls)
	}
}

// TestShardBisectStopsOnHandlerError: when OnRejected fails (a dead-letter
// write that cannot be done), the shard fails and the batch is not
// acknowledged; so its offsets are not committed.
func TestShardBisectStopsOnHandlerError(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.rej2 "+rejectTable)
	c := connect(t, srv, "rej2")
	tg := plan(t, c)
	a := newAcks()
	boom := errors.New("dead-letter topic unavailable")
	s := NewShard(ShardOptions{
		Name: "b", Client: c, Target: tg, QueueCapacity: 2, MaxRows: 1, MaxInflight: 1,
		OnDone: a.onDone, Log: testLog(t), Metrics: NewMetrics(nil, nil),
		OnRejected: func(context.Context, Rejected) error { return boom },
	})
	res, _ := runShard(t, s)
	recs := [][]uint64{{1}, {2}, {3}, {4}}
	ck := recordChunk(t, tg, 0, 0, recs, map[uint64]bool{3: true})
	s.TryEnqueue(ck)
	err := wait(t, res, 30*time.Second)
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want the handler's error", err)
	}
	if a.count(ck) != 0 {
		t.Fatal("the batch was acknowledged")
	}
}

// TestShardNoBisectForTableErrors: a refusal every row would meet (a
// column the table lacks) is not bisected: the shard fails as before.
func TestShardNoBisectForTableErrors(t *testing.T) {
	if RowRejected(&InsertError{Err: errors.New("x")}) {
		t.Fatal("a non-server error is not a row's")
	}
	for _, code := range []int32{16, 60, 81, 193, 497} {
		if rowRejectedCodes[code] {
			t.Errorf("code %d is the table's or the user's, not a row's", code)
		}
	}
}
