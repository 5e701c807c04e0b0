package native

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestChunkSizeCoversNative: for a column of each family, filled with rows
// of varied sizes, the chunk's measured size (what the budget,
// batch.max_bytes and chunk.target_bytes count) is at least the length of
// the Native data the sink's encoder writes for it, and at most that plus
// the family's stated slack (sizeSlack): what the column holds in memory
// beyond its wire form. The same holds for a batch of several chunks
// encoded as one block.
func TestChunkSizeCoversNative(t *testing.T) {
	types := []string{
		// integers, floats, Bool, wide integers, IPs
		"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Bool",
		"Float32", "Float64", "Int128", "UInt128", "Int256", "UInt256", "IPv4", "IPv6",
		// Decimal, UUID, Enum (kept as text)
		"Decimal(9, 2)", "Decimal(18, 4)", "Decimal(38, 10)", "Decimal(76, 20)",
		"UUID", "Enum8('a' = 1, 'b' = -128, 'c' = 127, '' = 0)", "Enum16('x' = -32768, 'y' = 32767, 'it\\'s' = 5)",
		// dates and times
		"Date", "Date32", "DateTime", "DateTime('UTC')", "DateTime64(3)", "DateTime64(9, 'UTC')",
		// strings
		"String", "FixedString(4)", "FixedString(64)", "FixedString(4096)",
		// Nullable
		"Nullable(Int32)", "Nullable(String)", "Nullable(FixedString(3))", "Nullable(UUID)", "Nullable(Date)",
		// arrays
		"Array(Int64)", "Array(String)", "Array(Nullable(String))", "Array(FixedString(2))",
		"Array(Array(UInt8))", "Array(Array(String))",
		// LowCardinality
		"LowCardinality(String)", "LowCardinality(Nullable(String))", "LowCardinality(FixedString(3))",
		"LowCardinality(FixedString(256))", "LowCardinality(UInt32)", "LowCardinality(Date)",
		"LowCardinality(Nullable(Int64))", "Array(LowCardinality(String))",
		// Map, Tuple, Nested
		"Map(String, UInt64)", "Map(LowCardinality(String), Array(Nullable(Decimal(18, 4))))",
		"Tuple(Int32, String)", "Tuple(a Nullable(Int32), b Decimal(9, 2), c DateTime('UTC'), d Enum8('a' = 1, 'b' = 2))",
		"Nested(a UInt32, b String)",
	}
	for _, typ := range types {
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		schema := &chunk.Schema{Names: []string{"c"}, Types: []*chunk.Type{ty}}
		for _, rows := range []int{1, 7, 300, 70_000} {
			if rows == 70_000 && !strings.Contains(typ, "LowCardinality") && typ != "String" {
				continue // the LowCardinality key widths past one and two bytes
			}
			r := newFuzzBytes([]byte(fmt.Sprint(typ, rows)))
			var chunks []*chunk.Chunk
			var cols []chunk.Column
			for _, n := range []int{rows / 3, rows - rows/3 - rows/4, rows / 4} {
				c, err := chunk.New(schema)
				if err != nil {
					t.Fatal(err)
				}
				col := c.Cols[0]
				for col.Len() < n {
					if _, refuse := r.gen(ty, col); refuse {
						col.Truncate(c.Rows)
						continue
					}
					c.Rows++
				}
				chunks = append(chunks, c)
				cols = append(cols, col)
			}
			whole := 0
			for k, c := range chunks {
				size := c.Measure()
				whole += size
				enc := len(nativeOf(t, typ, cols[k:k+1]))
				if size < enc {
					t.Errorf("%s, %d rows: measured %d bytes, the encoder writes %d", typ, c.Rows, size, enc)
				}
				if slack := sizeSlack(ty, c.Cols[0]); size > enc+slack {
					t.Errorf("%s, %d rows: measured %d bytes, the encoder writes %d: %d over, slack %d",
						typ, c.Rows, size, enc, size-enc, slack)
				}
			}
			if enc := len(nativeOf(t, typ, cols)); whole < enc {
				t.Errorf("%s, %d rows in 3 chunks: measured %d bytes, the block is %d", typ, rows, whole, enc)
			}
		}
	}
}

// sizeSlack is how far a column's measured size may be above its Native
// encoding, by family: nothing for the types whose memory is their wire
// form (integers, floats, Bool, IPs, DateTime64, wide integers) and for
// null maps and offsets; the time.Time (24 bytes) of a Date or Date32 and
// the int64 of a DateTime beyond their wire width; a String's 8-byte end
// offset beyond its length prefix (at least 1 byte); a FixedString's end
// offset; the text and offsets of the types kept as text (Decimal, UUID,
// Enum); and a LowCardinality dictionary counted as if every value were
// distinct, with each row's key at the width the row count needs, on top
// of the inner column's own slack.
func sizeSlack(ty *chunk.Type, c chunk.Column) int {
	rows := c.Len()
	switch ty.Kind {
	case chunk.KindDate:
		return 22 * rows
	case chunk.KindDate32:
		return 20 * rows
	case chunk.KindDateTime:
		return 4 * rows
	case chunk.KindString:
		return 7 * rows
	case chunk.KindFixedString:
		return 8 * rows
	case chunk.KindDecimal, chunk.KindUUID, chunk.KindEnum8, chunk.KindEnum16:
		return c.Size()
	case chunk.KindNullable:
		return sizeSlack(ty.Elem, c.(*chunk.Nullable).Inner)
	case chunk.KindArray:
		return sizeSlack(ty.Elem, c.(*chunk.Array).Inner)
	case chunk.KindMap:
		m := c.(*chunk.Map)
		return sizeSlack(ty.Key, m.Keys) + sizeSlack(ty.Elem, m.Values)
	case chunk.KindTuple:
		n := 0
		for j, e := range c.(*chunk.Tuple).Elems {
			n += sizeSlack(ty.Elems[j], e)
		}
		return n
	case chunk.KindLowCardinality:
		base, values, nulls := ty.Elem, c, []uint8(nil)
		if base.Kind == chunk.KindNullable {
			n := c.(*chunk.Nullable)
			base, values, nulls = base.Elem, n.Inner, n.Nulls
		}
		// The rows whose value repeats an earlier row's (or is NULL),
		// counted in the dictionary as distinct: at most each one's
		// in-memory bytes or its wire width, and the 1 to 3 length
		// bytes a String value's prefix may be counted with.
		seen := map[any]bool{}
		repeated := 0
		for i := range rows {
			v := values.Row(i)
			if s, ok := v.(string); ok && base.Kind == chunk.KindString {
				repeated += 3 // the length prefix's bound
				if nulls == nil || nulls[i] == 0 {
					if seen[s] {
						repeated += len(s)
					}
					seen[s] = true
				}
				continue
			}
			if (nulls == nil || nulls[i] == 0) && !seen[fmt.Sprint(v)] {
				seen[fmt.Sprint(v)] = true
				continue
			}
			repeated += max(wireWidthOf(base), 8)
		}
		return 32 + 7*rows + repeated + sizeSlack(base, values)
	}
	return 0
}

// wireWidthOf is the Native width of a fixed-width scalar type.
func wireWidthOf(ty *chunk.Type) int {
	col, err := chunk.NewColumn(ty)
	if err != nil {
		panic(err)
	}
	col.AppendDefault()
	enc, err := NewEncoder(ty)
	if err != nil {
		panic(err)
	}
	if err := enc.Prepare([]chunk.Column{col}); err != nil {
		panic(err)
	}
	defer enc.Release()
	return len(enc.AppendNative(nil))
}

// heapInUse is the heap's live bytes after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestLowCardinalityScratchReleased: the encoder of a LowCardinality
// column, kept with its pooled connection between inserts, does not keep
// the index, dictionary and keys of a block of many distinct values after
// Release (they were about 90 bytes a value). It logs what the block's
// dictionary held while it was prepared, which the insert holds on top of
// the chunks.
func TestLowCardinalityScratchReleased(t *testing.T) {
	ty, err := chunk.ParseType("LowCardinality(String)")
	if err != nil {
		t.Fatal(err)
	}
	schema := &chunk.Schema{Names: []string{"c"}, Types: []*chunk.Type{ty}}
	const perChunk, nchunks = 10_000, 20
	var cols []chunk.Column
	size := 0
	for k := range nchunks {
		c, err := chunk.New(schema)
		if err != nil {
			t.Fatal(err)
		}
		for i := range perChunk {
			chunk.AppendString(c.Cols[0], "user-"+strconv.Itoa(k*perChunk+i))
		}
		c.Rows = perChunk
		size += c.Measure()
		cols = append(cols, c.Cols[0])
	}
	e, err := NewEncoder(ty)
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	if err := e.Prepare(cols); err != nil {
		t.Fatal(err)
	}
	prepared := heapInUse() - before
	scratch := int64(e.Scratch())
	out := e.AppendNative(nil)
	e.Release()
	kept := heapInUse() - before
	runtime.KeepAlive(e)
	const rows = perChunk * nchunks
	t.Logf("%d distinct values: chunks measure %d bytes, the block is %d; prepared, the encoder held %d bytes (%d a value), counted as %d; after Release %d",
		rows, size, len(out), prepared, prepared/rows, scratch, kept)
	// What the insert counts in the budget for the dictionary.
	if scratch < prepared || scratch > 2*prepared {
		t.Errorf("Scratch() = %d bytes, the heap grew by %d while prepared", scratch, prepared)
	}
	if len(out) > size {
		t.Errorf("the block (%d bytes) is larger than the chunks' measure (%d)", len(out), size)
	}
	if kept > 1<<20 {
		t.Errorf("the encoder keeps %d bytes after Release of a block of %d distinct values", kept, rows)
	}
}
