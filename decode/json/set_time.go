package json

import (
	"errors"
	"math"
	"time"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// timeOf returns the epoch seconds a date-time string or epoch number (or
// numeric string) holds, a string without an offset read in zone z;
// range checks are the caller's.
func (d *Decoder) timeOf(v *fastjson.Value, z *chunk.Zone, what string) (int64, *decode.Error) {
	var sec int64
	var ok bool
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if n, isNum := decode.ParseNumber(b); isNum {
			sec, ok = decode.EpochSeconds(&n)
		} else {
			sec, ok = d.timeText(b, z)
		}
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return 0, e
		}
		sec, ok = decode.EpochSeconds(&n)
	default:
		return 0, wrongType(v, "a date-time string or epoch number")
	}
	if !ok || sec < 0 {
		return 0, newError(decode.ReasonOutOfRange, v, what)
	}
	return sec, nil
}

// setDateTime appends a DateTime within the range the server reads back
// in the column's zone (ts), a text without an offset read in that zone.
func setDateTime(ts *chunk.DateTimes) setter {
	z := ts.Zone()
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		sec, e := d.timeOf(v, z, decode.NotDateTime)
		if e != nil {
			return e
		}
		return timeError(ts.AppendSeconds(col, sec), v, decode.NotDateTime)
	}
}

// notDateText is what a Date column takes, for a numeric string it
// refuses.
const notDateText = "a date string (YYYY-MM-DD or YYYYMMDD) or epoch number"

// dateString reads a Date string that is a compact date (YYYYMMDD, as
// the server reads eight digits) or refuses any other string of digits:
// a numeric string is not a number of seconds for a Date. done is false
// for any other string, which the caller reads as a date text.
func dateString(ts chunk.Times, v *fastjson.Value, col chunk.Column, what string) (done bool, e *decode.Error) {
	b, _ := v.StringBytes()
	if days, ok := decode.ParseCompactDate(b); ok {
		return true, timeError(ts.AppendDays(col, days), v, what)
	}
	if _, isNum := decode.ParseNumber(b); isNum {
		return true, wrongType(v, notDateText)
	}
	return false, nil
}

// setDate appends a Date within the server's range (d.ranges).
func setDate(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v.Type() == fastjson.TypeString {
		if done, e := dateString(d.dates, v, col, decode.NotDate); done {
			return e
		}
	}
	sec, e := d.timeOf(v, nil, decode.NotDate)
	if e != nil {
		return e
	}
	return timeError(d.dates.AppendSeconds(col, sec), v, decode.NotDate)
}

// timeError is the out_of_range error of a value a time column refused
// (nil for none): past the server's maximum, or outside the range what
// describes.
func timeError(err error, v *fastjson.Value, what string) *decode.Error {
	if err == nil {
		return nil
	}
	var past *chunk.PastError
	if errors.As(err, &past) {
		return pastRange(v, past.Error())
	}
	return newError(decode.ReasonOutOfRange, v, what)
}

// pastRange is the out_of_range error of a date past the server's range:
// `value "2106-02-08": Date 2106-02-08 is past the server's maximum ...`.
func pastRange(v *fastjson.Value, msg string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: errors.New("value " + shown(v) + ": " + msg)}
}

// unitDigits is log10 of decode.EpochUnit.
func unitDigits(v float64) int {
	switch decode.EpochUnit(v) {
	case 1e9:
		return 9
	case 1e6:
		return 6
	case 1e3:
		return 3
	}
	return 0
}

// epochTicks converts an epoch number (seconds or, by the magnitude
// heuristic of decode.EpochSeconds, a finer unit; negative numbers too) to ticks of
// 10^-p seconds, rounding down. ok is false when the result overflows int64.
func epochTicks(n *decode.Number, p int) (int64, bool) {
	f, ok := n.Float(64)
	if !ok {
		return 0, false
	}
	e := n.Exp - len(n.Frac) + p - unitDigits(math.Abs(f))
	nd := len(n.Int) + len(n.Frac)
	const limit = 1 << 63
	var mag uint64
	inexact := false
	for i := 0; i < nd; i++ {
		c := uint64(n.Digit(i) - '0')
		if e < 0 && i >= nd+e {
			inexact = inexact || c != 0
			continue
		}
		if mag > (limit-c)/10 {
			return 0, false
		}
		mag = mag*10 + c
	}
	for ; e > 0 && mag != 0; e-- {
		if mag > limit/10 {
			return 0, false
		}
		mag *= 10
	}
	if !n.Neg {
		if mag > math.MaxInt64 {
			return 0, false
		}
		return int64(mag), true
	}
	if inexact {
		mag++
	}
	if mag > limit {
		return 0, false
	}
	return int64(-mag), true
}

// ticksOf returns the ticks of 10^-p seconds since the epoch a date-time
// string (fractional seconds kept to p digits, the rest dropped; without
// an offset, local time in zone z) or epoch number holds, within [lo, hi]
// ticks; what describes the range in errors.
func (d *Decoder) ticksOf(v *fastjson.Value, p int, z *chunk.Zone, lo, hi int64, what string) (int64, *decode.Error) {
	var ticks int64
	ok := false
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if n, isNum := decode.ParseNumber(b); isNum {
			ticks, ok = epochTicks(&n, p)
			break
		}
		if d.layout != "" {
			if t, err := time.Parse(d.layout, string(b)); err == nil {
				sec := t.Unix()
				if z != nil && !d.layoutZoned {
					sec = z.Instant(sec)
				}
				if sec < lo/decode.Pow10[p]-1 || sec > hi/decode.Pow10[p]+1 {
					break
				}
				ticks, ok = sec*decode.Pow10[p]+int64(t.Nanosecond())/decode.Pow10[9-p], true
				break
			}
		}
		sec, zoned, isTime := decode.ParseTimeZoned(b)
		if !isTime {
			break
		}
		if z != nil && !zoned {
			sec = z.Instant(sec)
		}
		// Bound the seconds first so the multiplication cannot overflow.
		if sec < lo/decode.Pow10[p]-1 || sec > hi/decode.Pow10[p]+1 {
			break
		}
		ticks, ok = sec*decode.Pow10[p], true
		if len(b) > 20 && b[19] == '.' {
			// decode.ParseTime checked the form: digits follow up to the zone.
			frac := b[20:]
			for i := 0; i < p; i++ {
				if i < len(frac) && frac[i] >= '0' && frac[i] <= '9' {
					ticks += int64(frac[i]-'0') * decode.Pow10[p-1-i]
				} else {
					break
				}
			}
		}
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return 0, e
		}
		ticks, ok = epochTicks(&n, p)
	default:
		return 0, wrongType(v, "a date-time string or epoch number")
	}
	if !ok || ticks < lo || ticks > hi {
		return 0, newError(decode.ReasonOutOfRange, v, what)
	}
	return ticks, nil
}

func setDateTime64(ts chunk.Times, p int, z *chunk.Zone) setter {
	lo, hi := chunk.DateTime64Range(p)
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		t, e := d.ticksOf(v, p, z, lo, hi, decode.NotDateTime64)
		if e != nil {
			return e
		}
		return timeError(ts.AppendTicks(col, t), v, decode.NotDateTime64)
	}
}

func setDate32(ts chunk.Times) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		if v.Type() == fastjson.TypeString {
			if done, e := dateString(ts, v, col, decode.NotDate32); done {
				return e
			}
		}
		sec, e := d.ticksOf(v, 0, nil, chunk.Date32Min*86400, (chunk.Date32Max+1)*86400-1, decode.NotDate32)
		if e != nil {
			return e
		}
		return timeError(ts.AppendSeconds(col, sec), v, decode.NotDate32)
	}
}

// timeText reads a date-time string: with the configured layout first,
// then as RFC 3339 or ClickHouse's "YYYY-MM-DD hh:mm:ss". A text without
// an offset is local time in zone z (nil: UTC).
func (d *Decoder) timeText(b []byte, z *chunk.Zone) (int64, bool) {
	if d.layout != "" {
		if t, err := time.Parse(d.layout, string(b)); err == nil {
			if z != nil && !d.layoutZoned {
				return z.Instant(t.Unix()), true
			}
			return t.Unix(), true
		}
	}
	return decode.ParseTimeIn(b, z)
}
