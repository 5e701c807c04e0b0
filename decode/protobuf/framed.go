package protobuf

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/protoschema"
)

// Protobuf framings (decode.protobuf.framing).
const (
	// FramingConfluent is magic byte 0, the 4-byte schema id, the
	// message-index list, the message: the frame names the registry
	// schema and the message in it.
	FramingConfluent = "confluent"
	// FramingRaw is the message alone, of the configured message type.
	FramingRaw = "raw"
)

// Framed decodes framed Protobuf records into the rows of one table: raw
// records with the plan of the configured message; Confluent-framed ones
// resolved to their message through a protoschema.Resolver, each message
// (one per schema id and message-index path) with a plan compiled the
// first time a record of it comes and kept for the decoder's life. Not
// safe for concurrent use: one per worker, as the Resolver.
type Framed struct {
	table *chunk.Schema
	opts  Options
	fixed *Decoder              // raw
	res   *protoschema.Resolver // confluent
	plans map[protoreflect.MessageDescriptor]framedPlan
	last  struct {
		md protoreflect.MessageDescriptor
		p  framedPlan
	}
}

type framedPlan struct {
	dec *Decoder
	err *decode.Error // the message cannot fill the table's columns
}

// NewFramed returns a decoder for framing: raw decodes every record as
// md; confluent resolves each record's message through src (a
// protoschema.Registry, or a Source wrapping one).
func NewFramed(framing string, md protoreflect.MessageDescriptor, src protoschema.Source, table *chunk.Schema, o Options) (*Framed, error) {
	f := &Framed{table: table, opts: o, plans: map[protoreflect.MessageDescriptor]framedPlan{}}
	switch framing {
	case FramingRaw:
		if md == nil {
			return nil, errors.New("decode: raw Protobuf framing needs the message")
		}
		d, err := New(md, table, o)
		if err != nil {
			return nil, err
		}
		f.fixed = d
	case FramingConfluent:
		if src == nil {
			return nil, errors.New("decode: confluent framing needs a schema registry")
		}
		f.res = protoschema.NewResolver(src)
	default:
		return nil, fmt.Errorf("decode: Protobuf framing %q is not one of confluent, raw", framing)
	}
	return f, nil
}

// Decode implements decode.Decoder. Besides *decode.Error it returns a
// *protoschema.PendingError (a decode.SchemaPending) when a confluent
// record's schema is still being fetched: the record was not decoded.
// An unknown schema id, or message indexes that name no message of the
// schema, are unknown_schema; a schema that does not compile, or whose
// message cannot fill the table's columns, schema_mismatch; a frame that
// cannot be parsed, corrupt.
func (f *Framed) Decode(value []byte, c *chunk.Chunk) (int, error) {
	if value == nil {
		return 0, decode.NullValue(value)
	}
	if f.fixed != nil {
		return f.fixed.Decode(value, c)
	}
	r, err := f.res.Resolve(value)
	if err != nil {
		return 0, resolveError(err)
	}
	p := f.last.p
	if f.last.md != r.Message {
		var ok bool
		if p, ok = f.plans[r.Message]; !ok {
			p = f.plan(r)
			f.plans[r.Message] = p
		}
		f.last.md, f.last.p = r.Message, p
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.dec.Decode(r.Payload, c)
}

// plan compiles the plan of r's message for the table.
func (f *Framed) plan(r protoschema.Resolved) framedPlan {
	d, err := New(r.Message, f.table, f.opts)
	if err == nil {
		return framedPlan{dec: d}
	}
	// A message that cannot fill the table's columns, whatever
	// validate_schema asks.
	reason := decode.ReasonSchemaMismatch
	var de *decode.Error
	if errors.As(err, &de) {
		reason = de.Reason
	}
	return framedPlan{err: &decode.Error{Reason: reason,
		Err: fmt.Errorf("schema id %d message %s does not fit the table: %w", r.ID, r.Message.FullName(), err)}}
}

// resolveError is the decode error (or the pending wait) for Resolve's
// error err.
func resolveError(err error) error {
	var pending *protoschema.PendingError
	switch {
	case errors.As(err, &pending):
		return pending
	case errors.Is(err, protoschema.ErrCorrupt):
		return &decode.Error{Reason: decode.ReasonCorrupt, Err: err}
	case errors.Is(err, protoschema.ErrInvalid):
		return &decode.Error{Reason: decode.ReasonSchemaMismatch, Err: err}
	default: // ErrUnknown, ErrUnknownMessage
		return &decode.Error{Reason: decode.ReasonUnknownSchema, Err: err}
	}
}
