package chunk

import (
	"fmt"
	"unsafe"
)

// Column is one typed column buffer of a chunk.
//
// Values are appended by a decoder one row at a time through the concrete
// types below; a sink reads them back whole through the concrete types'
// exported buffers and read accessors (Fixed.Data, Strings.Buf and Ends,
// Nullable.Nulls, Array.Ends, ...), which it encodes for its own wire, and
// Row gives one row as a Go value for what is not on a hot path. A Column is
// not safe for concurrent use; once a chunk is handed to a sink it is
// read-only.
type Column interface {
	// Len is the number of rows in the column.
	Len() int
	// Size is the number of bytes the column's buffers hold.
	Size() int
	// AppendDefault appends the column's default: the table's DEFAULT
	// value when the column was built for a type carrying one (see
	// Type.SetDefaultColumn), else the type's own default, as ClickHouse
	// has it for a column without DEFAULT: zero, the empty string, the
	// zero UUID, 1970-01-01 for a Date, the Enum's name of the lowest
	// value, NULL for a Nullable, an empty array or map, a tuple of its
	// elements' defaults.
	AppendDefault()
	// Row returns row i as a Go value, for reading one row at a time
	// (rendering a refused row, comparing columns in tests); a sink
	// reads whole columns through the concrete types instead. Values:
	// a Fixed[T]'s T (Date as time.Time, DateTime as int64 seconds, IPv4
	// as the uint32 number, IPv6 as [16]byte); a DateTime64's time.Time
	// (UTC); a BigInt's *big.Int; a Strings' string (sharing the
	// column's memory); nil for a NULL of a Nullable, else the inner
	// column's value; an Array's or a Tuple's []any of its elements'
	// values; a Map's [][2]any of its key and value pairs, in order.
	Row(i int) any
	// Truncate drops rows from n on, so a partly decoded row can be undone.
	Truncate(n int)
	// AppendFrom appends row i of src, a column NewColumn made for the
	// same type (the transform copies rows so).
	AppendFrom(src Column, i int)
}

// Fixed is a column of fixed-size values of Go type T.
type Fixed[T any] struct {
	// Data holds row i at Data[i]; its memory is the values' wire layout
	// on a little-endian machine for the integer and float types.
	Data []T
	def  T // AppendDefault's value
}

// Append appends one value.
func (c *Fixed[T]) Append(v T) { c.Data = append(c.Data, v) }

// Len implements Column.
func (c *Fixed[T]) Len() int { return len(c.Data) }

// Size implements Column.
func (c *Fixed[T]) Size() int {
	var zero T
	return len(c.Data) * int(unsafe.Sizeof(zero))
}

// AppendDefault implements Column.
func (c *Fixed[T]) AppendDefault() { c.Data = append(c.Data, c.def) }

// Row implements Column: Data[i].
func (c *Fixed[T]) Row(i int) any { return c.Data[i] }

// Truncate implements Column.
func (c *Fixed[T]) Truncate(n int) { c.Data = c.Data[:n] }

// Strings is a column of byte strings kept in one arena.
type Strings struct {
	// Buf holds the values back to back; Ends[i] is the end of row i in
	// Buf (row i is Buf[Ends[i-1]:Ends[i]], row 0 starts at 0).
	Buf  []byte
	Ends []int
	view []string
	def  []byte // AppendDefault's value
}

// Append appends one value, copying it.
func (c *Strings) Append(b []byte) {
	c.Buf = append(c.Buf, b...)
	c.Ends = append(c.Ends, len(c.Buf))
}

// AppendString appends one value, copying it.
func (c *Strings) AppendString(s string) {
	c.Buf = append(c.Buf, s...)
	c.Ends = append(c.Ends, len(c.Buf))
}

// Len implements Column.
func (c *Strings) Len() int { return len(c.Ends) }

// Size implements Column.
func (c *Strings) Size() int { return len(c.Buf) + 8*len(c.Ends) }

// AppendDefault implements Column.
func (c *Strings) AppendDefault() {
	c.Buf = append(c.Buf, c.def...)
	c.Ends = append(c.Ends, len(c.Buf))
}

// Truncate implements Column.
func (c *Strings) Truncate(n int) {
	end := 0
	if n > 0 {
		end = c.Ends[n-1]
	}
	c.Ends, c.Buf = c.Ends[:n], c.Buf[:end]
	if c.view != nil {
		clear(c.view)
		c.view = c.view[:0]
	}
}

// Value returns row i. The string shares the column's memory.
func (c *Strings) Value(i int) string {
	start := 0
	if i > 0 {
		start = c.Ends[i-1]
	}
	return unsafe.String(unsafe.SliceData(c.Buf[start:]), c.Ends[i]-start)
}

// Row implements Column: Value(i).
func (c *Strings) Row(i int) any { return c.Value(i) }

// Strings returns every row as a string. The strings share the column's
// arena, which is never written again once the chunk is sealed. The slice
// is kept in the column: built again only when rows were appended or
// truncated since the last call (reusing its memory), so a sealed chunk's
// repeated calls cost nothing. The caller must not modify it.
func (c *Strings) Strings() []string {
	if len(c.view) == len(c.Ends) {
		return c.view
	}
	out := c.view[:0]
	if cap(out) < len(c.Ends) {
		out = make([]string, len(c.Ends))
	}
	out = out[:len(c.Ends)]
	start := 0
	for i, end := range c.Ends {
		if end > start {
			out[i] = unsafe.String(&c.Buf[start], end-start)
		}
		start = end
	}
	c.view = out
	return out
}

// Nullable is a Nullable(T) column: an inner column plus a null map.
type Nullable struct {
	// Inner holds a value for every row, NULL or not (the type's zero
	// value, or whatever was appended, under NULL).
	Inner Column
	// Nulls[i] is 1 when row i is NULL, else 0.
	Nulls []uint8
	tmpl  *Nullable // the one-row default, nil for NULL
}

// AppendNull appends a NULL.
func (c *Nullable) AppendNull() {
	c.Inner.AppendDefault()
	c.Nulls = append(c.Nulls, 1)
}

// MarkValue records that the value just appended to Inner is not NULL.
func (c *Nullable) MarkValue() { c.Nulls = append(c.Nulls, 0) }

// Len implements Column.
func (c *Nullable) Len() int { return len(c.Nulls) }

// Size implements Column.
func (c *Nullable) Size() int { return c.Inner.Size() + len(c.Nulls) }

// AppendDefault implements Column: NULL, unless the table's DEFAULT
// gives a value.
func (c *Nullable) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	c.AppendNull()
}

// Truncate implements Column.
func (c *Nullable) Truncate(n int) { c.Inner.Truncate(n); c.Nulls = c.Nulls[:n] }

// Row implements Column: nil for NULL, else the inner column's row.
func (c *Nullable) Row(i int) any {
	if c.Nulls[i] != 0 {
		return nil
	}
	return c.Inner.Row(i)
}

// Array is an Array(T) column: an inner column plus the end of each row.
type Array struct {
	// Inner holds the elements of every row back to back.
	Inner Column
	// Ends[i] is the end of row i's elements in Inner (exclusive).
	Ends []int
	tmpl *Array // the one-row default, nil for an empty array
}

// EndRow closes the current row after its elements were appended to Inner.
func (c *Array) EndRow() { c.Ends = append(c.Ends, c.Inner.Len()) }

// Len implements Column.
func (c *Array) Len() int { return len(c.Ends) }

// Size implements Column.
func (c *Array) Size() int { return c.Inner.Size() + 8*len(c.Ends) }

// AppendDefault implements Column: an empty array, unless the table's
// DEFAULT gives elements.
func (c *Array) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	c.EndRow()
}

// Truncate implements Column.
func (c *Array) Truncate(n int) {
	end := 0
	if n > 0 {
		end = c.Ends[n-1]
	}
	c.Inner.Truncate(end)
	c.Ends = c.Ends[:n]
}

// Row implements Column: the row's elements, each as Inner's Row.
func (c *Array) Row(i int) any {
	start := 0
	if i > 0 {
		start = c.Ends[i-1]
	}
	out := make([]any, c.Ends[i]-start)
	for j := range out {
		out[j] = c.Inner.Row(start + j)
	}
	return out
}

// NewColumn returns an empty column for type t. When t carries a default
// (Type.SetDefaultColumn), the column's AppendDefault appends it.
func NewColumn(t *Type) (Column, error) {
	c, err := newColumn(t)
	if err != nil || t.def == nil {
		return c, err
	}
	c.(defaulted).setDefault(t.def)
	return c, nil
}

func newColumn(t *Type) (Column, error) {
	for _, family := range [...]func(*Type) (Column, bool){intColumn, floatColumn, timeColumn, textColumn, decimalColumn} {
		if c, ok := family(t); ok {
			return c, nil
		}
	}
	switch t.Kind {
	case KindLowCardinality:
		return NewColumn(t.Elem)
	case KindTuple, KindMap:
		return newComposite(t)
	case KindNullable:
		inner, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		switch inner.(type) {
		case *Nullable, *Array, *Tuple, *Map:
			// Only a scalar can be NULL (ClickHouse has no
			// Nullable(Array(T)) either).
			return nil, fmt.Errorf("type %s is not supported", t.Name)
		}
		return &Nullable{Inner: inner}, nil
	case KindArray:
		inner, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		return &Array{Inner: inner}, nil
	}
	return nil, fmt.Errorf("type %s is not supported", t.Name)
}
