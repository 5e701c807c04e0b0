package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// dedupColumns maps the recipe's key columns to the record's metadata.
const dedupColumns = "    columns: {topic: _topic, partition: _partition, offset: _offset}\n"

// dedupConfig is the at-least-once pipeline of the deduplication recipe
// (README, Deduplicating at-least-once) for group: the generated records'
// fields declared for etl schema, the key columns mapped to the record's
// metadata, small batches so that a run makes several inserts.
func (e *env) dedupConfig(group string) string {
	e.t.Helper()
	cfg := readFile(e.t, e.config(group, "delivery: at_least_once\n"+
		"decode:\n  format: json\n"+
		"  fields: {id: UInt64, ts: DateTime, user_id: UInt32, kind: String, amount: Float64, note: Nullable(String)}\n"))
	for _, r := range [][2]string{
		{"    table: events\n", "    table: events\n" + dedupColumns},
		{"max_rows: 50000", "max_rows: 2000"},
	} {
		if !strings.Contains(cfg, r[0]) {
			e.t.Fatalf("pipeline file lacks %q:\n%s", r[0], cfg)
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	return writeConfig(e.t, cfg)
}

// TestDedupAtLeastOnceKill: the deduplication recipe. etl schema proposes
// a ReplacingMergeTree ordered by (topic, partition, offset) for the
// 18.16 server, from its flags as from sink.clickhouse.schema, and the
// server creates it as printed. Runs of the binary at at_least_once fill
// it and are killed with SIGKILL three times while they write: once when
// it has written and committed rows of its run and more keep coming, twice
// between an insert and its acknowledgement (a block in the table whose
// offsets are not committed); then a last run goes to the end. The kills
// leave duplicates (merges are stopped, so that plain count() shows them
// until the test asks for the merge); SELECT count() FROM t FINAL is the
// number of records produced, each id once at its own partition and
// offset; after OPTIMIZE TABLE ... FINAL plain count() is too, every row
// holding what was produced.
func TestDedupAtLeastOnceKill(t *testing.T) {
	const (
		runs   = 4 // three killed, the last to the end
		perRun = 10_000
		n      = runs * perRun
	)
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, topic)}
	cfg := e.dedupConfig("dedup")
	code, out, errOut := etlCmd(t, "schema", "-config", cfg, "-engine", "ReplacingMergeTree", "-order-by", "topic,partition,offset")
	if code != 0 {
		t.Fatalf("etl schema exited %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "ENGINE = ReplacingMergeTree\nORDER BY (`topic`, `partition`, `offset`)") {
		t.Fatalf("etl schema printed:\n%s", out)
	}
	// The same table from the configuration's keys, as schema.create
	// would make it.
	keys := writeConfig(t, strings.Replace(readFile(t, cfg), dedupColumns,
		dedupColumns+"    schema: {engine: ReplacingMergeTree, order_by: [topic, partition, offset]}\n", 1))
	if code, fromKeys, errOut := etlCmd(t, "schema", "-config", keys); code != 0 || fromKeys != out {
		t.Fatalf("etl schema with sink.clickhouse.schema: exit %d\n%s%s\nwant\n%s", code, fromKeys, errOut, out)
	}
	for _, s := range ddlStatements(out) {
		e.ch.Exec(t, s)
	}
	if got, want := e.ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 'events' AND name IN ('topic', 'partition', 'offset') ORDER BY name"),
		"offset\tInt64\npartition\tInt32\ntopic\tString"; got != want {
		t.Fatalf("key columns of the table etl schema proposed:\n%s\nwant\n%s\n(statement:\n%s)", got, want, out)
	}
	// Background merges remove duplicates at moments of their own: held
	// back, the plain count shows every duplicate the kills wrote.
	e.ch.Exec(t, "SYSTEM STOP MERGES default.events")

	for run := range runs - 1 {
		produced := e.produceAsync(uint64(run*perRun), perRun, 4_000)
		if run == 0 {
			p := startETL(t, cfg)
			// Killed while it writes: rows of this run are in the table,
			// some of them committed, and more keep coming.
			e.waitRows(perRun/4, time.Minute, p)
			testenv.WaitFor(t, "a first commit", time.Minute, func() bool {
				if !p.running() {
					t.Fatalf("etl exited with %v before its first commit", p.err)
				}
				return len(e.kb.CommittedOffsets(t, "dedup", topic)) > 0
			})
			if code := p.stop(t, syscall.SIGKILL, 10*time.Second); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("run %d: exit code %d, want SIGKILL's", run, code)
			}
		} else {
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", strconv.Itoa(1+run))
			p := startETL(t, cfg)
			if code := p.wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
			}
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
		}
		if err := produced(); err != nil {
			t.Fatal(err)
		}
		t.Logf("after kill %d: %s rows (count(), count() FINAL)", run+1,
			e.ch.Query(t, "SELECT (SELECT count() FROM default.events), (SELECT count() FROM default.events FINAL)"))
	}
	e.produce((runs-1)*perRun, perRun)
	p := startETL(t, cfg)
	testenv.Eventually(t, fmt.Sprintf("%d rows with FINAL", n), 3*time.Minute, func() error {
		got := e.ch.Query(t, "SELECT count() FROM default.events FINAL")
		if got == strconv.Itoa(n) {
			return nil
		}
		if !p.running() {
			t.Fatalf("etl exited with %v with %s rows with FINAL, want %d", p.err, got, n)
		}
		return fmt.Errorf("have %s", got)
	})
	e.waitCommitted("dedup", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// Plain count(): every record at least once, and the duplicates the
	// kills made.
	twice := e.checkAllPresent(n)
	plain := e.ch.Count(t, "default.events")
	if plain <= n || twice == 0 {
		t.Fatalf("count() = %d, %d records more than once: the kills made no duplicate for FINAL to remove", plain, twice)
	}
	t.Logf("three kills at at_least_once: %d rows for %d records (%d duplicate rows, %d records written more than once)", plain, n, plain-n, twice)
	// FINAL: each record once, at its own partition and offset.
	const once = "SELECT count(), uniqExact(id), min(id), max(id), " +
		"countIf(topic != 'events' OR partition != id % 6 OR offset != intDiv(id, 6)) FROM default.events"
	want := fmt.Sprintf("%d\t%d\t0\t%d\t0", n, n, n-1)
	if got := e.ch.Query(t, once+" FINAL"); got != want {
		t.Fatalf("with FINAL: count, distinct ids, min, max, rows off their offset = %s, want %s", got, want)
	}

	// OPTIMIZE TABLE ... FINAL merges the duplicates away: plain count()
	// is then the records produced, each row what was produced.
	// A merge the server starts by itself once merges run again holds
	// some parts, and an OPTIMIZE meanwhile leaves them: it is asked
	// again until the table is one part.
	e.ch.Exec(t, "SYSTEM START MERGES default.events")
	tries := 0
	testenv.Eventually(t, "OPTIMIZE FINAL to leave one part", time.Minute, func() error {
		tries++
		e.ch.Exec(t, "OPTIMIZE TABLE default.events FINAL")
		if parts := e.ch.Query(t, "SELECT count() FROM system.parts WHERE database = 'default' AND table = 'events' AND active"); parts != "1" {
			return fmt.Errorf("%s active parts", parts)
		}
		return nil
	})
	t.Logf("OPTIMIZE TABLE ... FINAL run %d time(s)", tries)
	if got := e.ch.Query(t, once); got != want {
		t.Fatalf("after OPTIMIZE FINAL: count, distinct ids, min, max, rows off their offset = %s, want %s", got, want)
	}
	rows := 0
	e.readRows(func(r row) {
		if err := checkRow(r); err != nil {
			t.Fatal(err)
		}
		rows++
	})
	if rows != n {
		t.Fatalf("read %d rows, want %d", rows, n)
	}
}
