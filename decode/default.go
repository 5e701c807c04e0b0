package decode

import (
	"fmt"
	"time"

	"github.com/etl-project/etl/chunk"
)

// Defaulter appends a type's default for a null or missing value; nil
// means the column's AppendDefault is right.
type Defaulter func(col chunk.Column)

// AppendDefault appends the default def (see Defaulter) to col.
func AppendDefault(def Defaulter, col chunk.Column) {
	if def != nil {
		def(col)
		return
	}
	col.AppendDefault()
}

// Defaults that differ from the zero value of the column's Go type: the
// server's implicit defaults for these types.
var (
	defaultDate = time.Unix(0, 0).UTC()
	defaultUUID = "00000000-0000-0000-0000-000000000000"
)

// Default returns the Defaulter of type t: what both decoders append for
// a missing value. A type carrying the table's DEFAULT
// (chunk.Type.HasDefault) has a nil Defaulter: its columns append the
// DEFAULT themselves. The error is for a type no decoder takes (an Enum
// without values, a Map whose keys cannot be decoded).
func Default(t *chunk.Type) (Defaulter, error) {
	def, err := typeDefault(t)
	if t.HasDefault() {
		def = nil
	}
	return def, err
}

func typeDefault(t *chunk.Type) (Defaulter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32, chunk.KindUInt64,
		chunk.KindFloat32, chunk.KindFloat64, chunk.KindBool, chunk.KindString, chunk.KindFixedString,
		chunk.KindDateTime, chunk.KindDateTime64, chunk.KindIPv4, chunk.KindIPv6,
		chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		return nil, nil
	case chunk.KindUUID:
		return defaultText(defaultUUID), nil
	case chunk.KindDecimal:
		dec, _ := chunk.DecimalsOf(t)
		zero := []byte("0")
		return func(col chunk.Column) { _ = dec.AppendText(col, zero) }, nil
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return nil, fmt.Errorf("type %s has no values", t.Name)
		}
		first, seen := "", false
		for name, v := range t.Enum {
			if !seen || v < t.Enum[first] {
				first, seen = name, true
			}
		}
		// The implicit default of an Enum is its name with the lowest value.
		return defaultText(first), nil
	case chunk.KindDate, chunk.KindDate32:
		return func(col chunk.Column) { col.(*chunk.Fixed[time.Time]).Append(defaultDate) }, nil
	case chunk.KindNullable:
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	case chunk.KindArray:
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	case chunk.KindTuple:
		defs := make([]Defaulter, len(t.Elems))
		for i, et := range t.Elems {
			var err error
			if defs[i], err = Default(et); err != nil {
				return nil, err
			}
		}
		return tupleDefault(defs), nil
	case chunk.KindMap:
		if err := mapKeyDecodable(t.Key); err != nil {
			return nil, err
		}
		if _, err := Default(t.Elem); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, fmt.Errorf("type %s cannot be decoded from JSON", t.Name)
}

// mapKeyDecodable returns the error for a Map key type the decoders do
// not take: a composite type, or one whose values cannot be decoded.
func mapKeyDecodable(t *chunk.Type) error {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return nil
	case chunk.KindNullable, chunk.KindArray, chunk.KindMap, chunk.KindTuple:
		return fmt.Errorf("map key type %s is not supported", t.Name)
	}
	_, err := Default(t)
	return err
}

func defaultText(s string) Defaulter {
	return func(col chunk.Column) { col.(*chunk.Strings).AppendString(s) }
}

func tupleDefault(defs []Defaulter) Defaulter {
	return func(col chunk.Column) {
		tc := col.(*chunk.Tuple)
		for i, def := range defs {
			AppendDefault(def, tc.Elems[i])
		}
		tc.EndRow()
	}
}
