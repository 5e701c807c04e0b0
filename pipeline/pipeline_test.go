package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

const seed = 7

// testConfig is a pipeline from the broker's topic to default.events.
func testConfig(t *testing.T, kb *testenv.Broker, ch *testenv.CH, group string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: test, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events, events2], group_id: %s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: events
    batch: {max_rows: 5000, max_bytes: 4MiB, linger: 100ms}
    retry: {initial_backoff: 50ms, max_backoff: 500ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "test.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitRunning polls check until it returns nil, as testenv.Eventually,
// and fails t at once when the pipeline stops meanwhile: done receives
// Run's result and has room for one (the result taken is put back for the
// test's own receive).
func waitRunning(t testing.TB, done chan error, what string, timeout time.Duration, check func() error) {
	t.Helper()
	testenv.Eventually(t, what, timeout, func() error {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("pipeline stopped while waiting for %s: %v", what, err)
		default:
		}
		return check()
	})
}

// notYet turns a condition into a check for waitRunning.
func notYet(cond func() bool) func() error {
	return func() error {
		if !cond() {
			return errors.New("the condition does not hold yet")
		}
		return nil
	}
}

// produce sends generated records [start, start+n) to topic events with
// raw overrides: bad maps a record number to the value to send instead of
// its JSON.
func produce(t *testing.T, kb *testenv.Broker, start, n uint64, bad map[uint64][]byte) {
	t.Helper()
	produceTo(t, kb, "events", start, n, bad)
}

func produceTo(t *testing.T, kb *testenv.Broker, topic string, start, n uint64, bad map[uint64][]byte) {
	t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for i := start; i < start+n; i++ {
		v := gen.Make(seed, i).AppendJSON(nil)
		if b, ok := bad[i]; ok {
			v = b
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: v})
	}
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(int(n)+1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T) (*testenv.Broker, *testenv.CH) {
	t.Helper()
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	return kb, ch
}

// TestPipelineInProcess runs the whole pipeline in the test process (under
// the race detector in CI) from two topics into one table: every record
// arrives once, offsets are committed to the end, and a graceful stop
// returns nil.
func TestPipelineInProcess(t *testing.T) {
	kb, ch := setup(t)
	const n, n1 = 30000, 24000 // n1 records in events, the rest in events2
	produce(t, kb, 0, n1, nil)
	produceTo(t, kb, "events2", n1, n-n1, nil)
	reg := prometheus.NewPedanticRegistry()
	p, err := New(context.Background(), Options{Config: testConfig(t, kb, ch, "inproc"), Log: testenv.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n })
	testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "inproc", "events")
		c2 := kb.CommittedOffsets(t, "inproc", "events2")
		return c[0]+c[1]+c[2] == n1 && c2[0]+c2[1]+c2[2] == n-n1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t%d\t0\t%d", n, n, n-1) {
		t.Fatalf("count, distinct, min, max = %s", got)
	}
	if s := p.Stats(); s.RowsWritten != n || s.InflightBytes != 0 {
		t.Fatalf("stats after stop: %+v", s)
	}
	if problems, err := testutilLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("metric lint: %v %v", problems, err)
	}
	// Every metric the pipeline registers is documented.
	doc, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.Contains(string(doc), "`"+mf.GetName()+"`") {
			t.Errorf("metric %s is not in docs/METRICS.md", mf.GetName())
		}
	}
}

// TestDecodeFailureStopsSafely: a record that is not JSON stops the
// pipeline with an error naming topic, partition and offset; the rows
// before it are written and committed, nothing at or past it is committed.
func TestDecodeFailureStopsSafely(t *testing.T) {
	kb, ch := setup(t)
	const n = 3000
	const badID = 1500 // partition 0, offset 500
	produce(t, kb, 0, n, map[uint64][]byte{badID: []byte(`{"id": 1500, "ts": `)})
	p, err := New(context.Background(), Options{Config: testConfig(t, kb, ch, "decodefail"), Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("pipeline did not stop on the bad record")
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "events/0 offset 500") {
		t.Fatalf("Run error = %v, want it to name events/0 offset 500", runErr)
	}
	// Partition 0 is committed exactly up to the bad record, and every
	// record before it is in ClickHouse. The other partitions stop where
	// the stop found them (how far their fetches had come: the first
	// fetch asks for 64 KiB of each): whatever is committed is in
	// ClickHouse.
	committed := kb.CommittedOffsets(t, "decodefail", "events")
	if committed[0] != 500 {
		t.Fatalf("committed %v, want partition 0 at the bad record (500)", committed)
	}
	for _, part := range []int32{1, 2} {
		c := committed[part]
		if c < 0 || c > 1000 {
			t.Fatalf("partition %d committed at %d, outside 0..1000", part, c)
		}
		if got := ch.Query(t, fmt.Sprintf("SELECT count() FROM default.events WHERE id %% 3 = %d AND intDiv(id, 3) < %d", part, c)); got != fmt.Sprint(c) {
			t.Fatalf("partition %d committed at %d, but %s of its rows below that are in ClickHouse", part, c, got)
		}
	}
	got := ch.Query(t, "SELECT count() FROM default.events WHERE id % 3 = 0 AND intDiv(id, 3) < 500")
	if got != "500" {
		t.Fatalf("partition 0: %s rows below the bad record, want 500", got)
	}
	if ch.Query(t, "SELECT count() FROM default.events WHERE id = 1500") != "0" {
		t.Fatal("the bad record produced a row")
	}
}

// TestPermanentInsertError: a column whose type changed under the pipeline
// to one its values do not fit (String to an Enum8 lacking them) makes the
// insert fail for good: Run returns an error naming the table and the
// column, and no offset past the failed batch is committed.
func TestPermanentInsertError(t *testing.T) {
	kb, ch := setup(t)
	const n = 2000
	produce(t, kb, 0, n, nil)
	p, err := New(context.Background(), Options{Config: testConfig(t, kb, ch, "permanent"), Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The plan was made with the column as String; change it before
	// anything runs.
	ch.Exec(t, "ALTER TABLE default.events MODIFY COLUMN kind Enum8('none' = 1)")
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("pipeline did not stop on the permanent error")
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "default.events") || !strings.Contains(runErr.Error(), "kind") {
		t.Fatalf("Run error = %v, want it to name the table and the column", runErr)
	}
	if c := kb.CommittedOffsets(t, "permanent", "events"); len(c) != 0 {
		for part, off := range c {
			if off > 0 {
				t.Fatalf("partition %d committed to %d though nothing was written", part, off)
			}
		}
	}
	if got := ch.Count(t, "default.events"); got != 0 {
		t.Fatalf("%d rows written", got)
	}
}

// TestDeadLetter: poison records of every kind go to the dead-letter
// topic with their reason and source position in headers, the pipeline
// keeps going, every good record arrives, and the offsets commit to the
// end once the dead-letter writes are acknowledged. With on_error: skip
// they are dropped and counted instead.
func TestDeadLetter(t *testing.T) {
	for _, policy := range []string{"dlq", "skip"} {
		t.Run(policy, func(t *testing.T) {
			kb, ch := setup(t)
			kb.CreateTopic(t, "events.dlq", 1)
			const n = 3000
			long := gen.Make(seed, 400)
			note := strings.Repeat("x", 2000)
			long.Note = &note
			poison := map[uint64][]byte{
				100: []byte(`{"id": 100, "ts": `),                          // truncated
				200: []byte(`{"id": "abc", "ts": 0}`),                      // wrong type
				300: []byte(`{"id": 300, "ts": 0, "user_id": 5000000000}`), // out of range
				400: long.AppendJSON(nil),                                  // too large
				500: []byte(`[1, 2, 3]`),                                   // not an object
			}
			wantReason := map[uint64]string{100: "corrupt", 200: "wrong_type", 300: "out_of_range", 400: "too_large", 500: "corrupt"}
			produce(t, kb, 0, n, poison)
			cfg := testConfig(t, kb, ch, "dead-"+policy)
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Decode.OnError = config.OnError(policy)
			cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
			cfg.Decode.MaxRecordBytes = 1024
			reg := prometheus.NewRegistry()
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			testenv.WaitFor(t, "good rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n-5 })
			testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
				c := kb.CommittedOffsets(t, "dead-"+policy, "events")
				return c[0]+c[1]+c[2] == n
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := ch.Query(t, "SELECT count(), countIf(id IN (100, 200, 300, 400, 500)) FROM default.events")
			if got != fmt.Sprintf("%d\t0", n-5) {
				t.Fatalf("count, poison rows = %s, want %d and 0", got, n-5)
			}
			errs := 0.0
			mfs, _ := reg.Gather()
			for _, mf := range mfs {
				if mf.GetName() == "etl_decode_errors_total" {
					for _, m := range mf.GetMetric() {
						errs += m.GetCounter().GetValue()
					}
				}
			}
			if errs != 5 {
				t.Fatalf("etl_decode_errors_total = %v, want 5", errs)
			}

			dead := readTopic(t, kb, "events.dlq", map[string]int{"dlq": 5, "skip": 0}[policy])
			if policy == "skip" {
				if len(dead) != 0 {
					t.Fatalf("%d dead-letter records with on_error: skip", len(dead))
				}
				return
			}
			for _, r := range dead {
				h := map[string]string{}
				for _, x := range r.Headers {
					h[x.Key] = string(x.Value)
				}
				var id uint64
				for i, v := range poison {
					if bytes.Equal(v, r.Value) {
						id = i
					}
				}
				if id == 0 {
					t.Fatalf("dead-letter record with an unknown value %q", r.Value)
				}
				part, off := int32(id%3), int64(id/3)
				if h["etl.error.reason"] != wantReason[id] || h["etl.source.topic"] != "events" ||
					h["etl.source.partition"] != fmt.Sprint(part) || h["etl.source.offset"] != fmt.Sprint(off) ||
					h["etl.pipeline"] != "test" || h["etl.error"] == "" {
					t.Errorf("record %d: headers %v", id, h)
				}
			}
		})
	}
}

// readTopic reads want records from the start of topic (waiting up to 20
// s) and checks that the topic holds no more.
func readTopic(t *testing.T, kb *testenv.Broker, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := kb.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		out = append(out, cl.PollFetches(ctx).Records()...)
		cancel()
	}
	if len(out) != want {
		t.Fatalf("%d records read from %s, want %d", len(out), topic, want)
	}
	// No more than these: the topic's offsets hold exactly the records
	// read (the dead-letter producer writes no transaction markers).
	var held int64
	start := kb.StartOffsets(t, topic)
	for p, end := range kb.EndOffsets(t, topic) {
		held += end - start[p]
	}
	if held != int64(want) {
		t.Fatalf("%s holds %d records, want %d", topic, held, want)
	}
	return out
}

// TestNDJSONRecords: each record carries ten objects, one per line; every
// object becomes a row and the offsets commit to the end.
func TestNDJSONRecords(t *testing.T) {
	kb, ch := setup(t)
	const records, per = 300, 10
	raw := map[uint64][]byte{}
	for i := uint64(0); i < records; i++ {
		var b []byte
		for j := uint64(0); j < per; j++ {
			b = gen.Make(seed, i*per+j).AppendJSON(b)
			b = append(b, '\n')
		}
		raw[i] = b
	}
	produce(t, kb, 0, records, raw)
	cfg := testConfig(t, kb, ch, "ndjson")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.JSON.Framing = "ndjson"
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= records*per })
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "ndjson", "events")
		return c[0]+c[1]+c[2] == records
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ch.Query(t, "SELECT count(), uniqExact(id), max(id) FROM default.events"); got != fmt.Sprintf("%d\t%d\t%d", records*per, records*per, records*per-1) {
		t.Fatalf("count, distinct, max = %s", got)
	}
}
