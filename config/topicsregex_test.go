package config

import (
	"strings"
	"testing"
)

const regexBase = `pipeline:
  name: demo
source:
  kafka:
    brokers: [k1:9092]
%s    group_id: g
sink:
  clickhouse:
    addr: [c1:9000]
    table: events
`

func regexConfig(topics string) string { return strings.Replace(regexBase, "%s", topics, 1) }

func TestTopicsRegexValidation(t *testing.T) {
	tests := []struct {
		name, topics, want string
	}{
		{"neither", "",
			`pipeline.yaml:4:3: source.kafka.topics: required: set source.kafka.topics (a list of topics) or source.kafka.topics_regex (a pattern of topic names)`},
		{"both", "    topics: [events]\n    topics_regex: 'ev.*'\n",
			`pipeline.yaml:6:13: source.kafka.topics: set source.kafka.topics or source.kafka.topics_regex, not both`},
		{"invalid", "    topics_regex: 'orders.(eu|us'\n",
			"pipeline.yaml:6:19: source.kafka.topics_regex: invalid regular expression \"orders.(eu|us\": error parsing regexp: missing closing ): `^(?:orders.(eu|us)$`"},
		{"empty list and no regex", "    topics: []\n",
			`pipeline.yaml:6:13: source.kafka.topics: required: set source.kafka.topics (a list of topics) or source.kafka.topics_regex (a pattern of topic names)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(regexConfig(tt.topics)), "pipeline.yaml", env(nil))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse:\ngot  %v\nwant %s", err, tt.want)
			}
		})
	}
	c, err := Parse([]byte(regexConfig("    topics_regex: 'orders\\.(eu|us)'\n")), "pipeline.yaml", env(nil))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Source.Kafka.MetadataMaxAge != Duration(60e9) {
		t.Errorf("metadata_max_age = %s, want the 1m default", c.Source.Kafka.MetadataMaxAge)
	}
	c.Source.Kafka.MetadataMaxAge = Duration(500e6)
	if err := c.Validate(); err == nil || err.Error() != "source.kafka.metadata_max_age: must be at least 1s, got 500ms" {
		t.Errorf("metadata_max_age 500ms: Validate() = %v", err)
	}
}

// The pattern matches whole names: a prefix or a part of a name is not
// a match, so "events" does not take in "events.dlq".
func TestTopicPatternAnchored(t *testing.T) {
	k := &Kafka{TopicsRegex: `orders\.(eu|us)|events`}
	re, err := k.TopicPattern()
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{
		"orders.eu": true, "orders.us": true, "events": true,
		"orders.eu.v2": false, "x.orders.eu": false, "events.dlq": false, "my-events": false, "orders.asia": false,
	} {
		if got := re.MatchString(topic); got != want {
			t.Errorf("%q matches %q: %v, want %v", k.TopicsRegex, topic, got, want)
		}
	}
	if re, err := (&Kafka{}).TopicPattern(); re != nil || err != nil {
		t.Errorf("no topics_regex: TopicPattern() = %v, %v; want nil, nil", re, err)
	}
}

func TestRouteRuleTopic(t *testing.T) {
	sinks := `sinks:
  a: {clickhouse: {addr: [c1:9000], table: a}}
  b: {clickhouse: {addr: [c1:9000], table: b}}
`
	cfg := func(topics, rules string) string {
		s := strings.Replace(regexBase, "%s", topics, 1)
		s = s[:strings.Index(s, "sink:")] + sinks + "transform:\n  - route:\n      rules:\n" + rules
		return s
	}
	tests := []struct {
		name, topics, rules, want string
	}{
		{"topic only", "    topics_regex: 'ev\\..*'\n", "        - {topic: ev.a, sink: a}\n        - {topic: ev.b, sink: b}\n", ""},
		{"topic and when", "    topics: [ev.a, ev.b]\n", "        - {topic: ev.a, when: 'x > 1', sink: a}\n", ""},
		{"neither", "    topics: [ev.a]\n", "        - {sink: a}\n",
			"pipeline.yaml:14:11: transform[0].route.rules[0].when: required key is missing (or topic: a rule needs when, topic or both)"},
		{"not listed", "    topics: [ev.a, ev.b]\n", "        - {topic: ev.c, sink: a}\n",
			`pipeline.yaml:14:19: transform[0].route.rules[0].topic: topic "ev.c" is not one of source.kafka.topics (ev.a, ev.b): the rule would never match`},
		{"not matched", "    topics_regex: 'ev\\..*'\n", "        - {topic: orders, sink: a}\n",
			`pipeline.yaml:14:19: transform[0].route.rules[0].topic: topic "orders" does not match source.kafka.topics_regex "ev\\..*": the rule would never match`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(cfg(tt.topics, tt.rules)), "pipeline.yaml", env(nil))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Parse:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}
