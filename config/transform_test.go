package config

import (
	"strings"
	"testing"
)

const sourceOnly = `pipeline:
  name: demo
source:
  kafka:
    brokers: [k1:9092]
    topics: [events]
    group_id: g
`

// TestTransformAndSinks parses a chain and named sinks: set keeps the
// file's order, expressions and steps carry their positions, each named
// sink starts from the sink defaults, and addr is one shard.
func TestTransformAndSinks(t *testing.T) {
	y := sourceOnly + `transform:
  - flatten: events
  - filter: "events.value > 10"
  - set:
      total: "events.value * 2"
      label: "upper(kind)"
  - rename: {kind: type}
  - drop: [debug]
  - route:
      rules:
        - {when: "type == 'CLICK'", sink: clicks}
sinks:
  clicks:
    clickhouse: {addr: [c1:9000], table: clicks}
  views:
    clickhouse:
      table: views
      shards:
        - {weight: 2, replicas: [a:9000, b:9000]}
        - {replicas: [c:9000]}
      sharding: {by: key, column: user_id}
`
	c, err := Parse([]byte(y), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Transform) != 6 {
		t.Fatalf("%d steps", len(c.Transform))
	}
	if got := c.Transform[1].Filter; got.Text != "events.value > 10" || got.Pos.String() != "p.yaml:10:13" {
		t.Errorf("filter = %+v", got)
	}
	set := c.Transform[2].Set
	if len(set) != 2 || set[0].Field != "total" || set[1].Field != "label" || set[1].Expr.Pos.Line != 13 {
		t.Errorf("set = %+v", set)
	}
	if p := c.Transform[5].Pos; p.Line != 16 {
		t.Errorf("route step at %v", p)
	}
	r := c.Transform[5].Route
	if r.Unmatched != "fail" || r.Rules[0].Sink != "clicks" || r.Rules[0].Pos.Line != 18 {
		t.Errorf("route = %+v", r)
	}
	sinks := c.SinkList()
	if len(sinks) != 2 || sinks[0].Name != "clicks" || sinks[1].Name != "views" {
		t.Fatalf("sinks = %+v", sinks)
	}
	clicks, views := sinks[0].ClickHouse, sinks[1].ClickHouse
	if clicks.Batch.MaxRows != 1_000_000 || clicks.Database != "default" || clicks.Breaker.FailureThreshold != 3 {
		t.Errorf("named sink lacks the defaults: %+v", clicks)
	}
	if sh := clicks.ShardList(); len(sh) != 1 || sh[0].Weight != 1 || sh[0].Replicas[0] != "c1:9000" {
		t.Errorf("addr as shards = %+v", sh)
	}
	if sh := views.ShardList(); len(sh) != 2 || sh[0].Weight != 2 || sh[1].Weight != 1 || len(sh[0].Replicas) != 2 {
		t.Errorf("shards = %+v", sh)
	}
	if views.Sharding.By != "key" || views.Sharding.Column != "user_id" {
		t.Errorf("sharding = %+v", views.Sharding)
	}
	// The single sink form is the sink named default.
	c2, err := Parse([]byte(base), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := c2.SinkList(); len(s) != 1 || s[0].Name != DefaultSink || s[0].ClickHouse.Table != "events" {
		t.Errorf("single sink = %+v", s)
	}
}

// TestTransformErrors: mistakes in the chain's shape and the sinks are
// reported with their line.
func TestTransformErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"two keys in a step", base + "transform:\n  - {filter: \"a > 1\", drop: [b]}\n",
			"p.yaml:13:5: transform[0]: a step sets exactly one of flatten, filter, set, rename, drop, route; this one sets filter, drop"},
		{"route to an unknown sink", base + "transform:\n  - route:\n      rules: [{when: \"a > 1\", sink: nope}]\n",
			`p.yaml:14:37: transform[0].route.rules[0].sink: no sink named "nope"; sinks: default`},
		{"bad unmatched", base + "transform:\n  - route: {rules: [{when: x, sink: default}], unmatched: drop}\n",
			`p.yaml:13:59: transform[0].route.unmatched: must be skip, fail or a sink name (default); got "drop"`},
		{"expression not a string", base + "transform:\n  - filter: [a]\n",
			"p.yaml:13:13: transform[0].filter: expected an expression (a string), got a list"},
		{"sink and sinks", base + "sinks:\n  a: {clickhouse: {addr: [x:1], table: t}}\n",
			"p.yaml:8:1: sink: set sink (one sink) or sinks (named sinks), not both"},
		{"named sink missing table", sourceOnly + "sinks:\n  a:\n    clickhouse: {addr: [x:1]}\n",
			"p.yaml:10:5: sinks.a.clickhouse.table: required key is missing"},
		{"addr and shards", base + "    shards: [{replicas: [a:1]}]\n",
			"p.yaml:12:13: sink.clickhouse.shards: set addr (one shard) or shards, not both"},
		{"key sharding without column", base + "    sharding: {by: key}\n",
			"p.yaml:12:5: sink.clickhouse.sharding.column: required with sharding.by: key"},
		{"bad replica", sourceOnly + "sink:\n  clickhouse:\n    table: t\n    shards: [{replicas: [nohost]}]\n",
			`p.yaml:11:13: sink.clickhouse.shards: shard 0: replica "nohost" is not host:port`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "p.yaml", nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}
