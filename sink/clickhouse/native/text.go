package native

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/etl-project/etl/chunk"
)

// convNode: values kept as text whose wire form (width bytes each) is
// computed and checked by prepare into a scratch buffer; NULL rows are
// zero.
type convNode struct {
	width int
	conv  func(dst []byte, s string) error
	buf   []byte
}

func (n *convNode) prepare(cols []chunk.Column, nulls [][]uint8) error {
	rows := 0
	for _, c := range cols {
		rows += c.Len()
	}
	n.buf = slices.Grow(n.buf[:0], rows*n.width)[:rows*n.width]
	clear(n.buf)
	dst := n.buf
	for k, c := range cols {
		s := c.(*chunk.Strings)
		var nl []uint8
		if nulls != nil {
			nl = nulls[k]
		}
		for i := range s.Ends {
			if !isNull(nl, i) {
				if err := n.conv(dst[:n.width], s.Value(i)); err != nil {
					return valueError(k, i, err)
				}
			}
			dst = dst[n.width:]
		}
	}
	return nil
}

func (n *convNode) prefix(b []byte) []byte { return b }

func (n *convNode) encode(b []byte) []byte { return append(b, n.buf...) }

// convKeep is the largest buffer of converted values a convNode keeps
// for the next block: the encoder is kept with its pooled connection,
// outside the byte budget.
const convKeep = 4 << 20

func (n *convNode) release() {
	if cap(n.buf) > convKeep {
		n.buf = nil
	}
}

func (n *convNode) scratch() int { return cap(n.buf) }

func (n *convNode) size() int { return len(n.buf) }

// convUUID parses a UUID as the driver does (google/uuid's Parse) and
// writes it as ClickHouse stores it: two little-endian 64-bit halves.
func convUUID(dst []byte, s string) error {
	u, err := uuid.Parse(s)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(dst, binary.BigEndian.Uint64(u[:8]))
	binary.LittleEndian.PutUint64(dst[8:], binary.BigEndian.Uint64(u[8:]))
	return nil
}

// convEnum writes an Enum8/Enum16 value from its name.
func convEnum(t *chunk.Type) func(dst []byte, s string) error {
	return func(dst []byte, s string) error {
		v, ok := t.Enum[s]
		if !ok {
			return fmt.Errorf("unknown element %q of %s", s, t.Name)
		}
		if len(dst) == 1 {
			dst[0] = byte(int8(v))
		} else {
			binary.LittleEndian.PutUint16(dst, uint16(v))
		}
		return nil
	}
}

// convDecimal writes a Decimal(P, S) from its text as the driver does:
// the value (shopspring/decimal's syntax) scaled by 10^S and truncated
// toward zero, refused when it does not fit the width's signed integer.
// Plain decimal text ("-123.45") with at most 18 significant digits is
// converted without the big-number path.
func convDecimal(t *chunk.Type, width int) func(dst []byte, s string) error {
	scale := t.Scale
	return func(dst []byte, s string) error {
		if v, ok := plainDecimal(s, scale); ok && (width > 4 || (v >= math.MinInt32 && v <= math.MaxInt32)) {
			putSigned(dst, v)
			return nil
		}
		d, err := decimal.NewFromString(s)
		if err != nil {
			return fmt.Errorf("could not convert %q to decimal: %w", s, err)
		}
		bi := decimal.NewFromBigInt(d.Coefficient(), d.Exponent()+int32(scale)).BigInt()
		if err := bigFits(bi, width); err != nil {
			return fmt.Errorf("value %s overflows %s: %w", d.String(), t.Name, err)
		}
		putBig(dst, bi)
		return nil
	}
}

// plainDecimal converts text of the form -?digits(.digits)? with at most
// 18 significant digits (after scaling) to the integer v*10^scale,
// truncating extra fraction digits. ok is false for anything else.
func plainDecimal(s string, scale int) (v int64, ok bool) {
	neg := false
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	digits := 0
	var u uint64
	start := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if u != 0 || s[i] != '0' {
			digits++
		}
		u = u*10 + uint64(s[i]-'0')
		if digits > 18 {
			return 0, false
		}
	}
	if i == start {
		return 0, false
	}
	frac := 0
	if i < len(s) && s[i] == '.' {
		i++
		fstart := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if frac < scale {
				if u != 0 || s[i] != '0' {
					digits++
				}
				u = u*10 + uint64(s[i]-'0')
				frac++
				if digits > 18 {
					return 0, false
				}
			}
		}
		if i == fstart {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	for ; frac < scale; frac++ {
		if u != 0 {
			digits++
		}
		u *= 10
		if digits > 18 {
			return 0, false
		}
	}
	v = int64(u)
	if neg {
		v = -v
	}
	return v, true
}

// putSigned writes v as a little-endian two's complement integer of
// len(dst) bytes (4, 8, 16 or 32; v fits a 4-byte one when len is 4).
func putSigned(dst []byte, v int64) {
	switch len(dst) {
	case 4:
		binary.LittleEndian.PutUint32(dst, uint32(v))
	default:
		binary.LittleEndian.PutUint64(dst, uint64(v))
		fill := byte(0)
		if v < 0 {
			fill = 0xff
		}
		for i := 8; i < len(dst); i++ {
			dst[i] = fill
		}
	}
}

// bigFits reports whether v fits a signed integer of width bytes, as the
// driver checks it.
func bigFits(v *big.Int, width int) error {
	bits := width * 8
	if v.Sign() >= 0 {
		if v.BitLen() > bits-1 {
			return fmt.Errorf("value overflows %d-byte signed buffer", width)
		}
	} else if new(big.Int).Not(v).BitLen() > bits-1 {
		return fmt.Errorf("value overflows %d-byte signed buffer", width)
	}
	return nil
}

// bitsPerWord is the size of a big.Word.
const bitsPerWord = 32 << (^big.Word(0) >> 63)

// putBig writes v (which fits) as a little-endian two's complement integer
// of len(dst) bytes.
func putBig(dst []byte, v *big.Int) {
	neg := v.Sign() < 0
	m := v
	if neg {
		m = new(big.Int).Not(v) // -v-1 >= 0; its bits inverted are v's
	}
	clear(dst)
	words := m.Bits()
	for i := range dst {
		wi, shift := i/(bitsPerWord/8), uint(i%(bitsPerWord/8))*8
		if wi < len(words) {
			dst[i] = byte(uint(words[wi]) >> shift)
		}
		if neg {
			dst[i] = ^dst[i]
		}
	}
}
