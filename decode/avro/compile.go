package avro

import (
	"errors"
	"fmt"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// avroCompile returns the setter of writer type w into column type t; r
// is the reader's type paired with w (nil without a reader schema), which
// records (into Tuples) at any depth are resolved to.
func avroCompile(w, r havro.Schema, t *chunk.Type, rg chunk.ServerRanges) (avroSetter, error) {
	w = avroDeref(w)
	r = pair(w, r)
	t = t.Base()
	if u, ok := w.(*havro.UnionSchema); ok {
		return compileUnion(u, r, t, rg)
	}
	if w.Type() == havro.Null {
		// Nothing to read: NULL for Nullable, else the default.
		if t.Kind == chunk.KindNullable {
			return func(r *avroReader, col chunk.Column) *decode.Error {
				col.(*chunk.Nullable).AppendNull()
				return nil
			}, nil
		}
		if err := decode.Check(t); err != nil {
			return nil, err
		}
		return func(r *avroReader, col chunk.Column) *decode.Error {
			col.AppendDefault()
			return nil
		}, nil
	}
	switch t.Kind {
	case chunk.KindNullable:
		inner, err := avroCompile(w, r, t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return func(r *avroReader, col chunk.Column) *decode.Error {
			n := col.(*chunk.Nullable)
			if e := inner(r, n.Inner); e != nil {
				return e
			}
			n.MarkValue()
			return nil
		}, nil
	case chunk.KindArray:
		aw, ok := w.(*havro.ArraySchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		elem, err := avroCompile(aw.Items(), readerItems(aw, r), t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return setArray(elem, minSize(aw.Items(), nil)), nil
	case chunk.KindTuple:
		rec, ok := w.(*havro.RecordSchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		return compileTuple(rec, readerRecord(rec, r), t, rg)
	case chunk.KindMap:
		mw, ok := w.(*havro.MapSchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		key, err := mapKey(t.Key)
		if err != nil {
			return nil, fmt.Errorf("%s cannot go into %s: %w", typeName(w), t.Name, err)
		}
		val, err := avroCompile(mw.Values(), readerValues(mw, r), t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return setMap(key, val, 1+minSize(mw.Values(), nil)), nil
	}
	switch w.(type) {
	case *havro.RecordSchema, *havro.MapSchema, *havro.ArraySchema:
		return nil, avroCannot(w, t)
	}
	return compileScalar(w, t, rg)
}

func avroCannot(w havro.Schema, t *chunk.Type) error {
	return fmt.Errorf("%s cannot go into %s", typeName(w), t.Name)
}

// compileUnion compiles each branch of u (paired with reader type r)
// against t (its inner type when t is Nullable); null branches give NULL
// or the column's default (the table's DEFAULT when t carries one).
func compileUnion(u *havro.UnionSchema, r havro.Schema, t *chunk.Type, rg chunk.ServerRanges) (avroSetter, error) {
	nullable := t.Kind == chunk.KindNullable
	inner := t
	if nullable {
		inner = t.Elem
	}
	if err := decode.Check(t); err != nil {
		return nil, err
	}
	branches := make([]avroSetter, len(u.Types()))
	var errs []error
	for i, b := range u.Types() {
		if b.Type() == havro.Null {
			continue
		}
		set, err := avroCompile(b, r, inner, rg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		branches[i] = set
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	n := int64(len(branches))
	return func(r *avroReader, col chunk.Column) *decode.Error {
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= n {
			return r.corrupt(fmt.Sprintf("union branch %d of %d", i, n))
		}
		set := branches[i]
		if nullable {
			nc := col.(*chunk.Nullable)
			if set == nil {
				nc.AppendNull()
				return nil
			}
			if e := set(r, nc.Inner); e != nil {
				return e
			}
			nc.MarkValue()
			return nil
		}
		if set == nil {
			col.AppendDefault()
			return nil
		}
		return set(r, col)
	}, nil
}

// Units of the timestamp logical types, per second.
func timeUnit(l havro.LogicalType) int64 {
	switch l {
	case havro.TimestampMillis, havro.LocalTimestampMillis:
		return 1e3
	case havro.TimestampMicros, havro.LocalTimestampMicros:
		return 1e6
	}
	return 0
}

// compileScalar compiles a primitive, enum or fixed writer type into a
// scalar column type.
func compileScalar(w havro.Schema, t *chunk.Type, rg chunk.ServerRanges) (avroSetter, error) {
	wt := w.Type()
	isInt := wt == havro.Int
	integer := wt == havro.Int || wt == havro.Long
	logical := avroLogicalType(w)
	if ints, ok := chunk.IntsOf(t); ok {
		// Int8 and UInt8 take a boolean as 0 or 1; Bool takes nothing
		// else.
		bools := t.Kind == chunk.KindInt8 || t.Kind == chunk.KindUInt8 || t.Kind == chunk.KindBool
		switch {
		case wt == havro.Boolean && bools:
			return setBool(ints), nil
		case integer && t.Kind != chunk.KindBool:
			return setInt(ints, isInt), nil
		}
		return nil, avroCannot(w, t)
	}
	if floats, ok := chunk.FloatsOf(t); ok {
		switch wt {
		case havro.Float:
			if t.Kind == chunk.KindFloat32 {
				return setFloatFloat32, nil
			}
			return setFloat(floats), nil
		case havro.Double:
			if t.Kind == chunk.KindFloat64 {
				return setDoubleFloat64, nil
			}
			return setDouble(floats), nil
		case havro.Int, havro.Long:
			return setIntFloat(floats, isInt), nil
		}
		return nil, avroCannot(w, t)
	}
	switch t.Kind {
	case chunk.KindDateTime, chunk.KindDate, chunk.KindDate32, chunk.KindDateTime64:
		if !integer {
			break
		}
		ts, _ := chunk.TimesOf(t, rg)
		var unit int64 // 0: a date, in days
		if logical != havro.Date {
			if unit = timeUnit(logical); unit == 0 {
				want := "a timestamp or date"
				if t.Kind == chunk.KindDate || t.Kind == chunk.KindDate32 {
					want = "a date or timestamp"
				}
				return nil, fmt.Errorf("%s cannot go into %s: want %s logical type", typeName(w), t.Name, want)
			}
		}
		switch t.Kind {
		case chunk.KindDateTime:
			return setTime(ts, isInt, unit, logical, decode.NotDateTime), nil
		case chunk.KindDate:
			return setTime(ts, isInt, unit, logical, decode.NotDate), nil
		case chunk.KindDate32:
			return setTime(ts, isInt, unit, logical, decode.NotDate32), nil
		}
		return setDateTime64(ts, isInt, unit, t.Precision, logical), nil
	case chunk.KindString:
		texts, _ := chunk.TextsOf(t)
		switch wt {
		case havro.String:
			return setString, nil
		case havro.Bytes, havro.Fixed:
			if d, ok := avroLogical(w).(*havro.DecimalLogicalSchema); ok {
				return setDecimal(fixedSize(w), d.Scale(), decimalString(d.Scale())), nil
			}
			if wt == havro.Fixed {
				return setFixed(texts, fixedSize(w)), nil
			}
			return setString, nil
		case havro.Enum:
			return setEnum(texts, w.(*havro.EnumSchema).Symbols()), nil
		}
	case chunk.KindFixedString:
		texts, _ := chunk.TextsOf(t)
		switch wt {
		case havro.String, havro.Bytes:
			return setText(texts), nil
		case havro.Fixed:
			if n := fixedSize(w); n > t.Len {
				return nil, fmt.Errorf("%s is longer than %s", typeName(w), t.Name)
			}
			return setFixed(texts, fixedSize(w)), nil
		}
	case chunk.KindEnum8, chunk.KindEnum16:
		texts, _ := chunk.TextsOf(t)
		switch wt {
		case havro.String:
			return setText(texts), nil
		case havro.Enum:
			return setEnum(texts, w.(*havro.EnumSchema).Symbols()), nil
		}
	case chunk.KindDecimal:
		switch wt {
		case havro.Bytes, havro.Fixed:
			d, ok := avroLogical(w).(*havro.DecimalLogicalSchema)
			if !ok {
				return nil, fmt.Errorf("%s cannot go into %s: want a decimal logical type", typeName(w), t.Name)
			}
			return setDecimal(fixedSize(w), d.Scale(), t), nil
		case havro.Int, havro.Long:
			return setIntDecimal(isInt, t), nil
		}
	}
	// The rest of the string family (UUID, IPv4, IPv6) from a string: the
	// type's appender holds its forms and checks.
	if texts, ok := chunk.TextsOf(t); ok && wt == havro.String {
		return setText(texts), nil
	}
	return nil, avroCannot(w, t)
}

// fixedSize is the size of a fixed type, or -1 for bytes.
func fixedSize(w havro.Schema) int {
	if f, ok := w.(*havro.FixedSchema); ok {
		return f.Size()
	}
	return -1
}
