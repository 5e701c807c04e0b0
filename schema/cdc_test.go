package schema

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
)

func cdcConfig(mode string) *config.Config {
	c := &config.Config{Decode: config.Decode{Format: config.FormatJSON, Envelope: config.EnvelopeDebezium,
		Fields:     map[string]string{"id": "Int64", "name": "String", "updated_at": "DateTime64(3)", "_key.id": "Int64"},
		FieldOrder: []string{"id", "name", "updated_at", "_key.id"},
		Debezium:   config.Debezium{Key: []string{"id"}, Mode: mode}}}
	c.Sink.ClickHouse = &config.ClickHouse{Table: "accounts"}
	return c
}

// TestDeriveCDC: the table of Debezium change events is the row's own
// fields with _version and the mode's flag; the chain after the envelope
// can read the envelope's other fields into columns of its own.
func TestDeriveCDC(t *testing.T) {
	for _, tt := range []struct {
		mode  string
		steps []config.Step
		want  string
	}{
		{"", nil, "id Int64\nname String\nupdated_at DateTime\n_version UInt64\n_deleted UInt8"},
		{config.DebeziumCollapsing, nil, "id Int64\nname String\nupdated_at DateTime\n_version UInt64\n_sign Int8"},
		{"", []config.Step{{Set: []config.Assignment{{Field: "lsn", Expr: config.Expr{Text: "_source.lsn"}}}}},
			"id Int64\nname String\nupdated_at DateTime\n_version UInt64\n_deleted UInt8\nlsn UInt64"},
	} {
		c := cdcConfig(tt.mode)
		c.Transform = tt.steps
		all, err := DeriveSinks(c, FromFields(c.Decode.Fields, c.Decode.FieldOrder), SinkOptions{Server: mustServer(t, "18.16")})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(all[config.DefaultSink]); got != tt.want {
			t.Errorf("mode %q: columns\n got %s\nwant %s", tt.mode, got, tt.want)
		}
	}
}

// TestCDCTable: the engine follows the mode and the server's version (the
// is_deleted column from 23.2), the sorting key the source's key; what
// the configuration sets is kept.
func TestCDCTable(t *testing.T) {
	for _, tt := range []struct {
		mode, server, engine string
		columns              map[string]string
		in                   Table
		want                 string
	}{
		{"", "18.16", "", nil, Table{}, "ReplacingMergeTree(`_version`) [id]"},
		{"", "23.1", "", nil, Table{}, "ReplacingMergeTree(`_version`) [id]"},
		{"", "23.2", "", nil, Table{}, "ReplacingMergeTree(`_version`, `_deleted`) [id]"},
		{"", "", "", nil, Table{}, "ReplacingMergeTree(`_version`, `_deleted`) [id]"},
		{"", "24.8", "", map[string]string{"ver": "_version", "gone": "_deleted", "account": "id"}, Table{}, "ReplacingMergeTree(`ver`, `gone`) [account]"},
		{config.DebeziumCollapsing, "24.8", "", nil, Table{}, "CollapsingMergeTree(`_sign`) [id]"},
		{"", "24.8", "", nil, Table{Engine: "ReplicatedReplacingMergeTree('/t', 'r', _version)", OrderBy: []string{"id", "name"}},
			"ReplicatedReplacingMergeTree('/t', 'r', _version) [id name]"},
	} {
		got := CDCTable(cdcConfig(tt.mode), tt.columns, tt.in, mustServer(t, tt.server))
		if s := got.Engine + " [" + strings.Join(got.OrderBy, " ") + "]"; s != tt.want {
			t.Errorf("mode %q server %q: %s, want %s", tt.mode, tt.server, s, tt.want)
		}
	}
	plain := cdcConfig("")
	plain.Decode.Envelope = ""
	if got := CDCTable(plain, nil, Table{}, mustServer(t, "24.8")); got.Engine != "" || got.OrderBy != nil {
		t.Errorf("without the envelope: %+v", got)
	}
}
