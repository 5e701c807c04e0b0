package e2e

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// TestExactlyOnceZooKeeperOutage: ZooKeeper is stopped for 20 s mid-stream
// under exactly_once, so the replicated table goes read-only. Inserts are
// retried with backoff (the server's codes are transient), nothing is
// committed that is not in the table, and once ZooKeeper is back every
// record is in the table exactly once: the retried blocks are the same
// blocks, so one that the server took before ZooKeeper went away is dropped
// as a duplicate. An insert whose status the outage left unknown may leave
// a part ZooKeeper never registered, which reads with the retried block
// until the server restarts: etl reports it, and the test then restarts
// ClickHouse (pipeline TestExactlyOnceUnknownInsertStatus makes that case
// every time). The time from ZooKeeper's return to the next insert is
// reported.
func TestExactlyOnceZooKeeperOutage(t *testing.T) {
	const (
		n      = 150_000
		outage = 20 * time.Second
		group  = "eo-zk"
	)
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	ch.Exec(t, replicatedDDL)
	e := &env{t: t, ch: ch, kb: testenv.KafkaProcess(t, partitions, topic)}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := writeConfig(t, strings.Replace(readFile(t, e.eoConfig(group)), `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, metricsAddr), 1))

	produced := e.produceAsync(0, n, 5_000)
	p := startETL(t, cfg)
	e.waitRows(20_000, time.Minute, p)

	zk.Stop(t)
	down := time.Now()
	// The replica notices the lost session and turns read-only.
	readonly := time.Duration(-1)
	for time.Since(down) < outage {
		if ch.Query(t, "SELECT is_readonly FROM system.replicas WHERE database = 'default' AND table = 'events'") == "1" && readonly < 0 {
			readonly = time.Since(down)
		}
		// Whatever happens meanwhile, nothing is committed that is not
		// in the table.
		committed := sumOffsets(e.kb.CommittedOffsets(t, group, topic))
		if rows := ch.Count(t, "default.events"); uint64(committed) > rows {
			t.Fatalf("during the outage: committed %d records, the table has %d rows", committed, rows)
		}
		if !p.running() {
			t.Fatalf("etl exited during the ZooKeeper outage:\n%s", p.logText())
		}
		// Sampling through an outage of a set length.
		time.Sleep(250 * time.Millisecond)
	}
	if readonly < 0 {
		t.Fatalf("the table never turned read-only in the %v without ZooKeeper", outage)
	}
	stuck := ch.Count(t, "default.events")
	errs := scrape(t, metricsAddr)["etl_sink_errors_total"]
	if errs == 0 {
		t.Fatalf("no insert error counted during the outage (rows %d)", stuck)
	}

	zk.Start(t)
	back := time.Now()
	writable := time.Duration(-1)
	testenv.WaitFor(t, "an insert after ZooKeeper came back", 3*time.Minute, func() bool {
		if ch.Count(t, "default.events") > stuck {
			return true
		}
		if writable < 0 && ch.Query(t, "SELECT is_readonly FROM system.replicas WHERE database = 'default' AND table = 'events'") == "0" {
			writable = time.Since(back)
		}
		if !p.running() {
			t.Fatalf("etl exited after ZooKeeper came back:\n%s", p.logText())
		}
		return false
	})
	recovered := time.Since(back)

	if err := produced(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 3*time.Minute, p)
	e.waitCommitted(group, time.Minute)
	m := scrape(t, metricsAddr)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	log := p.logText()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "UNKNOWN_STATUS_OF_INSERT (319)") || strings.Contains(line, "breaker") || strings.Contains(line, "never registered") {
			t.Log(line)
		}
	}
	// An insert under way when ZooKeeper stopped may have ended with
	// UNKNOWN_STATUS_OF_INSERT (319) and left a part ZooKeeper never
	// registered (an orphan): the retried block reads twice until the
	// server restarts, and etl reports the orphan.
	orphans := e.unregisteredRows(ch)
	reported := m["etl_sink_orphan_parts_total"]
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t%d\t0\t%d", n+orphans, n, n-1) {
		t.Fatalf("count, distinct ids, min, max = %s, want %d rows (%d in orphan parts), each id 0..%d", got, n+orphans, orphans, n-1)
	}
	switch {
	case orphans > 0 && reported == 0:
		t.Fatalf("%d rows in parts ZooKeeper does not know, and etl reported no orphan part", orphans)
	case reported > 0 && !strings.Contains(log, "UNKNOWN_STATUS_OF_INSERT (319)"):
		t.Fatalf("%v orphan parts reported, but no insert ended with UNKNOWN_STATUS_OF_INSERT (319)", reported)
	case orphans > 0:
		t.Logf("%v orphan part(s) reported, %d rows read twice: restarting ClickHouse", reported, orphans)
		ch.Stop(t)
		ch.Start(t)
		if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != fmt.Sprintf("%d\t%d", n, n) {
			t.Fatalf("after ClickHouse restarted: count, distinct = %s, want %d once each", got, n)
		}
	}

	// The server's codes, as the retry warnings give them.
	codes := map[string]int{}
	for _, c := range regexp.MustCompile(`[A-Z][A-Z_]+ \((\d+)\)`).FindAllStringSubmatch(p.logText(), -1) {
		codes[c[1]]++
	}
	var seen []string
	for c, k := range codes {
		seen = append(seen, fmt.Sprintf("%s×%d", c, k))
	}
	sort.Strings(seen)
	if len(codes) == 0 {
		t.Errorf("the log names no server error code")
	}
	// A permanent error would have stopped the pipeline: every error
	// was retried.
	t.Logf("table read-only %v after ZooKeeper stopped; %v failed insert attempts during the outage, %v in all, %v retries "+
		"(server codes in the log: %s); the table writable again %v after ZooKeeper was back, the first insert after %v; %d ids",
		readonly.Round(time.Millisecond), errs, m["etl_sink_errors_total"], m["etl_sink_retries_total"], strings.Join(seen, " "),
		writable.Round(time.Millisecond), recovered.Round(time.Millisecond), n)
}

// unregisteredRows counts the rows of default.events in active parts the
// replica's ZooKeeper node does not list.
func (e *env) unregisteredRows(ch *testenv.CH) uint64 {
	e.t.Helper()
	parts := fmt.Sprintf("/clickhouse/tables/%s/events/replicas/%s/parts", ch.Shard(), ch.Replica())
	got := ch.Query(e.t, "SELECT count() FROM default.events WHERE _part NOT IN (SELECT name FROM system.zookeeper WHERE path = '"+parts+"')")
	var rows uint64
	if _, err := fmt.Sscan(got, &rows); err != nil {
		e.t.Fatalf("rows outside ZooKeeper's parts: %q: %v", got, err)
	}
	return rows
}
