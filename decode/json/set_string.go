package json

import (
	"fmt"
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

// setText stores a string in a FixedString (at most its size), a UUID or
// an IPv6 column; what is not a value of the type is refused with its
// reason and message: ErrRange as out_of_range ("is longer than size
// bytes"), ErrSyntax as wrong_type ("is not" want).
func setText(a chunk.Texts, size int, want string) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		b, e := stringOf(v)
		if e != nil {
			return e
		}
		return textError(v, a.AppendText(col, b), size, want)
	}
}

func textError(v *fastjson.Value, err error, size int, want string) *decode.Error {
	switch err {
	case nil:
		return nil
	case chunk.ErrRange:
		return newError(decode.ReasonOutOfRange, v, fmt.Sprintf("is longer than %d bytes", size))
	}
	return newError(decode.ReasonWrongType, v, "is not "+want)
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

// setIPv4 takes the dotted form, or the address as a number.
func setIPv4(a chunk.Texts) setter {
	text := setText(a, 0, "an IPv4 address")
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		if v.Type() != fastjson.TypeNumber {
			return text(d, v, col)
		}
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
}
