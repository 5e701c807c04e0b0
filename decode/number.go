package decode

import (
	"math"
	"math/bits"
	"strconv"
	"unsafe"
)

// number is a JSON number split into its parts. The digit slices point
// into the text it was parsed from.
type number struct {
	neg  bool
	ip   []byte // integer part digits, no sign
	fp   []byte // fraction digits, without the dot
	exp  int    // exponent value, clamped to ±maxExp
	text []byte // the whole number text
}

// maxExp bounds the exponent kept from the text, so huge exponents cannot
// overflow int arithmetic; anything this large is out of every range.
const maxExp = 1 << 20

// parseNumber parses b as a strict JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func parseNumber(b []byte) (n number, ok bool) {
	n.text = b
	i := 0
	if i < len(b) && b[i] == '-' {
		n.neg = true
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
	n.ip = b[start:i]
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == fs {
			return n, false
		}
		n.fp = b[fs:i]
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
		n.exp = e
	}
	return n, i == len(b)
}

// digit returns the i-th significant digit of ip followed by fp.
func (n *number) digit(i int) byte {
	if i < len(n.ip) {
		return n.ip[i]
	}
	return n.fp[i-len(n.ip)]
}

// magnitude returns |n| as an integer. integral is false when n has a
// nonzero fractional part; overflow is true when |n| > MaxUint64. Forms like
// 1e3 and 10.0 are integral.
func (n *number) magnitude() (mag uint64, integral, overflow bool) {
	lo, hi, e := n.significant()
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
		l2, c := bits.Add64(l, uint64(n.digit(i)-'0'), 0)
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

// intResult is the outcome of converting a number to an integer type.
type intResult int

const (
	intOK intResult = iota
	intFraction
	intRange
)

// signed converts n to an int64 within [lo, hi].
func (n *number) signed(lo, hi int64) (int64, intResult) {
	mag, integral, overflow := n.magnitude()
	switch {
	case !integral:
		return 0, intFraction
	case overflow:
		return 0, intRange
	}
	var v int64
	if n.neg {
		if mag > 1<<63 {
			return 0, intRange
		}
		v = int64(-mag) // -(1<<63) wraps to MinInt64 as intended
	} else {
		if mag > math.MaxInt64 {
			return 0, intRange
		}
		v = int64(mag)
	}
	if v < lo || v > hi {
		return 0, intRange
	}
	return v, intOK
}

// unsigned converts n to a uint64 within [0, hi]; -0 is 0.
func (n *number) unsigned(hi uint64) (uint64, intResult) {
	mag, integral, overflow := n.magnitude()
	switch {
	case !integral:
		return 0, intFraction
	case overflow || mag > hi || (n.neg && mag != 0):
		return 0, intRange
	}
	return mag, intOK
}

// float converts n to a float of the given bit size; ok is false when it
// overflows the type.
func (n *number) float(bitSize int) (float64, bool) {
	if bitSize == 64 {
		if f, ok := n.exactFloat64(); ok {
			return f, true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(n.text), len(n.text)), bitSize)
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
func (n *number) exactFloat64() (float64, bool) {
	if len(n.ip)+len(n.fp) > 15 {
		return 0, false
	}
	var m uint64
	for _, c := range n.ip {
		m = m*10 + uint64(c-'0')
	}
	for _, c := range n.fp {
		m = m*10 + uint64(c-'0')
	}
	e := n.exp - len(n.fp)
	f := float64(m)
	switch {
	case e == 0:
	case e > 0 && e <= 22:
		f *= exactPow10[e]
	case e < 0 && e >= -22:
		f /= exactPow10[-e]
	default:
		return 0, false
	}
	if n.neg {
		f = -f
	}
	return f, true
}

// significant returns the digits of n without leading and trailing zeros,
// as the range [lo, hi) of n.digit, and the power of ten of the last one.
func (n *number) significant() (lo, hi, e int) {
	lo, hi = 0, len(n.ip)+len(n.fp)
	e = n.exp - len(n.fp)
	for lo < hi && n.digit(lo) == '0' {
		lo++
	}
	for hi > lo && n.digit(hi-1) == '0' {
		hi--
		e++
	}
	return lo, hi, e
}
