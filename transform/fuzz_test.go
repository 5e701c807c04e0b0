package transform

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// exprGen builds random expressions from the language's pieces, most of
// them well-typed enough to compile, some not.
type exprGen struct {
	rnd *rand.Rand
}

var (
	genFields = []string{"i", "j", "z", "big", "u", "u8", "i8", "u32", "f", "f32", "s", "csv", "sp", "b",
		"ts", "t64", "d", "n", "nn", "ns", "js", "e", "dec", "lc", "fs", "arr", "num", "nope", "ev.v", "ev.s"}
	genInts    = []string{"0", "1", "-1", "2", "7", "16", "100", "9223372036854775807", "-9223372036854775807", "255", "4294967296"}
	genFloats  = []string{"0.0", "1.5", "-2.5", "1e300", "-1e-300", "0.1"}
	genStrings = []string{`""`, `"a"`, `","`, `"Hello"`, `"{\"a\":1}"`, `"2006-01-02"`, `"15m"`, `"day"`, `"a.b"`, `"x\"y"`, `"^H.*"`, `"("`}
	genBin     = []string{"+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "and", "or", "&&", "||", "??", "contains", "startsWith", "endsWith", "matches"}
	genFuncs   = []string{"len", "upper", "lower", "trim", "trimPrefix", "trimSuffix", "substring", "concat", "replace",
		"matches", "contains", "startsWith", "endsWith", "hasPrefix", "hasSuffix", "indexOf", "parse_time", "format_time", "truncate",
		"to_unix", "to_unix_ms", "from_unix", "from_unix_ms", "xxhash64", "json_string", "json_int", "json_float", "json_bool",
		"json_has", "int", "uint", "float", "string", "abs", "round", "floor", "ceil", "min", "max", "intDiv", "now", "nope"}
)

func (g *exprGen) pick(list []string) string { return list[g.rnd.Intn(len(list))] }

func (g *exprGen) expr(depth int) string {
	if depth <= 0 {
		switch g.rnd.Intn(5) {
		case 0:
			return g.pick(genInts)
		case 1:
			return g.pick(genFloats)
		case 2:
			return g.pick(genStrings)
		case 3:
			return []string{"true", "false", "nil"}[g.rnd.Intn(3)]
		}
		return g.pick(genFields)
	}
	switch g.rnd.Intn(8) {
	case 0:
		return g.expr(0)
	case 1:
		return fmt.Sprintf("(%s %s %s)", g.expr(depth-1), g.pick(genBin), g.expr(depth-1))
	case 2:
		return fmt.Sprintf("%s(%s)", []string{"-", "!", "not ", "+"}[g.rnd.Intn(4)], g.expr(depth-1))
	case 3:
		return fmt.Sprintf("(%s ? %s : %s)", g.expr(depth-1), g.expr(depth-1), g.expr(depth-1))
	case 4:
		return fmt.Sprintf("split(%s, %s)[%s]", g.expr(depth-1), g.expr(0), g.expr(depth-1))
	case 5:
		items := make([]string, g.rnd.Intn(4))
		for i := range items {
			items[i] = g.expr(0)
		}
		return fmt.Sprintf("(%s in [%s])", g.expr(depth-1), strings.Join(items, ", "))
	}
	args := make([]string, g.rnd.Intn(4))
	for i := range args {
		args[i] = g.expr(depth - 1)
	}
	return fmt.Sprintf("%s(%s)", g.pick(genFuncs), strings.Join(args, ", "))
}

// typed returns a random expression meant to be of kind k (Int, UInt,
// Float, String, Bool, Time), from every function and operator.
func (g *exprGen) typed(k kind, depth int) string {
	if depth <= 0 || g.rnd.Intn(4) == 0 {
		switch k {
		case kInt:
			return g.pick(append([]string{"i", "j", "z", "big", "u8", "i8", "u32", "n ?? 0", "ev.v"}, genInts...))
		case kUInt:
			return g.pick([]string{"u", "uint(i)", "xxhash64(s)"})
		case kFloat:
			return g.pick(append([]string{"f", "f32", "dec"}, genFloats...))
		case kString:
			return g.pick(append([]string{"s", "csv", "sp", "js", "e", "lc", "fs", "num", "ns ?? \"\"", "ev.s ?? \"-\""}, genStrings...))
		case kBool:
			return g.pick([]string{"true", "false", "b", "n == nil", "ns != nil"})
		default:
			return g.pick([]string{"ts", "t64", "d"})
		}
	}
	d := depth - 1
	I := func() string { return g.typed(kInt, d) }
	F := func() string { return g.typed(kFloat, d) }
	S := func() string { return g.typed(kString, d) }
	B := func() string { return g.typed(kBool, d) }
	T := func() string { return g.typed(kTime, d) }
	N := func() string { // any number
		return g.typed([]kind{kInt, kUInt, kFloat}[g.rnd.Intn(3)], d)
	}
	lay := func() string {
		return g.pick([]string{`"2006-01-02"`, `"RFC3339"`, `"DateTime"`, `"15:04:05.000"`, `"Jan 2"`})
	}
	var opts []func() string
	switch k {
	case kInt:
		opts = []func() string{func() string { return "(" + I() + " " + g.pick([]string{"+", "-", "*", "%"}) + " " + I() + ")" }, func() string { return "intDiv(" + I() + ", " + I() + ")" }, func() string { return "len(" + S() + ")" }, func() string { return "indexOf(" + S() + ", " + S() + ")" }, func() string { return "to_unix(" + T() + ")" }, func() string { return "to_unix_ms(" + T() + ")" }, func() string { return "int(" + g.pick([]string{F(), S(), I(), B(), N()}) + ")" }, func() string { return "abs(" + I() + ")" }, func() string { return "min(" + I() + ", " + I() + ")" }, func() string { return "json_int(" + S() + ", \"a.n\")" }, func() string { return "(" + B() + " ? " + I() + " : " + I() + ")" }, func() string { return "-" + I() }, func() string { return "round(" + I() + ")" }, func() string { return "floor(" + I() + ")" }}
	case kUInt:
		opts = []func() string{func() string { return "xxhash64(" + g.pick([]string{S(), I(), F(), B()}) + ")" }, func() string { return "uint(" + g.pick([]string{I(), F(), S()}) + ")" }, func() string { return "(u + " + g.typed(kUInt, d) + ")" }, func() string { return "intDiv(u, " + g.pick(genInts) + ")" }, func() string { return "(" + B() + " ? u : 1)" }}
	case kFloat:
		opts = []func() string{func() string { return "(" + N() + " / " + N() + ")" }, func() string { return "(" + N() + " " + g.pick([]string{"+", "-", "*", "%"}) + " " + F() + ")" }, func() string { return "float(" + g.pick([]string{S(), I(), F()}) + ")" }, func() string { return "round(" + F() + ", 2)" }, func() string { return "floor(" + F() + ")" }, func() string { return "ceil(" + F() + ")" }, func() string { return "json_float(" + S() + ", \"a.f\")" }, func() string { return "abs(" + F() + ")" }, func() string { return "max(" + F() + ", " + I() + ")" }}
	case kString:
		opts = []func() string{func() string { return "upper(" + S() + ")" }, func() string { return "lower(" + S() + ")" }, func() string { return "trim(" + S() + ")" }, func() string { return "substring(" + S() + ", " + I() + ")" }, func() string { return "substring(" + S() + ", " + I() + ", " + I() + ")" }, func() string { return "concat(" + S() + ", " + S() + ", " + S() + ")" }, func() string { return "split(" + S() + ", " + S() + ")[" + I() + "]" }, func() string { return "replace(" + S() + ", " + S() + ", " + S() + ")" }, func() string { return "format_time(" + T() + ", " + lay() + ")" }, func() string { return "string(" + g.pick([]string{I(), F(), T(), B(), N()}) + ")" }, func() string { return "json_string(" + S() + ", \"a.b\")" }, func() string { return "(" + B() + " ? " + S() + " : " + S() + ")" }, func() string { return "(" + S() + " + " + S() + ")" }, func() string { return "trimPrefix(" + S() + ", " + S() + ")" }, func() string { return "max(" + S() + ", " + S() + ")" }}
	case kBool:
		opts = []func() string{func() string {
			return "(" + N() + " " + g.pick([]string{"==", "!=", "<", ">", "<=", ">="}) + " " + N() + ")"
		}, func() string {
			return "(" + S() + " " + g.pick([]string{"==", "!=", "<", "contains", "startsWith", "endsWith"}) + " " + S() + ")"
		}, func() string { return "(" + B() + " " + g.pick([]string{"and", "or"}) + " " + B() + ")" }, func() string { return "not " + B() }, func() string { return "matches(" + S() + ", \"^[a-z]+$\")" }, func() string { return "json_bool(" + S() + ", \"a.t\")" }, func() string { return "json_has(" + S() + ", \"arr.1\")" }, func() string { return "(" + I() + " in [0, 1, 7, -3])" }, func() string { return "(" + S() + " in [\"a\", \"\", \"Hello }, func() string { return World\"])" }, func() string { return "(" + T() + " < " + T() + ")" }}
	default:
		opts = []func() string{func() string { return "parse_time(" + S() + ", " + lay() + ")" }, func() string {
			return "truncate(" + T() + ", " + g.pick([]string{`"day"`, `"week"`, `"month"`, `"year"`, `"7m"`}) + ")"
		}, func() string { return "from_unix(" + g.pick([]string{I(), F()}) + ")" }, func() string { return "from_unix_ms(" + I() + ")" }, func() string { return "max(" + T() + ", " + T() + ")" }, func() string { return "(" + B() + " ? " + T() + " : " + T() + ")" }}
	}
	return opts[g.rnd.Intn(len(opts))]()
}

var fuzzCols = append(append([]string{}, exprCols...), "ev.v Array(Int64)", "ev.s Array(Nullable(String))")

// fuzzRows are rows of extreme and ordinary values.
func fuzzRows() []map[string]any {
	base := exprRow()
	base["ev.v"] = []any{1, 0, -5}
	base["ev.s"] = []any{"x", nil, ""}
	zero := map[string]any{"ev.v": []any{}, "ev.s": []any{}}
	ext := map[string]any{
		"i": int64(math.MinInt64), "j": int64(math.MaxInt64), "z": -1, "big": int64(math.MinInt64), "u": uint64(0),
		"u8": 255, "i8": -128, "u32": math.MaxUint32, "f": math.Inf(1), "f32": -1e30, "s": "", "csv": ",,,", "sp": "\t",
		"b": false, "ts": time.Unix(0, 0), "t64": int64(math.MaxInt64 / 1000), "d": time.Date(2149, 6, 6, 0, 0, 0, 0, time.UTC),
		"n": int64(math.MinInt64), "nn": nil, "ns": "", "js": `{"a":`, "e": "red", "dec": "-99999999.99", "lc": "",
		"fs": "abcd", "arr": []any{}, "num": "-9223372036854775809",
		"ev.v": []any{int64(math.MaxInt64)}, "ev.s": []any{nil},
	}
	nan := map[string]any{"f": math.NaN(), "js": `[1,2,{"a":{"b":[true]}}]`, "s": "ÿ\x00\xff", "ev.v": []any{0, 0}, "ev.s": []any{"a", "b"}}
	return []map[string]any{base, zero, ext, nan}
}

var fuzzOutTypes = []string{"Int8", "UInt8", "Int32", "Int64", "UInt64", "Float32", "Float64", "String", "FixedString(3)",
	"Nullable(Int64)", "Nullable(String)", "LowCardinality(String)", "DateTime", "DateTime64(3)", "Date", "Date32", "Bool",
	"Enum8('a' = 1, 'Hello' = 2)", "Decimal(9, 2)", "UUID"}

// runFuzz compiles one expression as a filter and as a set feeding an
// output column, runs it on every fuzz row and checks that nothing panics
// and that errors leave the output chunks consistent.
func runFuzz(t *testing.T, text, outType string, flat bool) (compiled bool) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic on %q into %s (flatten %v): %v", text, outType, flat, p)
		}
	}()
	s := mkSchema(t, fuzzCols...)
	if strings.Contains(text, "ev.") {
		flat = true
	}
	var steps []config.Step
	if flat {
		steps = append(steps, flatten("ev", 1))
	}
	steps = append(steps, set(2, "x", text), filter(`i != 1 || `+"("+text+") == nil", 3))
	var c *Chain
	var outs []Output
	// The given output type, else one the value's type goes into.
	for k, typ := range append([]string{outType}, "String", "Nullable(String)", "Int64", "Nullable(Int64)", "UInt64", "Float64", "Bool", "DateTime64(9)", "Nullable(UInt8)") {
		outs = []Output{output(t, "o", "x "+typ, "i Int64")}
		var err error
		if c, err = Compile(steps, s, outs); err == nil {
			break
		}
		var ce CompileErrors
		if !errors.As(err, &ce) {
			t.Fatalf("%q: compile error %T %v", text, err, err)
		}
		if k == 0 { // without the filter, which needs a comparable value
			steps = steps[:len(steps)-1]
			if c, err = Compile(steps, s, outs); err == nil {
				break
			}
		}
	}
	if c == nil {
		return false
	}
	in := mkChunk(t, s)
	for _, row := range fuzzRows() {
		addRow(t, in, row)
	}
	e := newEmitter(t, outs)
	for row := 0; row < in.Rows; row++ {
		before := 0
		if ch := e.chunks[[2]int{0, -1}]; ch != nil {
			before = ch.Rows
		}
		_, err := c.Run(in, row, e)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("%q: run error %T %v", text, err, err)
			}
			if ch := e.chunks[[2]int{0, -1}]; ch != nil && ch.Rows != before {
				t.Fatalf("%q: failed record left rows", text)
			}
		}
		if ch := e.chunks[[2]int{0, -1}]; ch != nil {
			for ci, col := range ch.Cols {
				if col.Len() != ch.Rows {
					t.Fatalf("%q: column %d has %d rows, chunk %d", text, ci, col.Len(), ch.Rows)
				}
			}
		}
	}
	return true
}

// TestRandomExpressions checks that random expressions never panic, at
// compile time or at run time.
func TestRandomExpressions(t *testing.T) {
	g := &exprGen{rnd: rand.New(rand.NewSource(1))}
	n, ok := 1500, 0
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		text := g.expr(1 + g.rnd.Intn(4))
		if runFuzz(t, text, g.pick(fuzzOutTypes), g.rnd.Intn(3) == 0) {
			ok++
		}
	}
	t.Logf("%d of %d random expressions compiled", ok, n)
	if ok < n/20 {
		t.Errorf("only %d of %d random expressions compiled: the generator is off", ok, n)
	}
	// Typed expressions: most compile, and run into every run-time error.
	ok = 0
	for i := 0; i < n; i++ {
		k := []kind{kInt, kUInt, kFloat, kString, kBool, kTime}[g.rnd.Intn(6)]
		text := g.typed(k, 1+g.rnd.Intn(4))
		if runFuzz(t, text, g.pick(fuzzOutTypes), g.rnd.Intn(2) == 0) {
			ok++
		}
	}
	t.Logf("%d of %d random typed expressions compiled", ok, n)
	if ok < n/2 {
		t.Errorf("only %d of %d random typed expressions compiled: the generator is off", ok, n)
	}
}

// FuzzExpression feeds arbitrary text to the compiler and runs what
// compiles (go test -fuzz FuzzExpression ./transform/).
func FuzzExpression(f *testing.F) {
	for _, s := range []string{`i + 1`, `upper(s) == "A"`, `split(csv, ",")[i]`, `n ?? 0`, `json_int(js, "a.n")`,
		`parse_time(s, "2006")`, `truncate(ts, "week")`, `matches(s, "a+")`, `substring(s, -1, i)`, `concat(s, s, s)`,
		`ev.v * 2`, `i in [1, 2]`, `intDiv(big, -1)`, `1 / z`, `format_time(from_unix(big), "2006")`} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, text string, typ uint8) {
		if len(text) > 200 {
			return
		}
		runFuzz(t, text, fuzzOutTypes[int(typ)%len(fuzzOutTypes)], typ%2 == 0)
	})
}

// TestIntDivOverflow pins the one integer operation Go could trap on.
func TestIntDivOverflow(t *testing.T) {
	for _, e := range []string{`intDiv(big + 1, -1)`, `(big + 1) % -1`} {
		if _, err := evalExpr(t, e); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	_ = chunk.KindInt64
}
