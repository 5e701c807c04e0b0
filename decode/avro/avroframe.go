package avro

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Avro framings.
const (
	FramingConfluent    = "confluent"     // magic byte 0, 4-byte big-endian schema id, datum
	FramingRaw          = "raw"           // the datum alone, written with the configured schema
	FramingSingleObject = "single_object" // C3 01, 8-byte CRC-64-AVRO fingerprint (little-endian), datum
)

// Errors a SchemaSource reports.
var (
	// ErrSchemaPending: the schema is being fetched (or the registry is
	// unreachable and the fetch is being retried); try again after Wait.
	ErrSchemaPending = errors.New("schema not available yet")
	// ErrSchemaUnknown: the registry answered that the id does not exist.
	ErrSchemaUnknown = errors.New("unknown schema id")
)

// SchemaSource serves writer schemas by id without blocking.
type SchemaSource interface {
	// Lookup returns the schema text of id, or an error wrapping
	// ErrSchemaPending or ErrSchemaUnknown.
	Lookup(id int32) (string, error)
	// Wait returns a channel closed when the pending fetch of id ends.
	Wait(id int32) <-chan struct{}
}

// SchemaPendingError is returned by Framed.Decode when the record's
// schema is not available yet. The record was not decoded: decode it again
// once Wait is closed. It is not a reason to dead-letter the record.
type SchemaPendingError struct {
	ID   int32
	Wait <-chan struct{}
	Err  error
}

func (e *SchemaPendingError) Error() string {
	return fmt.Sprintf("schema id %d not available yet: %v", e.ID, e.Err)
}

func (e *SchemaPendingError) Unwrap() error { return e.Err }

// SchemaReady implements decode.SchemaPending.
func (e *SchemaPendingError) SchemaReady() <-chan struct{} { return e.Wait }

var _ decode.SchemaPending = (*SchemaPendingError)(nil)

// Framed decodes framed Avro records: it reads the framing, finds the
// writer schema and decodes the datum with a plan compiled once per writer
// schema and kept for the decoder's life. Not safe for concurrent use: one
// per worker.
type Framed struct {
	framing     string
	table       *chunk.Schema
	opts        Options
	src         SchemaSource
	plans       map[int32]avroPlan // confluent: by schema id
	fixed       *Decoder           // raw and single_object
	fingerprint []byte             // single_object: of the configured schema
}

type avroPlan struct {
	dec *Decoder
	err error // the writer schema cannot fill the table's columns
}

// NewFramed returns a decoder for framing. raw and single_object use
// schemaText; confluent asks src for each schema id it meets.
func NewFramed(framing, schemaText string, src SchemaSource, table *chunk.Schema, o Options) (*Framed, error) {
	a := &Framed{framing: framing, table: table, opts: o, src: src, plans: map[int32]avroPlan{}}
	switch framing {
	case FramingConfluent:
		if src == nil {
			return nil, errors.New("decode: confluent framing needs a schema registry")
		}
	case FramingRaw, FramingSingleObject:
		if schemaText == "" {
			return nil, fmt.Errorf("decode: %s framing needs a schema", framing)
		}
		d, err := New(schemaText, table, o)
		if err != nil {
			return nil, err
		}
		a.fixed = d
		if framing == FramingSingleObject {
			s, err := havro.ParseWithCache(schemaText, "", &havro.SchemaCache{})
			if err != nil {
				return nil, fmt.Errorf("decode: schema: %w", err)
			}
			if a.fingerprint, err = s.FingerprintUsing(havro.CRC64AvroLE); err != nil {
				return nil, fmt.Errorf("decode: schema fingerprint: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("decode: Avro framing %q is not one of confluent, raw, single_object", framing)
	}
	return a, nil
}

// Decode implements decode.Decoder. Besides *decode.Error it returns *SchemaPendingError
// when a confluent record's schema is still being fetched.
func (a *Framed) Decode(value []byte, c *chunk.Chunk) (int, error) {
	if value == nil || (len(value) == 0 && a.framing != FramingRaw) {
		return 0, decode.NullValue(value)
	}
	switch a.framing {
	case FramingRaw:
		return a.fixed.Decode(value, c)
	case FramingSingleObject:
		if len(value) < 10 || value[0] != 0xC3 || value[1] != 0x01 {
			return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: errors.New("not an Avro single-object encoding (want the header C3 01 and an 8-byte fingerprint)")}
		}
		if !bytes.Equal(value[2:10], a.fingerprint) {
			return 0, &decode.Error{Reason: decode.ReasonUnknownSchema, Err: fmt.Errorf("schema fingerprint %x is not the configured schema's %x", value[2:10], a.fingerprint)}
		}
		return a.fixed.Decode(value[10:], c)
	}
	if len(value) < 5 {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("truncated Confluent frame: %d bytes, want at least 5", len(value))}
	}
	if value[0] != 0 {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("wrong magic byte %#x, want 0 (Confluent framing)", value[0])}
	}
	id := int32(binary.BigEndian.Uint32(value[1:5]))
	p, ok := a.plans[id]
	if !ok {
		text, err := a.src.Lookup(id)
		switch {
		case errors.Is(err, ErrSchemaUnknown):
			return 0, &decode.Error{Reason: decode.ReasonUnknownSchema, Err: fmt.Errorf("schema id %d: %w", id, err)}
		case err != nil:
			return 0, &SchemaPendingError{ID: id, Wait: a.src.Wait(id), Err: err}
		}
		d, cerr := New(text, a.table, a.opts)
		if cerr != nil {
			cerr = fmt.Errorf("writer schema %d does not fit the table: %w", id, cerr)
		}
		p = avroPlan{dec: d, err: cerr}
		a.plans[id] = p
	}
	if p.err != nil {
		// A writer schema that cannot fill the table's columns, whatever
		// validate_schema asks.
		reason := decode.ReasonSchemaMismatch
		var de *decode.Error
		if errors.As(p.err, &de) {
			reason = de.Reason
		}
		return 0, &decode.Error{Reason: reason, Err: p.err}
	}
	return p.dec.Decode(value[5:], c)
}
