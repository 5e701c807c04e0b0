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
	base     *chunk.Type // the dictionary's type
	dict     lcDict      // the block's dictionary, of the inner non-nullable type
	dictNode nativeNode
	dictNull []uint8 // marks the placeholder rows, which encode as zero
	index    map[string]int
	// recent holds, in a slot chosen by a key's length and end bytes, the
	// last key seen there and its dictionary row, so that most rows of a
	// column of few distinct values are found without hashing the key
	// and probing the map. Keys are the block's, so it is emptied with
	// index for each block.
	recent [lcRecentSlots]lcRecent
	keys   []int
	origin []int // the chunk of each dictionary row
	dcols  [1]chunk.Column
	dnulls [1][]uint8
}

// lcRecentSlots is the number of slots of lowCardinalityNode.recent.
const lcRecentSlots = 64

// lcRecent is a slot of lowCardinalityNode.recent; idx 0 (a placeholder
// row, never a key's) marks it empty.
type lcRecent struct {
	key string
	idx int
}

// lcRecentSlot picks key's slot from its length and its first and last
// bytes: cheap, and different for most keys of a small set.
func lcRecentSlot(key string) int {
	h := uint(len(key))
	if len(key) > 0 {
		h = h*31 + uint(key[0])*7 + uint(key[len(key)-1])
	}
	return int(h % lcRecentSlots)
}

func newLowCardinalityNode(t *chunk.Type) (nativeNode, error) {
	base := t.Elem
	n := &lowCardinalityNode{index: map[string]int{}}
	if base.Kind == chunk.KindNullable {
		n.nullable, base = true, base.Elem
	}
	switch base.Kind {
	case chunk.KindNullable, chunk.KindArray, chunk.KindTuple, chunk.KindMap, chunk.KindLowCardinality:
		return nil, fmt.Errorf("type %s cannot be encoded", t.Name)
	}
	col, err := chunk.NewColumn(base)
	if err != nil {
		return nil, err
	}
	dict := newLCDict(col)
	if dict == nil {
		return nil, fmt.Errorf("type %s cannot be encoded", t.Name)
	}
	node, err := newNativeNode(base)
	if err != nil {
		return nil, err
	}
	n.dict, n.dictNode, n.base = dict, node, base
	return n, nil
}

func (n *lowCardinalityNode) placeholders() int {
	if n.nullable {
		return 2
	}
	return 1
}

func (n *lowCardinalityNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	d := n.dict
	d.column().Truncate(0)
	clear(n.index)
	clear(n.recent[:])
	n.keys, n.origin, n.dictNull = n.keys[:0], n.origin[:0], n.dictNull[:0]
	for range n.placeholders() {
		d.appendZero()
		n.origin = append(n.origin, -1)
		n.dictNull = append(n.dictNull, 1)
	}
	// The slots are used while they find at least half of the keys (a
	// column of many distinct values then pays for the map alone).
	useRecent, tries, hits := true, 0, 0
	for k, c := range cols {
		var nl []uint8
		if n.nullable {
			nc := c.(*chunk.Nullable)
			c, nl = nc.Inner, nc.Nulls
		}
		rows := c.Len()
		d.source(c)
		for i := range rows {
			if isNull(nl, i) {
				n.keys = append(n.keys, 0)
				continue
			}
			key := d.key(i)
			var r *lcRecent
			if useRecent {
				r = &n.recent[lcRecentSlot(key)]
				if tries++; r.idx > 0 && r.key == key {
					hits++
					n.keys = append(n.keys, r.idx)
					continue
				}
				if tries == 1024 {
					useRecent, r = hits*2 >= tries, nil
				}
			}
			idx, ok := n.index[key]
			if !ok {
				idx = d.column().Len()
				d.copyRow(i)
				n.index[key] = idx
				n.origin = append(n.origin, k)
				n.dictNull = append(n.dictNull, 0)
			}
			if r != nil {
				r.key, r.idx = key, idx
			}
			n.keys = append(n.keys, idx)
		}
	}
	d.source(nil)
	n.dcols[0], n.dnulls[0] = d.column(), n.dictNull
	if err := n.dictNode.prepare(n.dcols[:], n.dnulls[:]); err != nil {
		var ve *ValueError
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
	distinct := n.dict.column().Len() - n.placeholders()
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
	b = binary.LittleEndian.AppendUint64(b, uint64(n.dict.column().Len()))
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

// lcIndexEntry is about what one dictionary value costs in the index map
// (its key's string header, its row, and the map's slack after it grew).
const lcIndexEntry = 64

// scratch: the dictionary column, the index, the keys, and the origin and
// placeholder marks of each dictionary row.
func (n *lowCardinalityNode) scratch() int {
	return n.dict.column().Size() + lcIndexEntry*len(n.index) + 8*cap(n.keys) + 8*cap(n.origin) + cap(n.dictNull) + n.dictNode.scratch()
}

// A block's dictionary of more than lcKeepEntries values, or keys of more
// than lcKeepRows rows, are not kept for the next block: the encoder is
// kept with its pooled connection, outside the byte budget, and a block of
// a million distinct values leaves about 90 MB of index, dictionary and
// keys behind. Below these, reusing them saves growing them again.
const (
	lcKeepEntries = 1 << 16
	lcKeepRows    = 1 << 20
)

func (n *lowCardinalityNode) release() {
	n.dcols[0], n.dnulls[0] = nil, nil
	n.dictNode.release()
	if cap(n.keys) > lcKeepRows {
		n.keys = nil
	}
	if n.dict.column().Len() > lcKeepEntries {
		if col, err := chunk.NewColumn(n.base); err == nil {
			n.dict = newLCDict(col)
			n.index, n.origin, n.dictNull = map[string]int{}, nil, nil
			return
		}
	}
	clear(n.index) // its keys may point into the chunks' memory
	clear(n.recent[:])
}

// lcDict is a LowCardinality dictionary: a column of the inner type and
// the row operations the node needs on the block's columns of that type.
type lcDict interface {
	// column is the dictionary column.
	column() chunk.Column
	// source makes src (a column of the dictionary's type, nil to let go
	// of it) the column key and copyRow read.
	source(src chunk.Column)
	// key is the source's row i's identity in a dictionary: bytes that
	// are equal for equal values. The string may share the source's
	// memory.
	key(i int) string
	// copyRow appends the source's row i to the dictionary.
	copyRow(i int)
	// appendZero appends the type's zero value to the dictionary.
	appendZero()
}

// newLCDict returns the dictionary over col, an empty column NewColumn
// built for the inner type, or nil when the type cannot be one.
func newLCDict(col chunk.Column) lcDict {
	switch c := col.(type) {
	case *chunk.Fixed[int8]:
		return &fixedDict[int8]{dict: c}
	case *chunk.Fixed[int16]:
		return &fixedDict[int16]{dict: c}
	case *chunk.Fixed[int32]:
		return &fixedDict[int32]{dict: c}
	case *chunk.Fixed[int64]:
		return &fixedDict[int64]{dict: c}
	case *chunk.Fixed[uint8]:
		return &fixedDict[uint8]{dict: c}
	case *chunk.Fixed[uint16]:
		return &fixedDict[uint16]{dict: c}
	case *chunk.Fixed[uint32]:
		return &fixedDict[uint32]{dict: c}
	case *chunk.Fixed[uint64]:
		return &fixedDict[uint64]{dict: c}
	case *chunk.Fixed[float32]:
		return &fixedDict[float32]{dict: c}
	case *chunk.Fixed[float64]:
		return &fixedDict[float64]{dict: c}
	case *chunk.Fixed[bool]:
		return &fixedDict[bool]{dict: c}
	case *chunk.Fixed[time.Time]:
		return &fixedDict[time.Time]{dict: c}
	case *chunk.Fixed[[16]byte]:
		return &fixedDict[[16]byte]{dict: c}
	case *chunk.DateTime64:
		return &dateTime64Dict{fixedDict: fixedDict[int64]{dict: &c.Fixed}, col: c}
	case *chunk.Strings:
		return &stringsDict{dict: c}
	case *chunk.BigInt:
		return &bigIntDict{dict: c}
	}
	return nil
}

// fixedDict: a Fixed[T] dictionary; a value's identity is its memory.
type fixedDict[T any] struct{ dict, src *chunk.Fixed[T] }

func (d *fixedDict[T]) column() chunk.Column { return d.dict }

func (d *fixedDict[T]) source(src chunk.Column) {
	d.src = nil
	if src != nil {
		d.src = src.(*chunk.Fixed[T])
	}
}

func (d *fixedDict[T]) key(i int) string {
	var zero T
	return unsafe.String((*byte)(unsafe.Pointer(&d.src.Data[i])), int(unsafe.Sizeof(zero)))
}

func (d *fixedDict[T]) copyRow(i int) { d.dict.Data = append(d.dict.Data, d.src.Data[i]) }

func (d *fixedDict[T]) appendZero() {
	var zero T
	d.dict.Data = append(d.dict.Data, zero)
}

// dateTime64Dict: a DateTime64 dictionary, its ticks as a Fixed[int64]'s.
type dateTime64Dict struct {
	fixedDict[int64]
	col *chunk.DateTime64
}

func (d *dateTime64Dict) column() chunk.Column { return d.col }

func (d *dateTime64Dict) source(src chunk.Column) {
	d.src = nil
	if src != nil {
		d.src = &src.(*chunk.DateTime64).Fixed
	}
}

// stringsDict: a String (FixedString, UUID, Decimal, Enum) dictionary;
// a value's identity is its bytes.
type stringsDict struct{ dict, src *chunk.Strings }

func (d *stringsDict) column() chunk.Column { return d.dict }

func (d *stringsDict) source(src chunk.Column) {
	d.src = nil
	if src != nil {
		d.src = src.(*chunk.Strings)
	}
}

func (d *stringsDict) key(i int) string { return d.src.Value(i) }

func (d *stringsDict) copyRow(i int) { d.dict.AppendString(d.src.Value(i)) }

func (d *stringsDict) appendZero() { d.dict.Ends = append(d.dict.Ends, len(d.dict.Buf)) }

// bigIntDict: a wide integer dictionary; a value's identity is its words.
type bigIntDict struct{ dict, src *chunk.BigInt }

func (d *bigIntDict) column() chunk.Column { return d.dict }

func (d *bigIntDict) source(src chunk.Column) {
	d.src = nil
	if src != nil {
		d.src = src.(*chunk.BigInt)
	}
}

func (d *bigIntDict) key(i int) string {
	w := d.src.Data[i*d.src.Words : (i+1)*d.src.Words]
	return unsafe.String((*byte)(unsafe.Pointer(&w[0])), 8*d.src.Words)
}

func (d *bigIntDict) copyRow(i int) {
	d.dict.Data = append(d.dict.Data, d.src.Data[i*d.src.Words:(i+1)*d.src.Words]...)
}

func (d *bigIntDict) appendZero() {
	for range d.dict.Words {
		d.dict.Data = append(d.dict.Data, 0)
	}
}
