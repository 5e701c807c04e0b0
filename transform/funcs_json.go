package transform

import (
	"strings"

	"github.com/expr-lang/expr/ast"
)

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
