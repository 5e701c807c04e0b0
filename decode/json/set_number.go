package json

import (
	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// raw returns the text of a number value, copied to the decoder's scratch
// buffer (valid until the next call).
func (d *Decoder) raw(v *fastjson.Value) []byte {
	d.scratch = v.MarshalTo(d.scratch[:0])
	return d.scratch
}

// numberOf returns the number a number value or numeric string holds.
// A string that is not a number is wrong_type; a number value that does not
// follow the JSON grammar (fastjson accepts NaN, Inf and sign soup) is
// corrupt.
func (d *Decoder) numberOf(v *fastjson.Value) (decode.Number, *decode.Error) {
	switch v.Type() {
	case fastjson.TypeNumber:
		n, ok := decode.ParseNumber(d.raw(v))
		if !ok {
			return n, newError(decode.ReasonCorrupt, v, "is not a valid JSON number")
		}
		return n, nil
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		n, ok := decode.ParseNumber(b)
		if !ok {
			return n, newError(decode.ReasonWrongType, v, "is not a number")
		}
		return n, nil
	}
	return decode.Number{}, wrongType(v, "a number")
}

func setSigned[T int8 | int16 | int32 | int64](lo, hi int64, bools bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		var x int64
		switch t := v.Type(); {
		case bools && t == fastjson.TypeTrue:
			x = 1
		case bools && t == fastjson.TypeFalse:
		default:
			n, e := d.numberOf(v)
			if e != nil {
				return e
			}
			var r decode.IntResult
			x, r = n.Signed(lo, hi)
			if e := intError(v, r); e != nil {
				return e
			}
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return nil
	}
}

func setUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64, bools bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		var x uint64
		switch t := v.Type(); {
		case bools && t == fastjson.TypeTrue:
			x = 1
		case bools && t == fastjson.TypeFalse:
		default:
			n, e := d.numberOf(v)
			if e != nil {
				return e
			}
			var r decode.IntResult
			x, r = n.Unsigned(hi)
			if e := intError(v, r); e != nil {
				return e
			}
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return nil
	}
}

func intError(v *fastjson.Value, r decode.IntResult) *decode.Error {
	switch r {
	case decode.IntFraction:
		return newError(decode.ReasonWrongType, v, "is not an integer")
	case decode.IntRange:
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	return nil
}

func setFloat64(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	n, e := d.numberOf(v)
	if e != nil {
		return e
	}
	f, ok := n.Float(64)
	if !ok {
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	col.(*chunk.Fixed[float64]).Append(f)
	return nil
}

func setFloat32(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	n, e := d.numberOf(v)
	if e != nil {
		return e
	}
	f, ok := n.Float(32)
	if !ok {
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	col.(*chunk.Fixed[float32]).Append(float32(f))
	return nil
}

func setBool(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	var x bool
	switch v.Type() {
	case fastjson.TypeTrue:
		x = true
	case fastjson.TypeFalse:
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		u, r := n.Unsigned(1)
		if e := intError(v, r); e != nil {
			return e
		}
		x = u == 1
	default:
		return wrongType(v, "a boolean")
	}
	col.(*chunk.Fixed[bool]).Append(x)
	return nil
}

// setBigInt takes a JSON number or a string holding one, exactly.
func setBigInt(words int, signed bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		w, r := n.Wide(words, signed)
		if e := intError(v, r); e != nil {
			return e
		}
		col.(*chunk.BigInt).Append(w[:words])
		return nil
	}
}
