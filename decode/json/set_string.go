package json

import (
	"math"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setString stores a string's content, or any other value's JSON text.
func setString(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		chunk.AppendString(col, b)
		return nil
	}
	chunk.AppendString(col, d.raw(v))
	return nil
}

// setTexts stores a value of a string-family type (FixedString, UUID,
// IPv4, IPv6) from a string or, when the type takes numbers (IPv4, the
// address as a number), from a number. A value the type refuses comes back
// with the type's words for why (chunk.Texts.Refusal): ErrRange as
// out_of_range, ErrSyntax as wrong_type.
func setTexts(a chunk.Texts) setter {
	numbers := a.Numbers()
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		if numbers && v.Type() == fastjson.TypeNumber {
			n, e := d.numberOf(v)
			if e != nil {
				return e
			}
			x, r := n.Unsigned(math.MaxInt64)
			if e := intError(v, r); e != nil {
				return e
			}
			if a.AppendInt(col, int64(x)) != nil {
				return newError(decode.ReasonOutOfRange, v, "out of range")
			}
			return nil
		}
		b, e := stringOf(v)
		if e != nil {
			return e
		}
		switch err := a.AppendText(col, b); err {
		case nil:
			return nil
		case chunk.ErrRange:
			return newError(decode.ReasonOutOfRange, v, "is "+a.Refusal(err))
		default:
			return newError(decode.ReasonWrongType, v, "is "+a.Refusal(err))
		}
	}
}

// setEnum takes one of the enum's names, or one of its numbers (as a
// number or a string holding one).
func setEnum(a chunk.Texts) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if a.AppendText(col, b) == nil {
				return nil
			}
		}
		n, e := d.numberOf(v)
		if e != nil {
			if e.Reason == decode.ReasonWrongType && v.Type() == fastjson.TypeString {
				return newError(decode.ReasonOutOfRange, v, "is not a value of the enum")
			}
			return e
		}
		x, r := n.Signed(math.MinInt64, math.MaxInt64)
		if r != decode.IntOK || a.AppendInt(col, x) != nil {
			return newError(decode.ReasonOutOfRange, v, "is not a value of the enum")
		}
		return nil
	}
}

// stringOf returns the unescaped content of a string value.
func stringOf(v *fastjson.Value) ([]byte, *decode.Error) {
	b, err := v.StringBytes()
	if err != nil {
		return nil, wrongType(v, "a string")
	}
	return b, nil
}
