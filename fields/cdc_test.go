package fields

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
)

// TestCheckMappedCDC: with the debezium envelope, a column may be mapped
// to one of the envelope's fields; an undeclared field is still refused.
func TestCheckMappedCDC(t *testing.T) {
	cfg := &config.Config{Decode: config.Decode{Format: config.FormatJSON, Envelope: config.EnvelopeDebezium,
		Fields: map[string]string{"id": "Int64"}}}
	cfg.Sink.ClickHouse = &config.ClickHouse{Table: "t", Columns: map[string]string{"ver": "_version", "lsn": "_source.lsn", "x": "idd"}}
	r, err := Offline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := CheckMapped(cfg, r)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `columns.x: field "idd" is not a field of the records`) {
		t.Fatalf("errors %v, want one for x", errs)
	}
	cfg.Decode.Envelope = ""
	if errs := CheckMapped(cfg, r); len(errs) != 3 {
		t.Fatalf("without the envelope: %v, want 3 errors", errs)
	}
}
