package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

const replicatedDDL = "CREATE TABLE default.events (id UInt64, ts DateTime, user_id UInt32, kind String, amount Float64, note Nullable(String)) " +
	"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/events', '{replica}') ORDER BY id " +
	// The table remembers its last 1000 blocks, more than the tests insert
	// between a block's first attempt and its replay (the default, 100, is
	// fewer: docs/DESIGN.md § Exactly-once).
	"SETTINGS replicated_deduplication_window = 1000"

// newReplicatedEnv is newEnv with a ReplicatedMergeTree table on a
// ClickHouse that has a ZooKeeper.
func newReplicatedEnv(t *testing.T) *env {
	t.Helper()
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	ch.Exec(t, replicatedDDL)
	return &env{t: t, ch: ch, kb: testenv.KafkaProcess(t, partitions, topic)}
}

// eoConfig is the exactly-once pipeline file for group.
func (e *env) eoConfig(group string) string {
	cfg := readFile(e.t, e.config(group, "delivery: exactly_once\n"))
	// Killed members leave the group only when the coordinator gives up on
	// them, at the end of their session: keep that short. The rebalance
	// timeout covers a revoke's drain (drain_timeout 20s) and its commit
	// (10s), as etl requires.
	cfg = strings.Replace(cfg, "session_timeout: 6s", "session_timeout: 6s\n    rebalance_timeout: 30s", 1)
	cfg = strings.Replace(cfg, "batch: {max_rows: 50000, max_bytes: 16MiB, linger: 200ms}", "batch: {max_rows: 4000, max_bytes: 16MiB, linger: 200ms}", 1)
	return writeConfig(e.t, cfg)
}

// checkOnce checks count() == uniqExact(id) == n and ids 0..n-1.
func (e *env) checkOnce(n uint64) {
	e.t.Helper()
	got := e.ch.Query(e.t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events")
	if want := fmt.Sprintf("%d\t%d\t0\t%d", n, n, n-1); got != want {
		e.t.Fatalf("count, distinct ids, min, max = %s, want %s", got, want)
	}
}

// TestExactlyOnceKill: twenty runs of the binary, each killed with SIGKILL
// while records are produced and inserted, every fifth one exactly between
// an insert and its acknowledgement (ETL_TEST_CRASH_AFTER_INSERTS); then a
// last run to the end. Every record is in the table once.
func TestExactlyOnceKill(t *testing.T) {
	const (
		runs   = 20
		perRun = 12_000
		n      = runs * perRun
	)
	e := newReplicatedEnv(t)
	cfg := strings.Replace(readFile(t, e.eoConfig("eo-kill")), "log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}", "log: {level: debug, format: text}", 1)
	cfg = writeConfig(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	var procs []*proc
	for run := 1; run <= runs; run++ {
		// Each run's records arrive while it runs.
		produced := e.produceAsync(uint64((run-1)*perRun), perRun, 8_000)
		if run%5 == 0 {
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", fmt.Sprint(1+rng.IntN(3)))
			p := startETL(t, cfg)
			procs = append(procs, p)
			if code := p.wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
			}
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
		} else {
			p := startETL(t, cfg)
			procs = append(procs, p)
			// Kill it at a random instant once it works: after its
			// assignment, while it reads, inserts and commits.
			waitLog(t, p, "partitions assigned", 30*time.Second)
			// The random instant: real time while etl works, there is
			// no event to wait for.
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
			if code := p.stop(t, syscall.SIGKILL, 10*time.Second); code != 128+int(syscall.SIGKILL) && code != 0 {
				t.Fatalf("run %d: exit code %d", run, code)
			}
		}
		if err := produced(); err != nil {
			t.Fatal(err)
		}
	}
	p := startETL(t, cfg)
	procs = append(procs, p)
	e.waitRows(n, 3*time.Minute, p)
	e.waitCommitted("eo-kill", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := e.ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != fmt.Sprintf("%d\t%d", n, n) {
		// Name the duplicated blocks: partition and offsets of the ids
		// written twice, and every log line about those partitions' blocks.
		dups := e.ch.Query(t, fmt.Sprintf("SELECT id %% %d AS p, min(intDiv(id, %d)), max(intDiv(id, %d)), count() FROM (SELECT id FROM default.events GROUP BY id HAVING count() > 1) GROUP BY p ORDER BY p", partitions, partitions, partitions))
		t.Errorf("count, distinct = %s; duplicated ids by partition (partition, first offset, last offset, ids):\n%s", got, dups)
		for _, p := range procs {
			for _, line := range strings.Split(p.logText(), "\n") {
				if strings.Contains(line, "exactly_once") || strings.Contains(line, "partitions assigned") {
					t.Log(line)
				}
			}
		}
	}
	e.checkOnce(n)
	t.Logf("after %d kills: %s rows", runs, e.ch.Query(t, "SELECT count() FROM default.events"))
}

// TestExactlyOnceMembers: three instances in one group, one killed with
// SIGKILL and one stopped mid-stream while two more join: every record is
// in the table once.
func TestExactlyOnceMembers(t *testing.T) {
	const n = 300_000
	e := newReplicatedEnv(t)
	cfg := e.eoConfig("eo-members")
	produced := e.produceAsync(0, n, 30_000)
	p1, p2, p3 := startETL(t, cfg), startETL(t, cfg), startETL(t, cfg)
	e.waitRows(60_000, time.Minute, p1)
	p2.stop(t, syscall.SIGKILL, 10*time.Second)
	p4 := startETL(t, cfg)
	e.waitRows(150_000, time.Minute, p1)
	if code := p3.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("stopped member exit code %d", code)
	}
	p5 := startETL(t, cfg)
	if err := produced(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 3*time.Minute, p1)
	e.waitCommitted("eo-members", time.Minute)
	for _, p := range []*proc{p1, p4, p5} {
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	}
	e.checkOnce(n)
}

// TestExactlyOnceOutage: ClickHouse is stopped for 10 s mid-stream under
// exactly_once; inserts are retried (the same blocks) and every record is
// in the table once.
func TestExactlyOnceOutage(t *testing.T) {
	const n = 150_000
	e := newReplicatedEnv(t)
	cfg := e.eoConfig("eo-outage")
	produced := e.produceAsync(0, n, 20_000)
	p := startETL(t, cfg)
	e.waitRows(40_000, time.Minute, p)
	e.ch.Stop(t)
	// An outage of a set length while records keep arriving.
	time.Sleep(10 * time.Second)
	e.ch.Start(t)
	if err := produced(); err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 3*time.Minute, p)
	e.waitCommitted("eo-outage", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	e.checkOnce(n)
}

// TestExactlyOnceRefused: a table that cannot drop a re-inserted block (a
// plain MergeTree) makes exactly_once refuse to start, saying why: a
// configuration error (exit 2), not retried.
func TestExactlyOnceRefused(t *testing.T) {
	e := newEnv(t)
	p := startETL(t, e.eoConfig("eo-refused"))
	if code := p.wait(t, 30*time.Second); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if log := p.logText(); !strings.Contains(log, "delivery: exactly_once needs a table that drops a block it already has, and default.events (sink default) is MergeTree") {
		t.Fatalf("log lacks the reason:\n%s", log)
	}
}

// TestExactlyOnceComputedColumns: with records waiting in the topic, a
// replicated table that computes a stored column with now() (MATERIALIZED,
// or DEFAULT left to the server by exclude_columns) makes validate
// -connect and the start refuse exactly_once (exit 2), naming the column,
// before any record is written; a column computed from the inserted ones
// (MATERIALIZED cityHash64(id)) is accepted, and after a crash between
// inserts and their acknowledgement the replayed blocks are dropped:
// every record once.
func TestExactlyOnceComputedColumns(t *testing.T) {
	const n = 20_000
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	e := &env{t: t, ch: ch, kb: testenv.KafkaProcess(t, partitions, topic)}
	e.produce(0, n)
	table := func(column, path string) {
		ch.Exec(t, "DROP TABLE IF EXISTS default.events")
		ch.Exec(t, strings.Replace(strings.Replace(replicatedDDL, "note Nullable(String))", "note Nullable(String), "+column+")", 1),
			"/clickhouse/tables/{shard}/events'", "/clickhouse/tables/{shard}/"+path+"'", 1))
	}
	for _, tc := range []struct {
		name, column, exclude, want string
	}{
		{"materialized", "ingested DateTime MATERIALIZED now()", "", "column ingested MATERIALIZED now() calls now() (the time of the insert)"},
		{"default excluded", "ingested DateTime DEFAULT now()", "ingested", "column ingested DEFAULT now() calls now() (the time of the insert)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table(tc.column, strings.ReplaceAll(tc.name, " ", "_"))
			cfg := readFile(t, e.eoConfig("eo-computed"))
			if tc.exclude != "" {
				cfg = strings.Replace(cfg, "    table: events\n", "    table: events\n    exclude_columns: ["+tc.exclude+"]\n", 1)
			}
			path := writeConfig(t, cfg)
			code, out, errOut := etlCmd(t, "validate", "-connect", "-config", path)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "table default.events (sink default)") {
				t.Fatalf("validate -connect: exit %d, want 2 and %q in stderr:\n%s%s", code, tc.want, out, errOut)
			}
			p := startETL(t, path)
			if code := p.wait(t, 30*time.Second); code != 2 {
				t.Fatalf("exit code %d, want 2:\n%s", code, p.logText())
			}
			if log := p.logText(); !strings.Contains(log, tc.want) {
				t.Fatalf("log lacks %q:\n%s", tc.want, log)
			}
			if got := ch.Query(t, "SELECT count() FROM default.events"); got != "0" {
				t.Fatalf("%s rows written before the refusal", got)
			}
		})
	}
	t.Run("deterministic", func(t *testing.T) {
		table("h UInt64 MATERIALIZED cityHash64(id)", "deterministic")
		path := e.eoConfig("eo-computed-ok")
		if code, out, errOut := etlCmd(t, "validate", "-connect", "-config", path); code != 0 {
			t.Fatalf("validate -connect: exit %d:\n%s%s", code, out, errOut)
		}
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "2")
		if code := startETL(t, path).wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
			t.Fatalf("exit code %d, want the crash hook's SIGKILL", code)
		}
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
		before := ch.Query(t, "SELECT count() FROM default.events")
		p := startETL(t, path)
		e.waitRows(n, 2*time.Minute, p)
		e.waitCommitted("eo-computed-ok", time.Minute)
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		if !strings.Contains(p.logText(), "exactly_once: rebuilding the blocks a previous owner registered") {
			t.Fatalf("the second run replayed no block:\n%s", p.logText())
		}
		e.checkOnce(n)
		if got, want := ch.Query(t, "SELECT count(), uniqExact(h), countIf(h = cityHash64(id)) FROM default.events"), fmt.Sprintf("%d\t%d\t%d", n, n, n); got != want {
			t.Fatalf("count, distinct h, h = cityHash64(id): %s, want %s", got, want)
		}
		t.Logf("%s rows before the crash; %d records, %d rows after the replay", before, n, n)
	})
}

// TestAtLeastOnceControl is the control for the exactly-once crash tests:
// the same crash between an insert and its acknowledgement, with
// at_least_once, writes records again. It runs on a plain MergeTree: on a
// replicated table a re-read batch that happens to match the first one
// would be dropped by chance, which is no guarantee.
func TestAtLeastOnceControl(t *testing.T) {
	const n = 40_000
	e := newEnv(t)
	e.produce(0, n)
	cfg := strings.Replace(readFile(t, e.eoConfig("alo-control")), "delivery: exactly_once", "delivery: at_least_once", 1)
	path := writeConfig(t, cfg)
	t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "2")
	if code := startETL(t, path).wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want the crash hook's SIGKILL", code)
	}
	t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
	p := startETL(t, path)
	e.waitCommitted("alo-control", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	got := e.ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events")
	var count, distinct uint64
	fmt.Sscanf(got, "%d\t%d", &count, &distinct)
	if distinct != n || count <= distinct {
		t.Fatalf("count, distinct = %s: want every id and duplicates from the replayed inserts", got)
	}
	t.Logf("at_least_once after the same crash: %d rows for %d records", count, distinct)
}

// TestExactlyOnceRouted: records whose events are flattened and routed into
// two replicated tables, under exactly_once, with the process killed
// between an insert and its acknowledgement four times: each table holds
// each of its rows once.
func TestExactlyOnceRouted(t *testing.T) {
	const msgs = 2000
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	for _, table := range []string{"clicks", "others"} {
		ch.Exec(t, "CREATE TABLE default."+table+" (msg_id UInt64, seq UInt32, value UInt32) "+
			"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/"+table+"', '{replica}') ORDER BY (msg_id, seq)")
	}
	kb := testenv.KafkaProcess(t, partitions, "msgs")
	var values [][]byte
	want := map[string]int{}
	kinds := []string{"click", "view", "buy"}
	for m := 0; m < msgs; m++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"msg_id": %d, "events": [`, m)
		for j := 0; j < 20; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			kind, value := kinds[(m+j)%3], (m*7+j*13)%1000
			fmt.Fprintf(&b, `{"seq": %d, "kind": %q, "value": %d}`, j, kind, value)
			if value >= 100 {
				if kind == "click" {
					want["clicks"]++
				} else {
					want["others"]++
				}
			}
		}
		b.WriteString("]}")
		values = append(values, []byte(b.String()))
	}
	produceValues(t, kb, "msgs", values)
	cfg := writeConfig(t, fmt.Sprintf(`pipeline: {name: routed}
delivery: exactly_once
source:
  kafka: {brokers: [%q], topics: [msgs], group_id: eo-routed, session_timeout: 6s, rebalance_timeout: 30s}
decode:
  fields: {events.seq: UInt32, events.kind: String, events.value: UInt32}
transform:
  - flatten: events
  - filter: "events.value >= 100"
  - set: {seq: "events.seq", value: "events.value"}
  - route:
      rules: [{when: "events.kind == 'click'", sink: clicks}]
      unmatched: others
sinks:
  clicks: {clickhouse: {addr: [%q], table: clicks, batch: {max_rows: 3000, linger: 200ms}}}
  others: {clickhouse: {addr: [%q], table: others, batch: {max_rows: 3000, linger: 200ms}}}
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), ch.TCPAddr(), ch.TCPAddr()))
	for run := 1; run <= 4; run++ {
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", fmt.Sprint(run))
		if code := startETL(t, cfg).wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
			t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
		}
	}
	t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
	p := startETL(t, cfg)
	testenv.Eventually(t, "every row", 2*time.Minute, func() error {
		clicks, others := ch.Count(t, "default.clicks"), ch.Count(t, "default.others")
		if clicks+others >= uint64(want["clicks"]+want["others"]) {
			return nil
		}
		if !p.running() {
			t.Fatalf("etl exited: rows: clicks %d, others %d; want %v", clicks, others, want)
		}
		return fmt.Errorf("rows: clicks %d, others %d; want %v", clicks, others, want)
	})
	// The graceful stop writes whatever etl still holds before it exits:
	// the tables read after it hold anything extra it would write.
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for table, n := range want {
		got := ch.Query(t, "SELECT count(), uniqExact(msg_id, seq) FROM default."+table)
		if exp := fmt.Sprintf("%d\t%d", n, n); got != exp {
			t.Errorf("%s: count, distinct = %s, want %s", table, got, exp)
		}
	}
}

// produceValues sends values to topic, value i to partition i mod 6.
func produceValues(t *testing.T, kb *testenv.BrokerProcess, topic string, values [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(len(values)+1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
