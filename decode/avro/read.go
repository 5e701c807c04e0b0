package avro

import (
	"fmt"
	"math"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// avroReader reads Avro binary encoding from buf.
type avroReader struct {
	buf []byte
	pos int
	// emptyLeft is how many more items that take no bytes the datum may
	// hold (see maxEmptyItems).
	emptyLeft int64
	// Scratch buffers of the decimal conversion.
	digits []byte
	limbs  []uint32
	chunks []uint32
	// rg is the server's Date and DateTime ranges (Options.Ranges);
	// zero in the reader that checks reader defaults, which then get the
	// default ranges.
	rg chunk.ServerRanges
}

func (r *avroReader) corrupt(what string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("%s at byte %d", what, r.pos)}
}

func (r *avroReader) truncated() *decode.Error {
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("datum truncated at byte %d of %d", r.pos, len(r.buf))}
}

// long reads a zig-zag varint.
func (r *avroReader) long() (int64, *decode.Error) {
	if i := r.pos; i < len(r.buf) && r.buf[i] < 0x80 {
		u := uint64(r.buf[i])
		r.pos = i + 1
		return int64(u>>1) ^ -int64(u&1), nil
	}
	return r.longSlow()
}

func (r *avroReader) longSlow() (int64, *decode.Error) {
	// The position is kept in a local and stored once, not at every byte.
	buf, i := r.buf, r.pos
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if i >= len(buf) {
			r.pos = i
			return 0, r.truncated()
		}
		c := buf[i]
		i++
		if shift == 63 && c > 1 {
			r.pos = i
			return 0, r.corrupt("varint beyond 64 bits")
		}
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			r.pos = i
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
}

// avroInteger reads an int (32 bits) or a long.
func (r *avroReader) integer(isInt bool) (int64, *decode.Error) {
	v, e := r.long()
	if e == nil && isInt && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, r.corrupt(fmt.Sprintf("int %d beyond 32 bits", v))
	}
	return v, e
}

func (r *avroReader) boolean() (bool, *decode.Error) {
	if r.pos >= len(r.buf) {
		return false, r.truncated()
	}
	c := r.buf[r.pos]
	if c > 1 {
		return false, r.corrupt(fmt.Sprintf("boolean byte %d", c))
	}
	r.pos++
	return c == 1, nil
}

func (r *avroReader) float() (float32, *decode.Error) {
	if len(r.buf)-r.pos < 4 {
		return 0, r.truncated()
	}
	b := r.buf[r.pos : r.pos+4]
	r.pos += 4
	return math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24), nil
}

func (r *avroReader) double() (float64, *decode.Error) {
	if len(r.buf)-r.pos < 8 {
		return 0, r.truncated()
	}
	b := r.buf[r.pos : r.pos+8]
	r.pos += 8
	return math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56), nil
}

// bytes reads a length-prefixed bytes or string; the slice shares buf.
func (r *avroReader) bytes() ([]byte, *decode.Error) {
	// A length under 64 is one byte: read here, without the call to long
	// (which is too large to be inlined).
	var n int64
	if i := r.pos; i < len(r.buf) && r.buf[i] < 0x80 {
		u := uint64(r.buf[i])
		r.pos = i + 1
		n = int64(u>>1) ^ -int64(u&1)
	} else {
		var e *decode.Error
		if n, e = r.longSlow(); e != nil {
			return nil, e
		}
	}
	if n < 0 {
		return nil, r.corrupt(fmt.Sprintf("negative length %d", n))
	}
	if n > int64(len(r.buf)-r.pos) {
		return nil, r.truncated()
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader) fixed(n int) ([]byte, *decode.Error) {
	if len(r.buf)-r.pos < n {
		return nil, r.truncated()
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// maxEmptyItems bounds the array and map items of a datum that take no
// bytes (null, empty records), which the datum's length cannot bound.
const maxEmptyItems = 1 << 16

// block reads an array or map block header: the item count (0 ends the
// array or map) and, for a negative count, the block's byte size (-1
// otherwise). A count larger than the bytes left can hold, at itemMin
// bytes per item, is corrupt.
func (r *avroReader) block(itemMin int) (n, size int64, e *decode.Error) {
	if n, e = r.long(); e != nil {
		return 0, 0, e
	}
	size = -1
	if n < 0 {
		if n == math.MinInt64 {
			return 0, 0, r.corrupt("block count out of range")
		}
		n = -n
		if size, e = r.long(); e != nil {
			return 0, 0, e
		}
		if size < 0 {
			return 0, 0, r.corrupt(fmt.Sprintf("negative block size %d", size))
		}
		if size > int64(len(r.buf)-r.pos) {
			return 0, 0, r.truncated()
		}
	}
	left := int64(len(r.buf) - r.pos)
	if itemMin > 0 && n > left/int64(itemMin) {
		return 0, 0, r.corrupt(fmt.Sprintf("block of %d items in %d bytes", n, left))
	}
	if itemMin == 0 {
		if n > r.emptyLeft {
			return 0, 0, r.corrupt(fmt.Sprintf("more than %d items that take no bytes", maxEmptyItems))
		}
		r.emptyLeft -= n
	}
	return n, size, nil
}
