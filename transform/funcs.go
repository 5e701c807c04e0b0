package transform

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
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

func fnLen(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "len", args, 1, 1); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("len", 0), kString)
	if err != nil {
		return nil, err
	}
	f := s.s
	return &node{t: vtype{k: kInt}, pos: startPos(call), i: func(r *rt) int64 { return int64(len(f(r))) }}, nil
}

// fnCase is upper or lower: ASCII letters only, other bytes unchanged. A
// string with nothing to change is returned as is, without a copy.
func fnCase(up bool) builtin {
	name, lo, hi, delta := "lower", byte('A'), byte('Z'), byte('a'-'A')
	if up {
		name, lo, hi, delta = "upper", 'a', 'z', byte('a'-'A')
	}
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 1, 1); err != nil {
			return nil, err
		}
		s, err := c.want(args[0], argOf(name, 0), kString)
		if err != nil {
			return nil, err
		}
		f := s.s
		return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
			s := f(r)
			i := 0
			for i < len(s) && (s[i] < lo || s[i] > hi) {
				i++
			}
			if i == len(s) {
				return s
			}
			start := len(r.scratch)
			r.scratch = append(r.scratch, s...)
			b := r.scratch[start+i:]
			for k, ch := range b {
				if ch >= lo && ch <= hi {
					if up {
						b[k] = ch - delta
					} else {
						b[k] = ch + delta
					}
				}
			}
			return r.str(start)
		}}, nil
	}
}

const asciiSpace = " \t\n\r\v\f"

func fnTrim(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "trim", args, 1, 2); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("trim", 0), kString)
	if err != nil {
		return nil, err
	}
	cut := asciiSpace
	if len(args) == 2 {
		if cut, err = litString(call, "trim", args, 1, "the characters to trim"); err != nil {
			return nil, err
		}
	}
	f := s.s
	if cut == asciiSpace {
		return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string { return trimASCIISpace(f(r)) }}, nil
	}
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string { return strings.Trim(f(r), cut) }}, nil
}

func isASCIISpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

func trimASCIISpace(s string) string {
	for len(s) > 0 && isASCIISpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isASCIISpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func fnTrimAffix(prefix bool) builtin {
	name := "trimSuffix"
	if prefix {
		name = "trimPrefix"
	}
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 2, 2); err != nil {
			return nil, err
		}
		s, err := c.want(args[0], argOf(name, 0), kString)
		if err != nil {
			return nil, err
		}
		a, err := c.want(args[1], argOf(name, 1), kString)
		if err != nil {
			return nil, err
		}
		f, g := s.s, a.s
		if prefix {
			return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string { return strings.TrimPrefix(f(r), g(r)) }}, nil
		}
		return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string { return strings.TrimSuffix(f(r), g(r)) }}, nil
	}
}

// substr is substring(s, start, length) with 0-based byte offsets: a
// negative start counts from the end, out-of-range bounds are clamped, a
// negative length gives "".
func substr(s string, start, length int64, hasLen bool) string {
	n := int64(len(s))
	if start < 0 {
		start += n
		if start < 0 {
			start = 0
		}
	}
	if start >= n {
		return ""
	}
	end := n
	if hasLen {
		if length <= 0 {
			return ""
		}
		if length < n-start {
			end = start + length
		}
	}
	return s[start:end]
}

func fnSubstring(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "substring", args, 2, 3); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("substring", 0), kString)
	if err != nil {
		return nil, err
	}
	st, err := c.want(args[1], argOf("substring", 1)+" (start)", kInt, kUInt)
	if err != nil {
		return nil, err
	}
	f, sf := s.s, asInt(st)
	if len(args) == 2 {
		return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
			return substr(f(r), sf(r), 0, false)
		}}, nil
	}
	ln, err := c.want(args[2], argOf("substring", 2)+" (length)", kInt, kUInt)
	if err != nil {
		return nil, err
	}
	lf := asInt(ln)
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
		s := f(r)
		a := sf(r)
		return substr(s, a, lf(r), true)
	}}, nil
}

func fnConcat(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "concat", args, 1, math.MaxInt); err != nil {
		return nil, err
	}
	parts := make([]*node, len(args))
	for i, a := range args {
		v, err := c.want(a, argOf("concat", i), kString)
		if err != nil {
			return nil, err
		}
		parts[i] = v
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return concatNode(startPos(call), parts), nil
}

func fnSplitBare(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	return nil, errAt(call, "split(s, sep) gives a list: take one part with split(s, sep)[i]")
}

// splitIndex compiles split(s, sep)[i].
func (c *compiler) splitIndex(call *ast.BuiltinNode, index ast.Node) (*node, *exprError) {
	args := call.Arguments
	if err := arity(call, "split", args, 2, 2); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("split", 0), kString)
	if err != nil {
		return nil, err
	}
	sep, err := c.want(args[1], argOf("split", 1)+" (separator)", kString)
	if err != nil {
		return nil, err
	}
	idx, err := c.want(index, "the index of split(s, sep)[i]", kInt, kUInt)
	if err != nil {
		return nil, err
	}
	f, g, h := s.s, sep.s, asInt(idx)
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
		s, sep := f(r), g(r)
		return splitAt(s, sep, h(r))
	}}, nil
}

// splitAt returns part i of s split at sep (0-based; negative i counts
// from the end, -1 is the last part), or "" when there is no such part. An
// empty separator splits s into single bytes.
func splitAt(s, sep string, i int64) string {
	if sep == "" {
		n := int64(len(s))
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return ""
		}
		return s[i : i+1]
	}
	if i >= 0 {
		for ; i > 0; i-- {
			k := strings.Index(s, sep)
			if k < 0 {
				return ""
			}
			s = s[k+len(sep):]
		}
		if k := strings.Index(s, sep); k >= 0 {
			return s[:k]
		}
		return s
	}
	for ; i < -1; i++ {
		k := strings.LastIndex(s, sep)
		if k < 0 {
			return ""
		}
		s = s[:k]
	}
	if k := strings.LastIndex(s, sep); k >= 0 {
		return s[k+len(sep):]
	}
	return s
}

func fnReplace(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "replace", args, 3, 3); err != nil {
		return nil, err
	}
	var fs [3]func(*rt) string
	for i := range fs {
		v, err := c.want(args[i], argOf("replace", i), kString)
		if err != nil {
			return nil, err
		}
		fs[i] = v.s
	}
	f, g, h := fs[0], fs[1], fs[2]
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
		s, old, repl := f(r), g(r), h(r)
		if old == "" {
			return s
		}
		k := strings.Index(s, old)
		if k < 0 {
			return s
		}
		start := len(r.scratch)
		for k >= 0 {
			r.scratch = append(append(r.scratch, s[:k]...), repl...)
			s = s[k+len(old):]
			k = strings.Index(s, old)
		}
		r.scratch = append(r.scratch, s...)
		return r.str(start)
	}}, nil
}

func fnMatches(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "matches", args, 2, 2); err != nil {
		return nil, err
	}
	return c.matches(call, args[0], args[1])
}

func fnStringPred(op string) builtin {
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, op, args, 2, 2); err != nil {
			return nil, err
		}
		return c.stringPred(call, op, args[0], args[1])
	}
}

func fnIndexOf(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "indexOf", args, 2, 2); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("indexOf", 0), kString)
	if err != nil {
		return nil, err
	}
	sub, err := c.want(args[1], argOf("indexOf", 1), kString)
	if err != nil {
		return nil, err
	}
	f, g := s.s, sub.s
	return &node{t: vtype{k: kInt}, pos: startPos(call), i: func(r *rt) int64 {
		s := f(r)
		return int64(strings.Index(s, g(r)))
	}}, nil
}

// Time.

// layouts are names accepted for Go layouts.
var layouts = map[string]string{
	"RFC3339":     time.RFC3339,
	"RFC3339Nano": time.RFC3339Nano,
	"DateTime":    time.DateTime,
	"DateOnly":    time.DateOnly,
	"RFC1123":     time.RFC1123,
	"RFC1123Z":    time.RFC1123Z,
	"RFC822":      time.RFC822,
	"RFC822Z":     time.RFC822Z,
}

func layoutArg(call ast.Node, name string, args []ast.Node, i int) (string, *exprError) {
	l, err := litString(call, name, args, i, "a Go time layout such as \"2006-01-02 15:04:05\" or RFC3339")
	if err != nil {
		return "", err
	}
	if named, ok := layouts[l]; ok {
		return named, nil
	}
	if l == "" {
		return "", errAt(args[i], "%s: the layout is empty", argOf(name, i))
	}
	return l, nil
}

// The range of Time: int64 nanoseconds since the epoch.
const (
	minTimeSec = math.MinInt64 / int64(time.Second)
	maxTimeSec = math.MaxInt64 / int64(time.Second)
)

// timeNS converts t to nanoseconds since the epoch, failing the record for
// a time outside 1677-09-21..2262-04-11.
func (r *rt) timeNS(t time.Time) int64 {
	sec := t.Unix()
	if sec <= minTimeSec || sec >= maxTimeSec {
		r.failf(ReasonTransform, "time %s is outside the range 1677-09-22..2262-04-10", t.Format(time.RFC3339))
		return 0
	}
	return sec*int64(time.Second) + int64(t.Nanosecond())
}

func fnParseTime(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "parse_time", args, 2, 2); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("parse_time", 0), kString)
	if err != nil {
		return nil, err
	}
	layout, err := layoutArg(call, "parse_time", args, 1)
	if err != nil {
		return nil, err
	}
	f := s.s
	return &node{t: vtype{k: kTime}, pos: startPos(call), i: func(r *rt) int64 {
		s := f(r)
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			r.failf(ReasonTransform, "parse_time: %q does not match the layout %q", s, layout)
			return 0
		}
		return r.timeNS(t)
	}}, nil
}

func fnFormatTime(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "format_time", args, 2, 2); err != nil {
		return nil, err
	}
	t, err := c.want(args[0], argOf("format_time", 0), kTime)
	if err != nil {
		return nil, err
	}
	layout, err := layoutArg(call, "format_time", args, 1)
	if err != nil {
		return nil, err
	}
	f := t.i
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
		ns := f(r)
		start := len(r.scratch)
		r.scratch = time.Unix(0, ns).UTC().AppendFormat(r.scratch, layout)
		return r.str(start)
	}}, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

const day = int64(24 * time.Hour)

func fnTruncate(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "truncate", args, 2, 2); err != nil {
		return nil, err
	}
	t, err := c.want(args[0], argOf("truncate", 0), kTime)
	if err != nil {
		return nil, err
	}
	unit, err := litString(call, "truncate", args, 1, "a unit: second, minute, hour, day, week, month, year, or a duration like \"15m\"")
	if err != nil {
		return nil, err
	}
	f := t.i
	pos := startPos(call)
	var step int64
	switch unit {
	case "second":
		step = int64(time.Second)
	case "minute":
		step = int64(time.Minute)
	case "hour":
		step = int64(time.Hour)
	case "day":
		step = day
	case "week":
		// Weeks start on Monday; 1970-01-01 was a Thursday.
		return &node{t: vtype{k: kTime}, pos: pos, i: func(r *rt) int64 {
			days := floorDiv(f(r), day)
			dow := ((days+3)%7 + 7) % 7 // Monday is 0
			return (days - dow) * day
		}}, nil
	case "month", "year":
		year := unit == "year"
		return &node{t: vtype{k: kTime}, pos: pos, i: func(r *rt) int64 {
			tm := time.Unix(0, f(r)).UTC()
			m := tm.Month()
			if year {
				m = time.January
			}
			return time.Date(tm.Year(), m, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		}}, nil
	default:
		d, perr := time.ParseDuration(unit)
		if perr != nil || d <= 0 {
			return nil, errAt(args[1], "truncate: %q is not a unit (second, minute, hour, day, week, month, year) or a positive duration like \"15m\"", unit)
		}
		step = int64(d)
	}
	return &node{t: vtype{k: kTime}, pos: pos, i: func(r *rt) int64 { return floorDiv(f(r), step) * step }}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func fnToUnix(unit int64) builtin {
	name := "to_unix"
	if unit == int64(time.Millisecond) {
		name = "to_unix_ms"
	}
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 1, 1); err != nil {
			return nil, err
		}
		t, err := c.want(args[0], argOf(name, 0), kTime)
		if err != nil {
			return nil, err
		}
		f := t.i
		return &node{t: vtype{k: kInt}, pos: startPos(call), i: func(r *rt) int64 { return floorDiv(f(r), unit) }}, nil
	}
}

func fnFromUnix(unit int64) builtin {
	name := "from_unix"
	if unit == int64(time.Millisecond) {
		name = "from_unix_ms"
	}
	lim := math.MaxInt64 / unit
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 1, 1); err != nil {
			return nil, err
		}
		v, err := c.want(args[0], argOf(name, 0), kInt, kUInt, kFloat)
		if err != nil {
			return nil, err
		}
		out := &node{t: vtype{k: kTime}, pos: startPos(call)}
		if v.t.k == kFloat {
			f := v.f
			out.i = func(r *rt) int64 {
				x := f(r) * float64(unit)
				if !(x > math.MinInt64 && x < math.MaxInt64) {
					r.failf(ReasonTransform, "%s(%g): out of the range of Time", name, f(r))
					return 0
				}
				return int64(x)
			}
			return out, nil
		}
		if v.t.k == kUInt {
			f := v.u
			out.i = func(r *rt) int64 {
				x := f(r)
				if x > uint64(lim) {
					r.failf(ReasonTransform, "%s(%d): out of the range of Time", name, x)
					return 0
				}
				return int64(x) * unit
			}
			return out, nil
		}
		f := v.i
		out.i = func(r *rt) int64 {
			x := f(r)
			if x > lim || x < -lim {
				r.failf(ReasonTransform, "%s(%d): out of the range of Time", name, x)
				return 0
			}
			return x * unit
		}
		return out, nil
	}
}

// Hashing.

func fnXXHash64(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "xxhash64", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("xxhash64", 0), kString, kInt, kUInt, kFloat, kBool)
	if err != nil {
		return nil, err
	}
	out := &node{t: vtype{k: kUInt}, pos: startPos(call)}
	switch v.t.k {
	case kString:
		f := v.s
		out.u = func(r *rt) uint64 { return xxhash.Sum64String(f(r)) }
	case kInt:
		f := v.i
		out.u = func(r *rt) uint64 { return hash8(uint64(f(r))) }
	case kUInt:
		f := v.u
		out.u = func(r *rt) uint64 { return hash8(f(r)) }
	case kFloat:
		f := v.f
		out.u = func(r *rt) uint64 { return hash8(math.Float64bits(f(r))) }
	case kBool:
		f := v.b
		out.u = func(r *rt) uint64 {
			var b [1]byte
			if f(r) {
				b[0] = 1
			}
			return xxhash.Sum64(b[:])
		}
	}
	return out, nil
}

// hash8 is the xxHash64 of the 8 little-endian bytes of v.
func hash8(v uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return xxhash.Sum64(b[:])
}

// JSON.

func jsonPath(call ast.Node, name string, args []ast.Node) ([]string, *exprError) {
	p, err := litString(call, name, args, 1, "a path like \"a.b\"")
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, nil
	}
	keys := strings.Split(p, ".")
	for _, k := range keys {
		if k == "" {
			return nil, errAt(args[1], "%s: path %q has an empty part", name, p)
		}
	}
	return keys, nil
}

func fnJSON(k kind) builtin {
	name := map[kind]string{kString: "json_string", kInt: "json_int", kFloat: "json_float", kBool: "json_bool"}[k]
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 2, 2); err != nil {
			return nil, err
		}
		s, err := c.want(args[0], argOf(name, 0), kString)
		if err != nil {
			return nil, err
		}
		keys, err := jsonPath(call, name, args)
		if err != nil {
			return nil, err
		}
		f := s.s
		out := &node{t: vtype{k: k}, pos: startPos(call)}
		switch k {
		case kString:
			out.s = func(r *rt) string {
				v := r.json(f(r))
				if v == nil {
					return ""
				}
				return r.save(v.GetStringBytes(keys...))
			}
		case kInt:
			out.i = func(r *rt) int64 {
				v := r.json(f(r))
				if v == nil {
					return 0
				}
				return v.GetInt64(keys...)
			}
		case kFloat:
			out.f = func(r *rt) float64 {
				v := r.json(f(r))
				if v == nil {
					return 0
				}
				return v.GetFloat64(keys...)
			}
		case kBool:
			out.b = func(r *rt) bool {
				v := r.json(f(r))
				if v == nil {
					return false
				}
				return v.GetBool(keys...)
			}
		}
		return out, nil
	}
}

func fnJSONHas(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "json_has", args, 2, 2); err != nil {
		return nil, err
	}
	s, err := c.want(args[0], argOf("json_has", 0), kString)
	if err != nil {
		return nil, err
	}
	keys, err := jsonPath(call, "json_has", args)
	if err != nil {
		return nil, err
	}
	f := s.s
	return &node{t: vtype{k: kBool}, pos: startPos(call), b: func(r *rt) bool {
		v := r.json(f(r))
		return v != nil && v.Exists(keys...)
	}}, nil
}

// Conversions and arithmetic functions.

func fnInt(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "int", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("int", 0), kInt, kUInt, kFloat, kString, kBool)
	if err != nil {
		return nil, err
	}
	out := &node{t: vtype{k: kInt}, pos: startPos(call)}
	switch v.t.k {
	case kInt:
		return v, nil
	case kUInt:
		f := v.u
		out.i = func(r *rt) int64 {
			x := f(r)
			if x > math.MaxInt64 {
				r.failf(ReasonOutOfRange, "int(%d): out of the range of Int64", x)
				return 0
			}
			return int64(x)
		}
	case kFloat:
		f := v.f
		out.i = func(r *rt) int64 {
			x := f(r)
			if !(x > -9223372036854775809.0 && x < 9223372036854775808.0) {
				r.failf(ReasonOutOfRange, "int(%g): out of the range of Int64", x)
				return 0
			}
			return int64(x)
		}
	case kString:
		f := v.s
		out.i = func(r *rt) int64 {
			s := f(r)
			x, err := strconv.ParseInt(trimASCIISpace(s), 10, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					r.failf(ReasonOutOfRange, "int(%q): out of the range of Int64", s)
				} else {
					r.failf(ReasonWrongType, "int(%q): not an integer", s)
				}
				return 0
			}
			return x
		}
	case kBool:
		f := v.b
		out.i = func(r *rt) int64 { return boolInt(f(r)) }
	}
	return out, nil
}

func fnUInt(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "uint", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("uint", 0), kInt, kUInt, kFloat, kString, kBool)
	if err != nil {
		return nil, err
	}
	out := &node{t: vtype{k: kUInt}, pos: startPos(call)}
	switch v.t.k {
	case kUInt:
		return v, nil
	case kInt:
		f := v.i
		out.u = func(r *rt) uint64 {
			x := f(r)
			if x < 0 {
				r.failf(ReasonOutOfRange, "uint(%d): out of the range of UInt64", x)
				return 0
			}
			return uint64(x)
		}
	case kFloat:
		f := v.f
		out.u = func(r *rt) uint64 {
			x := f(r)
			if !(x > -1 && x < 18446744073709551616.0) {
				r.failf(ReasonOutOfRange, "uint(%g): out of the range of UInt64", x)
				return 0
			}
			return uint64(x)
		}
	case kString:
		f := v.s
		out.u = func(r *rt) uint64 {
			s := f(r)
			x, err := strconv.ParseUint(trimASCIISpace(s), 10, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					r.failf(ReasonOutOfRange, "uint(%q): out of the range of UInt64", s)
				} else {
					r.failf(ReasonWrongType, "uint(%q): not an unsigned integer", s)
				}
				return 0
			}
			return x
		}
	case kBool:
		f := v.b
		out.u = func(r *rt) uint64 { return uint64(boolInt(f(r))) }
	}
	return out, nil
}

func fnFloat(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "float", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("float", 0), kInt, kUInt, kFloat, kString)
	if err != nil {
		return nil, err
	}
	if v.t.k == kString {
		f := v.s
		return &node{t: vtype{k: kFloat}, pos: startPos(call), f: func(r *rt) float64 {
			s := f(r)
			x, err := strconv.ParseFloat(trimASCIISpace(s), 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					return x // ±Inf or 0, as ClickHouse reads it
				}
				r.failf(ReasonWrongType, "float(%q): not a number", s)
				return 0
			}
			return x
		}}, nil
	}
	return &node{t: vtype{k: kFloat}, pos: startPos(call), f: asFloat(v)}, nil
}

// appendFloat formats f as ClickHouse's toString does for ordinary
// values: shortest decimal that reads back, without an exponent between
// 1e-6 and 1e21.
func appendFloat(b []byte, f float64) []byte {
	a := math.Abs(f)
	if a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func fnString(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "string", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.value(args[0])
	if err != nil {
		return nil, err
	}
	out := &node{t: vtype{k: kString}, pos: startPos(call)}
	switch v.t.k {
	case kString:
		return v, nil
	case kInt:
		f := v.i
		out.s = func(r *rt) string {
			x := f(r)
			start := len(r.scratch)
			r.scratch = strconv.AppendInt(r.scratch, x, 10)
			return r.str(start)
		}
	case kUInt:
		f := v.u
		out.s = func(r *rt) string {
			x := f(r)
			start := len(r.scratch)
			r.scratch = strconv.AppendUint(r.scratch, x, 10)
			return r.str(start)
		}
	case kFloat:
		f := v.f
		out.s = func(r *rt) string {
			x := f(r)
			start := len(r.scratch)
			r.scratch = appendFloat(r.scratch, x)
			return r.str(start)
		}
	case kBool:
		f := v.b
		out.s = func(r *rt) string {
			if f(r) {
				return "true"
			}
			return "false"
		}
	case kTime:
		f := v.i
		out.s = func(r *rt) string {
			x := f(r)
			start := len(r.scratch)
			r.scratch = time.Unix(0, x).UTC().AppendFormat(r.scratch, time.RFC3339Nano)
			return r.str(start)
		}
	default:
		return nil, errAt(args[0], "string() is not defined for %s", v.t)
	}
	return out, nil
}

func fnAbs(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "abs", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("abs", 0), kInt, kUInt, kFloat)
	if err != nil {
		return nil, err
	}
	switch v.t.k {
	case kInt:
		f := v.i
		return &node{t: vtype{k: kInt}, pos: startPos(call), i: func(r *rt) int64 {
			x := f(r)
			if x < 0 {
				return -x
			}
			return x
		}}, nil
	case kFloat:
		f := v.f
		return &node{t: vtype{k: kFloat}, pos: startPos(call), f: func(r *rt) float64 { return math.Abs(f(r)) }}, nil
	}
	return v, nil
}

func fnRound(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "round", args, 1, 2); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("round", 0), kInt, kUInt, kFloat)
	if err != nil {
		return nil, err
	}
	digits := int64(0)
	if len(args) == 2 {
		lit, ok := args[1].(*ast.IntegerNode)
		neg := false
		if u, isU := args[1].(*ast.UnaryNode); isU && u.Operator == "-" {
			lit, ok = u.Node.(*ast.IntegerNode)
			neg = true
		}
		if !ok {
			return nil, errAt(args[1], "%s (digits) must be an integer literal", argOf("round", 1))
		}
		digits = int64(lit.Value)
		if neg {
			digits = -digits
		}
		if digits < -18 || digits > 18 {
			return nil, errAt(args[1], "round: digits must be between -18 and 18")
		}
	}
	if v.t.k != kFloat {
		if digits >= 0 {
			return v, nil
		}
		return nil, errAt(args[1], "round: negative digits need a Float64 value: round(float(x), %d)", digits)
	}
	f := v.f
	if digits == 0 {
		return &node{t: vtype{k: kFloat}, pos: startPos(call), f: func(r *rt) float64 { return math.RoundToEven(f(r)) }}, nil
	}
	scale := math.Pow10(int(digits))
	return &node{t: vtype{k: kFloat}, pos: startPos(call), f: func(r *rt) float64 {
		return math.RoundToEven(f(r)*scale) / scale
	}}, nil
}

func fnFloorCeil(op func(float64) float64) builtin {
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		name := "floor"
		if op(0.5) == 1 {
			name = "ceil"
		}
		if err := arity(call, name, args, 1, 1); err != nil {
			return nil, err
		}
		v, err := c.want(args[0], argOf(name, 0), kInt, kUInt, kFloat)
		if err != nil {
			return nil, err
		}
		if v.t.k != kFloat {
			return v, nil
		}
		f := v.f
		return &node{t: vtype{k: kFloat}, pos: startPos(call), f: func(r *rt) float64 { return op(f(r)) }}, nil
	}
}

func fnMinMax(isMin bool) builtin {
	name := "max"
	if isMin {
		name = "min"
	}
	return func(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
		if err := arity(call, name, args, 2, math.MaxInt); err != nil {
			return nil, err
		}
		acc, err := c.want(args[0], argOf(name, 0), kInt, kUInt, kFloat, kString, kTime)
		if err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			v, err := c.want(args[i], argOf(name, i), kInt, kUInt, kFloat, kString, kTime)
			if err != nil {
				return nil, err
			}
			k, ok := unify(acc, v)
			if !ok {
				return nil, errAt(args[i], "%s: arguments have different types %s and %s", name, acc.t, v.t)
			}
			a, b := coerce(acc, k), coerce(v, k)
			acc = &node{t: vtype{k: k}, pos: startPos(call)}
			switch k {
			case kInt, kTime:
				acc.i = minMax(isMin, a.i, b.i)
			case kUInt:
				acc.u = minMax(isMin, a.u, b.u)
			case kFloat:
				acc.f = minMax(isMin, a.f, b.f)
			case kString:
				acc.s = minMax(isMin, a.s, b.s)
			}
		}
		return acc, nil
	}
}

func minMax[T int64 | uint64 | float64 | string](isMin bool, a, b func(*rt) T) func(*rt) T {
	if isMin {
		return func(r *rt) T { return min(a(r), b(r)) }
	}
	return func(r *rt) T { return max(a(r), b(r)) }
}

func fnIntDiv(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "intDiv", args, 2, 2); err != nil {
		return nil, err
	}
	x, err := c.want(args[0], argOf("intDiv", 0), kInt, kUInt)
	if err != nil {
		return nil, err
	}
	y, err := c.want(args[1], argOf("intDiv", 1), kInt, kUInt)
	if err != nil {
		return nil, err
	}
	pos := startPos(call)
	if (x.t.k == kUInt || nonNegIntLit(x)) && (y.t.k == kUInt || nonNegIntLit(y)) && (x.t.k == kUInt || y.t.k == kUInt) {
		return &node{t: vtype{k: kUInt}, pos: pos, u: uintArith("intDiv", asUInt(x), asUInt(y))}, nil
	}
	return &node{t: vtype{k: kInt}, pos: pos, i: intArith("intDiv", asInt(x), asInt(y), x, y)}, nil
}
