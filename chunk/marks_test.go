package chunk

import (
	"reflect"
	"testing"
)

// TestMarksAndSlice: marks map rows back to their records through
// truncation and reset, and Slice copies exactly the rows asked for, in
// every column kind.
func TestMarksAndSlice(t *testing.T) {
	names := []string{"i", "s", "n", "a", "t", "m"}
	var types []*Type
	for _, ts := range []string{"Int64", "LowCardinality(String)", "Nullable(Float64)", "Array(String)",
		"Tuple(Int8, String)", "Map(String, UInt16)"} {
		ty, err := ParseType(ts)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ty)
	}
	c, err := New(&Schema{Names: names, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	row := func(k int) {
		c.Cols[0].(*Fixed[int64]).Append(int64(k))
		c.Cols[1].(*Strings).AppendString(string(rune('a' + k)))
		if k%2 == 0 {
			c.Cols[2].(*Nullable).AppendNull()
		} else {
			c.Cols[2].(*Nullable).Inner.(*Fixed[float64]).Append(float64(k) / 2)
			c.Cols[2].(*Nullable).MarkValue()
		}
		a := c.Cols[3].(*Array)
		for e := 0; e < k%3; e++ {
			a.Inner.(*Strings).AppendString("e")
		}
		a.EndRow()
		tu := c.Cols[4].(*Tuple)
		tu.Elems[0].(*Fixed[int8]).Append(int8(k))
		tu.Elems[1].(*Strings).AppendString("x")
		tu.EndRow()
		m := c.Cols[5].(*Map)
		m.Keys.(*Strings).AppendString("k")
		m.Values.(*Fixed[uint16]).Append(uint16(k))
		m.EndRow()
		c.Rows++
	}
	// Record 10 makes rows 0-1, record 11 none, record 12 row 2, record
	// 13 rows 3-5.
	row(0)
	row(1)
	c.MarkRecord(10)
	c.MarkRecord(11)
	row(2)
	c.MarkRecord(12)
	row(3)
	row(4)
	row(5)
	c.MarkRecord(13)
	want := []Mark{{2, 10}, {3, 12}, {6, 13}}
	if !reflect.DeepEqual(c.Marks, want) {
		t.Fatalf("marks %v, want %v", c.Marks, want)
	}
	if from, to, off := c.RecordRows(1); from != 2 || to != 3 || off != 12 {
		t.Fatalf("RecordRows(1) = %d, %d, %d", from, to, off)
	}

	s, err := c.Slice(3, 6)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != 3 || s.Size() == 0 || len(s.Marks) != 0 || len(s.Spans) != 0 {
		t.Fatalf("slice: rows %d size %d marks %v spans %v", s.Rows, s.Size(), s.Marks, s.Spans)
	}
	for j, col := range s.Cols {
		if col.Len() != 3 {
			t.Fatalf("column %s: %d rows", names[j], col.Len())
		}
		for i := 0; i < 3; i++ {
			if got, want := col.Row(i), c.Cols[j].Row(3+i); !reflect.DeepEqual(got, want) {
				t.Errorf("column %s row %d: %v, want %v", names[j], i, got, want)
			}
		}
	}

	// Truncating back drops the marks of the rows dropped.
	c.Truncate(3)
	if want := []Mark{{2, 10}, {3, 12}}; !reflect.DeepEqual(c.Marks, want) {
		t.Fatalf("after Truncate(3): marks %v, want %v", c.Marks, want)
	}
	c.Reset()
	if len(c.Marks) != 0 {
		t.Fatalf("after Reset: marks %v", c.Marks)
	}
}
