package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/sink/clickhouse"
)

// TestServerRefusals: inserts refused by the server itself, each
// classified as the server's code asks: too many parts (252) is retried
// with backoff until merges catch up, and every row lands once; a
// read-only session (164) and a table dropped under the pipeline (60) stop
// it with an error naming the table. In every case nothing is committed
// that is not in ClickHouse.
func TestServerRefusals(t *testing.T) {
	t.Run("too-many-parts", func(t *testing.T) {
		kb, ch := setup(t)
		ch.Exec(t, "DROP TABLE default.events")
		ch.Exec(t, strings.Replace(gen.TableDDL("default", "events"), "ORDER BY id", "ORDER BY id SETTINGS parts_to_delay_insert = 2, parts_to_throw_insert = 3", 1))
		ch.Exec(t, "SYSTEM STOP MERGES default.events")
		cfg := testConfig(t, kb, ch, "parts")
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Sink.ClickHouse.Batch.MaxRows = 100
		cfg.Sink.ClickHouse.Batch.Linger = config.Duration(50 * time.Millisecond)
		cfg.Chunk.TargetBytes = 2 * config.KiB // many small inserts, a part each
		cfg.Sink.ClickHouse.Breaker.OpenFor = config.Duration(time.Second)
		reg := prometheus.NewRegistry()
		p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		produce(t, kb, 0, 600, nil)
		testenv.WaitFor(t, "TOO_MANY_PARTS from the server", 30*time.Second, func() bool {
			n, _ := testutil.GatherAndCount(reg, "etl_sink_errors_total")
			return n > 0 && sinkErrors(t, reg, "transient") > 0
		})
		committed := kb.CommittedOffsets(t, "parts", "events")
		if rows := ch.Count(t, "default.events"); uint64(committed[0]+committed[1]+committed[2]) > rows {
			t.Fatalf("committed %v, more than the %d rows in ClickHouse", committed, rows)
		}
		// Merges catch up (on 18.16 the background merges of such tiny
		// parts are not prompt: OPTIMIZE merges them).
		ch.Exec(t, "SYSTEM START MERGES default.events")
		testenv.WaitFor(t, "every row", 2*time.Minute, func() bool {
			ch.Exec(t, "OPTIMIZE TABLE default.events")
			return ch.Count(t, "default.events") >= 600
		})
		testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
			c := kb.CommittedOffsets(t, "parts", "events")
			return c[0]+c[1]+c[2] == 600
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "600\t600" {
			t.Fatalf("count, distinct = %s", got)
		}
		if n := sinkErrors(t, reg, "permanent"); n != 0 {
			t.Fatalf("%v permanent errors", n)
		}
		t.Logf("transient errors (TOO_MANY_PARTS) retried: %v", sinkErrors(t, reg, "transient"))
	})
	t.Run("memory-limit", func(t *testing.T) {
		// The server refuses every insert with MEMORY_LIMIT_EXCEEDED (241)
		// while the session's max_memory_usage is below what an insert
		// needs: retried, nothing committed. Once the limit is gone (a
		// new run without it, the same group), every row lands once.
		kb, ch := setup(t)
		cfg := testConfig(t, kb, ch, "memory")
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Sink.ClickHouse.Settings = map[string]any{"max_memory_usage": int64(100_000)}
		cfg.Checkpoint.DrainTimeout = config.Duration(2 * time.Second)
		reg := prometheus.NewRegistry()
		p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		produce(t, kb, 0, 1000, nil)
		testenv.WaitFor(t, "MEMORY_LIMIT_EXCEEDED retried", 30*time.Second, func() bool { return sinkErrors(t, reg, "transient") >= 3 })
		cancel()
		select {
		case err := <-done:
			t.Logf("first run: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("the pipeline did not stop")
		}
		if n := sinkErrors(t, reg, "permanent"); n != 0 {
			t.Fatalf("%v permanent errors", n)
		}
		if rows := ch.Count(t, "default.events"); rows != 0 {
			t.Fatalf("%d rows in ClickHouse under the memory limit", rows)
		}
		if c := kb.CommittedOffsets(t, "memory", "events"); c[0]+c[1]+c[2] != 0 {
			t.Fatalf("committed %v with no row in ClickHouse", c)
		}
		cfg.Sink.ClickHouse.Settings = nil
		p, err = New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		go func() { done <- p.Run(ctx) }()
		testenv.WaitFor(t, "commits to the end", time.Minute, func() bool {
			c := kb.CommittedOffsets(t, "memory", "events")
			return c[0]+c[1]+c[2] == 1000
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("second run: %v", err)
		}
		if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "1000\t1000" {
			t.Fatalf("count, distinct = %s", got)
		}
	})
	for _, tc := range []struct {
		name, code string
		setup      func(t *testing.T, p *pipelineUnderTest)
	}{
		{"readonly", "READONLY (164)", nil},
		{"table-dropped", "UNKNOWN_TABLE (60)", func(t *testing.T, u *pipelineUnderTest) {
			testenv.WaitFor(t, "the first rows", 30*time.Second, func() bool { return u.ch.Count(t, "default.events") >= 1000 })
			u.ch.Exec(t, "DROP TABLE default.events")
			produce(t, u.kb, 1000, 1000, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kb, ch := setup(t)
			cfg := testConfig(t, kb, ch, tc.name)
			cfg.Source.Kafka.Topics = []string{"events"}
			if tc.name == "readonly" {
				cfg.Sink.ClickHouse.Settings = map[string]any{"readonly": 1}
			}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- p.Run(context.Background()) }()
			produce(t, kb, 0, 1000, nil)
			if tc.setup != nil {
				tc.setup(t, &pipelineUnderTest{kb: kb, ch: ch})
			}
			var runErr error
			select {
			case runErr = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the pipeline did not stop")
			}
			t.Logf("Run: %v", runErr)
			var ie *clickhouse.InsertError
			if !errors.As(runErr, &ie) || ie.Table != "default.events" || !strings.Contains(runErr.Error(), tc.code) {
				t.Fatalf("Run returned %v, want an insert error into default.events with %s", runErr, tc.code)
			}
			c := kb.CommittedOffsets(t, tc.name, "events")
			rows := uint64(0)
			if tc.name != "table-dropped" {
				rows = ch.Count(t, "default.events")
			} else {
				rows = 1000 // the rows the dropped table had
			}
			if uint64(c[0]+c[1]+c[2]) > rows {
				t.Fatalf("committed %v, more than the %d rows ClickHouse took", c, rows)
			}
		})
	}
}

type pipelineUnderTest struct {
	kb *testenv.Broker
	ch *testenv.CH
}

// sinkErrors is etl_sink_errors_total of kind, summed over shards.
func sinkErrors(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	return metricSum(t, reg, "etl_sink_errors_total", func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "kind" && l.GetValue() == kind {
				return true
			}
		}
		return false
	})
}

// counterSum is the sum of the counter name over its series.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricSum(t, reg, name, func(*dto.Metric) bool { return true })
}

// metricSum sums the counter name over the series keep accepts.
func metricSum(t *testing.T, reg *prometheus.Registry, name string, keep func(*dto.Metric) bool) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if keep(m) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
