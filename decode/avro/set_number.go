package avro

import (
	"fmt"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func outOfRange(v int64) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d out of range", v)}
}

// setInt stores an int or long in an integer column, within its type's
// range.
func setInt(a chunk.Ints, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if a.AppendInt(col, v) != nil {
			return outOfRange(v)
		}
		return nil
	}
}

// setBool stores a boolean in Bool, or as 0 or 1 in Int8 and UInt8.
func setBool(a chunk.Ints) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.boolean()
		if e != nil {
			return e
		}
		var x int64
		if v {
			x = 1
		}
		_ = a.AppendInt(col, x) // 0 and 1 fit every integer type
		return nil
	}
}

func setIntFloat(a chunk.Floats, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		_ = a.AppendInt(col, v) // every integer has a nearest float
		return nil
	}
}

func setFloat(a chunk.Floats) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.float()
		if e != nil {
			return e
		}
		_ = a.AppendFloat(col, float64(v)) // a float fits both types
		return nil
	}
}

// setFloatFloat32 and setDoubleFloat64 are setFloat and setDouble into the
// column of the value's own type, without an interface call.
func setFloatFloat32(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.float()
	if e != nil {
		return e
	}
	chunk.AppendFloat32(col, v)
	return nil
}

func setDoubleFloat64(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.double()
	if e != nil {
		return e
	}
	chunk.AppendFloat64(col, v)
	return nil
}

func setDouble(a chunk.Floats) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.double()
		if e != nil {
			return e
		}
		if a.AppendFloat(col, v) != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %g out of range", v)}
		}
		return nil
	}
}
