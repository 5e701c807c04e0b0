package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// get fetches an endpoint of etl's metrics listener.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsAgainstReality runs the binary on Confluent Avro through a
// registry with a dead-letter topic, then reads /metrics as Prometheus
// would and checks it against what ClickHouse and the broker say: rows
// written equal rows in the table, records fetched equal records produced,
// lag reaches 0, commits and dead-letter writes are counted. Every metric
// family served is documented in docs/METRICS.md and every documented one is
// served, and the exposition passes promlint. /healthz, /readyz and
// /debug/pprof answer.
func TestMetricsAgainstReality(t *testing.T) {
	const n = 20000
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	kb := testenv.KafkaProcess(t, partitions, topic, "events.dlq")
	reg := registrytest.New(t)
	id := reg.Register("events-value", gen.AvroSchema)
	schema := avro.MustParse(gen.AvroSchema)

	var recs []*kgo.Record
	for i := uint64(0); i < n; i++ {
		e := gen.Make(seed, i)
		payload, err := avro.Marshal(schema, e.Avro())
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: schemaregistry.AppendFrame(nil, id, payload)})
	}
	// Two poison records: an unknown schema id and a truncated datum.
	recs = append(recs,
		&kgo.Record{Topic: topic, Partition: 0, Value: schemaregistry.AppendFrame(nil, id+100, recs[0].Value[5:])},
		&kgo.Record{Topic: topic, Partition: 1, Value: recs[1].Value[:len(recs[1].Value)-3]})
	cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n+10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	e := &env{t: t, ch: ch, kb: kb}
	cfg := strings.Replace(readFile(t, e.config("observe", fmt.Sprintf(`decode:
  format: avro
  avro: {framing: confluent, registry: {url: %q}}
  on_error: dlq
  dlq: {topic: events.dlq}
`, reg.URL()))), `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q, pprof: true}`, addr), 1)
	p := startETL(t, writeConfig(t, cfg))
	e.waitRows(n, 2*time.Minute, p)
	e.waitCommitted("observe", time.Minute)

	base := "http://" + addr
	var m map[string]float64
	testenv.Eventually(t, "the metrics to settle", 30*time.Second, func() error {
		m = scrape(t, addr)
		if m["etl_source_lag_records"] == 0 && m["etl_sink_records_total"] == n && m["etl_dlq_records_total"] == 2 {
			return nil
		}
		return fmt.Errorf("lag %v, sink records %v, dlq %v",
			m["etl_source_lag_records"], m["etl_sink_records_total"], m["etl_dlq_records_total"])
	})
	if got := ch.Count(t, "default.events"); float64(got) != m["etl_sink_records_total"] {
		t.Errorf("etl_sink_records_total %v, rows in ClickHouse %d", m["etl_sink_records_total"], got)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"etl_source_records_total == produced", m["etl_source_records_total"] == n+2},
		{"etl_source_read_records_total >= etl_source_records_total", m["etl_source_read_records_total"] >= m["etl_source_records_total"]},
		{"etl_source_read_bytes_total >= etl_source_bytes_total", m["etl_source_read_bytes_total"] >= m["etl_source_bytes_total"]},
		{"etl_decode_errors_total == 2", m["etl_decode_errors_total"] == 2},
		{"etl_checkpoint_commits_total > 0", m["etl_checkpoint_commits_total"] > 0},
		{"etl_checkpoint_commit_errors_total == 0", m["etl_checkpoint_commit_errors_total"] == 0},
		{"etl_source_assigned_partitions == 6", m["etl_source_assigned_partitions"] == partitions},
		{"etl_source_rebalances_total == 1", m["etl_source_rebalances_total"] == 1},
		{"etl_schema_fetches_total > 0", m["etl_schema_fetches_total"] > 0},
		{"etl_e2e_latency_seconds_count > 0", m["etl_e2e_latency_seconds_count"] > 0},
		{"etl_sink_batch_rows_sum == n", m["etl_sink_batch_rows_sum"] == n},
		{"etl_backpressure_inflight_bytes == 0", m["etl_backpressure_inflight_bytes"] == 0},
		{"etl_checkpoint_pending_ranges == 0", m["etl_checkpoint_pending_ranges"] == 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s does not hold", c.name)
		}
	}
	_, body := get(t, base+"/metrics")
	if !strings.Contains(body, `etl_pipeline_state{component="pipeline",pipeline="e2e",state="running"} 1`) {
		t.Errorf("etl_pipeline_state is not running:\n%s", grepLines(body, "etl_pipeline_state"))
	}
	if !regexp.MustCompile(`etl_sink_records_total\{component="sink",pipeline="e2e",shard="0",sink="default"\} 20000`).MatchString(body) {
		t.Errorf("etl_sink_records_total lacks its labels:\n%s", grepLines(body, "etl_sink_records_total"))
	}

	// Documented, served and lint-clean.
	doc := readFile(t, "../../docs/METRICS.md")
	documented := map[string]bool{}
	for _, mm := range regexp.MustCompile("(?m)^\\| `(etl_[a-z0-9_]+)`").FindAllStringSubmatch(doc, -1) {
		documented[mm[1]] = true
	}
	served := map[string]bool{}
	for _, mm := range regexp.MustCompile(`(?m)^# TYPE (etl_[a-z0-9_]+) `).FindAllStringSubmatch(body, -1) {
		served[mm[1]] = true
	}
	var missing, absent []string
	for name := range served {
		if !documented[name] {
			missing = append(missing, name)
		}
	}
	for name := range documented {
		if !served[name] {
			absent = append(absent, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(absent)
	if len(missing) > 0 {
		t.Errorf("served but not documented in docs/METRICS.md: %v", missing)
	}
	if len(absent) > 0 {
		t.Errorf("documented in docs/METRICS.md but not served: %v", absent)
	}
	problems, err := promlint.New(bytes.NewReader([]byte(body))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		if strings.HasPrefix(pr.Metric, "etl_") {
			t.Errorf("promlint: %s: %s", pr.Metric, pr.Text)
		}
	}

	for _, ep := range []string{"/healthz", "/readyz", "/debug/pprof/"} {
		if code, text := get(t, base+ep); code != http.StatusOK {
			t.Errorf("%s: %d %s", ep, code, text)
		}
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// grepLines returns the lines of text containing s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
