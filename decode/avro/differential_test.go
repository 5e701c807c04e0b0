package avro

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	jsondec "github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/sink/clickhouse"
)

// The differential test holds the decoders to the server itself. For each
// column type family, edge values are sent two ways into twin tables:
// through etl (the JSON decoder, then the sink's native insert) into
// table a, and as the same JSON text through ClickHouse's own
// JSONEachRow parser over HTTP into table b. Then:
//
//   - nothing the decoder accepts may be refused by the server's insert
//     (the invariant: a decoded record never stops the pipeline);
//   - where both accept, the stored values must be equal, and a value only
//     etl accepts must be a documented difference (jsonDifferences; also
//     in docs/DESIGN.md, "Differences from ClickHouse's JSON parser").
//
// etl may be stricter than the server: values only the server accepts are
// logged, not failed (the server stores many of them wrapped, truncated or
// as zero).

// diffFamily is one column type and its edge values (JSON texts).
type diffFamily struct {
	name, typ string
	values    []string
}

// numberEdges are values every numeric family gets.
var numberEdges = []string{
	`0`, `-0`, `1`, `-1`, `0.0`, `-0.0`, `1.0`, `1.5`, `-1.5`, `1e2`, `1E2`, `1e+2`, `1e-3`, `1.0e1`, `100e-2`,
	`"0"`, `"1"`, `"-1"`, `"1e2"`, `"1.5"`, `" 1"`, `"1 "`, `""`, `"+1"`, `"abc"`, `"0x10"`, `"1_000"`, `"-"`,
	`true`, `false`, `null`, `[1]`, `{"a":1}`, `"01"`, `"00"`, `"-01"`, `1e400`, `-1e400`, `1e-400`,
	`"NaN"`, `"nan"`, `"inf"`, `"-inf"`, `"Infinity"`, `123456789012345678901234567890`, `"123456789012345678901234567890"`,
	`0.000000000000000000000000000001`, `9007199254740993`,
}

// intEdges are the bounds of an integer type and their neighbours, in
// several spellings.
func intEdges(lo, hi *big.Int) []string {
	one := big.NewInt(1)
	var out []string
	for _, v := range []*big.Int{lo, hi, new(big.Int).Sub(lo, one), new(big.Int).Add(hi, one), new(big.Int).Sub(hi, one)} {
		s := v.String()
		out = append(out, s, `"`+s+`"`, s+".0", s+".5")
		if v.Sign() != 0 && len(strings.TrimLeft(s, "-")) > 1 {
			d := strings.TrimLeft(s, "-")
			neg := strings.HasPrefix(s, "-")
			e := d[:1] + "." + d[1:] + "e" + strconv.Itoa(len(d)-1)
			if neg {
				e = "-" + e
			}
			out = append(out, e)
		}
	}
	return out
}

func bigPow2(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }

func signedFamily(bits uint) diffFamily {
	hi := new(big.Int).Sub(bigPow2(bits-1), big.NewInt(1))
	lo := new(big.Int).Neg(bigPow2(bits - 1))
	return diffFamily{fmt.Sprintf("Int%d", bits), fmt.Sprintf("Int%d", bits), append(intEdges(lo, hi), numberEdges...)}
}

func unsignedFamily(bits uint) diffFamily {
	hi := new(big.Int).Sub(bigPow2(bits), big.NewInt(1))
	return diffFamily{fmt.Sprintf("UInt%d", bits), fmt.Sprintf("UInt%d", bits), append(intEdges(big.NewInt(0), hi), numberEdges...)}
}

var stringEdges = []string{
	`""`, `"a"`, `"abcd"`, `"abcde"`, `"\n\t\r\"\\\/"`, `"\u0000"`, `"a\u0000b"`, `"\u00e9"`, `"é"`, `"éé"`, `"ééé"`,
	`"\ud83d\ude00"`, `"😀"`, `"\ud800"`, `"\udc00x"`, "\"\xff\xfe\"", "\"a\x01b\"", "\"tab\there\"", `"\b\f"`,
	`"\u001f"`, `"\x"`, `"\u12"`, `0`, `-1.5e3`, `true`, `false`, `null`, `[1,"a"]`, `{"a":[1]}`, `[]`, `{}`,
	`"` + strings.Repeat("x", 300) + `"`, `"1234"`, `"12345"`, `"ab\"c"`, `"\\"`,
	// Escapes and surrogates in every position: first, last, alone,
	// paired, a pair followed by another escape, a high surrogate followed
	// by an escape that is not a low one (fastjson took both as U+FFFD).
	`"\ud800\u0041"`, `"x\ud83d\u0041y"`, `"\ud83d\ude00\u0041"`, `"\u0041\ud83d\ude00"`, `"\u0041\ud800"`,
	`"\ud800\ud800"`, `"\udbff\udfff"`, `"\uD83D\uDE00"`, `"\ud83dx"`, `"x\ud800"`, `"\udc00\ud800"`,
	`"\ud800\n"`, `"\ud83d\\ude00"`, `"\u00"`, `"\a"`, `"\/\u002f"`, `"\u0022\u005c"`, `"\ufeff"`, `"\uffff"`,
	`"\u0000\u0041"`, `"a\\\u0041"`, `"\U0041"`, `"\u004G"`, `"\u00e9\u0301"`,
}

var uuidEdges = []string{
	`"00000000-0000-0000-0000-000000000000"`, `"123e4567-e89b-12d3-a456-426614174000"`, `"123E4567-E89B-12D3-A456-426614174000"`,
	`"ffffffff-ffff-ffff-ffff-ffffffffffff"`, `"123e4567e89b12d3a456426614174000"`, `"{123e4567-e89b-12d3-a456-426614174000}"`,
	`"123e4567-e89b-12d3-a456-42661417400"`, `"123e4567-e89b-12d3-a456-4266141740000"`, `"g23e4567-e89b-12d3-a456-426614174000"`,
	`"123e4567-e89b-12d3-a456_426614174000"`, `" 123e4567-e89b-12d3-a456-426614174000"`, `"123e4567-e89b-12d3-a456-426614174000 "`,
	`""`, `"x"`, `0`, `1`, `true`, `null`, `[]`, `{}`, `"123e4567-e89b-12d3-a456-4266141740"`, `"1-2-3-4-5"`,
	`"123e4567-e89b-12d3-a4564-26614174000"`, `"00000000-0000-0000-0000-00000000000g"`, `"--------"`,
	`"123e4567-e89b-12d3-a456-4266141740001"`, `"123e4567-e89b-12d3-a456-42661417400Z"`, `"Z23e4567-e89b-12d3-a456-426614174000"`,
	`"123e4567-e89b-12d3-a456-426614174000\u0000"`, `"12345678-1234-1234-1234-123456789abc"`, `"AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"`,
}

var dateEdges = []string{
	`"1970-01-01"`, `"1970-01-02"`, `"2106-02-06"`, `"2106-02-07"`, `"2106-02-08"`, `"2149-06-06"`, `"2149-06-07"`,
	`"1969-12-31"`, `"2020-02-29"`, `"2021-02-29"`, `"2020-13-01"`, `"2020-00-10"`, `"2020-01-32"`, `"2020-1-1"`,
	`"20200101"`, `"2020/01/01"`, `"2020-01-01 10:00:00"`, `"2020-01-01T10:00:00Z"`, `"2020-01-01T23:00:00-02:00"`,
	`"2020-01-01T10:00:00.123Z"`, `"2020-01-01 24:00:00"`, `"0000-00-00"`, `"9999-12-31"`, `""`, `"abc"`,
	`0`, `1`, `18000`, `"18000"`, `49710`, `49711`, `65535`, `65536`, `1e9`, `1795946400`, `1795946400000`, `-1`,
	`1.5`, `true`, `null`, `[]`, `"2020-01-01 "`, `" 2020-01-01"`, `"2020-01-01x"`,
}

var dateTimeEdges = []string{
	`"1970-01-01 00:00:00"`, `"1970-01-01T00:00:01Z"`, `"2106-02-06 23:59:59"`, `"2106-02-07 00:00:00"`,
	`"2106-02-07T06:28:15Z"`, `"2106-02-07T06:28:16Z"`, `"1969-12-31 23:59:59"`, `"2020-02-29 12:00:00"`,
	`"2021-02-29 12:00:00"`, `"2020-01-01 25:00:00"`, `"2020-01-01 10:60:00"`, `"2020-01-01 10:00:60"`,
	`"2020-01-01T10:00:00+01:00"`, `"2020-01-01T10:00:00-0130"`, `"2020-01-01T10:00:00+01"`, `"2020-01-01T10:00:00.999Z"`,
	`"2020-01-01t10:00:00z"`, `"2020-01-01"`, `"2020-01-01 10:00"`, `"2020-01-01T10:00:00."`, `"2020-01-01 10:00:00 "`,
	`0`, `1`, `"1"`, `4294943999`, `4294944000`, `4294967295`, `4294967296`, `1795946400`, `"1795946400"`,
	`1795946400123`, `1795946400123456`, `1795946400123456789`, `1795946400.75`, `1.7959464e9`, `99999999999`,
	`-1`, `-0.5`, `1e30`, `""`, `"abc"`, `true`, `null`, `[]`, `"0000-00-00 00:00:00"`,
}

// zoneEdges are the corpus of the DateTime columns with a time zone (and
// of Date): local texts, daylight-saving gaps and overlaps (New York,
// Berlin), the range edges in the zones, RFC 3339 with offsets, compact
// dates, numeric strings and epoch numbers.
var zoneEdges = []string{
	`"2021-01-01 00:00:00"`, `"2021-06-15 12:34:56"`, `"2021-01-01"`, `"2000-02-29 23:59:59"`,
	`"2021-03-14 01:59:59"`, `"2021-03-14 02:00:00"`, `"2021-03-14 02:30:00"`, `"2021-03-14 03:00:00"`,
	`"2021-11-07 00:59:59"`, `"2021-11-07 01:00:00"`, `"2021-11-07 01:30:00"`, `"2021-11-07 02:00:00"`,
	`"2021-03-28 02:30:00"`, `"2021-10-31 02:30:00"`,
	`"1970-01-01 00:00:00"`, `"1970-01-01 05:00:00"`, `"1970-01-01 05:30:00"`, `"1970-01-01 08:59:59"`,
	`"1970-01-01 09:00:00"`, `"1969-12-31 19:00:00"`, `"2105-12-31 23:59:59"`, `"2106-02-06 18:59:59"`,
	`"2106-02-06 19:00:00"`, `"2106-02-06 23:59:59"`, `"2106-02-07 00:00:00"`,
	`"2021-01-01T00:00:00Z"`, `"2021-01-01T00:00:00+01:00"`, `"2021-01-01T09:00:00+09:00"`, `"2021-01-01 00:00:00-05:00"`,
	`"20210101"`, `"20210230"`, `"21060207"`, `"1609459200"`, `"16094592000000"`, `"0"`, `"18000"`,
	`1609459200`, `1609459200000`, `0`, `18000`, `4294911599`, `4294943999`,
}

var decimalEdges = func(p, s int) []string {
	nines := strings.Repeat("9", p-s)
	frac := strings.Repeat("9", s)
	max := nines
	if s > 0 {
		max += "." + frac
	}
	return []string{
		max, "-" + max, `"` + max + `"`, nines + "0", "1" + strings.Repeat("0", p-s), "-1" + strings.Repeat("0", p-s),
		max + "9", "0." + strings.Repeat("0", s) + "1", "0." + strings.Repeat("9", s+3), "-0." + strings.Repeat("9", s+3),
		"1e" + strconv.Itoa(p-s-1), "1e" + strconv.Itoa(p-s), "1E" + strconv.Itoa(p-s), "1e-" + strconv.Itoa(s), "1e-" + strconv.Itoa(s+1),
		"1e30", `"1e30"`, "1e999999999", "1e-999999999", "0001.5", `"0001.5"`, "1.005", "-1.005", "12.345e1", "0.5e-0",
		"0." + strings.Repeat("1", 60), strings.Repeat("0", 60) + "1",
		// Digits past the scale: a nonzero one is refused, zeros are taken.
		nines + "." + frac + "0", nines + "." + frac + "1", "-0." + strings.Repeat("0", s) + "5", `"0.` + strings.Repeat("0", s) + `5"`,
		"19.999", "0.005", "-0.005", "19.990", "1." + strings.Repeat("0", s+20), "1." + strings.Repeat("0", s+20) + "1",
		"1.5e-" + strconv.Itoa(s), "15e-" + strconv.Itoa(s+1), "150e-" + strconv.Itoa(s+1), "-1.999e0",
	}
}

var enumEdges = []string{
	`"a"`, `"b"`, `"z"`, `"y"`, `"c"`, `"A"`, `""`, `" a"`, `1`, `2`, `3`, `-128`, `127`, `0`, `"1"`, `"2"`, `"-128"`, `"3"`,
	`1.0`, `1e0`, `1.5`, `"1.0"`, `true`, `null`, `[]`, `{}`, `-129`, `128`, `256`, `"a\u0000"`, `"\u0061"`,
}

var enum16Edges = []string{
	`"a"`, `"big"`, `"neg"`, `"c"`, `1`, `1000`, `-1000`, `32767`, `"1000"`, `"32767"`, `"max"`, `-32768`, `"min"`,
	`32768`, `-32769`, `0`, `2`, `"0"`, `1000.0`, `1e3`, `"1e3"`, `1000.5`, `true`, `null`, `""`, `[]`, `{}`, `"big "`,
	`"Big"`, `65536`, `"\u0062ig"`,
}

// diffFamilies are the column types of 18.16 the decoder fills (DateTime64,
// Date32, Bool, Map, IPv4/IPv6 and the wide integers do not exist there).
func diffFamilies() []diffFamily {
	fams := []diffFamily{
		signedFamily(8), signedFamily(16), signedFamily(32), signedFamily(64),
		unsignedFamily(8), unsignedFamily(16), unsignedFamily(32), unsignedFamily(64),
		{"Float32", "Float32", append([]string{`3.4028235e38`, `-3.4028235e38`, `3.5e38`, `-3.5e38`, `1e-46`, `1.4e-45`,
			`16777217`, `0.1`, `"3.4028235e38"`, `"3.5e38"`, `1.7976931348623157e308`}, numberEdges...)},
		{"Float64", "Float64", append([]string{`1.7976931348623157e308`, `-1.7976931348623157e308`, `1.8e308`, `4.9e-324`,
			`2.5e-324`, `0.1`, `"1.7976931348623157e308"`, `"1.8e308"`, `1e-400`, `123456789012345678901234567890e-10`}, numberEdges...)},
		{"Decimal9_2", "Decimal(9, 2)", append(decimalEdges(9, 2), numberEdges...)},
		{"Decimal18_4", "Decimal(18, 4)", append(decimalEdges(18, 4), numberEdges...)},
		{"Decimal38_10", "Decimal(38, 10)", append(decimalEdges(38, 10), numberEdges...)},
		{"Decimal5_0", "Decimal(5, 0)", append(decimalEdges(5, 0), numberEdges...)},
		{"NullableDecimal12_2", "Nullable(Decimal(12, 2))", append(decimalEdges(12, 2), numberEdges...)},
		{"String", "String", stringEdges},
		{"FixedString4", "FixedString(4)", stringEdges},
		{"UUID", "UUID", uuidEdges},
		{"Date", "Date", dateEdges},
		{"DateTime", "DateTime", dateTimeEdges},
		{"DateTimeUTC", "DateTime('UTC')", dateTimeEdges[:32]},
		{"DateTimeTokyo", "DateTime('Asia/Tokyo')", zoneEdges},
		{"DateTimeNewYork", "DateTime('America/New_York')", zoneEdges},
		{"NullableDateTimeKolkata", "Nullable(DateTime('Asia/Kolkata'))", append([]string{`null`}, zoneEdges...)},
		{"DateZones", "Date", zoneEdges},
		{"Enum8", "Enum8('a' = 1, 'b' = 2, 'z' = -128, 'y' = 127)", enumEdges},
		{"Enum16", "Enum16('a' = 1, 'big' = 1000, 'neg' = -1000, 'max' = 32767, 'min' = -32768)", enum16Edges},
		{"NullableInt32", "Nullable(Int32)", append([]string{`null`, `2147483647`, `2147483648`, `-2147483648`, `-2147483649`}, numberEdges...)},
		{"NullableString", "Nullable(String)", stringEdges},
		{"NullableDate", "Nullable(Date)", dateEdges},
		{"LowCardinalityString", "LowCardinality(String)", stringEdges},
		{"ArrayInt16", "Array(Int16)", []string{`[]`, `[1,2]`, `[32767,-32768]`, `[32768]`, `[-32769]`, `[null]`, `[1.5]`, `[1e2]`,
			`["1"]`, `[true]`, `[[1]]`, `[{}]`, `"[1]"`, `1`, `null`, `{}`, `[1,]`, `[ 1 , 2 ]`, `[1e-3]`, `[""]`, `["a"]`,
			`[0.0]`, `[-0]`, `[1,null,3]`, `[9223372036854775808]`, `[1e400]`, `["1e2"]`, `[false]`, `"abc"`, `[1,"2",3.0]`}},
		{"ArrayString", "Array(String)", []string{`[]`, `["a","b"]`, `[""]`, `[null]`, `[1]`, `[true]`, `[[1]]`, `[{"a":1}]`,
			`["\u0000"]`, "[\"\xff\"]", `["\ud800"]`, `"a"`, `1`, `null`, `{}`, `["a",1,null,true]`, `["\n"]`, `["'"]`,
			`["\\"]`, `["[1]"]`, `[ "x" ]`, `["é"]`, `[[]]`, `[{}]`, `[1.5e3]`, `["a","a"]`, `[-0]`, `["\t"]`, `[false]`, `[[null]]`}},
		{"ArrayNullableDate", "Array(Nullable(Date))", []string{`[]`, `["2020-01-01",null]`, `["2106-02-07"]`, `["2106-02-08"]`,
			`[0]`, `[65535]`, `["x"]`, `[null,null]`, `["1969-12-31"]`, `[1795946400]`, `["2020-02-30"]`, `[true]`, `[[]]`,
			`"2020-01-01"`, `null`, `[""]`, `["2149-06-06"]`, `[49710]`, `[49711]`, `["2020-01-01 10:00:00"]`, `[1.5]`, `[-1]`,
			`["2020-01-01T00:00:00Z"]`, `["0000-00-00"]`, `[{}]`, `["2020-1-1"]`, `[18000]`, `["18000"]`, `[1e9]`, `[1e2]`}},
		{"TupleInt8String", "Tuple(Int8, String)", []string{`[1,"a"]`, `[127,""]`, `[128,"a"]`, `[-128,"b"]`, `[1]`, `[1,"a",2]`,
			`["1","a"]`, `[1,2]`, `[null,"a"]`, `[1,null]`, `[]`, `{}`, `null`, `"a"`, `1`, `[1.5,"a"]`, `[1e2,"a"]`, `[true,"x"]`,
			`[[1],"a"]`, `[1,["a"]]`, `[1,{"a":1}]`, `[-129,"a"]`, `[0,"\u0000"]`, "[0,\"\xff\"]", `[ 1 , "a" ]`, `[1,"\n"]`,
			`[1e-3,"a"]`, `["x","a"]`, `[0.0,"a"]`, `[-0,"a"]`}},
	}
	return fams
}

// jsonDifference is a documented difference between etl's JSON decoder and
// the server's JSONEachRow parser, for a value etl accepts: either the
// server refuses it (srvOK false) or stores another value.
type jsonDifference struct {
	reason string
	match  func(fam diffFamily, value string, etl, srv diffResult) bool
}

// diffResult is what one side did with a value.
type diffResult struct {
	ok     bool
	stored string // the value as SELECT prints it (TabSeparated)
	err    string
}

// Classes of families, by their column type.
func isIntFamily(f diffFamily) bool {
	return strings.Contains(f.typ, "Int") || strings.HasPrefix(f.typ, "Enum") || strings.HasPrefix(f.typ, "Tuple(Int8")
}
func isStringFamily(f diffFamily) bool {
	return strings.Contains(f.typ, "String")
}
func isDateFamily(f diffFamily) bool { return strings.Contains(f.typ, "Date") }
func isDateOnly(f diffFamily) bool   { return isDateFamily(f) && !strings.Contains(f.typ, "DateTime") }

// isEpochNumber reports a JSON number, or a string holding only one.
func isEpochNumber(v string) bool {
	v = strings.Trim(strings.Trim(v, "[]"), `"`)
	if v == "" {
		return false
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// jsonDifferences are the documented differences (docs/DESIGN.md,
// "Differences from ClickHouse's JSON parser"), each a class of values etl
// accepts that the server's JSONEachRow parser (18.16) refuses or stores
// otherwise.
var jsonDifferences = []jsonDifference{
	{"null into a column that is not Nullable gives the column's default (as input_format_null_as_default does on newer servers); 18.16 refuses it, or stores nan into a Float",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return strings.Contains(v, "null") && !strings.HasPrefix(f.typ, "Nullable") && (!srv.ok || srv.stored == "nan")
		}},
	{"integers in any exact JSON form (1e2, 1.0, -0, 1.27e2, quoted or not) and true/false into Int8/UInt8; 18.16 wants plain digits",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isIntFamily(f) && !srv.ok && (strings.ContainsAny(v, ".eE") || strings.Contains(v, "-0") ||
				strings.Contains(v, "true") || strings.Contains(v, "false"))
		}},
	{"an Enum takes a number, or a numeric string that is not a name, equal to one of its values; 18.16 wants a name",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return strings.HasPrefix(f.typ, "Enum") && !srv.ok && isEpochNumber(v)
		}},
	{"a Decimal takes exponents (1e2, 100e-2), quoted numbers and zeros past the scale beyond the precision, stored as the exact value; 18.16's JSON parser refuses them",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return strings.Contains(f.typ, "Decimal(") && !srv.ok && exactDecimal(v, etl.stored)
		}},
	{"a JSON value other than a string goes into a String column as its JSON text; 18.16 wants a string",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isStringFamily(f) && !srv.ok && !strings.HasPrefix(v, `"`) && !strings.HasPrefix(v, `["`)
		}},
	{"Date and DateTime take JSON epoch numbers (seconds; milliseconds, microseconds or nanoseconds by magnitude), DateTime a numeric string too; 18.16 refuses a number into Date, takes a DateTime number as seconds wrapped to 32 bits and refuses a numeric string of more than 10 digits",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isDateFamily(f) && isEpochNumber(v) && !(isDateOnly(f) && strings.Contains(v, `"`))
		}},
	{"a Date string of eight digits is a compact date, YYYYMMDD (as current servers read it); 18.16 refuses it",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isDateOnly(f) && !srv.ok && len(strings.Trim(v, `[]"`)) == 8 && isEpochNumber(v)
		}},
	{"dates and times in RFC 3339 (T or t, a zone, a fraction), a bare date into DateTime and a date-time into Date; 18.16's parser takes only YYYY-MM-DD and YYYY-MM-DD hh:mm:ss",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isDateFamily(f) && !srv.ok && strings.Contains(v, `"`)
		}},
	{"18.16's text parser wraps a date after 2105 (to 0000-00-00 or 1970); etl stores it through the native protocol, and up to the server's range it reads back as written",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return isDateFamily(f) && strings.Contains(etl.stored, "2106-") && (strings.Contains(srv.stored, "0000-00-00") || strings.Contains(srv.stored, "1970-01-01"))
		}},
	{"floats are rounded correctly (to the nearest Float32 or Float64, subnormals kept); 18.16's text parser flushes subnormals to 0 and is off by one unit in the last place for some values (16777217, 3.4e38 into Float32; 7e-10)",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return strings.HasPrefix(f.typ, "Float") && srv.ok && correctlyRounded(f.typ, v, etl.stored)
		}},
	{"NaN from an Avro double is stored as NaN; JSON has no NaN, and 18.16's parser refuses nan",
		func(f diffFamily, v string, etl, srv diffResult) bool {
			return strings.HasPrefix(f.typ, "Float") && v == "nan" && etl.stored == "nan"
		}},
}

// exactDecimal reports whether stored (a Decimal as SELECT prints it) is
// exactly the number the JSON text v holds (quoted or not; exponents
// allowed): the value, not merely its acceptance.
func exactDecimal(v, stored string) bool {
	want, ok := new(big.Rat).SetString(strings.Trim(v, `"`))
	if !ok {
		return false
	}
	got, ok := new(big.Rat).SetString(stored)
	return ok && got.Cmp(want) == 0
}

// correctlyRounded reports whether stored (a Float32 or Float64 as
// SELECT prints it) is the float nearest to the number the JSON text v
// holds (quoted or not), as Go's strconv rounds it.
func correctlyRounded(typ, v, stored string) bool {
	bits := 64
	if strings.HasPrefix(typ, "Float32") {
		bits = 32
	}
	want, err := strconv.ParseFloat(strings.Trim(v, `"`), bits)
	if err != nil {
		return false
	}
	got, err := strconv.ParseFloat(stored, bits)
	return err == nil && got == want && math.Signbit(got) == math.Signbit(want)
}

// diffCH is the server and the connections of the differential tests.
type diffCH struct {
	srv *testenv.CH
	log *slog.Logger
}

func newDiffCH(t testing.TB) *diffCH {
	return &diffCH{srv: testenv.ClickHouse(t), log: slog.New(slog.DiscardHandler)}
}

// twin creates tables a_name and b_name of (id UInt32, v typ) and returns
// the sink client and target of a_name.
func (d *diffCH) twin(t testing.TB, name, typ string) (*clickhouse.Client, *clickhouse.Target) {
	t.Helper()
	for _, tb := range []string{"a_" + name, "b_" + name} {
		d.srv.Exec(t, "DROP TABLE IF EXISTS default."+tb)
		create := "CREATE TABLE default." + tb + " (id UInt32, v " + typ + ") ENGINE = Memory"
		if body, err := postSettings(d, create); err != nil {
			t.Fatalf("%s: %v %s", create, err, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := clickhouse.Connect(ctx, clickhouse.Options{Addr: []string{d.srv.TCPAddr()}, Database: "default", Table: "a_" + name,
		DialTimeout: 5 * time.Second, Settings: map[string]any{"max_execution_time": 60}}, d.log)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tg, err := c.Plan(ctx)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return c, tg
}

// postSettings runs a statement over HTTP with the setting LowCardinality
// columns need on 18.16.
func postSettings(d *diffCH, query string) (string, error) {
	// No keep-alive: an idle connection holds the server's stop for
	// seconds.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Post("http://"+d.srv.HTTPAddr()+"/?allow_experimental_low_cardinality_type=1", "text/plain", strings.NewReader(query))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return string(body), nil
}

// rows reads table tb as id -> value text.
func (d *diffCH) rows(t testing.TB, tb string) map[int]string {
	t.Helper()
	out := map[int]string{}
	text := d.srv.Query(t, "SELECT id, v FROM default."+tb+" ORDER BY id FORMAT TabSeparated")
	if text == "" {
		return out
	}
	for _, line := range strings.Split(text, "\n") {
		id, v, _ := strings.Cut(line, "\t")
		n, _ := strconv.Atoi(id)
		out[n] = v
	}
	return out
}

// record is the JSON record of value v with row id.
func record(id int, v string) []byte { return []byte(`{"id":` + strconv.Itoa(id) + `,"v":` + v + `}`) }

// etlInsert decodes the records of ids and inserts them in one chunk.
func etlInsert(ctx context.Context, c *clickhouse.Client, tg *clickhouse.Target, dec decode.Decoder, rec func(id int) []byte, ids []int) error {
	ch, err := chunk.New(tg.Schema)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := dec.Decode(rec(id), ch); err != nil {
			return fmt.Errorf("decode again: %w", err)
		}
	}
	if ch.Rows == 0 {
		return nil
	}
	return c.Insert(ctx, tg, []*chunk.Chunk{ch})
}

// refused returns the ids of records whose insert the server refuses: the
// whole batch first, then halves of a refused batch down to single
// records.
func refused(ctx context.Context, c *clickhouse.Client, tg *clickhouse.Target, dec decode.Decoder, rec func(id int) []byte, ids []int) (bad []int, msgs []string) {
	err := etlInsert(ctx, c, tg, dec, rec, ids)
	if err == nil {
		return nil, nil
	}
	if len(ids) == 1 {
		return ids, []string{err.Error()}
	}
	b1, m1 := refused(ctx, c, tg, dec, rec, ids[:len(ids)/2])
	b2, m2 := refused(ctx, c, tg, dec, rec, ids[len(ids)/2:])
	return append(b1, b2...), append(m1, m2...)
}

// runFamily runs the differential test of one family and returns the
// results of both sides per value.
func (d *diffCH) runFamily(t *testing.T, fam diffFamily) (etl, srv []diffResult) {
	c, tg := d.twin(t, fam.name, fam.typ)
	rg := chunk.RangesFor(c.ServerVersion())
	rg.TZ = c.ServerTimezone()
	dec, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields, Ranges: rg})
	if err != nil {
		t.Fatal(err)
	}
	etl = make([]diffResult, len(fam.values))
	srv = make([]diffResult, len(fam.values))
	probe, _ := chunk.New(tg.Schema)
	var accepted []int
	for id, v := range fam.values {
		if _, err := dec.Decode(record(id, v), probe); err != nil {
			etl[id].err = err.Error()
			continue
		}
		etl[id].ok = true
		accepted = append(accepted, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bad, msgs := refused(ctx, c, tg, dec, func(id int) []byte { return record(id, fam.values[id]) }, accepted)
	for i, id := range bad {
		t.Errorf("%s: etl decoded %s but the server refused the insert: %s", fam.name, fam.values[id], msgs[i])
		etl[id].ok, etl[id].err = false, "insert refused: "+msgs[i]
	}
	d.serverSide(t, fam.name, fam.values, etl, srv)
	return etl, srv
}

// serverSide inserts each JSON text of texts (row id = its index) through
// the server's own JSONEachRow parser into table b_name, then reads both
// twins back: the values etl stored into a_name and those the server
// stored into b_name, into etl and srv.
func (d *diffCH) serverSide(t *testing.T, name string, texts []string, etl, srv []diffResult) {
	// One insert per value (a Memory table takes a few milliseconds
	// each); a few at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for id, v := range texts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := d.srv.QueryErr("INSERT INTO default.b_" + name + " FORMAT JSONEachRow\n" + string(record(id, v)) + "\n")
			if err != nil {
				srv[id].err = err.Error()
				return
			}
			srv[id].ok = true
		}()
	}
	wg.Wait()
	a, b := d.rows(t, "a_"+name), d.rows(t, "b_"+name)
	for id := range texts {
		if s, ok := a[id]; ok {
			etl[id].stored = s
		} else if etl[id].ok {
			t.Errorf("%s: etl accepted %s but table a has no row %d", name, texts[id], id)
		}
		if s, ok := b[id]; ok {
			srv[id].stored = s
			srv[id].ok = true
		} else {
			srv[id].ok = false
		}
	}
}

// TestDifferentialJSON runs every family (at least 30 edge values each)
// and checks the invariant and the documented differences.
func TestDifferentialJSON(t *testing.T) {
	d := newDiffCH(t)
	undocumented := 0
	stricter := map[string]int{}
	var tally diffTally
	for _, fam := range diffFamilies() {
		tally.families++
		if len(fam.values) < 30 {
			t.Errorf("%s: %d values, want at least 30", fam.name, len(fam.values))
		}
		t.Run(fam.name, func(t *testing.T) {
			etl, srv := d.runFamily(t, fam)
			undocumented += compareFamily(t, fam, fam.values, etl, srv, &tally, stricter)
		})
	}
	t.Run("DateRangeEdges", func(t *testing.T) { dateRangeEdges(t, d) })
	names := make([]string, 0, len(stricter))
	for n := range stricter {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("etl refuses %d values of %s the server stores", stricter[n], n)
	}
	t.Logf("JSON: %s; %d undocumented differences", tally, undocumented)
}

// diffTally counts what the two sides of a differential test did.
type diffTally struct {
	families, values int
	equal            int // both stored, the same value
	bothRefused      int
	stricter         int // only the server stored it
	documented       int // etl stored, the server refused or stored another value: a documented difference
}

func (t *diffTally) add(e, s diffResult) {
	t.values++
	switch {
	case e.ok && s.ok && e.stored == s.stored:
		t.equal++
	case !e.ok && !s.ok:
		t.bothRefused++
	case !e.ok:
		t.stricter++
	}
}

// add2 adds the counts of u.
func (t *diffTally) add2(u diffTally) {
	t.families += u.families
	t.values += u.values
	t.equal += u.equal
	t.bothRefused += u.bothRefused
	t.stricter += u.stricter
	t.documented += u.documented
}

func (t diffTally) String() string {
	return fmt.Sprintf("%d families, %d values: %d stored equal on both sides, %d refused by both, %d refused by etl only, %d documented differences",
		t.families, t.values, t.equal, t.bothRefused, t.stricter, t.documented)
}

// compareFamily checks what both sides did with each value of fam
// (texts[i] is value i as JSON text, as the server was sent it): where
// etl stores a value, the server must store the same one, or the
// difference must be documented (jsonDifferences); where only the server
// stores it, etl is stricter (logged). It returns the undocumented
// differences, each also a test failure.
func compareFamily(t *testing.T, fam diffFamily, texts []string, etl, srv []diffResult, tally *diffTally, stricter map[string]int) int {
	undocumented := 0
	for id, v := range texts {
		e, s := etl[id], srv[id]
		tally.add(e, s)
		switch {
		case !e.ok && s.ok:
			stricter[fam.name]++
			t.Logf("stricter: %s %s: etl refuses (%s); the server stores %q", fam.name, v, e.err, s.stored)
		case e.ok && (!s.ok || e.stored != s.stored):
			if why := documented(fam, v, e, s); why != "" {
				tally.documented++
				t.Logf("documented: %s %s: etl %q, server ok=%v %q %s: %s", fam.name, v, e.stored, s.ok, s.stored, firstLine(s.err), why)
				continue
			}
			undocumented++
			t.Errorf("undocumented difference: %s %s: etl stores %q; server ok=%v stores %q %s", fam.name, v, e.stored, s.ok, s.stored, firstLine(s.err))
		}
	}
	return undocumented
}

// checkFamily runs the differential test of one family: a value etl
// accepts and the server refuses or stores otherwise fails the test
// unless it is a documented difference; values only the server accepts
// are counted in stricter. It returns the undocumented differences.
func (d *diffCH) checkFamily(t *testing.T, fam diffFamily, stricter map[string]int) (undocumented int) {
	etl, srv := d.runFamily(t, fam)
	var tally diffTally
	return compareFamily(t, fam, fam.values, etl, srv, &tally, stricter)
}

// TestDifferentialServerTimezone: on a server whose own time zone is not
// UTC, a DateTime column without a zone reads a text without an offset in
// the server's zone (which the sink learns from the server's hello), as
// the server's JSONEachRow does; a column with a zone keeps its own.
func TestDifferentialServerTimezone(t *testing.T) {
	const tz = "America/New_York"
	d := &diffCH{srv: testenv.ClickHouseWith(t, testenv.CHOptions{Timezone: tz}), log: slog.New(slog.DiscardHandler)}
	if got := d.srv.Query(t, "SELECT timezone()"); got != tz {
		t.Fatalf("server time zone %q, want %s", got, tz)
	}
	stricter := map[string]int{}
	for _, fam := range []diffFamily{
		{"DateTimeServerZone", "DateTime", zoneEdges},
		{"DateTimeTokyoOnNewYork", "DateTime('Asia/Tokyo')", zoneEdges},
		{"DateTimeUTCOnNewYork", "DateTime('UTC')", zoneEdges},
	} {
		t.Run(fam.name, func(t *testing.T) {
			c, _ := d.twin(t, fam.name+"_probe", fam.typ)
			if got := c.ServerTimezone(); got != tz {
				t.Fatalf("the sink's server time zone %q, want %s", got, tz)
			}
			d.checkFamily(t, fam, stricter)
		})
	}
	for n, k := range stricter {
		t.Logf("etl refuses %d values of %s the server stores", k, n)
	}
}

func documented(fam diffFamily, v string, e, s diffResult) string {
	for _, d := range jsonDifferences {
		if d.match(fam, v, e, s) {
			return d.reason
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// dateRangeEdges: on the real server, the last Date and DateTime its
// range allows are decoded, inserted and read back exactly; the next ones
// are refused as out_of_range naming the server's maximum.
func dateRangeEdges(t *testing.T, d *diffCH) {
	// The edges of the server's range: 2106-02-07 and 2106-02-06 23:59:59
	// on 18.16, 2149-06-06 and 2106-02-07 06:28:15 on a current server.
	probe, _ := d.twin(t, "edge_probe", "Date")
	rg := chunk.RangesFor(probe.ServerVersion())
	day := func(n int64) string { return time.Unix(n*86400, 0).UTC().Format(time.DateOnly) }
	sec := func(n int64) string { return time.Unix(n, 0).UTC().Format(time.DateTime) }
	t.Logf("server %s: Date up to %s, DateTime up to %s", rg.Server, day(rg.DateMax), sec(rg.DateTimeMax))
	for _, x := range []struct {
		name, typ, last, next, want string
	}{
		{"edge_date", "Date", `"` + day(rg.DateMax) + `"`, `"` + day(rg.DateMax+1) + `"`, day(rg.DateMax)},
		{"edge_date_days", "Date", `"` + day(rg.DateMax) + `T23:59:59Z"`, `"` + day(rg.DateMax+1) + `T00:00:00Z"`, day(rg.DateMax)},
		{"edge_datetime", "DateTime('UTC')", `"` + sec(rg.DateTimeMax) + `"`, `"` + sec(rg.DateTimeMax+1) + `"`, sec(rg.DateTimeMax)},
		{"edge_datetime_epoch", "DateTime('UTC')", strconv.FormatInt(rg.DateTimeMax, 10), strconv.FormatInt(rg.DateTimeMax+1, 10), sec(rg.DateTimeMax)},
	} {
		c, tg := d.twin(t, x.name, x.typ)
		dec, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields, Ranges: rg})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := chunk.New(tg.Schema)
		if _, err := dec.Decode(record(1, x.next), ch); err == nil || !strings.Contains(err.Error(), "past the server's maximum") ||
			!strings.Contains(err.Error(), "("+rg.Server+")") {
			t.Errorf("%s %s: %v, want out_of_range naming %s's maximum", x.typ, x.next, err, rg.Server)
		}
		if _, err := dec.Decode(record(1, x.last), ch); err != nil {
			t.Fatalf("%s %s: %v", x.typ, x.last, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = c.Insert(ctx, tg, []*chunk.Chunk{ch})
		cancel()
		if err != nil {
			t.Fatalf("%s: insert: %v", x.name, err)
		}
		if got := d.srv.Query(t, "SELECT toString(v) FROM default.a_"+x.name); got != x.want {
			t.Errorf("%s %s read back as %s, want %s", x.typ, x.last, got, x.want)
		}
		if rg.DateTimeMax != chunk.NarrowDateTimeMax {
			continue
		}
		// Why the range is narrower on this server: the next value, let
		// through with a current server's range, does not read back.
		wide, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields, Ranges: chunk.RangesFor("24.8")})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ = chunk.New(tg.Schema)
		if _, err := wide.Decode(record(2, x.next), ch); err != nil {
			t.Fatalf("%s %s with the wide range: %v", x.typ, x.next, err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		err = c.Insert(ctx, tg, []*chunk.Chunk{ch})
		cancel()
		if err != nil {
			t.Fatalf("%s: insert: %v", x.name, err)
		}
		got := d.srv.Query(t, "SELECT toString(v) FROM default.a_"+x.name+" WHERE id = 2")
		if !strings.HasPrefix(got, "1970-") && !strings.HasPrefix(got, "0000-") {
			t.Errorf("%s %s past %s's range read back as %s: the narrower range is no longer needed", x.typ, x.next, rg.Server, got)
		}
		t.Logf("%s %s past %s's range reads back as %s", x.typ, x.next, rg.Server, got)
	}
}

// TestDifferentialAvro holds the Avro decoder to the server's own
// parser: edge values, written as wider Avro types than their columns,
// go through etl (decoder, then the sink's native insert) into table a,
// and the same values, read back from each datum by hamba/avro and
// written as JSON text by the test (its own ledger: integers and floats
// in Go's shortest form, a decimal at its writer's scale, a date as
// YYYY-MM-DD, a timestamp floored to the column's unit), through the
// server's JSONEachRow parser into table b. Whatever etl decodes the
// server's insert accepts, and the stored values are compared as in
// TestDifferentialJSON.
func TestDifferentialAvro(t *testing.T) {
	d := newDiffCH(t)
	longs := []any{int64(0), int64(-1), int64(1), int64(127), int64(128), int64(-128), int64(-129), int64(255), int64(256),
		int64(32767), int64(32768), int64(-32768), int64(65535), int64(65536), int64(2147483647), int64(2147483648),
		int64(-2147483648), int64(4294967295), int64(4294967296), int64(1 << 53), int64(-1 << 63), int64(1<<63 - 1),
		int64(49709), int64(49710), int64(49711), int64(65536), int64(4294943999), int64(4294944000),
		int64(4294943999000), int64(4294944000000), int64(4294943999999999), int64(-86400000), int64(1609459200123),
		int64(1609459199999), int64(-1000), int64(-999)}
	decs := []any{avroDec(0, 0), avroDec(1, 2), avroDec(-1, 2), avroDec(999999999, 2), avroDec(1000000000, 2),
		avroDec(-999999999, 2), avroDec(99999999999, 4), avroDec(1, 20), avroDec(-1, 20), bigDec("12345678901234567890.1234"),
		bigDec("-9999999.9999"), bigDec("9999999.9949"), bigDec("10000000.00"), bigDec("0.0001"),
		bigDec("-0.0099"), bigDec("99999999999999999999999999.9999"), avroDec(5, 0), avroDec(-5, 0),
		bigDec("1.2345"), bigDec("-9999999.995"), bigDec("9999999.99"), bigDec("-9999999.99"),
		bigDec("0.005"), bigDec("-0.005"), bigDec("123.45"), bigDec("99999999.99"), bigDec("-99999999.99"),
		bigDec("1000000.001"), bigDec("7"), bigDec("-7.77"), bigDec("19.999"), bigDec("19.9900"), bigDec("0.0100")}
	floats := []any{0.0, math.Copysign(0, -1), 1.5, 3.4028234663852886e38, 3.5e38, -3.5e38, 1e-46, 1.7976931348623157e308,
		math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, 0.1, 16777217.0, -1e10, 1e10, 2.5, 1e30, -1e30, 3.4e38, -3.4e38,
		1e-38, 1e-45, 1.4e-45, 123.456, 1e300, -1e300, 42.0, 7e-10, 9.999e37}
	day := func(tm time.Time) string { return `"` + tm.UTC().Format(time.DateOnly) + `"` }
	sec := func(tm time.Time) string { return `"` + tm.UTC().Truncate(time.Second).Format(time.DateTime) + `"` }
	secIn := func(tm time.Time, zone string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return `"` + tm.Truncate(time.Second).In(loc).Format(time.DateTime) + `"`
	}
	if tm := time.UnixMilli(-1); sec(tm) != `"1969-12-31 23:59:59"` {
		// Truncate rounds toward the zero time (year 1), so before 1970
		// it floors as well; the ledger relies on it.
		t.Fatalf("flooring -1 ms gives %s", sec(tm))
	}
	num := func(v any) string {
		switch x := v.(type) {
		case int, int32, int64:
			return fmt.Sprint(x)
		case float64:
			switch {
			case math.IsNaN(x):
				return "nan"
			case math.IsInf(x, 1):
				return "inf"
			case math.IsInf(x, -1):
				return "-inf"
			}
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		panic(fmt.Sprintf("%T", v))
	}
	decimal := func(v any) string { return v.(*big.Rat).FloatString(4) } // the writer's scale
	var tally diffTally
	stricter := map[string]int{}
	undocumented := 0
	for _, x := range []struct {
		name, wtype, col string
		values           []any
		text             func(any) string // the value hamba/avro reads back, as JSON text
	}{
		{"avro_i8", `"long"`, "Int8", longs, num},
		{"avro_u8", `"long"`, "UInt8", longs, num},
		{"avro_i16", `"long"`, "Int16", longs, num},
		{"avro_u16", `"int"`, "UInt16", int32s(longs), num},
		{"avro_u32", `"long"`, "UInt32", longs, num},
		{"avro_u64", `"long"`, "UInt64", longs, num},
		{"avro_f32", `"double"`, "Float32", floats, num},
		{"avro_f64", `"double"`, "Float64", floats, num},
		{"avro_dec9", `{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}`, "Decimal(9, 2)", decs, decimal},
		{"avro_dec18", `{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}`, "Decimal(18, 4)", decs, decimal},
		{"avro_dec12n", `{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}`, "Nullable(Decimal(12, 2))", decs, decimal},
		{"avro_date", `{"type":"int","logicalType":"date"}`, "Date", int32s(longs), func(v any) string { return day(v.(time.Time)) }},
		{"avro_date_ms", `{"type":"long","logicalType":"timestamp-millis"}`, "Date", longs, func(v any) string { return day(v.(time.Time)) }},
		{"avro_dt_ms", `{"type":"long","logicalType":"timestamp-millis"}`, "DateTime('UTC')", longs, func(v any) string { return sec(v.(time.Time)) }},
		{"avro_dt_us", `{"type":"long","logicalType":"timestamp-micros"}`, "DateTime('UTC')", longs, func(v any) string { return sec(v.(time.Time)) }},
		{"avro_dt_date", `{"type":"int","logicalType":"date"}`, "DateTime('UTC')", int32s(longs), func(v any) string { return sec(v.(time.Time)) }},
		{"avro_dt_tokyo", `{"type":"long","logicalType":"timestamp-millis"}`, "DateTime('Asia/Tokyo')", longs, func(v any) string { return secIn(v.(time.Time), "Asia/Tokyo") }},
	} {
		tally.families++
		t.Run(x.name, func(t *testing.T) {
			c, tg := d.twin(t, x.name, x.col)
			schema := avroRecord(`id:"int"`, "v:"+x.wtype)
			a, err := New(schema, tg.Schema, Options{Fields: tg.Fields, Ranges: chunk.RangesFor(c.ServerVersion())})
			if err != nil {
				t.Fatal(err)
			}
			sch := avroParse(t, schema)
			recs := make([][]byte, len(x.values))
			texts := make([]string, len(x.values))
			etl := make([]diffResult, len(x.values))
			srv := make([]diffResult, len(x.values))
			probe, _ := chunk.New(tg.Schema)
			var accepted []int
			for id, v := range x.values {
				recs[id] = avroMarshal(t, schema, map[string]any{"id": int32(id), "v": v})
				var back map[string]any
				if err := havro.Unmarshal(sch, recs[id], &back); err != nil {
					t.Fatalf("%v: read back: %v", v, err)
				}
				texts[id] = x.text(back["v"])
				if _, err := a.Decode(recs[id], probe); err != nil {
					etl[id].err = err.Error()
					continue
				}
				etl[id].ok = true
				accepted = append(accepted, id)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			bad, msgs := refused(ctx, c, tg, a, func(id int) []byte { return recs[id] }, accepted)
			for i, id := range bad {
				t.Errorf("%s: etl decoded %v but the server refused the insert: %s", x.name, x.values[id], msgs[i])
				etl[id].ok, etl[id].err = false, "insert refused: "+msgs[i]
			}
			d.serverSide(t, x.name, texts, etl, srv)
			undocumented += compareFamily(t, diffFamily{name: x.name, typ: x.col}, texts, etl, srv, &tally, stricter)
		})
	}
	t.Logf("Avro: %s; %d undocumented differences", tally, undocumented)
}

// int32s keeps the values that fit an Avro int.
func int32s(vs []any) []any {
	var out []any
	for _, v := range vs {
		if n := v.(int64); n >= math.MinInt32 && n <= math.MaxInt32 {
			out = append(out, int32(n))
		}
	}
	return out
}
