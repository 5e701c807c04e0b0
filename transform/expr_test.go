package transform

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/etl-project/etl/config"
)

var exprCols = []string{
	"i Int64", "j Int64", "z Int64", "big Int64", "u UInt64", "u8 UInt8", "i8 Int8", "u32 UInt32",
	"f Float64", "f32 Float32", "s String", "csv String", "sp String", "b Bool",
	"ts DateTime", "t64 DateTime64(3)", "d Date", "n Nullable(Int64)", "nn Nullable(Int64)",
	"ns Nullable(String)", "js String", "e Enum8('red' = 1, 'green' = 2)", "dec Decimal(10, 2)",
	"lc LowCardinality(String)", "fs FixedString(4)", "arr Array(Int64)", "num String",
}

var tsVal = time.Date(2024, 3, 15, 13, 45, 30, 0, time.UTC) // a Friday

func exprRow() map[string]any {
	return map[string]any{
		"i": 7, "j": -3, "z": 0, "big": int64(math.MaxInt64), "u": uint64(math.MaxUint64), "u8": 200, "i8": -5, "u32": 4000000000,
		"f": 2.5, "f32": 1.5, "s": "Hello, World", "csv": "a,b,,d", "sp": "  pad me \t", "b": true,
		"ts": tsVal, "t64": tsVal.UnixMilli() + 123, "d": time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC),
		"n": nil, "nn": 5, "ns": nil,
		"js": `{"a":{"b":"x\"y","n":42,"f":1.5,"t":true},"arr":[1,2,3],"s":"12"}`,
		"e":  "green", "dec": "12.34", "lc": "low", "fs": "ab", "arr": []any{1, 2, 3}, "num": " 42 ",
	}
}

// evalExpr compiles `set: {x: text}` against exprCols and returns x for
// the one row of exprRow: int64, uint64, float64, string, bool, time.Time
// or nil.
func evalExpr(t testing.TB, text string) (any, error) {
	t.Helper()
	s := mkSchema(t, exprCols...)
	cc := newChainCompiler(s, nil)
	cc.steps([]config.Step{set(1, "x", text)})
	c, err := cc.finish()
	if err != nil {
		return nil, err
	}
	ref := cc.scope["x"]
	in := mkChunk(t, s)
	addRow(t, in, exprRow())
	if _, err := c.Run(in, 0, newEmitter(t, nil)); err != nil {
		return nil, err
	}
	sl := c.r.slots[ref.slot]
	if ref.t.null && sl.null || ref.t.k == kNull {
		return nil, nil
	}
	switch ref.t.k {
	case kBool:
		return sl.b, nil
	case kInt:
		return sl.i, nil
	case kUInt:
		return uint64(sl.i), nil
	case kFloat:
		return sl.f, nil
	case kString:
		return strings.Clone(sl.s), nil
	case kTime:
		return time.Unix(0, sl.i).UTC(), nil
	}
	return nil, errors.New("unknown kind")
}

func TestExpressions(t *testing.T) {
	tests := []struct {
		expr string
		want any
	}{
		// Literals.
		{`1`, int64(1)},
		{`-1`, int64(-1)},
		{`1.5`, 1.5},
		{`"a"`, "a"},
		{`true`, true},
		{`nil`, nil},
		{`'single'`, "single"},
		{`0x2a + 1_000`, int64(1042)},
		{`"tab\there"`, "tab\there"},
		// Integer arithmetic stays Int64, wrapping.
		{`i + j`, int64(4)},
		{`i - j`, int64(10)},
		{`i * j`, int64(-21)},
		{`i % 4`, int64(3)},
		{`j % 2`, int64(-1)}, // the sign of the dividend
		{`big + 1`, int64(math.MinInt64)},
		{`intDiv(i, 2)`, int64(3)},
		{`intDiv(j, 2)`, int64(-1)}, // truncates toward zero
		{`intDiv(u, 2)`, uint64(math.MaxUint64 / 2)},
		// / is Float64 division.
		{`i / 2`, 3.5},
		{`i / 2.0`, 3.5},
		// int op float is float.
		{`i + f`, 9.5},
		{`f * 2`, 5.0},
		{`f % 1`, 0.5},
		{`f32 + 0`, 1.5},
		// UInt64 with UInt64 (or a literal >= 0) stays UInt64, wrapping.
		{`u + 1`, uint64(0)},
		{`u * 1`, uint64(math.MaxUint64)},
		{`u - u`, int64(0)},
		{`u8 - 201`, int64(-1)}, // UInt8..UInt32 read as Int64
		{`u32 * 2`, int64(8000000000)},
		{`u + i`, int64(6)}, // mixed signedness is Int64
		{`-u8`, int64(-200)},
		{`i8 * 2`, int64(-10)},
		// Comparison.
		{`i > 5`, true},
		{`i >= 7 && i <= 7`, true},
		{`1 < i < 10`, true},
		{`u > i`, true},
		{`j < u`, true},
		{`u == 18446744073709551615`, false}, // the literal is too large for Int64: see TestCompileErrors
		{`i == 7.0`, true},
		{`s == "Hello, World"`, true},
		{`s < "I"`, true},
		{`b == true`, true},
		{`ts > parse_time("2024-01-01", "2006-01-02")`, true},
		// Logic.
		{`i > 5 and not b`, false},
		{`i > 5 || b`, true},
		{`!(i > 5)`, false},
		{`i in [1, 7, 9]`, true},
		{`i not in [1, 7, 9]`, false},
		{`s in ["x", "Hello, World"]`, true},
		{`u8 in [1,2,3,4,5,6,7,8,9,10,200]`, true},
		{`f in [2.5]`, true},
		// Nullable.
		{`n ?? 3`, int64(3)},
		{`nn ?? 3`, int64(5)},
		{`n ?? nn ?? 9`, int64(5)},
		{`n == nil`, true},
		{`nn != nil`, true},
		{`nil == n`, true},
		{`i == nil`, false},
		{`ns ?? "none"`, "none"},
		{`n`, nil},
		{`i > 5 ? nil : 1`, nil},
		{`i > 50 ? nil : 1`, int64(1)},
		{`(i > 5 ? nn : nil) ?? 0`, int64(5)},
		{`n ?? 1.5`, 1.5},
		// Conditional.
		{`i > 5 ? "big" : "small"`, "big"},
		{`i > 50 ? 1 : 2.5`, 2.5},
		{`u > 0 ? u : 0`, uint64(math.MaxUint64)},
		{`if i > 5 { 1 } else { 2 }`, int64(1)},
		// Strings.
		{`upper(s)`, "HELLO, WORLD"},
		{`lower(s)`, "hello, world"},
		{`upper("ABC")`, "ABC"},
		{`upper("héllo")`, "HéLLO"}, // ASCII only
		{`trim(sp)`, "pad me"},
		{`trim("xxaxx", "x")`, "a"},
		{`trimPrefix(s, "Hello")`, ", World"},
		{`trimSuffix(s, "World")`, "Hello, "},
		{`substring(s, 7)`, "World"},
		{`substring(s, 0, 5)`, "Hello"},
		{`substring(s, -5)`, "World"},
		{`substring(s, -5, 2)`, "Wo"},
		{`substring(s, 100)`, ""},
		{`substring(s, 2, -1)`, ""},
		{`substring(s, -100, 2)`, "He"},
		{`concat(s, "!", "?")`, "Hello, World!?"},
		{`concat(upper(s), lower(s))`, "HELLO, WORLDhello, world"},
		{`concat("a","b","c","d","e","f","g","h","i","j")`, "abcdefghij"},
		{`s + "!"`, "Hello, World!"},
		{`split(csv, ",")[0]`, "a"},
		{`split(csv, ",")[2]`, ""},
		{`split(csv, ",")[3]`, "d"},
		{`split(csv, ",")[4]`, ""},
		{`split(csv, ",")[-1]`, "d"},
		{`split(csv, ",")[-4]`, "a"},
		{`split(csv, ",")[-5]`, ""},
		{`split("abc", "")[1]`, "b"},
		{`split(csv, ",")[i - 6]`, "b"},
		{`replace(s, "l", "L")`, "HeLLo, WorLd"},
		{`replace(s, "xyz", "L")`, "Hello, World"},
		{`replace(s, "", "L")`, "Hello, World"},
		{`matches(s, "^H.*d$")`, true},
		{`s matches "world"`, false},
		{`s contains "lo, W"`, true},
		{`s startsWith "Hell"`, true},
		{`s endsWith "x"`, false},
		{`hasPrefix(s, "He")`, true},
		{`contains(s, "lo, W")`, true},
		{`startsWith(s, "Hell") && endsWith(s, "ld")`, true},
		{`not matches(s, "^x")`, true},
		{`s not matches "^x"`, true},
		{`s not contains "x"`, true},
		{`!contains(s, "x") and (matches(s, "H"))`, true},
		{`indexOf(s, "o")`, int64(4)},
		{`indexOf(s, "z")`, int64(-1)},
		{`len(s)`, int64(12)},
		{`len(fs)`, int64(2)},
		{`e`, "green"},
		{`lc`, "low"},
		{`dec * 2`, 24.68},
		// Conversions.
		{`int(num)`, int64(42)},
		{`int(f)`, int64(2)},
		{`int(-2.9)`, int64(-2)},
		{`uint(i)`, uint64(7)},
		{`float(num)`, 42.0},
		{`float(i)`, 7.0},
		{`string(i)`, "7"},
		{`string(u)`, "18446744073709551615"},
		{`string(f)`, "2.5"},
		{`string(1e30)`, "1e+30"},
		{`string(b)`, "true"},
		{`string(ts)`, "2024-03-15T13:45:30Z"},
		{`abs(j)`, int64(3)},
		{`abs(-2.5)`, 2.5},
		{`round(2.5)`, 2.0},
		{`round(3.5)`, 4.0},
		{`round(f, 1)`, 2.5},
		{`round(1.25, 1)`, 1.2},
		{`floor(f)`, 2.0},
		{`ceil(f)`, 3.0},
		{`floor(i)`, int64(7)},
		{`min(i, j, 3)`, int64(-3)},
		{`max(i, f)`, 7.0},
		{`max("a", "b")`, "b"},
		// Time.
		{`ts`, tsVal},
		{`to_unix(ts)`, tsVal.Unix()},
		{`to_unix_ms(t64)`, tsVal.UnixMilli() + 123},
		{`to_unix(d)`, time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC).Unix()},
		{`from_unix(1700000000)`, time.Unix(1700000000, 0).UTC()},
		{`from_unix_ms(1700000000123)`, time.UnixMilli(1700000000123).UTC()},
		{`from_unix(1.5)`, time.Unix(1, 5e8).UTC()},
		{`parse_time("2024-03-15T13:45:30+02:00", "RFC3339")`, tsVal.Add(-2 * time.Hour)},
		{`parse_time("15/03/2024 13:45", "02/01/2006 15:04")`, time.Date(2024, 3, 15, 13, 45, 0, 0, time.UTC)},
		// A zone reads a text without an offset as local time there; an
		// offset in the text wins; a gap takes the later offset and an
		// overlap its first instant, as the server's date tables do.
		{`parse_time("2024-03-15 13:45:30", "DateTime", "Asia/Tokyo")`, tsVal.Add(-9 * time.Hour)},
		{`parse_time("2024-03-15T13:45:30+02:00", "RFC3339", "Asia/Tokyo")`, tsVal.Add(-2 * time.Hour)},
		{`parse_time("2021-03-28 02:30:00", "DateTime", "Europe/Berlin")`, time.Date(2021, 3, 28, 0, 30, 0, 0, time.UTC)},
		{`parse_time("2021-10-31 02:30:00", "DateTime", "Europe/Berlin")`, time.Date(2021, 10, 31, 0, 30, 0, 0, time.UTC)},
		{`parse_time("2024-03-15 13:45:30.25", "2006-01-02 15:04:05.999", "Asia/Kolkata")`, time.Date(2024, 3, 15, 8, 15, 30, 25e7, time.UTC)},
		{`format_time(ts, "DateTime", "Asia/Tokyo")`, "2024-03-15 22:45:30"},
		{`format_time(ts, "2006-01-02 15:04:05")`, "2024-03-15 13:45:30"},
		{`format_time(t64, "15:04:05.000")`, "13:45:30.123"},
		{`format_time(ts, "DateOnly")`, "2024-03-15"},
		{`truncate(ts, "hour")`, time.Date(2024, 3, 15, 13, 0, 0, 0, time.UTC)},
		{`truncate(ts, "15m")`, time.Date(2024, 3, 15, 13, 45, 0, 0, time.UTC)},
		{`truncate(ts, "day")`, time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC)},
		{`truncate(ts, "week")`, time.Date(2024, 3, 11, 0, 0, 0, 0, time.UTC)}, // Monday
		{`truncate(from_unix(0), "week")`, time.Date(1969, 12, 29, 0, 0, 0, 0, time.UTC)},
		{`truncate(from_unix(-1), "day")`, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
		{`truncate(ts, "month")`, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{`truncate(ts, "year")`, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{`truncate(t64, "second")`, tsVal},
		{`max(ts, d)`, tsVal},
		// Hashing: the xxHash64 of the value's bytes.
		{`xxhash64(s)`, xxhash.Sum64String("Hello, World")},
		{`xxhash64("")`, uint64(17241709254077376921)}, // ClickHouse's documented xxHash64('')
		{`xxhash64(i)`, xxhash.Sum64([]byte{7, 0, 0, 0, 0, 0, 0, 0})},
		{`xxhash64(u)`, xxhash.Sum64([]byte{255, 255, 255, 255, 255, 255, 255, 255})},
		{`xxhash64(b)`, xxhash.Sum64([]byte{1})},
		// JSON.
		{`json_string(js, "a.b")`, `x"y`},
		{`json_string(js, "a.n")`, ""},
		{`json_string(js, "nope")`, ""},
		{`json_string(s, "a")`, ""}, // not JSON
		{`json_int(js, "a.n")`, int64(42)},
		{`json_int(js, "arr.2")`, int64(3)},
		{`json_int(js, "s")`, int64(0)},
		{`json_float(js, "a.f")`, 1.5},
		{`json_bool(js, "a.t")`, true},
		{`json_has(js, "a.b")`, true},
		{`json_has(js, "a.z")`, false},
		{`json_int(js, "a.n") + json_int(js, "arr.0")`, int64(43)},
		{`json_string(concat("{\"k\":\"", s, "\"}"), "k")`, "Hello, World"},
		// A string escape ClickHouse's JSON input refuses or alters makes the
		// document invalid: the zero value, never a character dropped.
		{`json_string("{\"k\":\"\\ud83d\\ude00\\u0041\"}", "k")`, "😀A"},
		{`json_string("{\"k\":\"\\ud800\\u0041\"}", "k")`, ""},
		{`json_string("{\"k\":\"a\\x\"}", "k")`, ""},
		{`json_has("{\"k\":\"\\udc00\"}", "k")`, false},
	}
	for _, tc := range tests {
		got, err := evalExpr(t, tc.expr)
		if tc.expr == `u == 18446744073709551615` {
			if err == nil {
				t.Errorf("%s: want a compile error", tc.expr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if tm, ok := tc.want.(time.Time); ok {
			if gt, ok := got.(time.Time); !ok || !gt.Equal(tm) {
				t.Errorf("%s = %v, want %v", tc.expr, got, tm)
			}
			continue
		}
		if f, ok := tc.want.(float64); ok {
			if g, ok := got.(float64); !ok || math.Abs(g-f) > 1e-9 {
				t.Errorf("%s = %#v, want %#v", tc.expr, got, f)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %#v (%T), want %#v (%T)", tc.expr, got, got, tc.want, tc.want)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		expr, reason, msg string
	}{
		{`i / z`, ReasonTransform, "transform[0].set.x: division by zero"},
		{`i % z`, ReasonTransform, "transform[0].set.x: modulo by zero"},
		{`intDiv(i, z)`, ReasonTransform, "transform[0].set.x: division by zero"},
		{`f % 0.0`, ReasonTransform, "transform[0].set.x: modulo by zero"},
		{`int(s)`, ReasonWrongType, `transform[0].set.x: int("Hello, World"): not an integer`},
		{`int("99999999999999999999")`, ReasonOutOfRange, `transform[0].set.x: int("99999999999999999999"): out of the range of Int64`},
		{`uint(j)`, ReasonOutOfRange, "transform[0].set.x: uint(-3): out of the range of UInt64"},
		{`int(u)`, ReasonOutOfRange, "transform[0].set.x: int(18446744073709551615): out of the range of Int64"},
		{`int(1e300)`, ReasonOutOfRange, "transform[0].set.x: int(1e+300): out of the range of Int64"},
		{`float(s)`, ReasonWrongType, `transform[0].set.x: float("Hello, World"): not a number`},
		{`parse_time(s, "2006-01-02")`, ReasonTransform, `transform[0].set.x: parse_time: "Hello, World" does not match the layout "2006-01-02"`},
		{`from_unix(big)`, ReasonTransform, "transform[0].set.x: from_unix(9223372036854775807): out of the range of Time"},
		{`parse_time("3000-01-01", "2006-01-02")`, ReasonTransform, "transform[0].set.x: time 3000-01-01T00:00:00Z is outside the range 1677-09-22..2262-04-10"},
	}
	for _, tc := range tests {
		_, err := evalExpr(t, tc.expr)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %v, want an *Error", tc.expr, err)
			continue
		}
		if e.Reason != tc.reason || err.Error() != tc.msg {
			t.Errorf("%s: got %s %q, want %s %q", tc.expr, e.Reason, err.Error(), tc.reason, tc.msg)
		}
	}
}

func TestExpressionTypeErrors(t *testing.T) {
	tests := []struct{ expr, msg string }{
		{`"abc" + 1`, `operator + is not defined for String and Int64, at column 1 of: "abc" + 1`},
		{`i +`, `syntax error: unexpected token EOF, at column 3 of: i +`},
		{`amout > 5`, `unknown field "amout", at column 1 of: amout > 5`},
		{`lcc == "a"`, `unknown field "lcc" (did you mean "lc"?), at column 1 of: lcc == "a"`},
		{`n + 1`, `field "n" is Nullable(Int64): give it a default with ?? (e.g. x ?? 0) or test it with == nil, at column 1 of: n + 1`},
		{`n > 1`, `field "n" is Nullable(Int64): give it a default with ?? (e.g. x ?? 0) or test it with == nil, at column 1 of: n > 1`},
		{`s > 1`, `cannot compare String and Int64 with >, at column 1 of: s > 1`},
		{`b and 1`, `the right operand of and must be Bool, got Int64, at column 7 of: b and 1`},
		{`now()`, `now() is not allowed: transforms must be deterministic (a record gives the same rows when it is read again), at column 1 of: now()`},
		{`uper(s)`, `unknown function uper (did you mean "upper"?), at column 1 of: uper(s)`},
		{`matches(s, s)`, `the regular expression of matches must be a string literal (it is compiled once, at startup), at column 12 of: matches(s, s)`},
		{`s matches "("`, "bad regular expression: error parsing regexp: missing closing ): `(`, at column 11 of: s matches \"(\""},
		{`upper(i)`, `upper argument 1 must be String, got Int64, at column 7 of: upper(i)`},
		{`substring(s)`, `substring takes 2 to 3 arguments, got 1, at column 1 of: substring(s)`},
		{`split(s, ",")`, `split(s, sep) gives a list: take one part with split(s, sep)[i], at column 1 of: split(s, ",")`},
		{`arr + 1`, `field "arr" is an array (Array(Int64)): expressions read one element at a time after flatten: arr, at column 1 of: arr + 1`},
		{`i > 1 ? "a" : 2`, `the branches of the conditional have different types String and Int64, at column 9 of: i > 1 ? "a" : 2`},
		{`parse_time(s, f)`, `parse_time argument 2 (a Go time layout such as "2006-01-02 15:04:05" or RFC3339) must be a string literal, at column 15 of: parse_time(s, f)`},
		{`parse_time(s, "DateTime", "Mars/Olympus")`, `parse_time argument 3: unknown time zone "Mars/Olympus", at column 27 of: parse_time(s, "DateTime", "Mars/Olympus")`},
		{`truncate(ts, "fortnight")`, `truncate: "fortnight" is not a unit (second, minute, hour, day, week, month, year) or a positive duration like "15m", at column 14 of: truncate(ts, "fortnight")`},
		{`i in [1, "a"]`, `field "i" is Int64: the list after in must hold integers, at column 10 of: i in [1, "a"]`},
		{`s[0]`, `indexing is not supported except split(s, sep)[i], at column 2 of: s[0]`},
		{`let y = 1; y`, `let is not supported, at column 5 of: let y = 1; y`},
		{`xxhash64(ts)`, `xxhash64 argument 1 must be String or Int64 or UInt64 or Float64 or Bool, got Time, at column 10 of: xxhash64(ts)`},
		{`json_int(js, "a..b")`, `json_int: path "a..b" has an empty part, at column 14 of: json_int(js, "a..b")`},
		{`u == 18446744073709551615`, `syntax error: invalid integer literal: strconv.ParseInt: parsing "18446744073709551615": value out of range, at column 25 of: u == 18446744073709551615`},
		{"i +\n  \"x\"", `operator + is not defined for Int64 and String, at line 1, column 1 of: i +   "x"`},
	}
	for _, tc := range tests {
		_, err := evalExpr(t, tc.expr)
		want := "p.yaml:2:14: transform[0].set.x: " + tc.msg
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tc.expr, err, want)
		}
	}
}
