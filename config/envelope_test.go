package config

import (
	"strings"
	"testing"
)

const cdcBase = `pipeline: {name: demo}
source:
  kafka: {brokers: [k1:9092], topics: [t], group_id: g}
decode:
%s
sink:
  clickhouse:
    addr: [c1:9000]
    table: events
%s`

// TestEnvelopeValidation: decode.envelope and decode.debezium take their
// values (with a did-you-mean), the key is required and declared, and the
// envelope refuses the raw and Protobuf formats, other framings, a
// flatten step and the JSON wrapper setting with Avro.
func TestEnvelopeValidation(t *testing.T) {
	ok := "  format: json\n  envelope: debezium\n  fields: {id: Int64, name: String}\n"
	// With Avro the registry's schema types the key: no decode.fields.
	avro := "  format: avro\n  envelope: debezium\n  avro: {framing: confluent, registry: {url: http://r:8081}}\n"
	for _, tt := range []struct {
		name, decode, rest, want string
	}{
		{"ok", ok + "  debezium: {key: [id]}", "", ""},
		{"ok collapsing", ok + "  debezium: {key: [id], mode: collapsing, wrapper: payload, version: binlog}", "    inflight: {max_per_shard: 1}\n", ""},
		{"collapsing with concurrent inserts", ok + "  debezium: {key: [id], mode: collapsing}", "", "decode.debezium.mode: collapsing needs a key's rows inserted in the order of its changes: set sink.clickhouse.inflight.max_per_shard: 1 (it is 2)"},
		{"bad envelope", "  format: json\n  envelope: debezum", "", `decode.envelope: must be one of none, debezium; got "debezum" (did you mean "debezium"?)`},
		{"missing key", ok + "  debezium: {mode: replacing}", "", "decode.debezium.key: required key is missing"},
		{"no debezium", ok, "", "decode.debezium.key: required key is missing"},
		{"undeclared key", ok + "  debezium: {key: [idd]}", "", `decode.debezium.key: "idd" is not in decode.fields: declare the key fields' types there (e.g. decode.fields: {idd: Int64}) (did you mean "id"?)`},
		{"metadata key", ok + "  debezium: {key: [_offset]}", "", `"_offset" is not a field of the row`},
		{"twice", ok + "  debezium: {key: [id, id]}", "", `names "id" twice`},
		{"bad mode", ok + "  debezium: {key: [id], mode: colapsing}", "", `decode.debezium.mode: must be one of replacing, collapsing; got "colapsing" (did you mean "collapsing"?)`},
		{"bad wrapper", ok + "  debezium: {key: [id], wrapper: payloads}", "", `decode.debezium.wrapper: must be one of auto, payload, none; got "payloads" (did you mean "payload"?)`},
		{"bad version", ok + "  debezium: {key: [id], version: lnz}", "", `decode.debezium.version: must be one of auto, lsn, binlog, ts_ms; got "lnz" (did you mean "lsn"?)`},
		{"raw", "  format: raw\n  envelope: debezium\n  fields: {id: Int64}\n  debezium: {key: [id]}", "    columns: {v: _raw}\n", `decode.envelope: debezium change events are read from JSON or Avro records: set decode.format: json or avro (it is "raw")`},
		{"avro", avro + "  debezium: {key: [id]}", "", ""},
		{"avro validate_schema", avro + "  validate_schema: names\n  debezium: {key: [id]}", "", `decode.validate_schema: is "names", but under decode.envelope debezium the writer schema is the change event's Envelope`},
		{"avro wrapper", avro + "  debezium: {key: [id], wrapper: payload}", "", `decode.debezium.wrapper: is "payload", but the schema/payload wrapper is the JSON converter's`},
		{"protobuf", "  format: protobuf\n  envelope: debezium\n  protobuf: {framing: confluent, registry: {url: http://r:8081}}\n  debezium: {key: [id]}", "", "Debezium writes no Protobuf envelope"},
		{"ndjson", ok + "  json: {framing: ndjson}\n  debezium: {key: [id]}", "", "decode.json.framing must be single"},
		{"flatten", ok + "  debezium: {key: [id]}", "transform:\n  - flatten: items\n", `transform[0] flattens "items", but the debezium envelope already makes the rows of each event`},
		{"debezium without envelope", "  format: json\n  fields: {id: Int64}\n  debezium: {key: [id]}", "", "decode.debezium.key: is set, but decode.envelope is not debezium"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(strings.Replace(cdcBase, "%s", tt.decode, 1), "%s", tt.rest, 1)
			c, err := Parse([]byte(y), "pipeline.yaml", env(nil))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !c.CDC() {
					t.Fatal("CDC = false")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse:\ngot  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestDebeziumSettings: the defaults fill what the file leaves out.
func TestDebeziumSettings(t *testing.T) {
	d := (&Config{}).DebeziumSettings()
	if d.Mode != DebeziumReplacing || d.Wrapper != WrapperAuto || d.Version != VersionAuto {
		t.Fatalf("defaults = %+v", d)
	}
	d = (&Config{Decode: Decode{Debezium: Debezium{Mode: DebeziumCollapsing, Wrapper: WrapperNone, Version: VersionLSN}}}).DebeziumSettings()
	if d.Mode != DebeziumCollapsing || d.Wrapper != WrapperNone || d.Version != VersionLSN {
		t.Fatalf("settings = %+v", d)
	}
}
