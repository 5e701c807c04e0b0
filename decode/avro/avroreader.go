package avro

import (
	"fmt"
	"slices"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Resolution of writer schemas to a reader schema (Options.ReaderSchema).
//
// The builder walks the writer schema and the reader schema side by side:
// every writer record is paired with the reader record at the same place
// (the record itself, the items of an array, the values of a map, the
// branch of a union: the reader's branch of the writer branch's type, for
// records the one of the same name or alias, or the only record). In a
// paired record, at every level:
//
//   - a writer field is the reader field of the same name or, failing that,
//     the first reader field that has the writer's name among its aliases;
//     field paths ("a.b") and named tuple elements use the reader's names;
//   - a writer field the reader lacks is skipped, even where a column has
//     its name;
//   - a reader field the writer lacks takes the reader's default, when it
//     has one: the default is encoded once in Avro binary with the reader's
//     type, and decoded into the columns it feeds by steps compiled like the
//     writer's, at every record (an avroFill step). A default is thus
//     converted exactly as a value of the field would be (logical types,
//     bytes, enums, records into Tuples, arrays of records into Nested
//     columns, fields of a record default into "a.b" columns). A reader
//     field without a default leaves its columns to their own default.
//
// Type promotions (int to long, float or double; long to float or double;
// float to double; string and bytes) need nothing: every setter is compiled
// for the writer's type and converts it to the column's.

// avroFill is the default of a reader field the writer lacks: its Avro
// encoding, and the steps that decode it into the columns it feeds.
type avroFill struct {
	data  []byte
	steps []avroStep
}

// avroConst is the default of a reader field the writer lacks that goes
// into one element of a Tuple: its Avro encoding and its setter.
type avroConst struct {
	data []byte
	set  avroSetter
}

// apply decodes the default into col, then restores r to the datum.
func (k *avroConst) apply(r *avroReader, col chunk.Column) *decode.Error {
	buf, pos, left := r.buf, r.pos, r.emptyLeft
	r.buf, r.pos, r.emptyLeft = k.data, 0, maxEmptyItems
	e := k.set(r, col)
	r.buf, r.pos, r.emptyLeft = buf, pos, left
	return e
}

// newAvroConst compiles the default of reader field rf into type t and
// checks once that it fits.
func newAvroConst(rf *havro.Field, t *chunk.Type, rg chunk.ServerRanges) (*avroConst, error) {
	data, err := havro.Marshal(rf.Type(), rf.Default())
	if err != nil {
		return nil, fmt.Errorf("reader default of field %q: %w", rf.Name(), err)
	}
	set, err := avroCompile(rf.Type(), nil, t, rg)
	if err != nil {
		return nil, fmt.Errorf("reader default of field %q: %w", rf.Name(), err)
	}
	k := &avroConst{data: data, set: set}
	col, err := chunk.NewColumn(t)
	if err != nil {
		return nil, err
	}
	var r avroReader
	if e := k.apply(&r, col); e != nil {
		return nil, fmt.Errorf("reader default of field %q: %w", rf.Name(), e)
	}
	return k, nil
}

// readerDefault returns the step that fills, from the default of reader
// field rf (which the writer's record at prefix lacks), the columns it
// feeds; ok is false when no column reads the field or its default is
// refused (recorded in b.errs).
func (b *avroBuilder) readerDefault(prefix string, rf *havro.Field) (st avroStep, ok bool) {
	path := prefix + rf.Name()
	if len(b.byPath[path]) == 0 && !b.prefixes[path] {
		return avroStep{}, false
	}
	data, err := havro.Marshal(rf.Type(), rf.Default())
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("reader default of field %q: %w", path, err))
		return avroStep{}, false
	}
	// The default is a record of one field, the reader's, compiled like a
	// writer's record.
	f, err := havro.NewField(rf.Name(), rf.Type())
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("reader default of field %q: %w", path, err))
		return avroStep{}, false
	}
	rec, err := havro.NewRecordSchema("etl_default", "", []*havro.Field{f})
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("reader default of field %q: %w", path, err))
		return avroStep{}, false
	}
	errs := len(b.errs)
	steps := b.record(rec, nil, prefix)
	if len(b.errs) > errs {
		for i := errs; i < len(b.errs); i++ {
			b.errs[i] = fmt.Errorf("reader default: %w", b.errs[i])
		}
		return avroStep{}, false
	}
	// Decode it once: a default that does not fit its columns is refused
	// now, not at every record.
	c, err := chunk.New(b.s)
	if err != nil {
		b.errs = append(b.errs, err)
		return avroStep{}, false
	}
	a := &Decoder{names: b.s.Names, types: make([]string, len(b.s.Types))}
	for i, t := range b.s.Types {
		a.types[i] = t.Name
	}
	a.r.buf, a.r.emptyLeft = data, maxEmptyItems
	if e := a.run(steps, c); e != nil {
		b.errs = append(b.errs, fmt.Errorf("reader default: %w", e))
		return avroStep{}, false
	}
	return avroStep{path: path, fill: &avroFill{data: data, steps: steps}}, true
}

// resolve returns, for each field of writer record w, the field of
// reader record r it fills (nil: the reader lacks it): the reader field of
// the same name, else the first reader field not yet filled that has the
// writer's name among its aliases.
func resolve(w, r *havro.RecordSchema) []*havro.Field {
	out := make([]*havro.Field, len(w.Fields()))
	byName := make(map[string]int, len(w.Fields()))
	for i, f := range w.Fields() {
		byName[f.Name()] = i
	}
	taken := make(map[*havro.Field]bool)
	for _, rf := range r.Fields() {
		if i, ok := byName[rf.Name()]; ok {
			out[i], taken[rf] = rf, true
		}
	}
	for _, rf := range r.Fields() {
		if taken[rf] {
			continue
		}
		for _, a := range rf.Aliases() {
			if i, ok := byName[a]; ok && out[i] == nil {
				out[i], taken[rf] = rf, true
				break
			}
		}
	}
	return out
}

// readerIndex returns the position of rf among r's fields.
func readerIndex(r *havro.RecordSchema, rf *havro.Field) int {
	return slices.Index(r.Fields(), rf)
}

// readerNamed returns r's field called name, or nil.
func readerNamed(r *havro.RecordSchema, name string) *havro.Field {
	for _, f := range r.Fields() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// pair returns the part of reader type r that pairs with writer type
// w: r itself, or the branch of a reader union that has w's type (a record
// of the same name or alias, or the only one). Nil when there is none, or
// no reader schema.
func pair(w, r havro.Schema) havro.Schema {
	if r == nil {
		return nil
	}
	w, r = avroDeref(w), avroDeref(r)
	u, ok := r.(*havro.UnionSchema)
	if !ok {
		return r
	}
	if _, ok := w.(*havro.UnionSchema); ok {
		return r // each writer branch is paired on its own
	}
	var match havro.Schema
	n := 0
	for _, br := range u.Types() {
		br = avroDeref(br)
		if br.Type() != w.Type() {
			continue
		}
		if wr, ok := w.(*havro.RecordSchema); ok && sameName(wr, br.(*havro.RecordSchema)) {
			return br
		}
		match, n = br, n+1
	}
	if n == 1 {
		return match
	}
	return nil
}

// sameName reports whether reader record r is writer record w by name
// or alias, with or without namespace.
func sameName(w, r *havro.RecordSchema) bool {
	if w.FullName() == r.FullName() || w.Name() == r.Name() {
		return true
	}
	return slices.Contains(r.Aliases(), w.FullName()) || slices.Contains(r.Aliases(), w.Name())
}

// readerRecord returns the reader record paired with writer record w
// in reader type r, or nil.
func readerRecord(w *havro.RecordSchema, r havro.Schema) *havro.RecordSchema {
	rr, _ := pair(w, r).(*havro.RecordSchema)
	return rr
}

// readerItems returns the items of the reader array paired with
// writer array w in reader type r, or nil.
func readerItems(w *havro.ArraySchema, r havro.Schema) havro.Schema {
	if ra, ok := pair(w, r).(*havro.ArraySchema); ok {
		return ra.Items()
	}
	return nil
}

// readerValues returns the values of the reader map paired with
// writer map w in reader type r, or nil.
func readerValues(w *havro.MapSchema, r havro.Schema) havro.Schema {
	if rm, ok := pair(w, r).(*havro.MapSchema); ok {
		return rm.Values()
	}
	return nil
}
