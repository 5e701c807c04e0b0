package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// gaugeSum is the sum of every series of the gauge name in reg, and
// whether there is any.
func gaugeSum(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		sum := 0.0
		for _, m := range mf.GetMetric() {
			sum += m.GetGauge().GetValue()
		}
		return sum, len(mf.GetMetric()) > 0
	}
	return 0, false
}

var statusLag = regexp.MustCompile(`msg=status .*?lag=("[^"]*"|\S+)`)

// statusLags returns the lag field of every status line in text, in
// order, unquoted.
func statusLags(text string) []string {
	var out []string
	for _, m := range statusLag.FindAllStringSubmatch(text, -1) {
		v := m[1]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out = append(out, v)
	}
	return out
}

// lastStatusLag is the lag of the last status line in text ("" when none).
func lastStatusLag(text string) string {
	l := statusLags(text)
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// lagLogger logs INFO and above to out (for the status lines) and WARN and
// above to the test's log.
func lagLogger(t *testing.T, out *syncBuffer) *slog.Logger {
	return slog.New(teeHandler{
		slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}),
		testenv.Logger(t).Handler(),
	})
}

// teeHandler hands every record to each of its handlers that takes its
// level.
type teeHandler []slog.Handler

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, x := range h {
		if x.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, x := range h {
		if x.Enabled(ctx, r.Level) {
			if err := x.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(h))
	for i, x := range h {
		out[i] = x.WithAttrs(as)
	}
	return out
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(h))
	for i, x := range h {
		out[i] = x.WithGroup(name)
	}
	return out
}

// TestLagDuringClickHouseOutage: while ClickHouse is stopped and records
// keep arriving, etl_source_lag_records and the status line's lag grow to
// the records produced during the outage (none of them is in ClickHouse),
// although every one of them may have been fetched; once ClickHouse is
// back and the rows are in the table, both fall to 0.
func TestLagDuringClickHouseOutage(t *testing.T) {
	kb, ch := setup(t)
	cfg := testConfig(t, kb, ch, "lagoutage")
	cfg.Log.StatusInterval = config.Duration(300 * time.Millisecond)
	// A budget that fills during the outage (about 12,000 of these
	// records): the partitions pause, and the lag goes on growing from
	// the listed log ends alone.
	cfg.Backpressure.MaxInflightBytes = config.MiB
	reg := prometheus.NewPedanticRegistry()
	var out syncBuffer
	p, err := New(context.Background(), Options{Config: cfg, Log: lagLogger(t, &out), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	const before = 3000
	produce(t, kb, 0, before, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool { return ch.Count(t, "default.events") == before })
	testenv.WaitFor(t, "lag 0 with everything written", 30*time.Second, func() bool {
		lag, ok := gaugeSum(t, reg, "etl_source_lag_records")
		return ok && lag == 0 && lastStatusLag(out.String()) == "0"
	})

	ch.Stop(t)
	outageAt := time.Now()
	// Records keep arriving during the outage: 20 batches of 1,000, each
	// produced once the gauge counts the one before, whether its
	// partitions still fetch (the fetches' high watermarks) or are paused
	// with the budget full (the listings of the log ends). The lag never
	// falls while nothing can be written.
	const batches, per = 20, 1000
	var seen []string
	last := 0.0
	for i := uint64(0); i < batches; i++ {
		produce(t, kb, before+i*per, per, nil)
		want := float64((i + 1) * per)
		testenv.WaitFor(t, fmt.Sprintf("etl_source_lag_records to count batch %d of the outage", i+1), 20*time.Second, func() bool {
			lag, _ := gaugeSum(t, reg, "etl_source_lag_records")
			if lag < last {
				t.Errorf("etl_source_lag_records fell from %v to %v during the outage", last, lag)
			}
			last = lag
			return lag == want
		})
		seen = append(seen, fmt.Sprintf("%v:%v/%s", time.Since(outageAt).Round(100*time.Millisecond), last, lastStatusLag(out.String())))
	}
	t.Logf("during the outage (time: gauge/status line, %d produced once the gauge counted the batch before): %s", per, strings.Join(seen, " "))
	const during = batches * per
	producedIn := time.Since(outageAt)
	var gaugeAt, statusAt time.Duration
	testenv.WaitFor(t, "etl_source_lag_records to reach the records produced during the outage", 20*time.Second, func() bool {
		lag, _ := gaugeSum(t, reg, "etl_source_lag_records")
		if lag == during && gaugeAt == 0 {
			gaugeAt = time.Since(outageAt)
		}
		if lastStatusLag(out.String()) == strconv.Itoa(during) && statusAt == 0 {
			statusAt = time.Since(outageAt)
		}
		return gaugeAt > 0 && statusAt > 0
	})
	fetchLag, _ := gaugeSum(t, reg, "etl_source_fetch_lag_records")
	paused := p.Stats().PausedPartitions
	t.Logf("outage: %d records produced in %v; etl_source_lag_records = %d after %v, status line lag=%d after %v; etl_source_fetch_lag_records = %v; paused partitions %d",
		during, producedIn.Round(time.Millisecond), during, gaugeAt.Round(time.Millisecond), during, statusAt.Round(time.Millisecond), fetchLag, paused)
	if paused == 0 {
		t.Errorf("no partition paused with the budget full: the lag of paused partitions was not tested")
	}

	ch.Start(t)
	backAt := time.Now()
	testenv.WaitFor(t, "every row after the outage", time.Minute, func() bool { return ch.Count(t, "default.events") == before+during })
	rowsIn := time.Since(backAt)
	testenv.WaitFor(t, "lag 0 once the rows are in", 30*time.Second, func() bool {
		lag, _ := gaugeSum(t, reg, "etl_source_lag_records")
		return lag == 0 && lastStatusLag(out.String()) == "0"
	})
	t.Logf("ClickHouse back: all rows in after %v, lag 0 (gauge and status line) after %v",
		rowsIn.Round(time.Millisecond), time.Since(backAt).Round(time.Millisecond))
	for _, l := range statusLags(out.String()) {
		if strings.Contains(l, "no broker answering") {
			t.Errorf("a status line says %q while the broker answers", l)
		}
	}
}

// TestLagUnknownBeforeAssignment: a member that starts while the group
// still counts a dead member (its session not expired yet) waits for its
// assignment; its status lines say the lag is unknown and why, not 0, and
// once the group assigns it the partitions the lag is a number.
func TestLagUnknownBeforeAssignment(t *testing.T) {
	kb, ch := setup(t)
	produce(t, kb, 0, 300, nil)
	const group = "lagwait"

	// A member that takes every partition and then dies without leaving:
	// its heartbeats are answered without reaching the group, so the
	// group forgets it only when its session (6 s) expires.
	dead := kb.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics("events", "events2"),
		kgo.SessionTimeout(6*time.Second), kgo.DisableAutoCommit())
	testenv.WaitFor(t, "the first member's assignment", 20*time.Second, func() bool {
		pctx, pcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer pcancel()
		return dead.PollFetches(pctx).NumRecords() > 0
	})
	member, _ := dead.GroupMetadata()
	c := kb.Cluster()
	c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		hb := req.(*kmsg.HeartbeatRequest)
		if hb.MemberID != member {
			return nil, nil, false
		}
		resp := hb.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.Version = hb.Version
		return resp, nil, true
	})

	cfg := testConfig(t, kb, ch, group)
	cfg.Log.StatusInterval = config.Duration(200 * time.Millisecond)
	var out syncBuffer
	p, err := New(context.Background(), Options{Config: cfg, Log: lagLogger(t, &out), Registerer: prometheus.NewPedanticRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	const waiting = "unknown (waiting for a partition assignment from the group)"
	testenv.WaitFor(t, "a status line while waiting", 10*time.Second, func() bool { return lastStatusLag(out.String()) != "" })
	if got := lastStatusLag(out.String()); got != waiting {
		t.Fatalf("status line lag before the assignment = %q, want %q\n%s", got, waiting, out.String())
	}
	testenv.WaitFor(t, "the rows, once the dead member's session expired", time.Minute, func() bool { return ch.Count(t, "default.events") == 300 })
	assignedAfter := time.Since(start)
	testenv.WaitFor(t, "lag 0 in the status line", 20*time.Second, func() bool { return lastStatusLag(out.String()) == "0" })
	lags := statusLags(out.String())
	nWaiting := 0
	for _, l := range lags {
		switch {
		case l == waiting:
			nWaiting++
		default:
			// Between the assignment and the first reads of the log end
			// and of the committed offset, the lag is unknown and says
			// which of the two is missing.
			if _, err := strconv.Atoi(l); err != nil &&
				!strings.HasPrefix(l, "unknown (the log end was not read yet") &&
				!strings.HasPrefix(l, "unknown (the committed offset was not read yet") {
				t.Errorf("status line lag %q", l)
			}
		}
	}
	t.Logf("%d status lines said %q; rows written %v after the start; then lag=0", nWaiting, waiting, assignedAfter.Round(time.Millisecond))
}
