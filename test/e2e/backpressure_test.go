package e2e

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// TestStalledSink: records keep arriving while ClickHouse is frozen for
// longer than the group's session and rebalance timeouts. The consumer stays
// in its group (no rebalance), the in-flight bytes sampled every 100 ms
// never exceed the budget, the process RSS stays under budget + 100 MiB, and
// once ClickHouse is back every record arrives.
func TestStalledSink(t *testing.T) {
	const (
		n      = 1_500_000
		budget = 64 << 20
	)
	e := newEnv(t)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := strings.Replace(readFile(t, e.config("stalled", fmt.Sprintf(`backpressure: {max_inflight_bytes: %d}
`, budget))), `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, metricsAddr), 1)
	cfg = strings.Replace(cfg, "session_timeout: 6s", "session_timeout: 6s\n    rebalance_timeout: 30s\n    fetch_max_bytes: 8MiB", 1)
	p := startETL(t, writeConfig(t, cfg))
	produced := e.produceAsync(0, n, 100_000)
	e.waitRows(100_000, time.Minute, p)

	e.ch.Freeze(t)
	frozenAt := time.Now()
	var maxInflight float64
	var maxRSS int64
	var pausedSeen, pauseEvents float64
	for time.Since(frozenAt) < 15*time.Second {
		m := scrape(t, metricsAddr)
		maxInflight = max(maxInflight, m["etl_backpressure_inflight_bytes"])
		pausedSeen = max(pausedSeen, m["etl_backpressure_paused"])
		pauseEvents = m["etl_backpressure_pause_events_total"]
		maxRSS = max(maxRSS, rssBytes(p.cmd.Process.Pid))
		if m["etl_source_rebalances_total"] != 1 {
			t.Fatalf("rebalanced while ClickHouse was frozen: etl_source_rebalances_total = %v", m["etl_source_rebalances_total"])
		}
		// Sampling the peaks through a freeze of a set length.
		time.Sleep(100 * time.Millisecond)
	}
	e.ch.Thaw(t)
	t.Logf("frozen 15 s: peak in-flight %.1f MiB of a %d MiB budget, peak RSS %.1f MiB, up to %v partitions paused, %v budget pauses",
		maxInflight/(1<<20), budget>>20, float64(maxRSS)/(1<<20), pausedSeen, pauseEvents)
	if maxInflight > budget {
		t.Errorf("in-flight bytes reached %.0f, over the budget %d", maxInflight, budget)
	}
	if maxRSS > budget+100<<20 {
		t.Errorf("RSS reached %d bytes, over budget + 100 MiB", maxRSS)
	}
	if pausedSeen == 0 {
		t.Errorf("no partition was paused while ClickHouse was frozen")
	}
	if err := produced(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 3*time.Minute, p)
	e.waitCommitted("stalled", time.Minute)
	if m := scrape(t, metricsAddr); m["etl_source_rebalances_total"] != 1 {
		t.Errorf("etl_source_rebalances_total = %v after the run", m["etl_source_rebalances_total"])
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	counts, _ := e.idCounts(n)
	for id, c := range counts {
		if c == 0 {
			t.Fatalf("id %d missing", id)
		}
	}
}

// committedWatcher samples the group's committed offsets every 50 ms and
// records any offset that moved backwards: the sign of a commit made for a
// partition after it was revoked.
type committedWatcher struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	last    map[int32]int64
	regress []string
}

func watchCommitted(t *testing.T, e *env, group string) *committedWatcher {
	w := &committedWatcher{stop: make(chan struct{}), done: make(chan struct{}), last: map[int32]int64{}}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			got, err := e.kb.CommittedOffsetsErr(group, topic)
			if err != nil {
				continue
			}
			w.mu.Lock()
			for p, o := range got {
				if o < w.last[p] {
					w.regress = append(w.regress, fmt.Sprintf("partition %d: %d after %d", p, o, w.last[p]))
				}
				w.last[p] = max(w.last[p], o)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *committedWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *committedWatcher) snapshot() map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int32]int64{}
	for p, o := range w.last {
		out[p] = o
	}
	return out
}

// TestRebalance: a second etl instance joins the group mid-stream and
// later leaves. Nothing is lost; a record is written twice only if its
// offset was not committed before the rebalance; no committed offset ever
// moves backwards (which a commit after a revoke would cause).
func TestRebalance(t *testing.T) {
	const n = 600_000
	e := newEnv(t)
	cfg := e.config("rebalance", "")
	w := watchCommitted(t, e, "rebalance")
	p1 := startETL(t, cfg)
	produced := e.produceAsync(0, n, 60_000)
	e.waitRows(100_000, time.Minute, p1)

	beforeJoin := w.snapshot()
	p2 := startETL(t, cfg)
	e.waitRows(300_000, time.Minute, p2)
	if code := p2.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("second instance exit code %d", code)
	}
	if !strings.Contains(p2.logText(), "partitions assigned") {
		t.Fatal("the second instance was never assigned partitions")
	}
	if !strings.Contains(p1.logText(), "partitions revoked") {
		t.Fatal("the first instance never had partitions revoked")
	}
	if err := produced(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 2*time.Minute, p1)
	e.waitCommitted("rebalance", time.Minute)
	if code := p1.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("first instance exit code %d", code)
	}
	w.close()
	if len(w.regress) > 0 {
		t.Fatalf("committed offsets moved backwards: %v", w.regress)
	}
	dups := e.checkAllOnceBelow(n, beforeJoin)
	t.Logf("%d records written twice across the join and the leave", dups)
}

// TestHysteresis: a saturating backlog into a slow sink (every insert
// takes at least 300 ms on the server). The source pauses and resumes, but
// each budget pause lasts at least min_pause, so pause events stay at or
// below 60 s / min_pause = 120 a minute, and once rows flow no two-second
// window passes without rows written (an insert takes 0.3 s to 0.6 s here).
func TestHysteresis(t *testing.T) {
	const n = 400_000
	e := newEnv(t)
	e.ch.Exec(t, "ALTER TABLE default.events ADD COLUMN slow UInt8 MATERIALIZED sleep(0.3)")
	e.produce(0, n)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := strings.Replace(readFile(t, e.config("hysteresis", `backpressure: {max_inflight_bytes: 24MiB, min_pause: 500ms}
`)), `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, metricsAddr), 1)
	cfg = strings.Replace(cfg, "batch: {max_rows: 50000, max_bytes: 16MiB, linger: 200ms}", "batch: {max_rows: 20000, max_bytes: 2MiB, linger: 200ms}", 1)
	p := startETL(t, writeConfig(t, cfg))
	start := time.Now()
	var last float64
	stalls := 0
	for {
		// A stall is progress missing over a span of real time: sample
		// every 2 s.
		time.Sleep(2 * time.Second)
		m := scrape(t, metricsAddr)
		rows := m["etl_sink_records_total"]
		if rows == last && rows > 0 && rows < n {
			stalls++
		}
		last = rows
		if rows >= n || time.Since(start) > 3*time.Minute {
			el := time.Since(start)
			pauses := m["etl_backpressure_pause_events_total"]
			full := m["etl_queue_full_events_total"]
			perMin := pauses / el.Minutes()
			t.Logf("%v rows in %v: %v budget pauses (%.0f/min), %v queue-full refusals, %d two-second windows with no rows written",
				rows, el.Round(time.Second), pauses, perMin, full, stalls)
			if pauses == 0 && full == 0 {
				t.Errorf("the source was never paused: the sink was not slow enough to test anything")
			}
			if perMin > 120 {
				t.Errorf("%.0f budget pauses a minute, above 60 s / min_pause = 120", perMin)
			}
			if stalls > 0 {
				t.Errorf("throughput fell to zero in %d two-second windows", stalls)
			}
			break
		}
	}
	e.waitRows(n, time.Minute, p)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestReadAhead: a shard queue that refuses chunks all the time (two
// chunks of 4 KiB, batches of 5,000 rows, one insert at a time) in front
// of a real ClickHouse. Each pause makes the Kafka client drop what it had
// fetched for the partition and read it again after the resume. With the
// default read-ahead a partition pauses only once its lane holds 4 MiB of
// undecoded records, so the client reads each record about once
// (etl_source_read_records_total against etl_source_records_total); with
// partition_read_ahead: 0, which pauses at every refusal, more of the same
// backlog is read twice. Both arms write every record once.
func TestReadAhead(t *testing.T) {
	const n = 300_000
	read := map[string]float64{}
	for _, arm := range []struct{ name, extra string }{
		{"default", ""},
		{"none", "backpressure: {partition_read_ahead: 0}\n"},
	} {
		t.Run(arm.name, func(t *testing.T) {
			e := newEnv(t)
			e.produce(0, n)
			addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
			cfg := readFile(t, e.config("readahead", "chunk: {target_bytes: 4KiB}\n"+arm.extra))
			cfg = strings.Replace(cfg, "    table: events\n", "    table: events\n    queue_capacity: 2\n    inflight: {max_per_shard: 1}\n", 1)
			cfg = strings.Replace(cfg, "batch: {max_rows: 50000,", "batch: {max_rows: 5000,", 1)
			cfg = strings.Replace(cfg, `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr), 1)
			p := startETL(t, writeConfig(t, cfg))
			e.waitRows(n, 3*time.Minute, p)
			m := scrape(t, addr)
			if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			if dups := e.checkAllPresent(n); dups != 0 {
				t.Errorf("%d records written twice in a run without a fault", dups)
			}
			full, records, r := m["etl_queue_full_events_total"], m["etl_source_records_total"], m["etl_source_read_records_total"]
			t.Logf("%s: %v refusals, %v records read for %v delivered (%.2f times), %v fetch restarts, %v partitions paused at the end",
				arm.name, full, r, records, r/records, m["etl_source_fetch_restarts_total"], m["etl_backpressure_paused"])
			if full < 100 {
				t.Fatalf("the queue refused only %v chunks: the test did not exercise backpressure", full)
			}
			read[arm.name] = r / records
		})
	}
	// Measured here: 1.04-1.07 with the default, 1.16-1.61 with 0.
	if r := read["default"]; r > 1.15 {
		t.Errorf("with the default read-ahead the client read %.2f times the records it delivered; want at most 1.15", r)
	}
	if r := read["none"]; r > 0 && r < read["default"] {
		t.Errorf("pausing at every refusal read %.2f times the records, less than the read-ahead's %.2f", r, read["default"])
	}
}
