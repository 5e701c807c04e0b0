package transform

import (
	"math"
	"strconv"
	"time"

	"github.com/expr-lang/expr/ast"
)

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

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
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
