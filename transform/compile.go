package transform

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// fieldRef is what a field name stands for at some point of the chain: a
// staging column (of a record, or of the current element of the flattened
// arrays) or a slot a set step fills.
type fieldRef struct {
	name string
	src  bool
	col  int
	elem bool
	typ  *chunk.Type // staging type (the element type for elem)
	slot int
	t    vtype
	path string     // the set assignment that derives it
	pos  config.Pos // its position
	bad  bool       // its expression failed to compile
}

type chainCompiler struct {
	in        *chunk.Schema
	index     map[string]int
	sinks     map[string]int
	sinkNames []string
	flatten   string
	flatStep  int
	flattened bool
	scope     map[string]*fieldRef
	gone      map[string]string
	binds     map[binding]int
	prog      *program
	errs      CompileErrors
	ranges    chunk.ServerRanges // the outputs' narrowest Date and DateTime ranges
}

// Compile compiles the chain for staging chunks of schema in (see Inputs)
// writing to outs. Every problem is reported, as CompileErrors.
func Compile(steps []config.Step, in *chunk.Schema, outs []Output) (*Chain, error) {
	cc := newChainCompiler(in, outs)
	cc.steps(steps)
	cc.outputs(outs)
	return cc.finish()
}

func newChainCompiler(in *chunk.Schema, outs []Output) *chainCompiler {
	if in == nil {
		in = &chunk.Schema{}
	}
	cc := &chainCompiler{
		in:       in,
		index:    map[string]int{},
		sinks:    map[string]int{},
		flatStep: -1,
		scope:    map[string]*fieldRef{},
		gone:     map[string]string{},
		binds:    map[binding]int{},
		prog:     &program{in: in},
	}
	for i, n := range in.Names {
		cc.index[n] = i
		cc.prog.inCanon = append(cc.prog.inCanon, canon(in.Types[i]))
	}
	rs := make([]chunk.ServerRanges, len(outs))
	for i, o := range outs {
		rs[i] = o.Ranges
	}
	cc.ranges = chunk.Narrowest(rs...)
	for i, o := range outs {
		if _, dup := cc.sinks[o.Name]; dup {
			cc.errorf(config.Pos{}, "", "two outputs are named %q", o.Name)
		}
		cc.sinks[o.Name] = i
		cc.sinkNames = append(cc.sinkNames, o.Name)
	}
	return cc
}

func (cc *chainCompiler) finish() (*Chain, error) {
	if len(cc.errs) > 0 {
		return nil, cc.errs
	}
	p := cc.prog
	p.ncols = len(cc.binds)
	for b, slot := range cc.binds {
		b.slot = slot
		p.binds = append(p.binds, b)
	}
	sort.Slice(p.binds, func(i, j int) bool { return p.binds[i].slot < p.binds[j].slot })
	return &Chain{p: p, r: newRT(p)}, nil
}

func (cc *chainCompiler) errorf(pos config.Pos, path, format string, args ...any) {
	cc.errs = append(cc.errs, &CompileError{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// stepKeys lists the keys a step sets.
func stepKeys(st config.Step) []string {
	var set []string
	if st.Flatten != "" {
		set = append(set, "flatten")
	}
	if st.Filter != nil {
		set = append(set, "filter")
	}
	if len(st.Set) > 0 {
		set = append(set, "set")
	}
	if len(st.Rename) > 0 {
		set = append(set, "rename")
	}
	if len(st.Drop) > 0 {
		set = append(set, "drop")
	}
	if st.Route != nil {
		set = append(set, "route")
	}
	return set
}

// findFlatten returns the flattened field and its step, reporting every
// flatten step after the first.
func findFlatten(steps []config.Step, errorf func(config.Pos, string, string, ...any)) (string, int) {
	field, at := "", -1
	for i, st := range steps {
		if st.Flatten == "" {
			continue
		}
		if at >= 0 {
			errorf(st.Pos, fmt.Sprintf("transform[%d].flatten", i),
				"only one flatten step is supported (transform[%d] flattens %q)", at, field)
			continue
		}
		field, at = st.Flatten, i
	}
	return field, at
}

func (cc *chainCompiler) add(o op) {
	if cc.flattened {
		cc.prog.post = append(cc.prog.post, o)
	} else {
		cc.prog.pre = append(cc.prog.pre, o)
	}
}

func (cc *chainCompiler) steps(steps []config.Step) {
	cc.flatten, cc.flatStep = findFlatten(steps, cc.errorf)
	routes := 0
	for i, st := range steps {
		path := fmt.Sprintf("transform[%d]", i)
		if keys := stepKeys(st); len(keys) != 1 {
			msg := "a step sets exactly one of flatten, filter, set, rename, drop, route"
			if len(keys) > 1 {
				msg += "; this one sets " + strings.Join(keys, ", ")
			}
			cc.errorf(st.Pos, path, "%s", msg)
			continue
		}
		switch {
		case st.Flatten != "":
			if i == cc.flatStep {
				cc.flattened = true
				cc.prog.flatten = true
				cc.prog.flatPath = path + ".flatten"
				for k, n := range cc.in.Names {
					if cc.isElem(n) && cc.in.Types[k].Base().Kind == chunk.KindArray {
						cc.prog.flatCols = append(cc.prog.flatCols, k)
					}
				}
				if len(cc.prog.flatCols) == 0 {
					cc.errorf(st.Pos, path+".flatten",
						"no field of the elements of %q is staged: read one (%s.<name>) in a later step or an output, or declare one in decode.fields",
						cc.flatten, cc.flatten)
				}
			}
		case st.Filter != nil:
			p := path + ".filter"
			n := cc.expr(p, *st.Filter, st.Pos)
			if n == nil {
				continue
			}
			if n.t.k != kBool || n.t.null {
				msg := fmt.Sprintf("a filter must be Bool, got %s", n.t)
				if n.t.null && n.t.k == kBool {
					msg += ": give NULL a meaning with ?? (e.g. (x ?? false))"
				}
				cc.exprErr(p, *st.Filter, st.Pos, &exprError{pos: -1, msg: msg})
				continue
			}
			cc.add(op{path: p, run: n.b})
		case len(st.Set) > 0:
			for _, a := range st.Set {
				p := path + ".set." + a.Field
				pos := a.Expr.Pos
				if pos.Line == 0 {
					pos = st.Pos
				}
				if a.Field == "" {
					cc.errorf(pos, path+".set", "a field name is empty")
					continue
				}
				n := cc.expr(p, a.Expr, st.Pos)
				delete(cc.gone, a.Field)
				if n == nil {
					cc.scope[a.Field] = &fieldRef{name: a.Field, bad: true}
					continue
				}
				s := cc.prog.nslots
				cc.prog.nslots++
				cc.add(op{path: p, run: store(s, n)})
				cc.scope[a.Field] = &fieldRef{name: a.Field, slot: s, t: n.t, path: p, pos: pos}
			}
		case len(st.Rename) > 0:
			cc.rename(path, st)
		case len(st.Drop) > 0:
			for _, name := range st.Drop {
				delete(cc.scope, name)
				cc.gone[name] = "dropped at " + path
			}
		case st.Route != nil:
			routes++
			if routes > 1 {
				cc.errorf(st.Pos, path+".route", "only one route step is supported")
				continue
			}
			cc.route(path, st)
		}
	}
}

func (cc *chainCompiler) rename(path string, st config.Step) {
	olds := make([]string, 0, len(st.Rename))
	for old := range st.Rename {
		olds = append(olds, old)
	}
	sort.Strings(olds)
	targets := map[string]string{}
	refs := map[string]*fieldRef{}
	for _, old := range olds {
		nw := st.Rename[old]
		if nw == "" {
			cc.errorf(st.Pos, path+".rename."+old, "the new name is empty")
			continue
		}
		if prev, dup := targets[nw]; dup {
			cc.errorf(st.Pos, path+".rename", "both %q and %q are renamed to %q", prev, old, nw)
			continue
		}
		targets[nw] = old
		// A field no later step or output reads is not staged: renaming
		// it changes nothing that can be seen. A field dropped or renamed
		// before cannot be renamed.
		ref, msg := cc.lookup(old)
		if _, gone := cc.gone[old]; ref == nil && gone {
			cc.errorf(st.Pos, path+".rename", "%s", msg)
		}
		refs[old] = ref
	}
	for _, old := range olds {
		if nw, ok := st.Rename[old]; ok && targets[nw] == old {
			delete(cc.scope, old)
			cc.gone[old] = fmt.Sprintf("renamed to %q at %s", nw, path)
		}
	}
	for _, old := range olds {
		nw := st.Rename[old]
		if targets[nw] != old {
			continue
		}
		delete(cc.gone, nw)
		ref := refs[old]
		if ref == nil {
			delete(cc.scope, nw)
			cc.gone[nw] = fmt.Sprintf("renamed at %s from %q, which is not a field", path, old)
			continue
		}
		cp := *ref
		cp.name = nw
		cc.scope[nw] = &cp
	}
}

type rule struct {
	cond func(*rt) bool
	sink int
	path string
}

// Route targets for unmatched rows besides a sink index.
const (
	routeSkip = -1
	routeFail = -2
)

func (cc *chainCompiler) route(path string, st config.Step) {
	rp := path + ".route"
	var rules []rule
	for j, ru := range st.Route.Rules {
		wp := fmt.Sprintf("%s.rules[%d]", rp, j)
		pos := ru.Pos
		if pos.Line == 0 {
			pos = st.Pos
		}
		si, ok := cc.sinks[ru.Sink]
		if !ok {
			cc.errorf(pos, wp+".sink", "no sink named %q%s; sinks: %s", ru.Sink, didYouMean(ru.Sink, cc.sinkNames), strings.Join(cc.sinkNames, ", "))
		}
		var cond func(*rt) bool
		if ru.When != nil {
			n := cc.expr(wp+".when", *ru.When, pos)
			if n == nil {
				continue
			}
			if n.t.k != kBool || n.t.null {
				cc.exprErr(wp+".when", *ru.When, pos, &exprError{pos: -1, msg: fmt.Sprintf("a route condition must be Bool, got %s", n.t)})
				continue
			}
			cond = n.b
		}
		if topic := ru.Topic; topic != "" {
			when := cond
			cond = func(r *rt) bool { return r.topic == topic && (when == nil || when(r)) }
		}
		rules = append(rules, rule{cond: cond, sink: si, path: wp + ".when"})
	}
	unmatched := routeFail
	switch u := st.Route.Unmatched; u {
	case "skip":
		unmatched = routeSkip
	case "fail", "":
	default:
		si, ok := cc.sinks[u]
		if !ok {
			cc.errorf(st.Pos, rp+".unmatched", "must be skip, fail or a sink name (%s); got %q%s",
				strings.Join(cc.sinkNames, ", "), u, didYouMean(u, append([]string{"skip", "fail"}, cc.sinkNames...)))
		}
		unmatched = si
	}
	cc.add(op{path: rp, run: func(r *rt) bool {
		for k := range rules {
			ru := &rules[k]
			match := ru.cond == nil || ru.cond(r)
			if r.err != nil {
				if r.err.Step == "" {
					r.err.Step = ru.path
				}
				return false
			}
			if match {
				r.sink = ru.sink
				return true
			}
		}
		switch unmatched {
		case routeSkip:
			return false
		case routeFail:
			r.fail(ReasonUnroutable, rp, errors.New("no route rule matched the row"))
			return false
		}
		r.sink = unmatched
		return true
	}})
}

// store builds the op that evaluates n into slot s.
func store(s int, n *node) func(*rt) bool {
	if n.t.null {
		isNull := n.isNull
		val := store(s, &node{t: vtype{k: n.t.k}, b: n.b, i: n.i, u: n.u, f: n.f, s: n.s})
		return func(r *rt) bool {
			null := isNull(r)
			r.slots[s].null = null
			if !null {
				val(r)
			}
			return true
		}
	}
	switch n.t.k {
	case kBool:
		f := n.b
		return func(r *rt) bool { r.slots[s].b = f(r); return true }
	case kInt, kTime:
		f := n.i
		return func(r *rt) bool { r.slots[s].i = f(r); return true }
	case kUInt:
		f := n.u
		return func(r *rt) bool { r.slots[s].i = int64(f(r)); return true }
	case kFloat:
		f := n.f
		return func(r *rt) bool { r.slots[s].f = f(r); return true }
	case kString:
		f := n.s
		return func(r *rt) bool { r.slots[s].s = f(r); return true }
	}
	return func(r *rt) bool { return true }
}

// slotNode reads slot s of type t.
func slotNode(s int, t vtype) *node {
	n := &node{t: t, slotted: !t.null && t.k != kNull, slot: s}
	switch t.k {
	case kNull:
		n.isNull = func(*rt) bool { return true }
		return n
	case kBool:
		n.b = func(r *rt) bool { return r.slots[s].b }
	case kInt, kTime:
		n.i = func(r *rt) int64 { return r.slots[s].i }
	case kUInt:
		n.u = func(r *rt) uint64 { return uint64(r.slots[s].i) }
	case kFloat:
		n.f = func(r *rt) float64 { return r.slots[s].f }
	case kString:
		n.s = func(r *rt) string { return r.slots[s].s }
	}
	if t.null {
		n.isNull = func(r *rt) bool { return r.slots[s].null }
	}
	return n
}

func (cc *chainCompiler) isElem(name string) bool {
	return cc.flatten != "" && (name == cc.flatten || strings.HasPrefix(name, cc.flatten+"."))
}

// lookup resolves a field name at the current step, or says why it cannot.
func (cc *chainCompiler) lookup(name string) (*fieldRef, string) {
	if ref, ok := cc.scope[name]; ok {
		return ref, ""
	}
	if why, ok := cc.gone[name]; ok {
		return nil, fmt.Sprintf("field %q was %s", name, why)
	}
	k, staged := cc.index[name]
	if cc.isElem(name) {
		if !cc.flattened {
			return nil, fmt.Sprintf("field %q is a field of the elements of %q: it can be read only after the flatten step (transform[%d])",
				name, cc.flatten, cc.flatStep)
		}
		if staged {
			t := cc.in.Types[k].Base()
			if t.Kind != chunk.KindArray {
				return nil, fmt.Sprintf("field %q is staged as %s, not as an array of the elements of %q", name, t.Name, cc.flatten)
			}
			ref := &fieldRef{name: name, src: true, col: k, elem: true, typ: t.Elem}
			cc.scope[name] = ref
			return ref, ""
		}
	} else if staged {
		ref := &fieldRef{name: name, src: true, col: k, typ: cc.in.Types[k]}
		cc.scope[name] = ref
		return ref, ""
	}
	return nil, fmt.Sprintf("unknown field %q%s", name, didYouMean(name, cc.candidates()))
}

func (cc *chainCompiler) candidates() []string {
	var out []string
	for n := range cc.scope {
		out = append(out, n)
	}
	for _, n := range cc.in.Names {
		if _, gone := cc.gone[n]; gone {
			continue
		}
		if cc.isElem(n) && !cc.flattened {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// bind returns the r.cols slot of a staging column.
func (cc *chainCompiler) bind(col int, elem, inner bool) int {
	b := binding{col: col, elem: elem, inner: inner}
	if s, ok := cc.binds[b]; ok {
		return s
	}
	s := len(cc.binds)
	cc.binds[b] = s
	return s
}

func idx(elem bool) int {
	if elem {
		return 1
	}
	return 0
}

// field implements scope for the expression compiler.
func (cc *chainCompiler) field(name string, pos int) (*node, *exprError) {
	ref, msg := cc.lookup(name)
	if ref == nil {
		return nil, &exprError{pos: pos, msg: msg}
	}
	if ref.bad {
		return nil, &exprError{pos: pos, msg: "field " + name + " is invalid", quiet: true}
	}
	n, err := cc.readRef(ref)
	if err != nil {
		return nil, &exprError{pos: pos, msg: err.Error()}
	}
	n.pos = pos
	return n, nil
}

// readRef builds the node reading a field.
func (cc *chainCompiler) readRef(ref *fieldRef) (*node, error) {
	if !ref.src {
		return slotNode(ref.slot, ref.t), nil
	}
	vt, ok := readable(ref.typ)
	if !ok {
		if ref.typ.Base().Kind == chunk.KindArray && !ref.elem {
			return nil, fmt.Errorf("field %q is an array (%s): expressions read one element at a time after flatten: %s", ref.name, ref.typ.Name, ref.name)
		}
		return nil, fmt.Errorf("field %q is %s, which expressions cannot read", ref.name, ref.typ.Name)
	}
	w := idx(ref.elem)
	s := cc.bind(ref.col, ref.elem, false)
	n := &node{t: vt}
	base := ref.typ.Base()
	if base.Kind == chunk.KindNullable {
		inner := cc.bind(ref.col, ref.elem, true)
		readValue(n, base.Elem.Base(), inner, w)
		n.isNull = func(r *rt) bool { return r.cols[s].(*chunk.Nullable).Nulls[r.at[w]] != 0 }
		return n, nil
	}
	readValue(n, base, s, w)
	return n, nil
}

// expr parses and compiles one expression, reporting its errors.
func (cc *chainCompiler) expr(path string, e config.Expr, fallback config.Pos) *node {
	tree, perr := parseExpr(e.Text)
	if perr != nil {
		cc.exprErr(path, e, fallback, perr)
		return nil
	}
	n, err := (&compiler{scope: cc}).compile(tree)
	if err != nil {
		if !err.quiet {
			cc.exprErr(path, e, fallback, err)
		}
		return nil
	}
	return n
}

func (cc *chainCompiler) exprErr(path string, e config.Expr, fallback config.Pos, err *exprError) {
	pos := e.Pos
	if pos.Line == 0 {
		pos = fallback
	}
	cc.errs = append(cc.errs, &CompileError{Pos: pos, Path: path, Msg: exprMsg(e.Text, err)})
}

func (cc *chainCompiler) outputs(outs []Output) {
	for _, o := range outs {
		plan := &outPlan{name: o.Name, key: o.ShardKey, weights: o.Weights}
		cc.prog.outs = append(cc.prog.outs, plan)
		if o.Schema == nil || len(o.Fields) != len(o.Schema.Names) || len(o.Schema.Types) != len(o.Schema.Names) {
			cc.errorf(config.Pos{}, fmt.Sprintf("sink %q", o.Name), "Fields must name one field per column of Schema")
			continue
		}
		plan.cols = make([]appender, len(o.Fields))
		plan.src = make([]int, len(o.Fields))
		for ci, fname := range o.Fields {
			plan.src[ci] = -1
			ct := o.Schema.Types[ci]
			col := o.Schema.Names[ci]
			where := fmt.Sprintf("sink %q column %s (%s)", o.Name, col, ct.Name)
			if fname == "" {
				plan.cols[ci] = func(r *rt, dst chunk.Column) { dst.AppendDefault() }
				continue
			}
			ref, msg := cc.lookup(fname)
			if ref == nil {
				cc.errorf(config.Pos{}, where, "%s", msg)
				continue
			}
			if ref.bad {
				continue
			}
			app, err := cc.appender(ref, ct, where)
			if err != nil {
				if !ref.src {
					cc.errorf(ref.pos, ref.path, "the %s result cannot go into column %s (%s) of sink %q: %v", ref.t, col, ct.Name, o.Name, err)
				} else {
					cc.errorf(config.Pos{}, where, "field %q (%s): %v", fname, ref.typ.Name, err)
				}
				continue
			}
			plan.cols[ci] = app
			if ref.src && !ref.elem {
				plan.src[ci] = ref.col
			}
		}
		if o.ShardKey >= 0 {
			where := fmt.Sprintf("sink %q", o.Name)
			if o.ShardKey >= len(o.Schema.Types) {
				cc.errorf(config.Pos{}, where, "shard key column %d does not exist", o.ShardKey)
				continue
			}
			if len(o.Weights) == 0 {
				cc.errorf(config.Pos{}, where, "a sharded output needs the shard weights")
			}
			kt := o.Schema.Types[o.ShardKey]
			h, err := KeyHasher(kt)
			if err != nil {
				cc.errorf(config.Pos{}, where, "shard key column %s: %v", o.Schema.Names[o.ShardKey], err)
				continue
			}
			plan.hash, plan.keyType = h, kt
		}
	}
}

// appender builds the writer of a field into an output column: a straight
// copy for a staged field of the column's type, else a conversion of its
// value.
func (cc *chainCompiler) appender(ref *fieldRef, ct *chunk.Type, where string) (appender, error) {
	if ref.src && sameLayout(ref.typ, ct) {
		if app, err := copyAppender(ct, cc.bind(ref.col, ref.elem, false), idx(ref.elem)); err == nil {
			return app, nil
		}
	}
	if ref.src {
		if _, ok := readable(ref.typ); !ok {
			return nil, fmt.Errorf("only a column of the same type can receive it")
		}
	}
	n, err := cc.readRef(ref)
	if err != nil {
		return nil, err
	}
	return convert(n, ct, where, cc.ranges)
}
