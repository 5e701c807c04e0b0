package checkpoint

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeBlocks: the commit metadata of exactly-once delivery, read
// back from the broker, can be anything another client wrote.
// DecodeBlocks never panics on it; metadata without the "etl1:" prefix, or
// with nothing after it, holds no block; a failure returns no block and
// says why; the blocks it reads are non-empty ranges, and encoding them
// again reads back the same blocks. And the other way: any list of
// non-empty ranges of offsets (made of the bytes of ranges, 16 per range,
// without the sign bit: offsets are never negative, and the format,
// "first-next", has no room for a minus sign in first) encodes to metadata
// that reads back as that list.
func FuzzDecodeBlocks(f *testing.F) {
	for _, s := range []string{
		"", "etl1:", "etl1:100-200", "etl1:0-1,5-9,9-12", "etl1:-9223372036854775808-9223372036854775807",
		"etl1:200-100", "etl1:5-5", "etl1:1-2,", "etl1:,", "etl1:+1-+2", "etl1:01-002", "etl1:1--2",
		"etl1:9223372036854775808-9223372036854775809", "etl2:1-2", "ETL1:1-2", "etl1:1-2-3", "other metadata",
	} {
		f.Add(s, []byte(nil))
	}
	pair := func(a, b int64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(a)), uint64(b))
	}
	f.Add("etl1:1-2", pair(100, 200))
	f.Add("", append(pair(0, 1<<63-1), pair(1<<62, 3)...))
	f.Add("etl1:", append(pair(5, 5), pair(7, 8)...))
	f.Fuzz(func(t *testing.T, meta string, ranges []byte) {
		blocks, err := DecodeBlocks(meta)
		rest, ok := strings.CutPrefix(meta, blocksPrefix)
		switch {
		case !ok || rest == "":
			if blocks != nil || err != nil {
				t.Fatalf("DecodeBlocks(%q) = %v, %v; want no block", meta, blocks, err)
			}
		case err != nil:
			if blocks != nil || err.Error() == "" {
				t.Fatalf("DecodeBlocks(%q) = %v, %q", meta, blocks, err)
			}
		default:
			if len(blocks) != strings.Count(rest, ",")+1 {
				t.Fatalf("DecodeBlocks(%q) = %v: %d blocks", meta, blocks, len(blocks))
			}
			for _, b := range blocks {
				if b[1] <= b[0] {
					t.Fatalf("DecodeBlocks(%q): empty block %v", meta, b)
				}
			}
			rs := blocks
			enc := EncodeBlocks(rs)
			again, err := DecodeBlocks(enc)
			if err != nil || !reflect.DeepEqual(again, blocks) {
				t.Fatalf("DecodeBlocks(%q) = %v; encoded %q, read back %v, %v", meta, blocks, enc, again, err)
			}
			if EncodeBlocks(rs) != enc {
				t.Fatalf("EncodeBlocks(%v) is not stable", rs)
			}
		}

		var want [][2]int64
		for ; len(ranges) >= 16; ranges = ranges[16:] {
			a := int64(binary.LittleEndian.Uint64(ranges) &^ (1 << 63))
			b := int64(binary.LittleEndian.Uint64(ranges[8:]) &^ (1 << 63))
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			want = append(want, [2]int64{a, b})
		}
		rs := want
		enc := EncodeBlocks(rs)
		if !strings.HasPrefix(enc, blocksPrefix) {
			t.Fatalf("EncodeBlocks(%v) = %q: no prefix", rs, enc)
		}
		got, err := DecodeBlocks(enc)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("EncodeBlocks(%v) = %q, read back %v, %v", rs, enc, got, err)
		}
	})
}
