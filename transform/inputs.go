package transform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/expr-lang/expr/ast"
)

// origin is what a field name stands for while Inputs walks the chain: a
// source field (staged, maybe an element of the flattened arrays) or a
// field a set step derives.
type origin struct {
	src     string
	elem    bool
	derived bool
}

// need is a source field the chain or an output reads.
type need struct {
	name  string
	elem  bool
	path  string
	pos   config.Pos
	text  string
	at    int // rune offset in text of the first reference
	flows []flow
	hint  string // a type the expressions' use suggests, for messages
}

// flow is an output column a source field goes into unchanged.
type flow struct {
	t     *chunk.Type
	where string
}

type inputs struct {
	flatten   string
	flatStep  int
	flattened bool
	scope     map[string]origin
	gone      map[string]string
	needs     map[string]*need
	known     map[string]string // field -> type, for did-you-mean
	schema    map[string]string // field -> type from the Avro schema
	order     []string
	errs      CompileErrors
}

// Inputs computes the staging schema: every source field the chain and
// the outputs read. A field's type is its declared type (declared maps a
// field to a ClickHouse type: decode.fields) or else the type of the
// output column it flows into unchanged (possibly through renames; LowCardinality
// dropped); a field of the elements of the flattened array is staged as
// Array(T) (a declared element type T is wrapped, a declared Array(T)
// kept). A field whose type cannot be determined is an error naming the
// field, the step and its position, telling to declare it in
// decode.fields. Fields are in the order they are first read.
func Inputs(steps []config.Step, outs []Output, declared map[string]string) (*chunk.Schema, error) {
	return InputsKnown(steps, outs, declared, nil)
}

// InputsKnown is Inputs with the types a writer or reader schema gives
// the source fields (avro.FieldTypes in decode/avro): a field neither declared nor
// flowing unchanged into a column takes its type from schema instead of
// being an error.
func InputsKnown(steps []config.Step, outs []Output, declared, schema map[string]string) (*chunk.Schema, error) {
	in := &inputs{scope: map[string]origin{}, gone: map[string]string{}, needs: map[string]*need{}, schema: schema}
	errorf := func(pos config.Pos, path, format string, args ...any) {
		in.errs = append(in.errs, &CompileError{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	in.walk(steps, errorf)
	for _, o := range outs {
		if o.Schema == nil {
			continue
		}
		for ci, fname := range o.Fields {
			if fname == "" || ci >= len(o.Schema.Types) {
				continue
			}
			ct := o.Schema.Types[ci]
			where := fmt.Sprintf("sink %q column %s (%s)", o.Name, o.Schema.Names[ci], ct.Name)
			or, msg := in.get(fname)
			if msg != "" {
				errorf(config.Pos{}, where, "%s", msg)
				continue
			}
			if or.derived {
				continue
			}
			n := in.use(or, where, config.Pos{}, "", -1)
			ft := stagingType(ct)
			if or.elem {
				t, err := chunk.ParseType("Array(" + ft.Name + ")")
				if err != nil {
					errorf(config.Pos{}, where, "%v", err)
					continue
				}
				ft = t
			}
			n.flows = append(n.flows, flow{t: ft, where: where})
		}
	}
	if in.flatten != "" {
		hasElem := false
		for _, n := range in.needs {
			hasElem = hasElem || n.elem
		}
		if !hasElem {
			// A declared element field gives the number of elements.
			var names []string
			for name := range declared {
				if name == in.flatten || strings.HasPrefix(name, in.flatten+".") {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			if len(names) > 0 {
				in.use(origin{src: names[0], elem: true}, "", config.Pos{}, "", -1)
			} else {
				errorf(steps[in.flatStep].Pos, fmt.Sprintf("transform[%d].flatten", in.flatStep),
					"no field of the elements of %q is read: read one (%s.<name>) in a later step or an output, or declare one in decode.fields",
					in.flatten, in.flatten)
			}
		}
	}
	// The fields whose types are known, for the did-you-mean of a field
	// whose type is not: the declared ones and those flowing into columns.
	in.known = map[string]string{}
	for name, t := range in.schema {
		in.known[name] = t
	}
	for name, t := range declared {
		in.known[name] = t
	}
	for _, n := range in.needs {
		if len(n.flows) > 0 {
			in.known[n.name] = n.flows[0].t.Name
		}
	}
	for _, o := range outs {
		if o.Schema == nil {
			continue
		}
		for ci, fname := range o.Fields {
			if fname != "" && ci < len(o.Schema.Types) {
				if _, ok := in.known[fname]; !ok {
					in.known[fname] = stagingType(o.Schema.Types[ci]).Name
				}
			}
		}
	}
	s := &chunk.Schema{}
	for _, name := range in.order {
		n := in.needs[name]
		t, msg := in.typeOf(n, declared)
		if msg != "" {
			if n.text != "" {
				in.errs = append(in.errs, &CompileError{Pos: n.pos, Path: n.path, Msg: exprMsg(n.text, &exprError{pos: n.at, msg: msg})})
			} else {
				errorf(n.pos, n.path, "%s", msg)
			}
			continue
		}
		s.Names = append(s.Names, name)
		s.Types = append(s.Types, t)
	}
	if len(in.errs) > 0 {
		return nil, in.errs
	}
	return s, nil
}

// walk follows the chain's steps, recording the source fields their
// expressions read (needs) and the names each step derives, renames or
// drops (scope, gone).
func (in *inputs) walk(steps []config.Step, errorf func(pos config.Pos, path, format string, args ...any)) {
	in.flatten, in.flatStep = findFlatten(steps, errorf)
	for i, st := range steps {
		path := fmt.Sprintf("transform[%d]", i)
		if len(stepKeys(st)) != 1 {
			continue // Compile reports it
		}
		switch {
		case st.Flatten != "":
			if i == in.flatStep {
				in.flattened = true
			}
		case st.Filter != nil:
			in.expr(path+".filter", *st.Filter, st.Pos)
		case len(st.Set) > 0:
			for _, a := range st.Set {
				in.expr(path+".set."+a.Field, a.Expr, st.Pos)
				delete(in.gone, a.Field)
				in.scope[a.Field] = origin{derived: true}
			}
		case len(st.Rename) > 0:
			olds := make([]string, 0, len(st.Rename))
			for old := range st.Rename {
				olds = append(olds, old)
			}
			sort.Strings(olds)
			got := map[string]origin{}
			for _, old := range olds {
				o, msg := in.get(old)
				if msg != "" {
					errorf(st.Pos, path+".rename", "%s", msg)
					continue
				}
				got[old] = o
			}
			for _, old := range olds {
				delete(in.scope, old)
				in.gone[old] = fmt.Sprintf("renamed to %q at %s", st.Rename[old], path)
			}
			for _, old := range olds {
				if o, ok := got[old]; ok && st.Rename[old] != "" {
					delete(in.gone, st.Rename[old])
					in.scope[st.Rename[old]] = o
				}
			}
		case len(st.Drop) > 0:
			for _, name := range st.Drop {
				delete(in.scope, name)
				in.gone[name] = "dropped at " + path
			}
		case st.Route != nil:
			for j, ru := range st.Route.Rules {
				if ru.When != nil {
					pos := ru.Pos
					if pos.Line == 0 {
						pos = st.Pos
					}
					in.expr(fmt.Sprintf("%s.route.rules[%d].when", path, j), *ru.When, pos)
				}
			}
		}
	}
}

// UnknownFields checks, before the tables are read, the source fields the
// chain's expressions read against the records' fields when the
// configuration lists them (an Avro schema file or reader schema,
// decode.fields): a field that known does not hold is an error naming the
// expression, with the closest of candidates as a did-you-mean; from says
// where the list comes from, for the message. Fields the chain derives
// (set) or renames are not source fields and are not checked. The errors
// are CompileErrors.
func UnknownFields(steps []config.Step, known func(string) bool, candidates []string, from string) error {
	in := &inputs{scope: map[string]origin{}, gone: map[string]string{}, needs: map[string]*need{}}
	errorf := func(pos config.Pos, path, format string, args ...any) {
		in.errs = append(in.errs, &CompileError{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	in.walk(steps, errorf)
	for _, name := range in.order {
		n := in.needs[name]
		if n.text == "" || known(name) {
			continue
		}
		msg := fmt.Sprintf("field %q is not a field of the records: %s has no such field%s", name, from, didYouMean(name, candidates))
		in.errs = append(in.errs, &CompileError{Pos: n.pos, Path: n.path, Msg: exprMsg(n.text, &exprError{pos: n.at, msg: msg})})
	}
	if len(in.errs) > 0 {
		return in.errs
	}
	return nil
}

// Derived returns the names the chain's set and rename steps give fields:
// besides the source fields, the names an output column can be fed from.
func Derived(steps []config.Step) []string {
	var out []string
	for _, st := range steps {
		for _, a := range st.Set {
			out = append(out, a.Field)
		}
		for _, to := range st.Rename {
			out = append(out, to)
		}
	}
	return out
}

func (in *inputs) typeOf(n *need, declared map[string]string) (*chunk.Type, string) {
	if d, ok := declared[n.name]; ok {
		t, err := chunk.ParseType(d)
		if err != nil {
			return nil, fmt.Sprintf("decode.fields.%s: %v", n.name, err)
		}
		if n.elem && t.Base().Kind != chunk.KindArray {
			if t, err = chunk.ParseType("Array(" + t.Name + ")"); err != nil {
				return nil, fmt.Sprintf("decode.fields.%s: %v", n.name, err)
			}
		}
		return t, ""
	}
	if t, ok := in.schema[n.name]; ok && len(n.flows) == 0 {
		ct, err := chunk.ParseType(t)
		if err != nil {
			return nil, fmt.Sprintf("field %q: type %s from the Avro schema: %v", n.name, t, err)
		}
		if n.elem && ct.Base().Kind != chunk.KindArray {
			if ct, err = chunk.ParseType("Array(" + ct.Name + ")"); err != nil {
				return nil, fmt.Sprintf("field %q: %v", n.name, err)
			}
		}
		return ct, ""
	}
	if len(n.flows) == 0 {
		names := make([]string, 0, len(in.known))
		for name := range in.known {
			names = append(names, name)
		}
		sort.Strings(names)
		if s := suggest(n.name, names); s != "" && s != n.name {
			return nil, fmt.Sprintf("field %q has no known type: no sink column receives it unchanged and decode.fields does not declare it; did you mean %q (%s)? If %q is a field of its own, declare its ClickHouse type in decode.fields (e.g. decode.fields: {%s: %s})",
				n.name, s, in.known[s], n.name, n.name, in.known[s])
		}
		example := "String (or Int64, Float64, Nullable(String), Array(Int64)...: its ClickHouse type)"
		if n.hint != "" {
			example = n.hint
		}
		if n.elem {
			example += " (the type of one element)"
		}
		return nil, fmt.Sprintf("field %q has no known type: no sink column receives it unchanged and decode.fields does not declare it; declare it (e.g. decode.fields: {%s: %s})",
			n.name, n.name, example)
	}
	first := n.flows[0]
	for _, f := range n.flows[1:] {
		if canon(f.t) != canon(first.t) {
			return nil, fmt.Sprintf("field %q goes unchanged into columns of different types, %s (%s) and %s (%s): declare its type in decode.fields",
				n.name, first.t.Name, first.where, f.t.Name, f.where)
		}
	}
	return first.t, ""
}

// get resolves a name at the current step: every name not derived, renamed
// or dropped is a source field.
func (in *inputs) get(name string) (origin, string) {
	if o, ok := in.scope[name]; ok {
		return o, ""
	}
	if why, ok := in.gone[name]; ok {
		return origin{}, fmt.Sprintf("field %q was %s", name, why)
	}
	if in.flatten != "" && (name == in.flatten || strings.HasPrefix(name, in.flatten+".")) {
		if !in.flattened {
			return origin{}, fmt.Sprintf("field %q is a field of the elements of %q: it can be read only after the flatten step (transform[%d])",
				name, in.flatten, in.flatStep)
		}
		return origin{src: name, elem: true}, ""
	}
	return origin{src: name}, ""
}

// use records that a source field is read.
func (in *inputs) use(o origin, path string, pos config.Pos, text string, at int) *need {
	n, ok := in.needs[o.src]
	if !ok {
		n = &need{name: o.src, elem: o.elem, path: path, pos: pos, text: text, at: at}
		in.needs[o.src] = n
		in.order = append(in.order, o.src)
	} else if n.text == "" && text != "" {
		// Prefer an expression's position for messages.
		n.path, n.pos, n.text, n.at = path, pos, text, at
	}
	return n
}

// expr records the source fields an expression reads.
func (in *inputs) expr(path string, e config.Expr, fallback config.Pos) {
	pos := e.Pos
	if pos.Line == 0 {
		pos = fallback
	}
	tree, perr := parseExpr(e.Text)
	if perr != nil {
		in.errs = append(in.errs, &CompileError{Pos: pos, Path: path, Msg: exprMsg(e.Text, perr)})
		return
	}
	hints := map[string]string{}
	usageHints(tree, hints)
	reported := false
	walkFields(tree, func(name string, at int) {
		o, msg := in.get(name)
		if msg != "" {
			if !reported {
				in.errs = append(in.errs, &CompileError{Pos: pos, Path: path, Msg: exprMsg(e.Text, &exprError{pos: at, msg: msg})})
				reported = true
			}
			return
		}
		if !o.derived {
			n := in.use(o, path, pos, e.Text, at)
			if n.hint == "" && name == o.src {
				n.hint = hints[name]
			}
		}
	})
}

// walkFields calls f for every field an expression names.
func walkFields(n ast.Node, f func(name string, at int)) {
	switch n := n.(type) {
	case nil:
	case *ast.IdentifierNode:
		f(n.Value, n.Location().From)
	case *ast.MemberNode:
		if name, ok := dotted(n); ok {
			f(name, startPos(n))
			return
		}
		walkFields(n.Node, f)
		walkFields(n.Property, f)
	case *ast.UnaryNode:
		walkFields(n.Node, f)
	case *ast.BinaryNode:
		walkFields(n.Left, f)
		walkFields(n.Right, f)
	case *ast.ConditionalNode:
		walkFields(n.Cond, f)
		walkFields(n.Exp1, f)
		walkFields(n.Exp2, f)
	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			walkFields(a, f)
		}
	case *ast.CallNode:
		if _, ok := n.Callee.(*ast.IdentifierNode); !ok {
			walkFields(n.Callee, f)
		}
		for _, a := range n.Arguments {
			walkFields(a, f)
		}
	case *ast.ChainNode:
		walkFields(n.Node, f)
	case *ast.ArrayNode:
		for _, e := range n.Nodes {
			walkFields(e, f)
		}
	case *ast.SliceNode:
		walkFields(n.Node, f)
		walkFields(n.From, f)
		walkFields(n.To, f)
	}
}

// stringFuncs take a String as their first argument.
var stringFuncs = map[string]bool{
	"upper": true, "lower": true, "trim": true, "trimPrefix": true, "trimSuffix": true, "substring": true,
	"concat": true, "split": true, "replace": true, "matches": true, "contains": true, "startsWith": true,
	"endsWith": true, "hasPrefix": true, "hasSuffix": true, "indexOf": true, "parse_time": true,
	"json_string": true, "json_int": true, "json_float": true, "json_bool": true, "json_has": true,
}

// usageHints notes, for fields an expression compares with a literal or
// passes to a string function, the type that use suggests: the hint of a
// message asking to declare the field's type.
func usageHints(n ast.Node, hints map[string]string) {
	note := func(field ast.Node, t string) {
		if name, ok := dotted(field); ok && t != "" {
			if _, seen := hints[name]; !seen {
				hints[name] = t
			}
		}
	}
	litType := func(n ast.Node) string {
		switch n.(type) {
		case *ast.IntegerNode:
			return "Int64"
		case *ast.FloatNode:
			return "Float64"
		case *ast.StringNode:
			return "String"
		case *ast.BoolNode:
			return "Bool"
		}
		return ""
	}
	switch n := n.(type) {
	case *ast.BinaryNode:
		if t := litType(n.Right); n.Operator == "??" && t != "" {
			note(n.Left, "Nullable("+t+")")
		}
		note(n.Left, litType(n.Right))
		note(n.Right, litType(n.Left))
		usageHints(n.Left, hints)
		usageHints(n.Right, hints)
	case *ast.UnaryNode:
		usageHints(n.Node, hints)
	case *ast.ConditionalNode:
		usageHints(n.Cond, hints)
		usageHints(n.Exp1, hints)
		usageHints(n.Exp2, hints)
	case *ast.BuiltinNode:
		if stringFuncs[n.Name] && len(n.Arguments) > 0 {
			note(n.Arguments[0], "String")
		}
		for _, a := range n.Arguments {
			usageHints(a, hints)
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			name := id.Value
			if real, ok := aliasOf[name]; ok {
				name = real
			}
			if stringFuncs[name] && len(n.Arguments) > 0 {
				note(n.Arguments[0], "String")
			}
		}
		for _, a := range n.Arguments {
			usageHints(a, hints)
		}
	case *ast.ChainNode:
		usageHints(n.Node, hints)
	}
}
