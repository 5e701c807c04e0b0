package transform

import (
	"regexp"
	"strings"

	"github.com/expr-lang/expr/ast"
)

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
