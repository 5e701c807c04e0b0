package avro

import (
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/sink/clickhouse"
)

// setDefaults gives the columns of s the table DEFAULT values in defs (by
// column name), as the sink's plan does with the values the server
// computed.
func setDefaults(t testing.TB, s *chunk.Schema, defs map[string]any) *chunk.Schema {
	t.Helper()
	for i, name := range s.Names {
		if v, ok := defs[name]; ok {
			if err := clickhouse.SetDefault(s.Types[i], v); err != nil {
				t.Fatalf("column %s: %v", name, err)
			}
		}
	}
	return s
}

func strp(s string) *string { return &s }

// defaultColumns are columns with table DEFAULTs (set by defaultValues)
// and one without (id).
var defaultColumns = []string{
	"id UInt64", "a Int32", "s String", "d Date", "f Float64", "ns Nullable(String)", "arr Array(UInt8)",
	"lc LowCardinality(String)", "u UUID", "e Enum8('p' = 1, 'q' = 2)", "dec Decimal(9, 2)", "tu Tuple(Int8, String)",
	"nn Nullable(Int64)",
}

var defaultValues = map[string]any{
	"a": int32(42), "s": "unknown", "d": time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC), "f": -1.5,
	"ns": strp("x"), "arr": []uint8{1, 2}, "lc": "lc", "u": "01234567-89ab-cdef-0123-456789abcdef",
	"e": "q", "dec": "1.25", "tu": []any{int8(1), "z"}, "nn": (*int64)(nil),
}

// rows renders every row of c as "col=value col=value ...".
func rows(c *chunk.Chunk) []string {
	out := make([]string, c.Rows)
	for r := range out {
		parts := make([]string, len(c.Cols))
		for i, col := range c.Cols {
			parts[i] = c.Schema.Names[i] + "=" + render(col, r)
		}
		out[r] = strings.Join(parts, " ")
	}
	return out
}

func checkRows(t *testing.T, what string, c *chunk.Chunk, want []string) {
	t.Helper()
	if err := checkConsistent(c); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := rows(c)
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d:\n%s", what, len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: row %d\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

const allDefaults = "a=42 s=unknown d=2020-01-02 f=-1.5 ns=x arr=[1,2] lc=lc u=01234567-89ab-cdef-0123-456789abcdef e=q dec=1.25 tu=(1,z) nn=NULL"

// TestTableDefaultsAvro: a field the writer lacks, and a null of a
// [null, T] union into a column that is not Nullable, take the column's
// DEFAULT; a null into a Nullable column stays NULL; a reader default
// wins over the column's.
func TestTableDefaultsAvro(t *testing.T) {
	s := setDefaults(t, schemaOf(t, defaultColumns...), defaultValues)
	c := newChunk(t, s)

	// A writer schema with none of the columns but id.
	only := avroRecord(`id:"long"`, `other:"string"`)
	a := avroNew(t, only, s, Options{})
	if _, err := a.Decode(avroMarshal(t, only, map[string]any{"id": int64(1), "other": "o"}), c); err != nil {
		t.Fatal(err)
	}
	// Unions with null, and a field of type null.
	unions := avroRecord(`id:"long"`, `a:["null","int"]`, `s:["null","string"]`, `ns:["null","string"]`,
		`arr:["null",{"type":"array","items":"int"}]`, `u:["null","string"]`, `tu:["null",{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}]`,
		`d:["null",{"type":"int","logicalType":"date"}]`, `nn:"null"`)
	a2 := avroNew(t, unions, s, Options{})
	for i, v := range []map[string]any{
		{"id": int64(2), "a": nil, "s": nil, "ns": nil, "arr": nil, "u": nil, "tu": nil, "d": nil, "nn": nil},
		{"id": int64(3), "a": map[string]any{"int": int32(7)}, "s": map[string]any{"string": "v"}, "ns": map[string]any{"string": "y"},
			"arr": map[string]any{"array": []any{int32(9)}}, "u": map[string]any{"string": "ffffffff-89ab-cdef-0123-456789abcdef"},
			"tu": map[string]any{"T": map[string]any{"x": int32(2), "y": "w"}}, "d": map[string]any{"int.date": int32(1)}, "nn": nil},
	} {
		if _, err := a2.Decode(avroMarshal(t, unions, v), c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// A reader schema: a's reader default wins, ns's null default is
	// NULL, s has no reader default (the column's).
	reader := `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"a","type":"int","default":8},
		{"name":"ns","type":["null","string"],"default":null},{"name":"s","type":"string"}]}`
	a3 := avroNew(t, only, s, Options{ReaderSchema: reader})
	if _, err := a3.Decode(avroMarshal(t, only, map[string]any{"id": int64(4), "other": "o"}), c); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "avro", c, []string{
		"id=1 " + allDefaults,
		"id=2 " + strings.Replace(allDefaults, "ns=x", "ns=NULL", 1),
		"id=3 a=7 s=v d=1970-01-02 f=-1.5 ns=y arr=[9] lc=lc u=ffffffff-89ab-cdef-0123-456789abcdef e=q dec=1.25 tu=(2,w) nn=NULL",
		"id=4 " + strings.NewReplacer("a=42", "a=8", "ns=x", "ns=NULL").Replace(allDefaults),
	})
}
