package json

import (
	"fmt"
	"math"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// compile returns the setter for type t and its decode.Defaulter (decode.Default:
// nil for a type carrying the table's DEFAULT, whose columns append the
// DEFAULT themselves).
func compile(t *chunk.Type) (setter, decode.Defaulter, error) {
	set, err := compileType(t)
	if err != nil {
		return nil, nil, err
	}
	def, err := decode.Default(t)
	return set, def, err
}

func compileType(t *chunk.Type) (setter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8:
		return setSigned[int8](math.MinInt8, math.MaxInt8, true), nil
	case chunk.KindInt16:
		return setSigned[int16](math.MinInt16, math.MaxInt16, false), nil
	case chunk.KindInt32:
		return setSigned[int32](math.MinInt32, math.MaxInt32, false), nil
	case chunk.KindInt64:
		return setSigned[int64](math.MinInt64, math.MaxInt64, false), nil
	case chunk.KindUInt8:
		return setUnsigned[uint8](math.MaxUint8, true), nil
	case chunk.KindUInt16:
		return setUnsigned[uint16](math.MaxUint16, false), nil
	case chunk.KindUInt32:
		return setUnsigned[uint32](math.MaxUint32, false), nil
	case chunk.KindUInt64:
		return setUnsigned[uint64](math.MaxUint64, false), nil
	case chunk.KindFloat32:
		return setFloat32, nil
	case chunk.KindFloat64:
		return setFloat64, nil
	case chunk.KindBool:
		return setBool, nil
	case chunk.KindString:
		return setString, nil
	case chunk.KindFixedString:
		return setFixedString(t.Len), nil
	case chunk.KindUUID:
		return setUUID, nil
	case chunk.KindDecimal:
		intDigits := -1
		if t.Precision > 0 {
			intDigits = t.Precision - t.Scale
		}
		return setDecimal(intDigits, t.Scale), nil
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return nil, fmt.Errorf("type %s has no values", t.Name)
		}
		names := make(map[int16]string, len(t.Enum))
		for name, v := range t.Enum {
			names[v] = name
		}
		return setEnum(t.Enum, names), nil
	case chunk.KindDateTime:
		return setDateTime, nil
	case chunk.KindDate:
		return setDate, nil
	case chunk.KindDate32:
		return setDate32, nil
	case chunk.KindDateTime64:
		return setDateTime64(t.Precision), nil
	case chunk.KindIPv4:
		return setIPv4, nil
	case chunk.KindIPv6:
		return setIPv6, nil
	case chunk.KindInt128, chunk.KindUInt128:
		return setBigInt(2, t.Kind == chunk.KindInt128), nil
	case chunk.KindInt256, chunk.KindUInt256:
		return setBigInt(4, t.Kind == chunk.KindInt256), nil
	case chunk.KindNullable:
		inner, _, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		return setNullable(inner), nil
	case chunk.KindArray:
		elem, elemDef, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		return setArray(elem, elemDef), nil
	case chunk.KindTuple:
		n := len(t.Elems)
		sets, defs := make([]setter, n), make([]decode.Defaulter, n)
		for i, et := range t.Elems {
			var err error
			if sets[i], defs[i], err = compile(et); err != nil {
				return nil, err
			}
		}
		return setTuple(t.ElemNames, sets, defs), nil
	case chunk.KindMap:
		key, err := compileMapKey(t.Key)
		if err != nil {
			return nil, err
		}
		val, valDef, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		m := &jsonMap{key: key, val: val, valDef: valDef}
		m.visitFn = m.visit
		return m.set, nil
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
