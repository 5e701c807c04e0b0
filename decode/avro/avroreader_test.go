package avro

import (
	"strings"
	"testing"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
)

// Nested reader-schema resolution: v1 and v2 writers, whose records inside
// records, arrays, maps and unions differ from the reader's, resolved to
// it at every level.
const (
	nestedReader = `{"type":"record","name":"Event","fields":[
	  {"name":"id","type":"long"},
	  {"name":"user","type":{"type":"record","name":"User","fields":[
	    {"name":"name","type":"string","aliases":["login"]},
	    {"name":"age","type":"long"},
	    {"name":"email","type":"string","default":"none"},
	    {"name":"geo","type":{"type":"record","name":"Geo","fields":[
	      {"name":"lat","type":"double"},{"name":"lon","type":"double","default":0}]},
	     "default":{"lat":1.5,"lon":-2.5}}]}},
	  {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
	    {"name":"sku","type":"string","aliases":["code"]},
	    {"name":"qty","type":"double"},
	    {"name":"tag","type":"string","default":"t"},
	    {"name":"dim","type":{"type":"record","name":"Dim","fields":[
	      {"name":"w","type":"int"},{"name":"h","type":"int","default":9}]},
	     "default":{"w":1,"h":2}}]}}},
	  {"name":"opt","type":["null",{"type":"record","name":"Opt","fields":[
	    {"name":"a","type":"string"},{"name":"b","type":"int","default":7}]}],"default":null},
	  {"name":"pairs","type":{"type":"map","values":{"type":"record","name":"P","fields":[
	    {"name":"x","type":"int","aliases":["ex"]},{"name":"y","type":"string","default":"why"}]}}},
	  {"name":"tup","type":{"type":"record","name":"T","fields":[
	    {"name":"p","type":"int"},{"name":"q","type":"string","default":"qq"}]}},
	  {"name":"deep","type":{"type":"array","items":["null",{"type":"record","name":"D","fields":[
	    {"name":"k","type":"string","aliases":["key"]},
	    {"name":"v","type":{"type":"array","items":"long"},"default":[4,5]}]}]}},
	  {"name":"labels","type":{"type":"array","items":"string"},"default":["a","b"]},
	  {"name":"added","type":"Geo","default":{"lat":3,"lon":4}},
	  {"name":"day","type":{"type":"int","logicalType":"date"},"default":18263}]}`

	nestedV1 = `{"type":"record","name":"Event","fields":[
	  {"name":"id","type":"int"},
	  {"name":"user","type":{"type":"record","name":"User","fields":[
	    {"name":"login","type":"string"},{"name":"age","type":"int"},{"name":"legacy","type":"string"}]}},
	  {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
	    {"name":"junk","type":"long"},{"name":"code","type":"string"},{"name":"qty","type":"int"}]}}},
	  {"name":"opt","type":["null",{"type":"record","name":"Opt","fields":[{"name":"a","type":"string"}]}]},
	  {"name":"pairs","type":{"type":"map","values":{"type":"record","name":"P","fields":[{"name":"ex","type":"int"}]}}},
	  {"name":"tup","type":{"type":"record","name":"T","fields":[{"name":"extra","type":"string"},{"name":"p","type":"int"}]}},
	  {"name":"deep","type":{"type":"array","items":["null",{"type":"record","name":"D","fields":[{"name":"key","type":"string"}]}]}}]}`

	nestedV2 = `{"type":"record","name":"Event","fields":[
	  {"name":"tup","type":{"type":"record","name":"T","fields":[{"name":"q","type":"string"},{"name":"p","type":"int"}]}},
	  {"name":"id","type":"long"},
	  {"name":"user","type":{"type":"record","name":"User","fields":[
	    {"name":"name","type":"string"},{"name":"email","type":"string"},
	    {"name":"geo","type":{"type":"record","name":"Geo","fields":[{"name":"lat","type":"float"}]}},
	    {"name":"age","type":"long"}]}},
	  {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
	    {"name":"sku","type":"string"},{"name":"qty","type":"float"},{"name":"tag","type":"string"},
	    {"name":"dim","type":{"type":"record","name":"Dim","fields":[{"name":"w","type":"int"}]}}]}}},
	  {"name":"opt","type":["null",{"type":"record","name":"Opt","fields":[{"name":"b","type":"int"},{"name":"a","type":"string"}]}]},
	  {"name":"pairs","type":{"type":"map","values":{"type":"record","name":"P","fields":[{"name":"y","type":"string"},{"name":"x","type":"int"}]}}},
	  {"name":"deep","type":{"type":"array","items":["null",{"type":"record","name":"D","fields":[
	    {"name":"v","type":{"type":"array","items":"int"}},{"name":"k","type":"string"}]}]}},
	  {"name":"labels","type":{"type":"array","items":"string"}},
	  {"name":"day","type":{"type":"int","logicalType":"date"}}]}`
)

var readerNestedColumns = []string{
	"id Int64", "user.name String", "user.age Int64", "user.email String",
	"user.geo.lat Float64", "user.geo.lon Float64", "user.legacy String",
	"items.sku Array(String)", "items.qty Array(Float64)", "items.tag Array(String)", "items.dim.h Array(Int32)",
	"opt.a Nullable(String)", "opt.b Int32",
	"pairs Map(String, Tuple(x Int32, y String))", "tup Tuple(Int32, String)",
	"deep Array(Tuple(k String, v Array(Int64)))", "labels Array(String)",
	"added Tuple(lat Float64, lon Float64)", "added.lat Float64", "day Date",
}

func avroDatum(t *testing.T, schema string, v any) []byte {
	t.Helper()
	b, err := havro.Marshal(havro.MustParse(schema), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAvroReaderNested: aliases, ignored writer fields, reader defaults and
// promotions inside records, records inside records, arrays of records
// (Nested columns), unions, maps of records into Tuples and records into
// Tuples, with v1 and v2 records in one chunk; every value checked.
func TestAvroReaderNested(t *testing.T) {
	s := schemaOf(t, readerNestedColumns...)
	if s.Types[16].Kind != chunk.KindArray {
		t.Fatal(s.Types[16].Name)
	}
	d1, err := New(nestedV1, s, Options{ReaderSchema: nestedReader})
	if err != nil {
		t.Fatalf("v1: %v", err)
	}
	d2, err := New(nestedV2, s, Options{ReaderSchema: nestedReader})
	if err != nil {
		t.Fatalf("v2: %v", err)
	}
	c := newChunk(t, s)
	recs := []struct {
		d     *Decoder
		datum []byte
	}{
		{d1, avroDatum(t, nestedV1, map[string]any{
			"id":    int32(-1),
			"user":  map[string]any{"login": "ann", "age": int32(30), "legacy": "old"},
			"items": []any{map[string]any{"junk": int64(9), "code": "s1", "qty": int32(2)}, map[string]any{"junk": int64(8), "code": "s2", "qty": int32(-3)}},
			"opt":   map[string]any{"Opt": map[string]any{"a": "A"}},
			"pairs": map[string]any{"k": map[string]any{"ex": int32(5)}},
			"tup":   map[string]any{"extra": "e", "p": int32(11)},
			"deep":  []any{map[string]any{"D": map[string]any{"key": "d1"}}, nil},
		})},
		{d2, avroDatum(t, nestedV2, map[string]any{
			"tup":    map[string]any{"q": "Q", "p": int32(12)},
			"id":     int64(1) << 40,
			"user":   map[string]any{"name": "bob", "email": "b@x", "geo": map[string]any{"lat": float32(0.5)}, "age": int64(41)},
			"items":  []any{map[string]any{"sku": "s3", "qty": float32(1.25), "tag": "T", "dim": map[string]any{"w": int32(6)}}},
			"opt":    map[string]any{"Opt": map[string]any{"b": int32(-8), "a": "B"}},
			"pairs":  map[string]any{"m": map[string]any{"y": "Y", "x": int32(-6)}},
			"deep":   []any{map[string]any{"D": map[string]any{"v": []any{int32(1)}, "k": "d2"}}},
			"labels": []any{"z"},
			"day":    int32(1),
		})},
		{d1, avroDatum(t, nestedV1, map[string]any{
			"id":    int32(3),
			"user":  map[string]any{"login": "", "age": int32(0), "legacy": ""},
			"items": []any{},
			"opt":   nil,
			"pairs": map[string]any{},
			"tup":   map[string]any{"extra": "", "p": int32(0)},
			"deep":  []any{},
		})},
	}
	for i, r := range recs {
		if _, err := r.d.Decode(r.datum, c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := checkConsistent(c); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"id":           {"-1", "1099511627776", "3"},
		"user.name":    {"ann", "bob", ""},
		"user.age":     {"30", "41", "0"},
		"user.email":   {"none", "b@x", "none"},
		"user.geo.lat": {"1.5", "0.5", "1.5"},
		"user.geo.lon": {"-2.5", "0", "-2.5"},
		"user.legacy":  {"", "", ""},
		"items.sku":    {"[s1,s2]", "[s3]", "[]"},
		"items.qty":    {"[2,-3]", "[1.25]", "[]"},
		"items.tag":    {"[t,t]", "[T]", "[]"},
		"items.dim.h":  {"[2,2]", "[9]", "[]"},
		"opt.a":        {"A", "B", "NULL"},
		"opt.b":        {"7", "-8", "0"},
		"pairs":        {"{k:(5,why)}", "{m:(-6,Y)}", "{}"},
		"tup":          {"(11,qq)", "(12,Q)", "(0,qq)"},
		"deep":         {"[(d1,[4,5]),(,[])]", "[(d2,[1])]", "[]"},
		"labels":       {"[a,b]", "[z]", "[a,b]"},
		"added":        {"(3,4)", "(3,4)", "(3,4)"},
		"added.lat":    {"3", "3", "3"},
		"day":          {"2020-01-02", "1970-01-02", "2020-01-02"},
	}
	for i, name := range s.Names {
		var got []string
		for r := 0; r < c.Rows; r++ {
			got = append(got, render(c.Cols[i], r))
		}
		if strings.Join(got, "|") != strings.Join(want[name], "|") {
			t.Errorf("%s: %q, want %q", name, got, want[name])
		}
	}

	// Reader defaults count as filling their columns: validate_schema full
	// accepts both writers once the column no reader field fills is gone.
	full := schemaOf(t, slicesDelete(readerNestedColumns, "user.legacy String")...)
	for _, w := range []string{nestedV1, nestedV2} {
		if _, err := New(w, full, Options{ReaderSchema: nestedReader, Validate: ValidateFull}); err != nil {
			t.Errorf("validate full: %v", err)
		}
	}
	if _, err := New(nestedV1, s, Options{ReaderSchema: nestedReader, Validate: ValidateFull}); err == nil ||
		!strings.Contains(err.Error(), "column user.legacy (String) is filled by no field") {
		t.Errorf("validate full with user.legacy: %v", err)
	}
}

func slicesDelete(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// TestAvroReaderNestedRefused: a nested reader default that does not fit
// its column, and a reader record whose field count does not fit an
// unnamed tuple, are refused when the plan is built.
func TestAvroReaderNestedRefused(t *testing.T) {
	w := `{"type":"record","name":"E","fields":[{"name":"r","type":{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}}]}`
	for _, tc := range []struct {
		reader, col, msg string
	}{
		{`{"type":"record","name":"E","fields":[{"name":"r","type":{"type":"record","name":"R","fields":[
			{"name":"a","type":"int"},{"name":"b","type":"int","default":300}]}}]}`,
			"r.b UInt8", `reader default: field "r.b" -> column r.b (UInt8): value 300 out of range`},
		{`{"type":"record","name":"E","fields":[{"name":"r","type":{"type":"record","name":"R","fields":[
			{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}}]}`,
			"r.b Int32", `reader default: field "r.b" (string) -> column r.b (Int32): string cannot go into Int32`},
		{`{"type":"record","name":"E","fields":[{"name":"r","type":{"type":"record","name":"R","fields":[
			{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}}]}`,
			"r Tuple(Int32)", `reader record R has 2 fields, Tuple(Int32) has 1 elements`},
		{`{"type":"record","name":"E","fields":[{"name":"r","type":{"type":"record","name":"R","fields":[
			{"name":"a","type":"int"},{"name":"b","type":"long","default":-1}]}}]}`,
			"r Tuple(a Int32, b UInt8)", `tuple element "b": reader default of field "b"`},
	} {
		_, err := New(w, schemaOf(t, tc.col), Options{ReaderSchema: tc.reader})
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.col, err, tc.msg)
		}
	}
}
