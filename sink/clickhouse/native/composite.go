package native

import (
	"encoding/binary"
	"slices"

	"github.com/etl-project/etl/chunk"
)

// nullableNode: Nullable(T), the null map then the inner column.
type nullableNode struct {
	inner     nativeNode
	cols      []chunk.Column
	innerCols []chunk.Column
	nulls     [][]uint8
}

func (n *nullableNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.cols = cols
	n.innerCols, n.nulls = n.innerCols[:0], n.nulls[:0]
	for _, c := range cols {
		nc := c.(*chunk.Nullable)
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

func (n *nullableNode) scratch() int { return n.inner.scratch() }

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
	innerCols []chunk.Column
}

func (n *arrayNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.ends, n.innerCols = n.ends[:0], n.innerCols[:0]
	for _, c := range cols {
		a := c.(*chunk.Array)
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

func (n *arrayNode) scratch() int { return n.inner.scratch() }

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
	cols  [][]chunk.Column // per element, the element column of each chunk
}

func (n *tupleNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	if len(n.cols) != len(n.elems) {
		n.cols = make([][]chunk.Column, len(n.elems))
	}
	for j, e := range n.elems {
		ec := n.cols[j][:0]
		for _, c := range cols {
			ec = append(ec, c.(*chunk.Tuple).Elems[j])
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

func (n *tupleNode) scratch() int {
	s := 0
	for _, e := range n.elems {
		s += e.scratch()
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
	kc, vc       []chunk.Column
}

func (n *mapNode) prepare(cols []chunk.Column, _ [][]uint8) error {
	n.ends, n.kc, n.vc = n.ends[:0], n.kc[:0], n.vc[:0]
	for _, c := range cols {
		m := c.(*chunk.Map)
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

func (n *mapNode) scratch() int { return n.keys.scratch() + n.values.scratch() }

func (n *mapNode) release() {
	clear(n.ends)
	clear(n.kc)
	clear(n.vc)
	n.keys.release()
	n.values.release()
}
