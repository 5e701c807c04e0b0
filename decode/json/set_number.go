package json

import (
	"math"

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

// setInt stores a number, or a string holding one, in an integer column
// within its type's range; with bools, true and false as 1 and 0.
func setInt(a chunk.Ints, bools bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		if bools {
			switch v.Type() {
			case fastjson.TypeTrue:
				_ = a.AppendInt(col, 1)
				return nil
			case fastjson.TypeFalse:
				_ = a.AppendInt(col, 0)
				return nil
			}
		}
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		var err error
		if n.Neg {
			x, r := n.Signed(math.MinInt64, math.MaxInt64)
			if e := intError(v, r); e != nil {
				return e
			}
			err = a.AppendInt(col, x)
		} else {
			x, r := n.Unsigned(math.MaxUint64)
			if e := intError(v, r); e != nil {
				return e
			}
			err = a.AppendUint(col, x)
		}
		if err != nil {
			return newError(decode.ReasonOutOfRange, v, "out of range")
		}
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

// setFloat stores a number, or a string holding one, parsed at the
// column's precision (bits 32 or 64).
func setFloat(a chunk.Floats, bits int) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		f, ok := n.Float(bits)
		if !ok || a.AppendFloat(col, f) != nil {
			return newError(decode.ReasonOutOfRange, v, "out of range")
		}
		return nil
	}
}

// setBool stores true, false, or the number 0 or 1 in a Bool column.
func setBool(a chunk.Ints) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		var x uint64
		switch v.Type() {
		case fastjson.TypeTrue:
			x = 1
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
			x = u
		default:
			return wrongType(v, "a boolean")
		}
		_ = a.AppendUint(col, x) // 0 or 1
		return nil
	}
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
