package protoschema_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/protoschema"
)

// fakeSource serves files by id; pending ids answer ErrPending with wait,
// the others it does not hold ErrUnknown. It counts Lookups.
type fakeSource struct {
	files   map[int32]*protoschema.Files
	invalid map[int32]bool
	pending map[int32]bool
	wait    chan struct{}
	lookups int
}

func (s *fakeSource) Lookup(id int32) (*protoschema.Files, error) {
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

func (s *fakeSource) Wait(int32) <-chan struct{} { return s.wait }

func TestResolver(t *testing.T) {
	files, err := protoschema.CompileSources(context.Background(), "", map[string]string{"n.proto": nested}, "n.proto")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{
		files:   map[int32]*protoschema.Files{1: files, 2: files},
		invalid: map[int32]bool{4: true},
		pending: map[int32]bool{3: true},
		wait:    make(chan struct{}),
	}
	r := protoschema.NewResolver(src)
	payload := []byte{0x0a, 0x00}
	records := []struct {
		id      int32
		indexes []int
		want    protoreflect.FullName
	}{
		{1, []int{0}, "n.A"},
		{1, []int{0, 2, 0}, "n.A.C.D"},
		{2, []int{1}, "n.E"},
		{1, []int{0}, "n.A"},
	}
	framed := make([][]byte, len(records))
	for i, rec := range records {
		framed[i] = protoschema.AppendFrame(nil, rec.id, rec.indexes, payload)
	}
	for round := range 2 {
		for i, rec := range records {
			got, err := r.Resolve(framed[i])
			if err != nil || got.ID != rec.id || got.Message.FullName() != rec.want || !bytes.Equal(got.Payload, payload) {
				t.Fatalf("round %d, record %d: %+v, %v; want id %d, %s", round, i, got, err, rec.id, rec.want)
			}
		}
	}
	if src.lookups != 2 {
		t.Fatalf("%d Lookups for two ids, want 2", src.lookups)
	}
	// Cached: records alternating between ids and paths allocate nothing.
	if n := testing.AllocsPerRun(100, func() {
		for _, b := range framed {
			if _, err := r.Resolve(b); err != nil {
				t.Fatal(err)
			}
		}
	}); n != 0 {
		t.Fatalf("Resolve of cached messages allocates %v times per 4 records", n)
	}

	// Pending: the source's wait channel; asked again next time.
	_, err = r.Resolve(protoschema.AppendFrame(nil, 3, nil, payload))
	var pe *protoschema.PendingError
	if !errors.As(err, &pe) || pe.ID != 3 || pe.Wait != src.wait || !errors.Is(err, protoschema.ErrPending) {
		t.Fatalf("pending id: %v", err)
	}
	delete(src.pending, 3)
	src.files[3] = files
	if got, err := r.Resolve(protoschema.AppendFrame(nil, 3, nil, payload)); err != nil || got.Message.FullName() != "n.A" {
		t.Fatalf("id 3 once fetched: %+v, %v", got, err)
	}

	// Unknown is asked again; invalid is not.
	before := src.lookups
	for range 2 {
		if _, err := r.Resolve(protoschema.AppendFrame(nil, 9, nil, payload)); !errors.Is(err, protoschema.ErrUnknown) {
			t.Fatalf("unknown id: %v", err)
		}
		if _, err := r.Resolve(protoschema.AppendFrame(nil, 4, nil, payload)); !errors.Is(err, protoschema.ErrInvalid) {
			t.Fatalf("invalid id: %v", err)
		}
	}
	if n := src.lookups - before; n != 3 {
		t.Fatalf("%d Lookups for an unknown id twice and an invalid one twice, want 3", n)
	}

	// Corrupt frames and indexes that name no message.
	if _, err := r.Resolve([]byte{0, 0, 0, 0, 1, 0x01}); !errors.Is(err, protoschema.ErrCorrupt) {
		t.Fatalf("corrupt frame: %v", err)
	}
	if _, err := r.Resolve(protoschema.AppendFrame(nil, 1, []int{0, 5}, payload)); !errors.Is(err, protoschema.ErrUnknownMessage) {
		t.Fatalf("index past the messages: %v", err)
	}
	// The cache still answers after errors.
	if got, err := r.Resolve(framed[1]); err != nil || got.Message.FullName() != "n.A.C.D" {
		t.Fatalf("after errors: %+v, %v", got, err)
	}
}
