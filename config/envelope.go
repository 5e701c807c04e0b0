package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etl-project/etl/internal/names"
)

// Debezium is decode.debezium: how Debezium change events become the
// rows of tables that converge to the source table's state.
type Debezium struct {
	// Key is the source table's primary key fields: an update that
	// changes one is a delete of the old key and an insert of the new
	// one, and they are the derived table's ORDER BY. Required. With
	// JSON, each is declared in decode.fields; with Avro, the registry's
	// schema types it.
	Key []string `yaml:"key,omitempty"`
	// Mode is replacing (default: one row per change, a version and a
	// deleted flag, for ReplacingMergeTree) or collapsing (an update
	// cancels the old row with a sign, for CollapsingMergeTree).
	Mode string `yaml:"mode"`
	// Wrapper is auto (default: decided per record), payload (every
	// event has the JSON converter's schema/payload wrapper) or none.
	// JSON only: with decode.format avro it must be left at auto.
	Wrapper string `yaml:"wrapper"`
	// Version is auto (default: by source.connector), lsn, binlog or
	// ts_ms: what the rows' _version is taken from.
	Version string `yaml:"version"`
}

// The envelopes and the debezium envelope's settings.
const (
	EnvelopeNone     = "none"
	EnvelopeDebezium = "debezium"

	DebeziumReplacing  = "replacing"
	DebeziumCollapsing = "collapsing"

	WrapperAuto    = "auto"
	WrapperPayload = "payload"
	WrapperNone    = "none"

	VersionAuto   = "auto"
	VersionLSN    = "lsn"
	VersionBinlog = "binlog"
	VersionTsMs   = "ts_ms"
)

// CDC reports whether records are Debezium change events
// (decode.envelope: debezium).
func (c *Config) CDC() bool { return c.Decode.Envelope == EnvelopeDebezium }

// DebeziumSettings is decode.debezium with its defaults filled in.
func (c *Config) DebeziumSettings() Debezium {
	d := c.Decode.Debezium
	if d.Mode == "" {
		d.Mode = DebeziumReplacing
	}
	if d.Wrapper == "" {
		d.Wrapper = WrapperAuto
	}
	if d.Version == "" {
		d.Version = VersionAuto
	}
	return d
}

// oneOfNamed is oneOf with a did-you-mean for a misspelt value.
func oneOfNamed(v string, allowed ...string) string {
	if slices.Contains(allowed, v) {
		return ""
	}
	return fmt.Sprintf("must be one of %s; got %q%s", strings.Join(allowed, ", "), v, names.DidYouMean(v, allowed))
}

func cdc(c *Config) bool { return c.CDC() }

// envelopeRules check decode.envelope and decode.debezium.
var envelopeRules = []rule{
	{path: "decode.envelope", when: func(c *Config) bool { return c.Decode.Envelope != "" }, check: func(c *Config) string {
		return oneOfNamed(c.Decode.Envelope, EnvelopeNone, EnvelopeDebezium)
	}},
	{path: "decode.envelope", when: cdc, deps: []string{"decode.format"}, check: func(c *Config) string {
		switch c.Decode.Format {
		case FormatJSON, FormatAvro:
		case FormatProtobuf:
			// Debezium has no Protobuf converter of its own: its events
			// are JSON or Avro.
			return "debezium change events are read from JSON or Avro records; Debezium writes no Protobuf envelope: set decode.format: json or avro"
		default:
			return fmt.Sprintf("debezium change events are read from JSON or Avro records: set decode.format: json or avro (it is %q)", c.Decode.Format)
		}
		if f := c.Decode.JSON.Framing; f != "" && f != "single" {
			return fmt.Sprintf("a debezium change event is one record: decode.json.framing must be single (it is %q)", f)
		}
		for i, st := range c.Transform {
			if st.Flatten != "" {
				return fmt.Sprintf("transform[%d] flattens %q, but the debezium envelope already makes the rows of each event (the before and after images): drop the flatten step", i, st.Flatten)
			}
		}
		return ""
	}},
	{path: "decode.debezium.key", when: func(c *Config) bool { return !c.CDC() && len(c.Decode.Debezium.Key) > 0 }, check: func(c *Config) string {
		return "is set, but decode.envelope is not debezium"
	}},
	{path: "decode.debezium.key", when: cdc, required: func(c *Config) bool { return len(c.Decode.Debezium.Key) > 0 }},
	{path: "decode.debezium.key", when: cdc, check: func(c *Config) string {
		avro := c.Decode.Format == FormatAvro
		seen := map[string]bool{}
		declared := make([]string, 0, len(c.Decode.Fields))
		for f := range c.Decode.Fields {
			declared = append(declared, f)
		}
		slices.Sort(declared)
		for _, k := range c.Decode.Debezium.Key {
			if seen[k] {
				return fmt.Sprintf("names %q twice", k)
			}
			seen[k] = true
			if strings.HasPrefix(k, "_") {
				return fmt.Sprintf("%q is not a field of the row: names starting with _ are metadata and the envelope's fields", k)
			}
			if _, ok := c.Decode.Fields[k]; !ok && !avro {
				return fmt.Sprintf("%q is not in decode.fields: declare the key fields' types there (e.g. decode.fields: {%s: Int64})%s", k, k, names.DidYouMean(k, declared))
			}
		}
		return ""
	}},
	{path: "decode.debezium.mode", when: func(c *Config) bool { return c.Decode.Debezium.Mode != "" }, check: func(c *Config) string {
		return oneOfNamed(c.Decode.Debezium.Mode, DebeziumReplacing, DebeziumCollapsing)
	}},
	// CollapsingMergeTree keeps the last row of a key's run of signs: the
	// rows of a key must reach the table in the order of the changes,
	// one insert at a time.
	{path: "decode.debezium.mode", when: func(c *Config) bool { return c.CDC() && c.Decode.Debezium.Mode == DebeziumCollapsing }, check: func(c *Config) string {
		for _, s := range c.SinkList() {
			if s.ClickHouse != nil && s.ClickHouse.Inflight.MaxPerShard != 1 {
				return fmt.Sprintf("collapsing needs a key's rows inserted in the order of its changes: set %s.inflight.max_per_shard: 1 (it is %d)", c.KeyPath(s), s.ClickHouse.Inflight.MaxPerShard)
			}
		}
		return ""
	}},
	{path: "decode.debezium.wrapper", when: func(c *Config) bool { return c.Decode.Debezium.Wrapper != "" }, check: func(c *Config) string {
		return oneOfNamed(c.Decode.Debezium.Wrapper, WrapperAuto, WrapperPayload, WrapperNone)
	}},
	// validate_schema compares a writer schema with the table's row; an
	// Avro change event's schema is the Envelope, whose source and
	// transaction fields no column takes.
	{path: "decode.validate_schema", deps: []string{"decode.format"}, when: func(c *Config) bool {
		return c.CDC() && c.Decode.Format == FormatAvro && c.Decode.ValidateSchema != "" && c.Decode.ValidateSchema != "off"
	}, check: func(c *Config) string {
		return fmt.Sprintf("is %q, but under decode.envelope debezium the writer schema is the change event's Envelope, not the table's row (the envelope reads the fields it needs): set it to off", c.Decode.ValidateSchema)
	}},
	// The schema/payload wrapper is the JSON converter's: an Avro change
	// event is the Envelope record itself.
	{path: "decode.debezium.wrapper", deps: []string{"decode.format"}, when: func(c *Config) bool {
		return c.CDC() && c.Decode.Format == FormatAvro && c.Decode.Debezium.Wrapper != "" && c.Decode.Debezium.Wrapper != WrapperAuto
	}, check: func(c *Config) string {
		return fmt.Sprintf("is %q, but the schema/payload wrapper is the JSON converter's: an Avro change event is the Envelope record itself; remove the key", c.Decode.Debezium.Wrapper)
	}},
	{path: "decode.debezium.version", when: func(c *Config) bool { return c.Decode.Debezium.Version != "" }, check: func(c *Config) string {
		return oneOfNamed(c.Decode.Debezium.Version, VersionAuto, VersionLSN, VersionBinlog, VersionTsMs)
	}},
}
