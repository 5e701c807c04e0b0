package protoschema

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Source serves compiled registry schemas by id without blocking, as
// Registry does: Lookup answers an error wrapping ErrPending while the
// schema (or a reference) is being fetched, Wait giving the channel to
// wait on, ErrUnknown for what the registry denies and ErrInvalid for a
// schema that cannot be used. The pipeline wraps a Registry in its own
// Source (to read the table again before the first record of a new id,
// as for Avro).
type Source interface {
	Lookup(id int32) (*Files, error)
	Wait(id int32) <-chan struct{}
}

var _ Source = (*Registry)(nil)

// PendingError is Resolver.Resolve's answer for a record whose schema is
// not available yet: the record was not resolved; resolve it again once
// Wait is closed. It is not a reason to dead-letter the record.
type PendingError struct {
	ID   int32
	Wait <-chan struct{}
	Err  error // wraps ErrPending
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("schema id %d not available yet: %v", e.ID, e.Err)
}

func (e *PendingError) Unwrap() error { return e.Err }

// SchemaReady is Wait: it makes a PendingError a decode.SchemaPending,
// which the pipeline waits on as it does for Avro.
func (e *PendingError) SchemaReady() <-chan struct{} { return e.Wait }

// Resolved is a Confluent-framed Protobuf record resolved to its message.
type Resolved struct {
	ID      int32
	Message protoreflect.MessageDescriptor
	Payload []byte // the message's encoding, aliasing the record
}

// Resolver resolves Confluent-framed Protobuf records to their message
// through a Source, caching the message per (schema id, message-index
// path): a record of a schema and message already seen costs the frame's
// parse and a comparison (the same as the previous record's) or a map
// lookup, and allocates nothing. Not safe for concurrent use: one per
// worker, as decoders are.
type Resolver struct {
	src  Source
	ids  map[int32]*idMessages
	last struct {
		id   int32
		path string // a key of ids[id].paths, so keeping it costs nothing
		md   protoreflect.MessageDescriptor
	}
}

// idMessages is what a Resolver knows of one schema id.
type idMessages struct {
	files *Files
	err   error // ErrInvalid: every record of the id is refused
	paths map[string]pathMessage
}

type pathMessage struct {
	key string // the map key, kept for Resolver.last
	md  protoreflect.MessageDescriptor
}

// NewResolver returns a Resolver asking src for the schemas.
func NewResolver(src Source) *Resolver {
	return &Resolver{src: src, ids: map[int32]*idMessages{}}
}

// Resolve parses record's frame and returns its schema id, message and
// payload. Its errors: ParseFrame's (ErrCorrupt), a *PendingError while
// the schema is being fetched, the Source's ErrUnknown (not cached here:
// the Source decides when to ask again) and ErrInvalid (cached), and
// ErrUnknownMessage for message indexes that name no message of the
// schema.
func (r *Resolver) Resolve(record []byte) (Resolved, error) {
	fr, err := ParseFrame(record)
	if err != nil {
		return Resolved{}, err
	}
	if r.last.md != nil && fr.ID == r.last.id && string(fr.Path) == r.last.path {
		return Resolved{ID: fr.ID, Message: r.last.md, Payload: fr.Payload}, nil
	}
	e := r.ids[fr.ID]
	if e == nil {
		files, err := r.src.Lookup(fr.ID)
		switch {
		case errors.Is(err, ErrPending):
			return Resolved{}, &PendingError{ID: fr.ID, Wait: r.src.Wait(fr.ID), Err: err}
		case err != nil && !errors.Is(err, ErrInvalid):
			return Resolved{}, err
		}
		e = &idMessages{files: files, err: err, paths: map[string]pathMessage{}}
		r.ids[fr.ID] = e
	}
	if e.err != nil {
		return Resolved{}, e.err
	}
	pm, ok := e.paths[string(fr.Path)]
	if !ok {
		md, err := e.files.MessageAt(fr.Indexes(nil))
		if err != nil {
			return Resolved{}, err
		}
		pm = pathMessage{key: string(fr.Path), md: md}
		e.paths[pm.key] = pm
	}
	r.last.id, r.last.path, r.last.md = fr.ID, pm.key, pm.md
	return Resolved{ID: fr.ID, Message: pm.md, Payload: fr.Payload}, nil
}
