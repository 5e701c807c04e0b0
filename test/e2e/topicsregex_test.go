package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// TestTopicsRegexE2E is issue 42's acceptance test for topics by pattern:
// the etl binary with source.kafka.topics_regex matching two topics at
// start and a third created while it runs; every record of the three
// topics lands, routed by topic name into the topic's own table. The
// dead-letter topic and a "__" topic that the expression also matches,
// and a topic it does not match, are not consumed: the group commits no
// offset of theirs and no table holds their records.
func TestTopicsRegexE2E(t *testing.T) {
	const n = 20000 // records per topic
	kb := testenv.KafkaProcess(t, 3, "ev.a", "ev.b", "ev.dlq", "other")
	kb.CreateTopic(t, "__ev.hidden", 3)
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"a", "b", "c"} {
		ch.Exec(t, "CREATE TABLE default."+table+" (id UInt64, src String) ENGINE = MergeTree ORDER BY id")
	}
	produce := func(topic string) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"id": %d, "src": %q}`, i, topic)}
		}
		kb.Produce(t, topic, recs)
	}
	for _, topic := range []string{"ev.a", "ev.b", "ev.dlq", "__ev.hidden", "other"} {
		produce(topic)
	}
	sink := func(table string) string {
		return fmt.Sprintf("  %s:\n    clickhouse: {addr: [%q], table: %s, batch: {max_rows: 50000, linger: 200ms}}\n", table, ch.TCPAddr(), table)
	}
	const group = "regex"
	cfg := writeConfig(t, fmt.Sprintf(`pipeline: {name: regex}
source:
  kafka:
    brokers: [%q]
    topics_regex: '.*ev\..*'
    group_id: %s
    session_timeout: 6s
    metadata_max_age: 2s
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
%s%s%scheckpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, sink("a"), sink("b"), sink("c")))
	p := startETL(t, cfg)
	rows := func(table string) func() error {
		return func() error {
			if !p.running() {
				t.Fatalf("etl exited: %v", p.err)
			}
			if got := ch.Count(t, "default."+table); got < n {
				return fmt.Errorf("%d rows in %s", got, table)
			}
			return nil
		}
	}
	testenv.Eventually(t, "the rows of ev.a", time.Minute, rows("a"))
	testenv.Eventually(t, "the rows of ev.b", time.Minute, rows("b"))

	kb.CreateTopic(t, "ev.c", 3)
	produce("ev.c")
	testenv.Eventually(t, "the rows of ev.c", time.Minute, rows("c"))
	for _, topic := range []string{"ev.a", "ev.b", "ev.c"} {
		waitCommittedEnd(t, kb, group, topic, 3, 30*time.Second, nil)
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited with %d after SIGTERM", code)
	}
	log := p.logText()
	if !strings.Contains(log, "source topics matched by source.kafka.topics_regex") {
		t.Errorf("the log does not name the topics matched at startup")
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
	if end := kb.EndOffsets(t, "ev.dlq"); end[0]+end[1]+end[2] != n {
		t.Errorf("ev.dlq holds %v records, want the %d produced: records were dead-lettered", end, n)
	}
}
