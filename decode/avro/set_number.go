package avro

import (
	"fmt"
	"math"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func outOfRange(v int64) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d out of range", v)}
}

func setSigned[T int8 | int16 | int32 | int64](lo, hi int64, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if v < lo || v > hi {
			return outOfRange(v)
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if v < 0 || uint64(v) > hi {
			return outOfRange(v)
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setBoolInt[T int8 | uint8](r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.boolean()
	if e != nil {
		return e
	}
	var x T
	if v {
		x = 1
	}
	col.(*chunk.Fixed[T]).Append(x)
	return nil
}

func setBool(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.boolean()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[bool]).Append(v)
	return nil
}

func setIntFloat[T float32 | float64](isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setFloatFloat32(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.float()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float32]).Append(v)
	return nil
}

func setFloatFloat64(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.float()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float64]).Append(float64(v))
	return nil
}

func setDoubleFloat64(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.double()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float64]).Append(v)
	return nil
}

func setDoubleFloat32(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.double()
	if e != nil {
		return e
	}
	if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
		return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %g out of range", v)}
	}
	col.(*chunk.Fixed[float32]).Append(float32(v))
	return nil
}

// setBigInt stores an int or long in a 128- or 256-bit column; a
// negative value is out_of_range for the unsigned ones.
func setBigInt(isInt, signed bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if !signed && v < 0 {
			return outOfRange(v)
		}
		var ext uint64
		if v < 0 {
			ext = math.MaxUint64
		}
		w := [4]uint64{uint64(v), ext, ext, ext}
		c := col.(*chunk.BigInt)
		c.Append(w[:c.Words])
		return nil
	}
}
