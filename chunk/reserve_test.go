package chunk

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// reserveSchema has a column of every kind a chunk holds.
var reserveSchema = []string{
	"Int64", "String", "Nullable(String)", "Array(String)", "Array(Nullable(Int32))",
	"Map(String, Nullable(Float64))", "Tuple(a String, b Array(UInt8))", "Int128", "DateTime64(3)",
	"LowCardinality(String)",
}

func newReserveChunk(t *testing.T) *Chunk {
	t.Helper()
	s := &Schema{}
	for i, name := range reserveSchema {
		typ, err := ParseType(name)
		if err != nil {
			t.Fatal(err)
		}
		s.Names = append(s.Names, fmt.Sprintf("c%d", i))
		s.Types = append(s.Types, typ)
	}
	c, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fillRow appends row i to col: strings, NULLs and elements whose number
// varies with i.
func fillRow(col Column, i int) {
	switch c := col.(type) {
	case *Strings:
		c.AppendString(strings.Repeat("x", i%7))
	case *Nullable:
		if i%3 == 0 {
			c.AppendNull()
			return
		}
		fillRow(c.Inner, i)
		c.MarkValue()
	case *Array:
		for j := range i % 4 {
			fillRow(c.Inner, i+j)
		}
		c.EndRow()
	case *Map:
		for j := range i % 3 {
			fillRow(c.Keys, i+j)
			fillRow(c.Values, i+j)
		}
		c.EndRow()
	case *Tuple:
		for _, e := range c.Elems {
			fillRow(e, i)
		}
		c.EndRow()
	default:
		col.AppendDefault()
	}
}

func fillChunk(c *Chunk, rows int) {
	for i := range rows {
		for _, col := range c.Cols {
			fillRow(col, i)
		}
		c.Rows++
		c.MarkRecord(int64(i))
	}
}

// buffers lists the address of every buffer of col, depth first.
func buffers(col Column, dst []uintptr) []uintptr {
	addr := func(p unsafe.Pointer) uintptr { return uintptr(p) }
	switch c := col.(type) {
	case *Strings:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Ends))), addr(unsafe.Pointer(unsafe.SliceData(c.Buf))))
	case *Nullable:
		return buffers(c.Inner, append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Nulls)))))
	case *Array:
		return buffers(c.Inner, append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Ends)))))
	case *Map:
		return buffers(c.Values, buffers(c.Keys, append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Ends))))))
	case *Tuple:
		for _, e := range c.Elems {
			dst = buffers(e, dst)
		}
		return dst
	case *BigInt:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	case *Fixed[int64]:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	case *Fixed[int32]:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	case *Fixed[uint8]:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	case *Fixed[float64]:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	case *DateTime64:
		return append(dst, addr(unsafe.Pointer(unsafe.SliceData(c.Data))))
	}
	panic(fmt.Sprintf("buffers: column %T", col))
}

func chunkBuffers(c *Chunk) []uintptr {
	out := []uintptr{uintptr(unsafe.Pointer(unsafe.SliceData(c.Marks)))}
	for _, col := range c.Cols {
		out = buffers(col, out)
	}
	return out
}

// TestReserve: a chunk given the shape of a full chunk of its schema takes
// the same rows again without moving any buffer (no buffer grew), and
// holds the same values; one not given it does move them.
func TestReserve(t *testing.T) {
	const rows = 300
	full := newReserveChunk(t)
	fillChunk(full, rows)
	shape := full.Shape(nil)
	if got, want := len(shape), 1+1+2+(1+2)+(1+2)+(1+1+1)+(1+2+1+1)+(2+1+1)+1+1+2; got != want {
		t.Fatalf("the shape has %d entries, want %d: %v", got, want, shape)
	}

	c := newReserveChunk(t)
	c.Reserve(shape)
	before := chunkBuffers(c)
	if slices.Contains(before, 0) {
		t.Fatalf("a buffer has no memory after Reserve: %v", before)
	}
	fillChunk(c, rows)
	if after := chunkBuffers(c); !slices.Equal(before, after) {
		t.Errorf("buffers moved while the rows went in: before %v, after %v", before, after)
	}
	if got := c.Shape(nil); !slices.Equal(got, shape) {
		t.Errorf("shape %v after the rows, want %v", got, shape)
	}
	for i, col := range c.Cols {
		for r := range rows {
			if got, want := fmt.Sprint(col.Row(r)), fmt.Sprint(full.Cols[i].Row(r)); got != want {
				t.Fatalf("column %s row %d = %s, want %s", reserveSchema[i], r, got, want)
			}
		}
	}

	// Without Reserve the same rows grow the buffers: the check above
	// can fail.
	plain := newReserveChunk(t)
	plain.Cols[1].(*Strings).AppendString("x")
	b0 := chunkBuffers(plain)[3]
	fillChunk(plain, rows)
	if chunkBuffers(plain)[3] == b0 {
		t.Error("a String column's bytes did not move as 300 rows went in without Reserve")
	}
}

// TestReserveShortShape: a shape of another schema stops Reserve at its
// end and changes no value.
func TestReserveShortShape(t *testing.T) {
	c := newReserveChunk(t)
	fillChunk(c, 5)
	want := c.Shape(nil)
	for n := range len(want) {
		c.Reserve([]int{1000, 1000, 1000, 1000, 1000}[:min(n, 5)])
		if got := c.Shape(nil); !slices.Equal(got, want) {
			t.Fatalf("Reserve of %d entries changed the shape to %v, want %v", n, got, want)
		}
	}
	c.Reserve(nil)
	c.Reserve(make([]int, 100)) // zeros: no room taken, none lost
	if got := c.Shape(nil); !slices.Equal(got, want) {
		t.Fatalf("shape %v, want %v", got, want)
	}
	if cap(c.Cols[1].(*Strings).Buf) < 1000 {
		t.Errorf("String bytes capacity %d after a shape asking 1000", cap(c.Cols[1].(*Strings).Buf))
	}
}
