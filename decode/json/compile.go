package json

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// compile returns the setter for type t. A missing or null value appends
// the column's default (chunk.Column.AppendDefault: the table's DEFAULT
// when the type carries one, else the type's own).
func compile(t *chunk.Type, rg chunk.ServerRanges) (setter, error) {
	set, err := compileType(t, rg)
	if err != nil {
		return nil, err
	}
	return set, decode.Check(t)
}

func compileType(t *chunk.Type, rg chunk.ServerRanges) (setter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32, chunk.KindUInt64:
		ints, _ := chunk.IntsOf(t)
		// Int8 and UInt8 take true and false as 1 and 0.
		return setInt(ints, t.Kind == chunk.KindInt8 || t.Kind == chunk.KindUInt8), nil
	case chunk.KindFloat32, chunk.KindFloat64:
		floats, _ := chunk.FloatsOf(t)
		bits := 64
		if t.Kind == chunk.KindFloat32 {
			bits = 32
		}
		return setFloat(floats, bits), nil
	case chunk.KindBool:
		ints, _ := chunk.IntsOf(t)
		return setBool(ints), nil
	case chunk.KindString:
		return setString, nil
	case chunk.KindDecimal:
		var dec chunk.Decimals
		if t.Precision > 0 {
			dec, _ = chunk.DecimalsOf(t)
		}
		return setDecimal(dec, t), nil
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return nil, fmt.Errorf("type %s has no values", t.Name)
		}
		texts, _ := chunk.TextsOf(t)
		return setEnum(texts), nil
	case chunk.KindDateTime:
		ts, _ := chunk.TimesOf(t, rg)
		return setDateTime(ts.(*chunk.DateTimes)), nil
	case chunk.KindDate:
		return setDate, nil
	case chunk.KindDate32:
		ts, _ := chunk.TimesOf(t, chunk.ServerRanges{}) // no server bound
		return setDate32(ts), nil
	case chunk.KindDateTime64:
		ts, _ := chunk.TimesOf(t, chunk.ServerRanges{}) // no server bound
		return setDateTime64(ts, t.Precision, chunk.ZoneOf(t, rg)), nil
	case chunk.KindInt128, chunk.KindUInt128:
		return setBigInt(2, t.Kind == chunk.KindInt128), nil
	case chunk.KindInt256, chunk.KindUInt256:
		return setBigInt(4, t.Kind == chunk.KindInt256), nil
	case chunk.KindNullable:
		inner, err := compile(t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return setNullable(inner), nil
	case chunk.KindArray:
		elem, err := compile(t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return setArray(elem), nil
	case chunk.KindTuple:
		n := len(t.Elems)
		sets := make([]setter, n)
		for i, et := range t.Elems {
			var err error
			if sets[i], err = compile(et, rg); err != nil {
				return nil, err
			}
		}
		return setTuple(t.ElemNames, sets), nil
	case chunk.KindMap:
		key, err := compileMapKey(t.Key, rg)
		if err != nil {
			return nil, err
		}
		val, err := compile(t.Elem, rg)
		if err != nil {
			return nil, err
		}
		m := &jsonMap{key: key, val: val}
		m.visitFn = m.visit
		return m.set, nil
	}
	// The rest of the string family (FixedString, UUID, IPv4, IPv6): the
	// type's appender holds its forms and checks.
	if texts, ok := chunk.TextsOf(t); ok {
		return setTexts(texts), nil
	}
	return nil, fmt.Errorf("type %s cannot be decoded from JSON", t.Name)
}

func setNullable(inner setter) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n := col.(*chunk.Nullable)
		if e := inner(d, v, n.Inner); e != nil {
			return e
		}
		n.MarkValue()
		return nil
	}
}
