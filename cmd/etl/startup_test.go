package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/pipeline"
)

// TestBackoff: the waits between startup attempts double from the minimum
// to the cap, each within its last quarter below the nominal value.
func TestBackoff(t *testing.T) {
	for range 50 {
		b := backoff{min: startBackoffMin, max: startBackoffMax}
		nominal := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
		for i, n := range nominal {
			n *= time.Second
			if w := b.next(); w > n || w < n*3/4 {
				t.Fatalf("wait %d is %v, want between %v and %v", i+1, w, n*3/4, n)
			}
		}
	}
}

// startupConfig is a pipeline on broker kb and the ClickHouse at addr,
// with a short dial timeout.
func startupConfig(t *testing.T, kb *testenv.Broker, addr, table string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: startup, workers: 2}
source: {kafka: {brokers: [%q], topics: [events], group_id: startup, start_offset: earliest, session_timeout: 6s}}
sink:
  clickhouse:
    addr: [%q]
    table: %s
    dial_timeout: 500ms
    batch: {max_rows: 5000, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), addr, table)
	cfg, err := config.Parse([]byte(y), "startup.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newTestStartup is the startup main builds, with short waits between
// attempts.
func newTestStartup(t *testing.T, cfg *config.Config) *startup {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	st, err := newStartup(pipeline.Options{Config: cfg, Log: log}, newRegistry(cfg))
	if err != nil {
		t.Fatal(err)
	}
	st.backoffMin, st.backoffMax = 50*time.Millisecond, 200*time.Millisecond
	return st
}

// scrape returns what /metrics serves.
func scrape(h http.Handler) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

type startResult struct {
	p   *pipeline.Pipeline
	err error
}

// TestStartupWaitsForClickHouse: with ClickHouse frozen, the startup tries
// again and again on the same registry (each attempt registers its
// metrics on its own one: a failed attempt leaves nothing, and the next
// does not panic on a duplicate), /healthz answers 200, /readyz 503 naming
// ClickHouse and /metrics serves etl_pipeline_state starting. Once the
// server is thawed the pipeline is built, its metrics are served, and
// every record arrives once.
func TestStartupWaitsForClickHouse(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	srv := testenv.ClickHouse(t)
	srv.Exec(t, gen.TableDDL("default", "events"))
	const n = 3000
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Value: gen.Make(42, uint64(i)).AppendJSON(nil)}
	}
	kb.Produce(t, "events", recs)

	srv.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			srv.Thaw(t)
		}
	}()
	st := newTestStartup(t, startupConfig(t, kb, srv.TCPAddr(), "events"))
	if ok, msg := st.Health(); !ok || msg != "starting" {
		t.Fatalf("healthz before the first attempt: %v %q", ok, msg)
	}
	done := make(chan startResult, 1)
	go func() {
		p, err := st.run(context.Background())
		done <- startResult{p, err}
	}()
	testenv.WaitFor(t, "three failed attempts", 20*time.Second, func() bool { return st.failures() >= 3 })
	if ok, msg := st.Health(); !ok || !strings.Contains(msg, "starting: waiting for ClickHouse") {
		t.Fatalf("healthz while waiting: %v %q", ok, msg)
	}
	if ok, msg := st.Ready(context.Background()); ok || !strings.HasPrefix(msg, "waiting for ClickHouse: sink default: no replica answered") {
		t.Fatalf("readyz while waiting: %v %q", ok, msg)
	}
	m := scrape(st.metrics)
	for _, want := range []string{
		`etl_pipeline_state{component="pipeline",pipeline="startup",state="starting"} 1`,
		`etl_pipeline_state{component="pipeline",pipeline="startup",state="running"} 0`,
		`etl_pipeline_info{`, `go_goroutines `,
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics while waiting lacks %q:\n%s", want, m)
		}
	}
	if strings.Contains(m, "etl_backpressure_") || strings.Contains(m, "etl_sink_") {
		t.Fatalf("/metrics while waiting serves a failed attempt's metrics:\n%s", m)
	}

	srv.Thaw(t)
	thawed = true
	var r startResult
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the pipeline was not built within 15 s of the thaw")
	}
	if r.err != nil {
		t.Fatalf("startup: %v", r.err)
	}
	if m := scrape(st.metrics); !strings.Contains(m, "etl_sink_records_total") || !strings.Contains(m, "etl_pipeline_info{") {
		t.Fatalf("/metrics once started lacks the pipeline's or the base metrics:\n%s", m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- r.p.Run(ctx) }()
	testenv.WaitFor(t, "every row", time.Minute, func() bool { return srv.Count(t, "default.events") >= n })
	if ok, msg := st.Health(); !ok || msg != "ok" {
		t.Fatalf("healthz once running: %v %q", ok, msg)
	}
	testenv.WaitFor(t, "readyz 200", 20*time.Second, func() bool { ok, _ := st.Ready(context.Background()); return ok })
	cancel()
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := srv.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t%d\t0\t%d", n, n, n-1) {
		t.Fatalf("count, distinct, min, max = %s", got)
	}
}

// TestStartupPermanentError: a server that answers that the table does not
// exist ends the startup at once, after one attempt, with its message.
func TestStartupPermanentError(t *testing.T) {
	kb := testenv.Kafka(t)
	srv := testenv.ClickHouse(t)
	st := newTestStartup(t, startupConfig(t, kb, srv.TCPAddr(), "nosuch"))
	begin := time.Now()
	p, err := st.run(context.Background())
	if p != nil || err == nil || pipeline.Unavailable(err) || !strings.Contains(err.Error(), "table default.nosuch does not exist") {
		t.Fatalf("startup with a missing table: %v, Unavailable=%v", err, pipeline.Unavailable(err))
	}
	if took := time.Since(begin); took > 5*time.Second || st.failures() != 0 {
		t.Fatalf("gave up after %v and %d retried attempts, want at once", took, st.failures())
	}
}

// TestStartupStop: cancelling the context (SIGTERM) while the startup
// waits for a ClickHouse that cannot be reached ends it at once with the
// context's error.
func TestStartupStop(t *testing.T) {
	kb := testenv.Kafka(t)
	st := newTestStartup(t, startupConfig(t, kb, fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), "events"))
	st.backoffMin, st.backoffMax = time.Minute, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := st.run(ctx)
		done <- err
	}()
	testenv.WaitFor(t, "a failed attempt", 10*time.Second, func() bool { return st.failures() >= 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("startup stopped with %v, want context.Canceled", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the startup did not stop within 1 s of the cancellation")
	}
}
