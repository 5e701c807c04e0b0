package avro

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setDecimal converts a bytes (size < 0) or fixed decimal of scale ws
// into a column of the Decimal type t (or, for a String column, of
// decimalString(ws)).
func setDecimal(size, ws int, t *chunk.Type) avroSetter {
	dec, _ := chunk.DecimalsOf(t)
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
		if !ok {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("decimal value of %d bytes is longer than %d bytes", len(b), maxDecimalBytes)}
		}
		if err := dec.AppendUnscaled(col, neg, r.digits, ws); err != nil {
			return decimalRange(err, neg, r.digits, ws, t)
		}
		return nil
	}
}

// decimalString is the type whose text a decimal of scale ws takes in a
// String column: the value at its own scale, any number of digits
// (precision 0 is unchecked).
func decimalString(ws int) *chunk.Type {
	return &chunk.Type{Kind: chunk.KindDecimal, Scale: ws}
}

func setIntDecimal(isInt bool, t *chunk.Type) avroSetter {
	dec, _ := chunk.DecimalsOf(t)
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if dec.AppendInt(col, v) != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %d has more digits than Decimal(%d, %d) holds", v, t.Precision, t.Scale)}
		}
		return nil
	}
}

// decimalRange is the error of a decimal that t refused (err, from
// chunk.Decimals), naming it at its writer's scale: too many digits before
// the point, or a nonzero digit past t's scale (a decimal of a larger
// scale is taken when its extra digits are zeros, never rounded).
func decimalRange(err error, neg bool, digits []byte, ws int, t *chunk.Type) *decode.Error {
	var text chunk.Strings
	dec, _ := chunk.DecimalsOf(decimalString(ws))
	_ = dec.AppendUnscaled(&text, neg, digits, ws)
	if errors.Is(err, chunk.ErrScale) {
		return &decode.Error{Reason: decode.ReasonOutOfRange,
			Err: fmt.Errorf("value %s has more fraction digits than Decimal(%d, %d) keeps (scale %d)", text.Value(0), t.Precision, t.Scale, t.Scale)}
	}
	return &decode.Error{Reason: decode.ReasonOutOfRange,
		Err: fmt.Errorf("value %s has more digits than Decimal(%d, %d) holds", text.Value(0), t.Precision, t.Scale)}
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
