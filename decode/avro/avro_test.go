package avro

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	jsondec "github.com/etl-project/etl/decode/json"
)

// avroParse parses a writer schema with a cache of its own, as New
// does, so that tests may reuse record names.
func avroParse(t testing.TB, schema string) havro.Schema {
	t.Helper()
	s, err := havro.ParseWithCache(schema, "", &havro.SchemaCache{})
	if err != nil {
		t.Fatalf("parse %s: %v", schema, err)
	}
	return s
}

func avroMarshal(t testing.TB, schema string, v any) []byte {
	t.Helper()
	b, err := havro.Marshal(avroParse(t, schema), v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return b
}

// avroRecord is the schema of a record R with the given fields, each
// "name": JSON type.
func avroRecord(fields ...string) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		name, typ, _ := strings.Cut(f, ":")
		parts = append(parts, `{"name":"`+name+`","type":`+typ+`}`)
	}
	return `{"type":"record","name":"R","fields":[` + strings.Join(parts, ",") + `]}`
}

func avroNew(t testing.TB, schema string, s *chunk.Schema, o Options) *Decoder {
	t.Helper()
	a, err := New(schema, s, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// avroLong appends the zig-zag varint of v, for datums built by hand.
func avroLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func avroDec(num int64, exp int) *big.Rat {
	r := new(big.Rat).SetInt64(num)
	return r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exp)), nil)))
}

const (
	tsMillis   = `{"type":"long","logicalType":"timestamp-millis"}`
	tsMicros   = `{"type":"long","logicalType":"timestamp-micros"}`
	ltsMillis  = `{"type":"long","logicalType":"local-timestamp-millis"}`
	ltsMicros  = `{"type":"long","logicalType":"local-timestamp-micros"}`
	dateType   = `{"type":"int","logicalType":"date"}`
	decBytes   = `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`
	decBytes3  = `{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}`
	decFixed   = `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":19,"scale":2}`
	decFixed16 = `{"type":"fixed","name":"D16","size":16,"logicalType":"decimal","precision":38,"scale":2}`
	enumXY     = `{"type":"enum","name":"E","symbols":["x","y","z"]}`
	fixed3     = `{"type":"fixed","name":"F","size":3}`
	uuidType   = `{"type":"string","logicalType":"uuid"}`
)

// conv is one conversion: value v of writer type wtype into a column
// of type col renders as want, or is rejected with reason.
type conv struct {
	wtype, col string
	v          any
	want       string
	reason     decode.Reason
}

func avroOK(wtype, col string, v any, want string) conv {
	return conv{wtype: wtype, col: col, v: v, want: want}
}

func avroFail(wtype, col string, v any, r decode.Reason) conv {
	return conv{wtype: wtype, col: col, v: v, reason: r}
}

var convs = []conv{
	// Integers, range-checked.
	avroOK(`"int"`, "Int8", 127, "127"),
	avroOK(`"int"`, "Int8", -128, "-128"),
	avroFail(`"int"`, "Int8", 128, decode.ReasonOutOfRange),
	avroFail(`"long"`, "Int8", -129, decode.ReasonOutOfRange),
	avroOK(`"long"`, "Int16", -32768, "-32768"),
	avroFail(`"int"`, "Int16", 32768, decode.ReasonOutOfRange),
	avroOK(`"int"`, "Int32", math.MinInt32, "-2147483648"),
	avroFail(`"long"`, "Int32", int64(math.MaxInt32)+1, decode.ReasonOutOfRange),
	avroOK(`"long"`, "Int64", int64(math.MinInt64), "-9223372036854775808"),
	avroOK(`"long"`, "Int64", int64(math.MaxInt64), "9223372036854775807"),
	avroOK(`"int"`, "UInt8", 255, "255"),
	avroFail(`"int"`, "UInt8", 256, decode.ReasonOutOfRange),
	avroFail(`"int"`, "UInt8", -1, decode.ReasonOutOfRange),
	avroOK(`"long"`, "UInt16", 65535, "65535"),
	avroFail(`"long"`, "UInt16", 65536, decode.ReasonOutOfRange),
	avroOK(`"long"`, "UInt32", int64(math.MaxUint32), "4294967295"),
	avroFail(`"long"`, "UInt32", int64(5000000000), decode.ReasonOutOfRange),
	avroOK(`"int"`, "UInt32", math.MaxInt32, "2147483647"),
	avroOK(`"long"`, "UInt64", int64(math.MaxInt64), "9223372036854775807"),
	avroFail(`"long"`, "UInt64", int64(-1), decode.ReasonOutOfRange),
	// Booleans.
	avroOK(`"boolean"`, "Bool", true, "true"),
	avroOK(`"boolean"`, "Bool", false, "false"),
	avroOK(`"boolean"`, "UInt8", true, "1"),
	avroOK(`"boolean"`, "Int8", false, "0"),
	// Floats, and ints promoted.
	avroOK(`"float"`, "Float32", float32(1.5), "1.5"),
	avroOK(`"float"`, "Float64", float32(-0.25), "-0.25"),
	avroOK(`"double"`, "Float64", 1e300, "1e+300"),
	avroOK(`"double"`, "Float32", 2.5, "2.5"),
	avroFail(`"double"`, "Float32", 1e300, decode.ReasonOutOfRange),
	avroOK(`"double"`, "Float32", math.Inf(-1), "-Inf"),
	avroOK(`"int"`, "Float32", 7, "7"),
	avroOK(`"long"`, "Float64", int64(1)<<53, "9.007199254740992e+15"),
	// Timestamps into DateTime (seconds, rounded down), raw numbers, days.
	avroOK(tsMillis, "DateTime", int64(1500), "1"),
	avroOK(tsMillis, "DateTime", int64(0), "0"),
	avroFail(tsMillis, "DateTime", int64(-1), decode.ReasonOutOfRange),
	avroOK(tsMillis, "DateTime", int64(chunk.NarrowDateTimeMax)*1000+999, "4294943999"), // the default (narrower) range; differential_test.go has the wider
	avroFail(tsMillis, "DateTime", int64(math.MaxUint32+1)*1000, decode.ReasonOutOfRange),
	avroOK(tsMicros, "DateTime", int64(1795946400_123456), "1795946400"),
	avroFail(tsMicros, "DateTime", int64(math.MaxUint32+1)*1e6, decode.ReasonOutOfRange),
	avroOK(ltsMillis, "DateTime('UTC')", int64(86_400_000), "86400"),
	avroOK(ltsMicros, "DateTime", int64(86_400_000_000), "86400"),
	avroFail(tsMicros, "DateTime", int64(math.MinInt64), decode.ReasonOutOfRange),
	avroOK(tsMillis, "Int64", int64(-1500), "-1500"),
	avroOK(tsMicros, "UInt64", int64(1795946400_123456), "1795946400123456"),
	avroFail(tsMillis, "UInt64", int64(-1), decode.ReasonOutOfRange),
	avroOK(tsMillis, "Date", int64(86_400_000*3+1), "1970-01-04"),
	avroFail(tsMillis, "Date", int64(-1), decode.ReasonOutOfRange),
	// Dates.
	avroOK(dateType, "Date", 3, "1970-01-04"),
	avroOK(dateType, "Date", 49710, "2106-02-07"),
	avroFail(dateType, "Date", 49711, decode.ReasonOutOfRange),
	avroFail(dateType, "Date", -1, decode.ReasonOutOfRange),
	avroOK(dateType, "DateTime", 1, "86400"),
	avroOK(dateType, "DateTime", 49709, "4294857600"),
	avroFail(dateType, "DateTime", 49710, decode.ReasonOutOfRange),
	avroOK(dateType, "Int32", -5, "-5"),
	// Times as numbers.
	avroOK(`{"type":"int","logicalType":"time-millis"}`, "Int32", 86399999, "86399999"),
	avroOK(`{"type":"int","logicalType":"time-millis"}`, "UInt32", 1, "1"),
	avroOK(`{"type":"long","logicalType":"time-micros"}`, "Int64", 86399999999*time.Microsecond, "86399999999"),
	avroOK(`{"type":"long","logicalType":"time-micros"}`, "UInt64", 5*time.Microsecond, "5"),
	// Strings.
	avroOK(`"string"`, "String", "héllo", "héllo"),
	avroOK(`"string"`, "String", "", ""),
	avroOK(`"string"`, "LowCardinality(String)", "lc", "lc"),
	avroOK(`"string"`, "FixedString(3)", "abc", "abc"),
	avroOK(`"string"`, "FixedString(3)", "ab", "ab"),
	avroFail(`"string"`, "FixedString(3)", "abcd", decode.ReasonOutOfRange),
	avroOK(`"string"`, "UUID", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
	avroFail(`"string"`, "UUID", "123e4567-e89b-12d3-a456-42661417400g", decode.ReasonWrongType),
	avroFail(`"string"`, "UUID", "x", decode.ReasonWrongType),
	avroOK(uuidType, "UUID", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
	avroOK(uuidType, "String", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
	avroOK(`"string"`, "Enum8('a' = 1, 'b' = 2)", "b", "b"),
	avroFail(`"string"`, "Enum8('a' = 1, 'b' = 2)", "c", decode.ReasonOutOfRange),
	avroOK(`"string"`, "Enum16('big' = 1000)", "big", "big"),
	// Bytes and fixed.
	avroOK(`"bytes"`, "String", []byte("raw\x00\xff"), "raw\x00\xff"),
	avroOK(`"bytes"`, "FixedString(2)", []byte("ab"), "ab"),
	avroFail(`"bytes"`, "FixedString(2)", []byte("abc"), decode.ReasonOutOfRange),
	avroOK(fixed3, "String", [3]byte{'a', 'b', 'c'}, "abc"),
	avroOK(fixed3, "FixedString(3)", [3]byte{'a', 0, 'c'}, "a\x00c"),
	avroOK(fixed3, "FixedString(8)", [3]byte{'x', 'y', 'z'}, "xyz"),
	// Enums, by name.
	avroOK(enumXY, "String", "y", "y"),
	avroOK(enumXY, "LowCardinality(String)", "z", "z"),
	avroOK(enumXY, "Enum8('x' = 1, 'y' = 2)", "y", "y"),
	avroFail(enumXY, "Enum8('x' = 1, 'y' = 2)", "z", decode.ReasonOutOfRange),
	avroOK(enumXY, "Enum16('z' = -300)", "z", "z"),
	// Arrays, nested.
	avroOK(`{"type":"array","items":"int"}`, "Array(Int32)", []int32{1, -2, 3}, "[1,-2,3]"),
	avroOK(`{"type":"array","items":"int"}`, "Array(Int32)", []int32{}, "[]"),
	avroFail(`{"type":"array","items":"int"}`, "Array(UInt8)", []int32{1, 300}, decode.ReasonOutOfRange),
	avroOK(`{"type":"array","items":{"type":"array","items":"long"}}`, "Array(Array(Int64))",
		[][]int64{{1}, {}, {2, 3}}, "[[1],[],[2,3]]"),
	avroOK(`{"type":"array","items":{"type":"array","items":"string"}}`, "Array(Array(LowCardinality(String)))",
		[][]string{{"a", "b"}, {"c"}}, "[[a,b],[c]]"),
	avroOK(`{"type":"array","items":["null","string"]}`, "Array(Nullable(String))", []any{"a", nil}, "[a,NULL]"),
	avroOK(`{"type":"array","items":["null","string"]}`, "Array(String)", []any{nil, "b"}, "[,b]"),
	avroOK(`{"type":"array","items":["null","int"]}`, "Array(Int32)", []any{nil, 4}, "[0,4]"),
	avroOK(`{"type":"array","items":`+tsMillis+`}`, "Array(DateTime)", []int64{1000, 2000}, "[1,2]"),
	avroOK(`["null",{"type":"array","items":"string"}]`, "Array(String)", nil, "[]"),
	avroOK(`["null",{"type":"array","items":"string"}]`, "Array(String)", []string{"q"}, "[q]"),
	// Unions with null, either order.
	avroOK(`["null","string"]`, "Nullable(String)", nil, "NULL"),
	avroOK(`["null","string"]`, "Nullable(String)", "s", "s"),
	avroOK(`["string","null"]`, "Nullable(String)", nil, "NULL"),
	avroOK(`["string","null"]`, "Nullable(String)", "s", "s"),
	avroOK(`["null","long"]`, "Nullable(Int64)", int64(-9), "-9"),
	avroOK(`["long","null"]`, "Nullable(Int64)", nil, "NULL"),
	avroFail(`["null","long"]`, "Nullable(UInt8)", int64(256), decode.ReasonOutOfRange),
	avroOK(`["null","string"]`, "LowCardinality(Nullable(String))", nil, "NULL"),
	avroOK(`["null","string"]`, "LowCardinality(Nullable(String))", "v", "v"),
	avroOK(`"string"`, "Nullable(String)", "plain", "plain"),
	avroOK(`["null",`+tsMillis+`]`, "Nullable(DateTime)", time.UnixMilli(5000).UTC(), "5"),
	// A null into a column that is not Nullable: the column's default.
	avroOK(`["null","string"]`, "String", nil, ""),
	avroOK(`["long","null"]`, "Int32", nil, "0"),
	avroOK(`["null","string"]`, "UUID", nil, "00000000-0000-0000-0000-000000000000"),
	avroOK(`["null",`+dateType+`]`, "Date", nil, "1970-01-01"),
	avroOK(`["null","string"]`, "Enum8('b' = 2, 'a' = 1)", nil, "a"),
	avroOK(`["null",`+decBytes+`]`, "Decimal(10, 2)", nil, "0"),
	avroOK(`["null","boolean"]`, "Bool", nil, "false"),
	avroOK(`["null","double"]`, "Float64", nil, "0"),
	// Decimals: bytes and fixed, negative, scale changes, precision.
	avroOK(decBytes, "Decimal(10, 2)", avroDec(-12345, 2), "-123.45"),
	avroOK(decBytes, "Decimal(10, 2)", avroDec(5, 2), "0.05"),
	avroOK(decBytes, "Decimal(10, 2)", avroDec(-5, 2), "-0.05"),
	avroOK(decBytes, "Decimal(10, 2)", avroDec(0, 0), "0.00"),
	avroOK(decBytes, "Decimal(12, 4)", avroDec(-12345, 2), "-123.4500"),
	// A larger scale than the column's: taken when the digits past the
	// column's scale are zeros, refused otherwise (never rounded).
	avroFail(decBytes, "Decimal(10, 1)", avroDec(-12345, 2), decode.ReasonOutOfRange),
	avroOK(decBytes, "Decimal(10, 1)", avroDec(-12340, 2), "-123.4"),
	avroFail(decBytes, "Decimal(10, 0)", avroDec(-12345, 2), decode.ReasonOutOfRange),
	avroOK(decBytes, "Decimal(10, 0)", avroDec(-12300, 2), "-123"),
	avroFail(decBytes, "Decimal(10, 1)", avroDec(-4, 2), decode.ReasonOutOfRange),
	avroOK(decBytes, "Decimal(10, 1)", avroDec(0, 2), "0.0"),
	avroFail(decBytes3, "Decimal(12, 2)", avroDec(19999, 3), decode.ReasonOutOfRange),
	avroFail(decBytes3, "Decimal(12, 2)", avroDec(5, 3), decode.ReasonOutOfRange),
	avroOK(decBytes3, "Decimal(12, 2)", avroDec(19990, 3), "19.99"),
	avroOK(decBytes, "Decimal(5, 2)", avroDec(99999, 2), "999.99"),
	avroFail(decBytes, "Decimal(5, 2)", avroDec(100000, 2), decode.ReasonOutOfRange),
	avroFail(decBytes, "Decimal(5, 3)", avroDec(-12345, 2), decode.ReasonOutOfRange),
	avroOK(decBytes, "Decimal32(2)", avroDec(-12345, 2), "-123.45"),
	avroOK(decBytes, "String", avroDec(-12345, 2), "-123.45"),
	avroOK(decBytes, "Nullable(Decimal(10, 2))", avroDec(1, 0), "1.00"),
	avroOK(decFixed, "Decimal(19, 2)", avroDec(math.MinInt64, 2), "-92233720368547758.08"),
	avroFail(decFixed, "Decimal(18, 2)", avroDec(math.MinInt64, 2), decode.ReasonOutOfRange),
	avroOK(decFixed, "Decimal(18, 2)", avroDec(-1, 2), "-0.01"),
	avroOK(decFixed, "Decimal(20, 3)", avroDec(math.MaxInt64, 2), "92233720368547758.070"),
	avroFail(decFixed, "Decimal(18, 2)", avroDec(math.MaxInt64, 2), decode.ReasonOutOfRange),
	avroOK(decFixed, "String", avroDec(700, 2), "7.00"),
	avroOK(decFixed16, "Decimal(38, 2)", bigDec("-1234567890123456789012345678901234.56"), "-1234567890123456789012345678901234.56"),
	avroOK(decFixed16, "Decimal(38, 2)", bigDec("99999999999999999999999999999999999999e-2"), "999999999999999999999999999999999999.99"),
	avroOK(decFixed16, "Decimal128(2)", bigDec("-99999999999999999999999999999999999999e-2"), "-999999999999999999999999999999999999.99"),
	avroFail(decFixed16, "Decimal(38, 1)", bigDec("-99999999999999999999999999999999999999e-2"), decode.ReasonOutOfRange),
	avroOK(decFixed16, "Decimal(38, 1)", bigDec("-99999999999999999999999999999999999990e-2"), "-999999999999999999999999999999999999.9"),
	avroFail(decFixed16, "Decimal(38, 4)", bigDec("-99999999999999999999999999999999999999e-2"), decode.ReasonOutOfRange),
	avroOK(decFixed16, "Decimal(40, 4)", bigDec("-99999999999999999999999999999999999999e-2"), "-999999999999999999999999999999999999.9900"),
	avroOK(decFixed16, "Decimal(38, 2)", avroDec(-1, 2), "-0.01"),
	avroOK(decFixed16, "Decimal(38, 2)", avroDec(100000, 2), "1000.00"),
	avroOK(`"long"`, "Decimal(10, 2)", int64(-42), "-42.00"),
	avroFail(`"long"`, "Decimal(3, 2)", int64(42), decode.ReasonOutOfRange),
}

// bigDec is a *big.Rat from decimal text (with an exponent).
func bigDec(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func TestAvroConversions(t *testing.T) {
	for _, tc := range convs {
		name := tc.wtype + "->" + tc.col
		schema := avroRecord(`v:` + tc.wtype)
		datum := avroMarshal(t, schema, map[string]any{"v": tc.v})
		s := schemaOf(t, "v "+tc.col)
		a := avroNew(t, schema, s, Options{})
		c := newChunk(t, s)
		rows, err := a.Decode(datum, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Errorf("%s %v: %v", name, tc.v, cerr)
		}
		if tc.reason != "" {
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != tc.reason {
				t.Errorf("%s %v: got %d, %v, want %s", name, tc.v, rows, err, tc.reason)
				continue
			}
			if c.Rows != 0 || c.Cols[0].Len() != 0 {
				t.Errorf("%s %v: failed decode left %d rows", name, tc.v, c.Rows)
			}
			if de.Field != "v" || de.Column != "v" || de.Type != tc.col {
				t.Errorf("%s %v: error names field %q column %q type %q", name, tc.v, de.Field, de.Column, de.Type)
			}
			continue
		}
		if err != nil || rows != 1 || c.Rows != 1 {
			t.Errorf("%s %v: got %d, %v", name, tc.v, rows, err)
			continue
		}
		if got := render(c.Cols[0], 0); got != tc.want {
			t.Errorf("%s %v: got %q, want %q", name, tc.v, got, tc.want)
		}
	}
}

func TestAvroDecimalDigits(t *testing.T) {
	// Every length of two's complement against math/big, both signs.
	var r avroReader
	for n := 1; n <= 40; n++ {
		for _, top := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe} {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i*37 + n)
			}
			b[0] = top
			want := new(big.Int).SetBytes(b)
			if top&0x80 != 0 {
				want.Sub(want, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
			}
			neg, ok := r.decimalDigits(b)
			if !ok {
				t.Fatalf("%x: not ok", b)
			}
			got := string(r.digits)
			if neg {
				got = "-" + got
			}
			if got == "-0" || got != want.String() {
				t.Fatalf("%x: got %s, want %s", b, got, want)
			}
		}
	}
	if _, ok := r.decimalDigits(make([]byte, maxDecimalBytes+1)); !ok {
		t.Fatal("sign-extension bytes count against the limit")
	}
	big := append([]byte{0x01}, make([]byte, maxDecimalBytes)...)
	if _, ok := r.decimalDigits(big); ok {
		t.Fatalf("%d-byte decimal accepted", len(big))
	}
}

func TestAvroCompileErrors(t *testing.T) {
	schema := avroRecord(
		`s:"string"`, `n:{"type":"record","name":"N","fields":[{"name":"x","type":"long"}]}`,
		`m:{"type":"map","values":"long"}`, `ts:"long"`, `fx:{"type":"fixed","name":"F5","size":5}`,
		`b:"bytes"`, `arr:{"type":"array","items":"string"}`, `u:["null","string","long"]`, `ok:"long"`,
		`p:"string"`, `dt:"string"`,
	)
	s := schemaOf(t, "s UInt32", "n String", "m String", "ts DateTime", "fx FixedString(3)",
		"b Decimal(10, 2)", "arr Array(UInt8)", "u Nullable(Int64)", "ok Int64", "px String", "dt Date")
	_, err := New(schema, s, Options{
		Fields: []string{"s", "n", "m", "ts", "fx", "b", "arr", "u", "ok", "p.x", "dt"}})
	if err == nil {
		t.Fatal("New accepted a schema that does not fit")
	}
	msg := err.Error()
	for _, want := range []string{
		`field "s" (string) -> column s (UInt32): string cannot go into UInt32`,
		`field "n" (record N) -> column n (String): a whole record cannot go into a column`,
		`field "m" (map<long>) -> column m (String)`,
		`field "ts" (long) -> column ts (DateTime): long cannot go into DateTime: want a timestamp`,
		`field "fx" (fixed F5(5)) -> column fx (FixedString(3))`,
		`field "b" (bytes) -> column b (Decimal(10, 2)): bytes cannot go into Decimal(10, 2): want a decimal`,
		`field "arr" (array<string>) -> column arr (Array(UInt8)): string cannot go into UInt8`,
		`field "u" ([null, string, long]) -> column u (Nullable(Int64)): string cannot go into Int64`,
		`field "p.x" (string) -> column px (String): field "p" is string, not a record`,
		`field "dt" (string) -> column dt (Date)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `column ok`) {
		t.Errorf("error names a good field:\n%s", msg)
	}

	for _, bad := range []struct{ schema, why string }{
		{`"string"`, "not a record"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}`, "unknown type"},
		{`{`, "not JSON"},
	} {
		if _, err := New(bad.schema, schemaOf(t, "a String"), Options{}); err == nil {
			t.Errorf("New(%s) (%s) succeeded", bad.schema, bad.why)
		}
	}
	if _, err := New(avroRecord(`a:"string"`), schemaOf(t, "a String"), Options{Fields: []string{"a", "b"}}); err == nil {
		t.Error("New accepted 2 fields for 1 column")
	}
	if _, err := New(avroRecord(`a:"string"`), schemaOf(t, "a String"), Options{MaxRecordBytes: -1}); err == nil {
		t.Error("New accepted a negative MaxRecordBytes")
	}
}

func TestAvroErrorMessage(t *testing.T) {
	schema := avroRecord(`id:"long"`, `amount:"long"`)
	s := schemaOf(t, "id Int64", "amount UInt32")
	a := avroNew(t, schema, s, Options{})
	c := newChunk(t, s)
	_, err := a.Decode(avroMarshal(t, schema, map[string]any{"id": int64(1), "amount": int64(5000000000)}), c)
	want := `field "amount" -> column amount (UInt32): value 5000000000 out of range`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	_, err = a.Decode([]byte{2, 0x80}, c)
	want = `field "amount" -> column amount (UInt32): datum truncated at byte 2 of 2`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestAvroNested maps fields of nested records, of a [null, record] union
// (either order) and of records within those.
func TestAvroNested(t *testing.T) {
	inner := `{"type":"record","name":"In","fields":[{"name":"d","type":"long"},{"name":"skip","type":"string"}]}`
	outer := `{"type":"record","name":"Out","fields":[{"name":"b","type":"string"},{"name":"c","type":` + inner + `}]}`
	opt := `{"type":"record","name":"Opt","fields":[{"name":"x","type":"int"},{"name":"y","type":["null","string"]}]}`
	for _, order := range []string{`["null",` + opt + `]`, `[` + opt + `,"null"]`} {
		schema := avroRecord(`first:"long"`, `a:`+outer, `o:`+order, `last:"string"`)
		s := schemaOf(t, "first Int64", "ab String", "acd Int64", "ox Int32", "oy Nullable(String)",
			"oy2 String", "ox2 Nullable(Int32)", "last String", "nope String", "none Int8")
		a := avroNew(t, schema, s, Options{
			Fields: []string{"first", "a.b", "a.c.d", "o.x", "o.y", "o.y", "o.x", "last", "a.c.nope", ""}})
		c := newChunk(t, s)
		for _, v := range []map[string]any{
			{"first": int64(1), "a": map[string]any{"b": "B", "c": map[string]any{"d": int64(-4), "skip": "zz"}},
				"o": map[string]any{"Opt": map[string]any{"x": 7, "y": "Y"}}, "last": "L"},
			{"first": int64(2), "a": map[string]any{"b": "B2", "c": map[string]any{"d": int64(5), "skip": ""}},
				"o": nil, "last": "L2"},
			{"first": int64(3), "a": map[string]any{"b": "", "c": map[string]any{"d": int64(0), "skip": ""}},
				"o": map[string]any{"Opt": map[string]any{"x": -1, "y": nil}}, "last": ""},
		} {
			if _, err := a.Decode(avroMarshal(t, schema, v), c); err != nil {
				t.Fatalf("%s: %v: %v", order, v, err)
			}
		}
		want := `rows=3
first fixed(3): "1" "2" "3"
ab strings(3,3): "B" "B2" ""
acd fixed(3): "-4" "5" "0"
ox fixed(3): "7" "0" "-1"
oy nullable(3,strings(3,1)): "Y" "NULL" "NULL"
oy2 strings(3,1): "Y" "" ""
ox2 nullable(3,fixed(3)): "7" "NULL" "-1"
last strings(3,3): "L" "L2" ""
nope strings(3,0): "" "" ""
none fixed(3): "0" "0" "0"
`
		if got := dump(c); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", order, got, want)
		}
	}
}

// TestAvroSkipped checks that fields no column reads are skipped exactly:
// maps, nested records, arrays of records, unions, enums, fixed, before,
// between and after the mapped fields.
func TestAvroSkipped(t *testing.T) {
	rec := `{"type":"record","name":"S","fields":[{"name":"u","type":["null","string","double"]},` +
		`{"name":"m","type":{"type":"map","values":{"type":"array","items":"long"}}},` +
		`{"name":"e","type":{"type":"enum","name":"SE","symbols":["p","q"]}},` +
		`{"name":"f","type":{"type":"fixed","name":"SF","size":5}},{"name":"fl","type":"float"},{"name":"b","type":"boolean"}]}`
	schema := avroRecord(
		`m1:{"type":"map","values":"string"}`, `x:"long"`, `r1:`+rec,
		`ra:{"type":"array","items":"S"}`, `y:"string"`, `m2:{"type":"map","values":"S"}`,
		`n:"null"`, `z:["null","int"]`, `d:"double"`)
	s := schemaOf(t, "x Int64", "y String", "z Nullable(Int32)")
	a := avroNew(t, schema, s, Options{})
	sv := func(i int) map[string]any {
		return map[string]any{"u": map[string]any{"double": float64(i)}, "m": map[string]any{"k": []int64{1, int64(i)}, "": []int64{}},
			"e": "q", "f": [5]byte{1, 2, 3, 4, byte(i)}, "fl": float32(i), "b": true}
	}
	c := newChunk(t, s)
	for i := range 3 {
		v := map[string]any{
			"m1": map[string]any{"a": "A", "bb": strings.Repeat("b", 200)}, "x": int64(i * 1000),
			"r1": sv(i), "ra": []any{sv(1), sv(2)}, "y": "y" + strings.Repeat("!", i),
			"m2": map[string]any{"s": sv(3)}, "n": nil, "z": nil, "d": 1.5,
		}
		if i == 1 {
			v["z"] = 42
			v["ra"] = []any{}
			v["m1"] = map[string]any{}
		}
		if _, err := a.Decode(avroMarshal(t, schema, v), c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	want := `rows=3
x fixed(3): "0" "1000" "2000"
y strings(3,6): "y" "y!" "y!!"
z nullable(3,fixed(3)): "NULL" "42" "NULL"
`
	if got := dump(c); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestAvroNegativeBlocks decodes arrays and maps written as blocks with
// negative counts and byte sizes, both decoded and skipped.
func TestAvroNegativeBlocks(t *testing.T) {
	schema := avroRecord(`arr:{"type":"array","items":"long"}`, `m:{"type":"map","values":"string"}`,
		`skipped:{"type":"array","items":"string"}`, `x:"long"`)
	s := schemaOf(t, "arr Array(Int64)", "x Int64")
	a := avroNew(t, schema, s, Options{})
	var d []byte
	// arr: a block of -2 items in 2 bytes (1, -1), then a block of 1 (300), then the end.
	d = avroLong(d, -2)
	d = avroLong(d, 2)
	d = avroLong(d, 1)
	d = avroLong(d, -1)
	d = avroLong(d, 1)
	d = avroLong(d, 300)
	d = avroLong(d, 0)
	// m: a block of -1 entry in 4 bytes ("k" -> "vv"), the end.
	d = avroLong(d, -1)
	d = avroLong(d, 5)
	d = append(avroLong(d, 1), 'k')
	d = append(avroLong(d, 2), 'v', 'v')
	d = avroLong(d, 0)
	// skipped: a sized block of 2 strings, a counted block of 1, the end.
	d = avroLong(d, -2)
	d = avroLong(d, 4)
	d = append(avroLong(d, 1), 'a')
	d = append(avroLong(d, 1), 'b')
	d = avroLong(d, 1)
	d = append(avroLong(d, 1), 'c')
	d = avroLong(d, 0)
	d = avroLong(d, 77)
	c := newChunk(t, s)
	if _, err := a.Decode(d, c); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(c), "rows=1\narr array(1,fixed(3)): \"[1,-1,300]\"\nx fixed(1): \"77\"\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A block whose size disagrees with its items is corrupt.
	bad := avroLong(avroLong(avroLong(nil, -1), 3), 1)
	bad = avroLong(avroLong(avroLong(avroLong(bad, 0), 0), 0), 0)
	if _, err := a.Decode(bad, c); !isReason(err, decode.ReasonCorrupt) {
		t.Errorf("mis-sized block: %v", err)
	}
}

func isReason(err error, r decode.Reason) bool {
	var de *decode.Error
	return errors.As(err, &de) && de.Reason == r
}

// rich is a schema with every kind of field, mapped and skipped.
var rich = avroRecord(richTypes...)

var richTypes = []string{
	`m:{"type":"map","values":"string"}`, `id:"long"`, `i:"int"`, `b:"boolean"`, `f:"float"`, `d:"double"`,
	`s:"string"`, `by:"bytes"`, `fx:` + fixed3, `e:` + enumXY, `ts:` + tsMillis, `dt:` + dateType,
	`dec:` + decBytes, `decf:` + decFixed, `u1:["null","string"]`, `u2:["long","null"]`,
	`arr:{"type":"array","items":{"type":"array","items":"int"}}`, `uuid:` + uuidType,
	`o:["null",{"type":"record","name":"O","fields":[{"name":"p","type":"long"},{"name":"q","type":{"type":"map","values":"long"}}]}]`,
	`sk:{"type":"record","name":"SK","fields":[{"name":"a","type":{"type":"array","items":"double"}},{"name":"u","type":["null","E"]}]}`,
	`last:"string"`,
}

var richColumns = []string{
	"id Int64", "i Int32", "b Bool", "f Float32", "d Float64", "s String", "by String", "fx FixedString(3)",
	"e Enum8('x' = 1, 'y' = 2, 'z' = 3)", "ts DateTime", "dt Date", "dec Decimal(12, 3)", "decf Decimal(18, 2)",
	"u1 Nullable(String)", "u2 Int64", "arr Array(Array(Int32))", "uuid UUID", "op Nullable(Int64)", "last String",
}

var richFields = []string{
	"id", "i", "b", "f", "d", "s", "by", "fx", "e", "ts", "dt", "dec", "decf", "u1", "u2", "arr", "uuid", "o.p", "last",
}

func richValue(n int) map[string]any {
	v := map[string]any{
		"m": map[string]any{"k": "v"}, "id": int64(n) << 40, "i": int32(-n), "b": n%2 == 0, "f": float32(n) / 4,
		"d": float64(n) * 1.5, "s": "str", "by": []byte{0, byte(n)}, "fx": [3]byte{'a', 'b', byte('0' + n%10)},
		"e": "y", "ts": int64(1795946400123 + n), "dt": int32(20000 + n), "dec": avroDec(int64(-n*100-7), 2),
		"decf": avroDec(int64(n)*1000+1, 2), "u1": "u", "u2": nil, "arr": [][]int32{{1, 2}, {}, {int32(n)}},
		"uuid": "123e4567-e89b-12d3-a456-426614174000",
		"o":    map[string]any{"O": map[string]any{"p": int64(n), "q": map[string]any{"a": int64(1)}}},
		"sk":   map[string]any{"a": []float64{1, 2}, "u": map[string]any{"E": "z"}}, "last": "end",
	}
	if n%2 == 1 {
		v["u1"], v["u2"], v["o"] = nil, int64(n), nil
		v["sk"] = map[string]any{"a": []float64{}, "u": nil}
	}
	return v
}

// TestAvroTruncated cuts a datum at every byte: each prefix is rejected
// as corrupt, nothing panics, and the chunk is left as it was.
func TestAvroTruncated(t *testing.T) {
	s := schemaOf(t, richColumns...)
	a := avroNew(t, rich, s, Options{Fields: richFields})
	for n := range 2 {
		datum := avroMarshal(t, rich, richValue(n))
		c := newChunk(t, s)
		if _, err := a.Decode(datum, c); err != nil {
			t.Fatalf("full datum: %v", err)
		}
		before := dump(c)
		for k := 0; k < len(datum); k++ {
			rows, err := a.Decode(datum[:k], c)
			if !isReason(err, decode.ReasonCorrupt) || rows != 0 {
				t.Fatalf("prefix of %d of %d bytes: %d, %v", k, len(datum), rows, err)
			}
			if err := checkConsistent(c); err != nil {
				t.Fatalf("prefix of %d bytes: %v", k, err)
			}
			if after := dump(c); after != before {
				t.Fatalf("prefix of %d bytes changed the chunk:\n%s\n%s", k, before, after)
			}
		}
		if _, err := a.Decode(append(datum[:len(datum):len(datum)], 0), c); !isReason(err, decode.ReasonCorrupt) {
			t.Fatalf("trailing byte: %v", err)
		}
		if _, err := a.Decode(datum, c); err != nil || c.Rows != 2 {
			t.Fatalf("after the failures: %v, %d rows", err, c.Rows)
		}
	}
}

func TestAvroRich(t *testing.T) {
	s := schemaOf(t, richColumns...)
	a := avroNew(t, rich, s, Options{Fields: richFields})
	c := newChunk(t, s)
	for n := range 2 {
		if _, err := a.Decode(avroMarshal(t, rich, richValue(n)), c); err != nil {
			t.Fatal(err)
		}
	}
	want := `rows=2
id fixed(2): "0" "1099511627776"
i fixed(2): "0" "-1"
b fixed(2): "true" "false"
f fixed(2): "0" "0.25"
d fixed(2): "0" "1.5"
s strings(2,6): "str" "str"
by strings(2,4): "\x00\x00" "\x00\x01"
fx strings(2,6): "ab0" "ab1"
e strings(2,2): "y" "y"
ts fixed(2): "1795946400" "1795946400"
dt fixed(2): "2024-10-04" "2024-10-05"
dec strings(2,12): "-0.070" "-1.070"
decf strings(2,9): "0.01" "10.01"
u1 nullable(2,strings(2,1)): "u" "NULL"
u2 fixed(2): "0" "1"
arr array(2,array(6,fixed(6))): "[[1,2],[],[0]]" "[[1,2],[],[1]]"
uuid strings(2,72): "123e4567-e89b-12d3-a456-426614174000" "123e4567-e89b-12d3-a456-426614174000"
op nullable(2,fixed(2)): "0" "NULL"
last strings(2,6): "end" "end"
`
	if got := dump(c); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestAvroRecordErrors(t *testing.T) {
	schema := avroRecord(`u:["null","string"]`, `b:"boolean"`, `i:"int"`, `e:`+enumXY,
		`a:{"type":"array","items":"null"}`, `skip:{"type":"array","items":"null"}`)
	s := schemaOf(t, "u Nullable(String)", "b Bool", "i Int64", "e String", "a Array(Nullable(String))")
	good := []byte{0, 1, 2, 0, 0, 0}
	for _, tc := range []struct {
		name   string
		datum  []byte
		max    int
		reason decode.Reason
	}{
		{"good", good, 0, ""},
		{"union branch", []byte{4, 1, 2, 0, 0, 0}, 0, decode.ReasonCorrupt},
		{"negative union branch", []byte{1, 1, 2, 0, 0, 0}, 0, decode.ReasonCorrupt},
		{"boolean byte", []byte{0, 2, 2, 0, 0, 0}, 0, decode.ReasonCorrupt},
		{"int beyond 32 bits", avroLong([]byte{0, 1}, 1<<31), 0, decode.ReasonCorrupt},
		{"enum index", []byte{0, 1, 2, 6, 0, 0}, 0, decode.ReasonCorrupt},
		{"varint beyond 64 bits", []byte{0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 0, decode.ReasonCorrupt},
		{"negative string length", []byte{2, 1, 0, 0, 0, 0}, 0, decode.ReasonCorrupt},
		{"string length past the end", []byte{2, 40, 'a'}, 0, decode.ReasonCorrupt},
		{"huge array of nulls", avroLong([]byte{0, 1, 2, 0}, 1<<40), 0, decode.ReasonCorrupt},
		{"huge skipped array of nulls", avroLong([]byte{0, 1, 2, 0, 0}, 1<<40), 0, decode.ReasonCorrupt},
		{"many blocks of nulls", func() []byte {
			d := []byte{0, 1, 2, 0}
			for range 3 {
				d = avroLong(d, maxEmptyItems/2)
			}
			return avroLong(avroLong(d, 0), 0)
		}(), 0, decode.ReasonCorrupt},
		{"nulls up to the limit", avroLong(avroLong(avroLong(avroLong([]byte{0, 1, 2, 0}, maxEmptyItems/2), 0), maxEmptyItems/2), 0), 0, ""},
		{"min block count", avroLong([]byte{0, 1, 2, 0}, math.MinInt64), 0, decode.ReasonCorrupt},
		{"trailing bytes", append(good[:len(good):len(good)], 7), 0, decode.ReasonCorrupt},
		{"too large", good, 5, decode.ReasonTooLarge},
		{"at the limit", good, 6, ""},
	} {
		a := avroNew(t, schema, s, Options{MaxRecordBytes: tc.max})
		c := newChunk(t, s)
		rows, err := a.Decode(tc.datum, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Errorf("%s: %v", tc.name, cerr)
		}
		if tc.reason == "" {
			if err != nil || rows != 1 {
				t.Errorf("%s: %d, %v", tc.name, rows, err)
			}
			continue
		}
		if !isReason(err, tc.reason) || rows != 0 || c.Rows != 0 {
			t.Errorf("%s: got %d, %v, want %s", tc.name, rows, err, tc.reason)
		}
	}
}

// TestAvroRecursive skips a recursive type (a linked list) and bounds its
// nesting.
func TestAvroRecursive(t *testing.T) {
	node := `{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"]}]}`
	schema := avroRecord(`list:`+node, `x:"long"`)
	s := schemaOf(t, "x Int64", "head Int64")
	a := avroNew(t, schema, s, Options{Fields: []string{"x", "list.v"}})
	list := func(n int) []byte {
		var d []byte
		for i := range n {
			d = avroLong(d, int64(i))
			if i < n-1 {
				d = avroLong(d, 1)
			}
		}
		return avroLong(avroLong(d, 0), 99)
	}
	c := newChunk(t, s)
	if _, err := a.Decode(list(100), c); err != nil {
		t.Fatal(err)
	}
	if got := render(c.Cols[0], 0) + " " + render(c.Cols[1], 0); got != "99 0" {
		t.Errorf("got %s", got)
	}
	if _, err := a.Decode(list(maxDepth+10), c); !isReason(err, decode.ReasonTooLarge) {
		t.Errorf("deep list: %v", err)
	}
	if err := checkConsistent(c); err != nil || c.Rows != 1 {
		t.Errorf("after the deep list: %v, %d rows", err, c.Rows)
	}
}

// TestAvroDefaults: columns whose field the writer lacks or that have no
// field get the JSON decoder's defaults; several columns may read one
// field.
func TestAvroDefaults(t *testing.T) {
	schema := avroRecord(`a:"long"`)
	cols := []string{"a Int64", "a2 Float64", "a3 Nullable(Int32)", "u UUID", "d Date", "e Enum8('q' = 5, 'p' = 3)",
		"n Nullable(Int8)", "arr Array(String)", "dec Decimal(9, 2)", "s String", "none UInt8"}
	s := schemaOf(t, cols...)
	a := avroNew(t, schema, s, Options{Fields: []string{"a", "a", "a", "u", "d", "e", "n", "arr", "dec", "s", ""}})
	c := newChunk(t, s)
	if _, err := a.Decode(avroMarshal(t, schema, map[string]any{"a": int64(-3)}), c); err != nil {
		t.Fatal(err)
	}
	js, err := jsondec.New(s, jsondec.Options{Fields: []string{"a", "a", "a", "u", "d", "e", "n", "arr", "dec", "s", ""}})
	if err != nil {
		t.Fatal(err)
	}
	cj := newChunk(t, s)
	if _, err := js.Decode([]byte(`{"a":-3}`), cj); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(c), dump(cj); got != want {
		t.Errorf("avro\n%s\njson\n%s", got, want)
	}
}

func TestAvroSchemaMismatchPanics(t *testing.T) {
	a := avroNew(t, avroRecord(`a:"long"`), schemaOf(t, "a Int64"), Options{})
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	_, _ = a.Decode([]byte{2}, newChunk(t, schemaOf(t, "a String")))
}

// TestAvroSchemaVersions: two versions of the same named record compile
// independently (no shared name cache).
func TestAvroSchemaVersions(t *testing.T) {
	v1 := `{"type":"record","name":"Ev","fields":[{"name":"a","type":"long"}]}`
	v2 := `{"type":"record","name":"Ev","fields":[{"name":"b","type":"string"},{"name":"a","type":"long"}]}`
	s := schemaOf(t, "a Int64", "b String")
	a1 := avroNew(t, v1, s, Options{})
	a2 := avroNew(t, v2, s, Options{})
	c := newChunk(t, s)
	if _, err := a1.Decode([]byte{4}, c); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Decode([]byte{2, 'x', 6}, c); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(c), "rows=2\na fixed(2): \"2\" \"3\"\nb strings(2,1): \"\" \"x\"\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzAvro decodes arbitrary bytes with a schema of every kind of field,
// mapped and skipped, including a recursive type: no panic, consistent
// columns, and a failure leaves the chunk as it was.
func FuzzAvro(f *testing.F) {
	node := `{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"]}]}`
	// An array of records feeding a Nested structure ns, maps into Map
	// columns, records into tuples.
	nest := `{"type":"array","items":{"type":"record","name":"NE","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"]},` +
		`{"name":"mp","type":{"type":"map","values":"int"}}]}}`
	schema := avroRecord(append(richTypes[:len(richTypes):len(richTypes)],
		`list:`+node, `nulls:{"type":"array","items":"null"}`, `dl:{"type":"array","items":`+decFixed16+`}`, `nest:`+nest)...)
	cols := append(richColumns[:len(richColumns):len(richColumns)],
		"head Int64", "nulls Array(Nullable(UInt8))", "dl Array(Decimal(20, 3))", "e2 Enum8('y' = 1)", "u1b String",
		"ns.a Array(Int8)", "ns.b Array(String)", "ns.mp Array(Map(UInt8, Int16))", "ns.z Array(UInt8)",
		"mm Map(String, String)", "skt Tuple(a Array(Float64), u Nullable(String))", "ot Tuple(Int64, Map(String, UInt8))")
	fields := append(richFields[:len(richFields):len(richFields)], "list.v", "nulls", "dl", "e", "u1",
		"nest.a", "nest.b", "nest.mp", "nest.z", "m", "sk", "o")
	for n := range 4 {
		v := richValue(n)
		v["list"] = map[string]any{"v": int64(n), "next": map[string]any{"Node": map[string]any{"v": int64(1), "next": nil}}}
		v["nulls"] = make([]any, n)
		v["dl"] = []*big.Rat{avroDec(int64(n)-2, 2), bigDec("-12345678901234567890.12")}
		v["nest"] = make([]map[string]any, n)
		for i := range n {
			v["nest"].([]map[string]any)[i] = map[string]any{"a": int32(i * 100), "b": nil, "mp": map[string]any{"7": int32(-i)}}
		}
		d := avroMarshal(f, schema, v)
		f.Add(d)
		f.Add(d[:len(d)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
	s := schemaOf(f, cols...)
	a := avroNew(f, schema, s, Options{Fields: fields, MaxRecordBytes: 1 << 16})
	first := avroMarshal(f, schema, func() map[string]any {
		v := richValue(0)
		v["list"] = map[string]any{"v": int64(9), "next": nil}
		v["nulls"] = []any{nil}
		v["dl"] = []*big.Rat{}
		v["nest"] = []map[string]any{{"a": int32(1), "b": "x", "mp": map[string]any{}}}
		return v
	}())
	f.Fuzz(func(t *testing.T, datum []byte) {
		c := newChunk(t, s)
		if _, err := a.Decode(first, c); err != nil {
			t.Fatalf("good datum: %v", err)
		}
		before := dump(c)
		rows, err := a.Decode(datum, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Fatalf("Decode(%x) = %d, %v: %v", datum, rows, err, cerr)
		}
		if err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%x): error %T %v is not *decode.Error", datum, err, err)
			}
			switch de.Reason {
			case decode.ReasonCorrupt, decode.ReasonWrongType, decode.ReasonOutOfRange, decode.ReasonTooLarge:
			default:
				t.Fatalf("Decode(%x): unknown reason %q", datum, de.Reason)
			}
			_ = de.Error()
			if rows != 0 || c.Rows != 1 {
				t.Fatalf("Decode(%x) failed but returned %d rows, chunk has %d", datum, rows, c.Rows)
			}
			if after := dump(c); after != before {
				t.Fatalf("Decode(%x) failed and changed the chunk:\n%s\n%s", datum, before, after)
			}
			return
		}
		if rows != 1 || c.Rows != 2 {
			t.Fatalf("Decode(%x) = %d rows, chunk has %d", datum, rows, c.Rows)
		}
		// Decoding the same datum again gives the same row.
		if _, err := a.Decode(datum, c); err != nil {
			t.Fatalf("second Decode(%x): %v", datum, err)
		}
		for i, col := range c.Cols {
			if x, y := render(col, 1), render(col, 2); x != y {
				t.Fatalf("Decode(%x) column %s: %q then %q", datum, s.Names[i], x, y)
			}
		}
	})
}
