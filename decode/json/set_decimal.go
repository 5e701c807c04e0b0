package json

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setDecimal stores a number in a Decimal column through dec (nil when
// the type's precision is unknown: the number's text is stored as is).
//
// The value must have at most P-S digits before the point, whatever its
// form (1e30 has 31), and no nonzero digit past the scale (19.999 into
// Decimal(12, 2) is refused, as the server refuses it; 19.990 is 19.99).
// A number without an exponent is kept in plain text as written; one with
// an exponent is stored as the plain text of its value, so that a huge
// exponent costs no big-number arithmetic later.
func setDecimal(dec chunk.Decimals, t *chunk.Type) setter {
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
		if !bytes.ContainsAny(n.Text, "eE") {
			err = dec.AppendText(col, n.Text)
		} else {
			d.dec = append(append(d.dec[:0], n.Int...), n.Frac...)
			err = dec.AppendDigits(col, n.Neg, d.dec, n.Exp-len(n.Frac))
		}
		if err != nil {
			return decimalError(err, v, t)
		}
		return nil
	}
}

// decimalError is the out_of_range error of a number the Decimal type t
// refused: too many digits before the point, or a nonzero digit past the
// scale.
func decimalError(err error, v *fastjson.Value, t *chunk.Type) *decode.Error {
	if errors.Is(err, chunk.ErrScale) {
		return newError(decode.ReasonOutOfRange, v, fmt.Sprintf("has more fraction digits than %s keeps (scale %d)", t.Name, t.Scale))
	}
	return newError(decode.ReasonOutOfRange, v, fmt.Sprintf("has more digits before the point than %s holds", t.Name))
}
