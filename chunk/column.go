package chunk

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"
)

// Column is one typed column buffer of a chunk.
//
// Values are appended by a decoder one row at a time through the concrete
// types below; a sink reads the whole column through Driver, which returns a
// slice in a shape the ClickHouse driver's column Append accepts ([]int64,
// []string, []*float64, [][]string, ...). A Column is not safe for concurrent
// use; once a chunk is handed to a sink it is read-only.
type Column interface {
	// Len is the number of rows in the column.
	Len() int
	// Size is the number of bytes the column's buffers hold.
	Size() int
	// AppendDefault appends the column's default: the table's DEFAULT
	// value when the column was built for a type carrying one (see
	// Type.SetDefault), else the type's zero value (NULL for a Nullable,
	// an empty array, map or string).
	AppendDefault()
	// Driver returns the column as a slice for the driver's Append.
	Driver() any
	// Truncate drops rows from n on, so a partly decoded row can be undone.
	Truncate(n int)
}

// pointerer is implemented by columns that can appear inside Nullable.
type pointerer interface {
	// pointers returns a []*T where nulls[i] != 0 gives a nil element.
	pointers(nulls []uint8) any
}

// slicer is implemented by columns that can appear inside Array.
type slicer interface {
	// slices returns a [][]T cut at ends (exclusive end of each row).
	slices(ends []int) any
}

// Fixed is a column of fixed-size values of Go type T.
type Fixed[T any] struct {
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

// Driver implements Column.
func (c *Fixed[T]) Driver() any { return c.Data }

// Truncate implements Column.
func (c *Fixed[T]) Truncate(n int) { c.Data = c.Data[:n] }

func (c *Fixed[T]) pointers(nulls []uint8) any {
	out := make([]*T, len(c.Data))
	for i := range c.Data {
		if nulls[i] == 0 {
			out[i] = &c.Data[i]
		}
	}
	return out
}

func (c *Fixed[T]) slices(ends []int) any {
	out := make([][]T, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = c.Data[start:end:end]
		start = end
	}
	return out
}

// Strings is a column of byte strings kept in one arena.
type Strings struct {
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

// Driver implements Column. The strings share the column's arena, which is
// never written again once the chunk is sealed.
func (c *Strings) Driver() any { return c.strings() }

func (c *Strings) strings() []string {
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

func (c *Strings) pointers(nulls []uint8) any {
	s := c.strings()
	out := make([]*string, len(s))
	for i := range s {
		if nulls[i] == 0 {
			out[i] = &s[i]
		}
	}
	return out
}

func (c *Strings) slices(ends []int) any {
	s := c.strings()
	out := make([][]string, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = s[start:end:end]
		start = end
	}
	return out
}

// Nullable is a Nullable(T) column: an inner column plus a null map.
type Nullable struct {
	Inner Column
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

// Driver implements Column.
func (c *Nullable) Driver() any { return c.Inner.(pointerer).pointers(c.Nulls) }

func (c *Nullable) slices(ends []int) any {
	return sliceReflect(c.Driver(), ends)
}

// Array is an Array(T) column: an inner column plus the end of each row.
type Array struct {
	Inner Column
	Ends  []int
	tmpl  *Array // the one-row default, nil for an empty array
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

// Driver implements Column.
func (c *Array) Driver() any { return c.Inner.(slicer).slices(c.Ends) }

func (c *Array) slices(ends []int) any { return sliceReflect(c.Driver(), ends) }

// sliceReflect cuts a slice of any element type at ends. Used only for nested
// arrays and arrays of nullables, which are rare.
func sliceReflect(v any, ends []int) any {
	rv := reflect.ValueOf(v)
	out := reflect.MakeSlice(reflect.SliceOf(rv.Type()), len(ends), len(ends))
	start := 0
	for i, end := range ends {
		out.Index(i).Set(rv.Slice3(start, end, end))
		start = end
	}
	return out.Interface()
}

// NewColumn returns an empty column for type t. When t carries a default
// (Type.SetDefault), the column's AppendDefault appends it.
func NewColumn(t *Type) (Column, error) {
	c, err := newColumn(t)
	if err != nil || t.def == nil {
		return c, err
	}
	c.(defaulted).setDefault(t.def)
	return c, nil
}

func newColumn(t *Type) (Column, error) {
	switch t.Kind {
	case KindInt8:
		return &Fixed[int8]{}, nil
	case KindInt16:
		return &Fixed[int16]{}, nil
	case KindInt32:
		return &Fixed[int32]{}, nil
	case KindInt64:
		return &Fixed[int64]{}, nil
	case KindUInt8:
		return &Fixed[uint8]{}, nil
	case KindUInt16:
		return &Fixed[uint16]{}, nil
	case KindUInt32:
		return &Fixed[uint32]{}, nil
	case KindUInt64:
		return &Fixed[uint64]{}, nil
	case KindFloat32:
		return &Fixed[float32]{}, nil
	case KindFloat64:
		return &Fixed[float64]{}, nil
	case KindBool:
		return &Fixed[bool]{}, nil
	case KindDate, KindDate32:
		// Midnight UTC of the day; the driver takes []time.Time.
		return &Fixed[time.Time]{}, nil
	case KindDateTime64:
		return &DateTime64{Precision: t.Precision}, nil
	case KindIPv4:
		// The address as a big-endian number (1.2.3.4 is 0x01020304).
		return &Fixed[uint32]{}, nil
	case KindIPv6:
		return &Fixed[[16]byte]{}, nil
	case KindInt128, KindUInt128:
		return &BigInt{Words: 2, Signed: t.Kind == KindInt128}, nil
	case KindInt256, KindUInt256:
		return &BigInt{Words: 4, Signed: t.Kind == KindInt256}, nil
	case KindDateTime:
		// Seconds since the epoch; the driver converts []int64 for DateTime.
		return &Fixed[int64]{}, nil
	case KindString, KindFixedString, KindUUID, KindDecimal, KindEnum8, KindEnum16:
		return &Strings{}, nil
	case KindLowCardinality:
		return NewColumn(t.Elem)
	case KindTuple, KindMap:
		return newComposite(t)
	case KindNullable:
		inner, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		if _, ok := inner.(pointerer); !ok {
			return nil, fmt.Errorf("type %s is not supported", t.Name)
		}
		return &Nullable{Inner: inner}, nil
	case KindArray:
		inner, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		if _, ok := inner.(slicer); !ok {
			return nil, fmt.Errorf("type %s is not supported", t.Name)
		}
		return &Array{Inner: inner}, nil
	}
	return nil, fmt.Errorf("type %s is not supported", t.Name)
}
