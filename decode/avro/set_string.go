package avro

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func setString(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

func setFixed(n int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.fixed(n)
		if e != nil {
			return e
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setFixedString(size int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.bytes()
		if e != nil {
			return e
		}
		if len(b) > size {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is longer than %d bytes", decode.Quote(b), size)}
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setUUID(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	if !decode.IsUUID(b) {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not a UUID", decode.Quote(b))}
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

// setEnum appends the symbol of an enum index; ok, when not nil,
// says which symbols the column's Enum has.
func setEnum(syms []string, ok []bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= int64(len(syms)) {
			return r.corrupt(fmt.Sprintf("enum index %d of %d", i, len(syms)))
		}
		if ok != nil && !ok[i] {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", strconv.Quote(syms[i]))}
		}
		col.(*chunk.Strings).AppendString(syms[i])
		return nil
	}
}

func setStringEnum(values map[string]int16) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.bytes()
		if e != nil {
			return e
		}
		if _, ok := values[string(b)]; !ok {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", decode.Quote(b))}
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setIPv4(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || !a.Is4() {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not an IPv4 address", decode.Quote(b))}
	}
	col.(*chunk.Fixed[uint32]).Append(decode.IPv4Number(a))
	return nil
}

func setIPv6(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not an IP address", decode.Quote(b))}
	}
	col.(*chunk.Fixed[[16]byte]).Append(a.As16())
	return nil
}
