package avro

import (
	"reflect"
	"testing"
)

func TestAvroFieldTypes(t *testing.T) {
	schema := `{"type":"record","name":"E","fields":[
	 {"name":"id","type":"long"},
	 {"name":"ok","type":"boolean"},
	 {"name":"note","type":["null","string"]},
	 {"name":"kind","type":{"type":"enum","name":"K","symbols":["a","b"]}},
	 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"tags","type":{"type":"array","items":"string"}},
	 {"name":"attrs","type":["null",{"type":"map","values":"int"}]},
	 {"name":"user","type":{"type":"record","name":"U","fields":[{"name":"name","type":"string"},{"name":"age","type":["null","int"]}]}},
	 {"name":"events","type":{"type":"array","items":{"type":"record","name":"Ev","fields":[{"name":"value","type":"double"},{"name":"kind","type":"K"}]}}},
	 {"name":"odd","type":["int","string"]}
	]}`
	got, err := FieldTypes(schema)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"id": "Int64", "ok": "Bool", "note": "Nullable(String)", "kind": "String", "amount": "Decimal(10, 2)",
		"ts": "DateTime64(3)", "tags": "Array(String)", "attrs": "Map(String, Int32)",
		"user.name": "String", "user.age": "Nullable(Int32)",
		"events.value": "Array(Float64)", "events.kind": "Array(String)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if _, err := FieldTypes(`{"type":"record","name":"E","fields":[{"name":"id","type":"lng"}]}`); err == nil {
		t.Error("a schema with an unknown type was accepted")
	}
}
