package json

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// memShape is a large record and the table that reads it.
type memShape struct {
	name   string
	cols   []string
	fields []string
	rec    []byte
	// framing is the JSON framing, "" for single.
	framing string
	// bad is a record with a bad value: its error must be the fastjson
	// path's.
	bad bool
	// allocX and retainX are the most bytes allocated while decoding the
	// record, and held by the decoder after it, per byte of record.
	allocX, retainX float64
}

// repeatArray returns {"<field>":[elem,elem,...]} (plus a prefix of other
// fields) of about size bytes.
func repeatArray(prefix, field, elem string, size int) []byte {
	b := bytes.NewBufferString("{" + prefix + `"` + field + `":[`)
	for b.Len() < size-len(elem)-2 {
		b.WriteString(elem)
		b.WriteByte(',')
	}
	b.WriteString(elem + "]}")
	return b.Bytes()
}

const memRecordSize = 1 << 20

func memShapes() []memShape {
	deep := "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]"
	return []memShape{
		// The worst case of the issue: an array of one-digit numbers,
		// streamed by the fast path into the column.
		{name: "numbers", cols: []string{"a Array(UInt8)"}, rec: repeatArray("", "a", "1", memRecordSize), allocX: 2, retainX: 0.1},
		{name: "numbers/Int64", cols: []string{"id UInt64", "a Array(Int64)"}, rec: repeatArray(`"id":7,`, "a", "1", memRecordSize), allocX: 9, retainX: 0.1},
		{name: "strings", cols: []string{"a Array(String)"}, rec: repeatArray("", "a", `"x"`, memRecordSize), allocX: 8, retainX: 0.1},
		{name: "nullable", cols: []string{"a Array(Nullable(Int32))"}, rec: repeatArray("", "a", `null`, memRecordSize), allocX: 8, retainX: 0.1},
		// A field no column reads is skipped without a parse tree.
		{name: "unread", cols: []string{"id UInt64"}, rec: repeatArray(`"id":7,`, "x", `{"b":[1,{}]}`, memRecordSize), allocX: 0.1, retainX: 0.1},
		// A column type without a fast setter does not change that.
		{name: "numbers/uuid", cols: []string{"a Array(UInt8)", "u UUID"}, rec: repeatArray(`"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8",`, "a", "1", memRecordSize), allocX: 0.1, retainX: 0.1},
		// Elements without a fast setter are parsed one at a time.
		{name: "elements", cols: []string{"a Array(Array(UInt8))"}, rec: repeatArray("", "a", "[1,2]", memRecordSize), allocX: 0.1, retainX: 0.1},
		{name: "uuids", cols: []string{"a Array(UUID)"}, rec: repeatArray("", "a", `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`, memRecordSize), allocX: 0.1, retainX: 0.1},
		// An array into a String column: its text, compacted.
		{name: "deep", cols: []string{"a String"}, rec: repeatArray("", "a", deep, memRecordSize), allocX: 1.1, retainX: 0.1},
		// An object into a Map column, streamed.
		{name: "map", cols: []string{"m Map(String, UInt8)"}, rec: mapRecord(`"k":1`), allocX: 0.1, retainX: 0.1},
		// A value read whole by a column of another type (an object into
		// a Tuple column) is parsed alone: fastjson builds its tree, about
		// 80 bytes per value and the arrays its cache outgrew, which the
		// tree still points into, while it decodes, and the decoder drops
		// it afterwards.
		{name: "tuple", cols: []string{"m Tuple(a Array(UInt8))"}, rec: bytes.Replace(repeatArray(`"m":{`, "a", "1", memRecordSize), []byte("]}"), []byte("]}}"), 1), allocX: 240, retainX: 0.1},
		// A large record with a bad value is diagnosed by the one-pass
		// path, without a parse tree of the whole record.
		{name: "bad/number", bad: true, cols: []string{"a Array(UInt8)"}, rec: badLast(repeatArray("", "a", "1", memRecordSize), `256`), allocX: 0.1, retainX: 0.1},
		{name: "bad/uuid", bad: true, cols: []string{"a Array(UUID)"}, rec: badLast(repeatArray("", "a", `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`, memRecordSize), `"x"`), allocX: 0.1, retainX: 0.1},
		{name: "bad/scalar", bad: true, cols: []string{"a Array(UInt8)", "u Int8"}, rec: repeatArray(`"u":128,`, "a", "1", memRecordSize), allocX: 0.1, retainX: 0.1},
		// The array framing, one element at a time.
		{name: "framing/array", framing: FramingArray, cols: []string{"a UInt8", "u UUID"}, rec: framedArray(`{"a":1,"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}`, memRecordSize), allocX: 0.1, retainX: 0.1},
		// So is a record with a field path into nested objects, or a
		// Nested structure: fastjson parses the whole record.
		{name: "objects", cols: []string{"a.b Array(UInt8)"}, fields: []string{"a.b"}, rec: repeatArray("", "a", `{"b":1}`, memRecordSize), allocX: 240, retainX: 0.1},
	}
}

// mapRecord returns {"m":{kv,kv,...}} of about memRecordSize bytes.
func mapRecord(kv string) []byte {
	b := repeatArray("", "m", kv, memRecordSize)
	b = bytes.Replace(b, []byte(`"m":[`), []byte(`"m":{`), 1)
	return append(b[:len(b)-2], "}}"...)
}

// framedArray returns [elem,elem,...] of about size bytes.
func framedArray(elem string, size int) []byte {
	b := repeatArray("", "x", elem, size)
	return b[len(`{"x":`) : len(b)-1]
}

// badLast replaces the last element of the array that ends rec.
func badLast(rec []byte, elem string) []byte {
	i := bytes.LastIndexByte(rec, ',')
	return append(append(rec[:i+1:i+1], elem...), "]}"...)
}

// NewJSONMust is New for a test.
func NewJSONMust(t *testing.T, s *chunk.Schema, fields []string) *Decoder {
	t.Helper()
	d, err := New(s, Options{Fields: fields, MaxRecordBytes: 2 * memRecordSize})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestDecodeMemory holds the memory one large record costs the JSON
// decoder: what decoding it allocates (an upper bound of its peak), and
// what the decoder still holds once a small record has followed it. The
// chunk the rows go to is not counted: it is the data itself, and the
// pipeline's budget counts it. ETL_MEMORY_REPORT=1 prints the figures.
func TestDecodeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	if raceEnabled {
		t.Skip("the race detector allocates too: the figures are not the decoder's")
	}
	small := []byte(`{}`)
	smallArray := []byte(`[{}]`)
	for _, sh := range memShapes() {
		t.Run(sh.name, func(t *testing.T) {
			s := schemaOf(t, sh.cols...)
			d, err := New(s, Options{Fields: sh.fields, MaxRecordBytes: 2 * memRecordSize, Framing: sh.framing})
			if err != nil {
				t.Fatal(err)
			}
			small := small
			if sh.framing == FramingArray {
				small = smallArray
			}
			// Warm the decoder up with small records, as a worker is.
			for range 3 {
				if _, err := d.Decode(small, newChunk(t, s)); err != nil {
					t.Fatal(err)
				}
			}
			// The chunk's columns, grown to the record's rows by another
			// decoder beforehand, are not the decoder's.
			c := newChunk(t, s)
			d2, err := New(s, Options{Fields: sh.fields, MaxRecordBytes: 2 * memRecordSize, Framing: sh.framing})
			if err != nil {
				t.Fatal(err)
			}
			if sh.bad {
				// The same error as the fastjson path's, which also grows
				// the chunk's columns as the good decoding would.
				d2.noFast = true
				_, want := d2.Decode(sh.rec, c)
				_, err := d.Decode(sh.rec, newChunk(t, s))
				if want == nil || err == nil || err.Error() != want.Error() {
					t.Fatalf("error %v, want the fastjson path's %v", err, want)
				}
				d2 = nil
				good := bytes.ReplaceAll(sh.rec, []byte("256"), []byte("1"))
				good = bytes.ReplaceAll(good, []byte(`"x"`), []byte(`"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`))
				good = bytes.ReplaceAll(good, []byte("128"), []byte("1"))
				if _, err := NewJSONMust(t, s, sh.fields).Decode(good, c); err != nil {
					t.Fatal(err)
				}
			} else if _, err := d2.Decode(sh.rec, c); err != nil {
				t.Fatal(err)
			}
			d2 = nil
			c.Truncate(0)
			base := heapInUse()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			if _, err := d.Decode(sh.rec, c); (err != nil) != sh.bad {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			alloc := m1.TotalAlloc - m0.TotalAlloc
			c.Truncate(0)
			if _, err := d.Decode(small, c); err != nil {
				t.Fatal(err)
			}
			after := heapInUse()
			runtime.KeepAlive(d)
			runtime.KeepAlive(c)
			var retained uint64
			if after > base {
				retained = after - base
			}
			size := float64(len(sh.rec))
			ax, rx := float64(alloc)/size, float64(retained)/size
			if os.Getenv("ETL_MEMORY_REPORT") != "" {
				fmt.Printf("%-14s %8d B record: allocated %6.2f x its size, retained %5.2f x\n", sh.name, len(sh.rec), ax, rx)
			}
			if ax > sh.allocX {
				t.Errorf("decoding a %d-byte record allocated %d bytes, %.1f times its size (want at most %.1f)", len(sh.rec), alloc, ax, sh.allocX)
			}
			if rx > sh.retainX {
				t.Errorf("after a %d-byte record the decoder holds %d bytes, %.2f times its size (want at most %.2f)", len(sh.rec), retained, rx, sh.retainX)
			}
		})
	}
}
