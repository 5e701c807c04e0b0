package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestExactlyOnceUnknownInsertStatus: under exactly_once, ZooKeeper goes
// away for 20 s at the moment a replica commits a block: a proxy between
// ClickHouse and ZooKeeper drops the commit and refuses connections. The
// replica has written the block's part and cannot know whether ZooKeeper
// registered it: the insert ends with UNKNOWN_STATUS_OF_INSERT (319), and
// the server keeps the part, unregistered and read (an orphan), until it
// restarts: 18.16's part check never comes back to it. The pipeline
// retries the block, which goes in again (nothing is lost, nothing is
// committed that is not in the table), and reports the orphan; a
// pipeline restarted then reports it again before its first insert. The
// test restarts ClickHouse, which detaches the orphan: every record once.
//
//   - operation-timeout: the proxy stalls the commit, as a frozen
//     ZooKeeper or a lost packet does; the server gives up after its
//     operation timeout.
//   - connection-reset: the proxy closes the connection.
func TestExactlyOnceUnknownInsertStatus(t *testing.T) {
	t.Run("operation-timeout", func(t *testing.T) { t.Parallel(); unknownStatusCase(t, true) })
	t.Run("connection-reset", func(t *testing.T) { t.Parallel(); unknownStatusCase(t, false) })
}

func unknownStatusCase(t *testing.T, stall bool) {
	const n1, n = 10_000, 30_000
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	zk := testenv.ZooKeeper(t)
	proxy := testenv.ZooKeeperProxy(t, zk.Addr())
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: proxy.Addr()})
	ch.Exec(t, strings.Replace(gen.TableDDL("default", "events"), "ENGINE = MergeTree",
		"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/events', '{replica}')", 1)+" SETTINGS replicated_deduplication_window = 1000")
	cfg := testConfig(t, kb, ch, "eo-319")
	cfg.Delivery = "exactly_once"
	// start runs a pipeline with its own registry.
	start := func() (reg *prometheus.Registry, done chan error, stop func()) {
		reg = prometheus.NewRegistry()
		p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		done = make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return reg, done, cancel
	}
	reg1, done, stop := start()

	// look reads count() and uniqExact(id) in one query.
	look := func() (rows, ids uint64) {
		t.Helper()
		got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events")
		if _, err := fmt.Sscan(got, &rows, &ids); err != nil {
			t.Fatalf("count, distinct: %q: %v", got, err)
		}
		return rows, ids
	}
	produce(t, kb, 0, n1, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool {
		rows, ids := look()
		if rows != ids {
			t.Fatalf("before the cut: %d rows for %d distinct ids", rows, ids)
		}
		return rows >= n1
	})

	cut := proxy.CutNextCommit(20 * time.Second)
	if stall {
		cut = proxy.StallNextCommit(20 * time.Second)
	}
	produce(t, kb, n1, n-n1, nil)
	var block string
	select {
	case block = <-cut:
	case <-time.After(time.Minute):
		t.Fatal("no insert committed a block through the proxy in a minute")
	}
	cutAt := time.Now()
	t.Logf("dropped the commit of %s; ZooKeeper refused for 20 s", block)

	// Nothing is committed that is not in the table, and every record
	// arrives.
	readonly := false
	committed := func() int64 {
		c := kb.CommittedOffsets(t, "eo-319", "events")
		return c[0] + c[1] + c[2]
	}
	waitRunning(t, done, "every record committed and an orphan part reported", time.Until(cutAt.Add(3*time.Minute)), func() error {
		// The commit first: rows only arrive, so a table read after it
		// holds at least what it covers. (Read the other way round, a
		// commit landing between the two reads looks like a loss.)
		c := committed()
		orphans := counterSum(t, reg1, "etl_sink_orphan_parts_total")
		if _, ids := look(); uint64(c) > ids {
			t.Fatalf("committed %d records, the table has %d distinct ids", c, ids)
		} else if c == n && orphans > 0 {
			return nil
		}
		if !readonly && ch.Query(t, "SELECT is_readonly FROM system.replicas WHERE database = 'default' AND table = 'events'") == "1" {
			readonly = true
		}
		return fmt.Errorf("%v after the cut: %d of %d records committed, %v orphan parts reported",
			time.Since(cutAt).Round(time.Second), c, n, orphans)
	})
	complete := time.Since(cutAt)
	if !readonly {
		t.Error("the table never turned read-only without ZooKeeper")
	}
	// Every insert whose commit was on the dropped connection ends so:
	// one, or two with two inserts in flight; each leaves an orphan.
	unknown := counterSum(t, reg1, "etl_sink_unknown_status_total")
	orphans := counterSum(t, reg1, "etl_sink_orphan_parts_total")
	if unknown < 1 || unknown > 2 || orphans < 1 || orphans > unknown {
		t.Errorf("etl_sink_unknown_status_total = %v, etl_sink_orphan_parts_total = %v: want 1 or 2 inserts, each with at most one orphan", unknown, orphans)
	}
	extra := unregisteredRows(t, ch)
	if rows, ids := look(); ids != n || rows != n+extra || extra == 0 {
		t.Fatalf("%d rows, %d distinct, %d rows outside ZooKeeper's parts: want %d distinct ids and the orphans' rows on top", rows, ids, extra, n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// A restarted pipeline reports the orphans before its first insert.
	reg2, done, stop := start()
	produce(t, kb, n, 1, nil)
	testenv.WaitFor(t, "the restarted pipeline's insert", time.Minute, func() bool { _, ids := look(); return ids == n+1 })
	if got := counterSum(t, reg2, "etl_sink_orphan_parts_total"); got != orphans {
		t.Errorf("the restarted pipeline reported %v orphan parts, want %v", got, orphans)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The server detaches the orphans when it restarts.
	ch.Stop(t)
	ch.Start(t)
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t%d\t0\t%d", n+1, n+1, n) {
		t.Fatalf("after ClickHouse restarted: count, distinct, min, max = %s", got)
	}
	path := ch.Query(t, "SELECT data_path FROM system.tables WHERE database = 'default' AND name = 'events'")
	detached, _ := filepath.Glob(filepath.Join(path, "detached", "*"))
	if len(detached) == 0 {
		t.Errorf("no part in %s/detached after the restart", path)
	}
	t.Logf("all %d records committed %v after the cut; %v insert(s) with unknown status, %v orphan part(s) with %d rows read twice until ClickHouse restarted and detached %v",
		n, complete.Round(time.Millisecond), unknown, orphans, extra, detached)
}

// unregisteredRows counts the rows of default.events in active parts the
// replica's ZooKeeper node does not list.
func unregisteredRows(t *testing.T, ch *testenv.CH) uint64 {
	t.Helper()
	parts := fmt.Sprintf("/clickhouse/tables/%s/events/replicas/%s/parts", ch.Shard(), ch.Replica())
	got := ch.Query(t, "SELECT count() FROM default.events WHERE _part NOT IN (SELECT name FROM system.zookeeper WHERE path = '"+parts+"')")
	var rows uint64
	if _, err := fmt.Sscan(got, &rows); err != nil {
		t.Fatalf("rows outside ZooKeeper's parts: %q: %v", got, err)
	}
	return rows
}
