package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// stormMember is one of the storm's three member slots: the process now
// in it (nil while stopped) and its metrics address, kept across restarts.
type stormMember struct {
	cfg      string
	metrics  string
	p        *proc
	stopping bool      // signalled, not yet exited
	sig      string    // the signal sent, while stopping
	since    time.Time // when the signal was sent
}

// TestRebalanceStorm: three members of one group share 12 partitions led by
// three brokers, at_least_once, with short group timeouts (session 6s,
// rebalance 13s, drain 3s). While 200,000 records are produced at a steady
// rate, ClickHouse is frozen and thawed several times (2.5 s to 5 s each)
// and members are stopped (SIGTERM, about one stop in four SIGKILL) and
// started again, 30 stop and start events in all, members chosen at random
// from a logged seed (ETL_STORM_SEED replays the choices), never stopping
// the last running member. A member stopped by SIGTERM exits 0, or 3 when
// its drain (the sink frozen) or its final commit could not finish, within
// 45 s; no member exits by itself. At the end, with every member running and the sink thawed:
// every produced id is in ClickHouse (records written more than once are
// counted and logged as runs of offsets with the time they were produced,
// to set beside the storm's timeline); the group settles with every member
// assigned a share; every member's etl_backpressure_inflight_bytes and
// etl_backpressure_paused settle at 0; the committed offsets reach the end
// offsets of all 12 partitions; no process committed a partition it did not
// own (read from each JSON log); and a last SIGTERM stops each member with
// exit code 0. ETL_STORM_LOGS=DIR keeps every process's log in DIR.
func TestRebalanceStorm(t *testing.T) {
	const (
		n         = 200_000
		rate      = 2_300 // records/s: production spans the storm
		parts     = 12
		members   = 3
		events    = 30
		maxFrozen = 8
		group     = "storm"
		drain     = 3 * time.Second // checkpoint.drain_timeout
	)
	begin := time.Now()
	stormSeed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ETL_STORM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ETL_STORM_SEED=%q: %v", s, err)
		}
		stormSeed = v
	}
	t.Logf("storm seed %d (ETL_STORM_SEED=%d replays its choices)", stormSeed, stormSeed)
	rng := rand.New(rand.NewPCG(stormSeed, 0x5707))

	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	kb := testenv.KafkaCluster(t, 3, parts, topic)
	e := &env{t: t, ch: ch, kb: kb}
	frozen := false
	defer func() {
		if frozen {
			ch.Thaw(t)
		}
	}()

	// Short group timeouts so that rebalances are quick; the rebalance
	// timeout covers a revoke's drain (drain_timeout 3s) and its commit (10s).
	base := stormReplace(t, readFile(t, e.config(group, "")),
		"session_timeout: 6s", "session_timeout: 6s\n    rebalance_timeout: 13s",
		"drain_timeout: 20s", fmt.Sprintf("drain_timeout: %v", drain),
		"log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}", "log: {level: debug, format: json}")
	var slots [members]*stormMember
	for i := range slots {
		addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		cfg := stormReplace(t, base, `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr))
		slots[i] = &stormMember{cfg: writeConfig(t, cfg), metrics: addr}
	}
	var all []*proc // every process started, in order
	start := func(i int) {
		slots[i].p = startETL(t, slots[i].cfg)
		all = append(all, slots[i].p)
	}
	if dir := os.Getenv("ETL_STORM_LOGS"); dir != "" {
		// Keep every process's log (the test's folders are removed).
		defer func() {
			for i, p := range all {
				b, _ := os.ReadFile(p.log)
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("process-%02d.log", i)), b, 0o644)
			}
			t.Logf("process logs in %s", dir)
		}()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	produced := make(chan error, 1)
	prodStart := time.Now()
	go func() {
		got, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: topic, Seed: seed, Count: n, Rate: rate, Partitions: parts})
		if err == nil && got != n {
			err = fmt.Errorf("produced %d of %d", got, n)
		}
		produced <- err
	}()
	for i := range slots {
		start(i)
	}

	// The storm: a loop on a 50 ms tick that thaws and freezes ClickHouse
	// on schedule, collects the exits of signalled members and runs the
	// next stop or start event when it is due.
	var (
		stops, kills, starts, freezes int
		drainUnfinished               int
		exitCodes                     = map[string]map[int]int{"SIGTERM": {}, "SIGKILL": {}}
		maxTermStop                   time.Duration
		frozenFor                     time.Duration
		frozenAt, thawAt              time.Time
		nextFreeze                    = time.Now().Add(4 * time.Second)
		nextEvent                     = time.Now().Add(3 * time.Second)
		done                          = 0
		timeline                      []string
	)
	stormStart := time.Now()
	// producedAt is about when the record at offset o of partition p was
	// produced, in seconds of the storm's timeline (the rate paces ids).
	producedAt := func(p, o int) float64 {
		return prodStart.Sub(stormStart).Seconds() + float64(o*parts+p)/rate
	}
	note := func(format string, args ...any) {
		s := fmt.Sprintf("%6.1fs ", time.Since(stormStart).Seconds()) + fmt.Sprintf(format, args...)
		timeline = append(timeline, s)
	}
	stormDeadline := time.Now().Add(150 * time.Second)
	for done < events || frozen || stormBusy(slots[:]) {
		now := time.Now()
		if now.After(stormDeadline) {
			t.Fatalf("the storm did not finish in time: %d of %d events, timeline:\n%s", done, events, strings.Join(timeline, "\n"))
		}
		if frozen && !now.Before(thawAt) {
			ch.Thaw(t)
			frozen = false
			frozenFor += time.Since(frozenAt)
			note("ClickHouse thawed after %v", time.Since(frozenAt).Round(100*time.Millisecond))
		}
		if !frozen && done < events && freezes < maxFrozen && !now.Before(nextFreeze) {
			ch.Freeze(t)
			frozen, frozenAt = true, time.Now()
			thawAt = frozenAt.Add(time.Duration(2500+rng.IntN(2500)) * time.Millisecond)
			nextFreeze = thawAt.Add(time.Duration(6000+rng.IntN(6000)) * time.Millisecond)
			freezes++
			note("ClickHouse frozen")
		}
		for i, m := range slots {
			switch {
			case m.p == nil:
			case m.stopping && !m.p.running():
				code := m.p.wait(t, time.Second)
				took := time.Since(m.since)
				exitCodes[m.sig][code]++
				note("member %d exited %d, %v after %s", i, code, took.Round(100*time.Millisecond), m.sig)
				if m.sig == "SIGTERM" {
					maxTermStop = max(maxTermStop, took)
					switch code {
					case 0:
					case 3:
						drainUnfinished++
					default:
						t.Fatalf("member %d stopped by SIGTERM exited %d, want 0 (or 3 for an unfinished drain or final commit); log %s", i, code, m.p.log)
					}
				} else if code != 128+int(syscall.SIGKILL) {
					t.Fatalf("member %d killed by SIGKILL exited %d", i, code)
				}
				m.p, m.stopping = nil, false
			case m.stopping && time.Since(m.since) > 45*time.Second:
				// The drain, then a final commit bounded by its own 10 s,
				// then leaving the group, which waits for a join request in
				// flight (up to rebalance_timeout + 10 s): seen taking 15 s
				// when the broker dropped the member while it was rejoining.
				t.Fatalf("member %d did not exit within 45s of %s (drain_timeout %v); log %s", i, m.sig, drain, m.p.log)
			case !m.stopping && !m.p.running():
				t.Fatalf("member %d exited by itself (%v); log %s", i, m.p.err, m.p.log)
			}
		}
		if done < events && !now.Before(nextEvent) {
			running, down := 0, 0
			var canStop, canStart []int
			for i, m := range slots {
				switch {
				case m.p == nil:
					down++
					canStart = append(canStart, i)
				case m.stopping:
					down++
				default:
					running++
					canStop = append(canStop, i)
				}
			}
			remaining := events - done
			// Every member must be running after the last event, and one
			// member at least is always running.
			stopOK := running > 1 && down+1 <= remaining-1
			startOK := len(canStart) > 0
			var act string
			switch {
			case stopOK && startOK:
				act = []string{"stop", "start"}[rng.IntN(2)]
			case stopOK:
				act = "stop"
			case startOK:
				act = "start"
			}
			switch act {
			case "stop":
				i := canStop[rng.IntN(len(canStop))]
				m := slots[i]
				sig, name := syscall.SIGTERM, "SIGTERM"
				if rng.IntN(4) == 0 || (stops == 6 && kills == 0) {
					sig, name = syscall.SIGKILL, "SIGKILL"
					kills++
				}
				if err := m.p.cmd.Process.Signal(sig); err != nil {
					t.Fatalf("member %d: %s: %v", i, name, err)
				}
				m.stopping, m.sig, m.since = true, name, time.Now()
				stops++
				done++
				note("event %d: %s member %d (frozen %v)", done, name, i, frozen)
			case "start":
				i := canStart[rng.IntN(len(canStart))]
				start(i)
				starts++
				done++
				note("event %d: start member %d as process %d (frozen %v)", done, i, len(all)-1, frozen)
			default:
				// Only members still draining could be started: wait for them.
				nextEvent = now.Add(100 * time.Millisecond)
				continue
			}
			nextEvent = time.Now().Add(time.Duration(1500+rng.IntN(2500)) * time.Millisecond)
		}
		// The storm's clock: events come at random instants of real time.
		time.Sleep(50 * time.Millisecond)
	}
	stormTook := time.Since(stormStart)
	t.Logf("storm timeline:\n%s", strings.Join(timeline, "\n"))
	t.Logf("storm: %d events in %v (%d stops: %d SIGTERM, %d SIGKILL; %d starts), ClickHouse frozen %d times for %v in all; SIGTERM exit codes %v, longest SIGTERM stop %v",
		done, stormTook.Round(100*time.Millisecond), stops, stops-kills, kills, starts, freezes, frozenFor.Round(100*time.Millisecond),
		exitCodes["SIGTERM"], maxTermStop.Round(100*time.Millisecond))
	if done != events {
		t.Fatalf("%d events, want %d", done, events)
	}

	// The end: every member running, the sink thawed.
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d records produced after %v", n, time.Since(begin).Round(100*time.Millisecond))
	waitFrom := time.Now()
	testenv.Eventually(t, "every id in ClickHouse after the storm", 2*time.Minute, func() error {
		got := ch.Query(t, fmt.Sprintf("SELECT uniqExact(id) FROM default.events WHERE id < %d", n))
		if got == strconv.Itoa(n) {
			return nil
		}
		for i, m := range slots {
			if !m.p.running() {
				t.Fatalf("member %d exited (%v) while waiting for every id; log %s", i, m.p.err, m.p.log)
			}
		}
		return fmt.Errorf("%s of %d distinct ids", got, n)
	})
	t.Logf("every id in ClickHouse %v after the storm", time.Since(waitFrom).Round(100*time.Millisecond))
	counts, outside := e.idCounts(n)
	dupIDs, extraRows := 0, 0
	// Per partition: the runs of offsets written more than once (a gap
	// of up to 50 offsets joins two runs), to set beside the timeline.
	type run struct{ first, last, n int }
	var dupRuns [parts][]run
	for id, c := range counts {
		if c == 0 {
			t.Fatalf("id %d missing", id)
		}
		if c > 1 {
			dupIDs++
			extraRows += int(c) - 1
			p, o := id%parts, id/parts
			rs := dupRuns[p]
			if k := len(rs) - 1; k >= 0 && o-rs[k].last <= 50 {
				rs[k].last = o
				rs[k].n++
			} else {
				dupRuns[p] = append(rs, run{o, o, 1})
			}
		}
	}
	if outside != 0 {
		t.Fatalf("%d rows with ids outside 0..%d", outside, n-1)
	}
	var byPart []string
	for p, rs := range dupRuns {
		for _, r := range rs {
			byPart = append(byPart, fmt.Sprintf("partition %2d: %4d records in offsets %d..%d (produced at %.1fs..%.1fs)",
				p, r.n, r.first, r.last, producedAt(p, r.first), producedAt(p, r.last)))
		}
	}
	t.Logf("duplicates: %d ids written more than once (%d extra rows) after %d SIGKILLs and %d SIGTERM stops with exit code 3:\n%s",
		dupIDs, extraRows, kills, drainUnfinished, strings.Join(byPart, "\n"))

	// The group settles with every member assigned a share.
	testenv.Eventually(t, "every member assigned a share", time.Minute, func() error {
		var assigned []float64
		sum, each := 0.0, true
		for _, m := range slots {
			a := scrape(t, m.metrics)["etl_source_assigned_partitions"]
			assigned = append(assigned, a)
			sum += a
			each = each && a > 0
		}
		if sum == parts && each {
			t.Logf("partitions assigned per member: %v", assigned)
			return nil
		}
		return fmt.Errorf("partitions assigned per member %v; want all %d shared by the %d members", assigned, parts, members)
	})

	// Back-pressure state settles at nothing in flight, nothing paused.
	for i, m := range slots {
		testenv.Eventually(t, fmt.Sprintf("member %d: nothing in flight, nothing paused", i), 20*time.Second, func() error {
			mm := scrape(t, m.metrics)
			inflight, paused := mm["etl_backpressure_inflight_bytes"], mm["etl_backpressure_paused"]
			if inflight == 0 && paused == 0 {
				t.Logf("member %d: in-flight 0 bytes, 0 partitions paused, %v assigned, %v rebalances",
					i, mm["etl_source_assigned_partitions"], mm["etl_source_rebalances_total"])
				return nil
			}
			return fmt.Errorf("etl_backpressure_inflight_bytes %v, etl_backpressure_paused %v", inflight, paused)
		})
	}

	// Committed offsets reach the end of every partition.
	got := waitCommittedEnd(t, kb, group, topic, parts, time.Minute, nil)
	t.Logf("committed offsets at the end offsets of all %d partitions: %v", parts, got)

	for i, m := range slots {
		if code := m.p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("member %d: exit code %d on the last SIGTERM, want 0", i, code)
		}
	}
	lost, revokes := 0, 0
	var waitedOut []string
	for i, p := range all {
		if _, err := commitsOnlyOwned(p.log); err != nil {
			t.Errorf("process %d (%s): %v", i, p.log, err)
		}
		lost += strings.Count(p.logText(), `"msg":"partitions lost"`)
		rs, err := revokeSpans(p.log)
		if err != nil {
			t.Errorf("process %d (%s): %v", i, p.log, err)
		}
		revokes += len(rs)
		for _, r := range rs {
			// A revoke that waited out the drain timeout released
			// partitions with records in flight: their next owner reads
			// them again, and they are written twice.
			if r.took >= drain-100*time.Millisecond {
				waitedOut = append(waitedOut, fmt.Sprintf("process %d: revoke of %v at %.1fs waited %v",
					i, r.parts, r.at.Sub(stormStart).Seconds(), r.took.Round(100*time.Millisecond)))
			}
		}
	}
	t.Logf("%d revokes, %d of them waited out drain_timeout (%v):\n%s", revokes, len(waitedOut), drain, strings.Join(waitedOut, "\n"))
	t.Logf("summary: %d events, %d processes, %d duplicate ids, %d SIGKILLs, %d SIGTERM stops with exit code 3, %d revokes that waited out drain_timeout, %d partitions-lost callbacks, storm %v, whole test %v",
		done, len(all), dupIDs, kills, drainUnfinished, len(waitedOut), lost, stormTook.Round(100*time.Millisecond), time.Since(begin).Round(100*time.Millisecond))
}

// revokeSpan is one revoke read from a member's JSON log: when it began,
// which partitions and how long until they were released.
type revokeSpan struct {
	at    time.Time
	parts string
	took  time.Duration
}

// revokeSpans reads a member's JSON log and returns its revokes in order.
func revokeSpans(path string) ([]revokeSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []revokeSpan
	var open *revokeSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Time       time.Time       `json:"time"`
			Msg        string          `json:"msg"`
			Partitions json.RawMessage `json:"partitions"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case "partitions revoked":
			open = &revokeSpan{at: line.Time, parts: string(line.Partitions)}
		case "revoked partitions released":
			if open != nil {
				open.took = line.Time.Sub(open.at)
				out = append(out, *open)
				open = nil
			}
		}
	}
	return out, sc.Err()
}

// stormBusy reports whether a member is still stopping.
func stormBusy(slots []*stormMember) bool {
	for _, m := range slots {
		if m.stopping {
			return true
		}
	}
	return false
}

// stormReplace replaces each old with its new in text once, failing t when
// text lacks one.
func stormReplace(t *testing.T, text string, oldNew ...string) string {
	t.Helper()
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(text, oldNew[i]) {
			t.Fatalf("the harness's config has no %q", oldNew[i])
		}
		text = strings.Replace(text, oldNew[i], oldNew[i+1], 1)
	}
	return text
}
