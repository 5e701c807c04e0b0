package inspect

import (
	"errors"
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
)

// TestDebeziumRow: validate -connect takes the row's fields of a change
// event's schema from after's Value record and refuses a key field it
// lacks, and a schema that is not a change event's.
func TestDebeziumRow(t *testing.T) {
	env := `{"type":"record","name":"Envelope","namespace":"srv.public.t","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}],"default":null},
{"name":"after","type":["null","Value"],"default":null},{"name":"op","type":"string"}]}`
	cfg := &config.Config{Decode: config.Decode{Format: config.FormatAvro, Envelope: config.EnvelopeDebezium, Debezium: config.Debezium{Key: []string{"id"}}}}
	row, err := debeziumRow(cfg, "t-value", 3, env)
	if err != nil || !strings.Contains(row, `"name":"srv.public.t.Value"`) {
		t.Fatalf("row %s, err %v", row, err)
	}
	cfg.Decode.Debezium.Key = []string{"id", "nme"}
	_, err = debeziumRow(cfg, "t-value", 3, env)
	var ce *pipeline.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `decode.debezium.key: "nme" is not a field of the row record (after's Value) of subject t-value (id 3): it has id, name (did you mean "name"?)`) {
		t.Fatalf("a key the row lacks: %v", err)
	}
	if _, err := debeziumRow(cfg, "t-value", 4, `{"type":"record","name":"R","fields":[{"name":"id","type":"long"}]}`); !errors.As(err, &ce) || !strings.Contains(err.Error(), "no field after") {
		t.Fatalf("not a change event: %v", err)
	}
}
