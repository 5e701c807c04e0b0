package transform

import (
	"math"
	"strings"

	"github.com/expr-lang/expr/ast"
)

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
