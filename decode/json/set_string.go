package json

import (
	"fmt"
	"math"
	"net/netip"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func setString(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	s := col.(*chunk.Strings)
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		s.Append(b)
		return nil
	}
	s.Append(d.raw(v))
	return nil
}

func setFixedString(size int) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		b, e := stringOf(v)
		if e != nil {
			return e
		}
		if len(b) > size {
			return newError(decode.ReasonOutOfRange, v, fmt.Sprintf("is longer than %d bytes", size))
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setUUID(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	if !decode.IsUUID(b) {
		return newError(decode.ReasonWrongType, v, "is not a UUID")
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

func setEnum(values map[string]int16, names map[int16]string) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		s := col.(*chunk.Strings)
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if _, ok := values[string(b)]; ok {
				s.Append(b)
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
		x, r := n.Signed(math.MinInt16, math.MaxInt16)
		name, ok := names[int16(x)]
		if r != decode.IntOK || !ok {
			return newError(decode.ReasonOutOfRange, v, "is not a value of the enum")
		}
		s.AppendString(name)
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
func setIPv4(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v.Type() == fastjson.TypeNumber {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		x, r := n.Unsigned(math.MaxUint32)
		if e := intError(v, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[uint32]).Append(uint32(x))
		return nil
	}
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || !a.Is4() {
		return newError(decode.ReasonWrongType, v, "is not an IPv4 address")
	}
	col.(*chunk.Fixed[uint32]).Append(decode.IPv4Number(a))
	return nil
}

// setIPv6 takes any IPv6 text form; an IPv4 address gives its IPv4-mapped
// form, as the server does.
func setIPv6(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" {
		return newError(decode.ReasonWrongType, v, "is not an IP address")
	}
	col.(*chunk.Fixed[[16]byte]).Append(a.As16())
	return nil
}
