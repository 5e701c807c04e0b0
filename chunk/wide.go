package chunk

import (
	"math/big"
	"time"
)

// DateTime64 is a DateTime64(P) column: ticks of 10^-P seconds since the
// epoch, UTC.
//
// The decoders, the transform and Time carry every value through
// nanoseconds since the epoch (an int64), so only
// 1677-09-21T00:12:43.145224192Z..2262-04-11T23:47:16.854775807Z is taken;
// decoders keep to that.
type DateTime64 struct {
	Fixed[int64]
	// Precision is P, 0 to 9.
	Precision int
}

// Time returns row i as a time.Time in UTC.
func (c *DateTime64) Time(i int) time.Time {
	return ticksTime(c.Data[i], c.Precision)
}

func ticksTime(v int64, p int) time.Time {
	scale := int64(1)
	for range p {
		scale *= 10
	}
	sec, frac := v/scale, v%scale
	if frac < 0 {
		sec, frac = sec-1, frac+scale
	}
	return time.Unix(sec, frac*(1e9/scale)).UTC()
}

// Times returns every row as a time.Time in UTC, in a slice built on each
// call.
func (c *DateTime64) Times() []time.Time {
	out := make([]time.Time, len(c.Data))
	for i, v := range c.Data {
		out[i] = ticksTime(v, c.Precision)
	}
	return out
}

// Row implements Column: Time(i).
func (c *DateTime64) Row(i int) any { return c.Time(i) }

// BigInt is an Int128, UInt128, Int256 or UInt256 column: each value is
// Words little-endian 64-bit words of two's complement.
type BigInt struct {
	// Words is 2 for the 128-bit types, 4 for the 256-bit ones.
	Words int
	// Signed is true for Int128 and Int256.
	Signed bool
	// Data holds row i as Data[i*Words:(i+1)*Words], its wire layout.
	Data []uint64
	def  []uint64 // AppendDefault's words, nil for zero
}

// Append appends one value given as its little-endian words (len Words).
func (c *BigInt) Append(words []uint64) { c.Data = append(c.Data, words[:c.Words]...) }

// Len implements Column.
func (c *BigInt) Len() int { return len(c.Data) / c.Words }

// Size implements Column.
func (c *BigInt) Size() int { return 8 * len(c.Data) }

// AppendDefault implements Column.
func (c *BigInt) AppendDefault() {
	if c.def != nil {
		c.Data = append(c.Data, c.def...)
		return
	}
	for range c.Words {
		c.Data = append(c.Data, 0)
	}
}

// Truncate implements Column.
func (c *BigInt) Truncate(n int) { c.Data = c.Data[:n*c.Words] }

// Big returns row i as a big.Int.
func (c *BigInt) Big(i int) *big.Int {
	var v big.Int
	c.set(&v, i)
	return &v
}

// set sets v to row i.
func (c *BigInt) set(v *big.Int, i int) {
	w := c.Data[i*c.Words : (i+1)*c.Words]
	neg := c.Signed && w[c.Words-1]>>63 != 0
	words := make([]big.Word, 0, c.Words*(64/bitsPerWord))
	for _, x := range w {
		if neg {
			x = ^x // |v| = ^w + 1
		}
		for k := 0; k < 64; k += bitsPerWord {
			words = append(words, big.Word(x>>k))
		}
	}
	v.SetBits(words)
	if neg {
		v.Add(v, bigOne)
		v.Neg(v)
	}
}

const bitsPerWord = 32 << (^big.Word(0) >> 63)

var bigOne = big.NewInt(1)

// Bigs returns every row as a big.Int, in a slice built on each call.
func (c *BigInt) Bigs() []big.Int {
	out := make([]big.Int, c.Len())
	for i := range out {
		c.set(&out[i], i)
	}
	return out
}

// Row implements Column: Big(i).
func (c *BigInt) Row(i int) any { return c.Big(i) }
