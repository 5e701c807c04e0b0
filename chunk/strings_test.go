package chunk

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"testing"
)

// textCase is one append to a string-family column: the method ("text",
// "string", "bytes" or "int"), its argument, and either the error (ErrRange
// or ErrSyntax) or the row it stores, as textRow renders it.
type textCase struct {
	method string
	in     any
	err    error
	want   string
}

// textRow renders row i of a string-family column: a Strings' text, an
// IPv4's dotted form and number, an IPv6's text form.
func textRow(col Column, i int) string {
	switch v := col.Row(i).(type) {
	case uint32:
		return fmt.Sprintf("%d.%d.%d.%d=%d", v>>24, v>>16&255, v>>8&255, v&255, v)
	case [16]byte:
		return netip.AddrFrom16(v).String()
	}
	return fmt.Sprint(col.Row(i))
}

// TestTexts: each string-family type takes its values at its bounds, and
// refuses the ones past them (with ErrRange) and the text in no form of it
// (with ErrSyntax), through each method, appending nothing for a refused
// value.
func TestTexts(t *testing.T) {
	uuid := "01234567-89ab-cdef-ABCD-ef0123456789"
	for _, tc := range []struct {
		typ   string
		cases []textCase
	}{
		{"String", []textCase{
			{"text", "", nil, ""},
			{"string", "héllo", nil, "héllo"},
			{"bytes", "\x00\xff", nil, "\x00\xff"},
			{"int", int64(1), ErrSyntax, ""},
		}},
		{"LowCardinality(String)", []textCase{
			{"text", "a", nil, "a"},
		}},
		{"FixedString(3)", []textCase{
			{"text", "", nil, ""}, // stored without its padding
			{"text", "abc", nil, "abc"},
			{"text", "abcd", ErrRange, ""},
			{"string", "ab", nil, "ab"},
			{"string", "abcd", ErrRange, ""},
			{"bytes", "\x00\x01\x02", nil, "\x00\x01\x02"},
			{"bytes", "\x00\x01\x02\x03", ErrRange, ""},
			{"string", "é\x00", nil, "é\x00"}, // 3 bytes
			{"string", "éé", ErrRange, ""},    // 4 bytes
			{"int", int64(1), ErrSyntax, ""},
		}},
		{"LowCardinality(FixedString(1))", []textCase{
			{"text", "a", nil, "a"},
			{"text", "ab", ErrRange, ""},
		}},
		{"UUID", []textCase{
			{"text", uuid, nil, uuid},
			{"string", "00000000-0000-0000-0000-000000000000", nil, "00000000-0000-0000-0000-000000000000"},
			{"string", "ffffffff-ffff-ffff-ffff-ffffffffffff", nil, "ffffffff-ffff-ffff-ffff-ffffffffffff"},
			{"text", "", ErrSyntax, ""},
			{"text", uuid[:35], ErrSyntax, ""},
			{"text", uuid + "0", ErrSyntax, ""},
			{"text", "0123456789abcdefabcdef0123456789", ErrSyntax, ""}, // no dashes
			{"text", "01234567-89ab-cdef-abcd-ef012345678g", ErrSyntax, ""},
			{"text", "01234567-89ab-cdef-abcd_ef0123456789", ErrSyntax, ""},
			{"string", "0123456-789ab-cdef-abcd-ef0123456789", ErrSyntax, ""}, // dash moved
			{"string", "{1234567-89ab-cdef-abcd-ef012345678}", ErrSyntax, ""},
			{"bytes", "\x01\x23\x45\x67\x89\xab\xcd\xef\xAB\xCD\xef\x01\x23\x45\x67\x89", nil, strings.ToLower(uuid)},
			{"bytes", strings.Repeat("\x00", 15), ErrSyntax, ""},
			{"bytes", strings.Repeat("\x00", 17), ErrSyntax, ""},
			{"int", int64(0), ErrSyntax, ""},
		}},
		{"Enum8('a' = -128, 'b' = 0, 'c d' = 127)", []textCase{
			{"text", "a", nil, "a"},
			{"string", "c d", nil, "c d"},
			{"bytes", "b", nil, "b"},
			{"text", "", ErrRange, ""},
			{"text", "A", ErrRange, ""},
			{"string", "c", ErrRange, ""},
			{"string", "0", ErrRange, ""}, // a number's text is not a name
			{"int", int64(-128), nil, "a"},
			{"int", int64(0), nil, "b"},
			{"int", int64(127), nil, "c d"},
			{"int", int64(1), ErrRange, ""},
			{"int", int64(-129), ErrRange, ""},
			{"int", int64(128), ErrRange, ""},
			{"int", int64(65536), ErrRange, ""}, // 0 as an int16
			{"int", int64(math.MinInt64), ErrRange, ""},
		}},
		{"Enum16('lo' = -32768, 'hi' = 32767)", []textCase{
			{"text", "hi", nil, "hi"},
			{"int", int64(-32768), nil, "lo"},
			{"int", int64(32767), nil, "hi"},
			{"int", int64(32768), ErrRange, ""},
			{"int", int64(-32769), ErrRange, ""},
			{"text", "mid", ErrRange, ""},
		}},
		{"LowCardinality(Enum8('x' = 1))", []textCase{
			{"int", int64(1), nil, "x"},
			{"text", "y", ErrRange, ""},
		}},
		{"IPv4", []textCase{
			{"text", "0.0.0.0", nil, "0.0.0.0=0"},
			{"text", "255.255.255.255", nil, "255.255.255.255=4294967295"},
			{"string", "1.2.3.4", nil, "1.2.3.4=16909060"},
			{"text", "", ErrSyntax, ""},
			{"text", "256.0.0.0", ErrSyntax, ""},
			{"text", "1.2.3", ErrSyntax, ""},
			{"text", "1.2.3.4.5", ErrSyntax, ""},
			{"text", "01.2.3.4", ErrSyntax, ""},
			{"text", " 1.2.3.4", ErrSyntax, ""},
			{"string", "::1", ErrSyntax, ""},
			{"string", "::ffff:1.2.3.4", ErrSyntax, ""}, // IPv4-mapped is IPv6
			{"string", "1.2.3.4%eth0", ErrSyntax, ""},
			{"bytes", "\x01\x02\x03\x04", nil, "1.2.3.4=16909060"},
			{"bytes", "\x01\x02\x03", ErrSyntax, ""},
			{"bytes", strings.Repeat("\x00", 16), ErrSyntax, ""},
			{"int", int64(0), nil, "0.0.0.0=0"},
			{"int", int64(math.MaxUint32), nil, "255.255.255.255=4294967295"},
			{"int", int64(math.MaxUint32 + 1), ErrRange, ""},
			{"int", int64(-1), ErrRange, ""},
		}},
		{"IPv6", []textCase{
			{"text", "::", nil, "::"},
			{"text", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
			{"string", "2001:DB8::1", nil, "2001:db8::1"},
			{"string", "1.2.3.4", nil, "::ffff:1.2.3.4"}, // IPv4-mapped, as the server stores it
			{"string", "::ffff:1.2.3.4", nil, "::ffff:1.2.3.4"},
			{"text", "", ErrSyntax, ""},
			{"text", "fe80::1%eth0", ErrSyntax, ""}, // a zone
			{"text", "1::2::3", ErrSyntax, ""},
			{"text", "10000::", ErrSyntax, ""},
			{"text", "1:2:3:4:5:6:7:8:9", ErrSyntax, ""},
			{"text", "[::1]", ErrSyntax, ""},
			{"bytes", "\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x01", nil, "2001:db8::1"},
			{"bytes", "\x01\x02\x03\x04", ErrSyntax, ""},
			{"bytes", strings.Repeat("\x00", 17), ErrSyntax, ""},
			{"int", int64(1), ErrSyntax, ""},
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			typ, err := ParseType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			a, ok := TextsOf(typ)
			if !ok {
				t.Fatalf("TextsOf(%s) = false", tc.typ)
			}
			col, err := NewColumn(typ)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, c := range tc.cases {
				var err error
				switch c.method {
				case "text":
					err = a.AppendText(col, []byte(c.in.(string)))
				case "string":
					err = a.AppendString(col, c.in.(string))
				case "bytes":
					err = a.AppendBytes(col, []byte(c.in.(string)))
				case "int":
					err = a.AppendInt(col, c.in.(int64))
				}
				switch {
				case c.err == nil && err != nil:
					t.Errorf("%s %q refused: %v", c.method, c.in, err)
				case c.err != nil && !errors.Is(err, c.err):
					t.Errorf("%s %q: err = %v, want %v", c.method, c.in, err, c.err)
				case c.err == nil:
					want = append(want, c.want)
				}
				if col.Len() != len(want) {
					t.Fatalf("after %s %q: %d rows, want %d", c.method, c.in, col.Len(), len(want))
				}
			}
			for i, w := range want {
				if got := textRow(col, i); got != w {
					t.Errorf("row %d = %q, want %q", i, got, w)
				}
			}
		})
	}
}

// TestTextsOf: only the string family has a Texts (Decimal, also kept in
// Strings, is not one of it).
func TestTextsOf(t *testing.T) {
	for _, s := range []string{"Decimal(9, 2)", "Int8", "Float64", "Date", "DateTime", "Nullable(String)", "Array(String)"} {
		typ, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := TextsOf(typ); ok {
			t.Errorf("TextsOf(%s) = true", s)
		}
	}
}

// TestTextsEnumDuplicate: two names of one number give the smallest name
// for the number, whatever the map's order.
func TestTextsEnumDuplicate(t *testing.T) {
	typ := &Type{Kind: KindEnum8, Name: "Enum8('b' = 1, 'a' = 1)", Enum: map[string]int16{"b": 1, "a": 1}}
	for range 20 {
		a, _ := TextsOf(typ)
		col, _ := NewColumn(typ)
		if err := a.AppendInt(col, 1); err != nil || col.Row(0) != "a" {
			t.Fatalf("AppendInt(1): %v, %v", err, col.Row(0))
		}
	}
}

// TestTextsZeroCopy: AppendText copies the bytes it keeps.
func TestTextsZeroCopy(t *testing.T) {
	for _, s := range []string{"String", "FixedString(4)", "Enum8('abcd' = 1)"} {
		typ, _ := ParseType(s)
		a, _ := TextsOf(typ)
		col, _ := NewColumn(typ)
		b := []byte("abcd")
		if err := a.AppendText(col, b); err != nil {
			t.Fatal(err)
		}
		b[0] = 'x'
		if col.Row(0) != "abcd" {
			t.Errorf("%s: row %q after the input changed", s, col.Row(0))
		}
	}
}

// TestAppendString: the String hot path stores what TextsOf(String) does,
// from a string or bytes (copied).
func TestAppendString(t *testing.T) {
	typ, _ := ParseType("LowCardinality(String)")
	col, _ := NewColumn(typ)
	b := []byte("ab\x00")
	AppendString(col, b)
	AppendString(col, "")
	AppendString(col, "héllo")
	b[0] = 'x'
	for i, w := range []string{"ab\x00", "", "héllo"} {
		if col.Row(i) != w {
			t.Errorf("row %d = %q, want %q", i, col.Row(i), w)
		}
	}
	if col.Len() != 3 {
		t.Errorf("%d rows, want 3", col.Len())
	}
}

// TestTextsText: Text gives back the text form of what went in.
func TestTextsText(t *testing.T) {
	for _, tc := range []struct{ typ, in, want string }{
		{"String", "héllo", "héllo"},
		{"FixedString(4)", "ab", "ab"},
		{"UUID", "01234567-89AB-cdef-0123-456789abcdef", "01234567-89AB-cdef-0123-456789abcdef"},
		{"Enum8('a' = 1, 'b' = 2)", "b", "b"},
		{"IPv4", "10.0.0.255", "10.0.0.255"},
		{"IPv6", "2001:DB8::1", "2001:db8::1"},
		{"IPv6", "1.2.3.4", "1.2.3.4"},
		{"LowCardinality(String)", "lc", "lc"},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		col, _ := NewColumn(typ)
		texts, _ := TextsOf(typ)
		if err := texts.AppendString(col, tc.in); err != nil {
			t.Fatalf("%s %q: %v", tc.typ, tc.in, err)
		}
		if got := texts.Text(col, 0); got != tc.want {
			t.Errorf("%s %q: Text %q, want %q", tc.typ, tc.in, got, tc.want)
		}
	}
}

// TestIsUUIDEveryPosition puts a byte that is not a hex digit at each of
// the 32 digit positions, and a digit at each of the 4 dash positions:
// every one is refused; upper-case digits anywhere are taken.
func TestIsUUIDEveryPosition(t *testing.T) {
	const good = "01234567-89ab-cdef-0123-456789abcdef"
	if !isUUID(good) || !isUUID("01234567-89AB-CDEF-0123-456789ABCDEF") {
		t.Fatal("a valid UUID is refused")
	}
	for i := 0; i < len(good); i++ {
		bads := []byte{'g', 'G', '-', ' ', 0, 0xff, '/', ':', '@', '`'}
		if good[i] == '-' {
			bads = []byte{'0', 'a', 'F', '_'}
		}
		for _, c := range bads {
			s := []byte(good)
			s[i] = c
			if isUUID(string(s)) {
				t.Errorf("isUUID(%q) = true, byte %d is %q", s, i, c)
			}
		}
	}
}
