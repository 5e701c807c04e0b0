package avro

import (
	"strings"
	"testing"
)

// TestDebeziumValue: the row record of a change event's Envelope is the
// Value record of after (a reference to before's), typed as a plain
// record's fields; a schema without after is refused.
func TestDebeziumValue(t *testing.T) {
	env := `{"type":"record","name":"Envelope","namespace":"srv.public.t","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}],"default":null},
{"name":"after","type":["null","Value"],"default":null},
{"name":"op","type":"string"}]}`
	v, err := DebeziumValue(env)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := FieldTypes(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(ft) != 2 || ft["id"] != "Int64" || ft["at"] != "Nullable(DateTime64(3))" {
		t.Fatalf("the row's fields: %v (schema %s)", ft, v)
	}
	if _, err := DebeziumValue(`{"type":"record","name":"R","fields":[{"name":"id","type":"long"}]}`); err == nil || !strings.Contains(err.Error(), "no field after") {
		t.Fatalf("a plain record: %v", err)
	}
	if _, err := DebeziumValue(`{"type":"record","name":"R","fields":[{"name":"after","type":"long"}]}`); err == nil || !strings.Contains(err.Error(), "not a [null, record] union") {
		t.Fatalf("after not a record: %v", err)
	}
}
