package json

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/gen"
)

// fastColumns are column types with fast setters. Two columns read field
// "a" so one value goes through two setters.
var fastColumns = []string{
	"a Int8", "a2 UInt64", "b Int64", "c Float32", "d Float64", "f String", "l DateTime",
	"n Nullable(Int16)", "q LowCardinality(Nullable(String))", "s Nullable(DateTime)", "u UInt8", "w Int32",
	"r Array(Int32)", "r2 Array(Nullable(UInt8))", "t Array(LowCardinality(String))", "v Array(DateTime)",
	// Types without a fast setter: their values are parsed alone.
	"g UUID", "g2 String", "h Map(String, Int32)", "k Array(Nullable(UUID))", "m Tuple(a Int8, b String)",
	"o Decimal(9, 2)", "x Array(Array(UInt8))", "y Nullable(Date)", "h2 Map(UInt8, Array(Nullable(UUID)))",
}

var fastFields = []string{
	"a", "a", "b", "c", "d", "f", "l", "n", "q", "s", "u", "w", "r", "r", "t", "v",
	"g", "g", "h", "k", "m", "o", "x", "y", "h2",
}

var fastSeeds = []string{
	`{}`, ` { } `, `{"a":1,"b":-5,"c":1.5,"d":"2.5","f":"x\"y\\z\/\b\f\n\r\t","l":"2026-11-29 10:00:00","n":null,` +
		`"q":"lc","s":"2026-11-29T10:00:00+01:00","u":true,"w":"-7","zz":"skip\"me","z2":[1]}`,
	`{"a":"\u0031"}`, `{"f":"\ud800"}`, `{"f":"a\x"}`, `{"l":1e400}`, `{"a":true,"a":false}`, `{"a":1,"a":1}`,
	`[]`, `{"a":`, `{"a":1}x`, `{"a":1,}`, `{"a":01}`, `{"a":-0}`, `{"a2":18446744073709551615}`,
	`{"a2":18446744073709551616}`, `{"b":-9223372036854775808}`, `{"b":9223372036854775808}`, `{"u":256}`,
	`{"w":2147483648}`, `{"d":NaN}`, `{"d":-Inf}`, `{"d":1e999}`, `{"c":3.5e38}`, `{"f":12.50}`, `{"f":true}`,
	`{"f":null}`, `{"f":{"x":1}}`, `{"l":1795946400000}`, `{"l":"1795946400"}`, `{"l":-1}`, `{"l":4294967296}`,
	`{"l":1.5}`, `{"l":true}`, `{"s":null}`, `{"n":"12"}`, `{"n":1.0}`, `{"n":1.5}`, `{"zz":nul}`, `{"zz":tru}`,
	`{"zz":1-2e+}`, `{"zz":-inf}`, "{\"a\"\t:\n1\r}", `{"a\u0062":1}`, `{"f":"` + "\x01\xff" + `"}`, `{"zz":"a\`,
	`{"f":"a\"`, `{"a":1 "b":2}`, `{"a":+1}`, `{"d":.5}`, `{"d":5.}`, `{"a":1e2}`, `{"a":1E+0}`,
	// Numbers read in the scan (scanNum) and next to its limits.
	`{"d":0.1}`, `{"d":-0.0}`, `{"d":-0}`, `{"d":123456789012345.6}`, `{"d":12345678901234.5}`, `{"d":0.000000000000001}`,
	`{"d":1234567890123456789}`, `{"d":00.5}`, `{"d":-}`, `{"d":1.5e3}`, `{"d":-12.5,"c":-12.5}`, `{"b":-9223372036854775809}`,
	`{"a2":1234567890123456789}`, `{"a2":12345678901234567890}`, `{"a2":-0}`, `{"a2":-1}`, `{"b":-01}`, `{"b":-}`,
	`{"l":1795946400}`, `{"l":-0}`, `{"l":0}`, `{"l":01}`, `{"s":17959464001}`, `{"a":1.0}`, `{"n":-32768}`, `{"n":-32769}`,
	`{"r":[1,-2,3.0,1e1,-2147483649]}`, `{"d":1}`, `{"d":12345678901234567890123}`, `{"a":9-}`, `{"a":1.2.3}`,
	// Keys found by the name expected next, and keys that only start like
	// it or have escapes.
	`{"ab":1}`, `{"a":1,"bc":2,"b":3}`, `{"a":1,"b\u0063":2}`, `{"a":1,"b\"":2}`, `{"a\\":1}`, `{"a`, `{"a"`,
	`{"a":1,"b`, `{"a":1,"b"`, `{"a":1,"b":`, `{"b":1,"a":2}`, `{"a":1,"c":2,"b":3,"a":4}`, `{"a" :1,"b" : 2}`,
	// Strings scanned a word at a time: a quote, a backslash or a
	// multibyte character at each place of the first words.
	`{"f":"1234567\"8"}`, `{"f":"12345678\"9"}`, `{"f":"123456789abcdef\\g"}`, `{"f":"\\1234567"}`,
	`{"f":"ééééééé\"é"}`, `{"f":"€€€€€€"}`, `{"f":"abcdefghijklmnop"}`, `{"f":"abcdefgh`, `{"f":"abcdefghi\`,
	`{"f":"abcdefg"}`, `{"f":"abcdefgh"}`, `{"f":"\u0022\u005c"}`, `{"q":"x12345678\n"}`,
	// Arrays into Array columns, and values of unread fields of every shape.
	`{"r":[]}`, `{"r":[ ]}`, `{"r":[1,-2, 3 ,null]}`, `{"r":[1,]}`, `{"r":[,1]}`, `{"r":[1 2]}`, `{"r":[1`, `{"r":[1]`,
	`{"r":[2147483648]}`, `{"r":[255,256]}`, `{"r":[1.0,"7"]}`, `{"r":[[1]]}`, `{"r":[{}]}`, `{"r":1}`, `{"r":null}`,
	`{"r":"[1]"}`, `{"r":[1],"r":[2]}`, `{"r":[true]}`, `{"r":[NaN]}`, `{"t":["a","b\n",null,1,true]}`,
	`{"t":["\u0041"]}`, `{"t":[{"x":1}]}`, `{"v":["2026-11-29 10:00:00",1795946400,null]}`, `{"v":[-1]}`,
	`{"f":[1]}`, `{"f":{}}`, `{"n":[1]}`, "{\"r\":[\t1\n,\r2 ]}", `{"r":[1]}x`,
	`{"zz":[]}`, `{"zz":{}}`, `{"zz":[1,[2,{"a":[3]}],{"b":null,"c":"x\"y"}]}`, `{"zz":[1,]}`, `{"zz":{"a":1,}}`,
	`{"zz":{"a"}}`, `{"zz":{a:1}}`, `{"zz":{"a":1 "b":2}}`, `{"zz":[1 2]}`, `{"zz":[`, `{"zz":{"a":`, `{"zz":[nan]}`,
	`{"zz":{"a\"b":1}}`, `{"zz":{"\u0061":[]}}`, `{"zz":[[[[[[[[[[1]]]]]]]]]]}`, `{"zz":[-]}`, `{"zz":{"a":tru}}`,
	`{"zz":` + strings.Repeat("[", 298) + strings.Repeat("]", 298) + `}`,
	`{"zz":` + strings.Repeat("[", 299) + strings.Repeat("]", 299) + `}`,
	`{"zz":` + strings.Repeat(`{"a":`, 299) + "1" + strings.Repeat("}", 299) + `}`,
	// Values parsed alone.
	`{"g":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}`, `{"g":"6ba7b810-9dad-11d1-80b4-00c04fd430c"}`, `{"g":null}`, `{"g":[1]}`,
	`{"h":{"a":1,"b":null,"a":2}}`, `{"h":{}}`, `{"h":[]}`, `{"h":{"a":"x"}}`, `{"h":{"\u0061":1}}`, `{"h":{"a":1,}}`,
	`{"k":["6ba7b810-9dad-11d1-80b4-00c04fd430c8",null]}`, `{"k":[1]}`, `{"k":[[]]}`, `{"k":[]}`, `{"k":null}`,
	`{"m":[1,"x"]}`, `{"m":{"b":"y","a":2}}`, `{"m":[1]}`, `{"m":{"a":300}}`, `{"o":1.5}`, `{"o":"1e30"}`, `{"o":1e3}`,
	`{"o":12345678.9}`, `{"x":[[1,2],[],null,[3]]}`, `{"x":[[256]]}`, `{"x":[1]}`, `{"x":[[1],`, `{"y":"2026-11-29"}`,
	`{"y":null}`, `{"y":"2300-01-01"}`, `{"f":"\u00e9"}`, `{"t":["\u00e9",{"a":[1]},[null]]}`, `{"f":{"a":[1,{"b":"\u0041"}]}}`,
	`{"g":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","g":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}`,
	`{"x":` + strings.Repeat("[", 250) + strings.Repeat("]", 250) + `}`,
	// Objects and arrays into String columns, as their compacted text.
	"{\"f\": [ 1 , \"a\\\" b\" , { \"k\\u0041\" : null, \"x\":\t[ true,false ]\n} ] }", `{"q":{"a":"\\\\"}}`,
	`{"q":[1,2,]}`, `{"f":{"a":1 "b":2}}`, `{"f":{"a":"\u00e9 ","b":-1.5e+3}}`, `{"f":[nan]}`, `{"f":{"a":1,"a":2}}`,
	// Maps, streamed.
	`{"h":{"a":1,"b":null,"a":"2"}}`, `{"h":{ "a" : 1 , "b":2 }}`, `{"h":{"a":1.5}}`, `{"h":{"a":[1]}}`, `{"h":{"a":}}`,
	`{"h":{"a":1,"b"}}`, `{"h":{"a" 1}}`, `{"h":{"a":1}`, `{"h":{"a\"b":1}}`, `{"h":{"":2147483648}}`,
	`{"h2":{"1":["6ba7b810-9dad-11d1-80b4-00c04fd430c8",null],"2":null,"3":[]}}`, `{"h2":{"256":[]}}`,
	`{"h2":{"x":[]}}`, `{"h2":{"1":["x"]}}`, `{"h2":{"1":{}}}`, `{"h2":{"-0":[]}}`, `{"h2":{" 1":[]}}`,
	// For the array framing.
	`[]`, ` [ ] `, `[{"a":1},{"a":2}]`, `[{"a":1},3]`, `[{"a":1},"x"]`, `[{"a":1},[]]`, `[{"a":1},null]`, `[{"a":1},]`,
	`[{"a":1}`, `[{"a":1}]x`, `[{"a":1},{"a":"x"}]`, `[{"a":1,"a":2}]`, `{"a":1}`, `1`, `[1,{"a":"x"}]`,
	`{"f":` + strings.Repeat("[", 298) + strings.Repeat("]", 298) + `}`,
	`{"f":` + strings.Repeat("[", 299) + strings.Repeat("]", 299) + `}`,
}

// FuzzFastPath checks that the fast path agrees with the fastjson path:
// the same rows for every record either accepts, the same error (the
// fastjson path reports it) for every other one, and a chunk left as it
// was on error.
func FuzzFastPath(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	for n := range uint64(20) {
		f.Add(gen.Make(1, n).AppendJSON(nil))
	}
	s := schemaOf(f, fastColumns...)
	fast, err := New(s, Options{Fields: fastFields})
	if err != nil {
		f.Fatal(err)
	}
	if fast.fast == nil {
		f.Fatal("no fast path for the fast columns")
	}
	slow, err := New(s, Options{Fields: fastFields})
	if err != nil {
		f.Fatal(err)
	}
	slow.noFast = true
	diag, err := New(s, Options{Fields: fastFields})
	if err != nil {
		f.Fatal(err)
	}
	// The array framing, element by element and whole.
	fastArr, err := New(s, Options{Fields: fastFields, Framing: FramingArray})
	if err != nil {
		f.Fatal(err)
	}
	slowArr, err := New(s, Options{Fields: fastFields, Framing: FramingArray})
	if err != nil {
		f.Fatal(err)
	}
	slowArr.noFast = true
	good := []byte(`{"a":1,"f":"x","s":5}`)
	f.Fuzz(func(t *testing.T, value []byte) {
		cf, cs := newChunk(t, s), newChunk(t, s)
		if _, err := fast.Decode(good, cf); err != nil {
			t.Fatalf("good record: %v", err)
		}
		if _, err := slow.Decode(good, cs); err != nil {
			t.Fatalf("good record: %v", err)
		}
		rf, errf := fast.Decode(value, cf)
		rs, errs := slow.Decode(value, cs)
		if rf != rs || (errf == nil) != (errs == nil) || errf != nil && errf.Error() != errs.Error() {
			t.Fatalf("%q: fast path gives %d, %v; fastjson path %d, %v", value, rf, errf, rs, errs)
		}
		if err := checkConsistent(cf); err != nil {
			t.Fatalf("%q: fast path leaves the chunk inconsistent: %v", value, err)
		}
		if df, ds := dump(cf), dump(cs); df != ds {
			t.Fatalf("%q: fast path rows\n%s\nfastjson path rows\n%s", value, df, ds)
		}
		// Diagnosing (as for a large record the fast path gave up) gives
		// the fastjson path's row, or an error where it has one: the same
		// for the same column.
		cd := newChunk(t, s)
		if _, err := diag.Decode(good, cd); err != nil {
			t.Fatalf("good record: %v", err)
		}
		done, e := diag.diagnose(value, cd)
		if done && e == nil {
			cd.Rows++
		}
		var es *decode.Error
		switch {
		case !done:
		case errs == nil && e != nil:
			t.Fatalf("%q: diagnosed %v; the fastjson path takes it", value, e)
		case errs != nil && e == nil:
			t.Fatalf("%q: diagnosed a row; the fastjson path: %v", value, errs)
		case e != nil && errors.As(errs, &es) && es.Column == e.Column && es.Error() != e.Error():
			t.Fatalf("%q: diagnosed %v; the fastjson path: %v", value, e, errs)
		case e != nil && cd.Rows != 1:
			t.Fatalf("%q: diagnosing left %d rows", value, cd.Rows)
		}
		if err := checkConsistent(cd); err != nil {
			t.Fatalf("%q: diagnosing leaves the chunk inconsistent: %v", value, err)
		}
		if done && e == nil {
			if dd, ds := dump(cd), dump(cs); dd != ds {
				t.Fatalf("%q: diagnosed rows\n%s\nfastjson path rows\n%s", value, dd, ds)
			}
		}
		for _, arr := range [][]byte{value, append(append([]byte("[ "), value...), ", {\"a\":2} ]"...)} {
			ca, cs := newChunk(t, s), newChunk(t, s)
			rf, errf := fastArr.Decode(arr, ca)
			rs, errs := slowArr.Decode(arr, cs)
			if rf != rs || (errf == nil) != (errs == nil) || errf != nil && errf.Error() != errs.Error() {
				t.Fatalf("%q: array framing by element gives %d, %v; whole %d, %v", arr, rf, errf, rs, errs)
			}
			if err := checkConsistent(ca); err != nil {
				t.Fatalf("%q: array framing by element leaves the chunk inconsistent: %v", arr, err)
			}
			if df, ds := dump(ca), dump(cs); df != ds {
				t.Fatalf("%q: array framing by element rows\n%s\nwhole rows\n%s", arr, df, ds)
			}
		}
	})
}

// TestFastPathTaken makes sure gen's records take the fast path, so the
// benchmark's speed is not silently lost to fallbacks.
func TestFastPathTaken(t *testing.T) {
	s, err := gen.Schema()
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.fast == nil {
		t.Fatal("gen's schema has no fast path")
	}
	c := newChunk(t, s)
	for n := range uint64(2000) {
		rec := gen.Make(1, n).AppendJSON(nil)
		if !d.decodeFast(rec, c) {
			t.Fatalf("record %d left the fast path: %s", n, rec)
		}
	}
}

// TestFastPathOff: a Nested structure, a field path that meets another
// column's field, or a path deeper than
// maxPathDepth turns the fast path off for the whole decoder.
func TestFastPathOff(t *testing.T) {
	for _, c := range []struct {
		cols, fields []string
	}{
		{[]string{"n.a Array(UInt8)", "n.b Array(String)"}, []string{"a", "b"}},
		{[]string{"a String", "b String"}, []string{"x", "x.b"}},
		{[]string{"a String", "b String"}, []string{"x.b.c", "x.b"}},
		{[]string{"a String"}, []string{strings.Repeat("x.", maxPathDepth) + "y"}},
	} {
		d, err := New(schemaOf(t, c.cols...), Options{Fields: c.fields})
		if err != nil {
			t.Fatal(err)
		}
		if d.fast != nil {
			t.Fatalf("fast path compiled for %v from %v", c.cols, c.fields)
		}
	}
}

// TestFastPathArrays: arrays of scalars into Array columns, and values of
// any shape in fields no column reads, stay on the fast path.
func TestFastPathArrays(t *testing.T) {
	s := schemaOf(t, fastColumns...)
	d, err := New(s, Options{Fields: fastFields})
	if err != nil {
		t.Fatal(err)
	}
	if d.fast == nil {
		t.Fatal("no fast path for the fast columns")
	}
	c := newChunk(t, s)
	for _, rec := range []string{
		`{"r":[1,2,null],"t":["a","b\"",null],"v":[1795946400,"2026-11-29 10:00:00"]}`,
		`{"a":1,"r":[],"zz":[1,[2,{"a":[3]}],{"b":null,"c":"x\"y"}],"z2":{"a":{"b":[]}}}`,
		`{"g":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","h":{"a":1},"k":[null,"6ba7b810-9dad-11d1-80b4-00c04fd430c8"],` +
			`"m":{"a":1},"o":"1.25","x":[[1],[]],"y":"2026-11-29","f":{"x":[1]},"t":["\u00e9",[1]]}`,
	} {
		if !d.decodeFast([]byte(rec), c) {
			t.Errorf("%s left the fast path", rec)
		}
	}
}

// TestToQuoteOrBackslash checks the word-at-a-time scan against a byte
// loop: no quote or backslash is skipped, and it stops at the first one or
// within the last word's bytes.
func TestToQuoteOrBackslash(t *testing.T) {
	fill := []byte("a\x00\x7f\x80\xa2\xdc\xff\x21\x23\x5b\x5d\x5c\x22")
	for n := 0; n <= 40; n++ {
		for pos := -1; pos < n; pos++ {
			for _, fb := range fill {
				for _, target := range []byte{'"', '\\'} {
					s := make([]byte, n)
					for i := range s {
						s[i] = fill[(i*7+int(fb))%(len(fill)-2)] // neither a quote nor a backslash
					}
					if pos >= 0 {
						s[pos] = target
					}
					for from := 0; from <= n; from++ {
						want := from
						for want < n && s[want] != '"' && s[want] != '\\' {
							want++
						}
						got := toQuoteOrBackslash(s, from)
						if got > want || got < want && got+8 <= n {
							t.Fatalf("%q from %d: %d, the first quote or backslash at %d", s, from, got, want)
						}
					}
				}
			}
		}
	}
}

// TestDateFirst checks the shortcut of the DateTime fast setter: a string
// dateFirst claims for a date is never a number ParseNumber would take (so
// skipping ParseNumber changes nothing), and the date-times it is for are
// claimed.
func TestDateFirst(t *testing.T) {
	for _, s := range []string{"2026-09-19T20:30:09Z", "2026-09-19 20:30:09", "0000-", "1970-01-01"} {
		if !dateFirst([]byte(s)) {
			t.Errorf("dateFirst(%q) = false, want true", s)
		}
	}
	check := func(s string) {
		if _, isNum := decode.ParseNumber([]byte(s)); isNum && dateFirst([]byte(s)) {
			t.Errorf("dateFirst(%q) = true for a number", s)
		}
	}
	for _, s := range []string{"123e-5", "1234e-5", "12e-45", "-123-", "1.2e-5", "1234-", "12345", "-1234", "1e-10"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789-+.eE"
	b := make([]byte, 0, 12)
	for range 200000 {
		b = b[:0]
		for range 1 + rng.IntN(10) {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		check(string(b))
	}
}
