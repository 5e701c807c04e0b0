package chunk

import "math/bits"

// What a chunk counts for (Chunk.Measure): each column counts the larger of
// the bytes its buffers hold in memory (Column.Size) and the bytes its rows
// take in a Native block, the form the sink encodes and sends them in
// (ColumnSize). The two differ where a column is kept in another form
// than it is sent in: a FixedString(N) value is kept as its bytes and sent
// padded to N, a Date is kept as a time.Time (24 bytes) and sent as 2, a
// Decimal, UUID or Enum is kept as text and sent as a fixed width, and a
// LowCardinality(T) column is kept as a column of T and sent as a
// dictionary and an index. Counting the larger of the two means a column
// counts for what it is held as both while it waits and while its block is
// encoded, whatever padding or conversion the encoding adds.
//
// Measuring walks the column tree, never the rows: it runs on the open
// chunk every few records.

// ColumnSize returns the bytes column c, built by NewColumn(t), counts for:
// the larger of its in-memory bytes (Column.Size) and its Native wire
// bytes (WireBound).
func ColumnSize(t *Type, c Column) int {
	mem, wire := sizes(t, c)
	return max(mem, wire)
}

// WireBound returns an upper bound of the bytes column c, built by
// NewColumn(t), takes in a Native block, its state prefix included (the
// LowCardinality key version). It is exact for the fixed-width types,
// FixedString, Nullable, Array and Map offsets and Tuple; a String's length
// prefix is counted as the uvarint of the column's total length (never
// more than the 8 bytes of its end offset in memory); a LowCardinality
// column's dictionary is counted as if every row's value were distinct,
// and its index at the width the row count needs.
func WireBound(t *Type, c Column) int {
	_, wire := sizes(t, c)
	return wire
}

// sizes returns column c's in-memory bytes (its Size) and its WireBound,
// in one walk of the column tree.
func sizes(t *Type, c Column) (mem, wire int) {
	if t.Kind == KindLowCardinality {
		return c.Size(), lowCardinalityBound(t, c)
	}
	switch c := c.(type) {
	case *Strings:
		mem = len(c.Buf) + 8*len(c.Ends)
		if t.Kind == KindString {
			return mem, len(c.Buf) + len(c.Ends)*uvarintLen(len(c.Buf))
		}
		return mem, len(c.Ends) * wireWidth(t)
	case *Nullable:
		m, w := sizes(t.Elem, c.Inner)
		return m + len(c.Nulls), w + len(c.Nulls)
	case *Array:
		m, w := sizes(t.Elem, c.Inner)
		return m + 8*len(c.Ends), w + 8*len(c.Ends)
	case *Map:
		km, kw := sizes(t.Key, c.Keys)
		vm, vw := sizes(t.Elem, c.Values)
		return km + vm + 8*len(c.Ends), kw + vw + 8*len(c.Ends)
	case *Tuple:
		for j, e := range c.Elems {
			if j < len(t.Elems) {
				m, w := sizes(t.Elems[j], e)
				mem, wire = mem+m, wire+w
			} else {
				mem += e.Size()
			}
		}
		return mem, wire
	}
	return c.Size(), c.Len() * wireWidth(t)
}

// wireWidth is the Native width of one value of a scalar type t: the fixed
// width, N of FixedString(N), and 1 for String (the length of an empty
// value, the width of the zero value LowCardinality's dictionary starts
// with).
func wireWidth(t *Type) int {
	switch t.Kind {
	case KindInt8, KindUInt8, KindBool, KindEnum8:
		return 1
	case KindInt16, KindUInt16, KindDate, KindEnum16:
		return 2
	case KindInt32, KindUInt32, KindFloat32, KindDate32, KindDateTime, KindIPv4:
		return 4
	case KindInt64, KindUInt64, KindFloat64, KindDateTime64:
		return 8
	case KindUUID, KindIPv6, KindInt128, KindUInt128:
		return 16
	case KindInt256, KindUInt256:
		return 32
	case KindFixedString:
		return t.Len
	case KindString:
		return 1
	case KindDecimal:
		switch {
		case t.Precision <= 9:
			return 4
		case t.Precision <= 18:
			return 8
		case t.Precision <= 38:
			return 16
		}
		return 32
	}
	return 0
}

// lowCardinalityBound bounds LowCardinality(T)'s wire bytes, as the sink
// writes them: the key version (8 bytes), then, for a column with rows,
// the index type, the dictionary's size, the dictionary (the zero value of
// T, twice for Nullable(T), then the distinct values), the row count and
// each row's key, of 1, 2, 4 or 8 bytes by the dictionary's size.
func lowCardinalityBound(t *Type, c Column) int {
	rows := c.Len()
	if rows == 0 {
		return 8
	}
	base, values, zeros := t.Elem, c, 1
	if n, ok := c.(*Nullable); ok && base.Kind == KindNullable {
		base, values, zeros = base.Elem, n.Inner, 2
	}
	key := 8
	switch {
	case rows < 1<<8-1:
		key = 1
	case rows < 1<<16-1:
		key = 2
	case rows < 1<<32-1:
		key = 4
	}
	return 8 + 8 + 8 + zeros*wireWidth(base) + WireBound(base, values) + 8 + key*rows
}

// uvarintLen is the length of the uvarint of n.
func uvarintLen(n int) int {
	return max(1, (bits.Len64(uint64(n))+6)/7)
}
