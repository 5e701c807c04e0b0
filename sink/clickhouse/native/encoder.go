package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/etl-project/etl/chunk"
)

// Native encoding (native*.go): the chgo path writes a column of a
// Native-format data block (what the ClickHouse native protocol carries in
// an INSERT) straight from the same column of several chunks, without the
// driver's intermediate columns, reading the chunks' column buffers
// through chunk's exported fields. Fixed-width values whose memory layout is the wire layout
// (integers, floats, Bool, IPv4, IPv6, DateTime64, the wide integers) are
// appended as one copy of their buffer; String values as a varint length
// and the bytes from the arena; Nullable as the null map, then the inner
// column; Array and Map as cumulative offsets, then the elements; Tuple as
// each element column in turn; LowCardinality as a dictionary built for the
// block and its keys, in the layout clickhouse-go writes.
//
// Values kept as text (Decimal, UUID, Enum) and FixedString values are
// converted and checked by Prepare, before anything is written, with the
// same rules as the driver's column Append, so a value the driver would
// refuse is refused here too, naming the chunk. Encoding itself cannot fail.

// Encoder writes one column of a Native block from the column of that
// type of each chunk of the block. It keeps scratch buffers between uses
// and is not safe for concurrent use.
type Encoder struct {
	root nativeNode
	rows int
	cols []chunk.Column
}

// ValueError is a value the encoder cannot write, in the column of
// chunk Chunk (an index into the columns given to Prepare).
type ValueError struct {
	Chunk int
	Err   error
	row   int // the row in the failing node's column (for LowCardinality)
}

func (e *ValueError) Error() string { return e.Err.Error() }

func (e *ValueError) Unwrap() error { return e.Err }

// littleEndian: the memory layout of fixed-width values is the wire layout.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// NewEncoder returns an encoder for columns of type t (built by
// chunk.NewColumn(t)), or an error when it cannot encode t; the caller then
// uses the driver's column API (driverValue, insert.go) instead.
func NewEncoder(t *chunk.Type) (*Encoder, error) {
	if !littleEndian {
		return nil, errors.New("native encoding needs a little-endian machine")
	}
	n, err := newNativeNode(t)
	if err != nil {
		return nil, err
	}
	return &Encoder{root: n}, nil
}

// Prepare points the encoder at cols, the column of each chunk of the
// block in order, converts and checks the values whose wire form is
// computed (Decimal, UUID, Enum, FixedString, LowCardinality dictionaries),
// and returns a *ValueError for the first value it cannot write. The
// columns must not change until Release.
func (e *Encoder) Prepare(cols []chunk.Column) error {
	e.cols = append(e.cols[:0], cols...)
	e.rows = 0
	for _, c := range cols {
		e.rows += c.Len()
	}
	return e.root.prepare(e.cols, nil)
}

// Rows is the number of rows of the prepared columns.
func (e *Encoder) Rows() int { return e.rows }

// AppendNative appends the column's state prefix (LowCardinality's key
// serialization version, at any depth) and its data, as a Native block
// carries them, to b.
func (e *Encoder) AppendNative(b []byte) []byte {
	b = e.root.prefix(b)
	return e.root.encode(b)
}

// SizeHint is about the number of bytes AppendNative writes for the
// prepared columns (a bound to grow a buffer by once).
func (e *Encoder) SizeHint() int { return 8 + e.root.size() }

// Scratch is about the bytes of working memory Prepare built for the
// prepared columns and holds until Release: the LowCardinality
// dictionaries (values, index and keys) and the converted values of
// Decimal, UUID and Enum columns.
func (e *Encoder) Scratch() int { return e.root.scratch() }

// Release drops the references to the prepared columns, keeping the
// scratch buffers for the next Prepare.
func (e *Encoder) Release() {
	clear(e.cols)
	e.cols = e.cols[:0]
	e.rows = 0
	e.root.release()
}

// nativeNode encodes columns of one type. prepare receives the node's
// column of each chunk and, when the node is the inner column of a
// Nullable, each chunk's null map (nulls is nil otherwise, and nulls[k] may
// be nil); encode writes what prepare was given.
type nativeNode interface {
	prepare(cols []chunk.Column, nulls [][]uint8) error
	prefix(b []byte) []byte
	encode(b []byte) []byte
	// size is about the number of bytes encode writes (exact for fixed
	// widths, an upper bound for strings shorter than 2 MiB).
	size() int
	// scratch is about the bytes of working memory the node holds for
	// what prepare was given (LowCardinality dictionaries, converted
	// values), on top of the columns and of what encode writes.
	scratch() int
	release()
}

// noScratch is the scratch of the nodes that encode from the columns
// themselves.
type noScratch struct{}

func (noScratch) scratch() int { return 0 }

func newNativeNode(t *chunk.Type) (nativeNode, error) {
	switch t.Kind {
	case chunk.KindInt8:
		return &rawNode{bytes: fixedBytes[int8]}, nil
	case chunk.KindInt16:
		return &rawNode{bytes: fixedBytes[int16]}, nil
	case chunk.KindInt32:
		return &rawNode{bytes: fixedBytes[int32]}, nil
	case chunk.KindInt64:
		return &rawNode{bytes: fixedBytes[int64]}, nil
	case chunk.KindUInt8:
		return &rawNode{bytes: fixedBytes[uint8]}, nil
	case chunk.KindUInt16:
		return &rawNode{bytes: fixedBytes[uint16]}, nil
	case chunk.KindUInt32, chunk.KindIPv4:
		return &rawNode{bytes: fixedBytes[uint32]}, nil
	case chunk.KindUInt64:
		return &rawNode{bytes: fixedBytes[uint64]}, nil
	case chunk.KindFloat32:
		return &rawNode{bytes: fixedBytes[float32]}, nil
	case chunk.KindFloat64:
		return &rawNode{bytes: fixedBytes[float64]}, nil
	case chunk.KindBool:
		// Go stores a bool as one byte, 0 or 1: the wire's UInt8.
		return &rawNode{bytes: fixedBytes[bool]}, nil
	case chunk.KindIPv6:
		return &rawNode{bytes: fixedBytes[[16]byte]}, nil
	case chunk.KindDateTime64:
		return &rawNode{bytes: func(c chunk.Column) []byte { return sliceBytes(c.(*chunk.DateTime64).Data) }}, nil
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		return &rawNode{bytes: func(c chunk.Column) []byte { return sliceBytes(c.(*chunk.BigInt).Data) }}, nil
	case chunk.KindDateTime:
		return &dateTimeNode{}, nil
	case chunk.KindDate:
		return &dateNode{width: 2}, nil
	case chunk.KindDate32:
		return &dateNode{width: 4}, nil
	case chunk.KindString:
		return &stringNode{}, nil
	case chunk.KindFixedString:
		return &fixedStringNode{n: t.Len}, nil
	case chunk.KindUUID:
		return &convNode{width: 16, conv: convUUID}, nil
	case chunk.KindEnum8, chunk.KindEnum16:
		width, lo, hi := 1, math.MinInt8, math.MaxInt8
		if t.Kind == chunk.KindEnum16 {
			width, lo, hi = 2, math.MinInt16, math.MaxInt16
		}
		for name, v := range t.Enum {
			if int(v) < lo || int(v) > hi {
				return nil, fmt.Errorf("type %s: value %d of %q out of range", t.Name, v, name)
			}
		}
		return &convNode{width: width, conv: convEnum(t)}, nil
	case chunk.KindDecimal:
		width := 32
		switch {
		case t.Precision <= 9:
			width = 4
		case t.Precision <= 18:
			width = 8
		case t.Precision <= 38:
			width = 16
		}
		return &convNode{width: width, conv: convDecimal(t, width)}, nil
	case chunk.KindNullable:
		inner, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &nullableNode{inner: inner}, nil
	case chunk.KindArray:
		inner, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &arrayNode{inner: inner}, nil
	case chunk.KindTuple:
		n := &tupleNode{}
		for _, et := range t.Elems {
			e, err := newNativeNode(et)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		return n, nil
	case chunk.KindMap:
		k, err := newNativeNode(t.Key)
		if err != nil {
			return nil, err
		}
		v, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &mapNode{keys: k, values: v}, nil
	case chunk.KindLowCardinality:
		return newLowCardinalityNode(t)
	}
	return nil, fmt.Errorf("type %s cannot be encoded", t.Name)
}

// sliceBytes is the memory of s as bytes.
func sliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

func fixedBytes[T any](c chunk.Column) []byte { return sliceBytes(c.(*chunk.Fixed[T]).Data) }

// colsLen is the number of rows of cols.
func colsLen(cols []chunk.Column) int {
	n := 0
	for _, c := range cols {
		n += c.Len()
	}
	return n
}

// valueError is a *ValueError for row of chunk k.
func valueError(k, row int, err error) error {
	return &ValueError{Chunk: k, row: row, Err: err}
}

// isNull reports whether row i is NULL under nulls (nil: no null map).
func isNull(nulls []uint8, i int) bool { return nulls != nil && nulls[i] != 0 }

// rawNode: values whose memory is their wire form, one copy per chunk.
type rawNode struct {
	noScratch
	bytes func(chunk.Column) []byte
	cols  []chunk.Column
}

func (n *rawNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *rawNode) prefix(b []byte) []byte { return b }

func (n *rawNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		b = append(b, n.bytes(c)...)
	}
	return b
}

func (n *rawNode) release() { n.cols = nil }

func (n *rawNode) size() int {
	s := 0
	for _, c := range n.cols {
		s += len(n.bytes(c))
	}
	return s
}

// dateTimeNode: DateTime, seconds since the epoch (int64) as UInt32, as
// the driver converts them: the zero time.Time's seconds give 0, every
// other value is truncated to 32 bits.
type dateTimeNode struct {
	noScratch
	cols []chunk.Column
}

// zeroTimeUnix is time.Time{}.Unix().
const zeroTimeUnix = -62135596800

func (n *dateTimeNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *dateTimeNode) prefix(b []byte) []byte { return b }

func (n *dateTimeNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		data := c.(*chunk.Fixed[int64]).Data
		off := len(b)
		b = slices.Grow(b, 4*len(data))[:off+4*len(data)]
		dst := b[off:]
		for i, v := range data {
			if v == zeroTimeUnix {
				v = 0
			}
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
		}
	}
	return b
}

func (n *dateTimeNode) release() { n.cols = nil }

func (n *dateTimeNode) size() int { return 4 * colsLen(n.cols) }

// dateNode: Date (UInt16) and Date32 (Int32) from time.Time, days since
// the epoch in the value's own zone, as the driver computes them.
type dateNode struct {
	noScratch
	width int
	cols  []chunk.Column
}

func (n *dateNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *dateNode) prefix(b []byte) []byte { return b }

func (n *dateNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		for _, t := range c.(*chunk.Fixed[time.Time]).Data {
			var days int64
			if !t.IsZero() {
				_, off := t.Zone()
				days = (t.Unix() + int64(off)) / (24 * 3600)
			}
			if n.width == 2 {
				b = binary.LittleEndian.AppendUint16(b, uint16(days))
			} else {
				b = binary.LittleEndian.AppendUint32(b, uint32(int32(days)))
			}
		}
	}
	return b
}

func (n *dateNode) release() { n.cols = nil }

func (n *dateNode) size() int { return n.width * colsLen(n.cols) }

// stringNode: String, a varint length and the bytes of each value.
type stringNode struct {
	noScratch
	cols []chunk.Column
}

func (n *stringNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *stringNode) prefix(b []byte) []byte { return b }

func (n *stringNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		s := c.(*chunk.Strings)
		b = slices.Grow(b, len(s.Buf)+len(s.Ends))
		start := 0
		for _, end := range s.Ends {
			if l := end - start; l < 0x80 {
				b = append(b, byte(l))
			} else {
				b = binary.AppendUvarint(b, uint64(l))
			}
			b = append(b, s.Buf[start:end]...)
			start = end
		}
	}
	return b
}

func (n *stringNode) release() { n.cols = nil }

func (n *stringNode) size() int {
	s := 0
	for _, c := range n.cols {
		s += len(c.(*chunk.Strings).Buf) + 3*c.Len()
	}
	return s
}

// fixedStringNode: FixedString(N), each value padded with zero bytes to N
// (NULL and the empty string are N zero bytes); a longer value is refused.
type fixedStringNode struct {
	noScratch
	n     int
	cols  []chunk.Column
	nulls [][]uint8
}

func (n *fixedStringNode) prepare(cols []chunk.Column, nulls [][]uint8) error {
	n.cols, n.nulls = cols, nulls
	for k, c := range cols {
		s := c.(*chunk.Strings)
		var nl []uint8
		if nulls != nil {
			nl = nulls[k]
		}
		start := 0
		for i, end := range s.Ends {
			if l := end - start; l > n.n && !isNull(nl, i) {
				return valueError(k, i, fmt.Errorf("input value with length %d exceeds FixedString(%d) capacity", l, n.n))
			}
			start = end
		}
	}
	return nil
}

func (n *fixedStringNode) prefix(b []byte) []byte { return b }

func (n *fixedStringNode) encode(b []byte) []byte {
	for k, c := range n.cols {
		s := c.(*chunk.Strings)
		var nl []uint8
		if n.nulls != nil {
			nl = n.nulls[k]
		}
		off := len(b)
		b = slices.Grow(b, n.n*len(s.Ends))[:off+n.n*len(s.Ends)]
		dst := b[off:]
		clear(dst)
		start := 0
		for i, end := range s.Ends {
			if !isNull(nl, i) {
				copy(dst[i*n.n:(i+1)*n.n], s.Buf[start:end])
			}
			start = end
		}
	}
	return b
}

func (n *fixedStringNode) release() { n.cols, n.nulls = nil, nil }

func (n *fixedStringNode) size() int { return n.n * colsLen(n.cols) }
