package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// acks records OnDone calls.
type acks struct {
	mu     sync.Mutex
	calls  int
	chunks map[*chunk.Chunk]int
}

func newAcks() *acks { return &acks{chunks: map[*chunk.Chunk]int{}} }

func (a *acks) onDone(chunks []*chunk.Chunk) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	for _, c := range chunks {
		a.chunks[c]++
	}
}

func (a *acks) count(c *chunk.Chunk) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.chunks[c]
}

func (a *acks) total() (calls, chunks int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, len(a.chunks)
}

// runShard runs s.Run in a goroutine the test owns; the returned channel
// yields Run's result. The cleanup cancels Run and waits for it.
func runShard(t *testing.T, s *Shard) (<-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res <- s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return res, cancel
}

func wait(t *testing.T, res <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		return nil
	}
}

const idTable = "(id UInt64, msg String) ENGINE = MergeTree ORDER BY id"

// newShardEnv starts a ClickHouse with an idTable named table and returns
// it with a client for the table (opts change the client's Options), the
// table's plan, unregistered metrics and an ack recorder.
func newShardEnv(t *testing.T, table string, opts ...func(*Options)) (*testenv.CH, *Client, *Target, *Metrics, *acks) {
	t.Helper()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default."+table+" "+idTable)
	c := connect(t, srv, table, opts...)
	return srv, c, plan(t, c), NewMetrics(nil, nil), newAcks()
}

func TestShardEndToEnd(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.e2e "+idTable)
	c := connect(t, srv, "e2e", func(o *Options) { o.InsertTimeout = 30 * time.Second })
	tg := plan(t, c)

	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, prometheus.Labels{"pipeline": "test"})
	a := newAcks()
	space := make(chan struct{}, 1)
	s := NewShard(ShardOptions{
		Name: "0", Client: c, Target: tg,
		QueueCapacity: 4, MaxRows: 5000, Linger: 20 * time.Millisecond, MaxInflight: 2,
		OnDone: a.onDone,
		OnSpace: func() {
			select {
			case space <- struct{}{}:
			default:
			}
		},
		Log: testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)

	const nChunks, perChunk = 50, 1000
	chunks := make([]*chunk.Chunk, nChunks)
	refused := 0
	for i := range chunks {
		chunks[i] = idChunk(t, tg, i*perChunk, perChunk)
		for !s.TryEnqueue(chunks[i]) {
			refused++
			// A paused producer is rescheduled by OnSpace; the timeout
			// only keeps a broken OnSpace from hanging the test.
			select {
			case <-space:
			case <-time.After(10 * time.Second):
				t.Fatal("no OnSpace within 10s after a refused enqueue")
			}
		}
	}
	s.Close()
	if s.TryEnqueue(idChunk(t, tg, 0, 1)) {
		t.Error("TryEnqueue after Close succeeded")
	}
	if err := wait(t, res, 60*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}

	if got := srv.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.e2e"); got != "50000\t50000\t0\t49999" {
		t.Errorf("table holds count, uniq, min, max = %s", got)
	}
	calls, acked := a.total()
	if acked != nChunks {
		t.Errorf("%d chunks acknowledged, want %d", acked, nChunks)
	}
	for i, ch := range chunks {
		if n := a.count(ch); n != 1 {
			t.Errorf("chunk %d acknowledged %d times", i, n)
		}
	}
	rows := testutil.ToFloat64(m.records.WithLabelValues("0"))
	if rows != nChunks*perChunk {
		t.Errorf("etl_sink_records_total = %v", rows)
	}
	var flushes float64
	for _, r := range []string{reasonRows, reasonBytes, reasonLinger, reasonDrain} {
		flushes += testutil.ToFloat64(m.flushes.WithLabelValues("0", r))
	}
	if int(flushes) != calls {
		t.Errorf("flushes %v, OnDone calls %d", flushes, calls)
	}
	if got := testutil.ToFloat64(m.queueFull.WithLabelValues("0")); int(got) != refused {
		t.Errorf("etl_queue_full_events_total = %v, refused enqueues %d", got, refused)
	}
	if got := testutil.ToFloat64(m.queueCapacity.WithLabelValues("0")); got != 4 {
		t.Errorf("etl_queue_capacity = %v", got)
	}
	if got := testutil.ToFloat64(m.inflight.WithLabelValues("0")); got != 0 {
		t.Errorf("etl_sink_inflight_batches = %v after Run", got)
	}
	t.Logf("%d OnDone calls, %d refused enqueues, flushes rows=%v linger=%v drain=%v", calls, refused,
		testutil.ToFloat64(m.flushes.WithLabelValues("0", reasonRows)),
		testutil.ToFloat64(m.flushes.WithLabelValues("0", reasonLinger)),
		testutil.ToFloat64(m.flushes.WithLabelValues("0", reasonDrain)))
}

// TestShardRetriesThroughOutage: the shard's only replica is down; its
// breaker opens, for an hour, yet the shard keeps probing it at the retry
// backoff, so the rows go in soon after the server is back.
func TestShardRetriesThroughOutage(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "outage", func(o *Options) { o.InsertTimeout = 5 * time.Second })
	s := NewShard(ShardOptions{
		Name: "7", Client: c, Target: tg,
		QueueCapacity: 8, MaxRows: 1000, Linger: 10 * time.Millisecond, MaxInflight: 2,
		InitialBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
		Breaker: BreakerOptions{FailureThreshold: 2, OpenFor: time.Hour},
		OnDone:  a.onDone, Log: testLog(t), Metrics: m,
	})

	srv.Stop(t)
	res, _ := runShard(t, s)
	chunks := make([]*chunk.Chunk, 5)
	for i := range chunks {
		chunks[i] = idChunk(t, tg, i*100, 100)
		if !s.TryEnqueue(chunks[i]) {
			t.Fatalf("enqueue %d refused", i)
		}
	}
	time.Sleep(3 * time.Second)
	if calls, _ := a.total(); calls != 0 {
		t.Fatalf("OnDone called %d times while the server was down", calls)
	}
	retries := testutil.ToFloat64(m.retries.WithLabelValues("7"))
	if retries < 2 {
		t.Errorf("etl_sink_retries_total = %v after 3s of outage", retries)
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("7", "permanent")); got != 0 {
		t.Errorf("permanent errors during an outage: %v", got)
	}
	if got := testutil.ToFloat64(m.breakerOpens.WithLabelValues("7", c.Addr())); got < 1 {
		t.Errorf("the breaker never opened during the outage (opens %v)", got)
	}
	srv.Start(t)
	back := time.Now()
	s.Close()
	if err := wait(t, res, 30*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("every batch in %v after the server was back", time.Since(back).Round(time.Millisecond))
	if n := srv.Count(t, "default.outage"); n != 500 {
		t.Errorf("%d rows after the outage, want 500", n)
	}
	for i, ch := range chunks {
		if n := a.count(ch); n != 1 {
			t.Errorf("chunk %d acknowledged %d times", i, n)
		}
	}
	t.Logf("retries %v, transient errors %v", retries, testutil.ToFloat64(m.errors.WithLabelValues("7", "transient")))
}

func TestShardBackpressure(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "bp")
	space := make(chan struct{}, 10)
	s := NewShard(ShardOptions{
		Name: "bp", Client: c, Target: tg,
		QueueCapacity: 2, MaxRows: 1, MaxInflight: 1,
		OnDone:  a.onDone,
		OnSpace: func() { space <- struct{}{} },
		Log:     testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)

	thaw := freeze(t, srv)
	var chunks []*chunk.Chunk
	for i := range 5 {
		chunks = append(chunks, idChunk(t, tg, 10*i, 10))
	}
	if !s.TryEnqueue(chunks[0]) {
		t.Fatal("first enqueue refused")
	}
	// The loop takes chunk 0 and starts its insert, which hangs on the
	// frozen server.
	eventually(t, 5*time.Second, "the first insert to start", func() bool {
		return s.QueueLen() == 0 && testutil.ToFloat64(m.inflight.WithLabelValues("bp")) == 1
	})
	// With MaxInflight 1 it takes chunk 1 as the next batch, complete
	// (MaxRows 1), and then nothing more.
	if !s.TryEnqueue(chunks[1]) {
		t.Fatal("enqueue into an empty queue refused")
	}
	eventually(t, 5*time.Second, "the next batch to be taken", func() bool { return s.QueueLen() == 0 })
	if !s.TryEnqueue(chunks[2]) || !s.TryEnqueue(chunks[3]) {
		t.Fatal("enqueue into a queue with room refused")
	}
	time.Sleep(100 * time.Millisecond) // time to take more, which it must not
	if s.TryEnqueue(chunks[4]) {
		t.Fatal("enqueue into a full queue accepted")
	}
	if got := testutil.ToFloat64(m.queueFull.WithLabelValues("bp")); got != 1 {
		t.Errorf("etl_queue_full_events_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.queueDepth.WithLabelValues("bp")); got != 2 {
		t.Errorf("etl_queue_depth = %v, want 2", got)
	}
	select {
	case <-space:
		t.Fatal("OnSpace called while the queue was still full")
	case <-time.After(300 * time.Millisecond):
	}
	if calls, _ := a.total(); calls != 0 {
		t.Fatalf("OnDone called %d times while the server was frozen", calls)
	}

	thaw()
	select {
	case <-space:
	case <-time.After(10 * time.Second):
		t.Fatal("OnSpace not called after the server came back")
	}
	if !s.TryEnqueue(chunks[4]) {
		t.Fatal("enqueue after OnSpace refused")
	}
	closeAndCheck(t, s, res, srv, "default.bp", 50, chunks, a)
}

func TestShardPermanentError(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.perm (id UInt64, msg String, extra String) ENGINE = MergeTree ORDER BY id")
	c := connect(t, srv, "perm")
	tg := plan(t, c)
	m := NewMetrics(nil, nil)
	a := newAcks()
	s := NewShard(ShardOptions{
		Name: "p", Client: c, Target: tg,
		QueueCapacity: 4, MaxRows: 1, MaxInflight: 1,
		InitialBackoff: 10 * time.Millisecond,
		OnDone:         a.onDone, Log: testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)
	row := func(id int) *chunk.Chunk {
		return buildChunk(t, tg, int64(id), [][]any{{uint64(id), "m", "x"}})
	}
	first := row(1)
	s.TryEnqueue(first)
	eventually(t, 10*time.Second, "the first chunk to be acknowledged", func() bool { return a.count(first) == 1 })

	srv.Exec(t, "ALTER TABLE default.perm DROP COLUMN extra")
	bad, later := row(2), row(3)
	s.TryEnqueue(bad)
	s.TryEnqueue(later)
	err := wait(t, res, 30*time.Second)
	var ie *InsertError
	if !errors.As(err, &ie) || !Permanent(err) {
		t.Fatalf("Run returned %v (%T), want a permanent *InsertError", err, err)
	}
	if ie.Table != "default.perm" || ie.Attempts != 1 {
		t.Errorf("InsertError table %q attempts %d", ie.Table, ie.Attempts)
	}
	t.Logf("Run: %v", err)
	if a.count(bad) != 0 || a.count(later) != 0 {
		t.Errorf("chunks after the permanent error acknowledged: bad %d, later %d", a.count(bad), a.count(later))
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("p", "permanent")); got != 1 {
		t.Errorf("etl_sink_errors_total{kind=permanent} = %v", got)
	}
	if got := testutil.ToFloat64(m.retries.WithLabelValues("p")); got != 0 {
		t.Errorf("a permanent error was retried %v times", got)
	}
}

func TestShardHardStopDuringBackoff(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "hard")
	s := NewShard(ShardOptions{
		Name: "h", Client: c, Target: tg,
		QueueCapacity: 4, MaxRows: 1, MaxInflight: 2,
		InitialBackoff: 30 * time.Second, MaxBackoff: time.Minute,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	srv.Stop(t)
	res, cancel := runShard(t, s)
	for i := range 4 {
		s.TryEnqueue(idChunk(t, tg, i, 1))
	}
	// Two inserts run, the third chunk is the next batch, complete and
	// waiting for a slot, and the fourth stays in the queue.
	eventually(t, 10*time.Second, "two inserts waiting to retry, the next batch taken", func() bool {
		return testutil.ToFloat64(m.retries.WithLabelValues("h")) == 2 && s.QueueLen() == 1
	})
	time.Sleep(100 * time.Millisecond) // into the backoff wait
	start := time.Now()
	cancel()
	err := wait(t, res, 5*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Run took %v to stop", d)
	}
	if calls, _ := a.total(); calls != 0 {
		t.Errorf("OnDone called %d times", calls)
	}
	if got := testutil.ToFloat64(m.inflight.WithLabelValues("h")); got != 0 {
		t.Errorf("inflight = %v after Run", got)
	}
	if got := strconv.Itoa(s.QueueLen()); got != "1" {
		t.Errorf("queue holds %s chunks after a hard stop, want the 1 never taken", got)
	}
}

func TestShardLingerAndCloseBeforeRun(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "linger")
	s := NewShard(ShardOptions{
		Name: "l", Client: c, Target: tg,
		QueueCapacity: 4, MaxRows: 1 << 20, MaxBytes: 1 << 30, Linger: 100 * time.Millisecond,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)
	one := idChunk(t, tg, 0, 3)
	start := time.Now()
	s.TryEnqueue(one)
	eventually(t, 5*time.Second, "the lingering batch to be inserted", func() bool { return a.count(one) == 1 })
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("batch inserted after %v, before its linger", d)
	}
	if got := testutil.ToFloat64(m.flushes.WithLabelValues("l", reasonLinger)); got != 1 {
		t.Errorf("flushes{linger} = %v", got)
	}
	two := idChunk(t, tg, 3, 3)
	s.TryEnqueue(two)
	// A chunk whose records were all filtered out: no rows, only a span.
	empty := buildChunk(t, tg, 100, nil)
	empty.AddRange("events", 0, 1, 100, 150)
	s.TryEnqueue(empty)
	s.Close()
	if err := wait(t, res, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if a.count(two) != 1 || a.count(empty) != 1 || testutil.ToFloat64(m.flushes.WithLabelValues("l", reasonDrain)) != 1 {
		t.Errorf("Close did not drain the partial batch: acked %d and %d", a.count(two), a.count(empty))
	}
	// A batch of empty chunks only is done without a server round trip.
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{empty}); err != nil {
		t.Errorf("insert of an empty chunk: %v", err)
	}

	// Closed before Run: Run returns at once.
	s2 := NewShard(ShardOptions{Name: "l2", Client: c, Target: tg})
	s2.Close()
	res2, _ := runShard(t, s2)
	if err := wait(t, res2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count(t, "default.linger"); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
}

// TestShardIdleFlush: a batch holding a quarter of max_rows is inserted
// once its input goes quiet for the idle time, long before its linger; a
// smaller one waits for its linger, and a stream of chunks that keeps
// arriving within the idle time is not cut by it. The remainder of a burst
// (batches begun within the linger of a full one: the end of a backlog,
// perhaps in pieces) is inserted at the idle time whatever its size; after
// that, small batches wait for their linger again.
func TestShardIdleFlush(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "idle")
	const linger = 3 * time.Second
	s := NewShard(ShardOptions{
		Name: "i", Client: c, Target: tg,
		QueueCapacity: 16, MaxRows: 100, Linger: linger, Idle: 50 * time.Millisecond,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)
	flushes := func(reason string) float64 { return testutil.ToFloat64(m.flushes.WithLabelValues("i", reason)) }

	// 24 rows: under a quarter of 100, so the batch waits for its linger.
	small := idChunk(t, tg, 0, 24)
	s.TryEnqueue(small)
	time.Sleep(500 * time.Millisecond) // ten idle periods
	if a.count(small) != 0 || flushes(reasonIdle) != 0 {
		t.Fatalf("a batch of 24 rows (max_rows 100) was inserted after 0.5 s; it must wait for its linger (%v)", linger)
	}

	// One more row makes 25, a quarter: inserted once the input is quiet.
	quarter := idChunk(t, tg, 24, 1)
	start := time.Now()
	s.TryEnqueue(quarter)
	eventually(t, 10*time.Second, "the idle batch to be inserted", func() bool { return a.count(quarter) == 1 })
	t.Logf("batch of 25 rows inserted %v after its input went quiet", time.Since(start).Round(time.Millisecond))
	if a.count(small) != 1 || flushes(reasonIdle) != 1 || flushes(reasonLinger) != 0 {
		t.Fatalf("want one idle flush of both chunks: acked %d, idle %v, linger %v", a.count(small), flushes(reasonIdle), flushes(reasonLinger))
	}

	// Chunks arriving back to back keep the batch open until max_rows
	// closes it, although it passes a quarter after the third.
	var stream []*chunk.Chunk
	for i := range 10 {
		ch := idChunk(t, tg, 25+10*i, 10)
		stream = append(stream, ch)
		if !s.TryEnqueue(ch) {
			t.Fatalf("queue of 16 refused chunk %d", i)
		}
	}
	eventually(t, 10*time.Second, "the full batch to be inserted", func() bool { return a.count(stream[9]) == 1 })
	burstEnd := time.Now().Add(linger) // the window closes before this
	if got := flushes(reasonRows); got != 1 || flushes(reasonIdle) != 1 {
		t.Errorf("a stream of 10 chunks 5 ms apart: flushes rows %v, idle %v; want 1 and still 1", got, flushes(reasonIdle))
	}

	// The tail of that burst: 5 rows, inserted once the input is quiet.
	tail := idChunk(t, tg, 125, 5)
	s.TryEnqueue(tail)
	eventually(t, 10*time.Second, "the tail of the burst to be inserted", func() bool { return a.count(tail) == 1 })
	if flushes(reasonIdle) != 2 || flushes(reasonLinger) != 0 {
		t.Fatalf("the tail of a burst: idle %v, linger %v; want 2 and 0", flushes(reasonIdle), flushes(reasonLinger))
	}
	// A second piece of the tail, still within the linger of the full
	// batch: also inserted once the input is quiet.
	tail2 := idChunk(t, tg, 130, 5)
	s.TryEnqueue(tail2)
	eventually(t, 10*time.Second, "the second piece of the tail to be inserted", func() bool { return a.count(tail2) == 1 })
	if time.Now().After(burstEnd) {
		t.Fatalf("the second piece of the tail was inserted after the burst's window (%v) closed", linger)
	}
	if flushes(reasonIdle) != 3 || flushes(reasonLinger) != 0 {
		t.Fatalf("the second piece of the tail: idle %v, linger %v; want 3 and 0", flushes(reasonIdle), flushes(reasonLinger))
	}
	// Then, past the burst's window, quiet traffic again: a small batch
	// waits for its linger.
	time.Sleep(time.Until(burstEnd) + 100*time.Millisecond)
	late := idChunk(t, tg, 135, 5)
	s.TryEnqueue(late)
	time.Sleep(500 * time.Millisecond)
	if a.count(late) != 0 {
		t.Fatalf("a batch of 5 rows begun after the burst's window was inserted after 0.5 s; it must wait for its linger (%v)", linger)
	}
	eventually(t, 10*time.Second, "the late batch to be inserted at its linger", func() bool { return a.count(late) == 1 })
	if flushes(reasonLinger) != 1 {
		t.Errorf("the late batch: linger flushes %v, want 1", flushes(reasonLinger))
	}
	s.Close()
	if err := wait(t, res, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := srv.Count(t, "default.idle"); n != 140 {
		t.Errorf("%d rows, want 140", n)
	}
}

// TestShardFirstAtOnce: with FirstAtOnce the shard's first chunk is
// inserted at once (flush reason start), without waiting for max_rows or
// the linger; the batches after it wait for them as usual.
func TestShardFirstAtOnce(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "firstatonce")
	s := NewShard(ShardOptions{
		Name: "f", Client: c, Target: tg,
		QueueCapacity: 16, MaxRows: 100, Linger: 30 * time.Second, FirstAtOnce: true,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	runShard(t, s)
	flushes := func(reason string) float64 { return testutil.ToFloat64(m.flushes.WithLabelValues("f", reason)) }
	first := idChunk(t, tg, 0, 10)
	s.TryEnqueue(first)
	eventually(t, 10*time.Second, "the first chunk to be inserted", func() bool { return a.count(first) == 1 })
	if got := srv.Count(t, "default.firstatonce"); got != 10 || flushes(reasonStart) != 1 {
		t.Fatalf("after the first chunk: %d rows in the table, %v start flushes; want 10 and 1", got, flushes(reasonStart))
	}
	second := idChunk(t, tg, 10, 10)
	s.TryEnqueue(second)
	time.Sleep(300 * time.Millisecond)
	if a.count(second) != 0 {
		t.Fatal("the second chunk was inserted on its own: only the first batch goes at once")
	}
	rest := idChunk(t, tg, 20, 90)
	s.TryEnqueue(rest)
	eventually(t, 10*time.Second, "the full batch to be inserted", func() bool { return a.count(rest) == 1 })
	if a.count(second) != 1 || flushes(reasonRows) != 1 || flushes(reasonStart) != 1 {
		t.Fatalf("second batch: acked %d, rows flushes %v, start flushes %v; want 1, 1, 1", a.count(second), flushes(reasonRows), flushes(reasonStart))
	}
}

// closeAndCheck closes s and waits for its Run, then checks that table
// holds rows rows and that each of chunks was acknowledged exactly once.
func closeAndCheck(t *testing.T, s *Shard, res <-chan error, srv *testenv.CH, table string, rows uint64, chunks []*chunk.Chunk, a *acks) {
	t.Helper()
	s.Close()
	if err := wait(t, res, 30*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := srv.Count(t, table); n != rows {
		t.Errorf("%s: %d rows, want %d", table, n, rows)
	}
	for i, ch := range chunks {
		if n := a.count(ch); n != 1 {
			t.Errorf("chunk %d acknowledged %d times", i, n)
		}
	}
}

// TestShardBuildsNextBatchWhileInserting: while every insert slot is busy
// the batching loop goes on taking chunks until the next batch is
// complete, so the producers are held back by a complete batch waiting for
// a slot, not by a queue of a few chunks (which would pause the source's
// partitions over and over during a backlog).
func TestShardBuildsNextBatchWhileInserting(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "nb")
	s := NewShard(ShardOptions{
		Name: "nb", Client: c, Target: tg,
		QueueCapacity: 2, MaxRows: 30, MaxInflight: 1,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	res, _ := runShard(t, s)
	thaw := freeze(t, srv)
	var chunks []*chunk.Chunk
	for i := range 9 {
		chunks = append(chunks, idChunk(t, tg, 10*i, 10))
	}
	enqueue := func(i int) {
		t.Helper()
		if !s.TryEnqueue(chunks[i]) {
			t.Fatalf("chunk %d refused with %d queued", i, s.QueueLen())
		}
		eventually(t, 5*time.Second, fmt.Sprintf("chunk %d taken", i), func() bool { return s.QueueLen() == 0 })
	}
	// The first batch (chunks 0-2) goes and hangs on the frozen server.
	for i := range 3 {
		enqueue(i)
	}
	eventually(t, 5*time.Second, "the first insert to start", func() bool {
		return testutil.ToFloat64(m.inflight.WithLabelValues("nb")) == 1
	})
	// The second (3-5) is built while it hangs.
	for i := 3; i < 6; i++ {
		enqueue(i)
	}
	// Complete, it waits for the slot; the queue fills with 6 and 7.
	if !s.TryEnqueue(chunks[6]) || !s.TryEnqueue(chunks[7]) {
		t.Fatal("enqueue into a queue with room refused")
	}
	time.Sleep(100 * time.Millisecond) // time to take more, which it must not
	if s.TryEnqueue(chunks[8]) {
		t.Fatal("enqueue into a full queue accepted")
	}
	if calls, _ := a.total(); calls != 0 {
		t.Fatalf("OnDone called %d times while the server was frozen", calls)
	}
	thaw()
	eventually(t, 10*time.Second, "room in the queue", func() bool { return s.TryEnqueue(chunks[8]) })
	closeAndCheck(t, s, res, srv, "default.nb", 90, chunks, a)
	if got := testutil.ToFloat64(m.flushes.WithLabelValues("nb", reasonRows)); got != 3 {
		t.Errorf("batches closed by rows: %v, want 3 (chunks 0-2, 3-5, 6-8)", got)
	}
}

// TestShardSchemaChangeWhileInserting: a chunk of another table's schema
// that arrives while every insert slot is busy waits for the batch being
// built to go (closed by "schema"), then begins the next one; nothing more
// is taken meanwhile.
func TestShardSchemaChangeWhileInserting(t *testing.T) {
	t.Parallel()
	srv, c, tg, m, a := newShardEnv(t, "sc")
	srv.Exec(t, "CREATE TABLE default.sc2 "+idTable)
	tg2 := plan(t, connect(t, srv, "sc2"))
	s := NewShard(ShardOptions{
		Name: "sc", Client: c, Target: tg,
		QueueCapacity: 1, MaxRows: 15, MaxInflight: 1,
		OnDone: a.onDone, Log: testLog(t), Metrics: m,
	})
	s.AddTarget(tg2)
	res, _ := runShard(t, s)
	thaw := freeze(t, srv)
	chunks := []*chunk.Chunk{
		idChunk(t, tg, 0, 20),  // a full batch: its insert hangs
		idChunk(t, tg, 20, 5),  // the next batch, not full
		idChunk(t, tg2, 25, 5), // another schema: held
		idChunk(t, tg2, 30, 5), // stays in the queue
	}
	for i, ch := range chunks[:3] {
		if !s.TryEnqueue(ch) {
			t.Fatalf("chunk %d refused", i)
		}
		eventually(t, 5*time.Second, fmt.Sprintf("chunk %d taken", i), func() bool { return s.QueueLen() == 0 })
	}
	if !s.TryEnqueue(chunks[3]) {
		t.Fatal("enqueue into an empty queue refused")
	}
	time.Sleep(100 * time.Millisecond) // time to take more, which it must not
	if s.QueueLen() != 1 {
		t.Fatalf("the queue holds %d chunks, want the 1 behind the held chunk", s.QueueLen())
	}
	thaw()
	closeAndCheck(t, s, res, srv, "default.sc", 25, chunks[:2], a)
	if n := srv.Count(t, "default.sc2"); n != 10 {
		t.Errorf("default.sc2: %d rows, want 10", n)
	}
	for i, ch := range chunks[2:] {
		if n := a.count(ch); n != 1 {
			t.Errorf("chunk %d acknowledged %d times", i+2, n)
		}
	}
	for reason, want := range map[string]float64{reasonRows: 1, reasonSchema: 1, reasonDrain: 1} {
		if got := testutil.ToFloat64(m.flushes.WithLabelValues("sc", reason)); got != want {
			t.Errorf("batches closed by %s: %v, want %v", reason, got, want)
		}
	}
}
