package protobuf

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// wire builds message bytes field by field.
type wire []byte

func (w wire) varint(num protowire.Number, v uint64) wire {
	return protowire.AppendVarint(protowire.AppendTag(w, num, protowire.VarintType), v)
}

func (w wire) bytes(num protowire.Number, b []byte) wire {
	return protowire.AppendBytes(protowire.AppendTag(w, num, protowire.BytesType), b)
}

func (w wire) str(num protowire.Number, s string) wire { return w.bytes(num, []byte(s)) }

func (w wire) fixed32(num protowire.Number, v uint32) wire {
	return protowire.AppendFixed32(protowire.AppendTag(w, num, protowire.Fixed32Type), v)
}

func (w wire) raw(b ...byte) wire { return append(w, b...) }

// decodeRow decodes one message and renders its row, or returns the
// error.
func decodeRow(t *testing.T, d *Decoder, s *chunk.Schema, w wire) ([]string, error) {
	t.Helper()
	c := newChunk(t, s)
	before := dump(c)
	if _, err := d.Decode(w, c); err != nil {
		if after := dump(c); after != before {
			t.Fatalf("failed Decode changed the chunk:\n%s", after)
		}
		return nil, err
	}
	if err := checkConsistent(c); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(c.Cols))
	for i, col := range c.Cols {
		out[i] = render(col, 0)
	}
	return out, nil
}

func TestWireOrderRepeatsAndMerges(t *testing.T) {
	md := testMessage(t)
	fields := []string{"i32", "inner.a", "inner.b", "inner.r", "inner", "p_i32", "c_i", "c_s", "c_m.a", "m_si", "opt_i32", "items.id", "items.name"}
	d, s := newDecoder(t, md, fields,
		"i32 Int32", "ia Int32", "ib String", "ir Array(Int64)", "it Tuple(a Int32, b String, r Array(Int64))",
		"p Array(Int32)", "ci Nullable(Int64)", "cs Nullable(String)", "cma Nullable(Int32)", "m Map(String, Int64)",
		"o Nullable(Int32)", "items.id Array(Int64)", "items.name Array(String)")
	inner1 := wire{}.varint(1, 5).varint(3, 1)
	inner2 := wire{}.str(2, "x").varint(3, 2).varint(1, 6)
	entry := func(k string, v uint64) []byte { return wire{}.str(1, k).varint(2, v) }
	w := wire{}.
		bytes(26, wire{}.varint(1, 1)).             // items[0]: id 1
		varint(1, 1).                               // i32 = 1
		bytes(25, inner1).                          // inner {a 5, r [1]}
		bytes(19, wire{}.raw(1, 2)).                // p_i32 packed [1 2]
		varint(30, 7).                              // c_i = 7
		bytes(27, entry("k", 1)).                   // m_si k=1
		varint(19, 3).                              // p_i32 unpacked 3
		bytes(26, wire{}.str(2, "n").varint(1, 2)). // items[1]: name n, id 2
		bytes(27, entry("j", 2)).                   // m_si j=2
		bytes(25, inner2).                          // inner merged: {a 6, b x, r [1 2]}
		str(31, "s").                               // c_s replaces c_i
		bytes(27, entry("k", 3)).                   // m_si k=3 replaces k=1
		varint(1, 2)                                // i32 = 2 wins
	got, err := decodeRow(t, d, s, w)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2", "6", "x", "[1,2]", "(6,x,[1,2])", "[1,2,3]", "NULL", "s", "NULL", "{j:2,k:3}", "NULL", "[1,2]", "[,n]"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	// A oneof's message member after its scalar one: the message, its
	// fields flattened.
	got, err = decodeRow(t, d, s, wire{}.str(31, "s").bytes(32, wire{}.varint(1, 9)).varint(17, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got[6] != "NULL" || got[7] != "NULL" || got[8] != "9" || got[10] != "0" {
		t.Fatalf("oneof and optional: got %q", got)
	}
}

func TestAbsentFields(t *testing.T) {
	md := testMessage(t)
	fields := []string{"i32", "opt_i32", "opt_i32", "inner.a", "inner.a", "inner", "color", "ts", "w_i64", "w_i64", "js", "jl", "du", "nope"}
	d, s := newDecoder(t, md, fields,
		"i32 Nullable(Int32)", "o Nullable(Int32)", "oz Int32", "ia Int32", "ian Nullable(Int32)", "it Tuple(Int32, String, Array(Int64))",
		"color String", "ts Nullable(String)", "w Nullable(Int64)", "wz Int64", "js String", "jl String", "du String", "nope String")
	c := newChunk(t, s)
	if _, err := d.Decode([]byte{}, c); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, col := range c.Cols {
		got = append(got, render(col, 0))
	}
	want := []string{"0", "NULL", "0", "0", "NULL", "(0,,[])", "RED", "NULL", "NULL", "0", "{}", "[]", "0s", ""}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if c.Absent == nil || c.Absent[len(fields)-1] != 1 || c.Absent[0] != 0 {
		t.Fatalf("absent marks %v: only the column without a field is marked", c.Absent)
	}
	if _, err := d.Decode(nil, c); err == nil {
		t.Fatal("a tombstone decoded")
	}
}

func TestPlanRefusals(t *testing.T) {
	md := testMessage(t)
	for _, tc := range []struct {
		col, field, version, want string
	}{
		{"x Int32", "st", "", `field "st" (string) -> column x (Int32): string cannot go into Int32`},
		{"x DateTime", "i64", "", "int64 cannot go into DateTime"},
		{"x Int32", "inner", "", "message etl.test.Inner cannot go into Int32"},
		{"x Int32", "st.a", "", `field "st" is string, not a message`},
		{"x Int32", "items.id", "", "the columns its elements' fields feed must be Arrays"},
		{"x Map(String, Int64)", "m_si", "21.3.1", "ClickHouse 21.3.1 has no Map type"},
		{"x Tuple(Int32, String)", "inner", "", "has 3 fields, Tuple(Int32, String) has 2 elements"},
		{"x String", "ts.seconds.x", "", "not a message"},
		{"x Array(String)", "m_si", "", "want a Map"},
		{"x Int64", "js", "", "want String"},
	} {
		s := schemaOf(t, tc.col)
		_, err := New(md, s, Options{Fields: []string{tc.field}, Version: tc.version})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s from %s: got %v, want %q", tc.col, tc.field, err, tc.want)
			continue
		}
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonSchemaMismatch {
			t.Errorf("%s from %s: %v is not schema_mismatch", tc.col, tc.field, err)
		}
	}
	// Before 21.8 a map goes into a Nested structure.
	s := schemaOf(t, "m.key Array(String)", "m.value Array(Int64)")
	if _, err := New(md, s, Options{Fields: []string{"m_si.key", "m_si.value"}, Version: "21.3.1"}); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	md := compileProto(t, map[string]string{"v.proto": `syntax = "proto3"; message V { int64 a = 1; string b = 2; }`}, "V")
	s := schemaOf(t, "a Int64", "c String", "d Nullable(String)")
	if _, err := New(md, s, Options{Validate: ValidateOff}); err != nil {
		t.Fatal(err)
	}
	_, err := New(md, s, Options{Validate: ValidateNames})
	if err == nil || !strings.Contains(err.Error(), `field "b" has no column`) || strings.Contains(err.Error(), "column c") {
		t.Fatalf("names: %v", err)
	}
	_, err = New(md, s, Options{Validate: ValidateFull})
	if err == nil || !strings.Contains(err.Error(), "column c (String) is filled by no field") || strings.Contains(err.Error(), "column d") {
		t.Fatalf("full: %v", err)
	}
}

func TestConversionsAndRanges(t *testing.T) {
	md := testMessage(t)
	fields := []string{"i64", "st", "by", "color", "ts", "ts", "du", "du", "u32", "st"}
	d, s := newDecoder(t, md, fields,
		"i Int8", "fs FixedString(3)", "u UUID", "e Enum8('RED' = 0, 'BLUE' = 2)", "dt DateTime", "d Date",
		"di Int32", "dd Decimal(9, 3)", "ip IPv4", "dec Decimal(5, 1)")
	ts := func(sec uint64, ns uint64) []byte { return wire{}.varint(1, sec).varint(2, ns) }
	good := wire{}.varint(2, uint64(1<<64-128)). // -128
							str(14, "1.5").bytes(15, []byte("0123456789abcdef")).varint(16, 2).
							bytes(33, ts(86400*365, 5)).bytes(34, wire{}.varint(1, 90).varint(2, 500000000)).
							varint(3, 0x7f000001)
	got, err := decodeRow(t, d, s, good)
	if err != nil {
		t.Fatal(err)
	}
	want := "-128 | 1.5 | 30313233-3435-3637-3839-616263646566 | BLUE | 31536000 | 1971-01-01 | 90 | 90.500 | 2130706433 | 1.5"
	if g := strings.Join(got, " | "); g != want {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
	for _, tc := range []struct {
		name   string
		w      wire
		reason decode.Reason
		want   string
	}{
		{"int8", wire{}.varint(2, 128), decode.ReasonOutOfRange, "value 128 out of range"},
		{"fixedstring", wire{}.str(14, "abcd"), decode.ReasonOutOfRange, "longer than 3 bytes"},
		{"uuid", wire{}.bytes(15, []byte("short")), decode.ReasonWrongType, "not a UUID"},
		{"enum not in column", wire{}.varint(16, 1), decode.ReasonOutOfRange, `"GREEN" is not a value of the enum`},
		{"enum undeclared", wire{}.varint(16, 9), decode.ReasonOutOfRange, "number 9 is not a value of enum etl.test.Color"},
		{"before 1970", wire{}.bytes(33, wire{}.varint(1, 1<<64-1)), decode.ReasonOutOfRange, "1969-12-31T23:59:59Z"},
		{"past 2106", wire{}.bytes(33, ts(5000000000, 0)), decode.ReasonOutOfRange, "timestamp 2128"},
		{"bad timestamp", wire{}.bytes(33, ts(0, 1e9)), decode.ReasonOutOfRange, "not a valid google.protobuf.Timestamp"},
		{"bad duration", wire{}.bytes(34, wire{}.varint(1, 1).varint(2, 1<<64-1)), decode.ReasonOutOfRange, "not a valid google.protobuf.Duration"},
		{"duration scale", wire{}.bytes(34, wire{}.varint(2, 1)), decode.ReasonOutOfRange, "does not fit Decimal(9, 3)"},
		{"decimal text", wire{}.str(14, "x"), decode.ReasonWrongType, "not a decimal number"},
	} {
		_, err := decodeRow(t, d, s, tc.w)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != tc.reason || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s %q", tc.name, err, tc.reason, tc.want)
		}
	}
}

func TestStructJSON(t *testing.T) {
	md := testMessage(t)
	d, s := newDecoder(t, md, []string{"js", "jv", "jl"}, "js String", "jv String", "jl String")
	str := func(s string) []byte { return wire{}.str(3, s) }
	num := func(v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), v)
	}
	entry := func(k string, v []byte) []byte { return wire{}.str(1, k).bytes(2, v) }
	list := wire{}.bytes(1, str("a")).bytes(1, wire{}.varint(4, 1)).bytes(1, wire{}.varint(1, 0)).bytes(1, num(0x3ff8000000000000))
	js := wire{}.bytes(1, entry("z", str("last"))).bytes(1, entry("a", wire{}.bytes(6, list))).bytes(1, entry("z", str("q\"\n")))
	w := wire{}.bytes(40, js).bytes(41, wire{}.bytes(5, js)).bytes(41, str("replaced")).bytes(42, list).bytes(40, wire{}.bytes(1, entry("m", nil)))
	got, err := decodeRow(t, d, s, w)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":["a",true,null,1.5],"m":null,"z":"q\"\n"}`, `"replaced"`, `["a",true,null,1.5]`}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestHostile(t *testing.T) {
	md := testMessage(t)
	fields := []string{"i64", "st", "inner.a", "p_i32", "items.id", "js", "m_si", "u_f32"}
	d, s := newDecoder(t, md, fields, "i Int64", "st String", "ia Int32", "p Array(Int32)", "items.id Array(Int64)",
		"js String", "m Map(String, Int64)", "f Array(UInt32)")
	deep := wire{}.str(3, "x")
	for range maxJSONDepth {
		deep = wire{}.bytes(6, wire{}.bytes(1, deep)) // a Value holding a list holding it
	}
	for _, tc := range []struct {
		name string
		w    wire
		want string
	}{
		{"truncated varint", wire{}.raw(0x10, 0x80), `field "i64" (number 2): truncated varint at byte 1`},
		{"overlong varint", wire{}.raw(0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "malformed varint at byte 1"},
		{"length past the end", wire{}.raw(0x72, 10, 'a'), `field "st" (number 14): length 10 past the end of the message (1 bytes left) at byte 2`},
		{"huge length", wire{}.raw(0x72, 0xff, 0xff, 0xff, 0xff, 0x0f), "past the end"},
		{"wrong wire type", wire{}.fixed32(2, 1), `field "i64" (int64, number 2): wire type fixed32, want varint at byte 0`},
		{"group", wire{}.raw(0x13), "group wire type 3 (groups are not supported) at byte 0"},
		{"end group", wire{}.raw(0x0c), "group wire type 4"},
		{"wire type 7", wire{}.raw(0x0f), "invalid wire type 7"},
		{"field number 0", wire{}.raw(0x00, 0x01), "field number 0 out of range at byte 0"},
		{"unknown field truncated", wire{}.raw(0xb8, 0x3e, 0x80), "field number 999 of etl.test.All: truncated varint at byte 2"},
		{"nested truncated", wire{}.bytes(25, wire{}.raw(0x08, 0x80)), `field "inner.a" (number 1): truncated varint at byte 4`},
		{"nested tag", wire{}.bytes(25, wire{}.raw(0x80)), `message etl.test.Inner (field "inner"): malformed tag at byte 3`},
		{"packed truncated", wire{}.bytes(19, wire{}.raw(0x80, 0x80)), "packed values: truncated varint at byte 3"},
		{"invalid utf-8", wire{}.bytes(14, []byte{0xff}), `field "st": string is not valid UTF-8 at byte 2`},
		{"element truncated", wire{}.bytes(26, wire{}.raw(0x08)), `field "items.id" (number 1): truncated varint at byte 4`},
		{"deep struct", wire{}.bytes(40, wire{}.bytes(1, wire{}.str(1, "k").bytes(2, deep))), "nested more than 100 deep"},
		{"struct wire type", wire{}.bytes(40, wire{}.varint(1, 1)), "google.protobuf.Struct: field 1 has wire type varint, want length-delimited"},
		{"map entry", wire{}.bytes(27, wire{}.raw(0x0a, 0x05)), `field "key" (number 1): length 5 past the end`},
		{"fixed32 truncated", wire{}.raw(0xbd, 0x01, 1, 2), "fixed32 truncated (2 bytes left) at byte 2"},
	} {
		_, err := decodeRow(t, d, s, tc.w)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (%x): got %v, want corrupt %q", tc.name, []byte(tc.w), err, tc.want)
		}
	}
}

// TestHostileAllocations: what a record makes is bounded by its bytes,
// whatever it claims: a huge length allocates nothing, and a megabyte of
// empty elements no more than their columns' growth.
func TestHostileAllocations(t *testing.T) {
	md := testMessage(t)
	d, s := newDecoder(t, md, []string{"items.id", "items.name", "p_i32"}, "items.id Array(Int64)", "items.name Array(String)", "p Array(Int32)")
	c := newChunk(t, s)
	huge := wire{}.raw(0xd2, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f) // items: length 2^63-1
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 100 {
		if _, err := d.Decode(huge, c); err == nil {
			t.Fatal("huge length decoded")
		}
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / 100; per > 2048 {
		t.Fatalf("a refused 11-byte record allocated %d bytes", per)
	}
	var many wire
	for len(many) < 1<<20 {
		many = many.bytes(26, nil)
	}
	runtime.ReadMemStats(&m0)
	if _, err := d.Decode(many, c); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	// 3 bytes an element: 349525 elements of an int64 and an empty string
	// (16 bytes in columns), with the slots and the columns' doubling.
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 150*uint64(len(many)) {
		t.Fatalf("a %d-byte record allocated %d bytes", len(many), got)
	}
	if n := len(c.Cols[0].(*chunk.Array).Inner.(*chunk.Fixed[int64]).Data); n != len(many)/3 {
		t.Fatalf("%d elements, want %d", n, len(many)/3)
	}
}
