package json

import (
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/gen"
)

// TestGenRecords decodes 10,000 generated records (all three timestamp
// forms, null and tricky notes) and checks every value against gen.Make.
func TestGenRecords(t *testing.T) {
	const seed, count = 99, 10000
	s, err := gen.Schema()
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	var buf []byte
	for n := range uint64(count) {
		buf = gen.Make(seed, n).AppendJSON(buf[:0])
		if rows, err := d.Decode(buf, c); rows != 1 || err != nil {
			t.Fatalf("record %d: %d, %v: %s", n, rows, err, buf)
		}
	}
	if err := checkConsistent(c); err != nil {
		t.Fatal(err)
	}
	ids := c.Cols[0].(*chunk.Fixed[uint64]).Data
	ts := c.Cols[1].(*chunk.Fixed[int64]).Data
	users := c.Cols[2].(*chunk.Fixed[uint32]).Data
	kinds := c.Cols[3].(*chunk.Strings)
	amounts := c.Cols[4].(*chunk.Fixed[float64]).Data
	notes := c.Cols[5].(*chunk.Nullable)
	noteText := notes.Inner.(*chunk.Strings)
	for n := range count {
		e := gen.Make(seed, uint64(n))
		if ids[n] != e.ID || ts[n] != e.TS.Unix() || users[n] != e.UserID || kinds.Value(n) != e.Kind || amounts[n] != e.Amount {
			t.Fatalf("row %d: got id %d ts %d user %d kind %q amount %v; want %+v (ts %d)",
				n, ids[n], ts[n], users[n], kinds.Value(n), amounts[n], e, e.TS.Unix())
		}
		switch {
		case e.Note == nil:
			if notes.Nulls[n] != 1 {
				t.Fatalf("row %d: note %q, want NULL", n, noteText.Value(n))
			}
		case notes.Nulls[n] != 0 || noteText.Value(n) != *e.Note:
			t.Fatalf("row %d: note null=%d %q, want %q", n, notes.Nulls[n], noteText.Value(n), *e.Note)
		}
	}
}
