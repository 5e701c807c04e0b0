package avro

import (
	"github.com/etl-project/etl/decode"

	"errors"
	"strings"
	"testing"
)

// avroStr appends an Avro string.
// nestedColumns is a table with a Nested structure n, as the server
// describes one (the JSON tests' table of the same name).
var nestedColumns = []string{"id UInt64", "n.a Array(UInt32)", "n.b Array(String)", "n.c Array(Nullable(Int8))", "n.t Array(Tuple(Int8, String))", "m Array(UInt8)"}

func avroStr(b []byte, s string) []byte { return append(avroLong(b, int64(len(s))), s...) }

// mapDatum is a map<long> datum built by hand, so its order is known:
// one block of the entries, then the end.
func mapDatum(kv ...any) []byte {
	if len(kv) == 0 {
		return []byte{0}
	}
	b := avroLong(nil, int64(len(kv)/2))
	for i := 0; i < len(kv); i += 2 {
		b = avroStr(b, kv[i].(string))
		b = avroLong(b, kv[i+1].(int64))
	}
	return append(b, 0)
}

func TestAvroMap(t *testing.T) {
	schema := avroRecord(`m:{"type":"map","values":"long"}`)
	for _, tc := range []struct {
		col    string
		datum  []byte
		want   string
		reason decode.Reason
	}{
		{"Map(String, Int64)", mapDatum("b", int64(2), "a", int64(1), "b", int64(3)), "{b:2,a:1,b:3}", ""},
		{"Map(String, Int64)", mapDatum(), "{}", ""},
		{"Map(LowCardinality(String), Nullable(Int64))", mapDatum("x", int64(-1)), "{x:-1}", ""},
		{"Map(String, UInt8)", mapDatum("x", int64(256)), "", decode.ReasonOutOfRange},
		{"Map(Int16, Int64)", mapDatum("1", int64(1), "-32768", int64(2), "1e3", int64(3)), "{1:1,-32768:2,1000:3}", ""},
		{"Map(Int16, Int64)", mapDatum("40000", int64(1)), "", decode.ReasonOutOfRange},
		{"Map(Int16, Int64)", mapDatum("x", int64(1)), "", decode.ReasonWrongType},
		{"Map(UInt64, Int64)", mapDatum("18446744073709551615", int64(1)), "{18446744073709551615:1}", ""},
		{"Map(UInt64, Int64)", mapDatum("-1", int64(1)), "", decode.ReasonOutOfRange},
		{"Map(UInt32, Int64)", mapDatum("1.5", int64(1)), "", decode.ReasonWrongType},
		// A block with a byte size (negative count).
		{"Map(String, Int64)", append(append(avroLong(avroLong(nil, -2), 6), avroLong(avroStr(avroLong(avroStr(nil, "a"), 1), "b"), 2)...), 0), "{a:1,b:2}", ""},
		{"Map(String, Int64)", append(append(avroLong(avroLong(nil, -2), 5), avroLong(avroStr(avroLong(avroStr(nil, "a"), 1), "b"), 2)...), 0), "", decode.ReasonCorrupt},
		{"Map(String, Int64)", avroLong(nil, 3), "", decode.ReasonCorrupt},
	} {
		s := schemaOf(t, "m "+tc.col)
		a := avroNew(t, schema, s, Options{})
		c := newChunk(t, s)
		if _, err := a.Decode(mapDatum("1", int64(0)), c); err != nil {
			t.Fatalf("%s: first row: %v", tc.col, err)
		}
		before := dump(c)
		rows, err := a.Decode(tc.datum, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Fatalf("%s %x: %v", tc.col, tc.datum, cerr)
		}
		if tc.reason != "" {
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != tc.reason || rows != 0 {
				t.Errorf("%s %x: %d, %v; want %s", tc.col, tc.datum, rows, err, tc.reason)
			}
			if after := dump(c); after != before {
				t.Errorf("%s: failed Decode changed the chunk:\n%s\n%s", tc.col, before, after)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %x: %v", tc.col, tc.datum, err)
			continue
		}
		if got := render(c.Cols[0], 1); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.col, got, tc.want)
		}
	}

	// Values of other types: arrays, records into tuples, unions.
	schema2 := avroRecord(`ma:{"type":"map","values":{"type":"array","items":"int"}}`,
		`mr:{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}}`,
		`mu:{"type":"map","values":["null","string"]}`)
	s := schemaOf(t, "ma Map(String, Array(Int8))", "mr Map(String, Tuple(y String, x Int64))", "mu Map(String, Nullable(String))")
	a := avroNew(t, schema2, s, Options{})
	c := newChunk(t, s)
	v := map[string]any{
		"ma": map[string]any{"k": []int32{1, -2}},
		"mr": map[string]any{"r": map[string]any{"x": int32(5), "y": "why"}},
		"mu": map[string]any{"n": nil},
	}
	if _, err := a.Decode(avroMarshal(t, schema2, v), c); err != nil {
		t.Fatal(err)
	}
	if got, want := render(c.Cols[0], 0)+" "+render(c.Cols[1], 0)+" "+render(c.Cols[2], 0), "{k:[1,-2]} {r:(why,5)} {n:NULL}"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	v["ma"] = map[string]any{"k": []int32{1000}}
	_, err := a.Decode(avroMarshal(t, schema2, v), c)
	if err == nil || !strings.Contains(err.Error(), `column ma (Map(String, Array(Int8))): map value of key "k": value 1000 out of range`) {
		t.Errorf("error %v", err)
	}
}

func TestAvroTuple(t *testing.T) {
	rec := `{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`
	schema := avroRecord(`t:`+rec, `o:["null","T"]`, `arr:{"type":"array","items":"T"}`)
	for _, tc := range []struct {
		cols []string
		want string
	}{
		{[]string{"t Tuple(Int32, String)", "o Tuple(Int64, String)", "arr Array(Tuple(Int8, String))"}, "(7,a) (0,) [(1,p),(2,q)]"},
		// By name: reordered, unknown fields skipped, missing elements
		// get their default.
		{[]string{"t Tuple(y String, x Int64)", "o Tuple(z Nullable(String), x Int32)", "arr Nested(x UInt8, w String)"}, "(a,7) (NULL,0) [(1,),(2,)]"},
	} {
		s := schemaOf(t, tc.cols...)
		a := avroNew(t, schema, s, Options{})
		c := newChunk(t, s)
		v := map[string]any{
			"t":   map[string]any{"x": int32(7), "y": "a"},
			"o":   nil,
			"arr": []map[string]any{{"x": int32(1), "y": "p"}, {"x": int32(2), "y": "q"}},
		}
		if _, err := a.Decode(avroMarshal(t, schema, v), c); err != nil {
			t.Fatalf("%v: %v", tc.cols, err)
		}
		if got := render(c.Cols[0], 0) + " " + render(c.Cols[1], 0) + " " + render(c.Cols[2], 0); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.cols, got, tc.want)
		}
		if err := checkConsistent(c); err != nil {
			t.Error(err)
		}
		// A value out of range names the element.
		before := dump(c)
		v["arr"] = []map[string]any{{"x": int32(300), "y": "p"}}
		_, err := a.Decode(avroMarshal(t, schema, v), c)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange || !strings.Contains(err.Error(), "tuple element") {
			t.Errorf("%v: error %v", tc.cols, err)
		}
		if after := dump(c); after != before {
			t.Errorf("failed Decode changed the chunk:\n%s\n%s", before, after)
		}
	}
}

func TestAvroCompositeCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		wtype, col, want string
	}{
		{`{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`, "Tuple(Int32)",
			"record T has 2 fields, Tuple(Int32) has 1 elements"},
		{`{"type":"record","name":"T","fields":[{"name":"x","type":"string"}]}`, "Tuple(Int32)",
			`field "x" -> tuple element 1: string cannot go into Int32`},
		{`{"type":"record","name":"T","fields":[{"name":"x","type":"string"}]}`, "Tuple(a String, x UInt8)",
			`field "x" -> tuple element "x": string cannot go into UInt8`},
		{`{"type":"record","name":"T","fields":[{"name":"x","type":"string"}]}`, "String", "a whole record cannot go into a column other than a Tuple"},
		{`"string"`, "Tuple(String)", "string cannot go into Tuple(String)"},
		{`{"type":"map","values":"long"}`, "Map(Float64, Int64)", "the key type must be String or an integer type, not Float64"},
		{`{"type":"map","values":"string"}`, "Map(String, Int64)", "string cannot go into Int64"},
		{`{"type":"array","items":"string"}`, "Map(String, String)", "array<string> cannot go into Map(String, String)"},
		{`{"type":"map","values":"string"}`, "String", "map<string> cannot go into String"},
	} {
		_, err := New(avroRecord("v:"+tc.wtype), schemaOf(t, "v "+tc.col), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: %v\nwant %s", tc.wtype, tc.col, err, tc.want)
		}
	}
}

// nestedSchema has an array of records n for the Nested structure n
// of nestedColumns, and an optional array u of the same records.
const nestedSchema = `{"type":"record","name":"R","fields":[
	{"name":"id","type":"long"},
	{"name":"n","type":{"type":"array","items":{"type":"record","name":"E","fields":[
		{"name":"a","type":"long"},
		{"name":"extra","type":{"type":"map","values":"double"}},
		{"name":"b","type":["null","string"]},
		{"name":"t","type":{"type":"record","name":"TT","fields":[{"name":"p","type":"int"},{"name":"q","type":"string"}]}}]}}},
	{"name":"u","type":["null",{"type":"array","items":"E"}]},
	{"name":"m","type":{"type":"array","items":"int"}}]}`

func nestedValue(n int) map[string]any {
	el := func(a int64, b any) map[string]any {
		return map[string]any{"a": a, "extra": map[string]any{"k": 1.5}, "b": b, "t": map[string]any{"p": int32(a), "q": "q"}}
	}
	v := map[string]any{"id": int64(n), "n": []map[string]any{el(1, "x"), el(2, nil)}, "u": nil, "m": []int32{7}}
	if n%2 == 1 {
		v["n"] = []map[string]any{}
		v["u"] = []map[string]any{el(int64(n), "u")}
	}
	return v
}

func TestAvroNestedArrays(t *testing.T) {
	s := schemaOf(t, append(nestedColumns[:len(nestedColumns):len(nestedColumns)], "u.a Array(Int64)", "u.b Array(String)")...)
	a := avroNew(t, nestedSchema, s, Options{})
	c := newChunk(t, s)
	for n := range 2 {
		if _, err := a.Decode(avroMarshal(t, nestedSchema, nestedValue(n)), c); err != nil {
			t.Fatal(err)
		}
	}
	want := `rows=2
id fixed(2): "0" "1"
n.a array(2,fixed(2)): "[1,2]" "[]"
n.b array(2,strings(2,1)): "[x,]" "[]"
n.c array(2,nullable(2,fixed(2))): "[NULL,NULL]" "[]"
n.t array(2,tuple(2,fixed(2),strings(2,2))): "[(1,q),(2,q)]" "[]"
m array(2,fixed(2)): "[7]" "[7]"
u.a array(2,fixed(1)): "[]" "[1]"
u.b array(2,strings(1,1)): "[]" "[u]"
`
	if got := dump(c); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := checkConsistent(c); err != nil {
		t.Fatal(err)
	}

	// An element out of range: the row is refused, naming the column.
	before := dump(c)
	v := nestedValue(0)
	v["n"] = []map[string]any{{"a": int64(-1), "extra": map[string]any{}, "b": nil, "t": map[string]any{"p": int32(0), "q": ""}}}
	_, err := a.Decode(avroMarshal(t, nestedSchema, v), c)
	var de *decode.Error
	if !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange || de.Column != "n.a" || de.Field != "n.a" {
		t.Errorf("error %v", err)
	}
	if after := dump(c); after != before {
		t.Errorf("failed Decode changed the chunk:\n%s\n%s", before, after)
	}

	// Columns of one Nested structure fed by different arrays must get
	// equal lengths.
	s2 := schemaOf(t, "x.a Array(Int64)", "x.b Array(Int32)")
	a2 := avroNew(t, nestedSchema, s2, Options{Fields: []string{"n.a", "m"}})
	c2 := newChunk(t, s2)
	if _, err := a2.Decode(avroMarshal(t, nestedSchema, nestedValue(0)), c2); !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange ||
		de.Column != "x.b" || !strings.Contains(err.Error(), "array of 1 elements, but column x.a has 2: the arrays of Nested x must have equal lengths") {
		t.Errorf("unequal lengths: %v", err)
	}
	if c2.Rows != 0 || c2.Cols[0].Len() != 0 {
		t.Errorf("unequal lengths left %d rows", c2.Rows)
	}
}

func TestAvroNestedCompile(t *testing.T) {
	for _, tc := range []struct {
		cols []string
		want string
	}{
		{[]string{"n.a UInt32"}, `field "n.a" (array<record E>) -> column n.a (UInt32): field "n" is array<record E>: the columns its records' fields feed must be Arrays`},
		{[]string{"n.b Array(UInt8)"}, `field "n.b" ([null, string]) -> column n.b (Array(UInt8)): string cannot go into UInt8`},
		{[]string{"n.t Array(String)"}, `a whole record cannot go into a column other than a Tuple`},
		{[]string{"n Array(String)", "n.a Array(Int64)"}, `field "n" (array<record E>) -> column n (Array(String)): record E cannot go into String`},
		{[]string{"m.x Array(Int64)"}, `field "m" is array<int>, not a record or an array of records`},
	} {
		_, err := New(nestedSchema, schemaOf(t, tc.cols...), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v\nwant %s", tc.cols, err, tc.want)
		}
	}
	// An array of records inside the records of the array.
	inner := `{"type":"record","name":"R","fields":[{"name":"n","type":{"type":"array","items":{"type":"record","name":"E","fields":[
		{"name":"a","type":"long"},{"name":"sub","type":{"type":"array","items":{"type":"record","name":"S","fields":[{"name":"z","type":"long"}]}}}]}}}]}`
	_, err := New(inner, schemaOf(t, "n.a Array(Int64)", "n.sub.z Array(Int64)"), Options{})
	if err == nil || !strings.Contains(err.Error(), `field "sub" is an array of records inside the records of an array`) &&
		!strings.Contains(err.Error(), `field "n.sub" is an array of records inside the records of an array`) {
		t.Errorf("nested arrays: %v", err)
	}

	// validate_schema full: a column of the Nested structure that no field
	// of the records fills is listed.
	s := schemaOf(t, append(nestedColumns[:len(nestedColumns):len(nestedColumns)], "u.a Array(Int64)", "u.b Array(String)")...)
	_, err = New(nestedSchema, s, Options{Validate: ValidateFull})
	if err == nil || !strings.Contains(err.Error(), `column n.c (Array(Nullable(Int8))) is filled by no field of the records of "n"`) ||
		strings.Contains(err.Error(), "column n.a") {
		t.Errorf("full: %v", err)
	}
	if _, err := New(nestedSchema, s, Options{Validate: ValidateNames}); err != nil {
		t.Errorf("names: %v", err)
	}
}

// TestAvroCompositeNoAllocs: maps, tuples and Nested arrays of records
// are decoded without allocating once the chunk's buffers have grown.
func TestAvroCompositeNoAllocs(t *testing.T) {
	s := schemaOf(t, append(nestedColumns[:len(nestedColumns):len(nestedColumns)], "u.a Array(Int64)", "u.b Array(String)")...)
	a := avroNew(t, nestedSchema, s, Options{})
	datums := [][]byte{avroMarshal(t, nestedSchema, nestedValue(0)), avroMarshal(t, nestedSchema, nestedValue(1))}
	schema2 := avroRecord(`m:{"type":"map","values":"long"}`, `t:{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`)
	s2 := schemaOf(t, "m Map(UInt16, Int64)", "t Tuple(y String, x Int32)")
	a2 := avroNew(t, schema2, s2, Options{})
	d2 := append(mapDatum("80", int64(1), "443", int64(2)), avroStr(avroLong(nil, 5), "s")...)
	c, c2 := newChunk(t, s), newChunk(t, s2)
	n := 0
	allocs := testing.AllocsPerRun(200, func() {
		if c.Rows >= 64 {
			c.Reset()
			c2.Reset()
		}
		if _, err := a.Decode(datums[n%2], c); err != nil {
			t.Fatal(err)
		}
		if _, err := a2.Decode(d2, c2); err != nil {
			t.Fatal(err)
		}
		n++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per record, want 0", allocs)
	}
}

// TestAvroRecordTwice: a record goes into a Tuple column while its fields
// feed columns of their own; an array of records into an Array(Tuple)
// column while its records' fields feed a Nested structure.
func TestAvroRecordTwice(t *testing.T) {
	s := schemaOf(t, "id Int64", "n Array(Tuple(a Int64, b Nullable(String)))", "n.a Array(Int64)", "tt Tuple(p Int32, q String)", "q String", "u Nested(a Int64)")
	// Fields inside the records of n feed only Array columns.
	_, err := New(nestedSchema, s, Options{Fields: []string{"id", "n", "n.a", "n.t", "n.t.q", "u"}})
	if err == nil || !strings.Contains(err.Error(), `column tt (Tuple(p Int32, q String)): field "n" is array<record E>: the columns its records' fields feed must be Arrays`) {
		t.Errorf("non-Array columns under n: %v", err)
	}
	a := avroNew(t, nestedSchema, s, Options{Fields: []string{"id", "n", "n.a", "", "", "u"}})
	c := newChunk(t, s)
	for n := range 2 {
		if _, err := a.Decode(avroMarshal(t, nestedSchema, nestedValue(n)), c); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := render(c.Cols[1], 0)+" "+render(c.Cols[2], 0)+" "+render(c.Cols[5], 0)+" "+render(c.Cols[5], 1), "[(1,x),(2,NULL)] [1,2] [] [(1)]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}

	rec := `{"type":"record","name":"R","fields":[{"name":"o","type":["null",{"type":"record","name":"O","fields":[{"name":"p","type":"int"},{"name":"q","type":"string"}]}]},{"name":"z","type":"long"}]}`
	s2 := schemaOf(t, "o Tuple(p Int32, q String)", "oq String", "z Int64")
	a2 := avroNew(t, rec, s2, Options{Fields: []string{"o", "o.q", "z"}})
	c2 := newChunk(t, s2)
	for _, v := range []map[string]any{{"o": map[string]any{"O": map[string]any{"p": int32(3), "q": "qq"}}, "z": int64(9)}, {"o": nil, "z": int64(8)}} {
		if _, err := a2.Decode(avroMarshal(t, rec, v), c2); err != nil {
			t.Fatal(err)
		}
	}
	want := "rows=2\no tuple(2,fixed(2),strings(2,2)): \"(3,qq)\" \"(0,)\"\noq strings(2,2): \"qq\" \"\"\nz fixed(2): \"9\" \"8\"\n"
	if got := dump(c2); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkAvroComposite decodes a record with an array of 2 records
// feeding a Nested structure (a map and a record skipped or into a tuple
// in each), plus a map into a Map column and a record into a Tuple.
func BenchmarkAvroComposite(b *testing.B) {
	s := schemaOf(b, append(nestedColumns[:len(nestedColumns):len(nestedColumns)], "u.a Array(Int64)", "u.b Array(String)")...)
	a := avroNew(b, nestedSchema, s, Options{})
	datum := avroMarshal(b, nestedSchema, nestedValue(0))
	schema2 := avroRecord(`m:{"type":"map","values":"long"}`, `t:{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`)
	a2 := avroNew(b, schema2, schemaOf(b, "m Map(UInt16, Int64)", "t Tuple(y String, x Int32)"), Options{})
	d2 := append(mapDatum("80", int64(1), "443", int64(2)), avroStr(avroLong(nil, 5), "s")...)
	c, c2 := newChunk(b, s), newChunk(b, a2.schema)
	b.SetBytes(int64(len(datum) + len(d2)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1024 == 0 {
			c.Reset()
			c2.Reset()
		}
		if _, err := a.Decode(datum, c); err != nil {
			b.Fatal(err)
		}
		if _, err := a2.Decode(d2, c2); err != nil {
			b.Fatal(err)
		}
	}
}
