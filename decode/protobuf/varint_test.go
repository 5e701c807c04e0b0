package protobuf

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestUvarint compares uvarint with protowire.ConsumeVarint at every
// offset of buffers holding varints of every length (1 to 10 bytes, and
// the overlong and unterminated ones), cut at every length.
func TestUvarint(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases [][]byte
	for bitsN := 0; bitsN <= 64; bitsN++ {
		for range 4 {
			x := rng.Uint64()
			if bitsN < 64 {
				x &= 1<<uint(bitsN) - 1
			}
			cases = append(cases, protowire.AppendVarint(nil, x))
		}
	}
	cases = append(cases,
		[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, // overlong: malformed
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		[]byte{0x80, 0x00}, // a non-minimal zero
	)
	checks := 0
	for _, v := range cases {
		for pre := range 9 {
			for post := range 10 {
				b := make([]byte, 0, pre+len(v)+post)
				for range pre {
					b = append(b, byte(rng.Uint32()))
				}
				b = append(b, v...)
				for range post {
					b = append(b, byte(rng.Uint32()))
				}
				for cut := pre; cut <= len(b); cut++ {
					bb := b[:cut]
					for i := 0; i <= len(bb); i++ {
						want, n := protowire.ConsumeVarint(bb[i:])
						got, next := uvarint(bb, i)
						if n < 0 {
							if next != n {
								t.Fatalf("% x at %d: uvarint gives (%d, %d), ConsumeVarint error %d", bb, i, got, next, n)
							}
						} else if got != want || next != i+n {
							t.Fatalf("% x at %d: uvarint gives (%d, %d), ConsumeVarint (%d, %d)", bb, i, got, next, want, i+n)
						}
						checks++
					}
				}
			}
		}
	}
	if checks < 100000 {
		t.Fatalf("only %d checks", checks)
	}
}
