package protobuf

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestValidUTF8 holds validUTF8 to utf8.Valid on strings of every length
// up to 40: ASCII, each with one byte of each kind that is not ASCII at
// each position (a lone continuation, a lead byte, an invalid byte), a
// valid multi-byte rune at each position, and random bytes.
func TestValidUTF8(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		if got, want := validUTF8(b), utf8.Valid(b); got != want {
			t.Fatalf("validUTF8(%q) = %v, utf8.Valid says %v", b, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 40; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		check(b)
		for i := 0; i < n; i++ {
			for _, c := range []byte{0x80, 0xbf, 0xc3, 0xe2, 0xf0, 0xff, 0x7f} {
				old := b[i]
				b[i] = c
				check(b)
				b[i] = old
			}
			for _, r := range []rune{'é', '€', '😀'} {
				if i+utf8.RuneLen(r) > n {
					continue
				}
				c := append([]byte(nil), b...)
				utf8.EncodeRune(c[i:], r)
				check(c)
			}
		}
		for range 200 {
			for i := range b {
				b[i] = byte(rng.UintN(256))
				if rng.UintN(4) != 0 {
					b[i] &= 0x7f
				}
			}
			check(b)
		}
	}
}
