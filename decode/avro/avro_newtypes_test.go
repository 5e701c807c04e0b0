package avro

import (
	"github.com/etl-project/etl/decode"

	"errors"
	"math"
	"testing"
)

// newConv is one conversion into the types added with DateTime64; the
// datum of the one-field record is built by hand: a varint for v int64, a
// string for v string, one byte for v bool.
var newConvs = []conv{
	// DateTime64 from timestamps, scaled to the precision.
	avroOK(tsMillis, "DateTime64(3)", int64(1700000000123), "2023-11-14T22:13:20.123Z"),
	avroOK(tsMillis, "DateTime64(6)", int64(1700000000123), "2023-11-14T22:13:20.123Z"),
	avroOK(tsMillis, "DateTime64(0)", int64(-1), "1969-12-31T23:59:59Z"),
	avroOK(tsMicros, "DateTime64(3)", int64(1700000000123456), "2023-11-14T22:13:20.123Z"),
	avroOK(tsMicros, "DateTime64(9)", int64(1700000000123456), "2023-11-14T22:13:20.123456Z"),
	avroOK(ltsMicros, "DateTime64(1)", int64(-50000), "1969-12-31T23:59:59.9Z"),
	avroOK(dateType, "DateTime64(3)", int64(1), "1970-01-02T00:00:00Z"),
	avroOK(dateType, "DateTime64(9)", int64(-25567), "1900-01-01T00:00:00Z"),
	avroOK(tsMillis, "DateTime64(3)", int64(-2208988800000), "1900-01-01T00:00:00Z"),
	avroFail(tsMillis, "DateTime64(3)", int64(-2208988800001), decode.ReasonOutOfRange),
	avroFail(tsMicros, "DateTime64(9)", int64(math.MaxInt64), decode.ReasonOutOfRange),
	avroFail(tsMillis, "DateTime64(9)", int64(9223372036855), decode.ReasonOutOfRange),
	avroOK(tsMillis, "DateTime64(9)", int64(9223372036854), "2262-04-11T23:47:16.854Z"),
	avroFail(dateType, "DateTime64(9)", int64(106752), decode.ReasonOutOfRange),
	avroFail(dateType, "DateTime64(0)", int64(-25568), decode.ReasonOutOfRange),
	// Date32.
	avroOK(dateType, "Date32", int64(-25567), "1900-01-01"),
	avroOK(dateType, "Date32", int64(120529), "2299-12-31"),
	avroOK(tsMillis, "Date32", int64(-1), "1969-12-31"),
	avroFail(dateType, "Date32", int64(-25568), decode.ReasonOutOfRange),
	avroFail(dateType, "Date32", int64(120530), decode.ReasonOutOfRange),
	// Bool.
	avroOK(`"boolean"`, "Bool", true, "true"),
	avroOK(`"boolean"`, "Bool", false, "false"),
	// IP addresses.
	avroOK(`"string"`, "IPv4", "10.1.2.3", "10.1.2.3"),
	avroFail(`"string"`, "IPv4", "::1", decode.ReasonWrongType),
	avroOK(`"string"`, "IPv6", "2001:db8::1", "2001:db8::1"),
	avroOK(`"string"`, "IPv6", "10.1.2.3", "::ffff:10.1.2.3"),
	avroFail(`"string"`, "IPv6", "nope", decode.ReasonWrongType),
	// Wide integers.
	avroOK(`"long"`, "Int128", int64(math.MinInt64), "-9223372036854775808"),
	avroOK(`"int"`, "Int256", int64(-1), "-1"),
	avroOK(`"long"`, "UInt128", int64(math.MaxInt64), "9223372036854775807"),
	avroOK(`"long"`, "UInt256", int64(0), "0"),
	avroFail(`"long"`, "UInt256", int64(-1), decode.ReasonOutOfRange),
	avroFail(`"int"`, "UInt128", int64(-5), decode.ReasonOutOfRange),
}

func TestAvroNewTypeConversions(t *testing.T) {
	for _, tc := range newConvs {
		name := tc.wtype + "->" + tc.col
		schema := avroRecord(`v:` + tc.wtype)
		var datum []byte
		switch v := tc.v.(type) {
		case int64:
			datum = avroLong(nil, v)
		case string:
			datum = append(avroLong(nil, int64(len(v))), v...)
		case bool:
			datum = []byte{0}
			if v {
				datum[0] = 1
			}
		}
		s := schemaOf(t, "v "+tc.col)
		a := avroNew(t, schema, s, Options{})
		c := newChunk(t, s)
		rows, err := a.Decode(datum, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Errorf("%s %v: %v", name, tc.v, cerr)
		}
		if tc.reason != "" {
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != tc.reason || c.Rows != 0 || c.Cols[0].Len() != 0 {
				t.Errorf("%s %v: got %d, %v, want %s", name, tc.v, rows, err, tc.reason)
			}
			continue
		}
		if err != nil || rows != 1 {
			t.Errorf("%s %v: got %d, %v", name, tc.v, rows, err)
			continue
		}
		if got := renderNew(tc.col, c.Cols[0], 0); got != tc.want {
			t.Errorf("%s %v: got %q, want %q", name, tc.v, got, tc.want)
		}
	}
}

func TestAvroNewTypeCompileErrors(t *testing.T) {
	for _, tc := range []struct{ wtype, col string }{
		{`"long"`, "DateTime64(3)"},
		{`"string"`, "DateTime64(3)"},
		{`"int"`, "Date32"},
		{`"long"`, "IPv4"},
		{`"bytes"`, "IPv6"},
		{`"string"`, "Int128"},
		{`"double"`, "UInt256"},
	} {
		if _, err := New(avroRecord(`v:`+tc.wtype), schemaOf(t, "v "+tc.col), Options{}); err == nil {
			t.Errorf("%s -> %s compiled", tc.wtype, tc.col)
		}
	}
}
