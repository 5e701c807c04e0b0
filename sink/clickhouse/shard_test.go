package clickhouse

import (
	"context"
	"errors"
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
	// Retried past the opening of the breaker: the shard goes on probing.
	eventually(t, 30*time.Second, "the breaker to open and the retries to go on after it", func() bool {
		return testutil.ToFloat64(m.breakerOpens.WithLabelValues("7", c.Addr())) >= 1 &&
			testutil.ToFloat64(m.retries.WithLabelValues("7")) >= 4
	})
	if calls, _ := a.total(); calls != 0 {
		t.Fatalf("OnDone called %d times while the server was down", calls)
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("7", "permanent")); got != 0 {
		t.Errorf("permanent errors during an outage: %v", got)
	}
	retries := testutil.ToFloat64(m.retries.WithLabelValues("7"))
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
