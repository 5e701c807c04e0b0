package avro

import (
	"errors"
	"fmt"
	"math"
	"slices"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setArray reads an array's blocks into an Array column.
func setArray(elem avroSetter, elemMin int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		a := col.(*chunk.Array)
		for {
			n, size, e := r.block(elemMin)
			if e != nil {
				return e
			}
			if n == 0 {
				break
			}
			start := r.pos
			for ; n > 0; n-- {
				if e := elem(r, a.Inner); e != nil {
					return e
				}
			}
			if size >= 0 && int64(r.pos-start) != size {
				return r.corrupt(fmt.Sprintf("array block of %d bytes holds %d", size, r.pos-start))
			}
		}
		a.EndRow()
		return nil
	}
}

// tupleOp is one field of a record read into a tuple: into element
// elem with set, or skipped.
type tupleOp struct {
	elem int
	set  avroSetter
	skip *avroSkip
}

// compileTuple compiles a record into a Tuple: its fields in order
// into the elements of an unnamed tuple (the counts must agree), or by
// name into a named tuple's (fields the tuple lacks are skipped, elements
// the record lacks get their default). With reader record rr, the record
// is the reader's: its fields, in its order and by its names; writer
// fields it lacks are skipped, and its fields the writer lacks take their
// reader default (else the element's default).
func compileTuple(rec, rr *havro.RecordSchema, t *chunk.Type, rg chunk.ServerRanges) (avroSetter, error) {
	fields := rec.Fields()
	names := t.ElemNames
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
		if names == nil && len(rr.Fields()) != len(t.Elems) {
			return nil, fmt.Errorf("reader %s has %d fields, %s has %d elements", typeName(rr), len(rr.Fields()), t.Name, len(t.Elems))
		}
	} else if names == nil && len(fields) != len(t.Elems) {
		return nil, fmt.Errorf("%s has %d fields, %s has %d elements", typeName(rec), len(fields), t.Name, len(t.Elems))
	}
	var (
		ops    []tupleOp
		errs   []error
		filled = make([]bool, len(t.Elems))
		skips  *avroBuilder
	)
	skip := func(f *havro.Field) {
		if skips == nil {
			skips = &avroBuilder{skips: make(map[havro.Schema]*avroSkip)}
		}
		ops = append(ops, tupleOp{skip: skips.skip(f.Type())})
	}
	for i, f := range fields {
		name, j := f.Name(), i
		var rt havro.Schema
		if rr != nil {
			rf := resolved[i]
			if rf == nil {
				skip(f)
				continue
			}
			name, j, rt = rf.Name(), readerIndex(rr, rf), rf.Type()
		}
		if names != nil {
			if j = slices.Index(names, name); j < 0 {
				skip(f)
				continue
			}
		}
		set, err := avroCompile(f.Type(), rt, t.Elems[j], rg)
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q -> %s: %w", name, decode.TupleLabel(names, j), err))
			continue
		}
		ops = append(ops, tupleOp{elem: j, set: set})
		filled[j] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var missing []avroDefault
	for j, ok := range filled {
		if ok {
			continue
		}
		m := avroDefault{col: j}
		if rr != nil {
			var rf *havro.Field
			if names != nil {
				rf = readerNamed(rr, names[j])
			} else {
				rf = rr.Fields()[j]
			}
			if rf != nil && rf.HasDefault() {
				k, err := newAvroConst(rf, t.Elems[j], rg)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", decode.TupleLabel(names, j), err)
				}
				m.konst = k
			}
		}
		if m.konst == nil {
			if err := decode.Check(t.Elems[j]); err != nil {
				return nil, err
			}
		}
		missing = append(missing, m)
	}
	return func(r *avroReader, col chunk.Column) *decode.Error {
		tc := col.(*chunk.Tuple)
		for i := range ops {
			op := &ops[i]
			if op.skip != nil {
				if e := r.skip(op.skip, 0); e != nil {
					return e
				}
				continue
			}
			if e := op.set(r, tc.Elems[op.elem]); e != nil {
				e.Err = fmt.Errorf("%s: %w", decode.TupleLabel(names, op.elem), e.Err)
				return e
			}
		}
		for _, m := range missing {
			if m.konst != nil {
				// Checked when compiled: the default fits the element.
				if e := m.konst.apply(r, tc.Elems[m.col]); e != nil {
					return e
				}
				continue
			}
			tc.Elems[m.col].AppendDefault()
		}
		tc.EndRow()
		return nil
	}, nil
}

// keySetter appends an Avro map key (a string) to a map's key column.
type keySetter func(key []byte, col chunk.Column) *decode.Error

// mapKey returns the setter of map keys into key type t: String (or
// LowCardinality(String)), or an integer type parsed from the key's text.
func mapKey(t *chunk.Type) (keySetter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return func(key []byte, col chunk.Column) *decode.Error {
			chunk.AppendString(col, key)
			return nil
		}, nil
	case chunk.KindInt8:
		return keySigned[int8](math.MinInt8, math.MaxInt8), nil
	case chunk.KindInt16:
		return keySigned[int16](math.MinInt16, math.MaxInt16), nil
	case chunk.KindInt32:
		return keySigned[int32](math.MinInt32, math.MaxInt32), nil
	case chunk.KindInt64:
		return keySigned[int64](math.MinInt64, math.MaxInt64), nil
	case chunk.KindUInt8:
		return keyUnsigned[uint8](math.MaxUint8), nil
	case chunk.KindUInt16:
		return keyUnsigned[uint16](math.MaxUint16), nil
	case chunk.KindUInt32:
		return keyUnsigned[uint32](math.MaxUint32), nil
	case chunk.KindUInt64:
		return keyUnsigned[uint64](math.MaxUint64), nil
	}
	return nil, fmt.Errorf("map keys are strings: the key type must be String or an integer type, not %s", t.Name)
}

// keyNumber parses a map key as a number (as the JSON decoder parses
// numeric strings); a key that is not one is wrong_type.
func keyNumber(key []byte) (decode.Number, *decode.Error) {
	n, ok := decode.ParseNumber(key)
	if !ok {
		return n, &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("map key %s is not a number", decode.Quote(key))}
	}
	return n, nil
}

func keyError(key []byte, r decode.IntResult) *decode.Error {
	switch r {
	case decode.IntFraction:
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("map key %s is not an integer", decode.Quote(key))}
	case decode.IntRange:
		return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("map key %s out of range", decode.Quote(key))}
	}
	return nil
}

func keySigned[T int8 | int16 | int32 | int64](lo, hi int64) keySetter {
	return func(key []byte, col chunk.Column) *decode.Error {
		n, e := keyNumber(key)
		if e != nil {
			return e
		}
		v, r := n.Signed(lo, hi)
		if e := keyError(key, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func keyUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64) keySetter {
	return func(key []byte, col chunk.Column) *decode.Error {
		n, e := keyNumber(key)
		if e != nil {
			return e
		}
		v, r := n.Unsigned(hi)
		if e := keyError(key, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

// setMap reads a map's blocks into a Map column, entries in order.
func setMap(key keySetter, val avroSetter, itemMin int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		m := col.(*chunk.Map)
		for {
			n, size, e := r.block(itemMin)
			if e != nil {
				return e
			}
			if n == 0 {
				break
			}
			start := r.pos
			for ; n > 0; n-- {
				k, e := r.bytes()
				if e != nil {
					return e
				}
				if e := key(k, m.Keys); e != nil {
					return e
				}
				if e := val(r, m.Values); e != nil {
					e.Err = fmt.Errorf("map value of key %s: %w", decode.Quote(k), e.Err)
					return e
				}
			}
			if size >= 0 && int64(r.pos-start) != size {
				return r.corrupt(fmt.Sprintf("map block of %d bytes holds %d", size, r.pos-start))
			}
		}
		m.EndRow()
		return nil
	}
}
