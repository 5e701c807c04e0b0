package json

import (
	"github.com/etl-project/etl/decode"

	"errors"
	"testing"

	"github.com/etl-project/etl/gen"
)

// fuzzColumns cover every column type the decoder fills. Two columns read
// field "a" so one value goes through two setters.
var fuzzColumns = []string{
	"a Int8", "a2 UInt64", "b Int64", "c Float32", "d Float64", "e Bool", "f String",
	"g FixedString(4)", "h UUID", "i Decimal(6, 2)", "j Enum8('x' = 1, 'y' = -2)",
	"k Enum16('big' = 1000)", "l DateTime", "m Date", "n Nullable(Int16)",
	"o Array(Nullable(String))", "p Array(Array(UInt8))", "q LowCardinality(Nullable(String))",
	"r Array(Date)", "s Nullable(DateTime)",
	"t Tuple(Int8, Nullable(String))", "u Map(String, Int16)", "v Tuple(a UInt8, b Array(String))",
	"w.a Array(Int32)", "w.b Array(String)", "x Map(UInt8, Tuple(Int8, Map(String, UInt8)))",
}

var fuzzFields = []string{
	"a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
	"t", "u", "v", "w.a", "w.b", "x",
}

func FuzzJSON(f *testing.F) {
	// Every conversion case's value, under a different field each.
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s"}
	for i, tc := range convCases {
		if tc.json != "" {
			f.Add([]byte(`{"` + names[i%len(names)] + `":` + tc.json + `}`))
		}
	}
	seeds := []string{
		`{}`, `{"a":1,"b":-5,"c":1.5,"d":"2.5","e":true,"f":{"z":[1]},"g":"abcd",` +
			`"h":"123e4567-e89b-12d3-a456-426614174000","i":"1234.56","j":"y","k":1000,` +
			`"l":"2026-11-29 10:00:00","m":1795946400000,"n":null,"o":[null,"x"],"p":[[1],[],[2,3]],` +
			`"q":"lc","r":["2026-01-01",0],"s":"2026-11-29T10:00:00+01:00"}`,
		`{"p":[[1],[2,300]]}`, `{"o":[1,{"a":[]}],"p":[[1],"x"]}`, `{"a":"\u0031"}`,
		`{"f":"\ud800"}`, `{"l":1e400}`, `{"i":-0.001e-3}`, `{"a":true,"a":false}`, `[]`, `{"a":`,
		// Tuples, maps and a Nested structure w.
		`{"t":[1,"x"],"u":{"k":1,"k":-2},"v":{"a":3,"b":["y"]},"w":[{"a":1,"b":"p"},{"b":"q"},null],"x":{"7":[1,{"i":2}]}}`,
		`{"t":[1],"u":{"k":"x"},"v":[1,2],"w":[1],"x":{"256":null}}`, `{"t":null,"u":[],"v":{},"w":{"a":[1],"b":[]}}`,
		`{"w.a":[1,2],"w.b":["x","y"]}`, `{"w.a":[1,2],"w.b":["x"]}`, `{"w":[{"a":"1e400"}],"x":{"1":[1,{"\u0000":255}]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for n := range uint64(5) {
		f.Add(gen.Make(1, n).AppendJSON(nil))
	}

	s := schemaOf(f, fuzzColumns...)
	d, err := New(s, Options{Fields: fuzzFields, MaxRecordBytes: 4096})
	if err != nil {
		f.Fatal(err)
	}
	good := []byte(`{"a":1,"o":["x",null],"p":[[1,2]],"s":5,"t":[2,null],"u":{"a":1},"w":[{"a":3}],"x":{"9":[1,{}]}}`)
	f.Fuzz(func(t *testing.T, value []byte) {
		c := newChunk(t, s)
		if _, err := d.Decode(good, c); err != nil {
			t.Fatalf("good record: %v", err)
		}
		before := dump(c)
		rows, err := d.Decode(value, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Fatalf("Decode(%q) = %d, %v: %v", value, rows, err, cerr)
		}
		if err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%q): error %T %v is not *decode.Error", value, err, err)
			}
			switch de.Reason {
			case decode.ReasonCorrupt, decode.ReasonWrongType, decode.ReasonOutOfRange, decode.ReasonTooLarge:
			default:
				t.Fatalf("Decode(%q): unknown reason %q", value, de.Reason)
			}
			_ = de.Error()
			if rows != 0 || c.Rows != 1 {
				t.Fatalf("Decode(%q) failed but returned %d rows, chunk has %d", value, rows, c.Rows)
			}
			if after := dump(c); after != before {
				t.Fatalf("Decode(%q) failed and changed the chunk:\n%s\n%s", value, before, after)
			}
			return
		}
		if rows != 1 || c.Rows != 2 {
			t.Fatalf("Decode(%q) = %d rows, chunk has %d", value, rows, c.Rows)
		}
		// Decoding the same value again gives the same row.
		if _, err := d.Decode(value, c); err != nil {
			t.Fatalf("second Decode(%q): %v", value, err)
		}
		for i, col := range c.Cols {
			if a, b := render(col, 1), render(col, 2); a != b {
				t.Fatalf("Decode(%q) column %s: %q then %q", value, s.Names[i], a, b)
			}
		}
	})
}
