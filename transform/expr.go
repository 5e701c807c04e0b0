package transform

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
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

// parseExpr parses text with expr's parser.
func parseExpr(text string) (ast.Node, *exprError) {
	if strings.TrimSpace(text) == "" {
		return nil, &exprError{pos: -1, msg: "empty expression"}
	}
	tree, err := parser.Parse(rewriteOpCalls(text))
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, &exprError{pos: fe.From, msg: "syntax error: " + fe.Message}
		}
		return nil, &exprError{pos: -1, msg: "syntax error: " + err.Error()}
	}
	return tree.Node, nil
}

// opFuncs are operator keywords also callable as functions, with the
// alias (of the same length, so positions do not move) the call is
// rewritten to before parsing: expr's lexer reads matches( as the
// operator.
var opFuncs = map[string]string{
	"matches":    "mAtches",
	"contains":   "cOntains",
	"startsWith": "sTartsWith",
	"endsWith":   "eNdsWith",
}

// aliasOf maps an alias of opFuncs back to its function.
var aliasOf = func() map[string]string {
	m := map[string]string{}
	for f, a := range opFuncs {
		m[a] = f
	}
	return m
}()

// rewriteOpCalls rewrites matches(, contains(, startsWith( and endsWith(
// where an operand is expected (so they cannot be the binary operators)
// into calls of their aliases.
func rewriteOpCalls(text string) string {
	toks, err := lexer.Lex(file.NewSource(text))
	if err != nil {
		return text
	}
	var out []byte
	for i, tk := range toks {
		alias, ok := opFuncs[tk.Value]
		if !ok || tk.Kind != lexer.Operator || i+1 >= len(toks) || !toks[i+1].Is(lexer.Bracket, "(") {
			continue
		}
		if i > 0 && operandEnd(toks[i-1]) {
			continue
		}
		if i > 1 && toks[i-1].Is(lexer.Operator, "not") && operandEnd(toks[i-2]) {
			continue // a not matches (b)
		}
		off := byteOffset(text, tk.From)
		if off < 0 || !strings.HasPrefix(text[off:], tk.Value) {
			continue
		}
		if out == nil {
			out = []byte(text)
		}
		copy(out[off:], alias)
	}
	if out == nil {
		return text
	}
	return string(out)
}

func operandEnd(t lexer.Token) bool {
	switch t.Kind {
	case lexer.Identifier, lexer.Number, lexer.String, lexer.Bytes:
		return true
	}
	return t.Is(lexer.Bracket, ")", "]", "}")
}

// byteOffset converts a rune offset into a byte offset, -1 past the end.
func byteOffset(text string, runes int) int {
	n := 0
	for i := range text {
		if n == runes {
			return i
		}
		n++
	}
	if n == runes {
		return len(text)
	}
	return -1
}

func errAt(n ast.Node, format string, args ...any) *exprError {
	return &exprError{pos: startPos(n), msg: fmt.Sprintf(format, args...)}
}

// startPos is the position where n's text starts, as near as the AST
// tells: the leftmost operand of an operator, the first name of a.b.c.
func startPos(n ast.Node) int {
	switch n := n.(type) {
	case *ast.MemberNode:
		if _, ok := dotted(n); ok {
			return startPos(n.Node)
		}
	case *ast.BinaryNode:
		return startPos(n.Left)
	case *ast.ConditionalNode:
		return startPos(n.Cond)
	}
	if n == nil {
		return -1
	}
	return n.Location().From
}

// dotted returns the field name a.b.c that an identifier or a chain of
// plain member accesses spells.
func dotted(n ast.Node) (string, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return n.Value, true
	case *ast.MemberNode:
		p, ok := n.Property.(*ast.StringNode)
		if !ok || n.Optional || n.Method {
			return "", false
		}
		base, ok := dotted(n.Node)
		if !ok {
			return "", false
		}
		return base + "." + p.Value, true
	}
	return "", false
}

// describe names an operand in messages: a field by its name, else "the
// operand".
func describe(n ast.Node) string {
	if name, ok := dotted(n); ok {
		return fmt.Sprintf("field %q", name)
	}
	switch n := n.(type) {
	case *ast.BuiltinNode:
		return n.Name + "(...)"
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			return id.Value + "(...)"
		}
	}
	return "the operand"
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

func uintConst(v uint64, pos int) *node {
	return &node{t: vtype{k: kUInt}, pos: pos, u: func(*rt) uint64 { return v }}
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

// matches builds s matches "re" and matches(s, "re"); the regular
// expression must be a literal, compiled once here.
func (c *compiler) matches(n ast.Node, sn, ren ast.Node) (*node, *exprError) {
	s, err := c.want(sn, "the string matched", kString)
	if err != nil {
		return nil, err
	}
	lit, ok := ren.(*ast.StringNode)
	if !ok {
		return nil, errAt(ren, "the regular expression of matches must be a string literal (it is compiled once, at startup)")
	}
	re, rerr := regexp.Compile(lit.Value)
	if rerr != nil {
		return nil, errAt(ren, "bad regular expression: %v", rerr)
	}
	f := s.s
	return &node{t: vtype{k: kBool}, pos: startPos(n), b: func(r *rt) bool { return re.MatchString(f(r)) }}, nil
}

// stringPred builds contains, startsWith and endsWith.
func (c *compiler) stringPred(n ast.Node, op string, an, bn ast.Node) (*node, *exprError) {
	a, err := c.want(an, "the first operand of "+op, kString)
	if err != nil {
		return nil, err
	}
	b, err := c.want(bn, "the second operand of "+op, kString)
	if err != nil {
		return nil, err
	}
	x, y := a.s, b.s
	var f func(*rt) bool
	switch op {
	case "contains":
		f = func(r *rt) bool { return strings.Contains(x(r), y(r)) }
	case "startsWith", "hasPrefix":
		f = func(r *rt) bool { return strings.HasPrefix(x(r), y(r)) }
	default:
		f = func(r *rt) bool { return strings.HasSuffix(x(r), y(r)) }
	}
	return &node{t: vtype{k: kBool}, pos: startPos(n), b: f}, nil
}

// concatNode concatenates string nodes into the scratch. Up to 8 operands
// are evaluated first (they may write the scratch themselves), then
// copied; longer lists nest.
func concatNode(pos int, parts []*node) *node {
	for len(parts) > 8 {
		head := concatNode(pos, parts[:8])
		parts = append([]*node{head}, parts[8:]...)
	}
	fs := make([]func(*rt) string, len(parts))
	for i, p := range parts {
		fs[i] = p.s
	}
	if len(fs) == 2 {
		a, b := fs[0], fs[1]
		return &node{t: vtype{k: kString}, pos: pos, s: func(r *rt) string {
			x, y := a(r), b(r)
			if y == "" {
				return x
			}
			if x == "" {
				return y
			}
			start := len(r.scratch)
			r.scratch = append(append(r.scratch, x...), y...)
			return r.str(start)
		}}
	}
	if len(fs) == 3 && parts[1].lit {
		// concat(a, "sep", b): the separator is a constant.
		a, sep, c := fs[0], parts[1].lv.(string), fs[2]
		return &node{t: vtype{k: kString}, pos: pos, s: func(r *rt) string {
			x, z := a(r), c(r)
			start := len(r.scratch)
			r.scratch = append(append(append(r.scratch, x...), sep...), z...)
			return r.str(start)
		}}
	}
	if len(fs) == 3 {
		a, b, c := fs[0], fs[1], fs[2]
		return &node{t: vtype{k: kString}, pos: pos, s: func(r *rt) string {
			x, y, z := a(r), b(r), c(r)
			start := len(r.scratch)
			r.scratch = append(append(append(r.scratch, x...), y...), z...)
			return r.str(start)
		}}
	}
	return &node{t: vtype{k: kString}, pos: pos, s: func(r *rt) string {
		var vals [8]string
		for i, f := range fs {
			vals[i] = f(r)
		}
		start := len(r.scratch)
		for _, v := range vals[:len(fs)] {
			r.scratch = append(r.scratch, v...)
		}
		return r.str(start)
	}}
}
