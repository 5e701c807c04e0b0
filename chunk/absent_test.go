package chunk

import "testing"

// TestAbsentAfterTruncate: Absent equals Rows exactly when no row has the
// field, also after Truncate takes back rows of a refused record that
// lacked it (a count of absent rows would then reach Rows while a kept
// row has the field).
func TestAbsentAfterTruncate(t *testing.T) {
	typ, err := ParseType("Int32")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(&Schema{Names: []string{"a", "b"}, Types: []*Type{typ, typ}})
	if err != nil {
		t.Fatal(err)
	}
	row := func(absentA, absentB bool) {
		for i, absent := range []bool{absentA, absentB} {
			c.Cols[i].AppendDefault()
			if absent {
				c.MarkAbsent(i)
				c.MarkAbsent(i) // twice for one row counts once
			}
		}
		c.Rows++
	}
	never := func() []bool {
		out := make([]bool, len(c.Cols))
		for i := range out {
			out[i] = len(c.Absent) == len(c.Cols) && int(c.Absent[i]) >= c.Rows // as the sink reads it
		}
		return out
	}
	row(true, true)
	row(true, false) // b filled
	row(true, true)
	if got := never(); !got[0] || got[1] {
		t.Fatalf("3 rows: never filled %v, want [true false]", got)
	}
	// A refused record's two rows, both without b, are taken back: one
	// row (the second) still has b.
	row(true, true)
	row(true, true)
	c.Truncate(3)
	if got := never(); !got[0] || got[1] {
		t.Fatalf("after Truncate(3): never filled %v (Absent %v, %d rows), want [true false]", got, c.Absent, c.Rows)
	}
	c.Truncate(1)
	if got := never(); !got[0] || !got[1] {
		t.Fatalf("after Truncate(1): never filled %v (Absent %v), want [true true]", got, c.Absent)
	}
	c.Reset()
	row(false, true)
	if got := never(); got[0] || !got[1] {
		t.Fatalf("after Reset: never filled %v, want [false true]", got)
	}
}
