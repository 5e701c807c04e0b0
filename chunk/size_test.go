package chunk

import "testing"

// BenchmarkMeasure is the measuring the direct path does on its open chunk
// every few records, over a chunk of 1,000 rows of columns of every shape:
// "size" sums the columns' in-memory Size, "measure" is Measure (each
// column's ColumnSize). One op is one measuring.
func BenchmarkMeasure(b *testing.B) {
	names := []string{"UInt64", "String", "LowCardinality(String)", "Nullable(Float64)", "Array(String)",
		"DateTime64(3)", "FixedString(16)", "Map(String, String)", "Tuple(a Int32, b Nullable(String))", "Date", "Decimal(18, 4)"}
	s := &Schema{}
	for _, n := range names {
		ty, err := ParseType(n)
		if err != nil {
			b.Fatal(err)
		}
		s.Names = append(s.Names, n)
		s.Types = append(s.Types, ty)
	}
	c, err := New(s)
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		for _, col := range c.Cols {
			col.AppendDefault()
		}
		c.Rows++
	}
	b.Run("size", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for range b.N {
			for _, col := range c.Cols {
				n += col.Size()
			}
		}
		b.ReportMetric(float64(n/b.N), "bytes")
	})
	b.Run("measure", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for range b.N {
			n += c.Measure()
		}
		b.ReportMetric(float64(n/b.N), "bytes")
	})
}

// TestMeasureFixedStringPadding: a FixedString(4096) column of two-byte
// values counts 4,096 bytes a row, as the sink sends it, and a
// LowCardinality(FixedString(4096)) column its dictionary as if every
// value were distinct; a column of values longer than the wire form
// counts its memory.
func TestMeasureFixedStringPadding(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		val  string
		want func(rows int) int
	}{
		{"FixedString(4096)", "ab", func(n int) int { return 4096 * n }},
		{"Nullable(FixedString(4096))", "ab", func(n int) int { return 4097 * n }},
		{"Array(FixedString(4096))", "ab", func(n int) int { return 8*n + 4096*n }},
		{"LowCardinality(FixedString(4096))", "ab", func(n int) int { return 24 + 4096*(n+1) + 8 + 2*n }},
		{"String", "abcdefgh", func(n int) int { return 16 * n }},
		{"UUID", "00000000-0000-0000-0000-000000000001", func(n int) int { return 44 * n }},
	} {
		ty, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(&Schema{Names: []string{"c"}, Types: []*Type{ty}})
		if err != nil {
			t.Fatal(err)
		}
		const rows = 1000
		for range rows {
			switch col := c.Cols[0].(type) {
			case *Nullable:
				col.Inner.(*Strings).AppendString(tc.val)
				col.MarkValue()
			case *Array:
				col.Inner.(*Strings).AppendString(tc.val)
				col.EndRow()
			default:
				col.(*Strings).AppendString(tc.val)
			}
		}
		c.Rows = rows
		if got, want := c.Measure(), tc.want(rows); got != want {
			t.Errorf("%s: %d rows of %q measure %d bytes, want %d", tc.typ, rows, tc.val, got, want)
		}
		if c.Size() != c.Measure() {
			t.Errorf("%s: Size %d after Measure %d", tc.typ, c.Size(), c.Measure())
		}
	}
}
