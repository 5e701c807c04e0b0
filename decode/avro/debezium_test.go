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

// TestNullRecordAbsent: the columns a [null, record] union feeds are
// absent in a row whose union is null (the record lacked them), and
// present in a row whose union holds the record.
func TestNullRecordAbsent(t *testing.T) {
	writer := `{"type":"record","name":"E","fields":[{"name":"before","type":["null",{"type":"record","name":"V","fields":[{"name":"id","type":"long"}]}]},{"name":"op","type":"string"}]}`
	s := schemaOf(t, "before.id Int64", "op String")
	d, err := New(writer, s, Options{Fields: []string{"before.id", "op"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		datum  []byte
		absent bool
	}{
		{[]byte{0, 2, 'c'}, true},      // before null
		{[]byte{2, 14, 2, 'u'}, false}, // before {id: 7}
	} {
		c := newChunk(t, s)
		if _, err := d.Decode(tc.datum, c); err != nil {
			t.Fatal(err)
		}
		if got := len(c.Absent) > 0 && c.Absent[0] > 0; got != tc.absent {
			t.Errorf("datum %v: before.id absent %v, want %v", tc.datum, got, tc.absent)
		}
		if len(c.Absent) > 1 && c.Absent[1] > 0 {
			t.Errorf("datum %v: op absent", tc.datum)
		}
	}
}
