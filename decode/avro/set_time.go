package avro

import (
	"errors"
	"fmt"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// floorDiv divides rounding toward negative infinity.
func floorDiv(v, d int64) int64 {
	q := v / d
	if v%d != 0 && v < 0 {
		q--
	}
	return q
}

// timeError is the out_of_range error of value v (of logical type l) that
// a time column refused: before its type's range (what describes the
// range), or past the server's maximum.
func timeError(err error, v int64, l havro.LogicalType, what string) *decode.Error {
	var past *chunk.PastError
	if errors.As(err, &past) {
		return pastRange(v, l, past.Error())
	}
	return timeRange(v, l, what)
}

// setTime converts a timestamp of unit per second, or for unit 0 a date in
// days, to a time column (Date, Date32, DateTime); what describes the
// column's range in errors.
func setTime(ts chunk.Times, isInt bool, unit int64, l havro.LogicalType, what string) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var err error
		if unit == 0 {
			err = ts.AppendDays(col, v)
		} else {
			err = ts.AppendSeconds(col, floorDiv(v, unit))
		}
		if err != nil {
			return timeError(err, v, l, what)
		}
		return nil
	}
}

// pastRange is the out_of_range error of a date past the server's
// range.
func pastRange(v int64, l havro.LogicalType, msg string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d (%s): %s", v, l, msg)}
}

func timeRange(v int64, l havro.LogicalType, what string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d (%s) %s", v, l, what)}
}

// setDateTime64 converts a timestamp of unit per second, or for unit 0 a
// date in days, to ticks of DateTime64(p), rounding down.
func setDateTime64(ts chunk.Times, isInt bool, unit int64, p int, l havro.LogicalType) avroSetter {
	lo, hi := chunk.DateTime64Range(p)
	scale := decode.Pow10[p]
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var err error
		switch {
		case unit == 0:
			err = ts.AppendDays(col, v)
		case scale >= unit:
			// Bound v first so the multiplication cannot overflow.
			m := scale / unit
			if v < lo/m || v > hi/m {
				return timeRange(v, l, decode.NotDateTime64)
			}
			err = ts.AppendTicks(col, v*m)
		default:
			err = ts.AppendTicks(col, floorDiv(v, unit/scale))
		}
		if err != nil {
			return timeRange(v, l, decode.NotDateTime64)
		}
		return nil
	}
}
