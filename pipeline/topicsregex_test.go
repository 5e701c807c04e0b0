package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// regexConfig consumes every topic `.*ev\..*` matches and routes each
// topic's records to its own table. The dead-letter topic (ev.dlq) and
// __ev.hidden match the expression too, and must not be consumed.
func regexConfig(kb *testenv.Broker, ch *testenv.CH, group string) string {
	sink := func(table string) string {
		return fmt.Sprintf("  %s:\n    clickhouse: {addr: [%q], table: %s, batch: {max_rows: 20000, linger: 100ms}}\n", table, ch.TCPAddr(), table)
	}
	return fmt.Sprintf(`pipeline: {name: regex, workers: 2}
source:
  kafka: {brokers: [%q], topics_regex: '.*ev\..*', group_id: %s, session_timeout: 6s, start_offset: latest, metadata_max_age: 1s}
decode:
  fields: {id: UInt64, src: String}
  dlq: {topic: ev.dlq}
transform:
  - route:
      rules:
        - {topic: ev.a, sink: a}
        - {topic: ev.b, sink: b}
        - {topic: ev.c, sink: c}
      unmatched: fail
sinks:
%s%s%scheckpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, sink("a"), sink("b"), sink("c"))
}

// produceSrc writes n records {"id": i, "src": topic} to topic, spread
// over its 3 partitions.
func produceSrc(t *testing.T, kb *testenv.Broker, topic string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"id": %d, "src": %q}`, i, topic)}
	}
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n+1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestTopicsRegex: source.kafka.topics_regex matches two topics at start
// and a third created while running; every record of the three lands,
// routed by its topic's name into the topic's own table. The third topic,
// created after startup, is read from its first record although
// start_offset is latest. The dead-letter topic and a "__" topic that the
// expression also matches are never assigned nor read: the group's
// assignment holds the three topics only, and the records the source
// fetched are exactly those of the three.
func TestTopicsRegex(t *testing.T) {
	const n = 3000 // records per topic
	kb := testenv.Kafka(t)
	for _, topic := range []string{"ev.a", "ev.b", "ev.dlq", "__ev.hidden", "other"} {
		kb.CreateTopic(t, topic, 3)
	}
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"a", "b", "c"} {
		ch.Exec(t, "CREATE TABLE default."+table+" (id UInt64, src String) ENGINE = MergeTree ORDER BY id")
	}
	// The two topics of the start have committed offsets at 0: they are
	// read from their first record whatever start_offset says.
	const group = "regex"
	for _, topic := range []string{"ev.a", "ev.b"} {
		for part := range int32(3) {
			kb.CommitOffset(t, group, topic, part, 0)
		}
	}
	for _, topic := range []string{"ev.a", "ev.b", "ev.dlq", "__ev.hidden", "other"} {
		produceSrc(t, kb, topic, n)
	}

	cfg, err := config.Parse([]byte(regexConfig(kb, ch, group)), "pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	waitRunning(t, done, "the rows of ev.a and ev.b", time.Minute, notYet(func() bool {
		return ch.Count(t, "default.a") >= n && ch.Count(t, "default.b") >= n
	}))

	// A third matching topic, created while running, its records written
	// before the group is assigned it.
	kb.CreateTopic(t, "ev.c", 3)
	produceSrc(t, kb, "ev.c", n)
	waitRunning(t, done, "the rows of ev.c", time.Minute, notYet(func() bool { return ch.Count(t, "default.c") >= n }))
	waitRunning(t, done, "commits to the end of the three topics", 30*time.Second, notYet(func() bool {
		for _, topic := range []string{"ev.a", "ev.b", "ev.c"} {
			c := kb.CommittedOffsets(t, group, topic)
			if c[0]+c[1]+c[2] != n {
				return false
			}
		}
		return true
	}))

	// The group's assignment now: the three topics, not the dead-letter
	// topic nor the "__" one, nor the topic the expression does not match.
	adm := kadm.NewClient(kb.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	groups, err := adm.DescribeGroups(ctx, group)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	var assigned []string
	for _, m := range groups[group].Members {
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range c.Topics {
				assigned = append(assigned, tp.Topic)
			}
		}
	}
	slices.Sort(assigned)
	if want := []string{"ev.a", "ev.b", "ev.c"}; !slices.Equal(assigned, want) {
		t.Errorf("the group is assigned %v, want %v", assigned, want)
	}
	if got := counterSum(t, reg, "etl_source_records_total"); got != 3*n {
		t.Errorf("etl_source_records_total = %v, want %d: the source fetched records of other topics", got, 3*n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	for _, table := range []string{"a", "b", "c"} {
		got := ch.Query(t, "SELECT src, count(), uniqExact(id), min(id), max(id) FROM default."+table+" GROUP BY src")
		if want := fmt.Sprintf("ev.%s\t%d\t%d\t0\t%d", table, n, n, n-1); got != want {
			t.Errorf("table %s: src, count, distinct ids, min, max = %q, want %q", table, got, want)
		}
	}
	for _, topic := range []string{"ev.dlq", "__ev.hidden", "other"} {
		if c := kb.CommittedOffsets(t, group, topic); len(c) != 0 {
			t.Errorf("the group committed offsets of %s: %v", topic, c)
		}
	}
}

// TestTopicsRegexNoMatch: with no topic matching at startup, New refuses
// the configuration, naming the key and the topics that exist; with
// wait_for_topics it waits, not ready, and consumes the first matching
// topic once it is created.
func TestTopicsRegexNoMatch(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "other", 1)
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"a", "b", "c"} {
		ch.Exec(t, "CREATE TABLE default."+table+" (id UInt64, src String) ENGINE = MergeTree ORDER BY id")
	}
	kb.CreateTopic(t, "ev.dlq", 1)
	kb.CreateTopic(t, "__ev.hidden", 1)
	y := regexConfig(kb, ch, "nomatch")
	cfg, err := config.Parse([]byte(y), "pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	var cerr *ConfigError
	if !errors.As(err, &cerr) || !strings.Contains(err.Error(), `source.kafka.topics_regex: no topic matches ^(?:.*ev\..*)$ today (topics: ev.dlq, other): correct the expression, or set source.kafka.wait_for_topics: true to wait for one`) {
		t.Fatalf("New = %v, want a ConfigError: no topic matches", err)
	}

	cfg, err = config.Parse([]byte(strings.Replace(y, "metadata_max_age: 1s", "metadata_max_age: 1s, wait_for_topics: true", 1)), "pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if ok, msg := p.topicsReady(); ok || msg != `waiting for source topics to exist (source.kafka.wait_for_topics): a topic matching ^(?:.*ev\..*)$` {
		t.Errorf("topicsReady = %v, %q", ok, msg)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	kb.CreateTopic(t, "ev.a", 3)
	produceSrc(t, kb, "ev.a", 100)
	waitRunning(t, done, "the rows of ev.a", time.Minute, notYet(func() bool { return ch.Count(t, "default.a") >= 100 }))
	if ok, msg := p.topicsReady(); !ok {
		t.Errorf("topicsReady = %v, %q after a topic matched", ok, msg)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := ch.Count(t, "default.a"); n != 100 {
		t.Errorf("%d rows in a, want 100", n)
	}
}
