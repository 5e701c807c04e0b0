package chunk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Native encoding: a sink can write a column of a Native-format data block
// (what the ClickHouse native protocol carries in an INSERT) straight from
// the same column of several chunks, without the driver's intermediate
// columns. Fixed-width values whose memory layout is the wire layout
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

// NativeEncoder writes one column of a Native block from the column of that
// type of each chunk of the block. It keeps scratch buffers between uses
// and is not safe for concurrent use.
type NativeEncoder struct {
	root nativeNode
	rows int
	cols []Column
}

// NativeValueError is a value the encoder cannot write, in the column of
// chunk Chunk (an index into the columns given to Prepare).
type NativeValueError struct {
	Chunk int
	Err   error
	row   int // the row in the failing node's column (for LowCardinality)
}

func (e *NativeValueError) Error() string { return e.Err.Error() }

func (e *NativeValueError) Unwrap() error { return e.Err }

// littleEndian: the memory layout of fixed-width values is the wire layout.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// NewNativeEncoder returns an encoder for columns of type t (built by
// NewColumn(t)), or an error when it cannot encode t; the caller then uses
// the driver's column API (Column.Driver) instead.
func NewNativeEncoder(t *Type) (*NativeEncoder, error) {
	if !littleEndian {
		return nil, errors.New("native encoding needs a little-endian machine")
	}
	n, err := newNativeNode(t)
	if err != nil {
		return nil, err
	}
	return &NativeEncoder{root: n}, nil
}

// Prepare points the encoder at cols, the column of each chunk of the
// block in order, converts and checks the values whose wire form is
// computed (Decimal, UUID, Enum, FixedString, LowCardinality dictionaries),
// and returns a *NativeValueError for the first value it cannot write. The
// columns must not change until Release.
func (e *NativeEncoder) Prepare(cols []Column) error {
	e.cols = append(e.cols[:0], cols...)
	e.rows = 0
	for _, c := range cols {
		e.rows += c.Len()
	}
	return e.root.prepare(e.cols, nil)
}

// Rows is the number of rows of the prepared columns.
func (e *NativeEncoder) Rows() int { return e.rows }

// AppendNative appends the column's state prefix (LowCardinality's key
// serialization version, at any depth) and its data, as a Native block
// carries them, to b.
func (e *NativeEncoder) AppendNative(b []byte) []byte {
	b = e.root.prefix(b)
	return e.root.encode(b)
}

// SizeHint is about the number of bytes AppendNative writes for the
// prepared columns (a bound to grow a buffer by once).
func (e *NativeEncoder) SizeHint() int { return 8 + e.root.size() }

// Release drops the references to the prepared columns, keeping the
// scratch buffers for the next Prepare.
func (e *NativeEncoder) Release() {
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
	prepare(cols []Column, nulls [][]uint8) error
	prefix(b []byte) []byte
	encode(b []byte) []byte
	// size is about the number of bytes encode writes (exact for fixed
	// widths, an upper bound for strings shorter than 2 MiB).
	size() int
	release()
}

func newNativeNode(t *Type) (nativeNode, error) {
	switch t.Kind {
	case KindInt8:
		return &rawNode{bytes: fixedBytes[int8]}, nil
	case KindInt16:
		return &rawNode{bytes: fixedBytes[int16]}, nil
	case KindInt32:
		return &rawNode{bytes: fixedBytes[int32]}, nil
	case KindInt64:
		return &rawNode{bytes: fixedBytes[int64]}, nil
	case KindUInt8:
		return &rawNode{bytes: fixedBytes[uint8]}, nil
	case KindUInt16:
		return &rawNode{bytes: fixedBytes[uint16]}, nil
	case KindUInt32, KindIPv4:
		return &rawNode{bytes: fixedBytes[uint32]}, nil
	case KindUInt64:
		return &rawNode{bytes: fixedBytes[uint64]}, nil
	case KindFloat32:
		return &rawNode{bytes: fixedBytes[float32]}, nil
	case KindFloat64:
		return &rawNode{bytes: fixedBytes[float64]}, nil
	case KindBool:
		// Go stores a bool as one byte, 0 or 1: the wire's UInt8.
		return &rawNode{bytes: fixedBytes[bool]}, nil
	case KindIPv6:
		return &rawNode{bytes: fixedBytes[[16]byte]}, nil
	case KindDateTime64:
		return &rawNode{bytes: func(c Column) []byte { return sliceBytes(c.(*DateTime64).Data) }}, nil
	case KindInt128, KindUInt128, KindInt256, KindUInt256:
		return &rawNode{bytes: func(c Column) []byte { return sliceBytes(c.(*BigInt).Data) }}, nil
	case KindDateTime:
		return &dateTimeNode{}, nil
	case KindDate:
		return &dateNode{width: 2}, nil
	case KindDate32:
		return &dateNode{width: 4}, nil
	case KindString:
		return &stringNode{}, nil
	case KindFixedString:
		return &fixedStringNode{n: t.Len}, nil
	case KindUUID:
		return &convNode{width: 16, conv: convUUID}, nil
	case KindEnum8, KindEnum16:
		width, lo, hi := 1, math.MinInt8, math.MaxInt8
		if t.Kind == KindEnum16 {
			width, lo, hi = 2, math.MinInt16, math.MaxInt16
		}
		for name, v := range t.Enum {
			if int(v) < lo || int(v) > hi {
				return nil, fmt.Errorf("type %s: value %d of %q out of range", t.Name, v, name)
			}
		}
		return &convNode{width: width, conv: convEnum(t)}, nil
	case KindDecimal:
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
	case KindNullable:
		inner, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &nullableNode{inner: inner}, nil
	case KindArray:
		inner, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &arrayNode{inner: inner}, nil
	case KindTuple:
		n := &tupleNode{}
		for _, et := range t.Elems {
			e, err := newNativeNode(et)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		return n, nil
	case KindMap:
		k, err := newNativeNode(t.Key)
		if err != nil {
			return nil, err
		}
		v, err := newNativeNode(t.Elem)
		if err != nil {
			return nil, err
		}
		return &mapNode{keys: k, values: v}, nil
	case KindLowCardinality:
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

func fixedBytes[T any](c Column) []byte { return sliceBytes(c.(*Fixed[T]).Data) }

// colsLen is the number of rows of cols.
func colsLen(cols []Column) int {
	n := 0
	for _, c := range cols {
		n += c.Len()
	}
	return n
}

// valueError is a *NativeValueError for row of chunk k.
func valueError(k, row int, err error) error {
	return &NativeValueError{Chunk: k, row: row, Err: err}
}

// isNull reports whether row i is NULL under nulls (nil: no null map).
func isNull(nulls []uint8, i int) bool { return nulls != nil && nulls[i] != 0 }

// rawNode: values whose memory is their wire form, one copy per chunk.
type rawNode struct {
	bytes func(Column) []byte
	cols  []Column
}

func (n *rawNode) prepare(cols []Column, _ [][]uint8) error {
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
type dateTimeNode struct{ cols []Column }

// zeroTimeUnix is time.Time{}.Unix().
const zeroTimeUnix = -62135596800

func (n *dateTimeNode) prepare(cols []Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *dateTimeNode) prefix(b []byte) []byte { return b }

func (n *dateTimeNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		data := c.(*Fixed[int64]).Data
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
	width int
	cols  []Column
}

func (n *dateNode) prepare(cols []Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *dateNode) prefix(b []byte) []byte { return b }

func (n *dateNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		for _, t := range c.(*Fixed[time.Time]).Data {
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
type stringNode struct{ cols []Column }

func (n *stringNode) prepare(cols []Column, _ [][]uint8) error {
	n.cols = cols
	return nil
}

func (n *stringNode) prefix(b []byte) []byte { return b }

func (n *stringNode) encode(b []byte) []byte {
	for _, c := range n.cols {
		s := c.(*Strings)
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
		s += len(c.(*Strings).Buf) + 3*c.Len()
	}
	return s
}

// fixedStringNode: FixedString(N), each value padded with zero bytes to N
// (NULL and the empty string are N zero bytes); a longer value is refused.
type fixedStringNode struct {
	n     int
	cols  []Column
	nulls [][]uint8
}

func (n *fixedStringNode) prepare(cols []Column, nulls [][]uint8) error {
	n.cols, n.nulls = cols, nulls
	for k, c := range cols {
		s := c.(*Strings)
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
		s := c.(*Strings)
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

// convNode: values kept as text whose wire form (width bytes each) is
// computed and checked by prepare into a scratch buffer; NULL rows are
// zero.
type convNode struct {
	width int
	conv  func(dst []byte, s string) error
	buf   []byte
}

func (n *convNode) prepare(cols []Column, nulls [][]uint8) error {
	rows := 0
	for _, c := range cols {
		rows += c.Len()
	}
	n.buf = slices.Grow(n.buf[:0], rows*n.width)[:rows*n.width]
	clear(n.buf)
	dst := n.buf
	for k, c := range cols {
		s := c.(*Strings)
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

func (n *convNode) release() {}

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
func convEnum(t *Type) func(dst []byte, s string) error {
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
func convDecimal(t *Type, width int) func(dst []byte, s string) error {
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

// nullableNode: Nullable(T), the null map then the inner column.
type nullableNode struct {
	inner     nativeNode
	cols      []Column
	innerCols []Column
	nulls     [][]uint8
}

func (n *nullableNode) prepare(cols []Column, _ [][]uint8) error {
	n.cols = cols
	n.innerCols, n.nulls = n.innerCols[:0], n.nulls[:0]
	for _, c := range cols {
		nc := c.(*Nullable)
		n.innerCols = append(n.innerCols, nc.Inner)
		n.nulls = append(n.nulls, nc.Nulls)
	}
	return n.inner.prepare(n.innerCols, n.nulls)
}

func (n *nullableNode) prefix(b []byte) []byte { return n.inner.prefix(b) }

func (n *nullableNode) encode(b []byte) []byte {
	for _, nl := range n.nulls {
		b = append(b, nl...)
	}
	return n.inner.encode(b)
}

func (n *nullableNode) size() int { return colsLen(n.innerCols) + n.inner.size() }

func (n *nullableNode) release() {
	clear(n.innerCols)
	clear(n.nulls)
	n.cols = nil
	n.inner.release()
}

// arrayNode: Array(T), the end of each row counted from the first row of
// the block (UInt64), then the elements.
type arrayNode struct {
	inner     nativeNode
	ends      [][]int
	innerCols []Column
}

func (n *arrayNode) prepare(cols []Column, _ [][]uint8) error {
	n.ends, n.innerCols = n.ends[:0], n.innerCols[:0]
	for _, c := range cols {
		a := c.(*Array)
		n.ends = append(n.ends, a.Ends)
		n.innerCols = append(n.innerCols, a.Inner)
	}
	return n.inner.prepare(n.innerCols, nil)
}

func (n *arrayNode) prefix(b []byte) []byte { return n.inner.prefix(b) }

func (n *arrayNode) encode(b []byte) []byte {
	b = appendOffsets(b, n.ends)
	return n.inner.encode(b)
}

func (n *arrayNode) size() int {
	s := 0
	for _, e := range n.ends {
		s += 8 * len(e)
	}
	return s + n.inner.size()
}

func (n *arrayNode) release() {
	clear(n.ends)
	clear(n.innerCols)
	n.inner.release()
}

// appendOffsets writes the row ends of several chunks as one column of
// UInt64 offsets from the start of the block.
func appendOffsets(b []byte, ends [][]int) []byte {
	base := uint64(0)
	for _, e := range ends {
		off := len(b)
		b = slices.Grow(b, 8*len(e))[:off+8*len(e)]
		dst := b[off:]
		for i, end := range e {
			binary.LittleEndian.PutUint64(dst[8*i:], base+uint64(end))
		}
		if len(e) > 0 {
			base += uint64(e[len(e)-1])
		}
	}
	return b
}

// tupleNode: Tuple(T1, ...), each element column in turn.
type tupleNode struct {
	elems []nativeNode
	cols  [][]Column // per element, the element column of each chunk
}

func (n *tupleNode) prepare(cols []Column, _ [][]uint8) error {
	if len(n.cols) != len(n.elems) {
		n.cols = make([][]Column, len(n.elems))
	}
	for j, e := range n.elems {
		ec := n.cols[j][:0]
		for _, c := range cols {
			ec = append(ec, c.(*Tuple).Elems[j])
		}
		n.cols[j] = ec
		if err := e.prepare(ec, nil); err != nil {
			return err
		}
	}
	return nil
}

func (n *tupleNode) prefix(b []byte) []byte {
	for _, e := range n.elems {
		b = e.prefix(b)
	}
	return b
}

func (n *tupleNode) encode(b []byte) []byte {
	for _, e := range n.elems {
		b = e.encode(b)
	}
	return b
}

func (n *tupleNode) size() int {
	s := 0
	for _, e := range n.elems {
		s += e.size()
	}
	return s
}

func (n *tupleNode) release() {
	for j, e := range n.elems {
		if j < len(n.cols) {
			clear(n.cols[j])
		}
		e.release()
	}
}

// mapNode: Map(K, V), offsets as for an array, then the keys, then the
// values.
type mapNode struct {
	keys, values nativeNode
	ends         [][]int
	kc, vc       []Column
}

func (n *mapNode) prepare(cols []Column, _ [][]uint8) error {
	n.ends, n.kc, n.vc = n.ends[:0], n.kc[:0], n.vc[:0]
	for _, c := range cols {
		m := c.(*Map)
		n.ends = append(n.ends, m.Ends)
		n.kc = append(n.kc, m.Keys)
		n.vc = append(n.vc, m.Values)
	}
	if err := n.keys.prepare(n.kc, nil); err != nil {
		return err
	}
	return n.values.prepare(n.vc, nil)
}

func (n *mapNode) prefix(b []byte) []byte {
	b = n.keys.prefix(b)
	return n.values.prefix(b)
}

func (n *mapNode) encode(b []byte) []byte {
	b = appendOffsets(b, n.ends)
	b = n.keys.encode(b)
	return n.values.encode(b)
}

func (n *mapNode) size() int {
	s := 0
	for _, e := range n.ends {
		s += 8 * len(e)
	}
	return s + n.keys.size() + n.values.size()
}

func (n *mapNode) release() {
	clear(n.ends)
	clear(n.kc)
	clear(n.vc)
	n.keys.release()
	n.values.release()
}

// LowCardinality, as clickhouse-go writes it: the state prefix is the key
// serialization version (1, shared dictionaries with additional keys);
// the data is the index type (need-update-dictionary | has-additional-keys
// | key width), the dictionary's size and values (of the inner type, never
// Nullable: row 0 stands for NULL in LowCardinality(Nullable(T))), then the
// number of rows and each row's key. The dictionary starts with the inner
// type's zero value (twice for a Nullable inner type), then every distinct
// value in order of appearance. A block of no rows writes no data.
const (
	lcVersion          = 1
	lcHasAdditionalKey = 1 << 9
	lcNeedUpdateDict   = 1 << 10
)

type lowCardinalityNode struct {
	nullable bool
	dict     Column // the block's dictionary, of the inner non-nullable type
	dictNode nativeNode
	dictNull []uint8 // marks the placeholder rows, which encode as zero
	index    map[string]int
	keys     []int
	origin   []int // the chunk of each dictionary row
	dcols    [1]Column
	dnulls   [1][]uint8
}

func newLowCardinalityNode(t *Type) (nativeNode, error) {
	base := t.Elem
	n := &lowCardinalityNode{index: map[string]int{}}
	if base.Kind == KindNullable {
		n.nullable, base = true, base.Elem
	}
	switch base.Kind {
	case KindNullable, KindArray, KindTuple, KindMap, KindLowCardinality:
		return nil, fmt.Errorf("type %s cannot be encoded", t.Name)
	}
	dict, err := NewColumn(base)
	if err != nil {
		return nil, err
	}
	if _, ok := dict.(nativeRower); !ok {
		return nil, fmt.Errorf("type %s cannot be encoded", t.Name)
	}
	node, err := newNativeNode(base)
	if err != nil {
		return nil, err
	}
	n.dict, n.dictNode = dict, node
	return n, nil
}

// nativeRower is a column that can be a LowCardinality dictionary.
type nativeRower interface {
	// nativeKey is row i's identity in a dictionary: bytes that are equal
	// for equal values. The string may share the column's memory.
	nativeKey(i int) string
	// nativeCopyRow appends row i of src, a column of the same type.
	nativeCopyRow(src Column, i int)
	// nativeAppendZero appends the type's zero value.
	nativeAppendZero()
}

func (n *lowCardinalityNode) placeholders() int {
	if n.nullable {
		return 2
	}
	return 1
}

func (n *lowCardinalityNode) prepare(cols []Column, _ [][]uint8) error {
	d := n.dict.(nativeRower)
	n.dict.Truncate(0)
	clear(n.index)
	n.keys, n.origin, n.dictNull = n.keys[:0], n.origin[:0], n.dictNull[:0]
	for range n.placeholders() {
		d.nativeAppendZero()
		n.origin = append(n.origin, -1)
		n.dictNull = append(n.dictNull, 1)
	}
	for k, c := range cols {
		var nl []uint8
		if n.nullable {
			nc := c.(*Nullable)
			c, nl = nc.Inner, nc.Nulls
		}
		rows := c.Len()
		src := c.(nativeRower)
		for i := range rows {
			if isNull(nl, i) {
				n.keys = append(n.keys, 0)
				continue
			}
			key := src.nativeKey(i)
			idx, ok := n.index[key]
			if !ok {
				idx = n.dict.Len()
				d.nativeCopyRow(c, i)
				n.index[key] = idx
				n.origin = append(n.origin, k)
				n.dictNull = append(n.dictNull, 0)
			}
			n.keys = append(n.keys, idx)
		}
	}
	n.dcols[0], n.dnulls[0] = n.dict, n.dictNull
	if err := n.dictNode.prepare(n.dcols[:], n.dnulls[:]); err != nil {
		var ve *NativeValueError
		if errors.As(err, &ve) && ve.row >= 0 && ve.row < len(n.origin) {
			ve.Chunk = n.origin[ve.row]
		}
		return err
	}
	return nil
}

func (n *lowCardinalityNode) prefix(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, lcVersion)
}

func (n *lowCardinalityNode) encode(b []byte) []byte {
	if len(n.keys) == 0 {
		return b
	}
	distinct := n.dict.Len() - n.placeholders()
	var width, kind int
	switch {
	case distinct < math.MaxUint8:
		width, kind = 1, 0
	case distinct < math.MaxUint16:
		width, kind = 2, 1
	case uint64(distinct) < math.MaxUint32:
		width, kind = 4, 2
	default:
		width, kind = 8, 3
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(lcHasAdditionalKey|lcNeedUpdateDict|kind))
	b = binary.LittleEndian.AppendUint64(b, uint64(n.dict.Len()))
	b = n.dictNode.encode(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(n.keys)))
	off := len(b)
	b = slices.Grow(b, width*len(n.keys))[:off+width*len(n.keys)]
	dst := b[off:]
	for i, k := range n.keys {
		switch width {
		case 1:
			dst[i] = byte(k)
		case 2:
			binary.LittleEndian.PutUint16(dst[2*i:], uint16(k))
		case 4:
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(k))
		default:
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(k))
		}
	}
	return b
}

func (n *lowCardinalityNode) size() int { return 32 + n.dictNode.size() + 8*len(n.keys) }

func (n *lowCardinalityNode) release() {
	clear(n.index) // its keys may point into the chunks' memory
	n.dcols[0], n.dnulls[0] = nil, nil
	n.dictNode.release()
}

func (c *Fixed[T]) nativeKey(i int) string {
	var zero T
	return unsafe.String((*byte)(unsafe.Pointer(&c.Data[i])), int(unsafe.Sizeof(zero)))
}

func (c *Fixed[T]) nativeCopyRow(src Column, i int) {
	c.Data = append(c.Data, src.(*Fixed[T]).Data[i])
}

func (c *Fixed[T]) nativeAppendZero() {
	var zero T
	c.Data = append(c.Data, zero)
}

func (c *DateTime64) nativeCopyRow(src Column, i int) {
	c.Data = append(c.Data, src.(*DateTime64).Data[i])
}

func (c *Strings) nativeKey(i int) string { return c.Value(i) }

func (c *Strings) nativeCopyRow(src Column, i int) {
	c.AppendString(src.(*Strings).Value(i))
}

func (c *Strings) nativeAppendZero() { c.Ends = append(c.Ends, len(c.Buf)) }

func (c *BigInt) nativeKey(i int) string {
	w := c.Data[i*c.Words : (i+1)*c.Words]
	return unsafe.String((*byte)(unsafe.Pointer(&w[0])), 8*c.Words)
}

func (c *BigInt) nativeCopyRow(src Column, i int) {
	s := src.(*BigInt)
	c.Data = append(c.Data, s.Data[i*s.Words:(i+1)*s.Words]...)
}

func (c *BigInt) nativeAppendZero() {
	for range c.Words {
		c.Data = append(c.Data, 0)
	}
}

var (
	_ nativeRower = (*Fixed[int64])(nil)
	_ nativeRower = (*DateTime64)(nil)
	_ nativeRower = (*Strings)(nil)
	_ nativeRower = (*BigInt)(nil)
)
