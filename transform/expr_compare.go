package transform

import (
	"sort"

	"github.com/etl-project/etl/chunk"
	"github.com/expr-lang/expr/ast"
)

// compare builds == != < > <= >=.
func (c *compiler) compare(n *ast.BinaryNode) (*node, *exprError) {
	op := n.Operator
	pos := n.Location().From
	x, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	y, err := c.compile(n.Right)
	if err != nil {
		return nil, err
	}
	eq := op == "==" || op == "!="
	// x == nil, nil != x.
	if x.t.k == kNull || y.t.k == kNull {
		if !eq {
			return nil, errAt(n, "operator %s is not defined for nil: use == nil or != nil", op)
		}
		v := x
		if x.t.k == kNull {
			v = y
		}
		isNull := v.isNull
		if !v.t.null {
			isNull = func(*rt) bool { return false }
		}
		if op == "==" {
			return &node{t: vtype{k: kBool}, pos: pos, b: isNull}, nil
		}
		return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return !isNull(r) }}, nil
	}
	if x.t.null {
		return nil, notNullErr(n.Left, x.t)
	}
	if y.t.null {
		return nil, notNullErr(n.Right, y.t)
	}
	var b func(*rt) bool
	switch {
	case x.t.numeric() && y.t.numeric():
		b = numCompare(op, x, y)
	case x.t.k == kString && y.t.k == kString:
		b = fusedStringCompare(op, x, y)
		if b == nil {
			b = ordered(op, x.s, y.s, y)
		}
	case x.t.k == kTime && y.t.k == kTime:
		b = ordered(op, x.i, y.i, nil)
	case x.t.k == kBool && y.t.k == kBool && eq:
		a, bb := x.b, y.b
		if op == "==" {
			b = func(r *rt) bool { return a(r) == bb(r) }
		} else {
			b = func(r *rt) bool { return a(r) != bb(r) }
		}
	default:
		return nil, errAt(n, "cannot compare %s and %s with %s", x.t, y.t, op)
	}
	return &node{t: vtype{k: kBool}, pos: pos, b: b}, nil
}

func numCompare(op string, x, y *node) func(*rt) bool {
	switch {
	case x.t.k == kFloat || y.t.k == kFloat:
		return ordered(op, asFloat(x), asFloat(y), litAs(y, kFloat))
	case x.t.k == kInt && y.t.k == kInt:
		if f := fusedIntCompare(op, x, y); f != nil {
			return f
		}
		return ordered(op, x.i, y.i, y)
	case x.t.k == kUInt && y.t.k == kUInt, x.t.k == kUInt && nonNegIntLit(y), y.t.k == kUInt && nonNegIntLit(x):
		return ordered(op, asUInt(x), asUInt(y), nil)
	}
	// Int64 against UInt64: exact, a negative value is below every
	// unsigned one.
	var cmp func(*rt) int
	if x.t.k == kInt {
		a, b := x.i, y.u
		cmp = func(r *rt) int { return cmpIU(a(r), b(r)) }
	} else {
		a, b := x.u, y.i
		cmp = func(r *rt) int { return -cmpIU(b(r), a(r)) }
	}
	switch op {
	case "==":
		return func(r *rt) bool { return cmp(r) == 0 }
	case "!=":
		return func(r *rt) bool { return cmp(r) != 0 }
	case "<":
		return func(r *rt) bool { return cmp(r) < 0 }
	case ">":
		return func(r *rt) bool { return cmp(r) > 0 }
	case "<=":
		return func(r *rt) bool { return cmp(r) <= 0 }
	default:
		return func(r *rt) bool { return cmp(r) >= 0 }
	}
}

// fusedIntCompare is Int64 column op literal, or nil.
func fusedIntCompare(op string, x, y *node) func(*rt) bool {
	if !x.col || !y.lit {
		return nil
	}
	s, w, c := x.colS, x.colW, y.lv.(int64)
	switch op {
	case "==":
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] == c }
	case "!=":
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] != c }
	case "<":
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] < c }
	case ">":
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] > c }
	case "<=":
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] <= c }
	default:
		return func(r *rt) bool { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] >= c }
	}
}

// fusedStringCompare is String column == or != literal, or nil.
func fusedStringCompare(op string, x, y *node) func(*rt) bool {
	if !x.col || !y.lit || (op != "==" && op != "!=") {
		return nil
	}
	s, w, c := x.colS, x.colW, y.lv.(string)
	if op == "==" {
		return func(r *rt) bool { return r.cols[s].(*chunk.Strings).Value(r.at[w]) == c }
	}
	return func(r *rt) bool { return r.cols[s].(*chunk.Strings).Value(r.at[w]) != c }
}

func cmpIU(a int64, b uint64) int {
	switch {
	case a < 0 || uint64(a) < b:
		return -1
	case uint64(a) > b:
		return 1
	}
	return 0
}

// litAs returns y when it is a literal usable as a constant of kind k in
// ordered, else nil.
func litAs(y *node, k kind) *node {
	if !y.lit {
		return nil
	}
	switch k {
	case kFloat:
		switch v := y.lv.(type) {
		case int64:
			return floatLit(float64(v), y.pos)
		case float64:
			return y
		}
	}
	return nil
}

// ordered builds a comparison of two values of an ordered Go type; when y
// is a literal its value is a constant of the closure.
func ordered[T int64 | uint64 | float64 | string](op string, a, b func(*rt) T, y *node) func(*rt) bool {
	if y != nil && y.lit {
		if c, ok := y.lv.(T); ok {
			switch op {
			case "==":
				return func(r *rt) bool { return a(r) == c }
			case "!=":
				return func(r *rt) bool { return a(r) != c }
			case "<":
				return func(r *rt) bool { return a(r) < c }
			case ">":
				return func(r *rt) bool { return a(r) > c }
			case "<=":
				return func(r *rt) bool { return a(r) <= c }
			default:
				return func(r *rt) bool { return a(r) >= c }
			}
		}
	}
	switch op {
	case "==":
		return func(r *rt) bool { return a(r) == b(r) }
	case "!=":
		return func(r *rt) bool { return a(r) != b(r) }
	case "<":
		return func(r *rt) bool { return a(r) < b(r) }
	case ">":
		return func(r *rt) bool { return a(r) > b(r) }
	case "<=":
		return func(r *rt) bool { return a(r) <= b(r) }
	default:
		return func(r *rt) bool { return a(r) >= b(r) }
	}
}

// in builds x in [literals].
func (c *compiler) in(n *ast.BinaryNode) (*node, *exprError) {
	arr, ok := n.Right.(*ast.ArrayNode)
	if !ok {
		return nil, errAt(n.Right, "the right operand of in must be a list of literals, like [1, 2] or [\"a\", \"b\"]")
	}
	x, err := c.value(n.Left)
	if err != nil {
		return nil, err
	}
	pos := n.Location().From
	items := make([]*node, len(arr.Nodes))
	for i, e := range arr.Nodes {
		v, err := c.compile(e)
		if err != nil {
			return nil, err
		}
		if !v.lit || v.t.k == kNull {
			return nil, errAt(e, "the list after in must hold literals")
		}
		items[i] = v
	}
	switch x.t.k {
	case kString:
		set := make([]string, len(items))
		for i, v := range items {
			s, ok := v.lv.(string)
			if !ok {
				return nil, errAt(arr.Nodes[i], "%s is String: the list after in must hold strings", describe(n.Left))
			}
			set[i] = s
		}
		sort.Strings(set)
		f := x.s
		return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return inSorted(set, f(r)) }}, nil
	case kInt, kUInt:
		var ints []int64
		var uints []uint64
		for i, v := range items {
			iv, ok := v.lv.(int64)
			if !ok {
				return nil, errAt(arr.Nodes[i], "%s is %s: the list after in must hold integers", describe(n.Left), x.t)
			}
			if x.t.k == kUInt {
				if iv >= 0 { // a negative value never matches
					uints = append(uints, uint64(iv))
				}
			} else {
				ints = append(ints, iv)
			}
		}
		if x.t.k == kUInt {
			sort.Slice(uints, func(i, j int) bool { return uints[i] < uints[j] })
			f := x.u
			return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return inSorted(uints, f(r)) }}, nil
		}
		sort.Slice(ints, func(i, j int) bool { return ints[i] < ints[j] })
		f := x.i
		return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return inSorted(ints, f(r)) }}, nil
	case kFloat:
		fl := make([]float64, len(items))
		for i, v := range items {
			switch lv := v.lv.(type) {
			case int64:
				fl[i] = float64(lv)
			case float64:
				fl[i] = lv
			default:
				return nil, errAt(arr.Nodes[i], "%s is Float64: the list after in must hold numbers", describe(n.Left))
			}
		}
		sort.Float64s(fl)
		f := x.f
		return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return inSorted(fl, f(r)) }}, nil
	}
	return nil, errAt(n.Left, "in is not defined for %s", x.t)
}

// inSorted reports whether v is in the sorted set: a linear scan for short
// lists, a binary search for long ones.
func inSorted[T int64 | uint64 | float64 | string](set []T, v T) bool {
	if len(set) <= 8 {
		for _, s := range set {
			if s == v {
				return true
			}
		}
		return false
	}
	lo, hi := 0, len(set)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if set[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(set) && set[lo] == v
}
