package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestTopicsRegexCommands: under source.kafka.topics_regex, validate
// -connect lists the topics matched today, and offsets and offsets reset
// work on them: not on the dead-letter topic that also matches, nor on
// topics the expression does not match. No topic matching is an error.
func TestTopicsRegexCommands(t *testing.T) {
	kb := testenv.Kafka(t)
	for topic, parts := range map[string]int{"ev.a": 2, "ev.b": 2, "ev.dlq": 1, "other": 1} {
		kb.CreateTopic(t, topic, parts)
	}
	var recs []*kgo.Record
	for i := range 10 {
		for _, topic := range []string{"ev.a", "ev.b", "ev.dlq", "other"} {
			recs = append(recs, &kgo.Record{Topic: topic, Value: gen.Make(1, uint64(i)).AppendJSON(nil)})
		}
	}
	kb.Produce(t, "", recs)
	for _, topic := range []string{"ev.a", "ev.b"} {
		for part := range int32(2) {
			kb.CommitOffset(t, "g", topic, part, 0) // the group exists
		}
	}
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	cfg := func(re string) string {
		return writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics_regex: '%s', group_id: g}}
decode: {dlq: {topic: ev.dlq}}
sink: {clickhouse: {addr: [%q], table: events}}
metrics: {listen: "off"}
`, kb.Addr(), re, ch.TCPAddr()))
	}
	p := cfg(`ev\..*`)

	code, out, _, _ := runCLI(t, "validate", "-connect", "-config", p)
	if code != exitOK {
		t.Fatalf("validate -connect: exit %d", code)
	}
	for _, w := range []string{`kafka: source.kafka.topics_regex ^(?:ev\..*)$ matches 2 topics today: ev.a, ev.b`, "topic ev.a has 2 partitions", "topic ev.b has 2 partitions"} {
		if !strings.Contains(out, w) {
			t.Errorf("validate -connect: the report lacks %q", w)
		}
	}

	code, out, _, _ = runCLI(t, "offsets", "-config", p)
	if code != exitOK {
		t.Fatalf("offsets: exit %d", code)
	}
	var topics []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (strings.HasPrefix(f[0], "ev.") || f[0] == "other") {
			topics = append(topics, f[0]+"/"+f[1])
		}
	}
	if got := strings.Join(topics, " "); got != "ev.a/0 ev.a/1 ev.b/0 ev.b/1" {
		t.Errorf("offsets lists %s, want the partitions of ev.a and ev.b", got)
	}
	if !strings.Contains(out, "total lag: 20 records") {
		t.Errorf("offsets: no total lag of the 20 records")
	}

	// tail reads the matched topics' records only.
	code, _, errOut, _ := runCLI(t, "tail", "-config", p, "-n", "100")
	if code != exitOK || !strings.Contains(errOut, "the end of the log: 20 rows of the 100 asked for") {
		t.Errorf("tail -n 100: exit %d, stderr %q; want the 20 records of ev.a and ev.b", code, errOut)
	}

	code, out, _, _ = runCLI(t, "offsets", "reset", "-config", p, "-to", "latest", "-topics", "ev.b")
	if code != exitOK || !strings.Contains(out, "ev.b") || strings.Contains(out, "ev.a") {
		t.Errorf("offsets reset -topics ev.b: exit %d, a plan that is not of ev.b alone:\n%s", code, out)
	}
	for _, topic := range []string{"ev.dlq", "other"} {
		code, _, errOut, _ := runCLI(t, "offsets", "reset", "-config", p, "-to", "latest", "-topics", topic)
		if want := fmt.Sprintf("-topics: %q is not one of the pipeline's topics [ev.a ev.b]", topic); code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("offsets reset -topics %s: exit %d, stderr %q; want 2 and %q", topic, code, errOut, want)
		}
	}

	none := cfg(`nothing\..*`)
	code, _, errOut, _ = runCLI(t, "offsets", "-config", none)
	if want := `source.kafka.topics_regex: no topic matches ^(?:nothing\..*)$ today`; code != exitFailed || !strings.Contains(errOut, want) {
		t.Errorf("offsets, no topic matching: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	code, _, errOut, _ = runCLI(t, "validate", "-connect", "-config", none)
	if want := `source.kafka.topics_regex: no topic matches ^(?:nothing\..*)$ today`; code != exitFailed || !strings.Contains(errOut, want) {
		t.Errorf("validate -connect, no topic matching: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}
