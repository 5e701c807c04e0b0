package chunk

import (
	"errors"
	"strconv"
)

// The decimal family: Decimal(P, S) (and Decimal32/64/128(S)), a Strings
// holding each value's plain text ("-123.45"), which the sink's encoder
// scales by 10^S. Decoders, the transform and DEFAULT conversion append
// decimals only through a Decimals, which holds the precision and scale
// checks and builds the text, so a stored text never has a nonzero digit
// past the scale: what the column holds is the value as written.

// Decimals appends numbers to the columns of one Decimal(P, S) type,
// checking them against P and S: a value may have at most P-S digits
// before the point (leading zeros aside), whatever its form; past them it
// returns ErrRange. A nonzero digit past the scale returns ErrScale, as
// the server's own parsers refuse it ("Decimal value is too small"):
// nothing is rounded or truncated. Zeros past the scale change nothing and
// are taken (19.990 is 19.99). Text that is not a plain decimal returns
// ErrSyntax. A refused value is not appended.
//
// P <= 0 (a type the server does not have) leaves the digits before the
// point unchecked.
//
// A Decimals is stateless and safe for concurrent use; the column passed in
// must be one NewColumn made for the type (for a Nullable, its Inner).
type Decimals interface {
	// AppendDigits appends neg × digits × 10^exp (digits: ASCII '0'-'9',
	// no sign, no point; exp may be far out of any range: the work is
	// bounded by P and S, not by exp). Its text is the shortest plain
	// text of the value down to the lowest nonzero digit of digits: 1e3
	// is "1000", 1.5 at S 4 "1.5", zero "0", without a sign; 1.05 at S 1
	// is ErrScale.
	AppendDigits(col Column, neg bool, digits []byte, exp int) error
	// AppendUnscaled appends the decimal neg × digits × 10^-scale (digits
	// as for AppendDigits: an unscaled integer and its scale) with exactly
	// S fraction digits: missing ones are zeros, a nonzero one past S is
	// ErrScale; zero has no sign ("0.00").
	AppendUnscaled(col Column, neg bool, digits []byte, scale int) error
	// AppendInt appends the integer v with S fraction digits (-42 at S 2
	// is "-42.00").
	AppendInt(col Column, v int64) error
	// AppendText appends the plain decimal text -?[0-9]+(.[0-9]+)? as
	// written (zeros past S included: the insert drops them); any other
	// text (an exponent, NaN, Inf) is ErrSyntax.
	AppendText(col Column, b []byte) error
}

// DecimalsOf returns the appender of the Decimal type t (or
// LowCardinality of one), and false when t is not one.
func DecimalsOf(t *Type) (Decimals, bool) {
	t = t.Base()
	if t.Kind != KindDecimal {
		return nil, false
	}
	return &decimals{p: t.Precision, s: t.Scale}, true
}

type decimals struct{ p, s int }

// ErrScale is the error of a decimal value with a nonzero digit past its
// column's scale.
var ErrScale = errors.New("more fraction digits than the scale")

// fits reports whether a value whose highest nonzero digit is at
// 10^(top-1) (top <= 0: below 1) has at most P-S digits before the point.
func (x *decimals) fits(top int) bool { return x.p <= 0 || top <= x.p-x.s }

func (x *decimals) AppendDigits(col Column, neg bool, d []byte, exp int) error {
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
		exp++
	}
	top := len(d) + exp // the highest digit is at 10^(top-1)
	if len(d) > 0 && !x.fits(top) {
		return ErrRange
	}
	if len(d) > 0 && exp < -x.s {
		// The lowest nonzero digit is past the scale.
		return ErrScale
	}
	c := col.(*Strings)
	b := c.Buf
	if len(d) == 0 {
		c.Buf = append(b, '0')
		c.Ends = append(c.Ends, len(c.Buf))
		return nil
	}
	digitAt := func(p int) byte {
		if i := len(d) - 1 - (p - exp); i >= 0 && i < len(d) {
			return d[i]
		}
		return '0'
	}
	if neg {
		b = append(b, '-')
	}
	if top > 0 {
		for p := top - 1; p >= 0; p-- {
			b = append(b, digitAt(p))
		}
	} else {
		b = append(b, '0')
	}
	// The lowest nonzero digit is at 10^exp; nothing below 10^-S.
	if last := max(exp, -x.s); last < 0 {
		b = append(b, '.')
		for p := -1; p >= last; p-- {
			b = append(b, digitAt(p))
		}
	}
	c.Buf = b
	c.Ends = append(c.Ends, len(b))
	return nil
}

func (x *decimals) AppendUnscaled(col Column, neg bool, d []byte, scale int) error {
	cs := x.s
	zeros := 0 // zeros appended to d
	if cs < scale {
		drop := min(scale-cs, len(d))
		for _, c := range d[len(d)-drop:] {
			if c != '0' {
				return ErrScale
			}
		}
		d = d[:len(d)-drop]
	} else {
		zeros = cs - scale
	}
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	if len(d) == 0 {
		zeros, neg = 0, false
	}
	n := len(d) + zeros // significant digits at the scale
	if n > 0 && !x.fits(n-cs) {
		return ErrRange
	}
	c := col.(*Strings)
	b := c.Buf
	if neg {
		b = append(b, '-')
	}
	if n <= cs {
		b = append(b, '0')
		if cs > 0 {
			b = append(b, '.')
			for i := n; i < cs; i++ {
				b = append(b, '0')
			}
		}
		b = append(b, d...)
		for i := 0; i < zeros; i++ {
			b = append(b, '0')
		}
	} else {
		intDigits := n - cs
		for i := 0; i < n; i++ {
			if i == intDigits {
				b = append(b, '.')
			}
			if i < len(d) {
				b = append(b, d[i])
			} else {
				b = append(b, '0')
			}
		}
	}
	c.Buf = b
	c.Ends = append(c.Ends, len(b))
	return nil
}

func (x *decimals) AppendInt(col Column, v int64) error {
	mag := uint64(v)
	if v < 0 {
		mag = -mag
	}
	var buf [20]byte
	return x.AppendUnscaled(col, v < 0, strconv.AppendUint(buf[:0], mag, 10), 0)
}

func (x *decimals) AppendText(col Column, b []byte) error {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start, top := i, 0 // top: digits before the point, leading zeros aside
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if top > 0 || b[i] != '0' {
			top++
		}
	}
	if i == start {
		return ErrSyntax
	}
	frac := 0 // fraction digits down to the last nonzero one
	if i < len(b) && b[i] == '.' {
		i++
		fstart := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if b[i] != '0' {
				frac = i + 1 - fstart
			}
			i++
		}
		if i == fstart {
			return ErrSyntax
		}
	}
	if i != len(b) {
		return ErrSyntax
	}
	if !x.fits(top) {
		return ErrRange
	}
	if frac > x.s {
		return ErrScale
	}
	col.(*Strings).Append(b)
	return nil
}

// decimalNames are the decimal types' names.
var decimalNames = map[string]Kind{"Decimal": KindDecimal, "Decimal32": KindDecimal, "Decimal64": KindDecimal, "Decimal128": KindDecimal}

// decimalColumn is the column of a decimal type: Strings holding each
// value's text; the default is 0.
func decimalColumn(t *Type) (Column, bool) {
	if t.Kind != KindDecimal {
		return nil, false
	}
	return &Strings{def: []byte("0")}, true
}
