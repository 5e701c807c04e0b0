package clickhouse

import (
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestStringHints: the driver's String columns of an insert are created
// with room for the batch's strings, so appending never regrows them.
func TestStringHints(t *testing.T) {
	s := &chunk.Schema{Names: []string{"hint_id", "hint_s", "hint_ns", "hint_lc"}}
	for _, name := range []string{"UInt64", "String", "Nullable(String)", "LowCardinality(String)"} {
		typ, err := chunk.ParseType(name)
		if err != nil {
			t.Fatal(err)
		}
		s.Types = append(s.Types, typ)
	}
	tg := &Target{Database: "default", Table: "t", Schema: s}
	var chunks []*chunk.Chunk
	for k := range 3 {
		c, err := chunk.New(s)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 + k {
			c.Cols[0].(*chunk.Fixed[uint64]).Append(uint64(i))
			c.Cols[1].(*chunk.Strings).AppendString("abcd")
			if i%2 == 0 {
				c.Cols[2].(*chunk.Nullable).AppendNull()
			} else {
				c.Cols[2].(*chunk.Nullable).Inner.(*chunk.Strings).AppendString("xy")
				c.Cols[2].(*chunk.Nullable).MarkValue()
			}
			c.Cols[3].(*chunk.Strings).AppendString("lc")
			c.Rows++
		}
		chunks = append(chunks, c)
	}
	hintStrings(tg, chunks)
	t.Cleanup(func() {
		for _, n := range s.Names {
			strHints.Delete(n)
		}
	})
	rows := 10 + 11 + 12
	if col := provideColStr("hint_s"); cap(col.Buf) != 4*rows || cap(col.Pos) != rows || len(col.Buf) != 0 || len(col.Pos) != 0 {
		t.Errorf("String column: len %d/%d cap %d/%d, want 0/0 and %d/%d", len(col.Buf), len(col.Pos), cap(col.Buf), cap(col.Pos), 4*rows, rows)
	}
	// Nullable: NULLs take a row and no bytes.
	if col := provideColStr("hint_ns"); cap(col.Buf) != 2*(5+5+6) || cap(col.Pos) != rows {
		t.Errorf("Nullable(String) column: cap %d/%d, want %d/%d", cap(col.Buf), cap(col.Pos), 2*(5+5+6), rows)
	}
	// LowCardinality keeps only distinct values: no hint.
	for _, n := range []string{"hint_id", "hint_lc", "hint_unknown"} {
		if col := provideColStr(n); col.Buf != nil || col.Pos != nil {
			t.Errorf("column %s: got a hint", n)
		}
	}
}
