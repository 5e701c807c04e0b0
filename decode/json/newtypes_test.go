package json

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

var newTypeCases = []convCase{
	// Date32.
	ok("Date32", `"1900-01-01"`, "1900-01-01"),
	ok("Date32", `"2299-12-31T23:59:59Z"`, "2299-12-31"),
	ok("Date32", `"1969-12-31T23:00:00"`, "1969-12-31"),
	ok("Date32", `"2000-01-01T01:00:00+02:00"`, "1999-12-31"),
	ok("Date32", "86400", "1970-01-02"),
	ok("Date32", "-1", "1969-12-31"),
	ok("Date32", "null", "1970-01-01"),
	ok("Date32", "", "1970-01-01"),
	fail("Date32", `"1899-12-31"`, decode.ReasonOutOfRange),
	fail("Date32", `"2300-01-01"`, decode.ReasonOutOfRange),
	fail("Date32", "-2208988801", decode.ReasonOutOfRange),
	fail("Date32", `"yesterday"`, decode.ReasonOutOfRange),
	fail("Date32", "true", decode.ReasonWrongType),
	// DateTime64.
	ok("DateTime64(3)", `"2026-11-29T10:00:00.123456Z"`, "2026-11-29T10:00:00.123Z"),
	ok("DateTime64(6)", `"2026-11-29 10:00:00.1234567"`, "2026-11-29T10:00:00.123456Z"),
	ok("DateTime64(9)", `"2026-11-29T10:00:00.5+01:00"`, "2026-11-29T09:00:00.5Z"),
	ok("DateTime64(0)", `"2026-11-29T10:00:00.999Z"`, "2026-11-29T10:00:00Z"),
	ok("DateTime64(2)", `"1969-12-31T23:59:59.99Z"`, "1969-12-31T23:59:59.99Z"),
	ok("DateTime64(3)", `"1900-01-01"`, "1900-01-01T00:00:00Z"),
	ok("DateTime64(3, 'Asia/Tokyo')", `"2026-11-29"`, "2026-11-28T15:00:00Z"),
	ok("DateTime64(3, 'Asia/Tokyo')", `"2026-11-29 00:00:00.25"`, "2026-11-28T15:00:00.25Z"),
	ok("DateTime64(3, 'Asia/Tokyo')", `"2026-11-29T00:00:00.25Z"`, "2026-11-29T00:00:00.25Z"),
	ok("DateTime64(3, 'America/New_York')", `"2021-03-14 02:30:00.5"`, "2021-03-14T06:30:00.5Z"),
	ok("DateTime64(3, 'Asia/Tokyo')", "1700000000", "2023-11-14T22:13:20Z"),
	ok("Date32", `"19000101"`, "1900-01-01"),
	fail("Date32", `"1700000000"`, decode.ReasonWrongType),
	ok("DateTime64(3)", "1700000000", "2023-11-14T22:13:20Z"),
	ok("DateTime64(3)", "1700000000.5", "2023-11-14T22:13:20.5Z"),
	ok("DateTime64(6)", "1700000000123", "2023-11-14T22:13:20.123Z"),
	ok("DateTime64(3)", "1700000000123456", "2023-11-14T22:13:20.123Z"),
	ok("DateTime64(9)", "1700000000123456789", "2023-11-14T22:13:20.123456789Z"),
	ok("DateTime64(9)", `"1700000000123456789"`, "2023-11-14T22:13:20.123456789Z"),
	ok("DateTime64(1)", "-0.05", "1969-12-31T23:59:59.9Z"),
	ok("DateTime64(3)", "-2208988800", "1900-01-01T00:00:00Z"),
	ok("DateTime64(9)", `"2262-04-11T23:47:16.854775807Z"`, "2262-04-11T23:47:16.854775807Z"),
	ok("DateTime64(3)", "null", "1970-01-01T00:00:00Z"),
	fail("DateTime64(9)", `"2262-04-11T23:47:16.854775808Z"`, decode.ReasonOutOfRange),
	fail("DateTime64(3)", `"2262-04-11T23:47:17Z"`, decode.ReasonOutOfRange),
	fail("DateTime64(3)", `"1899-12-31T23:59:59.999Z"`, decode.ReasonOutOfRange),
	fail("DateTime64(3)", "-2208988800.001", decode.ReasonOutOfRange),
	fail("DateTime64(3)", "1e30", decode.ReasonOutOfRange),
	fail("DateTime64(3)", `"2026-13-01"`, decode.ReasonOutOfRange),
	fail("DateTime64(3)", "[1]", decode.ReasonWrongType),
	// Bool.
	ok("Bool", "true", "true"),
	ok("Bool", "0", "false"),
	ok("Bool", "1", "true"),
	fail("Bool", "2", decode.ReasonOutOfRange),
	fail("Bool", `"true"`, decode.ReasonWrongType),
	// IPv4.
	ok("IPv4", `"192.168.0.1"`, "192.168.0.1"),
	ok("IPv4", "16909060", "1.2.3.4"),
	ok("IPv4", "null", "0.0.0.0"),
	fail("IPv4", `"::1"`, decode.ReasonWrongType),
	fail("IPv4", `"256.0.0.1"`, decode.ReasonWrongType),
	fail("IPv4", `"1.2.3"`, decode.ReasonWrongType),
	fail("IPv4", "4294967296", decode.ReasonOutOfRange),
	fail("IPv4", "-1", decode.ReasonOutOfRange),
	// IPv6.
	ok("IPv6", `"2001:db8::1"`, "2001:db8::1"),
	ok("IPv6", `"1.2.3.4"`, "::ffff:1.2.3.4"),
	ok("IPv6", "null", "::"),
	fail("IPv6", `"fe80::1%eth0"`, decode.ReasonWrongType),
	fail("IPv6", `"2001:db8::g"`, decode.ReasonWrongType),
	fail("IPv6", "1", decode.ReasonWrongType),
	// Wide integers.
	ok("Int128", "170141183460469231731687303715884105727", "170141183460469231731687303715884105727"),
	ok("Int128", "-170141183460469231731687303715884105728", "-170141183460469231731687303715884105728"),
	ok("Int128", `"-42"`, "-42"),
	ok("Int128", "1e20", "100000000000000000000"),
	ok("Int128", "-0", "0"),
	ok("Int128", "null", "0"),
	fail("Int128", "170141183460469231731687303715884105728", decode.ReasonOutOfRange),
	fail("Int128", "-170141183460469231731687303715884105729", decode.ReasonOutOfRange),
	fail("Int128", "1.5", decode.ReasonWrongType),
	fail("Int128", `"x"`, decode.ReasonWrongType),
	ok("UInt128", "340282366920938463463374607431768211455", "340282366920938463463374607431768211455"),
	fail("UInt128", "340282366920938463463374607431768211456", decode.ReasonOutOfRange),
	fail("UInt128", "-1", decode.ReasonOutOfRange),
	ok("Int256", "-57896044618658097711785492504343953926634992332820282019728792003956564819968", "-57896044618658097711785492504343953926634992332820282019728792003956564819968"),
	ok("Int256", "57896044618658097711785492504343953926634992332820282019728792003956564819967", "57896044618658097711785492504343953926634992332820282019728792003956564819967"),
	fail("Int256", "57896044618658097711785492504343953926634992332820282019728792003956564819968", decode.ReasonOutOfRange),
	ok("UInt256", "115792089237316195423570985008687907853269984665640564039457584007913129639935", "115792089237316195423570985008687907853269984665640564039457584007913129639935"),
	fail("UInt256", "115792089237316195423570985008687907853269984665640564039457584007913129639936", decode.ReasonOutOfRange),
	fail("UInt256", "1e78", decode.ReasonOutOfRange),
	ok("UInt256", "0e999999", "0"),
}

func TestNewTypeConversions(t *testing.T) {
	for _, tc := range newTypeCases {
		t.Run(tc.typ+"/"+tc.json, func(t *testing.T) {
			s := schemaOf(t, "a String", "v "+tc.typ)
			d, err := New(s, Options{})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			c := newChunk(t, s)
			if _, err := d.Decode([]byte(`{"a":"first"}`), c); err != nil {
				t.Fatalf("decode first row: %v", err)
			}
			rec := `{"a":"second"}`
			if tc.json != "" {
				rec = `{"a":"second","v":` + tc.json + `}`
			}
			rows, err := d.Decode([]byte(rec), c)
			if cerr := checkConsistent(c); cerr != nil {
				t.Fatalf("after %s: %v", rec, cerr)
			}
			if tc.reason != "" {
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != tc.reason || rows != 0 || c.Rows != 1 {
					t.Fatalf("Decode(%s) = %d, %v; want reason %s", rec, rows, err, tc.reason)
				}
				return
			}
			if err != nil || rows != 1 {
				t.Fatalf("Decode(%s) = %d, %v", rec, rows, err)
			}
			if got := renderNew(tc.typ, c.Cols[1], 1); got != tc.want {
				t.Errorf("Decode(%s): got %q, want %q", rec, got, tc.want)
			}
		})
	}
}

// TestNewTypesNested checks the new types inside Nullable and Array.
func TestNewTypesNested(t *testing.T) {
	s := schemaOf(t, "n Nullable(DateTime64(3))", "a Array(Int128)", "i Array(IPv6)")
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	for _, rec := range []string{
		`{"n":"2026-01-01T00:00:00.25Z","a":[1,-1,null],"i":["::1"]}`,
		`{"n":null}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("Decode(%s): %v", rec, err)
		}
	}
	n := c.Cols[0].(*chunk.Nullable)
	a := c.Cols[1].(*chunk.Array)
	got := fmt.Sprintf("%v %s %v %s %s %s", n.Nulls, renderNew("", n.Inner, 0), a.Ends, renderNew("", a.Inner, 1), renderNew("", a.Inner, 2),
		renderNew("", c.Cols[2].(*chunk.Array).Inner, 0))
	want := "[0 1] 2026-01-01T00:00:00.25Z [3 3] -1 0 ::1"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
