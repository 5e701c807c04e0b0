package protoschema_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/protoschema"
)

// nested has messages nested three deep, and a map field, whose entry is
// a nested message that message indexes count.
const nested = `syntax = "proto3";
package n;

message A {
  message B { int32 x = 1; }
  map<string, int32> m = 1;
  message C {
    message D { string s = 1; }
    D d = 1;
  }
}
message E { A.C.D d = 1; }
`

func TestFrameRoundTrip(t *testing.T) {
	cases := []struct {
		indexes []int
		path    []byte // the list as written
	}{
		{[]int{0}, []byte{0}},
		{[]int{1}, []byte{2, 2}},
		{[]int{0, 2}, []byte{4, 0, 4}},
		{[]int{3, 1, 0}, []byte{6, 6, 2, 0}},
		{[]int{1 << 20}, append([]byte{2}, binary.AppendVarint(nil, 1<<20)...)},
	}
	for _, c := range cases {
		for _, payload := range [][]byte{nil, {0x08, 0x96, 0x01}} {
			b := protoschema.AppendFrame([]byte("x"), 7, c.indexes, payload)
			if !bytes.HasPrefix(b, []byte("x\x00\x00\x00\x00\x07")) {
				t.Fatalf("%v: header % x", c.indexes, b)
			}
			fr, err := protoschema.ParseFrame(b[1:])
			if err != nil {
				t.Fatalf("%v: %v", c.indexes, err)
			}
			if fr.ID != 7 || !bytes.Equal(fr.Path, c.path) || !bytes.Equal(fr.Payload, payload) {
				t.Fatalf("%v: frame %+v, want path % x and payload % x", c.indexes, fr, c.path, payload)
			}
			if got := fr.Indexes(nil); !slices.Equal(got, c.indexes) {
				t.Fatalf("Indexes = %v, want %v", got, c.indexes)
			}
		}
	}
	// The long form of [0], as some serializers write it.
	fr, err := protoschema.ParseFrame([]byte{0, 0, 0, 0, 9, 2, 0, 0x08, 0x01})
	if err != nil || fr.ID != 9 || !slices.Equal(fr.Indexes(nil), []int{0}) || !bytes.Equal(fr.Payload, []byte{0x08, 0x01}) {
		t.Fatalf("long [0]: %+v, %v", fr, err)
	}
	// A negative schema id is passed through for the registry to deny.
	fr, err = protoschema.ParseFrame([]byte{0, 0xff, 0xff, 0xff, 0xff, 0})
	if err != nil || fr.ID != -1 {
		t.Fatalf("id 0xffffffff: %+v, %v", fr, err)
	}
}

func TestParseFrameAllocatesNothing(t *testing.T) {
	b := protoschema.AppendFrame(nil, 3, []int{2, 1, 0}, []byte{0x08, 0x01})
	var dst []int
	if n := testing.AllocsPerRun(100, func() {
		fr, err := protoschema.ParseFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		dst = fr.Indexes(dst[:0])
	}); n != 0 {
		t.Fatalf("ParseFrame and Indexes allocate %v times per record", n)
	}
}

func TestParseFrameHostile(t *testing.T) {
	header := []byte{0, 0, 0, 0, 1}
	with := func(b ...byte) []byte { return append(slices.Clone(header), b...) }
	overflow := with(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "0 bytes, the header alone is 5"},
		{"JSON", []byte(`{"a":1}`), "first byte is 0x7b, not the magic byte 0"},
		{"short header", []byte{0, 0, 0, 1}, "4 bytes, the header alone is 5"},
		{"no index list", header, "no message-index list after the header"},
		{"count truncated", with(0x80), "the message-index count is truncated"},
		{"count overflows", overflow, "count overflows 64 bits"},
		{"negative count", with(0x01), "negative message-index count -1"},
		{"absurd count", with(binary.AppendVarint(nil, protoschema.MaxMessageIndexes+1)...), "message-index count 101 is over 100"},
		{"huge count", with(binary.AppendVarint(nil, 1<<40)...), "is over 100"},
		{"count past the end", with(6, 2, 2), "message-index count 3, but 2 bytes follow"},
		{"index truncated", with(4, 2, 0x80), "message index 2 of 2 is truncated"},
		{"negative index", with(2, 1), "message index 1 of 1 is -1"},
		{"index past int32", with(append([]byte{2}, binary.AppendVarint(nil, 1<<31)...)...), "is 2147483648, out of 0..2^31-1"},
		{"index overflows", with(append([]byte{2}, overflow[5:]...)...), "message index 1 of 1 overflows 64 bits"},
	}
	for _, c := range cases {
		fr, err := protoschema.ParseFrame(c.b)
		if !errors.Is(err, protoschema.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (% x): %+v, %v; want ErrCorrupt with %q", c.name, c.b, fr, err, c.want)
		}
	}
}

func TestMessageAt(t *testing.T) {
	files, err := protoschema.CompileSources(context.Background(), "", map[string]string{"n.proto": nested}, "n.proto")
	if err != nil {
		t.Fatal(err)
	}
	// Map entries count: A's nested messages are B, MEntry, C.
	for name, want := range map[protoreflect.FullName][]int{
		"n.A":     {0},
		"n.A.B":   {0, 0},
		"n.A.C":   {0, 2},
		"n.A.C.D": {0, 2, 0},
		"n.E":     {1},
	} {
		md, err := files.Message(string(name))
		if err != nil {
			t.Fatal(err)
		}
		if got := protoschema.IndexesOf(md); !slices.Equal(got, want) {
			t.Errorf("IndexesOf(%s) = %v, want %v", name, got, want)
		}
		// Through a frame, as a record names it.
		fr, err := protoschema.ParseFrame(protoschema.AppendFrame(nil, 1, want, nil))
		if err != nil {
			t.Fatal(err)
		}
		got, err := files.MessageAt(fr.Indexes(nil))
		if err != nil || got.FullName() != name {
			t.Errorf("MessageAt(%v) = %v, %v; want %s", want, got, err, name)
		}
	}
	if md, err := files.MessageAt([]int{0, 1}); err != nil || !md.IsMapEntry() {
		t.Errorf("MessageAt([0 1]) = %v, %v; want A's map entry", md, err)
	}
	for _, bad := range [][]int{{2}, {0, 3}, {0, 2, 0, 0}, {1, 0}, {}, {-1}} {
		if md, err := files.MessageAt(bad); !errors.Is(err, protoschema.ErrUnknownMessage) {
			t.Errorf("MessageAt(%v) = %v, %v; want ErrUnknownMessage", bad, md, err)
		}
	}
}

// FuzzProtoFrame: ParseFrame never panics, and a frame it accepts is
// written back by AppendFrame as the same id, indexes and payload.
func FuzzProtoFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 8, 1})
	f.Add([]byte{0, 0, 0, 0, 1, 6, 6, 2, 0})
	f.Add([]byte{0, 0, 0, 0, 1, 0xc9, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := protoschema.ParseFrame(b)
		if err != nil {
			if !errors.Is(err, protoschema.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		ix := fr.Indexes(nil)
		if len(ix) == 0 || len(ix) > protoschema.MaxMessageIndexes {
			t.Fatalf("indexes %v", ix)
		}
		again, err := protoschema.ParseFrame(protoschema.AppendFrame(nil, fr.ID, ix, fr.Payload))
		if err != nil || again.ID != fr.ID || !slices.Equal(again.Indexes(nil), ix) || !bytes.Equal(again.Payload, fr.Payload) {
			t.Fatalf("round trip of %+v: %+v, %v", fr, again, err)
		}
	})
}
