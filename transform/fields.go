package transform

import (
	"fmt"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// Field is a field of the rows the chain emits, as FieldsOut derives it.
type Field struct {
	Name string
	// Type is the field's type when it is a source field copied through
	// (for a flattened element field, the element's type); nil for a
	// field a set step computes.
	Type *chunk.Type
	// Kind and Nullable type a computed field: Int64, UInt64, Float64,
	// String, Bool or Time.
	Kind     string
	Nullable bool
	// Group is the array of records the field is an element field of
	// ("events" for "events.kind"), while it is not flattened: such
	// fields are one Nested structure.
	Group string
}

// FieldsOut derives the fields of the rows the chain emits from the
// fields of its input, in order: the source fields in their order (a
// flattened array's element fields become the element type), a rename in
// place, a set step's new fields at the end, dropped fields left out.
// in holds every source field (an array of records in Nested layout,
// "events.kind Array(String)"); hidden are fields the chain may read
// but that are not fields of the rows by themselves (the fields of a
// record that is one Tuple field): one renamed is added at the end.
// groups maps a Nested-layout field to its array of records. sinks are
// the sinks' names, for route steps.
func FieldsOut(steps []config.Step, in *chunk.Schema, hidden map[string]bool, groups map[string]string, sinks []string) ([]Field, error) {
	outs := make([]Output, len(sinks))
	for i, s := range sinks {
		outs[i] = Output{Name: s}
	}
	cc := newChainCompiler(in, outs)
	order := make([]string, 0, len(in.Names))
	group := map[string]string{}
	for _, n := range in.Names {
		if hidden[n] {
			continue
		}
		order = append(order, n)
		if g := groups[n]; g != "" {
			group[n] = g
		}
	}
	remove := func(name string) {
		out := order[:0]
		for _, n := range order {
			if n != name && !strings.HasPrefix(n, name+".") {
				out = append(out, n)
			}
		}
		order = out
	}
	has := func(name string) bool {
		for _, n := range order {
			if n == name {
				return true
			}
		}
		return false
	}
	// The steps one at a time, so that the order follows each.
	flatten, _ := findFlatten(steps, cc.errorf)
	for i, st := range steps {
		one := make([]config.Step, i+1)
		copy(one, steps[:i+1])
		switch {
		case st.Flatten != "" && st.Flatten == flatten:
			for _, n := range order {
				if n == flatten || strings.HasPrefix(n, flatten+".") {
					delete(group, n)
				}
			}
		case len(st.Set) > 0:
			for _, a := range st.Set {
				if a.Field != "" && !has(a.Field) {
					order = append(order, a.Field)
				}
				delete(group, a.Field)
			}
		case len(st.Rename) > 0:
			pos := map[string]int{}
			for k, n := range order {
				pos[n] = k
			}
			next := append([]string(nil), order...)
			var added []string
			for old, nw := range st.Rename {
				if k, ok := pos[old]; ok {
					next[k] = nw
				} else if hidden[old] {
					added = append(added, nw)
				}
				delete(group, nw)
				delete(group, old)
			}
			// A rename onto an existing field replaces it: keep the first.
			seen := map[string]bool{}
			order = order[:0]
			for _, n := range append(next, added...) {
				if !seen[n] {
					seen[n] = true
					order = append(order, n)
				}
			}
		case len(st.Drop) > 0:
			for _, n := range st.Drop {
				remove(n)
			}
		}
	}
	cc.steps(steps)
	if len(cc.errs) > 0 {
		return nil, cc.errs
	}
	out := make([]Field, 0, len(order))
	for _, n := range order {
		ref, msg := cc.lookup(n)
		if ref == nil {
			return nil, fmt.Errorf("field %q: %s", n, msg)
		}
		if ref.bad {
			continue
		}
		f := Field{Name: n, Group: group[n]}
		if ref.src {
			f.Type = ref.typ
		} else {
			f.Kind, f.Nullable = kindNames[ref.t.k], ref.t.null
			if ref.t.k == kNull {
				f.Kind, f.Nullable = "String", true
			}
		}
		out = append(out, f)
	}
	return out, nil
}
