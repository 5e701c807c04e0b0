package protobuf

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/etl-project/etl/decode"
)

// FuzzProtobuf decodes any bytes with the differential test's columns:
// no panic; a refused record leaves the chunk as it was, with a reason
// of the decoders'; an accepted one makes one consistent row, the same
// again when decoded again.
func FuzzProtobuf(f *testing.F) {
	old, newer := newerMessage(f)
	var names, fields []string
	for _, c := range append(diffColumns[:len(diffColumns):len(diffColumns)], diffRanged...) {
		names = append(names, c.name+" "+c.typ)
		fields = append(fields, c.field)
	}
	s := schemaOf(f, names...)
	d, err := New(old, s, Options{Fields: fields, MaxRecordBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		w := randomWire(f, rng, newer)
		f.Add(w)
		f.Add(w[:len(w)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := newChunk(t, s)
		if _, err := d.Decode([]byte{}, c); err != nil {
			t.Fatalf("empty message: %v", err)
		}
		before := dump(c)
		rows, err := d.Decode(msg, c)
		if cerr := checkConsistent(c); cerr != nil {
			t.Fatalf("Decode(%x) = %d, %v: %v", msg, rows, err, cerr)
		}
		if err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%x): error %T %v is not *decode.Error", msg, err, err)
			}
			switch de.Reason {
			case decode.ReasonCorrupt, decode.ReasonWrongType, decode.ReasonOutOfRange, decode.ReasonTooLarge:
			default:
				t.Fatalf("Decode(%x): unknown reason %q", msg, de.Reason)
			}
			_ = de.Error()
			if rows != 0 || c.Rows != 1 {
				t.Fatalf("Decode(%x) failed but returned %d rows, chunk has %d", msg, rows, c.Rows)
			}
			if after := dump(c); after != before {
				t.Fatalf("Decode(%x) failed and changed the chunk:\n%s\n%s", msg, before, after)
			}
			return
		}
		if rows != 1 || c.Rows != 2 {
			t.Fatalf("Decode(%x) = %d rows, chunk has %d", msg, rows, c.Rows)
		}
		// Decoding the same message again gives the same row.
		if _, err := d.Decode(msg, c); err != nil {
			t.Fatalf("second Decode(%x): %v", msg, err)
		}
		for i, col := range c.Cols {
			if x, y := render(col, 1), render(col, 2); x != y {
				t.Fatalf("Decode(%x) column %s: %q then %q", msg, s.Names[i], x, y)
			}
		}
	})
}
