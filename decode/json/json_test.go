package json

import (
	"github.com/etl-project/etl/decode"

	"errors"
	"strings"
	"testing"
)

// ok and fail build table rows: the value decoded into the column, and
// what it renders as or the reason it is rejected.
type convCase struct {
	typ    string
	json   string // the value of field "v"; "" means the field is missing
	want   string // rendered value when reason is ""
	reason decode.Reason
}

func ok(typ, json, want string) convCase { return convCase{typ: typ, json: json, want: want} }
func fail(typ, json string, r decode.Reason) convCase {
	return convCase{typ: typ, json: json, reason: r}
}

var convCases = []convCase{
	// Signed integers.
	ok("Int8", "127", "127"),
	ok("Int8", "-128", "-128"),
	fail("Int8", "128", decode.ReasonOutOfRange),
	fail("Int8", "-129", decode.ReasonOutOfRange),
	ok("Int8", "true", "1"),
	ok("Int8", "false", "0"),
	ok("Int16", "-32768", "-32768"),
	fail("Int16", "32768", decode.ReasonOutOfRange),
	ok("Int32", "2147483647", "2147483647"),
	fail("Int32", "-2147483649", decode.ReasonOutOfRange),
	ok("Int64", "9223372036854775807", "9223372036854775807"),
	ok("Int64", "-9223372036854775808", "-9223372036854775808"),
	fail("Int64", "9223372036854775808", decode.ReasonOutOfRange),
	fail("Int64", "-9223372036854775809", decode.ReasonOutOfRange),
	ok("Int64", `"-42"`, "-42"),
	ok("Int64", "1e3", "1000"),
	ok("Int64", "1.5e1", "15"),
	ok("Int64", "10.0", "10"),
	ok("Int64", "-0", "0"),
	ok("Int64", "0e999999999999", "0"),
	fail("Int64", "1e999999999999", decode.ReasonOutOfRange),
	fail("Int64", "1.5", decode.ReasonWrongType),
	fail("Int64", "1e-1", decode.ReasonWrongType),
	fail("Int64", `"12a"`, decode.ReasonWrongType),
	fail("Int64", `""`, decode.ReasonWrongType),
	fail("Int64", `" 1"`, decode.ReasonWrongType),
	fail("Int64", "true", decode.ReasonWrongType),
	fail("Int64", "[1]", decode.ReasonWrongType),
	fail("Int64", `{"a":1}`, decode.ReasonWrongType),
	fail("Int64", "NaN", decode.ReasonCorrupt),
	fail("Int64", "-Inf", decode.ReasonCorrupt),
	fail("Int64", "1-2", decode.ReasonCorrupt),
	fail("Int64", "01", decode.ReasonCorrupt),
	// Unsigned integers.
	ok("UInt8", "255", "255"),
	fail("UInt8", "256", decode.ReasonOutOfRange),
	fail("UInt8", "-1", decode.ReasonOutOfRange),
	ok("UInt8", "true", "1"),
	ok("UInt8", "-0", "0"),
	ok("UInt16", "65535", "65535"),
	fail("UInt16", "65536", decode.ReasonOutOfRange),
	fail("UInt16", "false", decode.ReasonWrongType),
	ok("UInt32", "4294967295", "4294967295"),
	fail("UInt32", "5000000000", decode.ReasonOutOfRange),
	ok("UInt64", "18446744073709551615", "18446744073709551615"),
	ok("UInt64", `"18446744073709551615"`, "18446744073709551615"),
	ok("UInt64", "1.8446744073709551615e19", "18446744073709551615"),
	fail("UInt64", "18446744073709551616", decode.ReasonOutOfRange),
	fail("UInt64", "99999999999999999999999", decode.ReasonOutOfRange),
	fail("UInt64", "0.5", decode.ReasonWrongType),
	// Floats.
	ok("Float64", "1.25", "1.25"),
	ok("Float64", "-2e-3", "-0.002"),
	ok("Float64", `"3.5"`, "3.5"),
	ok("Float64", "12345678901234567890", "1.2345678901234567e+19"),
	ok("Float64", "1e-400", "0"),
	fail("Float64", "1e400", decode.ReasonOutOfRange),
	fail("Float64", `"1,5"`, decode.ReasonWrongType),
	fail("Float64", `"NaN"`, decode.ReasonWrongType),
	fail("Float64", "true", decode.ReasonWrongType),
	ok("Float32", "1.5", "1.5"),
	fail("Float32", "1e39", decode.ReasonOutOfRange),
	// Bool.
	ok("Bool", "true", "true"),
	ok("Bool", "false", "false"),
	ok("Bool", "1", "true"),
	ok("Bool", "0", "false"),
	fail("Bool", "2", decode.ReasonOutOfRange),
	fail("Bool", `"true"`, decode.ReasonWrongType),
	// Strings.
	ok("String", `"plain"`, "plain"),
	ok("String", `"q\"b\\s\/\n\u00e9\ud83d\ude00"`, "q\"b\\s/\né😀"),
	ok("String", `""`, ""),
	ok("String", "12.50", "12.50"),
	ok("String", "true", "true"),
	ok("String", `{"a": [1, "x"]}`, `{"a":[1,"x"]}`),
	ok("String", `[1, 2]`, `[1,2]`),
	ok("LowCardinality(String)", `"lc"`, "lc"),
	ok("FixedString(3)", `"abc"`, "abc"),
	ok("FixedString(3)", `"ab"`, "ab"),
	ok("FixedString(2)", `"é"`, "é"),
	fail("FixedString(3)", `"abcd"`, decode.ReasonOutOfRange),
	fail("FixedString(3)", "1", decode.ReasonWrongType),
	// UUID.
	ok("UUID", `"123e4567-e89b-12d3-a456-426614174000"`, "123e4567-e89b-12d3-a456-426614174000"),
	ok("UUID", `"123E4567-E89B-12D3-A456-426614174000"`, "123E4567-E89B-12D3-A456-426614174000"),
	fail("UUID", `"123e4567e89b12d3a456426614174000"`, decode.ReasonWrongType),
	fail("UUID", `"123e4567-e89b-12d3-a456-42661417400g"`, decode.ReasonWrongType),
	fail("UUID", "1", decode.ReasonWrongType),
	// Decimal.
	ok("Decimal(9, 2)", "1234567.89", "1234567.89"),
	ok("Decimal(9, 2)", `"-0.5"`, "-0.5"),
	ok("Decimal64(4)", "1e3", "1000"),
	fail("Decimal(9, 2)", "12345678.9", decode.ReasonOutOfRange),
	fail("Decimal(9, 2)", `"1.2.3"`, decode.ReasonWrongType),
	fail("Decimal(9, 2)", "true", decode.ReasonWrongType),
	// Enums.
	ok("Enum8('a' = 1, 'b' = 2)", `"b"`, "b"),
	ok("Enum8('a' = 1, 'b' = 2)", "1", "a"),
	ok("Enum8('a' = 1, 'b' = 2)", `"2"`, "b"),
	ok("Enum16('x' = -300, 'it''s' = 7)", "-300", "x"),
	fail("Enum8('a' = 1, 'b' = 2)", `"c"`, decode.ReasonOutOfRange),
	fail("Enum8('a' = 1, 'b' = 2)", "3", decode.ReasonOutOfRange),
	fail("Enum8('a' = 1, 'b' = 2)", "1.5", decode.ReasonOutOfRange),
	fail("Enum8('a' = 1, 'b' = 2)", "true", decode.ReasonWrongType),
	// DateTime from strings.
	ok("DateTime", `"2026-11-29T10:00:00Z"`, "1795946400"),
	ok("DateTime", `"2026-11-29T10:00:00"`, "1795946400"),
	ok("DateTime", `"2026-11-29 10:00:00"`, "1795946400"),
	ok("DateTime", `"2026-11-29t10:00:00z"`, "1795946400"),
	ok("DateTime", `"2026-11-29T10:00:00.999999Z"`, "1795946400"),
	ok("DateTime", `"2026-11-29T12:30:00+02:30"`, "1795946400"),
	ok("DateTime", `"2026-11-29T08:00:00-0200"`, "1795946400"),
	ok("DateTime", `"2026-11-29T11:00:00+01"`, "1795946400"),
	ok("DateTime", `"2026-11-29"`, "1795910400"),
	ok("DateTime", `"1970-01-01T00:00:00Z"`, "0"),
	ok("DateTime", `"2106-02-06T23:59:59Z"`, "4294943999"), // the default (narrower) range
	// A text without an offset is local time in the column's zone; with
	// one, or as a number, it is an instant.
	ok("DateTime('Europe/Berlin')", `"2026-11-29 10:00:00"`, "1795942800"),
	ok("DateTime('Europe/Berlin')", `"2026-11-29T10:00:00Z"`, "1795946400"),
	ok("DateTime('Europe/Berlin')", `"2026-11-29T10:00:00+01:00"`, "1795942800"),
	ok("DateTime('Europe/Berlin')", "1795946400", "1795946400"),
	ok("DateTime('Europe/Berlin')", `"1795946400"`, "1795946400"),
	ok("DateTime('Asia/Tokyo')", `"2021-01-01 00:00:00"`, "1609426800"),
	ok("DateTime('Asia/Tokyo')", `"2021-01-01"`, "1609426800"),
	ok("DateTime('Asia/Tokyo')", `"2106-02-06 23:59:59"`, "4294911599"), // the narrower range, in Tokyo
	fail("DateTime('Asia/Tokyo')", `"2106-02-07 00:00:00"`, decode.ReasonOutOfRange),
	fail("DateTime('Asia/Tokyo')", `"1970-01-01 08:59:59"`, decode.ReasonOutOfRange),
	ok("DateTime('Asia/Tokyo')", `"1970-01-01 09:00:00"`, "0"),
	ok("DateTime('America/New_York')", `"2106-02-06 18:59:59"`, "4294943999"),
	fail("DateTime('America/New_York')", `"2106-02-06 19:00:00"`, decode.ReasonOutOfRange),
	fail("DateTime('America/New_York')", `"1969-12-31 23:59:59"`, decode.ReasonOutOfRange), // before 18.16's tables in that zone
	ok("DateTime('America/New_York')", `"1970-01-01 00:00:00"`, "18000"),
	// Daylight saving: a time in a gap takes the later offset, a time in
	// an overlap its first instant (as the server's date tables do).
	ok("DateTime('America/New_York')", `"2021-03-14 02:30:00"`, "1615703400"),
	ok("DateTime('America/New_York')", `"2021-11-07 01:30:00"`, "1636263000"),
	ok("DateTime('Europe/Berlin')", `"2021-03-28 02:30:00"`, "1616891400"),
	ok("DateTime('Europe/Berlin')", `"2021-10-31 02:30:00"`, "1635640200"),
	ok("DateTime('Asia/Kolkata')", `"2021-01-01 00:00:00"`, "1609439400"),
	ok("DateTime", `"2024-02-29T23:59:59Z"`, "1709251199"),
	fail("DateTime", `"2106-02-07T00:00:00Z"`, decode.ReasonOutOfRange),
	fail("DateTime", `"1969-12-31T23:59:59Z"`, decode.ReasonOutOfRange),
	fail("DateTime", `"1970-01-01T00:30:00+01:00"`, decode.ReasonOutOfRange),
	fail("DateTime", `"2025-02-29T00:00:00Z"`, decode.ReasonOutOfRange),
	fail("DateTime", `"2026-13-01T00:00:00Z"`, decode.ReasonOutOfRange),
	fail("DateTime", `"2026-11-29T24:00:00Z"`, decode.ReasonOutOfRange),
	fail("DateTime", `"2026-11-29T10:00"`, decode.ReasonOutOfRange),
	fail("DateTime", `"2026-11-29T10:00:00."`, decode.ReasonOutOfRange),
	fail("DateTime", `"2026-11-29T10:00:00+2"`, decode.ReasonOutOfRange),
	fail("DateTime", `"yesterday"`, decode.ReasonOutOfRange),
	fail("DateTime", "true", decode.ReasonWrongType),
	fail("DateTime", "[]", decode.ReasonWrongType),
	// DateTime from epoch numbers: seconds, ms, µs, ns.
	ok("DateTime", "1795946400", "1795946400"),
	ok("DateTime", `"1795946400"`, "1795946400"),
	ok("DateTime", "1795946400123", "1795946400"),
	ok("DateTime", "1795946400123456", "1795946400"),
	ok("DateTime", "1795946400123456789", "1795946400"),
	ok("DateTime", "1795946400.75", "1795946400"),
	ok("DateTime", "1.7959464e9", "1795946400"),
	ok("DateTime", "0", "0"),
	ok("DateTime", "4294943999", "4294943999"),
	fail("DateTime", "4294944000", decode.ReasonOutOfRange),
	fail("DateTime", "99999999999", decode.ReasonOutOfRange), // 1e11-1: seconds, year 5138
	fail("DateTime", "-1", decode.ReasonOutOfRange),
	fail("DateTime", "-0.5", decode.ReasonOutOfRange),
	fail("DateTime", "1e30", decode.ReasonOutOfRange),
	// Date.
	ok("Date", `"2026-11-29"`, "2026-11-29"),
	ok("Date", `"2026-11-29T23:00:00-02:00"`, "2026-11-30"),
	ok("Date", "1795946400", "2026-11-29"),
	ok("Date", "1795946400000", "2026-11-29"),
	// A string of eight digits is a compact date; other strings of digits
	// are not dates (never seconds).
	ok("Date", `"20210101"`, "2021-01-01"),
	ok("Date", `"21060207"`, "2106-02-07"),
	fail("Date", `"21060208"`, decode.ReasonOutOfRange),
	fail("Date", `"20210230"`, decode.ReasonWrongType),
	fail("Date", `"1795946400"`, decode.ReasonWrongType),
	fail("Date", `"18000"`, decode.ReasonWrongType),
	ok("Date", `"2021-01-01 23:30:00"`, "2021-01-01"),
	ok("Date", `"2106-02-07"`, "2106-02-07"),
	fail("Date", `"2106-02-08"`, decode.ReasonOutOfRange),
	fail("Date", `"1969-12-31"`, decode.ReasonOutOfRange),
	fail("Date", "false", decode.ReasonWrongType),
	// Nullable.
	ok("Nullable(Int32)", "null", "NULL"),
	ok("Nullable(Int32)", "", "NULL"),
	ok("Nullable(Int32)", "5", "5"),
	ok("Nullable(String)", `"s"`, "s"),
	ok("Nullable(String)", `""`, ""),
	ok("LowCardinality(Nullable(String))", "null", "NULL"),
	ok("Nullable(DateTime)", `"2026-11-29T10:00:00Z"`, "1795946400"),
	fail("Nullable(UInt8)", "300", decode.ReasonOutOfRange),
	// Defaults for null and missing.
	ok("Int32", "null", "0"),
	ok("Int32", "", "0"),
	ok("String", "null", ""),
	ok("String", "", ""),
	ok("DateTime", "null", "0"),
	ok("Date", "", "1970-01-01"),
	ok("Array(Int32)", "null", "[]"),
	ok("Array(Int32)", "", "[]"),
	// Arrays.
	ok("Array(Int32)", "[1, 2, 3]", "[1,2,3]"),
	ok("Array(Int32)", "[]", "[]"),
	ok("Array(Int32)", "[1, null, 3]", "[1,0,3]"),
	ok("Array(Nullable(Int32))", "[1, null, 3]", "[1,NULL,3]"),
	ok("Array(String)", `["a", "b\"", 3, null]`, `[a,b",3,]`),
	ok("Array(LowCardinality(String))", `["a"]`, "[a]"),
	ok("Array(Array(UInt8))", "[[1, 2], [], null, [3]]", "[[1,2],[],[],[3]]"),
	ok("Array(Array(Array(String)))", `[[["a"], []], [["b", "c"]]]`, "[[[a],[]],[[b,c]]]"),
	ok("Array(DateTime)", `["2026-11-29T10:00:00Z", 1795946400000]`, "[1795946400,1795946400]"),
	ok("Array(Nullable(String))", `[null, "x"]`, "[NULL,x]"),
	fail("Array(Int32)", "1", decode.ReasonWrongType),
	fail("Array(Int32)", `"[1]"`, decode.ReasonWrongType),
	fail("Array(Int32)", "[1, 2.5]", decode.ReasonWrongType),
	fail("Array(UInt8)", "[1, 256]", decode.ReasonOutOfRange),
	fail("Array(Array(UInt8))", "[[1], 2]", decode.ReasonWrongType),
	fail("Array(Array(UInt8))", "[[1], [2, -1]]", decode.ReasonOutOfRange),
}

// TestConversions decodes each case as the second row of a chunk with a
// sentinel column before and after, so a failure must also leave the
// chunk's first row and every buffer as they were.
func TestConversions(t *testing.T) {
	for _, tc := range convCases {
		name := tc.typ + "/" + tc.json
		t.Run(name, func(t *testing.T) {
			s := schemaOf(t, "a String", "v "+tc.typ, "z Array(String)")
			d, err := New(s, Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			c := newChunk(t, s)
			if _, err := d.Decode([]byte(`{"a":"first","v":null,"z":["x"]}`), c); err != nil {
				t.Fatalf("decode first row: %v", err)
			}
			before := dump(c)
			rec := `{"a":"second","z":["y","z"]}`
			if tc.json != "" {
				rec = `{"a":"second","v":` + tc.json + `,"z":["y","z"]}`
			}
			rows, err := d.Decode([]byte(rec), c)
			if cerr := checkConsistent(c); cerr != nil {
				t.Fatalf("after %s: %v", rec, cerr)
			}
			if tc.reason != "" {
				var de *decode.Error
				if !errors.As(err, &de) {
					t.Fatalf("Decode(%s) = %d, %v; want *decode.Error %s", rec, rows, err, tc.reason)
				}
				if de.Reason != tc.reason || rows != 0 {
					t.Fatalf("Decode(%s) = %d, %v (%s); want reason %s", rec, rows, err, de.Reason, tc.reason)
				}
				if de.Field != "v" || de.Column != "v" || de.Type != tc.typ {
					t.Errorf("error names field %q column %q type %q", de.Field, de.Column, de.Type)
				}
				if after := dump(c); after != before {
					t.Fatalf("failed decode changed the chunk:\nbefore\n%s\nafter\n%s", before, after)
				}
				return
			}
			if err != nil || rows != 1 {
				t.Fatalf("Decode(%s) = %d, %v", rec, rows, err)
			}
			if got := render(c.Cols[1], 1); got != tc.want {
				t.Errorf("Decode(%s): got %q, want %q", rec, got, tc.want)
			}
			if got := render(c.Cols[0], 1) + " " + render(c.Cols[2], 1); got != "second [y,z]" {
				t.Errorf("neighbour columns: got %q", got)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	s := schemaOf(t, "amount UInt32", "note String")
	d, err := New(s, Options{Fields: []string{"amt", "note"}})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	_, err = d.Decode([]byte(`{"amt":5000000000}`), c)
	want := `field "amt" -> column amount (UInt32): value 5000000000 out of range`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}

	long := strings.Repeat("é", 100)
	_, err = d.Decode([]byte(`{"amt":"`+long+`"}`), c)
	var de *decode.Error
	if !errors.As(err, &de) || de.Reason != decode.ReasonWrongType {
		t.Fatalf("got %v", err)
	}
	msg := de.Err.Error()
	// "value " + at most 64 bytes cut at a rune boundary + "..." + rest.
	if !strings.HasPrefix(msg, `value "éé`) || !strings.Contains(msg, `é... is not a number`) || len(msg) > 6+64+3+len(" is not a number") {
		t.Errorf("long value not cut to 64 bytes: %q", msg)
	}

	_, err = d.Decode([]byte(`{"amt":"x"}`), c)
	want = `field "amt" -> column amount (UInt32): value "x" is not a number`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = d.Decode([]byte(`{"amt":[1]}`), c)
	want = `field "amt" -> column amount (UInt32): value [1] is an array, want a number`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestRecordErrors(t *testing.T) {
	s := schemaOf(t, "a Int32")
	d, err := New(s, Options{MaxRecordBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rec    string
		reason decode.Reason
	}{
		{``, decode.ReasonCorrupt},
		{`{`, decode.ReasonCorrupt},
		{`{"a":1}x`, decode.ReasonCorrupt},
		{`{"a":1,}`, decode.ReasonCorrupt},
		{`[1,2]`, decode.ReasonCorrupt},
		{`"str"`, decode.ReasonCorrupt},
		{`null`, decode.ReasonCorrupt},
		{`{"a":1,"b":"` + strings.Repeat("x", 20) + `"}`, decode.ReasonTooLarge},
		{`not json at all, and long enough`, decode.ReasonTooLarge},
	} {
		c := newChunk(t, s)
		rows, err := d.Decode([]byte(tc.rec), c)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != tc.reason || rows != 0 {
			t.Errorf("Decode(%q) = %d, %v; want reason %s", tc.rec, rows, err, tc.reason)
			continue
		}
		if de.Field != "" || de.Column != "" || !strings.HasPrefix(de.Error(), "record "+string(tc.reason)+": ") {
			t.Errorf("Decode(%q): whole-record error %q names field %q column %q", tc.rec, de.Error(), de.Field, de.Column)
		}
		if c.Rows != 0 || c.Cols[0].Len() != 0 {
			t.Errorf("Decode(%q) left %d rows", tc.rec, c.Rows)
		}
	}
	// Exactly the limit is accepted.
	c := newChunk(t, s)
	rec := `{"a":1,"bb":"xxxxx"}`
	if len(rec) != 20 {
		t.Fatalf("test record is %d bytes", len(rec))
	}
	if _, err := d.Decode([]byte(rec), c); err != nil {
		t.Errorf("record of exactly MaxRecordBytes: %v", err)
	}
}

func TestFieldsMapping(t *testing.T) {
	s := schemaOf(t, "id UInt64", "copy String", "unset Nullable(Int8)", "unset2 Array(Int8)", "name String")
	d, err := New(s, Options{Fields: []string{"id", "id", "", "", "user name"}})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	// Extra fields are ignored; an escaped key matches; a duplicate key
	// takes the last value.
	rec := `{"extra":{"x":[1,2]},"id":7,"unset":5,"unset2":[1],"user\u0020name":"bob","id":8}`
	if _, err := d.Decode([]byte(rec), c); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for i := range c.Cols {
		got = append(got, render(c.Cols[i], 0))
	}
	if g := strings.Join(got, "|"); g != "8|8|NULL|[]|bob" {
		t.Errorf("got %s", g)
	}

	if _, err := New(s, Options{Fields: []string{"a"}}); err == nil {
		t.Error("New accepted 1 field for 5 columns")
	}
	if _, err := New(s, Options{MaxRecordBytes: -1}); err == nil {
		t.Error("New accepted a negative MaxRecordBytes")
	}
}

func TestEmptyObjectGivesDefaults(t *testing.T) {
	s := schemaOf(t, "a Int64", "b Nullable(String)", "c Array(Array(String))", "d Date", "e Enum8('y' = 3, 'x' = -1, 'z' = 0)", "f Bool", "g UUID", "h Decimal(5, 2)")
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	for _, rec := range []string{`{}`, ` { "a" : null , "b":null, "c":null, "d":null, "e":null, "f":null, "g":null, "h":null } `} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("Decode(%s): %v", rec, err)
		}
	}
	for r := range 2 {
		var got []string
		for i := range c.Cols {
			got = append(got, render(c.Cols[i], r))
		}
		if g := strings.Join(got, "|"); g != "0|NULL|[]|1970-01-01|x|false|00000000-0000-0000-0000-000000000000|0" {
			t.Errorf("row %d: got %s", r, g)
		}
	}
}

// TestFailureLeavesChunk fails records at every column, including in the
// middle of nested arrays and after nullable values were appended, and
// checks the chunk is exactly as before each time.
func TestFailureLeavesChunk(t *testing.T) {
	s := schemaOf(t, "n Nullable(UInt8)", "a Array(Array(Nullable(Int16)))", "s String",
		"t Array(Nullable(DateTime))", "u UInt8", "f FixedString(2)")
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	good := []string{
		`{"n":7,"a":[[1,null],[2]],"s":"s1","t":[1795946400,null],"u":1,"f":"ab"}`,
		`{}`,
		`{"n":null,"a":[],"s":{"k":1},"t":[],"u":true,"f":""}`,
	}
	bad := []string{
		`{"n":"x"}`,
		`{"n":3,"a":[[1,2],[3,"x"]]}`,
		`{"n":3,"a":[[1,2],[3,40000]]}`,
		`{"n":3,"a":[[1,2],5]}`,
		`{"n":3,"a":[[1,2]],"s":"s","t":[1795946400,"bad"]}`,
		`{"n":3,"a":[[1,2]],"s":"s","t":[1795946400,null],"u":-1}`,
		`{"n":3,"a":[[1,2]],"s":"s","t":[1795946400,null],"u":1,"f":"abc"}`,
		`{"n":3,"a":[[1,2]],"s":"s","t":[1795946400,null],"u":1,"f":"ab"`,
	}
	for i, rec := range good {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("good record %d: %v", i, err)
		}
		for _, b := range bad {
			before := dump(c)
			if _, err := d.Decode([]byte(b), c); err == nil {
				t.Fatalf("bad record %s decoded", b)
			}
			if err := checkConsistent(c); err != nil {
				t.Fatalf("after %s: %v", b, err)
			}
			if after := dump(c); after != before {
				t.Fatalf("after %s the chunk changed:\nbefore\n%s\nafter\n%s", b, before, after)
			}
		}
	}
	if c.Rows != len(good) {
		t.Fatalf("rows %d, want %d", c.Rows, len(good))
	}
	want := []string{
		"7|[[1,NULL],[2]]|s1|[1795946400,NULL]|1|ab",
		"NULL|[]||[]|0|",
		`NULL|[]|{"k":1}|[]|1|`,
	}
	for r := range c.Rows {
		var got []string
		for i := range c.Cols {
			got = append(got, render(c.Cols[i], r))
		}
		if g := strings.Join(got, "|"); g != want[r] {
			t.Errorf("row %d: got %s, want %s", r, g, want[r])
		}
	}
}

func TestSchemaMismatchPanics(t *testing.T) {
	d, err := New(schemaOf(t, "a Int64"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// An equal schema built separately is fine.
	if _, err := d.Decode([]byte(`{"a":1}`), newChunk(t, schemaOf(t, "a Int64"))); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for a chunk of another schema")
		}
	}()
	d.Decode([]byte(`{"a":1}`), newChunk(t, schemaOf(t, "a String")))
}

func TestParseNumberGrammar(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1", "10", "1.5", "0.0", "1e5", "1E+5", "1e-5", "-1.5e-10"} {
		if _, ok := decode.ParseNumber([]byte(s)); !ok {
			t.Errorf("decode.ParseNumber(%q) rejected", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1.e5", "0x10", "1_000", "Inf", "NaN", "1 ", " 1", "--1", "1e5.5"} {
		if _, ok := decode.ParseNumber([]byte(s)); ok {
			t.Errorf("decode.ParseNumber(%q) accepted", s)
		}
	}
}
