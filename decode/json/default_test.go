package json

import (
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	avrodec "github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/sink/clickhouse"
	havro "github.com/hamba/avro/v2"
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

// TestTableDefaultsJSON: a missing field takes the column's DEFAULT; a
// null does too, except into a Nullable column, where it stays NULL.
func TestTableDefaultsJSON(t *testing.T) {
	s := setDefaults(t, schemaOf(t, defaultColumns...), defaultValues)
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	for _, rec := range []string{
		`{"id":1}`,
		`{"id":2,"a":null,"s":null,"d":null,"f":null,"ns":null,"arr":null,"lc":null,"u":null,"e":null,"dec":null,"tu":null,"nn":null}`,
		`{"id":3,"a":7,"s":"v","d":"2021-03-04","f":2,"ns":"y","arr":[9],"lc":"m","u":"ffffffff-89ab-cdef-0123-456789abcdef","e":"p","dec":"0.5","tu":[2,"w"],"nn":5}`,
		`{"id":4,"arr":[],"tu":[0,""],"s":""}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
	}
	checkRows(t, "json", c, []string{
		"id=1 " + allDefaults,
		"id=2 " + strings.Replace(allDefaults, "ns=x", "ns=NULL", 1),
		"id=3 a=7 s=v d=2021-03-04 f=2 ns=y arr=[9] lc=m u=ffffffff-89ab-cdef-0123-456789abcdef e=p dec=0.5 tu=(2,w) nn=5",
		"id=4 " + strings.NewReplacer("arr=[1,2]", "arr=[]", "tu=(1,z)", "tu=(0,)", "s=unknown", "s=").Replace(allDefaults),
	})
}

// TestTableDefaultsFastPath: the one-pass path and the fastjson path give
// the same defaults.
func TestTableDefaultsFastPath(t *testing.T) {
	cols := []string{"id UInt64", "a Int32", "s String", "ns Nullable(String)", "f Float64", "lc LowCardinality(String)", "t DateTime"}
	recs := []string{`{"id":1}`, `{"id":2,"a":null,"s":null,"ns":null,"f":null,"lc":null,"t":null}`, `{"id":3,"a":1,"ns":"y","t":9}`}
	want := []string{
		"id=1 a=42 s=unknown ns=x f=-1.5 lc=lc t=7",
		"id=2 a=42 s=unknown ns=NULL f=-1.5 lc=lc t=7",
		"id=3 a=1 s=unknown ns=y f=-1.5 lc=lc t=9",
	}
	for _, noFast := range []bool{false, true} {
		s := setDefaults(t, schemaOf(t, cols...), map[string]any{"a": int32(42), "s": "unknown", "ns": strp("x"), "f": -1.5, "lc": "lc", "t": time.Unix(7, 0)})
		d, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.fast == nil {
			t.Fatal("no fast path")
		}
		d.noFast = noFast
		c := newChunk(t, s)
		for _, rec := range recs {
			if _, err := d.Decode([]byte(rec), c); err != nil {
				t.Fatalf("%s: %v", rec, err)
			}
		}
		checkRows(t, map[bool]string{false: "fast", true: "fastjson"}[noFast], c, want)
	}
}

// TestTableDefaultsNoAllocs: with DEFAULTs set on every column, records
// lacking fields are decoded without allocating (JSON fast path, fastjson
// path, Avro), once the chunk's buffers have grown.
func TestTableDefaultsNoAllocs(t *testing.T) {
	s := setDefaults(t, schemaOf(t, bench12Columns...), map[string]any{
		"id": uint64(7), "ts": time.Unix(1e9, 0), "user_id": uint32(3), "session": "01234567-89ab-cdef-0123-456789abcdef",
		"kind": "k", "amount": 1.5, "currency": "EUR", "country": strp("NO"), "referrer": (*string)(nil),
		"tags": []string{"a", "b"}, "ok": uint8(1), "latency": float32(0.5),
	})
	fast := setDefaults(t, schemaOf(t, "id UInt64", "a Int32", "s String", "ns Nullable(String)", "f Float64"),
		map[string]any{"a": int32(42), "s": "unknown", "ns": strp("x"), "f": -1.5})
	jd, err := New(s, Options{Fields: bench12Fields})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := New(fast, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fdSlow, err := New(fast, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fdSlow.noFast = true
	as := setDefaults(t, schemaOf(t, avro12Columns...), map[string]any{
		"user_id": uint32(3), "tags": []string{"x"}, "session": "01234567-89ab-cdef-0123-456789abcdef", "country": strp("NO")})
	writer := avroRecord(`id:"long"`, `kind:"string"`, `country:["null","string"]`)
	ad, err := avrodec.New(writer, as, avrodec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	datums := [][]byte{
		avroMarshal(t, writer, map[string]any{"id": int64(1), "kind": "x", "country": nil}),
		avroMarshal(t, writer, map[string]any{"id": int64(2), "kind": "y", "country": map[string]any{"string": "DE"}}),
	}
	jrecs := [][]byte{[]byte(`{"id":1,"kind":"a","country":null}`), []byte(`{"id":2,"tags":["q"],"referrer":"r"}`), record12(5)}
	frecs := [][]byte{[]byte(`{"id":1}`), []byte(`{"id":2,"ns":null,"a":3}`)}
	cj, cf, cs, ca := newChunk(t, s), newChunk(t, fast), newChunk(t, fast), newChunk(t, as)
	steps := []struct {
		d    decode.Decoder
		recs [][]byte
		c    *chunk.Chunk
	}{{jd, jrecs, cj}, {fd, frecs, cf}, {fdSlow, frecs, cs}, {ad, datums, ca}}
	n := 0
	round := func() {
		for i := range steps {
			st := &steps[i]
			if st.c.Rows >= 64 {
				st.c.Reset()
			}
			if _, err := st.d.Decode(st.recs[n%len(st.recs)], st.c); err != nil {
				t.Fatal(err)
			}
		}
		n++
	}
	for range 128 {
		round() // the chunks' buffers grow
	}
	if allocs := testing.AllocsPerRun(300, round); allocs != 0 {
		t.Errorf("%.1f allocations per round of records, want 0", allocs)
	}
	for i := range steps {
		st := &steps[i]
		st.c.Reset()
		if _, err := st.d.Decode(st.recs[0], st.c); err != nil {
			t.Fatal(err)
		}
	}
	if got := render(cj.Cols[9], 0) + render(cj.Cols[7], 0) + render(ca.Cols[2], 0) + render(ca.Cols[9], 0) + render(cf.Cols[1], 0) + render(cs.Cols[3], 0); got != "[a,b]NULL3[x]42x" {
		t.Errorf("defaults: %s", got)
	}
}

// avro12Columns are the columns of the Avro decoder's 12-field benchmark
// (decode/avro).
var avro12Columns = []string{
	"id UInt64", "ts DateTime", "user_id UInt32", "session UUID", "kind LowCardinality(String)",
	"amount Float64", "currency FixedString(3)", "country Nullable(String)",
	"parent_id Nullable(Int64)", "tags Array(String)", "ok UInt8", "latency Float32",
}

// avroRecord is the schema of a record R with the given fields, each
// "name": JSON type.
func avroRecord(fields ...string) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		name, typ, _ := strings.Cut(f, ":")
		parts = append(parts, `{"name":"`+name+`","type":`+typ+`}`)
	}
	return `{"type":"record","name":"R","fields":[` + strings.Join(parts, ",") + `]}`
}

func avroMarshal(t testing.TB, schema string, v any) []byte {
	t.Helper()
	s, err := havro.ParseWithCache(schema, "", &havro.SchemaCache{})
	if err != nil {
		t.Fatalf("parse %s: %v", schema, err)
	}
	b, err := havro.Marshal(s, v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return b
}
