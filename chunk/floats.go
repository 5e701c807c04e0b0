package chunk

import "math"

// The float family: Float32 and Float64 (Fixed[float32], Fixed[float64]).

// Floats appends numbers to the columns of one float type. A finite value
// beyond Float32's range returns ErrRange (infinities and NaN are stored as
// they are); an integer is converted to the nearest float.
//
// A Floats is stateless and safe for concurrent use; the column passed in
// must be one NewColumn made for the type (for a Nullable, its Inner).
type Floats interface {
	// AppendFloat appends v.
	AppendFloat(col Column, v float64) error
	// AppendInt appends v as the nearest float.
	AppendInt(col Column, v int64) error
}

// FloatsOf returns the appender of the float type t, and false when t is
// not Float32 or Float64.
func FloatsOf(t *Type) (Floats, bool) {
	switch t.Kind {
	case KindFloat32:
		return &float32s{}, true
	case KindFloat64:
		return &float64s{}, true
	}
	return nil, false
}

type float32s struct{}

func (*float32s) AppendFloat(col Column, v float64) error {
	if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
		return ErrRange
	}
	col.(*Fixed[float32]).Append(float32(v))
	return nil
}

func (*float32s) AppendInt(col Column, v int64) error {
	col.(*Fixed[float32]).Append(float32(v))
	return nil
}

type float64s struct{}

func (*float64s) AppendFloat(col Column, v float64) error {
	col.(*Fixed[float64]).Append(v)
	return nil
}

func (*float64s) AppendInt(col Column, v int64) error {
	col.(*Fixed[float64]).Append(float64(v))
	return nil
}

// floatKey is the Key of the float types: their IEEE bits.
func floatKey(t *Type) (Key, bool) {
	switch t.Kind {
	case KindFloat32:
		return Key{Width: 4, Bits: func(col Column, i int) uint64 { return uint64(math.Float32bits(col.(*Fixed[float32]).Data[i])) }}, true
	case KindFloat64:
		return Key{Width: 8, Bits: func(col Column, i int) uint64 { return math.Float64bits(col.(*Fixed[float64]).Data[i]) }}, true
	}
	return Key{}, false
}

// floatNames are the float types' names.
var floatNames = map[string]Kind{"Float32": KindFloat32, "Float64": KindFloat64}

// floatColumn is the column of a float type.
func floatColumn(t *Type) (Column, bool) {
	switch t.Kind {
	case KindFloat32:
		return &Fixed[float32]{}, true
	case KindFloat64:
		return &Fixed[float64]{}, true
	}
	return nil, false
}

// AppendFloat64 appends v to a Float64 column, which takes every float64:
// what FloatsOf(Float64) does, without an interface call, for the
// decoders' hot path (as AppendString is for String).
func AppendFloat64(col Column, v float64) {
	c := col.(*Fixed[float64])
	c.Data = append(c.Data, v)
}

// AppendFloat32 appends v to a Float32 column: AppendFloat64 for a value
// that is a float32 already (an Avro float), which needs no range check.
func AppendFloat32(col Column, v float32) {
	c := col.(*Fixed[float32])
	c.Data = append(c.Data, v)
}
