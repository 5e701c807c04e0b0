package avro

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// avroBuilder compiles the steps of a writer schema.
type avroBuilder struct {
	s        *chunk.Schema
	rg       chunk.ServerRanges // the server's Date and DateTime ranges
	byPath   map[string][]int   // field path -> columns reading it
	prefixes map[string]bool    // every proper prefix of a field path
	used     []bool             // column fed by a writer field
	skips    map[havro.Schema]*avroSkip
	errs     []error
	// elem > 0 while compiling the records of an array that feeds a
	// Nested structure.
	elem int
	// unfed are columns of Nested structures that no field of the
	// records feeds (validate_schema full lists them).
	unfed []avroUnfed
}

// avroUnfed is a column of a Nested structure fed by array, whose
// records have no field for it.
type avroUnfed struct {
	col   int
	array string
}

// record returns the steps of the fields of rec, whose path is prefix
// ("" or "a.b."), resolved to reader record rr when it is not nil.
func (b *avroBuilder) record(rec, rr *havro.RecordSchema, prefix string) []avroStep {
	var steps []avroStep
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
	}
	for fi, f := range rec.Fields() {
		name, ft := f.Name(), avroDeref(f.Type())
		var rt havro.Schema // the reader's type of the field
		if rr != nil {
			rf := resolved[fi]
			if rf == nil {
				// The reader lacks it: ignored, even where a column has
				// its name.
				steps = append(steps, avroStep{path: prefix + name, skip: b.skip(ft)})
				continue
			}
			name, rt = rf.Name(), rf.Type()
		}
		path := prefix + name
		cols := b.byPath[path]
		under := b.prefixes[path]
		sub, null, recIdx := recordOf(ft)
		for _, ci := range cols {
			b.used[ci] = true
		}
		if sub != nil {
			// A record goes into Tuple columns, or its fields feed columns
			// of their own ("a.b"), or both.
			var tuples []int
			for _, ci := range cols {
				switch t := b.target(ci); {
				case t == nil:
					// Not an Array, inside the records of an array:
					// nested reported it.
				case t.Base().Kind == chunk.KindTuple:
					tuples = append(tuples, ci)
				default:
					b.fail(path, ft, ci, errors.New("a whole record cannot go into a column other than a Tuple; address its fields as "+strconv.Quote(path+".name")))
				}
			}
			if len(tuples) > 0 {
				st := b.fieldStep(path, ft, rt, tuples)
				if !under {
					steps = append(steps, st)
					continue
				}
				steps = append(steps, avroStep{path: path, peek: st.targets})
			}
			switch {
			case !under:
				steps = append(steps, avroStep{path: path, skip: b.skip(ft)})
			default:
				inner := b.record(sub, readerRecord(sub, rt), path+".")
				if null < 0 {
					steps = append(steps, inner...)
					break
				}
				o := &avroOptional{null: null, rec: recIdx, steps: inner, absent: b.elem == 0}
				collectCols(inner, func(ci int) { o.cols = append(o.cols, avroDefault{col: ci, def: b.def(ci)}) })
				steps = append(steps, avroStep{path: path, opt: o})
			}
			continue
		}
		if under {
			if arr, an, ai := arrayOfRecords(ft); arr != nil {
				// A Nested structure: columns path.x take field x of
				// every record of the array (and columns named path
				// take the array itself).
				if len(cols) > 0 {
					steps = append(steps, avroStep{path: path, peek: b.fieldStep(path, ft, rt, cols).targets})
				}
				steps = append(steps, b.nested(path, ft, rt, arr, an, ai))
				continue
			}
			for ci, p := range b.fieldPaths() {
				if strings.HasPrefix(p, path+".") {
					b.used[ci] = true
					b.fail(p, ft, ci, fmt.Errorf("field %q is %s, not a record or an array of records", path, typeName(ft)))
				}
			}
		}
		if len(cols) == 0 {
			steps = append(steps, avroStep{path: path, skip: b.skip(ft)})
			continue
		}
		steps = append(steps, b.fieldStep(path, ft, rt, cols))
	}
	if rr != nil {
		// Reader fields the writer lacks take the reader's default.
		have := make(map[*havro.Field]bool, len(resolved))
		for _, rf := range resolved {
			have[rf] = true
		}
		for _, rf := range rr.Fields() {
			if have[rf] || !rf.HasDefault() {
				continue
			}
			if st, ok := b.readerDefault(prefix, rf); ok {
				steps = append(steps, st)
			}
		}
	}
	return steps
}

// fieldStep compiles the step of a field of writer type ft (and reader
// type rt, nil without a reader schema) that goes into columns cols.
func (b *avroBuilder) fieldStep(path string, ft, rt havro.Schema, cols []int) avroStep {
	st := avroStep{path: path}
	for _, ci := range cols {
		t := b.target(ci)
		if t == nil {
			continue // not an Array, inside the records of an array: nested reported it
		}
		set, err := avroCompile(ft, rt, t, b.rg)
		if err != nil {
			b.fail(path, ft, ci, err)
			continue
		}
		if b.elem > 0 {
			elem := set
			set = func(r *avroReader, col chunk.Column) *decode.Error { return elem(r, col.(*chunk.Array).Inner) }
		}
		st.targets = append(st.targets, avroTarget{col: ci, set: set})
	}
	return st
}

// target is the type a field's values go into for column ci: the column's
// type or, inside the records of an array that feeds a Nested structure,
// the column's element type (nil when the column is not an Array).
func (b *avroBuilder) target(ci int) *chunk.Type {
	t := b.s.Types[ci]
	if b.elem == 0 {
		return t
	}
	if t.Kind != chunk.KindArray {
		return nil
	}
	return t.Elem
}

// def is the default for column ci where a value is missing: the column's
// or, inside the records of an array, one element of the column's type
// (appended to the Array's elements).
func (b *avroBuilder) def(ci int) decode.Defaulter {
	if b.elem == 0 {
		return nil
	}
	return b.elemDef(ci)
}

func (b *avroBuilder) elemDef(ci int) decode.Defaulter {
	t := b.s.Types[ci]
	if t.Kind != chunk.KindArray {
		return func(chunk.Column) {} // refused when compiled
	}
	return func(col chunk.Column) { col.(*chunk.Array).Inner.AppendDefault() }
}

// nested compiles the step of field path, an array of records rec (or a
// [null, array] union: null and arr are the branches, null -1 without),
// whose records' fields feed the Array columns path.x; rt is the reader's
// type of the field (nil without a reader schema).
func (b *avroBuilder) nested(path string, ft, rt havro.Schema, rec *havro.RecordSchema, null, arr int64) avroStep {
	var group []int
	for ci, p := range b.fieldPaths() {
		if !strings.HasPrefix(p, path+".") {
			continue
		}
		b.used[ci] = true
		switch {
		case b.elem > 0:
			b.fail(p, ft, ci, fmt.Errorf("field %q is an array of records inside the records of an array: their fields cannot feed columns", path))
		case b.s.Types[ci].Kind != chunk.KindArray:
			b.fail(p, ft, ci, fmt.Errorf("field %q is %s: the columns its records' fields feed must be Arrays", path, typeName(ft)))
		default:
			group = append(group, ci)
		}
	}
	if b.elem > 0 {
		return avroStep{path: path, skip: b.skip(ft)}
	}
	var rr *havro.RecordSchema
	if rt != nil {
		wt := ft
		if null >= 0 {
			wt = ft.(*havro.UnionSchema).Types()[arr]
		}
		if wa, ok := avroDeref(wt).(*havro.ArraySchema); ok {
			rr = readerRecord(rec, readerItems(wa, rt))
		}
	}
	b.elem++
	inner := b.record(rec, rr, path+".")
	b.elem--
	fed := make(map[int]bool)
	collectCols(inner, func(ci int) { fed[ci] = true })
	o := &avroNested{null: null, arr: arr, itemMin: minSize(rec, nil), steps: inner, cols: group}
	for _, ci := range group {
		if !fed[ci] {
			o.fill = append(o.fill, avroDefault{col: ci, def: b.elemDef(ci)})
			b.unfed = append(b.unfed, avroUnfed{col: ci, array: path})
		}
	}
	return avroStep{path: path, nest: o}
}

// arrayOfRecords returns the record of the items of s, an array of
// records or a [null, array of records] union, with the union's branch
// indices of null and the array (null is -1 for a plain array); rec is
// nil when s is neither.
func arrayOfRecords(s havro.Schema) (rec *havro.RecordSchema, null, idx int64) {
	items := func(s havro.Schema) *havro.RecordSchema {
		if a, ok := avroDeref(s).(*havro.ArraySchema); ok {
			r, _ := avroDeref(a.Items()).(*havro.RecordSchema)
			return r
		}
		return nil
	}
	if r := items(s); r != nil {
		return r, -1, 0
	}
	u, ok := s.(*havro.UnionSchema)
	if !ok || !u.Nullable() {
		return nil, -1, 0
	}
	n, t := u.Indices()
	if r := items(u.Types()[t]); r != nil {
		return r, int64(n), int64(t)
	}
	return nil, -1, 0
}

// fieldPaths returns the field path of each column ("" for none).
func (b *avroBuilder) fieldPaths() []string {
	out := make([]string, len(b.s.Types))
	for p, cols := range b.byPath {
		for _, ci := range cols {
			out[ci] = p
		}
	}
	return out
}

func (b *avroBuilder) fail(path string, ft havro.Schema, col int, err error) {
	b.errs = append(b.errs, fmt.Errorf("field %q (%s) -> column %s (%s): %w",
		path, typeName(ft), b.s.Names[col], b.s.Types[col].Name, err))
}

// collectCols calls f for every column the steps feed.
func collectCols(steps []avroStep, f func(int)) {
	for _, st := range steps {
		for _, t := range st.targets {
			f(t.col)
		}
		for _, t := range st.peek {
			f(t.col)
		}
		if st.opt != nil {
			collectCols(st.opt.steps, f)
		}
		if st.nest != nil {
			for _, ci := range st.nest.cols {
				f(ci)
			}
		}
		if st.fill != nil {
			collectCols(st.fill.steps, f)
		}
	}
}

// recordOf returns the record s is, or the record of a [null, record]
// union with the branch indices of null and the record; null is -1 for a
// plain record and rec is nil when s is neither.
func recordOf(s havro.Schema) (rec *havro.RecordSchema, null, idx int64) {
	if r, ok := s.(*havro.RecordSchema); ok {
		return r, -1, 0
	}
	u, ok := s.(*havro.UnionSchema)
	if !ok || !u.Nullable() {
		return nil, -1, 0
	}
	n, t := u.Indices()
	if r, ok := avroDeref(u.Types()[t]).(*havro.RecordSchema); ok {
		return r, int64(n), int64(t)
	}
	return nil, -1, 0
}

func avroDeref(s havro.Schema) havro.Schema {
	if r, ok := s.(*havro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func avroLogical(s havro.Schema) havro.LogicalSchema {
	if l, ok := s.(havro.LogicalTypeSchema); ok {
		if ls := l.Logical(); ls != nil {
			return ls
		}
	}
	return nil
}

func avroLogicalType(s havro.Schema) havro.LogicalType {
	if l := avroLogical(s); l != nil {
		return l.Type()
	}
	return ""
}

// typeName names a writer type for messages: long (timestamp-millis),
// array<string>, [null, string], record a.B, ...
func typeName(s havro.Schema) string {
	s = avroDeref(s)
	switch t := s.(type) {
	case *havro.RecordSchema:
		return "record " + t.FullName()
	case *havro.EnumSchema:
		return "enum " + t.FullName()
	case *havro.FixedSchema:
		n := "fixed " + t.FullName() + "(" + strconv.Itoa(t.Size()) + ")"
		if l := avroLogicalType(t); l != "" {
			n += " (" + string(l) + ")"
		}
		return n
	case *havro.ArraySchema:
		return "array<" + typeName(t.Items()) + ">"
	case *havro.MapSchema:
		return "map<" + typeName(t.Values()) + ">"
	case *havro.UnionSchema:
		parts := make([]string, len(t.Types()))
		for i, b := range t.Types() {
			parts[i] = typeName(b)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if l := avroLogicalType(s); l != "" {
		return string(s.Type()) + " (" + string(l) + ")"
	}
	return string(s.Type())
}
