package avro

import (
	"testing"
)

func TestColumnsDefaults(t *testing.T) {
	cols, all, err := Columns(`{"type":"record","name":"R","fields":[
	 {"name":"i","type":"int","default":5},
	 {"name":"l","type":"long","default":-7},
	 {"name":"d","type":"double","default":1.5},
	 {"name":"s","type":"string","default":"it's\n"},
	 {"name":"b","type":"boolean","default":false},
	 {"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]},"default":"Y"},
	 {"name":"n","type":["null","string"],"default":null},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"},"default":0},
	 {"name":"a","type":{"type":"array","items":"int"},"default":[]},
	 {"name":"r","type":["null",{"type":"record","name":"In","fields":[{"name":"q","type":"int"}]}],"default":null}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"i": {"Int32", "5"}, "l": {"Int64", "-7"}, "d": {"Float64", "1.5"}, "s": {"String", `'it\'s\n'`},
		"b": {"Bool", "0"}, "e": {"String", "'Y'"}, "n": {"Nullable(String)", ""}, "ts": {"DateTime64(3)", ""},
		"a": {"Array(Int32)", ""}, "r": {"Tuple(Int32)", ""},
	}
	if len(cols) != len(want) {
		t.Fatalf("%d columns: %+v", len(cols), cols)
	}
	for _, c := range cols {
		w := want[c.Name]
		if c.Type != w[0] || c.Default != w[1] {
			t.Errorf("%s: %s DEFAULT %q, want %s DEFAULT %q", c.Name, c.Type, c.Default, w[0], w[1])
		}
	}
	if all["r.q"] != "Int32" {
		t.Errorf("the record's field r.q is typed %q for the chain", all["r.q"])
	}
	if _, _, err := Columns(`"string"`); err == nil {
		t.Error("a schema that is not a record gave columns")
	}
}
