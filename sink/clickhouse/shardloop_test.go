package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/chunk"
)

// The tests of this file run the shard's batching loop, retries, breakers
// and bisection over fakeReplica inside synctest bubbles, with no server:
// time is the bubble's, so they assert the exact instant of each insert,
// and synctest.Wait (every goroutine of the bubble blocked) is how they
// know that nothing more happens at an instant.

// fakeCall is one Insert a fakeReplica received.
type fakeCall struct {
	at     time.Time // on the bubble's clock
	target *Target
	rows   int
	ids    []uint64 // the id column's values, in order
	chunks []*chunk.Chunk
}

// fakeReplica is an Inserter that records each insert and answers with
// answer (nil: the insert succeeds). answer runs in the insert's goroutine
// and may block (an insert hanging on the server).
type fakeReplica struct {
	addr   string
	answer func(ctx context.Context, n int, call fakeCall) error
	// calls yields each insert as it starts.
	calls chan fakeCall

	mu  sync.Mutex
	all []fakeCall
}

func newFake(addr string) *fakeReplica {
	return &fakeReplica{addr: addr, calls: make(chan fakeCall, 1000)}
}

func (f *fakeReplica) Insert(ctx context.Context, target *Target, chunks []*chunk.Chunk) error {
	c := fakeCall{at: time.Now(), target: target, chunks: chunks}
	for _, ck := range chunks {
		c.rows += ck.Rows
		c.ids = append(c.ids, ck.Cols[0].(*chunk.Fixed[uint64]).Data[:ck.Rows]...)
	}
	f.mu.Lock()
	n := len(f.all)
	f.all = append(f.all, c)
	answer := f.answer
	f.mu.Unlock()
	f.calls <- c
	if answer == nil {
		return nil
	}
	return answer(ctx, n, c)
}

func (f *fakeReplica) EncodedCopy(rows, bytes int) int { return bytes }
func (f *fakeReplica) Addr() string                    { return f.addr }

// times is when each insert so far started, as offsets from t0.
func (f *fakeReplica) times(t0 time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, c := range f.all {
		out = append(out, c.at.Sub(t0))
	}
	return out
}

func (f *fakeReplica) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.all)
}

// next returns the next insert f receives. Inside a bubble it lets time
// pass until one starts; none ever starting is a deadlock the bubble
// reports.
func (f *fakeReplica) next(t *testing.T) fakeCall {
	t.Helper()
	return <-f.calls
}

// advance moves the bubble's clock d forward (no real time passes) and
// lets every goroutine run until all are blocked.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// idTarget is the plan of a table (id UInt64, msg String), made without a
// server.
func idTarget(t *testing.T, table string) *Target {
	t.Helper()
	tg, err := Plan("default", table, []ColumnInfo{{Name: "id", Type: "UInt64"}, {Name: "msg", Type: "String"}}, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// transient is an error the shard retries: too many parts.
var transient = &chgo.Exception{Code: proto.ErrTooManyParts, Name: "DB::Exception", Message: "Too many parts (300). Merges are processing significantly slower than inserts"}

// loopShard makes a shard over replicas for tg with o's settings and
// starts its Run; the cleanup cancels Run and waits for it.
func loopShard(t *testing.T, o ShardOptions, tg *Target, replicas ...*fakeReplica) (*Shard, *acks, *Metrics, <-chan error, context.CancelFunc) {
	t.Helper()
	a := newAcks()
	m := NewMetrics(nil, nil)
	if o.Name == "" {
		o.Name = "0"
	}
	o.Target, o.OnDone, o.Metrics, o.Log = tg, a.onDone, m, testLog(t)
	for _, r := range replicas {
		o.Replicas = append(o.Replicas, r)
	}
	s := NewShard(o)
	res, cancel := runShard(t, s)
	return s, a, m, res, cancel
}

func flushes(m *Metrics, shard, reason string) float64 {
	return testutil.ToFloat64(m.flushes.WithLabelValues(shard, reason))
}

func enqueue(t *testing.T, s *Shard, chunks ...*chunk.Chunk) {
	t.Helper()
	for i, c := range chunks {
		if !s.TryEnqueue(c) {
			t.Fatalf("chunk %d refused with %d queued", i, s.QueueLen())
		}
	}
}

// closeRun closes s and waits for Run's nil, at the same instant.
func closeRun(t *testing.T, s *Shard, res <-chan error) {
	t.Helper()
	s.Close()
	synctest.Wait()
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	default:
		t.Fatal("Run did not return once closed and drained")
	}
}

// TestShardLingerExact: a batch below its size triggers is inserted
// exactly Linger after its first chunk, with the chunks that came
// meanwhile; Close drains a partial batch at once; a shard closed before
// Run returns at once.
func TestShardLingerExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "linger")
		f := newFake("a")
		const linger = 2 * time.Second
		s, a, m, res, _ := loopShard(t, ShardOptions{QueueCapacity: 4, MaxRows: 100, MaxBytes: 1 << 30, Linger: linger}, tg, f)
		t0 := time.Now()
		one := idChunk(t, tg, 0, 3)
		enqueue(t, s, one)
		if c := f.next(t); c.at.Sub(t0) != linger || c.rows != 3 {
			t.Fatalf("first batch: inserted at +%v with %d rows, want +%v with 3", c.at.Sub(t0), c.rows, linger)
		}
		synctest.Wait()
		if a.count(one) != 1 || flushes(m, "0", reasonLinger) != 1 {
			t.Fatalf("after the linger: acked %d, linger flushes %v", a.count(one), flushes(m, "0", reasonLinger))
		}

		// The linger runs from the batch's first chunk, not its last.
		t1 := time.Now()
		two, three := idChunk(t, tg, 3, 3), idChunk(t, tg, 6, 3)
		enqueue(t, s, two)
		advance(1500 * time.Millisecond)
		enqueue(t, s, three)
		if c := f.next(t); c.at.Sub(t1) != linger || c.rows != 6 {
			t.Fatalf("second batch: inserted at +%v with %d rows, want +%v with 6", c.at.Sub(t1), c.rows, linger)
		}

		// Close drains the partial batch without waiting for its linger,
		// with a chunk whose records were all filtered out.
		four := idChunk(t, tg, 9, 3)
		empty := buildChunk(t, tg, 100, nil)
		empty.AddRange("events", 0, 1, 100, 150)
		enqueue(t, s, four, empty)
		t2 := time.Now()
		closeRun(t, s, res)
		if c := f.next(t); c.at != t2 || c.rows != 3 || len(c.chunks) != 2 {
			t.Errorf("drained batch: at +%v, %d rows in %d chunks; want at once, 3 rows in 2 chunks", c.at.Sub(t2), c.rows, len(c.chunks))
		}
		if a.count(four) != 1 || a.count(empty) != 1 || flushes(m, "0", reasonDrain) != 1 {
			t.Errorf("Close did not drain the partial batch: acked %d and %d", a.count(four), a.count(empty))
		}

		// Closed before Run: Run returns at once.
		s2 := NewShard(ShardOptions{Name: "l2", Client: newFake("b"), Target: tg})
		s2.Close()
		res2, _ := runShard(t, s2)
		synctest.Wait()
		select {
		case err := <-res2:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Run of a shard closed before it did not return")
		}
	})
}

// TestShardSizeTriggers: a batch that reaches MaxRows or MaxBytes is
// inserted at that instant, not a moment later; one chunk short of it, it
// is not.
func TestShardSizeTriggers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "size")
		f := newFake("a")
		s, a, m, res, _ := loopShard(t, ShardOptions{QueueCapacity: 8, MaxRows: 30, Linger: time.Hour}, tg, f)
		t0 := time.Now()
		chunks := []*chunk.Chunk{idChunk(t, tg, 0, 10), idChunk(t, tg, 10, 10), idChunk(t, tg, 20, 10)}
		enqueue(t, s, chunks[:2]...)
		synctest.Wait()
		if f.count() != 0 {
			t.Fatal("a batch of 20 rows (max_rows 30) was inserted")
		}
		enqueue(t, s, chunks[2])
		if c := f.next(t); c.at != t0 || c.rows != 30 {
			t.Fatalf("rows trigger: inserted at +%v with %d rows, want at once with 30", c.at.Sub(t0), c.rows)
		}
		synctest.Wait()
		if flushes(m, "0", reasonRows) != 1 || a.count(chunks[2]) != 1 {
			t.Errorf("rows trigger: rows flushes %v, acked %d", flushes(m, "0", reasonRows), a.count(chunks[2]))
		}
		closeRun(t, s, res)

		g := newFake("b")
		one := idChunk(t, tg, 0, 10)
		size := one.Size()
		s2, _, m2, res2, _ := loopShard(t, ShardOptions{Name: "b", QueueCapacity: 8, MaxBytes: 2*size - 1, Linger: time.Hour}, tg, g)
		t1 := time.Now()
		enqueue(t, s2, one)
		synctest.Wait()
		if g.count() != 0 {
			t.Fatalf("a batch of %d bytes (max_bytes %d) was inserted", size, 2*size-1)
		}
		enqueue(t, s2, idChunk(t, tg, 10, 10))
		if c := g.next(t); c.at != t1 || c.rows != 20 {
			t.Fatalf("bytes trigger: inserted at +%v with %d rows, want at once with 20", c.at.Sub(t1), c.rows)
		}
		closeRun(t, s2, res2)
		if flushes(m2, "b", reasonBytes) != 1 || flushes(m2, "b", reasonDrain) != 0 {
			t.Errorf("bytes trigger: bytes flushes %v, drain %v", flushes(m2, "b", reasonBytes), flushes(m2, "b", reasonDrain))
		}
	})
}

// TestShardIdleTrigger: a batch holding a quarter of max_rows is inserted
// exactly Idle after its last chunk, long before its linger; a smaller
// one waits for its linger, and chunks arriving within Idle of each other
// keep the batch open. The remainder of a burst (batches begun within the
// linger of a full one) goes at the idle time whatever its size; after
// that window, small batches wait for their linger again.
func TestShardIdleTrigger(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "idle")
		f := newFake("a")
		const linger, idle = 3 * time.Second, 50 * time.Millisecond
		s, a, m, res, _ := loopShard(t, ShardOptions{QueueCapacity: 16, MaxRows: 100, Linger: linger, Idle: idle}, tg, f)
		t0 := time.Now()

		// 24 rows, under a quarter of 100: quiet input does not close it.
		small := idChunk(t, tg, 0, 24)
		enqueue(t, s, small)
		advance(500 * time.Millisecond)
		if f.count() != 0 {
			t.Fatalf("a batch of 24 rows (max_rows 100) was inserted at +%v", f.times(t0)[0])
		}
		// One more row makes a quarter: inserted Idle after it came.
		enqueue(t, s, idChunk(t, tg, 24, 1))
		if c := f.next(t); c.at.Sub(t0) != 500*time.Millisecond+idle || c.rows != 25 {
			t.Fatalf("quarter batch: inserted at +%v with %d rows, want +%v with 25", c.at.Sub(t0), c.rows, 500*time.Millisecond+idle)
		}
		synctest.Wait()
		if a.count(small) != 1 || flushes(m, "0", reasonIdle) != 1 || flushes(m, "0", reasonLinger) != 0 {
			t.Fatalf("want one idle flush of both chunks: acked %d, idle %v, linger %v", a.count(small), flushes(m, "0", reasonIdle), flushes(m, "0", reasonLinger))
		}

		// Ten chunks 40 ms apart (under Idle): the batch passes a quarter
		// after the third but stays open until max_rows closes it.
		t1 := time.Now()
		for i := range 10 {
			if i > 0 {
				advance(40 * time.Millisecond)
			}
			enqueue(t, s, idChunk(t, tg, 25+10*i, 10))
		}
		if c := f.next(t); c.at.Sub(t1) != 9*40*time.Millisecond || c.rows != 100 {
			t.Fatalf("stream: inserted at +%v with %d rows, want +%v with 100", c.at.Sub(t1), c.rows, 9*40*time.Millisecond)
		}
		burstEnd := time.Now().Add(linger)
		synctest.Wait()
		if flushes(m, "0", reasonRows) != 1 || flushes(m, "0", reasonIdle) != 1 {
			t.Fatalf("stream: rows flushes %v, idle %v; want 1 and still 1", flushes(m, "0", reasonRows), flushes(m, "0", reasonIdle))
		}

		// The tail of that burst, 5 rows: inserted Idle after it came; so
		// is a second piece of it, still within the burst's window.
		for i, first := range []int{125, 130} {
			t2 := time.Now()
			enqueue(t, s, idChunk(t, tg, first, 5))
			if c := f.next(t); c.at.Sub(t2) != idle || c.rows != 5 {
				t.Fatalf("tail piece %d: inserted at +%v with %d rows, want +%v with 5", i, c.at.Sub(t2), c.rows, idle)
			}
		}
		synctest.Wait()
		if flushes(m, "0", reasonIdle) != 3 || flushes(m, "0", reasonLinger) != 0 {
			t.Fatalf("the tail of a burst: idle %v, linger %v; want 3 and 0", flushes(m, "0", reasonIdle), flushes(m, "0", reasonLinger))
		}

		// At the window's end, quiet traffic again: a small batch waits
		// for its linger.
		advance(time.Until(burstEnd))
		t3 := time.Now()
		enqueue(t, s, idChunk(t, tg, 135, 5))
		if c := f.next(t); c.at.Sub(t3) != linger || c.rows != 5 {
			t.Fatalf("after the burst: inserted at +%v with %d rows, want +%v with 5", c.at.Sub(t3), c.rows, linger)
		}
		synctest.Wait()
		if flushes(m, "0", reasonLinger) != 1 || flushes(m, "0", reasonIdle) != 3 {
			t.Errorf("after the burst: linger flushes %v, idle %v; want 1 and 3", flushes(m, "0", reasonLinger), flushes(m, "0", reasonIdle))
		}
		closeRun(t, s, res)
	})
}

// TestShardFirstAtOnceExact: with FirstAtOnce the shard's first chunk is
// inserted at once (flush reason start); the batches after it wait for
// max_rows or the linger as usual.
func TestShardFirstAtOnceExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "first")
		f := newFake("a")
		s, a, m, res, _ := loopShard(t, ShardOptions{QueueCapacity: 16, MaxRows: 100, Linger: 30 * time.Second, FirstAtOnce: true}, tg, f)
		t0 := time.Now()
		first := idChunk(t, tg, 0, 10)
		enqueue(t, s, first)
		if c := f.next(t); c.at != t0 || c.rows != 10 {
			t.Fatalf("first batch: at +%v with %d rows, want at once with 10", c.at.Sub(t0), c.rows)
		}
		synctest.Wait()
		if a.count(first) != 1 || flushes(m, "0", reasonStart) != 1 {
			t.Fatalf("first batch: acked %d, start flushes %v", a.count(first), flushes(m, "0", reasonStart))
		}
		second := idChunk(t, tg, 10, 10)
		enqueue(t, s, second)
		advance(29 * time.Second)
		if f.count() != 1 {
			t.Fatal("the second chunk was inserted on its own: only the first batch goes at once")
		}
		enqueue(t, s, idChunk(t, tg, 20, 90))
		if c := f.next(t); c.at.Sub(t0) != 29*time.Second || c.rows != 100 {
			t.Fatalf("second batch: at +%v with %d rows, want +29s with 100", c.at.Sub(t0), c.rows)
		}
		closeRun(t, s, res)
		if a.count(second) != 1 || flushes(m, "0", reasonRows) != 1 || flushes(m, "0", reasonStart) != 1 {
			t.Fatalf("second batch: acked %d, rows flushes %v, start flushes %v; want 1, 1, 1", a.count(second), flushes(m, "0", reasonRows), flushes(m, "0", reasonStart))
		}
	})
}

// TestShardRetryBackoffSchedule: a transient failure is retried after the
// capped exponential backoff (here without jitter: its upper bound), and
// the batch is acknowledged once, after the insert that went in; with
// MaxAttempts the shard fails after that many, acknowledging nothing.
func TestShardRetryBackoffSchedule(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "retry")
		f := newFake("a")
		f.answer = func(_ context.Context, n int, _ fakeCall) error {
			if n < 6 {
				return transient
			}
			return nil
		}
		o := ShardOptions{
			QueueCapacity: 4, MaxRows: 1, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
			Jitter:  func(d time.Duration) time.Duration { return d },
			Breaker: BreakerOptions{FailureThreshold: 100},
		}
		s, a, m, res, _ := loopShard(t, o, tg, f)
		t0 := time.Now()
		c := idChunk(t, tg, 0, 1)
		enqueue(t, s, c)
		ms := time.Millisecond
		want := []time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1500 * ms, 2500 * ms, 3500 * ms}
		for i, w := range want {
			call := f.next(t)
			if got := call.at.Sub(t0); got != w {
				t.Fatalf("attempt %d at +%v, want +%v (schedule %v)", i+1, got, w, want)
			}
			synctest.Wait()
			if i < len(want)-1 && a.count(c) != 0 {
				t.Fatalf("acknowledged after failed attempt %d", i+1)
			}
		}
		if a.count(c) != 1 {
			t.Fatalf("acknowledged %d times after the insert went in, want 1", a.count(c))
		}
		if got := testutil.ToFloat64(m.retries.WithLabelValues("0")); got != 6 {
			t.Errorf("etl_sink_retries_total = %v, want 6", got)
		}
		if got := testutil.ToFloat64(m.errors.WithLabelValues("0", "transient")); got != 6 {
			t.Errorf("etl_sink_errors_total{kind=transient} = %v, want 6", got)
		}
		closeRun(t, s, res)

		g := newFake("b")
		g.answer = func(context.Context, int, fakeCall) error { return transient }
		o.Name, o.MaxAttempts = "b", 3
		s2, a2, _, res2, _ := loopShard(t, o, tg, g)
		t1 := time.Now()
		c2 := idChunk(t, tg, 0, 1)
		enqueue(t, s2, c2)
		err := <-res2
		var ie *InsertError
		if !errors.As(err, &ie) || ie.Attempts != 3 || !errors.Is(err, transient) {
			t.Fatalf("Run with max_attempts 3: %v, want an *InsertError after 3 attempts", err)
		}
		if got, want := g.times(t1), []time.Duration{0, 100 * ms, 300 * ms}; !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		if time.Since(t1) != 300*ms || a2.count(c2) != 0 {
			t.Errorf("Run returned at +%v (want +300ms), acked %d", time.Since(t1), a2.count(c2))
		}
	})
}

// TestShardBreakerTiming: a replica whose breaker opens gets no insert
// until OpenFor has passed; when the other replica fails meanwhile the
// shard waits for the first to turn half-open (here sooner than the retry
// backoff) and inserts there at exactly that instant, closing its breaker.
func TestShardBreakerTiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "breaker")
		ra, rb := newFake("a:9000"), newFake("b:9000")
		var mu sync.Mutex
		aDown, bFails := true, 0
		ra.answer = func(context.Context, int, fakeCall) error {
			mu.Lock()
			defer mu.Unlock()
			if aDown {
				return transient
			}
			return nil
		}
		rb.answer = func(context.Context, int, fakeCall) error {
			mu.Lock()
			defer mu.Unlock()
			if bFails > 0 {
				bFails--
				return transient
			}
			return nil
		}
		const openFor = 10 * time.Second
		o := ShardOptions{
			QueueCapacity: 4, MaxRows: 1, InitialBackoff: time.Minute, MaxBackoff: time.Minute,
			Jitter:  func(d time.Duration) time.Duration { return d },
			Breaker: BreakerOptions{FailureThreshold: 1, OpenFor: openFor, HalfOpenProbes: 1},
		}
		s, a, m, res, _ := loopShard(t, o, tg, ra, rb)
		healthy := func(r string) float64 { return testutil.ToFloat64(m.replicaHealthy.WithLabelValues("0", r)) }
		t0 := time.Now()

		// a fails and its breaker opens; the batch goes to b at once.
		c1 := idChunk(t, tg, 0, 1)
		enqueue(t, s, c1)
		synctest.Wait()
		if a.count(c1) != 1 || healthy("a:9000") != 0 || healthy("b:9000") != 1 {
			t.Fatalf("after a's failure: acked %d, healthy a %v b %v", a.count(c1), healthy("a:9000"), healthy("b:9000"))
		}
		// While a's breaker is open, inserts go to b only.
		advance(3 * time.Second)
		enqueue(t, s, idChunk(t, tg, 1, 1))
		synctest.Wait()
		// At +5s a is back, and b fails once: both breakers are open, so
		// the shard waits until a's turns half-open at +10s.
		advance(2 * time.Second)
		mu.Lock()
		aDown, bFails = false, 1
		mu.Unlock()
		c3 := idChunk(t, tg, 2, 1)
		enqueue(t, s, c3)
		synctest.Wait()
		if a.count(c3) != 0 {
			t.Fatal("acknowledged while every breaker was open")
		}
		advance(openFor - 5*time.Second)
		if a.count(c3) != 1 || healthy("a:9000") != 1 || healthy("b:9000") != 0 {
			t.Fatalf("at a's half-open time: acked %d, healthy a %v b %v", a.count(c3), healthy("a:9000"), healthy("b:9000"))
		}
		if got, want := ra.times(t0), []time.Duration{0, openFor}; !slices.Equal(got, want) {
			t.Errorf("inserts to a at %v, want %v", got, want)
		}
		if got, want := rb.times(t0), []time.Duration{0, 3 * time.Second, 5 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("inserts to b at %v, want %v", got, want)
		}
		if got := testutil.ToFloat64(m.breakerOpens.WithLabelValues("0", "a:9000")); got != 1 {
			t.Errorf("a's breaker opened %v times, want 1", got)
		}
		closeRun(t, s, res)
	})
}

// TestShardBisectIsolatesRefusedRows: a batch refused for the values of
// some rows is bisected down to the records behind them; each goes to
// OnRejected once with the replica's refusal; every other row is written
// exactly once, never with a refused one; the batch is acknowledged once,
// after the last piece went in.
func TestShardBisectIsolatesRefusedRows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "bisect")
		bad := map[uint64]bool{7: true, 31: true, 1025: true}
		f := newFake("a")
		var (
			mu       sync.Mutex
			written  = map[uint64]int{}
			rejected []string
			acked    bool
		)
		f.answer = func(_ context.Context, _ int, c fakeCall) error {
			for _, id := range c.ids {
				if bad[id] {
					return &chgo.Exception{Code: proto.ErrCannotParseDate, Name: "DB::Exception", Message: fmt.Sprintf("Cannot parse date: value bad of id %d", id)}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if acked {
				t.Error("rows written after the batch was acknowledged")
			}
			for _, id := range c.ids {
				written[id]++
			}
			return nil
		}
		o := ShardOptions{
			QueueCapacity: 8, MaxRows: 1000, Linger: time.Second,
			OnRejected: func(_ context.Context, r Rejected) error {
				var ids []uint64
				for i := r.From; i < r.To; i++ {
					ids = append(ids, r.Chunk.Cols[0].(*chunk.Fixed[uint64]).Data[i])
				}
				mu.Lock()
				defer mu.Unlock()
				rejected = append(rejected, fmt.Sprintf("p%d@%d %v: %v", r.Partition, r.Offset, ids, r.Err))
				return nil
			},
		}
		s, a, m, res, _ := loopShard(t, o, tg, f)
		// Chunk A (partition 0, offsets 100..): 40 records of one row.
		// Chunk B (partition 1, offsets 500..): 20 records of two rows; a
		// bad second row (1025) takes its record's first (1024) with it.
		var recsA, recsB [][]uint64
		for i := uint64(0); i < 40; i++ {
			recsA = append(recsA, []uint64{i})
		}
		for i := uint64(0); i < 20; i++ {
			recsB = append(recsB, []uint64{1000 + 2*i, 1001 + 2*i})
		}
		ca := recordChunk(t, tg, 0, 100, recsA, nil)
		cb := recordChunk(t, tg, 1, 500, recsB, nil)
		t0 := time.Now()
		enqueue(t, s, ca, cb)
		advance(time.Second)
		mu.Lock()
		acked = a.count(ca) == 1 && a.count(cb) == 1
		mu.Unlock()
		if !acked {
			t.Fatalf("batch not acknowledged after its bisection: %d, %d", a.count(ca), a.count(cb))
		}
		for _, at := range f.times(t0) {
			if at != time.Second {
				t.Fatalf("an insert of the bisection at +%v: a refusal of rows is not retried after a backoff", at)
			}
		}
		slices.Sort(rejected)
		want := []string{
			"p0@107 [7]: insert into default.bisect: CANNOT_PARSE_DATE (38): DB::Exception: Cannot parse date: value bad of id 7",
			"p0@131 [31]: insert into default.bisect: CANNOT_PARSE_DATE (38): DB::Exception: Cannot parse date: value bad of id 31",
			"p1@512 [1024 1025]: insert into default.bisect: CANNOT_PARSE_DATE (38): DB::Exception: Cannot parse date: value bad of id 1025",
		}
		if len(rejected) != len(want) {
			t.Fatalf("rejected %q, want %q", rejected, want)
		}
		for i, r := range rejected {
			if r != want[i] {
				t.Errorf("rejected[%d] = %q, want %q", i, r, want[i])
			}
		}
		for _, id := range append(recsA, recsB...) {
			for _, x := range id {
				want := 1
				if x == 7 || x == 31 || x == 1024 || x == 1025 {
					want = 0
				}
				if written[x] != want {
					t.Errorf("id %d written %d times, want %d", x, written[x], want)
				}
			}
		}
		if calls, _ := a.total(); calls != 1 {
			t.Errorf("OnDone called %d times, want once", calls)
		}
		if got := testutil.ToFloat64(m.bisections.WithLabelValues("0")); got != 1 {
			t.Errorf("etl_sink_bisections_total = %v", got)
		}
		if got := testutil.ToFloat64(m.rejected.WithLabelValues("0")); got != 3 {
			t.Errorf("etl_sink_rejected_records_total = %v", got)
		}
		t.Logf("%d inserts to isolate 3 of 60 records", f.count())
		closeRun(t, s, res)
	})
}

// TestShardAcksOnlyAfterInsertReturns: a batch whose insert has not
// returned is not acknowledged, however long it runs; it is acknowledged
// at the instant it returns.
func TestShardAcksOnlyAfterInsertReturns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "ack")
		f := newFake("a")
		release := make(chan struct{})
		f.answer = func(ctx context.Context, _ int, _ fakeCall) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s, a, m, res, _ := loopShard(t, ShardOptions{QueueCapacity: 4, MaxRows: 1}, tg, f)
		c := idChunk(t, tg, 0, 1)
		enqueue(t, s, c)
		f.next(t)
		synctest.Wait()
		if a.count(c) != 0 {
			t.Fatal("acknowledged while its insert runs")
		}
		advance(time.Hour)
		if a.count(c) != 0 || testutil.ToFloat64(m.inflight.WithLabelValues("0")) != 1 {
			t.Fatalf("after an hour of insert: acked %d, inflight %v", a.count(c), testutil.ToFloat64(m.inflight.WithLabelValues("0")))
		}
		close(release)
		synctest.Wait()
		if a.count(c) != 1 {
			t.Fatalf("acknowledged %d times once its insert returned, want 1", a.count(c))
		}
		closeRun(t, s, res)
	})
}

// TestShardBackpressureExact: with the only insert slot busy, the loop
// takes the next complete batch and then nothing more: the queue fills,
// TryEnqueue refuses, OnSpace stays silent, until the insert returns.
func TestShardBackpressureExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "bp")
		f := newFake("a")
		release := make(chan struct{})
		f.answer = func(ctx context.Context, _ int, _ fakeCall) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var spaces atomic.Int32
		s, a, m, res, _ := loopShard(t, ShardOptions{Name: "bp", QueueCapacity: 2, MaxRows: 1, MaxInflight: 1, OnSpace: func() { spaces.Add(1) }}, tg, f)
		var chunks []*chunk.Chunk
		for i := range 5 {
			chunks = append(chunks, idChunk(t, tg, 10*i, 10))
		}
		// Chunk 0's insert hangs; chunk 1 is the next batch, complete.
		enqueue(t, s, chunks[0])
		f.next(t)
		enqueue(t, s, chunks[1])
		synctest.Wait()
		if s.QueueLen() != 0 || testutil.ToFloat64(m.inflight.WithLabelValues("bp")) != 1 {
			t.Fatalf("queue %d, inflight %v; want the next batch taken, one insert running", s.QueueLen(), testutil.ToFloat64(m.inflight.WithLabelValues("bp")))
		}
		enqueue(t, s, chunks[2], chunks[3])
		advance(time.Hour)
		if s.QueueLen() != 2 {
			t.Fatalf("the loop took more while its batch waited for the slot: queue %d", s.QueueLen())
		}
		if s.TryEnqueue(chunks[4]) {
			t.Fatal("enqueue into a full queue accepted")
		}
		if got := testutil.ToFloat64(m.queueFull.WithLabelValues("bp")); got != 1 {
			t.Errorf("etl_queue_full_events_total = %v, want 1", got)
		}
		if got := testutil.ToFloat64(m.queueDepth.WithLabelValues("bp")); got != 2 {
			t.Errorf("etl_queue_depth = %v, want 2", got)
		}
		synctest.Wait()
		if spaces.Load() != 0 || f.count() != 1 {
			t.Fatalf("while the insert hangs: OnSpace %d calls, %d inserts; want 0 and 1", spaces.Load(), f.count())
		}
		if calls, _ := a.total(); calls != 0 {
			t.Fatalf("OnDone called %d times while the insert hangs", calls)
		}
		close(release)
		synctest.Wait()
		if spaces.Load() != 1 {
			t.Fatalf("OnSpace called %d times once the queue drained, want 1", spaces.Load())
		}
		enqueue(t, s, chunks[4])
		closeRun(t, s, res)
		for i, c := range chunks {
			if a.count(c) != 1 {
				t.Errorf("chunk %d acknowledged %d times", i, a.count(c))
			}
		}
		if f.count() != 5 {
			t.Errorf("%d inserts, want 5", f.count())
		}
	})
}

// TestShardBuildsNextBatchWhileInsertingExact: while every insert slot is
// busy the loop goes on taking chunks until the next batch is complete,
// then nothing more, so the producers are held back by a complete batch
// waiting for a slot, not by a queue of a few chunks.
func TestShardBuildsNextBatchWhileInsertingExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "nb")
		f := newFake("a")
		release := hangFirst(f)
		s, a, m, res, _ := loopShard(t, ShardOptions{Name: "nb", QueueCapacity: 2, MaxRows: 30, MaxInflight: 1}, tg, f)
		var chunks []*chunk.Chunk
		for i := range 9 {
			chunks = append(chunks, idChunk(t, tg, 10*i, 10))
		}
		for i := range 6 { // 0-2: the first batch, which hangs; 3-5: the next
			enqueue(t, s, chunks[i])
			synctest.Wait()
			if s.QueueLen() != 0 {
				t.Fatalf("chunk %d not taken", i)
			}
		}
		enqueue(t, s, chunks[6], chunks[7])
		advance(time.Minute)
		if s.TryEnqueue(chunks[8]) || s.QueueLen() != 2 {
			t.Fatalf("the loop took chunks past a complete batch: queue %d", s.QueueLen())
		}
		if calls, _ := a.total(); calls != 0 || f.count() != 1 {
			t.Fatalf("while the first insert hangs: %d acks, %d inserts", calls, f.count())
		}
		close(release)
		synctest.Wait()
		enqueue(t, s, chunks[8])
		closeRun(t, s, res)
		for i, c := range chunks {
			if a.count(c) != 1 {
				t.Errorf("chunk %d acknowledged %d times", i, a.count(c))
			}
		}
		if got := flushes(m, "nb", reasonRows); got != 3 {
			t.Errorf("batches closed by rows: %v, want 3 (chunks 0-2, 3-5, 6-8)", got)
		}
	})
}

// hangFirst makes f's first insert wait until the returned channel is
// closed (or its context ends); the others succeed at once.
func hangFirst(f *fakeReplica) chan struct{} {
	release := make(chan struct{})
	f.answer = func(ctx context.Context, n int, _ fakeCall) error {
		if n > 0 {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return release
}

// TestShardSchemaChangeWhileInsertingExact: a chunk of another schema that
// arrives while every insert slot is busy waits for the batch being built
// to go (closed by "schema"), then begins the next one; nothing more is
// taken meanwhile; each batch is inserted with its own target.
func TestShardSchemaChangeWhileInsertingExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg, tg2 := idTarget(t, "sc"), idTarget(t, "sc2")
		f := newFake("a")
		release := hangFirst(f)
		a := newAcks()
		m := NewMetrics(nil, nil)
		s := NewShard(ShardOptions{
			Name: "sc", Client: f, Target: tg, QueueCapacity: 1, MaxRows: 15, MaxInflight: 1,
			OnDone: a.onDone, Log: testLog(t), Metrics: m,
		})
		s.AddTarget(tg2)
		res, _ := runShard(t, s)
		chunks := []*chunk.Chunk{
			idChunk(t, tg, 0, 20),  // a full batch: its insert hangs
			idChunk(t, tg, 20, 5),  // the next batch, not full
			idChunk(t, tg2, 25, 5), // another schema: held
			idChunk(t, tg2, 30, 5), // stays in the queue
		}
		for i, c := range chunks[:3] {
			enqueue(t, s, c)
			synctest.Wait()
			if s.QueueLen() != 0 {
				t.Fatalf("chunk %d not taken", i)
			}
		}
		enqueue(t, s, chunks[3])
		advance(time.Minute)
		if s.QueueLen() != 1 {
			t.Fatalf("the queue holds %d chunks, want the 1 behind the held chunk", s.QueueLen())
		}
		close(release)
		closeRun(t, s, res)
		for i, c := range chunks {
			if a.count(c) != 1 {
				t.Errorf("chunk %d acknowledged %d times", i, a.count(c))
			}
		}
		f.mu.Lock()
		var got []string
		for _, c := range f.all {
			got = append(got, fmt.Sprintf("%s:%d", c.target.Table, c.rows))
		}
		f.mu.Unlock()
		if want := []string{"sc:20", "sc:5", "sc2:10"}; !slices.Equal(got, want) {
			t.Errorf("inserts %v, want %v", got, want)
		}
		for reason, want := range map[string]float64{reasonRows: 1, reasonSchema: 1, reasonDrain: 1} {
			if got := flushes(m, "sc", reason); got != want {
				t.Errorf("batches closed by %s: %v, want %v", reason, got, want)
			}
		}
	})
}

// TestShardHeldChunkLingersFromItsTake: a chunk of another schema held
// while the batch before it waits for a slot begins the next batch when a
// slot frees, and that batch's linger counts from when the chunk was taken
// from the queue, not from when the slot freed: a chunk waits at most its
// linger beyond the inserts ahead of it.
func TestShardHeldChunkLingersFromItsTake(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg, tg2 := idTarget(t, "hl"), idTarget(t, "hl2")
		f := newFake("a")
		release := hangFirst(f)
		a := newAcks()
		s := NewShard(ShardOptions{
			Name: "hl", Client: f, Target: tg, QueueCapacity: 4, MaxRows: 100, MaxInflight: 1, Linger: time.Second,
			OnDone: a.onDone, Log: testLog(t), Metrics: NewMetrics(nil, nil),
		})
		s.AddTarget(tg2)
		res, _ := runShard(t, s)
		start := time.Now()
		enqueue(t, s, idChunk(t, tg, 0, 5)) // its batch goes at its linger; the insert hangs
		advance(time.Second + 100*time.Millisecond)
		enqueue(t, s, idChunk(t, tg, 5, 5)) // the next batch: lingers, waits for the slot
		advance(100 * time.Millisecond)
		enqueue(t, s, idChunk(t, tg2, 10, 5)) // another schema: held
		synctest.Wait()
		advance(5 * time.Second)
		freed := time.Now()
		close(release) // the slot frees: the second batch goes, then the held chunk's
		synctest.Wait()
		advance(2 * time.Second)
		closeRun(t, s, res)
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.all) != 3 {
			t.Fatalf("%d inserts, want 3", len(f.all))
		}
		third := f.all[2]
		if third.target != tg2 {
			t.Fatalf("third insert of %s, want the held chunk's table", third.target.Table)
		}
		// Taken at 1.2 s, its linger of 1 s had passed when the slot freed
		// at 6.2 s: it goes then, not a linger later.
		if got := third.at.Sub(freed); got != 0 {
			t.Errorf("the held chunk's batch went %s after the slot freed (%s after the start); want at once: its linger ran out while it was held",
				got, third.at.Sub(start))
		}
	})
}

// TestShardHardStopDuringBackoffExact: cancelling Run while inserts wait
// out a retry backoff ends it at that instant with the context's error;
// nothing is acknowledged, and the chunk never taken stays queued.
func TestShardHardStopDuringBackoffExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "hard")
		f := newFake("a")
		f.answer = func(context.Context, int, fakeCall) error { return transient }
		s, a, m, res, cancel := loopShard(t, ShardOptions{
			Name: "h", QueueCapacity: 4, MaxRows: 1, MaxInflight: 2,
			InitialBackoff: 30 * time.Second, MaxBackoff: time.Minute,
			Jitter: func(d time.Duration) time.Duration { return d },
		}, tg, f)
		for i := range 4 {
			enqueue(t, s, idChunk(t, tg, i, 1))
		}
		// Two inserts failed and wait to retry, the third chunk is the
		// next batch, complete, and the fourth stays in the queue.
		synctest.Wait()
		if got := testutil.ToFloat64(m.retries.WithLabelValues("h")); got != 2 || s.QueueLen() != 1 {
			t.Fatalf("retries %v, queue %d; want 2 and 1", got, s.QueueLen())
		}
		advance(10 * time.Second) // into the 30 s backoff wait
		t1 := time.Now()
		cancel()
		err := <-res
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel: %v, want context.Canceled", err)
		}
		if d := time.Since(t1); d != 0 {
			t.Errorf("Run took %v to stop", d)
		}
		if calls, _ := a.total(); calls != 0 {
			t.Errorf("OnDone called %d times", calls)
		}
		if got := testutil.ToFloat64(m.inflight.WithLabelValues("h")); got != 0 {
			t.Errorf("inflight = %v after Run", got)
		}
		if s.QueueLen() != 1 {
			t.Errorf("queue holds %d chunks after a hard stop, want the 1 never taken", s.QueueLen())
		}
	})
}

// manualClock is a Clock that moves only when Advance is called.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c  *manualClock
	ch chan time.Time
	at time.Time
	on bool
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d), on: true}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock d forward and fires the timers due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.on && !t.at.After(c.now) {
			t.on = false
			t.ch <- t.at
		}
	}
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on = false
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	was := t.Stop()
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.at, t.on = t.c.now.Add(d), true
	return was
}

// TestShardTakesTimeFromItsClock: the linger, the retry backoff and the
// breaker run on ShardOptions.Clock: with a clock that moves only when
// told, the bubble's own time never moves, and each step happens when
// that clock reaches it.
func TestShardTakesTimeFromItsClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tg := idTarget(t, "clock")
		f := newFake("a")
		f.answer = func(_ context.Context, n int, _ fakeCall) error {
			if n < 2 {
				return transient
			}
			return nil
		}
		clock := &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		s, a, m, res, _ := loopShard(t, ShardOptions{
			QueueCapacity: 4, MaxRows: 100, Linger: 5 * time.Second,
			InitialBackoff: time.Second, MaxBackoff: time.Second, Jitter: func(d time.Duration) time.Duration { return d },
			Breaker: BreakerOptions{FailureThreshold: 2, OpenFor: time.Minute},
			Clock:   clock,
		}, tg, f)
		bubble := time.Now()
		c := idChunk(t, tg, 0, 1)
		enqueue(t, s, c)
		step := func(d time.Duration, inserts int) {
			t.Helper()
			synctest.Wait()
			if f.count() != inserts-1 {
				t.Fatalf("%d inserts before the clock moved %v, want %d", f.count(), d, inserts-1)
			}
			clock.Advance(d)
			synctest.Wait()
			if f.count() != inserts {
				t.Fatalf("%d inserts once the clock moved %v, want %d", f.count(), d, inserts)
			}
		}
		step(5*time.Second, 1) // the linger
		step(time.Second, 2)   // the backoff after the first failure; the breaker opens on the second
		if testutil.ToFloat64(m.replicaHealthy.WithLabelValues("0", "a")) != 0 {
			t.Fatal("the breaker did not open on the second failure")
		}
		step(time.Second, 3) // the backoff: the breaker is probed, not waited out for its minute
		if a.count(c) != 1 || testutil.ToFloat64(m.replicaHealthy.WithLabelValues("0", "a")) != 1 {
			t.Fatalf("acked %d, healthy %v; want 1 and 1", a.count(c), testutil.ToFloat64(m.replicaHealthy.WithLabelValues("0", "a")))
		}
		if !time.Now().Equal(bubble) {
			t.Errorf("the bubble's clock moved %v: the shard waited on package time", time.Since(bubble))
		}
		closeRun(t, s, res)
	})
}
