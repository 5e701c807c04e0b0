package chunk

import (
	"errors"
	"math"
)

// The integer family: Int8 to Int64 and UInt8 to UInt64 (Fixed[T] of the
// Go type of the same width), Bool (Fixed[bool]), and the 128- and 256-bit
// integers (BigInt). Decoders and the transform append to these columns
// only through an Ints, which holds each type's range.

// ErrRange is what an appender returns for a value its column's type cannot
// hold; nothing is appended. It is returned as is (no allocation): the
// caller names the value and the type in its own message.
var ErrRange = errors.New("out of range")

// Ints appends integers to the columns of one integer type, checking each
// value against the type's range: a value the type cannot hold returns
// ErrRange and is not appended. Bool holds 0 (false) and 1 (true).
//
// An Ints is stateless and safe for concurrent use; the column passed in
// must be one NewColumn made for the type (for a Nullable, its Inner).
type Ints interface {
	// AppendInt appends v.
	AppendInt(col Column, v int64) error
	// AppendUint appends v.
	AppendUint(col Column, v uint64) error
}

// IntsOf returns the appender of the integer type t, and false when t is
// not an integer type (nor Bool).
func IntsOf(t *Type) (Ints, bool) {
	switch t.Kind {
	case KindInt8:
		return &signedInts[int8]{}, true
	case KindInt16:
		return &signedInts[int16]{}, true
	case KindInt32:
		return &signedInts[int32]{}, true
	case KindInt64:
		return &signedInts[int64]{}, true
	case KindUInt8:
		return &unsignedInts[uint8]{}, true
	case KindUInt16:
		return &unsignedInts[uint16]{}, true
	case KindUInt32:
		return &unsignedInts[uint32]{}, true
	case KindUInt64:
		return &unsignedInts[uint64]{}, true
	case KindBool:
		return &boolInts{}, true
	case KindInt128, KindUInt128, KindInt256, KindUInt256:
		return &wideInts{}, true
	}
	return nil, false
}

// signedInts appends to Fixed[T]: T(v) converts back to v exactly when v
// is within T's range.
type signedInts[T int8 | int16 | int32 | int64] struct{}

func (*signedInts[T]) AppendInt(col Column, v int64) error {
	if int64(T(v)) != v {
		return ErrRange
	}
	col.(*Fixed[T]).Append(T(v))
	return nil
}

func (*signedInts[T]) AppendUint(col Column, v uint64) error {
	if v > math.MaxInt64 || int64(T(v)) != int64(v) {
		return ErrRange
	}
	col.(*Fixed[T]).Append(T(v))
	return nil
}

type unsignedInts[T uint8 | uint16 | uint32 | uint64] struct{}

func (*unsignedInts[T]) AppendInt(col Column, v int64) error {
	if v < 0 || uint64(T(v)) != uint64(v) {
		return ErrRange
	}
	col.(*Fixed[T]).Append(T(v))
	return nil
}

func (*unsignedInts[T]) AppendUint(col Column, v uint64) error {
	if uint64(T(v)) != v {
		return ErrRange
	}
	col.(*Fixed[T]).Append(T(v))
	return nil
}

type boolInts struct{}

func (*boolInts) AppendInt(col Column, v int64) error {
	if v != 0 && v != 1 {
		return ErrRange
	}
	col.(*Fixed[bool]).Append(v == 1)
	return nil
}

func (*boolInts) AppendUint(col Column, v uint64) error {
	if v > 1 {
		return ErrRange
	}
	col.(*Fixed[bool]).Append(v == 1)
	return nil
}

// wideInts appends to a BigInt: any int64 fits a signed one, a negative
// value no unsigned one.
type wideInts struct{}

func (*wideInts) AppendInt(col Column, v int64) error {
	c := col.(*BigInt)
	if v < 0 && !c.Signed {
		return ErrRange
	}
	var ext uint64
	if v < 0 {
		ext = math.MaxUint64
	}
	w := [4]uint64{uint64(v), ext, ext, ext}
	c.Append(w[:c.Words])
	return nil
}

func (*wideInts) AppendUint(col Column, v uint64) error {
	c := col.(*BigInt)
	w := [4]uint64{v}
	c.Append(w[:c.Words])
	return nil
}

// AppendBool appends v to a Bool column.
func AppendBool(col Column, v bool) { col.(*Fixed[bool]).Append(v) }

// intKey is the Key of the integer types: their bytes at their width.
func intKey(t *Type) (Key, bool) {
	switch t.Kind {
	case KindInt8:
		return fixedKey[int8](1), true
	case KindUInt8:
		return fixedKey[uint8](1), true
	case KindInt16:
		return fixedKey[int16](2), true
	case KindUInt16:
		return fixedKey[uint16](2), true
	case KindInt32:
		return fixedKey[int32](4), true
	case KindUInt32:
		return fixedKey[uint32](4), true
	case KindInt64:
		return fixedKey[int64](8), true
	case KindUInt64:
		return fixedKey[uint64](8), true
	case KindBool:
		return Key{Width: 1, Bits: func(col Column, i int) uint64 {
			if col.(*Fixed[bool]).Data[i] {
				return 1
			}
			return 0
		}}, true
	case KindInt128, KindUInt128, KindInt256, KindUInt256:
		return Key{Words: func(col Column, i int) []uint64 {
			b := col.(*BigInt)
			return b.Data[i*b.Words : (i+1)*b.Words]
		}}, true
	}
	return Key{}, false
}

// intNames are the integer types' names.
var intNames = map[string]Kind{
	"Int8": KindInt8, "Int16": KindInt16, "Int32": KindInt32, "Int64": KindInt64,
	"UInt8": KindUInt8, "UInt16": KindUInt16, "UInt32": KindUInt32, "UInt64": KindUInt64,
	"Int128": KindInt128, "Int256": KindInt256, "UInt128": KindUInt128, "UInt256": KindUInt256,
	"Bool": KindBool,
}

// intColumn is the column of an integer type: Fixed of the Go type of its
// width, BigInt for the 128- and 256-bit ones.
func intColumn(t *Type) (Column, bool) {
	switch t.Kind {
	case KindInt8:
		return &Fixed[int8]{}, true
	case KindInt16:
		return &Fixed[int16]{}, true
	case KindInt32:
		return &Fixed[int32]{}, true
	case KindInt64:
		return &Fixed[int64]{}, true
	case KindUInt8:
		return &Fixed[uint8]{}, true
	case KindUInt16:
		return &Fixed[uint16]{}, true
	case KindUInt32:
		return &Fixed[uint32]{}, true
	case KindUInt64:
		return &Fixed[uint64]{}, true
	case KindBool:
		return &Fixed[bool]{}, true
	case KindInt128, KindUInt128:
		return &BigInt{Words: 2, Signed: t.Kind == KindInt128}, true
	case KindInt256, KindUInt256:
		return &BigInt{Words: 4, Signed: t.Kind == KindInt256}, true
	}
	return nil, false
}
