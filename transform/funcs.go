package transform

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/expr-lang/expr/ast"
)

// builtin compiles a call of one function.
type builtin func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError)

// funcs are the functions expressions may call. Filled in init, as some
// refer back to the compiler.
var funcs map[string]builtin

// forbidden functions are refused with a reason.
var forbidden = map[string]string{
	"now":      "now() is not allowed: transforms must be deterministic (a record gives the same rows when it is read again)",
	"date":     "date() is not supported: use parse_time(s, layout)",
	"duration": "duration() is not supported: truncate takes a duration string like \"15m\"",
}

func init() {
	funcs = map[string]builtin{
		"len":          fnLen,
		"upper":        fnCase(true),
		"lower":        fnCase(false),
		"trim":         fnTrim,
		"trimPrefix":   fnTrimAffix(true),
		"trimSuffix":   fnTrimAffix(false),
		"substring":    fnSubstring,
		"concat":       fnConcat,
		"split":        fnSplitBare,
		"replace":      fnReplace,
		"matches":      fnMatches,
		"contains":     fnStringPred("contains"),
		"startsWith":   fnStringPred("startsWith"),
		"endsWith":     fnStringPred("endsWith"),
		"hasPrefix":    fnStringPred("startsWith"),
		"hasSuffix":    fnStringPred("endsWith"),
		"indexOf":      fnIndexOf,
		"parse_time":   fnParseTime,
		"format_time":  fnFormatTime,
		"truncate":     fnTruncate,
		"to_unix":      fnToUnix(int64(time.Second)),
		"to_unix_ms":   fnToUnix(int64(time.Millisecond)),
		"from_unix":    fnFromUnix(int64(time.Second)),
		"from_unix_ms": fnFromUnix(int64(time.Millisecond)),
		"xxhash64":     fnXXHash64,
		"json_string":  fnJSON(kString),
		"json_int":     fnJSON(kInt),
		"json_float":   fnJSON(kFloat),
		"json_bool":    fnJSON(kBool),
		"json_has":     fnJSONHas,
		"int":          fnInt,
		"uint":         fnUInt,
		"float":        fnFloat,
		"string":       fnString,
		"abs":          fnAbs,
		"round":        fnRound,
		"floor":        fnFloorCeil(math.Floor),
		"ceil":         fnFloorCeil(math.Ceil),
		"min":          fnMinMax(true),
		"max":          fnMinMax(false),
		"intDiv":       fnIntDiv,
	}
}

func funcNames() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// call compiles a function call.
func (c *compiler) call(call ast.Node, name string, args []ast.Node) (*node, *exprError) {
	if real, ok := aliasOf[name]; ok {
		name = real
	}
	if why, ok := forbidden[name]; ok {
		return nil, errAt(call, "%s", why)
	}
	f, ok := funcs[name]
	if !ok {
		return nil, errAt(call, "unknown function %s%s", name, didYouMean(name, funcNames()))
	}
	return f(c, call, args)
}

func arity(call ast.Node, name string, args []ast.Node, lo, hi int) *exprError {
	if len(args) >= lo && len(args) <= hi {
		return nil
	}
	switch {
	case lo == hi:
		return errAt(call, "%s takes %d argument%s, got %d", name, lo, plural(lo), len(args))
	case hi > 100:
		return errAt(call, "%s takes at least %d arguments, got %d", name, lo, len(args))
	}
	return errAt(call, "%s takes %d to %d arguments, got %d", name, lo, hi, len(args))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// argOf names argument i of a function in messages.
func argOf(name string, i int) string { return name + " argument " + strconv.Itoa(i+1) }

// litString requires argument i to be a string literal.
func litString(call ast.Node, name string, args []ast.Node, i int, what string) (string, *exprError) {
	s, ok := args[i].(*ast.StringNode)
	if !ok {
		return "", errAt(args[i], "%s (%s) must be a string literal", argOf(name, i), what)
	}
	return s.Value, nil
}
