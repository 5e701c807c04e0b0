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
// as a duplicate. The time from ZooKeeper's return to the next insert is
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
	deadline := back.Add(3 * time.Minute)
	writable := time.Duration(-1)
	for ch.Count(t, "default.events") <= stuck {
		if writable < 0 && ch.Query(t, "SELECT is_readonly FROM system.replicas WHERE database = 'default' AND table = 'events'") == "0" {
			writable = time.Since(back)
		}
		if !p.running() {
			t.Fatalf("etl exited after ZooKeeper came back:\n%s", p.logText())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no insert %v after ZooKeeper came back", time.Since(back).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
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
		if strings.Contains(line, "code: 319") || strings.Contains(line, "breaker") {
			t.Log(line)
		}
	}
	// An insert whose commit to ZooKeeper was cut by the outage ends with
	// UNKNOWN_STATUS_OF_INSERT (319): the server keeps the part it wrote
	// locally, visible to reads, and queues it for a check (5 minutes
	// later, by ClickHouse's source) that detaches it when ZooKeeper never
	// registered it (the commit did not happen). The retried block is then
	// not a duplicate to the table and goes in again: meanwhile such a
	// block reads twice. What the table holds in its parts registered in
	// ZooKeeper must hold every record once.
	orphans := e.unregisteredRows(ch)
	if got := ch.Query(t, "SELECT uniqExact(id), min(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t0\t%d", n, n-1) {
		t.Fatalf("distinct ids, min, max = %s, want %d ids 0..%d", got, n, n-1)
	}
	count := ch.Count(t, "default.events")
	if count-orphans != n {
		t.Fatalf("%d rows, %d of them in parts ZooKeeper does not know: %d registered, want %d", count, orphans, count-orphans, n)
	}
	if orphans > 0 && !strings.Contains(log, "code: 319") {
		t.Fatalf("%d rows in parts ZooKeeper does not know, but no insert ended with UNKNOWN_STATUS_OF_INSERT (319)", orphans)
	}
	if orphans > 0 {
		t.Logf("%d rows read twice until the server's part check: an insert ended with UNKNOWN_STATUS_OF_INSERT and its local part is not in ZooKeeper", orphans)
	}

	// The server's codes, as the retry warnings give them.
	codes := map[string]int{}
	for _, c := range regexp.MustCompile(`code: (\d+)`).FindAllStringSubmatch(p.logText(), -1) {
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
		"(server codes in the log: %s); the table writable again %v after ZooKeeper was back, the first insert after %v; %d ids, each once in the parts ZooKeeper registered",
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
