package json

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func rowLimitDecoder(t *testing.T, framing string, lim decode.RowLimits) (*Decoder, *chunk.Chunk) {
	t.Helper()
	s := schemaOf(t, "n UInt32", "s String")
	d, err := New(s, Options{Framing: framing, Rows: lim})
	if err != nil {
		t.Fatal(err)
	}
	return d, newChunk(t, s)
}

// frame writes objs as one record value of the framing.
func frame(framing string, objs []string) []byte {
	if framing == FramingArray {
		return []byte("[" + strings.Join(objs, ",") + "]")
	}
	return []byte(strings.Join(objs, "\n"))
}

// TestRowLimits: a record of the ndjson or array framing that makes more
// rows than MaxRows, or rows of more than MaxBytes, is too_large with the
// count and the limit in its error, and leaves the chunk as it was; a
// record at the limits is decoded.
func TestRowLimits(t *testing.T) {
	for _, framing := range []string{FramingNDJSON, FramingArray} {
		for _, noFast := range []bool{false, true} {
			name := framing
			if noFast {
				name += "/fastjson"
			}
			t.Run(name, func(t *testing.T) {
				d, c := rowLimitDecoder(t, framing, decode.RowLimits{MaxRows: 100, MaxBytes: 64 << 10})
				d.noFast = noFast
				if _, err := d.Decode(frame(framing, []string{`{"n":1}`}), c); err != nil { // a row before: kept
					t.Fatal(err)
				}
				objs := make([]string, 100)
				for i := range objs {
					objs[i] = `{"n":2}`
				}
				if n, err := d.Decode(frame(framing, objs), c); err != nil || n != 100 {
					t.Fatalf("100 rows at the limit of 100: %d, %v", n, err)
				}
				objs = append(objs, `{"n":3}`)
				_, err := d.Decode(frame(framing, objs), c)
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != decode.ReasonTooLarge ||
					!strings.Contains(err.Error(), "101 rows") || !strings.Contains(err.Error(), "limit of 100 rows per record") {
					t.Fatalf("101 rows: %v, want too_large naming 101 rows and the limit of 100", err)
				}
				if c.Rows != 101 || len(values(c)) != 101 {
					t.Fatalf("chunk changed by a refused record: rows %d, values %d", c.Rows, len(values(c)))
				}

				// Bytes: 64 rows of 1,000-byte strings fit 64 KiB, 66 do not.
				long := `{"s":"` + strings.Repeat("x", 1000) + `"}`
				objs = objs[:0]
				for range 64 {
					objs = append(objs, long)
				}
				if n, err := d.Decode(frame(framing, objs), c); err != nil || n != 64 {
					t.Fatalf("64 rows of 1,000 bytes under 64 KiB: %d, %v", n, err)
				}
				before := c.Measure()
				objs = append(objs, long, long)
				_, err = d.Decode(frame(framing, objs), c)
				if !errors.As(err, &de) || de.Reason != decode.ReasonTooLarge ||
					!strings.Contains(err.Error(), "(66 rows)") || !strings.Contains(err.Error(), "limit of 65536 bytes per record") {
					t.Fatalf("66 rows of 1,000 bytes: %v, want too_large naming 66 rows and the limit", err)
				}
				if c.Rows != 165 || c.Measure() != before {
					t.Fatalf("chunk changed by a refused record: rows %d, size %d, want 165, %d", c.Rows, c.Measure(), before)
				}
			})
		}
	}
}

// TestRowLimitsManyEmptyObjects: 87,381 empty objects on lines of one
// 256 KiB record are decoded under the default row limit quickly, and
// refused early under a lower one, before the rest of the record is read.
func TestRowLimitsManyEmptyObjects(t *testing.T) {
	v := bytes.Repeat([]byte("{}\n"), 87381)
	d, c := rowLimitDecoder(t, FramingNDJSON, decode.RowLimits{MaxRows: 100_000, MaxBytes: 64 << 20})
	start := time.Now()
	if n, err := d.Decode(v, c); err != nil || n != 87381 {
		t.Fatalf("Decode: %d, %v", n, err)
	}
	took := time.Since(start)
	if took > 2*time.Second {
		t.Fatalf("87,381 rows took %v", took)
	}
	t.Logf("87,381 rows of {} in %v, %d bytes", took, c.Measure())
	d, c = rowLimitDecoder(t, FramingNDJSON, decode.RowLimits{MaxRows: 1000})
	if _, err := d.Decode(v, c); err == nil || !strings.Contains(err.Error(), "at least 1001 rows") || c.Rows != 0 {
		t.Fatalf("Decode under a limit of 1,000 rows: %v, chunk rows %d", err, c.Rows)
	}
}

// TestRowLimitsMeasured: the Measured hook is told the chunk's size every
// decode.RowBytesEvery rows of a record and at its end, so the caller can
// count a record's rows as they are made; a record too short to make
// RowBytesEvery rows is not measured.
func TestRowLimitsMeasured(t *testing.T) {
	var sizes []int
	lim := decode.RowLimits{MaxRows: 1000, MaxBytes: 1 << 20, Measured: func(n int) { sizes = append(sizes, n) }}
	d, c := rowLimitDecoder(t, FramingNDJSON, lim)
	if _, err := d.Decode([]byte(`{"n":1}`), c); err != nil || len(sizes) != 0 {
		t.Fatalf("one line: %v, measured %v", err, sizes)
	}
	if _, err := d.Decode(bytes.Repeat([]byte("{\"s\":\"abcd\"}\n"), 200), c); err != nil {
		t.Fatal(err)
	}
	// 64, 128, 192 rows and the end (200).
	if len(sizes) != 4 || sizes[3] != c.Measure() {
		t.Fatalf("measured %v, want 4 sizes ending at the chunk's %d", sizes, c.Measure())
	}
	for i := 1; i < len(sizes); i++ {
		if sizes[i] <= sizes[i-1] {
			t.Fatalf("measured %v: not growing", sizes)
		}
	}
}

// TestRowLimitsSeal: with a Seal hook, a record's rows go on in a new chunk
// each time the chunk reaches SealBytes; the rows across the chunks are the
// record's rows in order, MaxBytes bounds the record's rows over all its
// chunks, and a record that fails takes back only the rows of the chunk it
// ended in (the earlier ones are the caller's).
func TestRowLimitsSeal(t *testing.T) {
	for _, framing := range []string{FramingNDJSON, FramingArray} {
		for _, noFast := range []bool{false, true} {
			name := framing
			if noFast {
				name += "/fastjson"
			}
			t.Run(name, func(t *testing.T) {
				s := schemaOf(t, "n UInt32", "s String")
				var sealed []*chunk.Chunk
				var cur *chunk.Chunk
				lim := decode.RowLimits{MaxRows: 10_000, MaxBytes: 64 << 10, SealBytes: 4 << 10}
				lim.Seal = func(c *chunk.Chunk) *chunk.Chunk {
					if c != cur {
						t.Fatalf("Seal given a chunk the record is not in")
					}
					if c.Size() < lim.SealBytes {
						t.Fatalf("sealed at %d bytes, under %d", c.Size(), lim.SealBytes)
					}
					sealed = append(sealed, c)
					cur = newChunk(t, s)
					return cur
				}
				d, err := New(s, Options{Framing: framing, Rows: lim})
				if err != nil {
					t.Fatal(err)
				}
				d.noFast = noFast
				cur = newChunk(t, s)
				if _, err := d.Decode(frame(framing, []string{`{"n":0,"s":"before"}`}), cur); err != nil {
					t.Fatal(err)
				}
				objs := make([]string, 2000)
				for i := range objs {
					objs[i] = fmt.Sprintf(`{"n":%d,"s":"row %d"}`, i+1, i+1)
				}
				n, err := d.Decode(frame(framing, objs), cur)
				if err != nil || n != 2000 {
					t.Fatalf("2,000 rows: %d, %v", n, err)
				}
				if len(sealed) < 3 {
					t.Fatalf("%d chunks sealed, want several (4 KiB each of about 40 KB of rows)", len(sealed))
				}
				// The rows in order over the sealed chunks and the last:
				// the row before, then 1..2000.
				want := 0
				for _, k := range append(sealed, cur) {
					col := k.Cols[0].(*chunk.Fixed[uint32])
					for i := 0; i < k.Rows; i++ {
						if int(col.Data[i]) != want {
							t.Fatalf("row %d is n=%d", want, col.Data[i])
						}
						want++
					}
				}
				if want != 2001 {
					t.Fatalf("%d rows over the chunks, want 2,001", want)
				}

				// A record that fails after chunks were sealed: the chunk
				// it ended in holds none of its rows.
				before, rows := len(sealed), cur.Rows
				objs[1900] = `{"n":"x"}`
				if _, err := d.Decode(frame(framing, objs), cur); err == nil {
					t.Fatal("a record with a bad element decoded")
				}
				if len(sealed) == before {
					t.Fatal("no chunk sealed before the bad element")
				}
				if cur.Rows != 0 {
					t.Fatalf("the chunk the record ended in holds %d rows, want 0", cur.Rows)
				}
				if k := sealed[before]; k.Rows <= rows {
					t.Fatalf("the first chunk sealed in the failed record has %d rows, %d before it", k.Rows, rows)
				}

				// MaxBytes counts the rows of all the record's chunks.
				objs = make([]string, 8000)
				for i := range objs {
					objs[i] = fmt.Sprintf(`{"n":%d,"s":"row %d"}`, i, i)
				}
				_, err = d.Decode(frame(framing, objs), cur)
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != decode.ReasonTooLarge || !strings.Contains(err.Error(), "limit of 65536 bytes per record") {
					t.Fatalf("8,000 rows of about 160 KB against 64 KiB: %v", err)
				}
			})
		}
	}
}
