package transform

import (
	"math"
	"time"

	"github.com/expr-lang/expr/ast"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

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

// zoneArg is the optional time zone argument i of a time function (a
// literal tz database name, checked at startup); nil (UTC) when absent.
func zoneArg(call ast.Node, name string, args []ast.Node, i int) (*chunk.Zone, *exprError) {
	if len(args) <= i {
		return nil, nil
	}
	n, err := litString(call, name, args, i, "a time zone name such as \"Asia/Tokyo\"")
	if err != nil {
		return nil, err
	}
	z, zerr := chunk.LoadZone(n)
	if zerr != nil {
		return nil, errAt(args[i], "%s: %v", argOf(name, i), zerr)
	}
	return z, nil
}

func fnParseTime(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "parse_time", args, 2, 3); err != nil {
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
	z, err := zoneArg(call, "parse_time", args, 2)
	if err != nil {
		return nil, err
	}
	// A layout with an offset gives an instant; without one, a text is
	// local time in z (UTC without it), a daylight-saving gap or overlap
	// resolved as the server does (chunk.Zone.Instant).
	local := z != nil && !decode.LayoutZoned(layout)
	f := s.s
	return &node{t: vtype{k: kTime}, pos: startPos(call), i: func(r *rt) int64 {
		s := f(r)
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			r.failf(ReasonTransform, "parse_time: %q does not match the layout %q", s, layout)
			return 0
		}
		if local {
			t = time.Unix(z.Instant(t.Unix()), int64(t.Nanosecond()))
		}
		return r.timeNS(t)
	}}, nil
}

func fnFormatTime(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "format_time", args, 2, 3); err != nil {
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
	z, err := zoneArg(call, "format_time", args, 2)
	if err != nil {
		return nil, err
	}
	loc := z.Location()
	f := t.i
	return &node{t: vtype{k: kString}, pos: startPos(call), s: func(r *rt) string {
		ns := f(r)
		start := len(r.scratch)
		r.scratch = time.Unix(0, ns).In(loc).AppendFormat(r.scratch, layout)
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
