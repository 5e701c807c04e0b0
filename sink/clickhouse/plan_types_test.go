package clickhouse

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	avrodec "github.com/etl-project/etl/decode/avro"
	jsondec "github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/internal/testenv"
)

// compositeCols is a table with Map, Tuple and Nested columns as DESCRIBE
// lists them: a Nested structure n is one Array column per element.
var compositeCols = []ColumnInfo{
	{Name: "id", Type: "UInt64"},
	{Name: "m", Type: "Map(LowCardinality(String), Array(Nullable(Int8)))"},
	{Name: "t", Type: "Tuple(Int32, String)"},
	{Name: "nt", Type: "Tuple(a Int64, b Nullable(String))"},
	{Name: "n.a", Type: "Array(UInt32)"},
	{Name: "n.b", Type: "Array(String)"},
	{Name: "n.c", Type: "Array(Int64)", DefaultKind: "MATERIALIZED", DefaultExpr: "arrayMap(x -> x * 2, n.a)"},
	{Name: "flat", Type: "Nested(x UInt8, y String)"},
	{Name: "dotted", Type: "String"},
	{Name: "a.b", Type: "UInt8"},
}

func TestPlanCompositeTypes(t *testing.T) {
	tg, err := Plan("default", "c", compositeCols, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `default`.`c` (`id`, `m`, `t`, `nt`, `n.a`, `n.b`, `flat`, `dotted`, `a.b`)"; tg.Query != want {
		t.Errorf("query %s\nwant %s", tg.Query, want)
	}
	if got := strings.Join(tg.Fields, ","); got != "id,m,t,nt,n.a,n.b,flat,dotted,a.b" {
		t.Errorf("fields %s", got)
	}
	kinds := []chunk.Kind{chunk.KindUInt64, chunk.KindMap, chunk.KindTuple, chunk.KindTuple, chunk.KindArray, chunk.KindArray, chunk.KindArray, chunk.KindString, chunk.KindUInt8}
	for i, k := range kinds {
		if tg.Schema.Types[i].Kind != k {
			t.Errorf("column %s: kind %d, want %d", tg.Schema.Names[i], tg.Schema.Types[i].Kind, k)
		}
	}
	if _, err := chunk.New(tg.Schema); err != nil {
		t.Fatal(err)
	}

	// A mapping may name the Nested structure: each of its columns is fed
	// by the element field of the same name; a column's own mapping wins.
	for _, tc := range []struct {
		explicit map[string]string
		query    string
		fields   string
	}{
		{map[string]string{"id": "event_id", "n": "items"}, "(`id`, `m`, `t`, `nt`, `n.a`, `n.b`, `flat`, `dotted`, `a.b`)", "event_id,m,t,nt,items.a,items.b,flat,dotted,a.b"},
		{map[string]string{"n": "items", "n.b": "labels"}, "(`id`, `m`, `t`, `nt`, `n.a`, `n.b`, `flat`, `dotted`, `a.b`)", "id,m,t,nt,items.a,labels,flat,dotted,a.b"},
		{map[string]string{"a": "x"}, "", ""}, // a.b is no Array: a is not a Nested structure
	} {
		tg, err := Plan("default", "c", compositeCols, Mapping{Columns: tc.explicit, Exclude: nil})
		if tc.query == "" {
			if err == nil || !strings.Contains(err.Error(), "names column(s) the table lacks: a") {
				t.Errorf("%v: %v", tc.explicit, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.explicit, err)
		}
		if !strings.HasSuffix(tg.Query, tc.query) || strings.Join(tg.Fields, ",") != tc.fields {
			t.Errorf("%v: %s %v, want %s %s", tc.explicit, tg.Query, tg.Fields, tc.query, tc.fields)
		}
	}

	// Excluding the Nested structure excludes all of its columns.
	if tg, err := Plan("default", "c", compositeCols, Mapping{Exclude: []string{"n", "m"}}); err != nil || !strings.HasSuffix(tg.Query, "(`id`, `t`, `nt`, `flat`, `dotted`, `a.b`)") {
		t.Errorf("excluding n and m: %v %v", tg, err)
	}

	for _, bad := range []string{"Nullable(Tuple(Int8))", "Map(String)", "Tuple(a Int8, Int8)", "Map(String, Nullable(Array(Int8)))"} {
		_, err := Plan("default", "c", []ColumnInfo{{Name: "v", Type: bad}}, Mapping{})
		if err == nil || !strings.Contains(err.Error(), "column v ("+bad+")") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// compositeTable is created on the real server: Tuple, named Tuple and
// Nested columns in a MergeTree table (ClickHouse 18.16 has no Map; its
// encoding is covered by chunk's Native-bytes tests).
const compositeTable = `CREATE TABLE default.composite (
	id UInt64,
	t Tuple(Int32, String),
	nt Tuple(a Int64, b Nullable(String), c Array(String)),
	n Nested(a UInt32, b String, c Nullable(Int8), t Tuple(Int8, String)),
	deep Tuple(Int8, Tuple(UInt16, Array(Nullable(String))), Date, Decimal(9, 2)),
	tags Array(String)
) ENGINE = MergeTree ORDER BY id`

// compositeWant is what the server holds after the records of
// TestInsertComposite, row by row (TSV; 18.16 prints the Date of day 0 as
// 0000-00-00).
const compositeWant = "1\t(7,'a')\t(-1,'x',['p','q'])\t[1,2,0]\t['x','','z']\t[NULL,5,NULL]\t[(1,'p'),(0,''),(0,'')]\t(-2,(65535,['s',NULL]),'2026-11-29',1.50)\t['t1']\n" +
	"2\t(0,'')\t(0,NULL,[])\t[]\t[]\t[]\t[]\t(0,(0,[]),'0000-00-00',0.00)\t[]\n" +
	"3\t(2147483647,'tab\\there')\t(9,NULL,[])\t[4]\t['w']\t[-128]\t[(127,'')]\t(0,(1,[]),'0000-00-00',-0.01)\t[]"

const compositeSelect = "SELECT id, t, nt, n.a, n.b, n.c, n.t, deep, tags FROM default.composite ORDER BY id FORMAT TabSeparated"

// TestInsertComposite decodes JSON and Avro records into Tuple and Nested
// columns of a real MergeTree table through the plan and the sink's insert,
// and reads them back.
func TestInsertComposite(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, compositeTable)
	c := connect(t, srv, "composite")
	tg := plan(t, c)
	if want := "INSERT INTO `default`.`composite` (`id`, `t`, `nt`, `n.a`, `n.b`, `n.c`, `n.t`, `deep`, `tags`)"; tg.Query != want {
		t.Fatalf("query %s\nwant %s", tg.Query, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// JSON: tuples from arrays and objects, Nested from an array of
	// objects.
	jd, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chunk.New(tg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{
		`{"id":1,"t":[7,"a"],"nt":{"a":-1,"b":"x","c":["p","q"]},"n":[{"a":1,"b":"x","t":[1,"p"]},{"a":2,"c":5},{"b":"z"}],` +
			`"deep":[-2,[65535,["s",null]],"2026-11-29","1.5"],"tags":["t1"]}`,
		`{"id":2}`,
		`{"id":3,"t":[2147483647,"tab\there"],"nt":[9,null,[]],"n":[{"a":4,"b":"w","c":-128,"t":[127,null]}],"deep":[0,[1,null],null,"-0.01"]}`,
	} {
		if _, err := jd.Decode([]byte(rec), ch); err != nil {
			t.Fatalf("decode %s: %v", rec, err)
		}
	}
	if err := c.Insert(ctx, tg, []*chunk.Chunk{ch}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if got := srv.Query(t, compositeSelect); got != compositeWant {
		t.Errorf("JSON rows:\n%s\nwant:\n%s", got, compositeWant)
	}

	// Avro: tuples from records, Nested from an array of records; the
	// same rows again.
	srv.Exec(t, "TRUNCATE TABLE default.composite")
	schema := `{"type":"record","name":"R","fields":[
		{"name":"id","type":"long"},
		{"name":"t","type":{"type":"record","name":"T","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}},
		{"name":"nt","type":["null",{"type":"record","name":"NT","fields":[
			{"name":"c","type":{"type":"array","items":"string"}},{"name":"b","type":["null","string"]},{"name":"a","type":"long"},{"name":"z","type":"double"}]}]},
		{"name":"n","type":{"type":"array","items":{"type":"record","name":"E","fields":[
			{"name":"a","type":"long"},{"name":"b","type":"string"},{"name":"c","type":["null","int"]},
			{"name":"t","type":{"type":"record","name":"ET","fields":[{"name":"p","type":"int"},{"name":"q","type":"string"}]}}]}}},
		{"name":"deep","type":{"type":"record","name":"D","fields":[{"name":"i","type":"int"},
			{"name":"in","type":{"type":"record","name":"DI","fields":[{"name":"u","type":"int"},{"name":"s","type":{"type":"array","items":["null","string"]}}]}},
			{"name":"d","type":{"type":"int","logicalType":"date"}},
			{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}]}},
		{"name":"tags","type":{"type":"array","items":"string"}}]}`
	ad, err := avrodec.New(schema, tg.Schema, avrodec.Options{Fields: tg.Fields, Validate: avrodec.ValidateNames})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := avro.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	et := func(p int32, q string) map[string]any { return map[string]any{"p": p, "q": q} }
	deep := func(i, u int32, s []any, d int32, dec string) map[string]any {
		r, _ := new(big.Rat).SetString(dec)
		return map[string]any{"i": i, "in": map[string]any{"u": u, "s": s}, "d": d, "dec": r}
	}
	ch2, err := chunk.New(tg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []map[string]any{
		{"id": int64(1), "t": map[string]any{"x": int32(7), "y": "a"},
			"nt":   map[string]any{"NT": map[string]any{"c": []string{"p", "q"}, "b": "x", "a": int64(-1), "z": 0.5}},
			"n":    []map[string]any{{"a": int64(1), "b": "x", "c": nil, "t": et(1, "p")}, {"a": int64(2), "b": "", "c": int32(5), "t": et(0, "")}, {"a": int64(0), "b": "z", "c": nil, "t": et(0, "")}},
			"deep": deep(-2, 65535, []any{"s", nil}, 20786, "1.5"), "tags": []string{"t1"}},
		{"id": int64(2), "t": map[string]any{"x": int32(0), "y": ""}, "nt": nil, "n": []map[string]any{},
			"deep": deep(0, 0, []any{}, 0, "0"), "tags": []string{}},
		{"id": int64(3), "t": map[string]any{"x": int32(2147483647), "y": "tab\there"},
			"nt":   map[string]any{"NT": map[string]any{"c": []string{}, "b": nil, "a": int64(9), "z": 0.0}},
			"n":    []map[string]any{{"a": int64(4), "b": "w", "c": int32(-128), "t": et(127, "")}},
			"deep": deep(0, 1, []any{}, 0, "-0.01"), "tags": []string{}},
	} {
		datum, err := avro.Marshal(ws, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ad.Decode(datum, ch2); err != nil {
			t.Fatalf("decode %v: %v", v, err)
		}
	}
	if err := c.Insert(ctx, tg, []*chunk.Chunk{ch2}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if got := srv.Query(t, compositeSelect); got != compositeWant {
		t.Errorf("Avro rows:\n%s\nwant:\n%s", got, compositeWant)
	}

	// The Nested structure mapped from another field.
	srv.Exec(t, "TRUNCATE TABLE default.composite")
	c2 := connect(t, srv, "composite", func(o *Options) { o.Columns = map[string]string{"id": "id", "n": "items"} })
	tg2 := plan(t, c2)
	jd2, err := jsondec.New(tg2.Schema, jsondec.Options{Fields: tg2.Fields})
	if err != nil {
		t.Fatal(err)
	}
	ch3, err := chunk.New(tg2.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jd2.Decode([]byte(`{"id":9,"items":[{"a":3,"b":"m","c":null,"t":[2,"u"]}]}`), ch3); err != nil {
		t.Fatal(err)
	}
	if err := c2.Insert(ctx, tg2, []*chunk.Chunk{ch3}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if got, want := srv.Query(t, "SELECT id, n.a, n.b, n.c, n.t, t FROM default.composite FORMAT TabSeparated"), "9\t[3]\t['m']\t[NULL]\t[(2,'u')]\t(0,'')"; got != want {
		t.Errorf("mapped Nested: %s, want %s", got, want)
	}
}
