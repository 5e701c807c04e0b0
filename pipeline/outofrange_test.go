package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// oorConfig is a pipeline from the one-partition topic to default.<topic>.
func oorConfig(t *testing.T, kb *testenv.Broker, ch *testenv.CH, topic, start string) *config.Config {
	t.Helper()
	return oorConfigDelivery(t, kb, ch, topic, start, "at_least_once")
}

func oorConfigDelivery(t *testing.T, kb *testenv.Broker, ch *testenv.CH, topic, start, delivery string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: test, workers: 2}
delivery: %s
source:
  kafka: {brokers: [%q], topics: [%s], group_id: %s, start_offset: %s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: %s
    batch: {max_rows: 5000, max_bytes: 4MiB, linger: 100ms}
    retry: {initial_backoff: 50ms, max_backoff: 500ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, delivery, kb.Addr(), topic, topic, start, ch.TCPAddr(), topic)
	cfg, err := config.Parse([]byte(y), "test.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// produceIDs writes gen's records [from, to) to partition 0 of topic.
func produceIDs(t *testing.T, kb *testenv.Broker, topic string, from, to uint64) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: gen.Make(seed, i).AppendJSON(nil)})
	}
	kb.Produce(t, topic, recs)
}

// oorRun is a running pipeline with its log and metrics.
type oorRun struct {
	p      *Pipeline
	reg    *prometheus.Registry
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startOOR(t *testing.T, cfg *config.Config) *oorRun {
	t.Helper()
	r := &oorRun{reg: prometheus.NewRegistry(), logs: &syncBuffer{}, done: make(chan error, 1)}
	var err error
	r.p, err = New(context.Background(), Options{Config: cfg, Registerer: r.reg,
		Log: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { r.done <- r.p.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *oorRun) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Errorf("Run did not return within a minute of the stop")
	}
}

// skipped is etl_source_records_skipped_total of topic and reason; -1
// when the series is not served.
func skipped(t *testing.T, reg *prometheus.Registry, topic, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "etl_source_records_skipped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "topic") == topic && label(m, "reason") == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// errorLine returns the log line at ERROR that contains every part.
func errorLine(logs string, parts ...string) string {
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "level=ERROR") {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

// TestCommittedBelowLogStart: the group committed 1,000 records and
// stopped; 9,000 more were produced and retention deleted the records
// below 2,000. Whatever start_offset says, etl resumes at the log start:
// the 8,000 records still in Kafka are written, an ERROR names the
// partition, the committed offset, the log start and end and the 1,000
// records skipped, the metric counts them and the commit ends at 10,000.
// Under exactly_once too.
func TestCommittedBelowLogStart(t *testing.T) {
	kb := testenv.Kafka(t)
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	for _, tc := range []struct{ name, start, delivery string }{
		{"latest", "latest", "at_least_once"},
		{"earliest", "earliest", "at_least_once"},
		{"exactly_once", "earliest", "exactly_once"},
	} {
		start := tc.start
		t.Run(tc.name, func(t *testing.T) {
			topic := "oor_" + tc.name
			kb.CreateTopic(t, topic, 1)
			ddl := gen.TableDDL("default", topic)
			if tc.delivery == "exactly_once" {
				ddl = strings.Replace(ddl, "ENGINE = MergeTree", "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/"+topic+"', '{replica}')", 1)
			}
			ch.Exec(t, ddl)
			cfg := oorConfigDelivery(t, kb, ch, topic, start, tc.delivery)
			table := "default." + topic
			produceIDs(t, kb, topic, 0, 1000)
			if start == "latest" {
				// A first run with latest would start at the end, wherever
				// that is when it lists it: the group's offset 0 makes it
				// read the first 1,000 records.
				kb.CommitOffset(t, topic, topic, 0, 0)
			}
			first := startOOR(t, cfg)
			testenv.WaitFor(t, "1,000 rows committed", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1000 })
			first.stop(t)
			if n := ch.Count(t, table); n != 1000 {
				t.Fatalf("first run wrote %d rows, want 1000", n)
			}
			produceIDs(t, kb, topic, 1000, 10000)
			kb.DeleteRecords(t, topic, 0, 2000)
			if s := kb.StartOffsets(t, topic)[0]; s != 2000 {
				t.Fatalf("log start after DeleteRecords = %d", s)
			}

			began := time.Now()
			r := startOOR(t, cfg)
			if v := skipped(t, r.reg, topic, "truncated"); v != 0 {
				t.Fatalf("etl_source_records_skipped_total{reason=truncated} at the start = %v, want 0 (served from the start)", v)
			}
			testenv.WaitFor(t, "the commit at 10,000", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 10000 })
			took := time.Since(began)
			r.stop(t)
			if got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(id >= 2000), min(id), max(id) FROM "+table+" WHERE id >= 1000"); got != "8000\t8000\t8000\t2000\t9999" {
				t.Fatalf("rows from the second run (count, distinct, from 2000, min, max) = %s, want every record still in Kafka (2000..9999) once", got)
			}
			line := errorLine(r.logs.String(), "records skipped", "topic="+topic, "partition=0", "committed=1000", "log_start=2000", "log_end=10000", "skipped=1000", "reason=retention")
			if line == "" {
				t.Fatalf("no ERROR naming partition 0, committed 1000, log start 2000, end 10000 and 1000 skipped; log:\n%s", r.logs.String())
			}
			if v := skipped(t, r.reg, topic, "retention"); v != 1000 {
				t.Fatalf("etl_source_records_skipped_total{reason=retention} = %v, want 1000", v)
			}
			if v := skipped(t, r.reg, topic, "truncated"); v != 0 {
				t.Fatalf("etl_source_records_skipped_total{reason=truncated} = %v, want 0", v)
			}
			t.Logf("%s: 8,000 rows written and committed to 10,000 in %v; %s", tc.name, took.Round(time.Millisecond), line)
		})
	}
}

// TestCommittedAboveLogEnd: a committed offset above the log end (the log
// was truncated, or the topic recreated) resumes at the log end with an
// ERROR and a count: the records produced afterwards are written, the
// older ones are not read again.
func TestCommittedAboveLogEnd(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	const topic = "oor_above"
	kb.CreateTopic(t, topic, 1)
	ch.Exec(t, gen.TableDDL("default", topic))
	produceIDs(t, kb, topic, 0, 1000)
	kb.CommitOffset(t, topic, topic, 0, 5000)

	r := startOOR(t, oorConfig(t, kb, ch, topic, "earliest"))
	testenv.WaitFor(t, "the ERROR on the committed offset", 30*time.Second, func() bool {
		return errorLine(r.logs.String(), "records skipped") != ""
	})
	line := errorLine(r.logs.String(), "records skipped", "topic="+topic, "partition=0", "committed=5000", "log_start=0", "log_end=1000", "skipped=4000", "reason=truncated")
	if line == "" {
		t.Fatalf("no ERROR naming partition 0, committed 5000, log start 0, end 1000 and 4000 skipped; log:\n%s", r.logs.String())
	}
	produceIDs(t, kb, topic, 1000, 1500)
	testenv.WaitFor(t, "the commit at 1,500", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1500 })
	r.stop(t)
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default."+topic); got != "500\t500\t1000\t1499" {
		t.Fatalf("rows (count, distinct, min, max) = %s, want the 500 records produced after the resume at the log end", got)
	}
	if v := skipped(t, r.reg, topic, "truncated"); v != 4000 {
		t.Fatalf("etl_source_records_skipped_total{reason=truncated} = %v, want 4000", v)
	}
	t.Logf("%s", line)
}

// TestRetentionWhileConsuming: retention deletes records past the
// consumer's position while it is not fetching (its fetches fail); the
// client resumes at the log start, and etl says so: an ERROR naming the
// partition, where it had consumed to, where it resumed and the records
// skipped, and the count in the metric.
func TestRetentionWhileConsuming(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	const topic = "oor_running"
	kb.CreateTopic(t, topic, 1)
	ch.Exec(t, gen.TableDDL("default", topic))
	produceIDs(t, kb, topic, 0, 1000)
	r := startOOR(t, oorConfig(t, kb, ch, topic, "earliest"))
	testenv.WaitFor(t, "1,000 rows committed", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1000 })

	// Hold the partition's fetches: every fetch of it fails until the
	// fault is removed. Once one has failed, no fetch that started before
	// the fault is still waiting at the broker for the new records.
	h := kb.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := h.Wait(ctx, 1)
	cancel()
	if err != nil {
		h.Remove()
		t.Fatalf("no fetch of %s failed within 30 s: %v", topic, err)
	}
	produceIDs(t, kb, topic, 1000, 3000)
	kb.DeleteRecords(t, topic, 0, 2000)
	h.Remove()

	testenv.WaitFor(t, "the commit at 3,000", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 3000 })
	r.stop(t)
	if got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(id < 1000), countIf(id >= 2000) FROM default."+topic); got != "2000\t2000\t1000\t1000" {
		t.Fatalf("rows (count, distinct, below 1000, from 2000) = %s, want 0..999 and 2000..2999", got)
	}
	line := errorLine(r.logs.String(), "records skipped", "topic="+topic, "partition=0", "consumed_to=1000", "reset_to=2000", "skipped=1000", "reason=retention")
	if line == "" {
		t.Fatalf("no ERROR naming partition 0, consumed to 1000, reset to 2000 and 1000 skipped; log:\n%s", r.logs.String())
	}
	if v := skipped(t, r.reg, topic, "retention"); v != 1000 {
		t.Fatalf("etl_source_records_skipped_total{reason=retention} = %v, want 1000", v)
	}
	t.Logf("%s", line)
}

// TestBrokerLostRecords: the broker answers a fetch at the consumer's
// position with OFFSET_OUT_OF_RANGE although the position is inside the
// log again (what a broker that lost records and was written to since
// says). The client resets to the log start and reports the loss; etl logs
// an ERROR naming the partition, where it had consumed to, where it was
// reset to and the offsets between, and counts them as truncated. The
// records below the position are not written twice, and those produced
// afterwards are written and committed.
func TestBrokerLostRecords(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	const topic = "oor_lost"
	kb.CreateTopic(t, topic, 1)
	ch.Exec(t, gen.TableDDL("default", topic))
	produceIDs(t, kb, topic, 0, 1000)
	r := startOOR(t, oorConfig(t, kb, ch, topic, "earliest"))
	testenv.WaitFor(t, "1,000 rows committed", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1000 })

	h := kb.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.OffsetOutOfRange, Count: 1,
		When: func(req kmsg.Request) bool {
			for _, rt := range req.(*kmsg.FetchRequest).Topics {
				for _, rp := range rt.Partitions {
					if rp.FetchOffset == 1000 {
						return true
					}
				}
			}
			return false
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := h.Wait(ctx, 1)
	cancel()
	if err != nil {
		t.Fatalf("no fetch at offset 1000 within 30 s: %v", err)
	}
	testenv.WaitFor(t, "the ERROR on the lost records", 30*time.Second, func() bool { return errorLine(r.logs.String(), "records skipped") != "" })
	produceIDs(t, kb, topic, 1000, 1500)
	testenv.WaitFor(t, "the commit at 1,500", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1500 })
	r.stop(t)
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default."+topic); got != "1500\t1500\t0\t1499" {
		t.Fatalf("rows (count, distinct, min, max) = %s, want 0..1499 once each", got)
	}
	line := errorLine(r.logs.String(), "records skipped", "topic="+topic, "partition=0", "consumed_to=1000", "reset_to=0", "skipped=1000", "reason=truncated")
	if line == "" {
		t.Fatalf("no ERROR naming partition 0, consumed to 1000, reset to 0 and 1000 offsets; log:\n%s", r.logs.String())
	}
	if v := skipped(t, r.reg, topic, "truncated"); v != 1000 {
		t.Fatalf("etl_source_records_skipped_total{reason=truncated} = %v, want 1000", v)
	}
	t.Logf("%s", line)
}

// TestSkipReportedOnce: a committed offset outside the log is reported
// once. After the resume at the log end (committed 5,000, log end 1,000)
// or at the log start (committed 0, retention deleted all 1,000), the
// resume point is committed even though no record comes, so a restart
// finds its committed offset inside the log: no second ERROR, no second
// count.
func TestSkipReportedOnce(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	for _, tc := range []struct {
		name, reason string
		committed    int64
		deleteBelow  int64
		resume       int64
	}{
		{"above_end", "truncated", 5000, 0, 1000},
		{"below_start", "retention", 0, 1000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "oor_once_" + tc.name
			kb.CreateTopic(t, topic, 1)
			ch.Exec(t, gen.TableDDL("default", topic))
			produceIDs(t, kb, topic, 0, 1000)
			if tc.deleteBelow > 0 {
				// Retention deleted every record the group had not read.
				kb.DeleteRecords(t, topic, 0, tc.deleteBelow)
			}
			kb.CommitOffset(t, topic, topic, 0, tc.committed)
			cfg := oorConfig(t, kb, ch, topic, "earliest")

			r := startOOR(t, cfg)
			testenv.WaitFor(t, "the ERROR", 30*time.Second, func() bool { return errorLine(r.logs.String(), "records skipped") != "" })
			testenv.WaitFor(t, "the resume point committed", 30*time.Second, func() bool {
				return kb.CommittedOffsets(t, topic, topic)[0] == tc.resume
			})
			r.stop(t)

			again := startOOR(t, cfg)
			// The restart has listed the log and fetched (its lag is
			// known) before it is asked about the skip.
			testenv.WaitFor(t, "the restart's lag", 30*time.Second, func() bool { n, why := again.p.lagNow(); return why == "" && n == 0 })
			again.stop(t)
			if line := errorLine(again.logs.String(), "records skipped"); line != "" {
				t.Fatalf("the restart reported the skip again: %s", line)
			}
			if v := skipped(t, again.reg, topic, tc.reason); v != 0 {
				t.Fatalf("the restart counted %v skipped, want 0", v)
			}
		})
	}
}
