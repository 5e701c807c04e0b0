package protobuf

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/protoschema"
)

// framedSource serves compiled files by id: pending ids answer
// ErrPending, invalid ones ErrInvalid, the others it lacks ErrUnknown.
type framedSource struct {
	files   map[int32]*protoschema.Files
	pending map[int32]bool
	invalid map[int32]bool
	wait    chan struct{}
	lookups int
}

func (s *framedSource) Lookup(id int32) (*protoschema.Files, error) {
	s.lookups++
	switch {
	case s.pending[id]:
		return nil, fmt.Errorf("%w: schema id %d", protoschema.ErrPending, id)
	case s.invalid[id]:
		return nil, fmt.Errorf("%w: schema id %d", protoschema.ErrInvalid, id)
	case s.files[id] == nil:
		return nil, fmt.Errorf("%w: schema id %d", protoschema.ErrUnknown, id)
	}
	return s.files[id], nil
}

func (s *framedSource) Wait(int32) <-chan struct{} { return s.wait }

const framedV1 = `syntax = "proto3";
package f;
message Order { int64 id = 1; string name = 2; }
message Other { string name = 1; }
`

const framedV2 = `syntax = "proto3";
package f;
message Order { int64 id = 1; string name = 2; uint32 qty = 3; }
`

// TestFramedConfluent checks Confluent-framed records: each schema id's
// message resolved and planned once, a new id (one more field) planned
// anew, a pending schema reported as decode.SchemaPending without a row,
// and the record errors' reasons.
func TestFramedConfluent(t *testing.T) {
	ctx := context.Background()
	v1, err := protoschema.CompileSources(ctx, "v1", map[string]string{"o.proto": framedV1}, "o.proto")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := protoschema.CompileSources(ctx, "v2", map[string]string{"o.proto": framedV2}, "o.proto")
	if err != nil {
		t.Fatal(err)
	}
	src := &framedSource{
		files:   map[int32]*protoschema.Files{1: v1, 2: v2},
		pending: map[int32]bool{3: true},
		invalid: map[int32]bool{4: true},
		wait:    make(chan struct{}),
	}
	s := schemaOf(t, "id Int64", "name String", "qty UInt32")
	f, err := NewFramed(FramingConfluent, nil, src, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id int64, name string, qty uint64) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(id))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, name)
		if qty != 0 {
			b = protowire.AppendTag(b, 3, protowire.VarintType)
			b = protowire.AppendVarint(b, qty)
		}
		return b
	}
	c := newChunk(t, s)
	for _, r := range []struct {
		id  int32
		msg []byte
	}{
		{1, msg(7, "a", 0)},
		{2, msg(8, "b", 5)},
		{1, msg(9, "c", 0)},
	} {
		if n, err := f.Decode(protoschema.AppendFrame(nil, r.id, []int{0}, r.msg), c); n != 1 || err != nil {
			t.Fatalf("id %d: %d, %v", r.id, n, err)
		}
	}
	if got, want := rowsOf(c), "7\ta\t0\n8\tb\t5\n9\tc\t0\n"; got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
	if src.lookups != 2 {
		t.Fatalf("%d lookups for two ids, want 2", src.lookups)
	}

	rows := c.Rows
	n, err := f.Decode(protoschema.AppendFrame(nil, 3, []int{0}, msg(1, "x", 0)), c)
	var pending decode.SchemaPending
	if n != 0 || !errors.As(err, &pending) || pending.SchemaReady() != src.wait || c.Rows != rows {
		t.Fatalf("pending schema: %d, %v (rows %d, want %d)", n, err, c.Rows, rows)
	}
	for _, bad := range []struct {
		name   string
		record []byte
		want   decode.Reason
	}{
		{"unknown id", protoschema.AppendFrame(nil, 9, []int{0}, msg(1, "x", 0)), decode.ReasonUnknownSchema},
		{"invalid schema", protoschema.AppendFrame(nil, 4, []int{0}, msg(1, "x", 0)), decode.ReasonSchemaMismatch},
		{"no such message", protoschema.AppendFrame(nil, 1, []int{5}, msg(1, "x", 0)), decode.ReasonUnknownSchema},
		{"bad magic", []byte{1, 0, 0, 0, 1, 0}, decode.ReasonCorrupt},
		{"tombstone", nil, decode.ReasonCorrupt},
		{"truncated message", protoschema.AppendFrame(nil, 1, []int{0}, []byte{0x12, 0x05, 'a'}), decode.ReasonCorrupt},
	} {
		n, err := f.Decode(bad.record, c)
		var de *decode.Error
		if n != 0 || !errors.As(err, &de) || c.Rows != rows {
			t.Errorf("%s: %d, %v", bad.name, n, err)
			continue
		}
		if de.Reason != bad.want {
			t.Errorf("%s: reason %s, want %s (%v)", bad.name, de.Reason, bad.want, err)
		}
	}
}

// rowsOf renders c's rows, one a line, their values tab-separated.
func rowsOf(c *chunk.Chunk) string {
	var b strings.Builder
	for r := 0; r < c.Rows; r++ {
		for i, col := range c.Cols {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(render(col, r))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestFramedRaw checks raw framing: every record is the configured
// message, an empty value an empty message, a null value refused.
func TestFramedRaw(t *testing.T) {
	v1, err := protoschema.CompileSources(context.Background(), "v1", map[string]string{"o.proto": framedV1}, "o.proto")
	if err != nil {
		t.Fatal(err)
	}
	md, err := v1.Message("f.Order")
	if err != nil {
		t.Fatal(err)
	}
	s := schemaOf(t, "id Int64", "name String")
	f, err := NewFramed(FramingRaw, md, nil, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChunk(t, s)
	rec := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 42)
	for _, v := range [][]byte{rec, {}} {
		if n, err := f.Decode(v, c); n != 1 || err != nil {
			t.Fatalf("%x: %d, %v", v, n, err)
		}
	}
	if got, want := rowsOf(c), "42\t\n0\t\n"; got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
	var de *decode.Error
	if _, err := f.Decode(nil, c); !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt {
		t.Fatalf("null value: %v", err)
	}
	if _, err := NewFramed("single_object", md, nil, s, Options{}); err == nil {
		t.Fatal("unknown framing accepted")
	}
}
