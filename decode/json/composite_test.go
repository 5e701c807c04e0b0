package json

import (
	"errors"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// compositeCases are JSON conversions into Map, Tuple and Nested(...).
var compositeCases = []convCase{
	// Map from an object, keys converted to K, entries in order.
	ok("Map(String, UInt64)", `{"a":1,"b":"2"}`, "{a:1,b:2}"),
	ok("Map(String, UInt64)", `{}`, "{}"),
	ok("Map(String, UInt64)", `null`, "{}"),
	ok("Map(String, UInt64)", ``, "{}"),
	ok("Map(String, UInt64)", `{"a":null}`, "{a:0}"),
	ok("Map(String, UInt64)", `{"a":1,"a":2}`, "{a:1,a:2}"),
	ok("Map(String, UInt64)", `{"\u00e9":1}`, "{é:1}"),
	fail("Map(String, UInt64)", `[1]`, decode.ReasonWrongType),
	fail("Map(String, UInt64)", `"x"`, decode.ReasonWrongType),
	fail("Map(String, UInt64)", `{"a":-1}`, decode.ReasonOutOfRange),
	fail("Map(String, UInt64)", `{"a":1,"b":"x"}`, decode.ReasonWrongType),
	ok("Map(LowCardinality(String), Nullable(String))", `{"x":null,"y":"z"}`, "{x:NULL,y:z}"),
	ok("Map(Int8, String)", `{"1":"a","-128":"b","1e2":"c"}`, "{1:a,-128:b,100:c}"),
	fail("Map(Int8, String)", `{"128":"a"}`, decode.ReasonOutOfRange),
	fail("Map(Int8, String)", `{"x":"a"}`, decode.ReasonWrongType),
	fail("Map(Int8, String)", `{"1.5":"a"}`, decode.ReasonWrongType),
	ok("Map(UInt64, Array(Int32))", `{"18446744073709551615":[1,2],"0":[]}`, "{18446744073709551615:[1,2],0:[]}"),
	fail("Map(UInt64, Array(Int32))", `{"18446744073709551616":[]}`, decode.ReasonOutOfRange),
	ok("Map(String, Map(String, Int8))", `{"o":{"i":-2},"p":{}}`, "{o:{i:-2},p:{}}"),
	ok("Map(Date, UInt8)", `{"2026-01-02":1}`, "{2026-01-02:1}"),
	fail("Map(FixedString(2), UInt8)", `{"abc":1}`, decode.ReasonOutOfRange),
	ok("Map(LowCardinality(FixedString(2)), UInt8)", `{"ab":1}`, "{ab:1}"),
	ok("Map(String, Tuple(Int8, String))", `{"k":[1,"x"]}`, "{k:(1,x)}"),
	fail("Map(String, Tuple(Int8, String))", `{"k":[1000,"x"]}`, decode.ReasonOutOfRange),
	ok("Array(Map(String, Int8))", `[{"a":1},{},null]`, "[{a:1},{},{}]"),

	// Tuple from an array, in order; a named tuple also from an object.
	ok("Tuple(Int32, String)", `[1,"a"]`, "(1,a)"),
	ok("Tuple(Int32, String)", `[null,null]`, "(0,)"),
	ok("Tuple(Int32, String)", `null`, "(0,)"),
	ok("Tuple(Int32, String)", ``, "(0,)"),
	fail("Tuple(Int32, String)", `[1]`, decode.ReasonWrongType),
	fail("Tuple(Int32, String)", `[1,"a",3]`, decode.ReasonWrongType),
	fail("Tuple(Int32, String)", `{"a":1}`, decode.ReasonWrongType),
	fail("Tuple(Int32, String)", `"x"`, decode.ReasonWrongType),
	fail("Tuple(Int32, String)", `[3000000000,"a"]`, decode.ReasonOutOfRange),
	ok("Tuple(a Int32, b Nullable(String))", `{"a":1,"b":"x","c":9}`, "(1,x)"),
	ok("Tuple(a Int32, b Nullable(String))", `{"b":"x"}`, "(0,x)"),
	ok("Tuple(a Int32, b Nullable(String))", `{}`, "(0,NULL)"),
	ok("Tuple(a Int32, b Nullable(String))", `[2,null]`, "(2,NULL)"),
	ok("Tuple(a Int32, b Nullable(String))", `null`, "(0,NULL)"),
	fail("Tuple(a Int32, b Nullable(String))", `{"a":"x"}`, decode.ReasonWrongType),
	ok("Tuple(Date, UUID, Enum8('x' = 1, 'y' = 2), Decimal(9, 2))", `null`, "(1970-01-01,00000000-0000-0000-0000-000000000000,x,0)"),
	ok("Tuple(Date, UUID, Enum8('x' = 1, 'y' = 2), Decimal(9, 2))", `["2026-11-29","123e4567-e89b-12d3-a456-426614174000","y","1.5"]`,
		"(2026-11-29,123e4567-e89b-12d3-a456-426614174000,y,1.5)"),
	ok("Tuple(Int8, Map(String, Int8), Array(String), Tuple(UInt8, String))", `[1,{"k":2},["a"],[3,"z"]]`, "(1,{k:2},[a],(3,z))"),
	ok("Array(Tuple(Int8, String))", `[[1,"a"],[2,"b"],null]`, "[(1,a),(2,b),(0,)]"),
	fail("Array(Tuple(Int8, String))", `[[1,"a"],[2]]`, decode.ReasonWrongType),

	// Nested(...) (flatten_nested = 0): Array(Tuple(named)) from objects.
	ok("Nested(a UInt32, b String)", `[{"a":1,"b":"x"},{"b":"y"}]`, "[(1,x),(0,y)]"),
	fail("Nested(a UInt32, b String)", `[{"a":-1}]`, decode.ReasonOutOfRange),
}

func TestCompositeConversions(t *testing.T) {
	for _, tc := range compositeCases {
		t.Run(tc.typ+"/"+tc.json, func(t *testing.T) {
			s := schemaOf(t, "a String", "v "+tc.typ)
			d, err := New(s, Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			c := newChunk(t, s)
			if _, err := d.Decode([]byte(`{"a":"first","v":null}`), c); err != nil {
				t.Fatalf("decode first row: %v", err)
			}
			before := dump(c)
			rec := `{"a":"second"}`
			if tc.json != "" {
				rec = `{"a":"second","v":` + tc.json + `}`
			}
			rows, err := d.Decode([]byte(rec), c)
			if cerr := checkConsistent(c); cerr != nil {
				t.Fatalf("after %s: %v", rec, cerr)
			}
			if tc.reason != "" {
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != tc.reason || rows != 0 || c.Rows != 1 {
					t.Fatalf("Decode(%s) = %d, %v; want reason %s", rec, rows, err, tc.reason)
				}
				if after := dump(c); after != before {
					t.Fatalf("failed Decode(%s) changed the chunk:\n%s\n%s", rec, before, after)
				}
				return
			}
			if err != nil || rows != 1 {
				t.Fatalf("Decode(%s) = %d, %v", rec, rows, err)
			}
			if got := render(c.Cols[1], 1); got != tc.want {
				t.Errorf("Decode(%s): got %q, want %q", rec, got, tc.want)
			}
		})
	}
}

func TestCompositeErrorMessages(t *testing.T) {
	for _, tc := range []struct{ typ, json, want string }{
		{"Tuple(Int8, String)", `[1000,"x"]`, `field "v" -> column v (Tuple(Int8, String)): tuple element 1: value 1000 out of range`},
		{"Tuple(a Int8, b UInt8)", `{"b":-1}`, `field "v" -> column v (Tuple(a Int8, b UInt8)): tuple element "b": value -1 out of range`},
		{"Tuple(Int8, String)", `[1]`, `field "v" -> column v (Tuple(Int8, String)): value [1] has 1 elements, want 2`},
		{"Map(Int16, String)", `{"x":"a"}`, `field "v" -> column v (Map(Int16, String)): map key "x": value "x" is not a number`},
		{"Map(String, Int16)", `{"k":true}`, `field "v" -> column v (Map(String, Int16)): map value of key "k": value true is a boolean, want a number`},
	} {
		s := schemaOf(t, "v "+tc.typ)
		d, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Decode([]byte(`{"v":`+tc.json+`}`), newChunk(t, s))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %s: error %v\nwant %s", tc.typ, tc.json, err, tc.want)
		}
	}
	for _, typ := range []string{"Map(Array(String), UInt8)", "Map(Nullable(String), UInt8)"} {
		s := &chunk.Schema{Names: []string{"v"}}
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		s.Types = append(s.Types, ty)
		if _, err := New(s, Options{}); err == nil {
			t.Errorf("New with a %s column succeeded", typ)
		}
	}
}

// nestedColumns is a table with a Nested structure n, as the server
// describes it: one Array column per element.
var nestedColumns = []string{"id UInt64", "n.a Array(UInt32)", "n.b Array(String)", "n.c Array(Nullable(Int8))", "n.t Array(Tuple(Int8, String))", "m Array(UInt8)"}

func TestJSONNested(t *testing.T) {
	s := schemaOf(t, nestedColumns...)
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	for _, rec := range []string{
		`{"id":1,"n":[{"a":1,"b":"x","c":null,"t":[1,"p"],"zz":{}},{"a":2},null],"m":[7]}`,
		`{"id":2}`,
		`{"id":3,"n":[]}`,
		`{"id":4,"n":null}`,
		// The flattened form: one array per column.
		`{"id":5,"n.a":[1,2],"n.b":["x","y"],"n.c":[1,null],"n.t":[[1,"a"],[2,"b"]]}`,
		// An object n holding the arrays.
		`{"id":6,"n":{"a":[3],"b":["z"],"c":[null],"t":[null]}}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("Decode(%s): %v", rec, err)
		}
	}
	want := `rows=6
id fixed(6): "1" "2" "3" "4" "5" "6"
n.a array(6,fixed(6)): "[1,2,0]" "[]" "[]" "[]" "[1,2]" "[3]"
n.b array(6,strings(6,4)): "[x,,]" "[]" "[]" "[]" "[x,y]" "[z]"
n.c array(6,nullable(6,fixed(6))): "[NULL,NULL,NULL]" "[]" "[]" "[]" "[1,NULL]" "[NULL]"
n.t array(6,tuple(6,fixed(6),strings(6,3))): "[(1,p),(0,),(0,)]" "[]" "[]" "[]" "[(1,a),(2,b)]" "[(0,)]"
m array(6,fixed(1)): "[7]" "[]" "[]" "[]" "[]" "[]"
`
	if got := dump(c); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	before := dump(c)
	for _, tc := range []struct {
		rec    string
		reason decode.Reason
		col    string
		msg    string
	}{
		{`{"n":[{"a":"x"}]}`, decode.ReasonWrongType, "n.a", `element 0 of the array: value "x" is not a number`},
		{`{"n":[{"a":1},{"a":-1}]}`, decode.ReasonOutOfRange, "n.a", `element 1 of the array: value -1 out of range`},
		{`{"n":[1]}`, decode.ReasonWrongType, "n.a", `element 0 of the array: value 1 is a number, want an object`},
		{`{"n.a":[1],"n.b":[]}`, decode.ReasonOutOfRange, "n.b", "array of 0 elements, but column n.a has 1: the arrays of Nested n must have equal lengths"},
		{`{"n":[{"a":1}],"n.b":["x","y"]}`, decode.ReasonOutOfRange, "n.b", "array of 2 elements, but column n.a has 1"},
	} {
		_, err := d.Decode([]byte(tc.rec), c)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != tc.reason || de.Column != tc.col || !strings.Contains(de.Error(), tc.msg) {
			t.Errorf("Decode(%s) = %v; want %s in column %s: %s", tc.rec, err, tc.reason, tc.col, tc.msg)
		}
		if after := dump(c); after != before {
			t.Fatalf("failed Decode(%s) changed the chunk:\n%s\n%s", tc.rec, before, after)
		}
	}

	// A mapping of the Nested columns to another array of objects.
	d2, err := New(s, Options{Fields: []string{"id", "items.a", "items.b", "items.c", "items.t", ""}})
	if err != nil {
		t.Fatal(err)
	}
	c2 := newChunk(t, s)
	if _, err := d2.Decode([]byte(`{"id":7,"items":[{"b":"q","c":5}]}`), c2); err != nil {
		t.Fatal(err)
	}
	if got, want := render(c2.Cols[1], 0)+render(c2.Cols[2], 0)+render(c2.Cols[3], 0)+render(c2.Cols[4], 0), "[0][q][5][(0,)]"; got != want {
		t.Errorf("mapped: got %s, want %s", got, want)
	}
}

// TestCompositeNoAllocs: Map, Tuple and Nested values are decoded without
// allocating once the chunk's buffers have grown.
func TestCompositeNoAllocs(t *testing.T) {
	s := schemaOf(t, append(nestedColumns[:len(nestedColumns):len(nestedColumns)],
		"mp Map(String, Int64)", "mi Map(UInt16, Array(String))", "tu Tuple(Int8, String)", "nt Tuple(a UInt8, b Nullable(String))")...)
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte(`{"id":1,"n":[{"a":1,"b":"x","t":[1,"p"]},{"a":2,"c":3}],"m":[7],"mp":{"a":1,"b":2},` +
		`"mi":{"80":["x"],"443":[]},"tu":[5,"s"],"nt":{"b":"z","a":9}}`)
	c := newChunk(t, s)
	allocs := testing.AllocsPerRun(200, func() {
		if c.Rows >= 64 {
			c.Reset()
		}
		if _, err := d.Decode(rec, c); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per record, want 0", allocs)
	}
}

// BenchmarkJSONComposite decodes a record with a Nested structure of 3
// elements, a Map of 2 entries and two tuples.
func BenchmarkJSONComposite(b *testing.B) {
	s := schemaOf(b, append(nestedColumns[:len(nestedColumns):len(nestedColumns)],
		"mp Map(String, Int64)", "tu Tuple(Int8, String)", "nt Tuple(a UInt8, b Nullable(String))")...)
	d, err := New(s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	rec := []byte(`{"id":1,"n":[{"a":1,"b":"x","t":[1,"p"]},{"a":2,"c":3},{"a":3,"b":"y","c":null}],"m":[7],` +
		`"mp":{"a":1,"b":2},"tu":[5,"s"],"nt":{"b":"z","a":9}}`)
	c := newChunk(b, s)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1024 == 0 {
			c.Reset()
		}
		if _, err := d.Decode(rec, c); err != nil {
			b.Fatal(err)
		}
	}
}
