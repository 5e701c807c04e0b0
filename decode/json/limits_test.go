package json

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/sink/clickhouse/native"
)

// decimalCases: the range of a Decimal holds whatever the form of the
// number (an exponent, a string), at and one past the bound of every
// width; a number with an exponent is stored as its plain text; a nonzero
// digit past the scale is refused in every form, zeros there are taken.
var decimalCases = []convCase{
	// Decimal32: precision 9.
	ok("Decimal(9, 0)", "999999999", "999999999"),
	ok("Decimal(9, 0)", "9.99e8", "999000000"),
	ok("Decimal(9, 0)", "9.99999999e8", "999999999"),
	ok("Decimal(9, 0)", "-9.99999999e8", "-999999999"),
	fail("Decimal(9, 0)", "999999999.9e0", decode.ReasonOutOfRange),
	ok("Decimal(9, 0)", "999999999.0e0", "999999999"),
	fail("Decimal(9, 0)", "1e9", decode.ReasonOutOfRange),
	fail("Decimal(9, 0)", "-1e9", decode.ReasonOutOfRange),
	fail("Decimal(9, 0)", "1000000000", decode.ReasonOutOfRange),
	fail("Decimal(9, 0)", "0.1e10", decode.ReasonOutOfRange),
	fail("Decimal(9, 0)", `"1e9"`, decode.ReasonOutOfRange),
	ok("Decimal32(2)", "9.9999999e6", "9999999.9"),
	fail("Decimal32(2)", "1e7", decode.ReasonOutOfRange),
	// Decimal64: precision 18.
	ok("Decimal(18, 2)", "9.999999999999999e15", "9999999999999999"),
	fail("Decimal(18, 2)", "1e16", decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", "1e30", decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", `"1e30"`, decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", "1e999999999", decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", `"1e999999999"`, decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", "-1E+999999999", decode.ReasonOutOfRange),
	fail("Decimal(18, 2)", "1e99999999999999999999", decode.ReasonOutOfRange),
	ok("Decimal64(4)", "1e13", "10000000000000"),
	fail("Decimal64(4)", "1e14", decode.ReasonOutOfRange),
	// Decimal128: precision 38.
	ok("Decimal(38, 0)", "9.9e37", "99"+strings.Repeat("0", 36)),
	fail("Decimal(38, 0)", "1e38", decode.ReasonOutOfRange),
	ok("Decimal128(10)", "1.5e27", "15"+strings.Repeat("0", 26)),
	fail("Decimal128(10)", "1e28", decode.ReasonOutOfRange),
	// Decimal256: precision 76.
	ok("Decimal(76, 0)", "1e75", "1"+strings.Repeat("0", 75)),
	fail("Decimal(76, 0)", "1e76", decode.ReasonOutOfRange),
	fail("Decimal(76, 0)", "10e75", decode.ReasonOutOfRange),
	ok("Decimal(76, 10)", "-9.5e65", "-95"+strings.Repeat("0", 64)),
	fail("Decimal(76, 10)", "1e66", decode.ReasonOutOfRange),
	// Fractions: plain text is kept as written, an exponent form becomes
	// plain text; a nonzero digit past the scale is refused, as the
	// server refuses it (19.999 into Decimal(12, 2) is not 19.99).
	fail("Decimal(9, 2)", "0.001", decode.ReasonOutOfRange),
	fail("Decimal(12, 2)", "19.999", decode.ReasonOutOfRange),
	fail("Decimal(12, 2)", "0.005", decode.ReasonOutOfRange),
	fail("Decimal(12, 2)", "-0.005", decode.ReasonOutOfRange),
	fail("Decimal(12, 2)", `"19.999"`, decode.ReasonOutOfRange),
	fail("Nullable(Decimal(12, 2))", "19.999", decode.ReasonOutOfRange),
	ok("Decimal(12, 2)", "19.990", "19.990"),
	ok("Decimal(12, 2)", "19.99", "19.99"),
	fail("Decimal(9, 2)", "1e-3", decode.ReasonOutOfRange),
	fail("Decimal(9, 2)", "-1e-3", decode.ReasonOutOfRange),
	fail("Decimal(9, 2)", "1.5e-2", decode.ReasonOutOfRange),
	ok("Decimal(9, 2)", "1.5e-1", "0.15"),
	ok("Decimal(9, 2)", "1.50e-1", "0.15"),
	fail("Decimal(9, 2)", "-1.239e0", decode.ReasonOutOfRange),
	ok("Decimal(9, 2)", "-1.230e0", "-1.23"),
	ok("Decimal(9, 2)", "12.5e-1", "1.25"),
	ok("Decimal(9, 2)", "1e2", "100"),
	ok("Decimal(9, 2)", "0e999999999", "0"),
	fail("Decimal(9, 2)", "1e-999999999", decode.ReasonOutOfRange),
	fail("Decimal(9, 2)", `"1e-999999999"`, decode.ReasonOutOfRange),
	fail("Decimal(9, 2)", "-1e-99999999999999999999", decode.ReasonOutOfRange),
	ok("Decimal(9, 2)", "0e-99999999999999999999", "0"),
	ok("Decimal(76, 76)", "1e-76", "0."+strings.Repeat("0", 75)+"1"),
	fail("Decimal(76, 76)", "1e-77", decode.ReasonOutOfRange),
}

func TestDecimalRange(t *testing.T) {
	for _, tc := range decimalCases {
		t.Run(tc.typ+"/"+tc.json, func(t *testing.T) {
			s := schemaOf(t, "v "+tc.typ)
			d, err := New(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := newChunk(t, s)
			rec := `{"v":` + tc.json + `}`
			rows, err := d.Decode([]byte(rec), c)
			if tc.reason != "" {
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != tc.reason || rows != 0 {
					t.Fatalf("Decode(%s) = %d, %v; want reason %s", rec, rows, err, tc.reason)
				}
				return
			}
			if err != nil || rows != 1 {
				t.Fatalf("Decode(%s) = %d, %v", rec, rows, err)
			}
			if got := render(c.Cols[0], 0); got != tc.want {
				t.Errorf("Decode(%s): got %q, want %q", rec, got, tc.want)
			}
		})
	}
}

// TestDecimalHugeExponentCheap: the work and memory a Decimal takes are
// bounded by its digits and the type, never by its exponent.
func TestDecimalHugeExponentCheap(t *testing.T) {
	s := schemaOf(t, "v Decimal(76, 76)")
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := [][]byte{
		[]byte(`{"v":1e-999999999}`),
		[]byte(`{"v":"-1.5e-999999999"}`),
		[]byte(`{"v":1e999999999}`),
		[]byte(`{"v":1e-` + strings.Repeat("9", 10000) + `}`),
	}
	c := newChunk(t, s)
	for _, r := range recs { // warm the buffers
		d.Decode(r, c)
	}
	const n = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		c.Reset()
		for _, r := range recs {
			d.Decode(r, c)
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	// Three of the four are refused: their errors, which quote the value,
	// are most of what is allocated.
	if perRecord := (after.TotalAlloc - before.TotalAlloc) / (n * uint64(len(recs))); perRecord > 8192 {
		t.Errorf("%d bytes allocated per record", perRecord)
	}
	if elapsed > 5*time.Second {
		t.Errorf("%d records took %v", n*len(recs), elapsed)
	}
	c.Reset()
	if _, err := d.Decode([]byte(`{"v":0e-999999999}`), c); err != nil || render(c.Cols[0], 0) != "0" {
		t.Errorf("0e-999999999: %v", err)
	}
	if _, err := d.Decode(recs[0], c); err == nil || !strings.Contains(err.Error(), "more fraction digits") {
		t.Errorf("1e-999999999: %v, want a refusal for its scale", err)
	}
}

// TestNonJSONNumbers: Infinity and NaN are named, not reported as a
// missing comma.
func TestNonJSONNumbers(t *testing.T) {
	s := schemaOf(t, "a Float64", "b String")
	for _, tc := range []struct {
		framing, rec, want string
	}{
		{FramingSingle, `{"a":Infinity}`, "Infinity is not a JSON number (at byte 5)"},
		{FramingSingle, `{"a":-Infinity}`, "-Infinity is not a JSON number (at byte 5)"},
		{FramingSingle, `{"b":"Infinity","a":+Infinity}`, "+Infinity is not a JSON number (at byte 20)"},
		{FramingSingle, `{"b":"x","c":[1,-infinity]}`, "-infinity is not a JSON number"},
		{FramingSingle, `Infinity`, "Infinity is not a JSON number (at byte 0)"},
		{FramingSingle, `{"a":NaN}`, "NaN is not a valid JSON number"},
		{FramingArray, `[{"a":1},{"a":-Infinity}]`, "-Infinity is not a JSON number"},
		{FramingNDJSON, "{\"a\":1}\n{\"a\":Infinity}", "Infinity is not a JSON number"},
	} {
		d, err := New(s, Options{Framing: tc.framing})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Decode([]byte(tc.rec), newChunk(t, s))
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt {
			t.Errorf("Decode(%s) = %v, want reason corrupt", tc.rec, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "missing ','") {
			t.Errorf("Decode(%s) = %q, want it to say %q", tc.rec, err, tc.want)
		}
	}
}

// TestDeepNestingError: a record nested past fastjson's limit gives its
// cause first, and no decode error is longer than 1 KiB.
func TestDeepNestingError(t *testing.T) {
	s := schemaOf(t, "a String")
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{
		`{"a":` + strings.Repeat(`{"b":`, 400) + `1` + strings.Repeat(`}`, 401),
		`{"a":` + strings.Repeat(`[`, 400) + strings.Repeat(`]`, 400) + `}`,
	} {
		_, err = d.Decode([]byte(rec), newChunk(t, s))
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt {
			t.Fatalf("got %v, want reason corrupt", err)
		}
		msg := err.Error()
		if len(msg) > decode.MaxErrorBytes {
			t.Errorf("error of %d bytes", len(msg))
		}
		if !strings.HasPrefix(msg, "record corrupt: too big depth for the nested JSON") || strings.Contains(msg, "cannot parse") {
			t.Errorf("cause not first: %.300q", msg)
		}
	}
	// Other syntax errors: the cause, then where.
	for rec, want := range map[string]string{
		`{"a":1,}`:        `record corrupt: cannot find opening '"" for object key; unparsed tail: "}"`,
		`{"a":[1,2}`:      `record corrupt: missing ',' after array value (at nesting depth 2); unparsed tail: "}"`,
		`{"a":1}x`:        `record corrupt: unexpected tail: "x"`,
		`{"a":tru}`:       `record corrupt: unexpected value found: "tru}"; unparsed tail: "tru}"`,
		`{"a":"` + "\x01": `record corrupt: cannot parse string: missing closing '"'`,
		`{"a":nul` + strings.Repeat("x", 3000) + `}`: `...` + strings.Repeat("x", 39) + `}"`,
	} {
		_, err = d.Decode([]byte(rec), newChunk(t, s))
		if err == nil || !strings.Contains(err.Error(), want) || len(err.Error()) > 300 {
			t.Errorf("Decode(%.40q) = %.400q, want %q", rec, err, want)
		}
	}
}

// TestDecimalAcceptedEncodes: every Decimal the decoder accepts is one the
// insert can write (the Native encoder converts the text as the driver
// does), quickly, whatever its exponent.
func TestDecimalAcceptedEncodes(t *testing.T) {
	for _, tc := range decimalCases {
		if tc.reason != "" {
			continue
		}
		s := schemaOf(t, "v "+tc.typ)
		d, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := newChunk(t, s)
		if _, err := d.Decode([]byte(`{"v":`+tc.json+`}`), c); err != nil {
			t.Errorf("%s %s: %v", tc.typ, tc.json, err)
			continue
		}
		enc, err := native.NewEncoder(s.Types[0])
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := enc.Prepare([]chunk.Column{c.Cols[0]}); err != nil {
			t.Errorf("%s %s: accepted, but the insert refuses it: %v", tc.typ, tc.json, err)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s %s: encoding took %v", tc.typ, tc.json, el)
		}
		enc.Release()
	}
}
