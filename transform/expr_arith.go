package transform

import (
	"math"

	"github.com/etl-project/etl/chunk"
)

// arith builds + - * / % for numeric x and y.
func arith(op string, x, y *node, pos int) *node {
	k := kInt
	switch {
	case x.t.k == kFloat || y.t.k == kFloat || op == "/":
		k = kFloat
	case (x.t.k == kUInt || nonNegIntLit(x)) && (y.t.k == kUInt || nonNegIntLit(y)) && (x.t.k == kUInt || y.t.k == kUInt):
		k = kUInt
		if op == "-" {
			// As in ClickHouse, the difference of two unsigned values is
			// signed: the wrapped difference read as Int64.
			a, b := asUInt(x), asUInt(y)
			return &node{t: vtype{k: kInt}, pos: pos, i: func(r *rt) int64 { return int64(a(r) - b(r)) }}
		}
	}
	out := &node{t: vtype{k: k}, pos: pos}
	switch k {
	case kInt:
		out.i = intArith(op, asInt(x), asInt(y), x, y)
	case kUInt:
		out.u = uintArith(op, asUInt(x), asUInt(y))
	case kFloat:
		out.f = floatArith(op, asFloat(x), asFloat(y), y)
	}
	return out
}

func intArith(op string, a, b func(*rt) int64, x, y *node) func(*rt) int64 {
	if y.lit && y.t.k == kInt && x.col && x.t.k == kInt {
		if f := fusedIntArith(op, x.colS, x.colW, y.lv.(int64)); f != nil {
			return f
		}
	}
	if y.lit && y.t.k == kInt {
		c := y.lv.(int64)
		switch {
		case op == "+":
			return func(r *rt) int64 { return a(r) + c }
		case op == "-":
			return func(r *rt) int64 { return a(r) - c }
		case op == "*":
			return func(r *rt) int64 { return a(r) * c }
		case op == "%" && c != 0:
			return func(r *rt) int64 { return a(r) % c }
		case op == "intDiv" && c != 0:
			return func(r *rt) int64 { return a(r) / c }
		}
	}
	switch op {
	case "+":
		return func(r *rt) int64 { return a(r) + b(r) }
	case "-":
		return func(r *rt) int64 { return a(r) - b(r) }
	case "*":
		return func(r *rt) int64 { return a(r) * b(r) }
	case "%":
		return func(r *rt) int64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "modulo by zero")
				return 0
			}
			return x % y
		}
	case "intDiv":
		return func(r *rt) int64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "division by zero")
				return 0
			}
			return x / y
		}
	}
	panic("transform: int operator " + op)
}

// fusedIntArith is column op literal for an Int64 column.
func fusedIntArith(op string, s, w int, c int64) func(*rt) int64 {
	switch {
	case op == "+":
		return func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] + c }
	case op == "-":
		return func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] - c }
	case op == "*":
		return func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] * c }
	case op == "%" && c != 0:
		return func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] % c }
	case op == "intDiv" && c != 0:
		return func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] / c }
	}
	return nil
}

func uintArith(op string, a, b func(*rt) uint64) func(*rt) uint64 {
	switch op {
	case "+":
		return func(r *rt) uint64 { return a(r) + b(r) }
	case "*":
		return func(r *rt) uint64 { return a(r) * b(r) }
	case "%":
		return func(r *rt) uint64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "modulo by zero")
				return 0
			}
			return x % y
		}
	case "intDiv":
		return func(r *rt) uint64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "division by zero")
				return 0
			}
			return x / y
		}
	}
	panic("transform: uint operator " + op)
}

func floatArith(op string, a, b func(*rt) float64, y *node) func(*rt) float64 {
	if y.lit {
		var c float64
		switch v := y.lv.(type) {
		case int64:
			c = float64(v)
		case float64:
			c = v
		}
		switch {
		case op == "+":
			return func(r *rt) float64 { return a(r) + c }
		case op == "-":
			return func(r *rt) float64 { return a(r) - c }
		case op == "*":
			return func(r *rt) float64 { return a(r) * c }
		case op == "/" && c != 0:
			return func(r *rt) float64 { return a(r) / c }
		}
	}
	switch op {
	case "+":
		return func(r *rt) float64 { return a(r) + b(r) }
	case "-":
		return func(r *rt) float64 { return a(r) - b(r) }
	case "*":
		return func(r *rt) float64 { return a(r) * b(r) }
	case "/":
		return func(r *rt) float64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "division by zero")
				return 0
			}
			return x / y
		}
	case "%":
		return func(r *rt) float64 {
			x, y := a(r), b(r)
			if y == 0 {
				r.failf(ReasonTransform, "modulo by zero")
				return 0
			}
			return math.Mod(x, y)
		}
	}
	panic("transform: float operator " + op)
}
