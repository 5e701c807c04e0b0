package json

import (
	"strings"
	"testing"
)

// pathColumns read field paths into nested objects, the way the debezium
// envelope's staging schema does (before.F, after.F, source.F, op), with
// columns of every kind of setter under them, two columns on one path, a
// path three keys deep and a path whose key is an array index to fastjson.
var pathColumns = []string{
	"id Int64", "id2 UInt64", "name String", "bid Nullable(Int64)", "bname Nullable(String)", "op String",
	"lsn Nullable(Int64)", "file Nullable(String)", "deep UInt8", "lit String", "arr Array(Int32)",
	"m Map(String, Int32)", "u UUID", "obj String", "idx Int32", "ts DateTime", "top Int32",
}

var pathFields = []string{
	"after.id", "after.id", "after.name", "before.id", "before.name", "op",
	"source.lsn", "source.file", "a.b.c", "x.y", "after.arr",
	"after.m", "payload.after.u", "after.obj", "n.0", "after.ts", "top",
}

var pathSeeds = []string{
	`{}`, `{"op":"c","after":{"id":1,"name":"a"}}`,
	`{"before":null,"after":{"id":1,"name":"x\"y","arr":[1,2],"m":{"k":1},"obj":{"a":[1, 2]},"ts":"2026-11-29 10:00:00"},` +
		`"source":{"lsn":123,"file":"binlog.000003","ts_ms":1},"op":"u","ts_ms":5,"transaction":null}`,
	`{"before":{"id":2,"name":null},"after":null,"op":"d","source":{"lsn":null}}`,
	`{"after":{"id":1},"after":{"name":"b"}}`, `{"after":{"id":1,"id":2}}`, `{"after":{"id":1},"after.id":2}`,
	`{"after.id":2,"after":{"id":1}}`, `{"after.id":2}`, `{"x.y":"lit"}`, `{"x":{"y":"nested"}}`, `{"x":{"y":"n"},"x.y":"l"}`,
	`{"after":5}`, `{"after":"s"}`, `{"after":true}`, `{"after":[1]}`, `{"after":[{"id":1}]}`, `{"after":[]}`,
	`{"n":[7,8]}`, `{"n":{"0":7}}`, `{"n":[]}`, `{"n":["x"]}`, `{"n":null}`, `{"n":{"0":7,"0":8}}`,
	`{"a":{"b":{"c":1}}}`, `{"a":{"b":{"c":256}}}`, `{"a":{"b":null}}`, `{"a":{"b":{"c":null}}}`, `{"a":{"b":[{"c":1}]}}`,
	`{"a":{"b":{"c":1},"b":{"c":2}}}`, `{"a":{"b":{"d":1},"b":{"c":2}}}`, `{"a":{"b.c":1}}`, `{"a.b":{"c":1}}`,
	`{"a":{"b":{"c":1}},"a":null}`, `{"a":null,"a":{"b":{"c":1}}}`,
	`{"after":{"id":"1"}}`, `{"after":{"id":1.5}}`, `{"after":{"id":9223372036854775808}}`, `{"after":{"id":-1},"top":1}`,
	`{"after":{"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}}`,
	`{"payload":{"after":{"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}}}`, `{"payload":{"after":{"u":"x"}}}`,
	`{"payload":{"after":null}}`, `{"payload":{"schema":{"type":"struct","fields":[{"f":1}]},"after":{"u":null}}}`,
	`{"after":{"arr":[1,null,"2"],"m":{"a":1,"a":2}}}`, `{"after":{"arr":[2147483648]}}`, `{"after":{"m":{"a":"x"}}}`,
	`{"after":{"obj":[1,{"a":null}]}}`, `{"after":{"obj":"t"}}`, `{"after":{"ts":1795946400}}`, `{"after":{"ts":-1}}`,
	`{"after":{"id":1,}}`, `{"after":{"id":1`, `{"after":{"id" 1}}`, `{"after":{id:1}}`, `{"after":{"i\u0064":1}}`,
	`{"aft\u0065r":{"id":1}}`, `{"after":{"id":1}}x`, `{"after":{"id":1}`, `{"after":{"id":1} "op":"c"}`,
	`{"after":{"zz":[1,{"a":[2]}],"id":3,"yy":{"q":null}}}`, `{"after":{"zz":[1,]}}`, `{"after":{"zz":{"a":1,}}}`,
	`{"after":` + strings.Repeat(`{"a":`, 280) + "1" + strings.Repeat("}", 280) + `}`,
	`{"after":` + strings.Repeat(`{"a":`, 297) + "1" + strings.Repeat("}", 297) + `}`,
	`{"after":{"zz":` + strings.Repeat("[", 297) + strings.Repeat("]", 297) + `}}`,
	`{"after":{"zz":` + strings.Repeat("[", 298) + strings.Repeat("]", 298) + `}}`,
	`{"after":{"obj":` + strings.Repeat("[", 296) + strings.Repeat("]", 296) + `}}`,
	`{"a":{"b":{"c":1,"zz":` + strings.Repeat("[", 296) + strings.Repeat("]", 296) + `}}}`,
	`[{"after":{"id":1}},{"after":{"id":2}}]`, `[{"after":{"id":1}},{"after":{"id":"x"}}]`,
}

// FuzzFastPathNested checks that the one-pass path agrees with the
// fastjson path on records read through field paths into nested objects:
// the same rows for every record either accepts, the same error for every
// other one, and a chunk left as it was on error.
func FuzzFastPathNested(f *testing.F) {
	for _, s := range pathSeeds {
		f.Add([]byte(s))
	}
	s := schemaOf(f, pathColumns...)
	mk := func(framing string, noFast bool) *Decoder {
		d, err := New(s, Options{Fields: pathFields, Framing: framing})
		if err != nil {
			f.Fatal(err)
		}
		if d.fast == nil {
			f.Fatal("no one-pass path for the nested columns")
		}
		d.noFast = noFast
		return d
	}
	fast, slow := mk("", false), mk("", true)
	fastArr, slowArr := mk(FramingArray, false), mk(FramingArray, true)
	good := []byte(`{"after":{"id":1,"name":"x"},"op":"c"}`)
	f.Fuzz(func(t *testing.T, value []byte) {
		for _, p := range []struct {
			name       string
			fast, slow *Decoder
			value      []byte
		}{
			{"one object", fast, slow, value},
			{"array framing", fastArr, slowArr, append(append([]byte("[ "), value...), ", {\"op\":\"x\"} ]"...)},
		} {
			cf, cs := newChunk(t, s), newChunk(t, s)
			if p.fast == fast {
				if _, err := fast.Decode(good, cf); err != nil {
					t.Fatalf("good record: %v", err)
				}
				if _, err := slow.Decode(good, cs); err != nil {
					t.Fatalf("good record: %v", err)
				}
			}
			rf, errf := p.fast.Decode(p.value, cf)
			rs, errs := p.slow.Decode(p.value, cs)
			if rf != rs || (errf == nil) != (errs == nil) || errf != nil && errf.Error() != errs.Error() {
				t.Fatalf("%s %q: one-pass path gives %d, %v; fastjson path %d, %v", p.name, p.value, rf, errf, rs, errs)
			}
			if err := checkConsistent(cf); err != nil {
				t.Fatalf("%s %q: one-pass path leaves the chunk inconsistent: %v", p.name, p.value, err)
			}
			if df, ds := dump(cf), dump(cs); df != ds {
				t.Fatalf("%s %q: one-pass path rows\n%s\nfastjson path rows\n%s", p.name, p.value, df, ds)
			}
		}
	})
}

// TestFastPathNestedTaken: change events of both shapes, with the
// schema/payload wrapper's schema skipped, stay on the one-pass path.
func TestFastPathNestedTaken(t *testing.T) {
	s := schemaOf(t, pathColumns...)
	d, err := New(s, Options{Fields: pathFields})
	if err != nil {
		t.Fatal(err)
	}
	if d.fast == nil {
		t.Fatal("no one-pass path for the nested columns")
	}
	c := newChunk(t, s)
	for _, rec := range []string{
		pathSeeds[2], pathSeeds[3],
		`{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","field":"id"}],"field":"after"}]},` +
			`"payload":{"after":{"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}},"after":{"id":1,"zz":[{"q":[1]}]},"op":"r"}`,
	} {
		if !d.decodeFast([]byte(rec), c) {
			t.Errorf("%s left the one-pass path", rec)
		}
	}
}
