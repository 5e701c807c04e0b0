package avro

import (
	"fmt"
	"time"

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

// setDateTime converts a timestamp of unit per second, or for unit
// -86400 a date in days, to DateTime seconds within the server's range.
func setDateTime(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var sec int64
		if unit < 0 {
			if v < 0 {
				return timeRange(v, l, decode.NotDateTime)
			}
			if v > chunk.WideDateTimeMax/86400+1 {
				return pastRange(v, l, r.ranges().DateTimeError(chunk.WideDateTimeMax+1))
			}
			sec = v * 86400
		} else {
			sec = floorDiv(v, unit)
		}
		if sec < 0 {
			return timeRange(v, l, decode.NotDateTime)
		}
		if rg := r.ranges(); sec > rg.DateTimeMax {
			return pastRange(v, l, rg.DateTimeError(sec))
		}
		col.(*chunk.Fixed[int64]).Append(sec)
		return nil
	}
}

// setDate converts a date (unit 0) or a timestamp of unit per second
// to a Date within the server's range.
func setDate(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		days := v
		if unit != 0 {
			days = floorDiv(floorDiv(v, unit), 86400)
		}
		if days < 0 {
			return timeRange(v, l, decode.NotDate)
		}
		if rg := r.ranges(); days > rg.DateMax {
			return pastRange(v, l, rg.DateError(days))
		}
		col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
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

// setDateTime64 converts a timestamp of unit per second, or for unit
// -86400 a date in days, to ticks of DateTime64(p), rounding down.
func setDateTime64(isInt bool, unit int64, p int, l havro.LogicalType) avroSetter {
	lo, hi := decode.DateTime64Range(p)
	scale := decode.Pow10[p]
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var ticks int64
		switch {
		case unit < 0:
			if v < lo/scale/86400 || v > hi/scale/86400 {
				return timeRange(v, l, decode.NotDateTime64)
			}
			ticks = v * 86400 * scale
		case scale >= unit:
			m := scale / unit
			if v < lo/m || v > hi/m {
				return timeRange(v, l, decode.NotDateTime64)
			}
			ticks = v * m
		default:
			ticks = floorDiv(v, unit/scale)
		}
		if ticks < lo || ticks > hi {
			return timeRange(v, l, decode.NotDateTime64)
		}
		col.(*chunk.DateTime64).Append(ticks)
		return nil
	}
}

// setDate32 converts a date (unit 0) or a timestamp of unit per second
// to a Date32.
func setDate32(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		days := v
		if unit != 0 {
			days = floorDiv(floorDiv(v, unit), 86400)
		}
		if days < decode.MinDate32 || days > decode.MaxDate32 {
			return timeRange(v, l, decode.NotDate32)
		}
		col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
		return nil
	}
}
