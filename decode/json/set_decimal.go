package json

import (
	"bytes"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setDecimal stores decimal text; intDigits is the precision minus the
// scale, or negative when the type's precision is unknown.
//
// The value must have at most intDigits digits before the point, whatever
// its form (1e30 has 31). Digits past the scale are kept in plain text as
// written: the insert truncates them toward zero. A number with an
// exponent is stored as the plain text of its value truncated toward zero
// at the scale (what the insert would make of it), so that a huge negative
// exponent costs no big-number arithmetic later.
func setDecimal(intDigits, scale int) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		if intDigits < 0 {
			col.(*chunk.Strings).Append(n.Text)
			return nil
		}
		lo, hi, exp := n.Significant()
		// hi-lo+exp is the number of digits before the point (<= 0 for
		// |n| < 1); exp is clamped to ±maxExp, so this cannot overflow.
		if lo < hi && hi-lo+exp > intDigits {
			return newError(decode.ReasonOutOfRange, v, "out of range")
		}
		if bytes.IndexAny(n.Text, "eE") < 0 {
			col.(*chunk.Strings).Append(n.Text)
			return nil
		}
		d.dec = appendPlainDecimal(d.dec[:0], &n, lo, hi, exp, scale)
		col.(*chunk.Strings).Append(d.dec)
		return nil
	}
}

// appendPlainDecimal appends the plain text (no exponent) of n, whose
// significant digits are n.Digit(lo..hi-1) with the last one at 10^exp,
// truncated toward zero at scale digits after the point. The caller has
// checked the digits before the point; the work is bounded by them and
// the scale, never by the exponent.
func appendPlainDecimal(dst []byte, n *decode.Number, lo, hi, exp, scale int) []byte {
	top := hi - lo + exp // the highest digit is at 10^(top-1)
	digitAt := func(p int) byte {
		if i := hi - 1 - (p - exp); i >= lo && i < hi {
			return n.Digit(i)
		}
		return '0'
	}
	if lo == hi || top-1 < -scale {
		return append(dst, '0') // zero, or nothing left at the scale
	}
	if n.Neg {
		dst = append(dst, '-')
	}
	if top > 0 {
		for p := top - 1; p >= 0; p-- {
			dst = append(dst, digitAt(p))
		}
	} else {
		dst = append(dst, '0')
	}
	// The lowest nonzero digit is at 10^exp; nothing below 10^-scale.
	if last := max(exp, -scale); last < 0 {
		dst = append(dst, '.')
		for p := -1; p >= last; p-- {
			dst = append(dst, digitAt(p))
		}
	}
	return dst
}
