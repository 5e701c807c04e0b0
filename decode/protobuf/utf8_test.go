package protobuf

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/gen"
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

// TestRecordUTF8 decodes the nested benchmark's batches whose strings are
// set to each case: a batch whose every string is valid UTF-8 makes its
// row; one with an invalid string anywhere (a top-level String, a
// Nullable(String) or an Array(String) of the Nested structure's
// elements), or with two strings that are each half of one rune (valid
// only when joined, as the fast path's column bytes would be), is
// refused as corrupt and leaves the chunk as it was.
func TestRecordUTF8(t *testing.T) {
	md := compileProto(t, nestedFiles, gen.ProtobufMessage)
	s := schemaOf(t, nestedColumns...)
	d, err := New(md, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.utf8) == 0 {
		t.Fatal("no column is checked whole: the test would not test it")
	}
	page := func(s string) *string { return &s }
	cases := []struct {
		name string
		edit func(*gen.Batch)
		ok   bool
	}{
		{"ascii", func(*gen.Batch) {}, true},
		{"runes", func(b *gen.Batch) {
			b.User, b.Events[0].Page, b.Events[1].Tags = "Zoë", page("/café"), []string{"€", "😀", "é"}
		}, true},
		{"user", func(b *gen.Batch) { b.User = "a\xffb" }, false},
		{"page", func(b *gen.Batch) { b.Events[1].Page = page("/caf\xc3") }, false},
		{"tag", func(b *gen.Batch) { b.Events[2].Tags = []string{"ok", "\x80"} }, false},
		{"split tags", func(b *gen.Batch) { b.Events[0].Tags = []string{"\xc3", "\xa9"} }, false},
		{"split across events", func(b *gen.Batch) {
			b.Events[0].Tags, b.Events[1].Tags = []string{"\xe2\x82"}, []string{"\xac"}
		}, false},
		{"split user and source", func(b *gen.Batch) { b.Source, b.User = "\xf0\x9f", "\x98\x80" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newChunk(t, s)
			bt := gen.MakeBatch(7, 1)
			if _, err := d.Decode(bt.AppendProtobuf(nil), c); err != nil {
				t.Fatal(err)
			}
			before := dump(c)
			tc.edit(&bt)
			_, err := d.Decode(bt.AppendProtobuf(nil), c)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.Rows != 2 {
					t.Fatalf("%d rows, want 2", c.Rows)
				}
				return
			}
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt || !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("got %v, want a corrupt record for its UTF-8", err)
			}
			if after := dump(c); after != before {
				t.Fatalf("the refused record changed the chunk:\n%s\nwas\n%s", after, before)
			}
		})
	}
}
