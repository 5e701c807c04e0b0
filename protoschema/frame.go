package protoschema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/schemaregistry"
)

// The Confluent Protobuf framing, as Confluent's serializers write it
// (https://docs.confluent.io/platform/current/schema-registry/fundamentals/serdes-develop/index.html#wire-format,
// and readMessageIndexes/writeMessageIndexes in confluent-kafka-go's
// schemaregistry/serde/protobuf):
//
//	byte 0      the magic byte 0
//	bytes 1-4   the schema id, big-endian
//	then        the message indexes: a count, then that many indexes, each
//	            a zigzag varint (encoding/binary's Varint); the path from
//	            the schema's file to the record's message: the index of a
//	            top-level message, then of a message nested in it, and so
//	            on. The single byte 0 (a count of 0) stands for [0], the
//	            file's first message, the common case.
//	then        the message's Protobuf encoding
//
// A count is at most MaxMessageIndexes, and an index is 0 to 2^31-1.

// MaxMessageIndexes bounds the message-index list: a path deeper than
// Protobuf's own nesting limit (100) names no message a schema can hold.
const MaxMessageIndexes = 100

// ErrCorrupt means a record is not a well-formed Confluent Protobuf frame;
// the error names what is wrong.
var ErrCorrupt = errors.New("protoschema: corrupt Confluent Protobuf frame")

// Frame is a Confluent-framed Protobuf record, split. Path and Payload
// alias the record.
type Frame struct {
	// ID is the schema id.
	ID int32
	// Path is the message-index list as the record wrote it (checked by
	// ParseFrame): a key under which a decoder can cache the message it
	// names, without decoding it (Indexes decodes it).
	Path []byte
	// Payload is the message's encoding; it may be empty (a message with
	// every field absent).
	Payload []byte
}

// ParseFrame splits a Confluent-framed Protobuf record. A record that is
// not one gives an error wrapping ErrCorrupt that says why: not the magic
// byte, shorter than the header, a message-index list that is truncated,
// longer than MaxMessageIndexes or than the bytes left, or holds a
// negative or overflowing number. It does not allocate unless it fails.
func ParseFrame(b []byte) (Frame, error) {
	if len(b) > 0 && b[0] != 0 {
		return Frame{}, fmt.Errorf("%w: first byte is 0x%02x, not the magic byte 0", ErrCorrupt, b[0])
	}
	if len(b) < schemaregistry.FrameHeaderLen {
		return Frame{}, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrCorrupt, len(b), schemaregistry.FrameHeaderLen)
	}
	id := int32(binary.BigEndian.Uint32(b[1:schemaregistry.FrameHeaderLen]))
	rest := b[schemaregistry.FrameHeaderLen:]
	count, n := binary.Varint(rest)
	switch {
	case len(rest) == 0:
		return Frame{}, fmt.Errorf("%w: schema id %d: no message-index list after the header", ErrCorrupt, id)
	case n == 0:
		return Frame{}, fmt.Errorf("%w: schema id %d: the message-index count is truncated", ErrCorrupt, id)
	case n < 0:
		return Frame{}, fmt.Errorf("%w: schema id %d: the message-index count overflows 64 bits", ErrCorrupt, id)
	case count < 0:
		return Frame{}, fmt.Errorf("%w: schema id %d: negative message-index count %d", ErrCorrupt, id, count)
	case count > MaxMessageIndexes:
		return Frame{}, fmt.Errorf("%w: schema id %d: message-index count %d is over %d", ErrCorrupt, id, count, MaxMessageIndexes)
	case count > int64(len(rest)-n):
		return Frame{}, fmt.Errorf("%w: schema id %d: message-index count %d, but %d bytes follow", ErrCorrupt, id, count, len(rest)-n)
	}
	pos := n
	for i := range int(count) {
		v, m := binary.Varint(rest[pos:])
		switch {
		case m == 0:
			return Frame{}, fmt.Errorf("%w: schema id %d: message index %d of %d is truncated", ErrCorrupt, id, i+1, count)
		case m < 0:
			return Frame{}, fmt.Errorf("%w: schema id %d: message index %d of %d overflows 64 bits", ErrCorrupt, id, i+1, count)
		case v < 0 || v > math.MaxInt32:
			return Frame{}, fmt.Errorf("%w: schema id %d: message index %d of %d is %d, out of 0..2^31-1", ErrCorrupt, id, i+1, count, v)
		}
		pos += m
	}
	return Frame{ID: id, Path: rest[:pos:pos], Payload: rest[pos:]}, nil
}

// Indexes appends the message indexes of a Frame that ParseFrame returned
// to dst and returns the extended slice: [0] for the single byte 0.
func (fr Frame) Indexes(dst []int) []int {
	count, n := binary.Varint(fr.Path)
	if count <= 0 {
		return append(dst, 0)
	}
	for range int(count) {
		v, m := binary.Varint(fr.Path[n:])
		if m <= 0 {
			break // not from ParseFrame
		}
		dst = append(dst, int(v))
		n += m
	}
	return dst
}

// MessageAt returns the message indexes name in fd: indexes[0] is the
// index of a top-level message of fd, each next one of a message nested in
// the previous (map entries count, as they are nested messages in the
// descriptor). An index past the messages there gives an error wrapping
// ErrUnknownMessage.
func MessageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		return nil, fmt.Errorf("%w: no message index", ErrUnknownMessage)
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, ix := range indexes {
		if ix < 0 || ix >= msgs.Len() {
			in := "the file"
			if md != nil {
				in = string(md.FullName())
			}
			return nil, fmt.Errorf("%w: message indexes %v: %s has %d messages, no index %d", ErrUnknownMessage, indexes, in, msgs.Len(), indexes[depth])
		}
		md = msgs.Get(ix)
		msgs = md.Messages()
	}
	return md, nil
}

// IndexesOf returns the message indexes of md in its file: the inverse of
// MessageAt.
func IndexesOf(md protoreflect.MessageDescriptor) []int {
	var rev []int
	for d := protoreflect.Descriptor(md); ; {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		rev = append(rev, m.Index())
		d = m.Parent()
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// AppendIndexes appends the message-index list of indexes to dst as
// Confluent's serializers write it: the single byte 0 for [0] (and for no
// index), else the count and the indexes as zigzag varints.
func AppendIndexes(dst []byte, indexes []int) []byte {
	if len(indexes) == 0 || len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(indexes)))
	for _, ix := range indexes {
		dst = binary.AppendVarint(dst, int64(ix))
	}
	return dst
}

// AppendFrame appends the Confluent Protobuf frame of payload (a message's
// encoding) to dst: the header with schema id, the message-index list of
// indexes, then payload. It is the inverse of ParseFrame, for producers
// and tests.
func AppendFrame(dst []byte, id int32, indexes []int, payload []byte) []byte {
	dst = schemaregistry.AppendFrame(dst, id, nil)
	dst = AppendIndexes(dst, indexes)
	return append(dst, payload...)
}
