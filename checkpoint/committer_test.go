package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/internal/loglimit"
)

// fakeClient records the commits it is asked for and fails while fail is
// set.
type fakeClient struct {
	mu    sync.Mutex
	fail  error
	calls int
	got   [][]Commit
}

func (f *fakeClient) Commit(_ context.Context, cs []Commit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	f.got = append(f.got, append([]Commit(nil), cs...))
	return nil
}

func (f *fakeClient) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

// commits returns the commits that went through.
func (f *fakeClient) commits() [][]Commit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]Commit(nil), f.got...)
}

func (f *fakeClient) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// syncBuffer is a log destination safe for the committer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(msg string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, "msg=\""+msg+"\"") {
			out = append(out, l)
		}
	}
	return out
}

// TestCommitterCommitsPending: a commit sends the moved watermarks with
// their metadata, counts itself, and the tracker then has nothing
// pending; a failed commit leaves it pending for the next.
func TestCommitterCommitsPending(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 3}
	e := tr.Assign(tp)
	tr.Start(tp, e, 100)
	cl := &fakeClient{}
	commits := prometheus.NewCounter(prometheus.CounterOpts{Name: "commits"})
	yields := 0
	c := NewCommitter(tr, cl, CommitterOptions{Commits: commits, Yield: func() { yields++ }})

	if _, _ = c.Register(tp, e, 110, 120, time.Second); len(cl.got) != 1 ||
		cl.got[0][0].Offset != 100 || cl.got[0][0].Metadata != "etl1:110-120" {
		t.Fatalf("registration committed %v; want offset 100 with etl1:110-120", cl.got)
	}
	if ok, err := c.Register(tp, e+1, 120, 130, time.Second); ok || err != nil {
		t.Fatalf("registration under another epoch: %v, %v; want refused", ok, err)
	}
	tr.Ack(tp, e, 100, 110)
	cl.setFail(errors.New("coordinator moved"))
	if err := c.Commit(context.Background(), nil); err == nil {
		t.Fatal("the client's error was not returned")
	}
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 110 {
		t.Fatalf("pending after a failed commit: %v; want offset 110", p)
	}
	cl.setFail(nil)
	if err := c.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	last := cl.got[len(cl.got)-1]
	if len(last) != 1 || last[0].TopicPartition != tp || last[0].Offset != 110 || last[0].Metadata != "etl1:110-120" {
		t.Fatalf("committed %v; want t/3 offset 110 keeping the block above it", last)
	}
	if p := tr.Pending(nil); len(p) != 0 {
		t.Fatalf("pending after the commit: %v", p)
	}
	if n := testutil.ToFloat64(commits); n != 1 || yields != 1 {
		t.Fatalf("commits counted %v, yields %d; want 1, 1 (a registration and a failure do not count)", n, yields)
	}
	calls := cl.count()
	if err := c.Commit(context.Background(), nil); err != nil || cl.count() != calls {
		t.Fatalf("a commit with nothing pending asked the client: %v, %d calls", err, cl.count()-calls)
	}
}

// TestCommitterFailLogLimited: a burst of failing periodic commits logs
// "commit failed; will retry" at most the limiter's lines, and the first
// line after the interval counts those it suppressed.
func TestCommitterFailLogLimited(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 0}
	e := tr.Assign(tp)
	tr.Start(tp, e, 0)
	tr.Ack(tp, e, 0, 10)
	cl := &fakeClient{fail: errors.New("NOT_COORDINATOR")}
	var buf syncBuffer
	c := NewCommitter(tr, cl, CommitterOptions{Log: slog.New(slog.NewTextHandler(&buf, nil)),
		FailLog: loglimit.New(2, time.Hour)})
	for range 100 {
		c.periodic(context.Background())
	}
	if cl.count() != 100 {
		t.Fatalf("%d commits tried, want 100: each periodic commit retries", cl.count())
	}
	lines := buf.lines("commit failed; will retry")
	if len(lines) != 2 {
		t.Fatalf("a burst of 100 failures logged %d lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if !strings.Contains(l, "err=NOT_COORDINATOR") || !strings.Contains(l, "suppressed=0") {
			t.Errorf("line %q: want the error and suppressed=0", l)
		}
	}
}

// TestCommitterRun: Run applies acknowledgements when signalled and
// commits at each interval; failures go on being retried every interval
// and are logged once per 10 s by default, with the count of the lines
// suppressed in between. Runs on the bubble's clock.
func TestCommitterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTracker()
		tp := TopicPartition{Topic: "t", Partition: 0}
		e := tr.Assign(tp)
		tr.Start(tp, e, 0)
		cl := &fakeClient{}
		var buf syncBuffer
		c := NewCommitter(tr, cl, CommitterOptions{Log: slog.New(slog.NewTextHandler(&buf, nil))})
		acks := make(chan struct{}, 1)
		var next int64 // the apply goroutine's
		var applied atomic.Int64
		apply := func() { applied.Add(1); tr.Ack(tp, e, next, next+1); next++ }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx, time.Second, acks, apply); close(done) }()

		acks <- struct{}{}
		synctest.Wait()
		if applied.Load() != 1 || cl.count() != 0 {
			t.Fatalf("after a signal: applied %d, commits %d; want 1, 0 (commits wait for the interval)", applied.Load(), cl.count())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := cl.commits(); applied.Load() != 2 || len(got) != 1 || got[0][0].Offset != 2 {
			t.Fatalf("after one interval: applied %d, committed %v; want 2, offset 2", applied.Load(), got)
		}

		cl.setFail(errors.New("REBALANCE_IN_PROGRESS"))
		time.Sleep(25 * time.Second) // 25 failing intervals
		synctest.Wait()
		if n := cl.count(); n != 26 {
			t.Fatalf("%d commits tried after 26 intervals, want 26", n)
		}
		lines := buf.lines("commit failed; will retry")
		// Failures at 2 s, 3 s, ... 26 s: logged at 2 s and 12 s and
		// 22 s, each after it the nine lines suppressed before it.
		want := []string{"suppressed=0", "suppressed=9", "suppressed=9"}
		if len(lines) != len(want) {
			t.Fatalf("%d lines for 25 failures over 25 s, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
		}
		for i, l := range lines {
			if !strings.Contains(l, want[i]) {
				t.Errorf("line %d %q: want %s", i, l, want[i])
			}
		}
		cancel()
		<-done
	})
}

// TestCommitterRunActsOnEveryReadyCase: after a wake the committer acts on
// every case that is ready, not only the one select picked: woken by
// acknowledgements while the interval also ran out, it applies them and
// commits in the same pass; woken while its context also ended, it
// returns without acting.
func TestCommitterRunActsOnEveryReadyCase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTracker()
		tp := TopicPartition{Topic: "t", Partition: 0}
		e := tr.Assign(tp)
		tr.Start(tp, e, 0)
		cl := &fakeClient{}
		woken, release := make(chan struct{}), make(chan struct{})
		c := NewCommitter(tr, cl, CommitterOptions{
			Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			Woken: func() { woken <- struct{}{}; <-release },
		})
		acks := make(chan struct{}, 1)
		var next int64
		var applied atomic.Int64
		apply := func() { applied.Add(1); tr.Ack(tp, e, next, next+1); next++ }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx, time.Second, acks, apply); close(done) }()

		acks <- struct{}{}
		<-woken
		time.Sleep(time.Second) // the tick is due while the committer waits at Woken
		synctest.Wait()
		release <- struct{}{}
		synctest.Wait()
		if got := cl.commits(); applied.Load() != 1 || len(got) != 1 || got[0][0].Offset != 1 {
			t.Fatalf("woken by acknowledgements with the tick due: applied %d, committed %v; want 1 apply and a commit of offset 1 in the same pass", applied.Load(), got)
		}

		acks <- struct{}{}
		<-woken
		cancel() // the end, while the acknowledgements that woke it wait
		release <- struct{}{}
		<-done
		if applied.Load() != 1 {
			t.Fatalf("applied %d times after its context ended, want no more than the 1 before", applied.Load())
		}
	})
}

// lockCheckHandler records, for each log line, whether the committer's lock
// was held while it was written.
type lockCheckHandler struct {
	c     *Committer // set once the committer is made
	mu    sync.Mutex
	lines []string
	held  []bool
}

func (h *lockCheckHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *lockCheckHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lockCheckHandler) WithGroup(string) slog.Handler            { return h }
func (h *lockCheckHandler) Handle(_ context.Context, r slog.Record) error {
	held := !h.c.mu.TryLock()
	if !held {
		h.c.mu.Unlock()
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, b.String())
	h.held = append(h.held, held)
	h.mu.Unlock()
	return nil
}

// TestCommitterLogsRegistrationUnderLock: a block's registration is logged
// by Register while it holds the commit lock, as a commit is: a revoke
// that commits and releases the partition right after it (under the same
// lock) logs after it, so a member's log never shows a registration
// after the release of its partition when the registration came first.
func TestCommitterLogsRegistrationUnderLock(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 4}
	e := tr.Assign(tp)
	tr.Start(tp, e, 561)
	h := &lockCheckHandler{}
	c := NewCommitter(tr, &fakeClient{}, CommitterOptions{Log: slog.New(h)})
	h.c = c
	if ok, err := c.Register(tp, e, 561, 837, time.Second); !ok || err != nil {
		t.Fatalf("Register: %v, %v", ok, err)
	}
	if ok, _ := c.Register(tp, e+1, 837, 900, time.Second); ok {
		t.Fatal("a registration under another epoch was accepted")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lines) != 1 || h.lines[0] != "exactly_once: block registered topic=t partition=4 block=561-837" {
		t.Fatalf("logged %q; want the one registration, with its topic, partition and block", h.lines)
	}
	if !h.held[0] {
		t.Fatal("the registration was logged after the commit lock was released")
	}
}
