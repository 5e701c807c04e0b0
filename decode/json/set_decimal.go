package json

import (
	"bytes"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setDecimal stores a number in a Decimal column through dec (nil when
// the type's precision is unknown: the number's text is stored as is).
//
// The value must have at most P-S digits before the point, whatever its
// form (1e30 has 31). Digits past the scale are kept in plain text as
// written: the insert truncates them toward zero. A number with an
// exponent is stored as the plain text of its value truncated toward zero
// at the scale (what the insert would make of it), so that a huge negative
// exponent costs no big-number arithmetic later.
func setDecimal(dec chunk.Decimals) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		if dec == nil {
			chunk.AppendString(col, n.Text)
			return nil
		}
		var err error
		if bytes.IndexAny(n.Text, "eE") < 0 {
			err = dec.AppendText(col, n.Text)
		} else {
			d.dec = append(append(d.dec[:0], n.Int...), n.Frac...)
			err = dec.AppendDigits(col, n.Neg, d.dec, n.Exp-len(n.Frac))
		}
		if err != nil {
			return newError(decode.ReasonOutOfRange, v, "out of range")
		}
		return nil
	}
}
