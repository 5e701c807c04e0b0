package config

import (
	"strings"
	"testing"
)

const keyBase = `pipeline: {name: demo}
source:
  kafka: {brokers: [k1:9092], topics: [t], group_id: g}
decode:
%s
sink:
  clickhouse:
    addr: [c1:9000]
    table: events
    columns: {%s}
%s`

// TestKeyValidation: decode.key.format is one of the formats; avro keys
// need the values' registry; a key field mapped or read by an expression
// needs a json or avro key.
func TestKeyValidation(t *testing.T) {
	for _, tt := range []struct {
		name, decode, columns, rest, want string
	}{
		{"unknown format", "  key: {format: xml}", "", "", `decode.key.format: must be one of none, string, json, avro; got "xml"`},
		{"avro without avro values", "  key: {format: avro}", "", "", "decode.key.format: avro keys are Confluent-framed and their schemas come from decode.avro.registry"},
		{"key field without format", "  format: json", "u: _key.user", "", "decode.key.format: is none, but sink.clickhouse.columns maps u to _key.user, a field of the key: set decode.key.format to json or avro"},
		{"key field under string", "  key: {format: string}", "u: _key.user", "", "decode.key.format: is string, but sink.clickhouse.columns maps u to _key.user"},
		{"expression key field", "  format: json", "", "transform:\n  - filter: \"_key.region == 'eu'\"\n", "decode.key.format: is none, but the transform reads _key.region, a field of the key"},
		{"json", "  key: {format: json}", "u: _key.user", "transform:\n  - filter: \"_key.region == 'eu' && !_tombstone\"\n", ""},
		{"avro", "  format: avro\n  avro: {framing: confluent, registry: {url: 'http://r:8081'}}\n  key: {format: avro}", "u: _key.user", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(strings.Replace(strings.Replace(keyBase, "%s", tt.decode, 1), "%s", tt.columns, 1), "%s", tt.rest, 1)
			c, err := Parse([]byte(y), "pipeline.yaml", env(nil))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if c.KeyFormat() == KeyNone {
					t.Fatal("KeyFormat = none")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse:\ngot  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestExprKeys: the key fields and _tombstone are found in every
// expression of the chain, not in longer names.
func TestExprKeys(t *testing.T) {
	c := &Config{Transform: []Step{
		{Filter: &Expr{Text: "_key.a == 1 && x._key.b == 2"}},
		{Set: []Assignment{{Field: "f", Expr: Expr{Text: "concat(_key.c.d, 'x')"}}}},
		{Route: &Route{Rules: []RouteRule{{When: &Expr{Text: "_tombstones_seen"}}}}},
	}}
	if got := strings.Join(c.ExprKeyFields(), ","); got != "_key.a,_key.c.d" {
		t.Errorf("ExprKeyFields = %s", got)
	}
	if c.Tombstones() {
		t.Error("Tombstones = true for _tombstones_seen")
	}
	c.Transform = append(c.Transform, Step{Filter: &Expr{Text: "!_tombstone"}})
	if !c.Tombstones() {
		t.Error("Tombstones = false")
	}
	if (&Config{}).KeyFormat() != KeyNone {
		t.Error("KeyFormat of an empty config")
	}
}
