package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// runPipeline starts a pipeline for cfg and returns a stop function that
// stops it gracefully and fails the test if Run did not return nil.
func runPipeline(t *testing.T, cfg *config.Config) (*Pipeline, func()) {
	t.Helper()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// kindsFrom returns "id\tkind" lines for generated records [from, to).
func kindsFrom(from, to uint64) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%d\t%s\n", i, gen.Make(seed, i).Kind)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestTableAddColumn: a column added with ALTER TABLE under a running
// pipeline is filled from the next records on, without a restart.
func TestTableAddColumn(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.events (id UInt64, ts DateTime, user_id UInt32, amount Float64, note Nullable(String)) ENGINE = MergeTree ORDER BY id")
	cfg := testConfig(t, kb, ch, "addcol")
	cfg.Sink.ClickHouse.DescribeInterval = config.Duration(time.Second)
	p, stop := runPipeline(t, cfg)

	produce(t, kb, 0, 1000, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 1000 })
	ch.Exec(t, "ALTER TABLE default.events ADD COLUMN kind String")
	testenv.WaitFor(t, "the change to be seen", 30*time.Second, func() bool { return testutil.ToFloat64(p.m.tableChanges) >= 1 })
	produce(t, kb, 1000, 1000, nil)
	testenv.WaitFor(t, "the later rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 2000 })
	stop()

	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "2000\t2000" {
		t.Fatalf("count, distinct = %s", got)
	}
	if got := ch.Query(t, "SELECT id, kind FROM default.events WHERE id >= 1000 ORDER BY id"); got != kindsFrom(1000, 2000) {
		t.Fatalf("kind of the rows after the ALTER differs from the generated records:\n%.300s", got)
	}
	if got := p.sinks[0].target.Load().Schema.Names; !strings.Contains(strings.Join(got, ","), "kind") {
		t.Fatalf("target columns %v lack kind", got)
	}
}

// TestTableDropColumn: a column dropped with ALTER TABLE under a running
// pipeline makes the next insert fail; the table is read again and the
// batch goes in without the column, and later chunks are built without it.
// The periodic read is off, so only the failed insert can notice.
func TestTableDropColumn(t *testing.T) {
	kb, ch := setup(t)
	cfg := testConfig(t, kb, ch, "dropcol")
	cfg.Sink.ClickHouse.DescribeInterval = 0
	p, stop := runPipeline(t, cfg)

	produce(t, kb, 0, 1000, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 1000 })
	ch.Exec(t, "ALTER TABLE default.events DROP COLUMN amount")
	produce(t, kb, 1000, 1000, nil)
	testenv.WaitFor(t, "the later rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 2000 })
	stop()

	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "2000\t2000" {
		t.Fatalf("count, distinct = %s", got)
	}
	if got := ch.Query(t, "SELECT id, kind FROM default.events ORDER BY id"); got != kindsFrom(0, 2000) {
		t.Fatalf("rows differ from the generated records:\n%.300s", got)
	}
	if n := testutil.ToFloat64(p.m.tableChanges); n != 1 {
		t.Fatalf("etl_sink_table_changes_total = %v, want 1", n)
	}
	if got := strings.Join(p.sinks[0].target.Load().Schema.Names, ","); strings.Contains(got, "amount") {
		t.Fatalf("target still inserts amount: %s", got)
	}
}

// TestTableModifyColumn: a column whose type changes with ALTER TABLE
// under a running pipeline (user_id UInt32 to String, and kind String to
// LowCardinality(String)) does not stop it: the batch built for the old
// types is converted to the new ones, and later chunks are built for them.
// The periodic read is off, so only the failed insert can notice.
func TestTableModifyColumn(t *testing.T) {
	kb, ch := setup(t)
	cfg := testConfig(t, kb, ch, "modcol")
	cfg.Sink.ClickHouse.DescribeInterval = 0
	_, stop := runPipeline(t, cfg)

	produce(t, kb, 0, 1000, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 1000 })
	ch.Exec(t, "ALTER TABLE default.events MODIFY COLUMN user_id String")
	produce(t, kb, 1000, 1000, nil)
	testenv.WaitFor(t, "the later rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 2000 })
	stop()

	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "2000\t2000" {
		t.Fatalf("count, distinct = %s", got)
	}
	var want strings.Builder
	for i := uint64(0); i < 2000; i++ {
		fmt.Fprintf(&want, "%d\t%d\n", i, gen.Make(seed, i).UserID)
	}
	if got := ch.Query(t, "SELECT id, user_id FROM default.events ORDER BY id"); got != strings.TrimSuffix(want.String(), "\n") {
		t.Fatalf("user_id differs from the generated records:\n%.300s", got)
	}
}
