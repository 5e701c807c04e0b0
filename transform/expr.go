package transform

import (
	"strings"

	"github.com/expr-lang/expr/ast"
)

// node is a compiled, type-checked expression: one typed closure for its
// kind. Nullable nodes also have isNull; their value closure gives the
// kind's zero value (or anything) when isNull is true.
type node struct {
	t   vtype
	pos int // rune offset in the expression
	b   func(*rt) bool
	i   func(*rt) int64 // kInt, and kTime as nanoseconds
	u   func(*rt) uint64
	f   func(*rt) float64
	s   func(*rt) string
	// isNull is set when t.null.
	isNull func(*rt) bool
	// lit is set for literals (and literal negations); lv is the value:
	// int64, float64, string, bool or nil.
	lit bool
	lv  any
	// slotted is set for a read of a derived field, slot its slot: a
	// writer may read the slot itself instead of calling the closure.
	slotted bool
	slot    int
	// col is set for a read of an Int64 or String staging column bound
	// at r.cols[colS] and indexed by r.at[colW]: an operator with a literal
	// reads the column itself (one closure call instead of two).
	col        bool
	colS, colW int
}

// scope resolves field names for the compiler.
type scope interface {
	// field returns the node reading field name, or an error at pos.
	field(name string, pos int) (*node, *exprError)
}

// compiler compiles one expression.
type compiler struct {
	scope scope
}

// compile type-checks n and builds its closures.
func (c *compiler) compile(n ast.Node) (*node, *exprError) {
	switch n := n.(type) {
	case nil:
		return nil, &exprError{pos: -1, msg: "missing expression"}
	case *ast.NilNode:
		return nullLit(n.Location().From), nil
	case *ast.IntegerNode:
		return intLit(int64(n.Value), n.Location().From), nil
	case *ast.FloatNode:
		return floatLit(n.Value, n.Location().From), nil
	case *ast.BoolNode:
		return boolLit(n.Value, n.Location().From), nil
	case *ast.StringNode:
		return strLit(n.Value, n.Location().From), nil
	case *ast.IdentifierNode:
		return c.scope.field(n.Value, n.Location().From)
	case *ast.MemberNode:
		if name, ok := dotted(n); ok {
			return c.scope.field(name, startPos(n))
		}
		if call, ok := n.Node.(*ast.BuiltinNode); ok && call.Name == "split" && !n.Optional {
			return c.splitIndex(call, n.Property)
		}
		if call, ok := n.Node.(*ast.CallNode); ok && !n.Optional {
			if id, ok := call.Callee.(*ast.IdentifierNode); ok && id.Value == "split" {
				return c.splitIndex(&ast.BuiltinNode{Name: "split", Arguments: call.Arguments}, n.Property)
			}
		}
		if n.Optional {
			return nil, errAt(n, "optional chaining (?.) is not supported")
		}
		return nil, errAt(n, "indexing is not supported except split(s, sep)[i]")
	case *ast.ChainNode:
		return nil, errAt(n, "optional chaining (?.) is not supported")
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ConditionalNode:
		return c.conditional(n)
	case *ast.BuiltinNode:
		return c.call(n, n.Name, n.Arguments)
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			return c.call(n, id.Value, n.Arguments)
		}
		return nil, errAt(n, "methods are not supported: call functions as f(x)")
	case *ast.ArrayNode:
		return nil, errAt(n, "array literals are only allowed after in")
	case *ast.MapNode:
		return nil, errAt(n, "map literals are not supported")
	case *ast.SliceNode:
		return nil, errAt(n, "slices are not supported: use substring(s, start, length)")
	case *ast.VariableDeclaratorNode:
		return nil, errAt(n, "let is not supported")
	case *ast.SequenceNode:
		return nil, errAt(n, "sequences (;) are not supported")
	case *ast.BytesNode:
		return nil, errAt(n, "bytes literals are not supported")
	}
	return nil, errAt(n, "this expression is not supported")
}

// Literals.

func nullLit(pos int) *node {
	return &node{t: vtype{kNull, true}, pos: pos, lit: true, isNull: func(*rt) bool { return true }}
}

func intLit(v int64, pos int) *node {
	return &node{t: vtype{k: kInt}, pos: pos, lit: true, lv: v, i: func(*rt) int64 { return v }}
}

func floatLit(v float64, pos int) *node {
	return &node{t: vtype{k: kFloat}, pos: pos, lit: true, lv: v, f: func(*rt) float64 { return v }}
}

func boolLit(v bool, pos int) *node {
	return &node{t: vtype{k: kBool}, pos: pos, lit: true, lv: v, b: func(*rt) bool { return v }}
}

func strLit(v string, pos int) *node {
	return &node{t: vtype{k: kString}, pos: pos, lit: true, lv: v, s: func(*rt) string { return v }}
}

// nonNegIntLit reports whether n is an integer literal >= 0: such a literal
// takes the type UInt64 next to a UInt64 operand.
func nonNegIntLit(n *node) bool {
	v, ok := n.lv.(int64)
	return n.lit && ok && v >= 0
}

// Conversions between numeric kinds.

func asInt(n *node) func(*rt) int64 {
	switch n.t.k {
	case kInt:
		return n.i
	case kUInt:
		u := n.u
		return func(r *rt) int64 { return int64(u(r)) }
	}
	panic("transform: asInt of " + n.t.String())
}

func asUInt(n *node) func(*rt) uint64 {
	switch n.t.k {
	case kUInt:
		return n.u
	case kInt:
		if nonNegIntLit(n) {
			v := uint64(n.lv.(int64))
			return func(*rt) uint64 { return v }
		}
		i := n.i
		return func(r *rt) uint64 { return uint64(i(r)) }
	}
	panic("transform: asUInt of " + n.t.String())
}

func asFloat(n *node) func(*rt) float64 {
	switch n.t.k {
	case kFloat:
		return n.f
	case kInt:
		if n.lit {
			v := float64(n.lv.(int64))
			return func(*rt) float64 { return v }
		}
		i := n.i
		return func(r *rt) float64 { return float64(i(r)) }
	case kUInt:
		u := n.u
		return func(r *rt) float64 { return float64(u(r)) }
	}
	panic("transform: asFloat of " + n.t.String())
}

// coerce returns n with the value closure of kind k: a numeric conversion,
// or the zero value of k for the nil literal. n's kind must be k, kNull or
// numeric with k numeric.
func coerce(n *node, k kind) *node {
	if n.t.k == k {
		return n
	}
	out := &node{t: vtype{k: k, null: n.t.null}, pos: n.pos, isNull: n.isNull}
	if n.t.k == kNull {
		switch k {
		case kBool:
			out.b = func(*rt) bool { return false }
		case kInt, kTime:
			out.i = func(*rt) int64 { return 0 }
		case kUInt:
			out.u = func(*rt) uint64 { return 0 }
		case kFloat:
			out.f = func(*rt) float64 { return 0 }
		case kString:
			out.s = func(*rt) string { return "" }
		}
		return out
	}
	switch k {
	case kInt:
		out.i = asInt(n)
	case kUInt:
		out.u = asUInt(n)
	case kFloat:
		out.f = asFloat(n)
	default:
		panic("transform: coerce " + n.t.String() + " to " + kindNames[k])
	}
	if n.lit {
		out.lit = true
		switch k {
		case kFloat:
			out.lv = out.f(nil)
		case kInt:
			out.lv = out.i(nil)
		}
	}
	return out
}

// unify returns the kind two operands of a conditional, ?? or min/max
// share: the same kind, a numeric kind both convert to, or the other kind
// for nil.
func unify(a, b *node) (kind, bool) {
	ak, bk := a.t.k, b.t.k
	switch {
	case ak == bk:
		return ak, true
	case ak == kNull:
		return bk, true
	case bk == kNull:
		return ak, true
	case a.t.numeric() && b.t.numeric():
		switch {
		case ak == kFloat || bk == kFloat:
			return kFloat, true
		case ak == kUInt && nonNegIntLit(b), bk == kUInt && nonNegIntLit(a):
			return kUInt, true
		default:
			return kInt, true
		}
	}
	return 0, false
}

func notNullErr(n ast.Node, t vtype) *exprError {
	return errAt(n, "%s is %s: give it a default with ?? (e.g. x ?? 0) or test it with == nil", describe(n), t)
}

// value compiles n and requires a non-Nullable value.
func (c *compiler) value(n ast.Node) (*node, *exprError) {
	v, err := c.compile(n)
	if err != nil {
		return nil, err
	}
	if v.t.null {
		return nil, notNullErr(n, v.t)
	}
	return v, nil
}

// want compiles n and requires one of the kinds, not Nullable.
func (c *compiler) want(n ast.Node, what string, kinds ...kind) (*node, *exprError) {
	v, err := c.value(n)
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if v.t.k == k {
			return v, nil
		}
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = kindNames[k]
	}
	return nil, errAt(n, "%s must be %s, got %s", what, strings.Join(names, " or "), v.t)
}

func (c *compiler) unary(n *ast.UnaryNode) (*node, *exprError) {
	switch n.Operator {
	case "not", "!":
		x, err := c.want(n.Node, "the operand of "+n.Operator, kBool)
		if err != nil {
			return nil, err
		}
		if x.lit {
			return boolLit(!x.lv.(bool), n.Location().From), nil
		}
		f := x.b
		return &node{t: vtype{k: kBool}, pos: n.Location().From, b: func(r *rt) bool { return !f(r) }}, nil
	case "-", "+":
		x, err := c.value(n.Node)
		if err != nil {
			return nil, err
		}
		if !x.t.numeric() {
			return nil, errAt(n, "unary %s is not defined for %s", n.Operator, x.t)
		}
		if n.Operator == "+" {
			return x, nil
		}
		pos := n.Location().From
		switch x.t.k {
		case kInt:
			if x.lit {
				return intLit(-x.lv.(int64), pos), nil
			}
			f := x.i
			return &node{t: vtype{k: kInt}, pos: pos, i: func(r *rt) int64 { return -f(r) }}, nil
		case kUInt:
			f := x.u
			return &node{t: vtype{k: kInt}, pos: pos, i: func(r *rt) int64 { return -int64(f(r)) }}, nil
		case kFloat:
			if x.lit {
				return floatLit(-x.lv.(float64), pos), nil
			}
			f := x.f
			return &node{t: vtype{k: kFloat}, pos: pos, f: func(r *rt) float64 { return -f(r) }}, nil
		}
	}
	return nil, errAt(n, "unary operator %s is not supported", n.Operator)
}

func (c *compiler) binary(n *ast.BinaryNode) (*node, *exprError) {
	pos := n.Location().From
	switch op := n.Operator; op {
	case "and", "&&", "or", "||":
		x, err := c.want(n.Left, "the left operand of "+op, kBool)
		if err != nil {
			return nil, err
		}
		y, err := c.want(n.Right, "the right operand of "+op, kBool)
		if err != nil {
			return nil, err
		}
		a, b := x.b, y.b
		if op == "and" || op == "&&" {
			return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return a(r) && b(r) }}, nil
		}
		return &node{t: vtype{k: kBool}, pos: pos, b: func(r *rt) bool { return a(r) || b(r) }}, nil
	case "??":
		return c.coalesce(n)
	case "==", "!=", "<", ">", "<=", ">=":
		return c.compare(n)
	case "+", "-", "*", "/", "%":
		x, err := c.compile(n.Left)
		if err != nil {
			return nil, err
		}
		y, err := c.compile(n.Right)
		if err != nil {
			return nil, err
		}
		if x.t.null {
			return nil, notNullErr(n.Left, x.t)
		}
		if y.t.null {
			return nil, notNullErr(n.Right, y.t)
		}
		if op == "+" && x.t.k == kString && y.t.k == kString {
			return concatNode(pos, []*node{x, y}), nil
		}
		if !x.t.numeric() || !y.t.numeric() {
			return nil, errAt(n, "operator %s is not defined for %s and %s", op, x.t, y.t)
		}
		return arith(op, x, y, pos), nil
	case "in":
		return c.in(n)
	case "matches":
		return c.matches(n, n.Left, n.Right)
	case "contains", "startsWith", "endsWith":
		return c.stringPred(n, op, n.Left, n.Right)
	}
	return nil, errAt(n, "operator %s is not supported", n.Operator)
}

// coalesce builds x ?? y.
func (c *compiler) coalesce(n *ast.BinaryNode) (*node, *exprError) {
	x, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	y, err := c.compile(n.Right)
	if err != nil {
		return nil, err
	}
	if x.t.k == kNull {
		return y, nil
	}
	if !x.t.null {
		return x, nil
	}
	k, ok := unify(x, y)
	if !ok {
		return nil, errAt(n, "the operands of ?? have different types %s and %s", x.t, y.t)
	}
	x, y = coerce(x, k), coerce(y, k)
	xn := x.isNull
	out := &node{t: vtype{k: k, null: y.t.null}, pos: n.Location().From}
	if y.t.null {
		yn := y.isNull
		out.isNull = func(r *rt) bool { return xn(r) && yn(r) }
	}
	notNull := func(r *rt) bool { return !xn(r) }
	setPick(out, notNull, x, y)
	return out, nil
}

// conditional builds cond ? a : b (and if cond { a } else { b }).
func (c *compiler) conditional(n *ast.ConditionalNode) (*node, *exprError) {
	cond, err := c.want(n.Cond, "the condition", kBool)
	if err != nil {
		return nil, err
	}
	x, err := c.compile(n.Exp1)
	if err != nil {
		return nil, err
	}
	y, err := c.compile(n.Exp2)
	if err != nil {
		return nil, err
	}
	k, ok := unify(x, y)
	if !ok {
		return nil, errAt(n.Exp1, "the branches of the conditional have different types %s and %s", x.t, y.t)
	}
	x, y = coerce(x, k), coerce(y, k)
	null := x.t.null || y.t.null
	out := &node{t: vtype{k: k, null: null}, pos: startPos(n)}
	if k == kNull {
		out.isNull = func(*rt) bool { return true }
		return out, nil
	}
	cf := cond.b
	setPick(out, cf, x, y)
	if null {
		xn, yn := nullOf(x), nullOf(y)
		out.isNull = func(r *rt) bool {
			if cf(r) {
				return xn(r)
			}
			return yn(r)
		}
	}
	return out, nil
}

// nullOf returns n's isNull, or a closure returning false.
func nullOf(n *node) func(*rt) bool {
	if n.t.null {
		return n.isNull
	}
	return func(*rt) bool { return false }
}

func pick[T any](c func(*rt) bool, x, y func(*rt) T) func(*rt) T {
	return func(r *rt) T {
		if c(r) {
			return x(r)
		}
		return y(r)
	}
}

// setPick sets out's value closure to x's when c is true, else y's; x and
// y have out's kind.
func setPick(out *node, c func(*rt) bool, x, y *node) {
	switch out.t.k {
	case kBool:
		out.b = pick(c, x.b, y.b)
	case kInt, kTime:
		out.i = pick(c, x.i, y.i)
	case kUInt:
		out.u = pick(c, x.u, y.u)
	case kFloat:
		out.f = pick(c, x.f, y.f)
	case kString:
		out.s = pick(c, x.s, y.s)
	}
}
