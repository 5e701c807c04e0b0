package schemaregistry_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/etl-project/etl/schemaregistry"
)

func TestParseFrame(t *testing.T) {
	good := []struct {
		name    string
		in      []byte
		id      int32
		payload []byte
	}{
		{"id 1", []byte{0, 0, 0, 0, 1, 0x02, 0x61}, 1, []byte{0x02, 0x61}},
		{"big-endian id", []byte{0, 0x01, 0x02, 0x03, 0x04, 0xff}, 0x01020304, []byte{0xff}},
		{"empty payload", []byte{0, 0, 0, 0, 7}, 7, []byte{}},
		{"high bit id", []byte{0, 0xff, 0xff, 0xff, 0xff, 0}, -1, []byte{0}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			id, payload, err := schemaregistry.ParseFrame(tc.in)
			if err != nil {
				t.Fatalf("ParseFrame(%x): %v", tc.in, err)
			}
			if id != tc.id || !bytes.Equal(payload, tc.payload) {
				t.Fatalf("ParseFrame(%x) = %d, %x; want %d, %x", tc.in, id, payload, tc.id, tc.payload)
			}
			if again := schemaregistry.AppendFrame(nil, id, payload); !bytes.Equal(again, tc.in) {
				t.Fatalf("AppendFrame(%d, %x) = %x, want %x", id, payload, again, tc.in)
			}
		})
	}

	bad := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, schemaregistry.ErrTruncated},
		{"magic only", []byte{0}, schemaregistry.ErrTruncated},
		{"four bytes", []byte{0, 0, 0, 1}, schemaregistry.ErrTruncated},
		{"wrong magic", []byte{1, 0, 0, 0, 1, 2}, schemaregistry.ErrBadMagic},
		{"JSON record", []byte(`{"a":1}`), schemaregistry.ErrBadMagic},
		{"short and wrong magic", []byte("{}"), schemaregistry.ErrBadMagic},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			id, payload, err := schemaregistry.ParseFrame(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseFrame(%x) error = %v, want %v", tc.in, err, tc.want)
			}
			if id != 0 || payload != nil {
				t.Fatalf("ParseFrame(%x) = %d, %x with an error; want 0, nil", tc.in, id, payload)
			}
		})
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 1, 2, 3})
	f.Add([]byte{1, 0, 0, 0, 1, 2, 3})
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := schemaregistry.ParseFrame(b)
		if err != nil {
			if !errors.Is(err, schemaregistry.ErrBadMagic) && !errors.Is(err, schemaregistry.ErrTruncated) {
				t.Fatalf("ParseFrame(%x): unexpected error %v", b, err)
			}
			if len(b) >= schemaregistry.FrameHeaderLen && b[0] == 0 {
				t.Fatalf("ParseFrame(%x) rejected a well-formed frame: %v", b, err)
			}
			return
		}
		if len(b) < schemaregistry.FrameHeaderLen || b[0] != 0 {
			t.Fatalf("ParseFrame(%x) accepted a malformed frame", b)
		}
		if want := int32(binary.BigEndian.Uint32(b[1:5])); id != want {
			t.Fatalf("ParseFrame(%x) id = %d, want %d", b, id, want)
		}
		if !bytes.Equal(payload, b[5:]) {
			t.Fatalf("ParseFrame(%x) payload = %x, want %x", b, payload, b[5:])
		}
	})
}
