package avro

import (
	"fmt"
	"math"
	"strconv"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setDecimal converts a bytes (size < 0) or fixed decimal of scale
// ws to decimal text of scale cs with at most prec digits (0: any).
func setDecimal(size, ws, cs, prec int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		var b []byte
		var e *decode.Error
		if size < 0 {
			b, e = r.bytes()
		} else {
			b, e = r.fixed(size)
		}
		if e != nil {
			return e
		}
		neg, ok := r.decimalDigits(b)
		if ok {
			r.text, ok = decimalText(r.text[:0], neg, r.digits, ws, cs, prec)
		}
		if !ok {
			return decimalRange(r, b, ws, prec, cs)
		}
		col.(*chunk.Strings).Append(r.text)
		return nil
	}
}

func setIntDecimal(isInt bool, cs, prec int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		mag := uint64(v)
		if v < 0 {
			mag = -mag
		}
		r.digits = strconv.AppendUint(r.digits[:0], mag, 10)
		var ok bool
		r.text, ok = decimalText(r.text[:0], v < 0, r.digits, 0, cs, prec)
		if !ok {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %d has more digits than Decimal(%d, %d) holds", v, prec, cs)}
		}
		col.(*chunk.Strings).Append(r.text)
		return nil
	}
}

func decimalRange(r *avroReader, b []byte, ws, prec, cs int) *decode.Error {
	neg, ok := r.decimalDigits(b)
	if !ok {
		return &decode.Error{Reason: decode.ReasonOutOfRange,
			Err: fmt.Errorf("decimal value of %d bytes is longer than %d bytes", len(b), maxDecimalBytes)}
	}
	t, _ := decimalText(nil, neg, r.digits, ws, ws, 0)
	return &decode.Error{Reason: decode.ReasonOutOfRange,
		Err: fmt.Errorf("value %s has more digits than Decimal(%d, %d) holds", t, prec, cs)}
}

// maxDecimalBytes bounds the unscaled value of a decimal (after
// dropping redundant sign bytes): 64 bytes hold 154 digits, beyond any
// ClickHouse Decimal.
const maxDecimalBytes = 64

// decimalDigits puts the decimal digits of the magnitude of the
// big-endian two's complement integer b in r.digits and returns its sign;
// ok is false when b is longer than maxDecimalBytes.
func (r *avroReader) decimalDigits(b []byte) (neg, ok bool) {
	if len(b) == 0 {
		r.digits = append(r.digits[:0], '0')
		return false, true
	}
	neg = b[0]&0x80 != 0
	// Drop sign-extension bytes.
	for len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
		b = b[1:]
	}
	if len(b) <= 8 {
		var v uint64
		if neg {
			v = math.MaxUint64 // sign extension
		}
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
		if neg {
			v = -v
		}
		r.digits = strconv.AppendUint(r.digits[:0], v, 10)
		return neg, true
	}
	if len(b) > maxDecimalBytes {
		return neg, false
	}
	// The magnitude as big-endian 32-bit limbs, then repeated division by
	// 1e9 for 9 digits at a time.
	nl := (len(b) + 3) / 4
	limbs := r.limbs[:0]
	for i := 0; i < nl; i++ {
		limbs = append(limbs, 0)
	}
	pad := nl*4 - len(b)
	for i, c := range b {
		j := pad + i
		if neg {
			c = ^c
		}
		limbs[j/4] |= uint32(c) << (8 * (3 - j%4))
	}
	if neg { // two's complement: the magnitude is ^b + 1 (fits: ^b < 2^(8*len(b)-1))
		for i := nl - 1; i >= 0; i-- {
			limbs[i]++
			if limbs[i] != 0 {
				break
			}
		}
	}
	chunks := r.chunks[:0]
	for start := 0; start < nl; {
		var rem uint64
		for i := start; i < nl; i++ {
			cur := rem<<32 | uint64(limbs[i])
			limbs[i] = uint32(cur / 1e9)
			rem = cur % 1e9
		}
		chunks = append(chunks, uint32(rem))
		for start < nl && limbs[start] == 0 {
			start++
		}
	}
	d := r.digits[:0]
	d = strconv.AppendUint(d, uint64(chunks[len(chunks)-1]), 10)
	for i := len(chunks) - 2; i >= 0; i-- {
		var nine [9]byte
		v := chunks[i]
		for k := 8; k >= 0; k-- {
			nine[k] = byte('0' + v%10)
			v /= 10
		}
		d = append(d, nine[:]...)
	}
	r.digits, r.limbs, r.chunks = d, limbs, chunks
	return neg, true
}

// decimalText appends to dst the decimal text of the unscaled value
// whose magnitude has the decimal digits d (no leading zeros) and scale ws,
// at scale cs: digits beyond cs are dropped. ok is false when the result
// has more than prec significant digits (prec 0: unchecked).
func decimalText(dst []byte, neg bool, d []byte, ws, cs, prec int) ([]byte, bool) {
	var zeros int // zeros appended to d
	if cs < ws {
		drop := ws - cs
		if drop >= len(d) {
			d = d[:0]
		} else {
			d = d[:len(d)-drop]
		}
	} else {
		zeros = cs - ws
	}
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	if len(d) == 0 {
		zeros, neg = 0, false
	}
	n := len(d) + zeros // significant digits
	if prec > 0 && n > prec {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	if n <= cs {
		dst = append(dst, '0')
		if cs > 0 {
			dst = append(dst, '.')
			for i := n; i < cs; i++ {
				dst = append(dst, '0')
			}
		}
		dst = append(dst, d...)
		for i := 0; i < zeros; i++ {
			dst = append(dst, '0')
		}
		return dst, true
	}
	intDigits := n - cs
	for i := 0; i < n; i++ {
		if i == intDigits {
			dst = append(dst, '.')
		}
		if i < len(d) {
			dst = append(dst, d[i])
		} else {
			dst = append(dst, '0')
		}
	}
	return dst, true
}
