package decode

import (
	"math"
	"math/bits"
	"strconv"
	"unsafe"
)

// Number is a JSON number split into its parts (the JSON decoder's
// numbers, and the Avro decoder's numeric map keys). The digit slices
// point into the text it was parsed from.
type Number struct {
	Neg  bool
	Int  []byte // integer part digits, no sign
	Frac []byte // fraction digits, without the dot
	Exp  int    // exponent value, clamped to ±maxExp
	Text []byte // the whole number text
}

// maxExp bounds the exponent kept from the text, so huge exponents cannot
// overflow int arithmetic; anything this large is out of every range.
const maxExp = 1 << 20

// ParseNumber parses b as a strict JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func ParseNumber(b []byte) (n Number, ok bool) {
	n.Text = b
	i := 0
	if i < len(b) && b[i] == '-' {
		n.Neg = true
		i++
	}
	start := i
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i == start {
		return n, false
	}
	n.Int = b[start:i]
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == fs {
			return n, false
		}
		n.Frac = b[fs:i]
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		es := i
		e := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if e < maxExp {
				e = e*10 + int(b[i]-'0')
			}
			i++
		}
		if i == es {
			return n, false
		}
		e = min(e, maxExp)
		if eneg {
			e = -e
		}
		n.Exp = e
	}
	return n, i == len(b)
}

// Digit returns the i-th significant digit of ip followed by fp.
func (n *Number) Digit(i int) byte {
	if i < len(n.Int) {
		return n.Int[i]
	}
	return n.Frac[i-len(n.Int)]
}

// magnitude returns |n| as an integer. integral is false when n has a
// nonzero fractional part; overflow is true when |n| > MaxUint64. Forms like
// 1e3 and 10.0 are integral.
func (n *Number) magnitude() (mag uint64, integral, overflow bool) {
	lo, hi, e := n.Significant()
	if lo == hi {
		return 0, true, false
	}
	if e < 0 {
		return 0, false, false
	}
	if hi-lo+e > 20 {
		return 0, true, true
	}
	for i := lo; i < hi; i++ {
		h, l := bits.Mul64(mag, 10)
		l2, c := bits.Add64(l, uint64(n.Digit(i)-'0'), 0)
		if h != 0 || c != 0 {
			return 0, true, true
		}
		mag = l2
	}
	for ; e > 0; e-- {
		h, l := bits.Mul64(mag, 10)
		if h != 0 {
			return 0, true, true
		}
		mag = l
	}
	return mag, true, false
}

// IntResult is the outcome of converting a number to an integer type.
type IntResult int

const (
	IntOK IntResult = iota
	IntFraction
	IntRange
)

// Signed converts n to an int64 within [lo, hi].
func (n *Number) Signed(lo, hi int64) (int64, IntResult) {
	mag, integral, overflow := n.magnitude()
	switch {
	case !integral:
		return 0, IntFraction
	case overflow:
		return 0, IntRange
	}
	var v int64
	if n.Neg {
		if mag > 1<<63 {
			return 0, IntRange
		}
		v = int64(-mag) // -(1<<63) wraps to MinInt64 as intended
	} else {
		if mag > math.MaxInt64 {
			return 0, IntRange
		}
		v = int64(mag)
	}
	if v < lo || v > hi {
		return 0, IntRange
	}
	return v, IntOK
}

// Unsigned converts n to a uint64 within [0, hi]; -0 is 0.
func (n *Number) Unsigned(hi uint64) (uint64, IntResult) {
	mag, integral, overflow := n.magnitude()
	switch {
	case !integral:
		return 0, IntFraction
	case overflow || mag > hi || (n.Neg && mag != 0):
		return 0, IntRange
	}
	return mag, IntOK
}

// Float converts n to a float of the given bit size; ok is false when it
// overflows the type.
func (n *Number) Float(bitSize int) (float64, bool) {
	if bitSize == 64 {
		if f, ok := n.exactFloat64(); ok {
			return f, true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(n.Text), len(n.Text)), bitSize)
	return f, err == nil
}

// pow10 are the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactFloat64 is the common case of a decimal of at most 15 digits
// scaled by at most 10^±22 (Clinger's fast path): the digits and the power
// of ten are exact float64 values, so one multiplication or division is
// the correctly rounded result, the one strconv.ParseFloat returns. ok is
// false for anything else.
func (n *Number) exactFloat64() (float64, bool) {
	if len(n.Int)+len(n.Frac) > 15 {
		return 0, false
	}
	var m uint64
	for _, c := range n.Int {
		m = m*10 + uint64(c-'0')
	}
	for _, c := range n.Frac {
		m = m*10 + uint64(c-'0')
	}
	return ExactDecimal(m, n.Exp-len(n.Frac), n.Neg)
}

// ExactDecimal is ±m × 10^e by Clinger's fast path, for m of at most 15
// digits: one multiplication or division of exact float64 values, the
// correctly rounded result. ok is false when |e| > 22.
func ExactDecimal(m uint64, e int, neg bool) (f float64, ok bool) {
	f = float64(m)
	switch {
	case e == 0:
	case e > 0 && e <= 22:
		f *= exactPow10[e]
	case e < 0 && e >= -22:
		f /= exactPow10[-e]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// Significant returns the digits of n without leading and trailing zeros,
// as the range [lo, hi) of n.Digit, and the power of ten of the last one.
func (n *Number) Significant() (lo, hi, e int) {
	lo, hi = 0, len(n.Int)+len(n.Frac)
	e = n.Exp - len(n.Frac)
	for lo < hi && n.Digit(lo) == '0' {
		lo++
	}
	for hi > lo && n.Digit(hi-1) == '0' {
		hi--
		e++
	}
	return lo, hi, e
}

// Wide converts n to an integer of words 64-bit words, in two's complement
// when signed, exactly as signed and unsigned do for 64 bits.
func (n *Number) Wide(words int, signed bool) (w [4]uint64, r IntResult) {
	lo, hi, e := n.Significant()
	if lo == hi {
		return w, IntOK
	}
	if e < 0 {
		return w, IntFraction
	}
	if hi-lo+e > 78 { // 2^256 has 78 digits
		return w, IntRange
	}
	mulAdd := func(m, c uint64) bool {
		for i := 0; i < words; i++ {
			h, l := bits.Mul64(w[i], m)
			l, carry := bits.Add64(l, c, 0)
			w[i], c = l, h+carry
		}
		return c == 0
	}
	for i := lo; i < hi; i++ {
		if !mulAdd(10, uint64(n.Digit(i)-'0')) {
			return w, IntRange
		}
	}
	for ; e > 0; e-- {
		if !mulAdd(10, 0) {
			return w, IntRange
		}
	}
	top := w[words-1] >> 63
	switch {
	case !signed && n.Neg:
		return w, IntRange // not zero: zero returned above
	case signed && !n.Neg && top != 0:
		return w, IntRange
	case signed && n.Neg && top != 0:
		// Only -2^(bits-1) has its top bit set.
		if w[words-1] != 1<<63 {
			return w, IntRange
		}
		for i := 0; i < words-1; i++ {
			if w[i] != 0 {
				return w, IntRange
			}
		}
	}
	if n.Neg {
		var c uint64 = 1
		for i := 0; i < words; i++ {
			w[i], c = bits.Add64(^w[i], c, 0)
		}
	}
	return w, IntOK
}
