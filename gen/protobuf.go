package gen

import (
	"encoding/binary"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The nested data set in Protobuf (etl gen -format nested-protobuf): the
// same batches as the Avro set (MakeBatch), each a ProtobufBatchSchema
// Batch, Confluent-framed. The schema is two files, as Protobuf schemas
// usually are: the batch's, registered under the topic's subject, imports
// the event's, registered on its own and named by a reference, so a
// consumer resolves references to read them. The timestamps are
// google.protobuf.Timestamp, a well-known type. The table (NestedDDL) and
// the benchmark's chain are the Avro set's.

// ProtobufEventImport is the path the batch's file imports the event's
// file by, and the subject the event's schema is registered under (the
// import path, as Confluent's serializers name a reference's subject by
// default).
const ProtobufEventImport = "etl/bench/event.proto"

// ProtobufEventSchema is the event's file.
const ProtobufEventSchema = `syntax = "proto3";

package etl.bench;

import "google/protobuf/timestamp.proto";

// Event is one event of a Batch.
message Event {
  google.protobuf.Timestamp ts = 1;
  string kind = 2;
  int64 value = 3;
  optional string page = 4; // absent for every 4th event
  repeated string tags = 5;
}
`

// ProtobufBatchSchema is the batch's file: the records' schema, whose
// first message is the record's (message indexes [0]).
const ProtobufBatchSchema = `syntax = "proto3";

package etl.bench;

import "google/protobuf/timestamp.proto";
import "etl/bench/event.proto";

// Batch is one record: events from one user.
message Batch {
  uint64 batch_id = 1;
  string source = 2;
  string user = 3;
  google.protobuf.Timestamp sent_at = 4;
  repeated Event events = 5;
}
`

// ProtobufMessage is the full name of the records' message.
const ProtobufMessage = "etl.bench.Batch"

// AppendProtobufConfluent appends b Confluent-framed under schemaID: the
// header, the message indexes [0] (Batch is its file's first message: the
// single byte 0), then b's encoding.
func (b Batch) AppendProtobufConfluent(dst []byte, schemaID int32) []byte {
	dst = AppendConfluent(dst, schemaID)
	dst = append(dst, 0)
	return b.AppendProtobuf(dst)
}

// AppendProtobuf appends b's Protobuf encoding as a ProtobufBatchSchema
// Batch: fields in number order and proto3's zero values left out, the
// bytes proto.Marshal writes with Deterministic set. Every field number
// is below 16, so each tag is one byte.
func (b Batch) AppendProtobuf(dst []byte) []byte {
	if b.ID != 0 {
		dst = append(dst, tag(1, protowire.VarintType))
		dst = binary.AppendUvarint(dst, b.ID)
	}
	dst = appendProtoString(dst, 2, b.Source)
	dst = appendProtoString(dst, 3, b.User)
	dst = appendTimestamp(dst, 4, newTimestamp(b.SentAt))
	for i := range b.Events {
		e := &b.Events[i]
		ts := newTimestamp(e.TS)
		dst = append(dst, tag(5, protowire.BytesType))
		dst = binary.AppendUvarint(dst, uint64(e.protobufSize(ts)))
		dst = appendTimestamp(dst, 1, ts)
		dst = appendProtoString(dst, 2, e.Kind)
		if e.Value != 0 {
			dst = append(dst, tag(3, protowire.VarintType))
			dst = binary.AppendUvarint(dst, uint64(e.Value))
		}
		if e.Page != nil { // proto3 optional: present even when empty
			dst = append(dst, tag(4, protowire.BytesType))
			dst = appendLen(dst, *e.Page)
		}
		for _, t := range e.Tags {
			dst = append(dst, tag(5, protowire.BytesType))
			dst = appendLen(dst, t)
		}
	}
	return dst
}

// appendLen appends s as a length-delimited value: its length, then its
// bytes. (encoding/binary's varint is Protobuf's, and the compiler inlines
// it where protowire's is a call.)
func appendLen(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// tag is the one-byte tag of field num (below 16) with wire type typ.
func tag(num protowire.Number, typ protowire.Type) byte { return byte(num)<<3 | byte(typ) }

// protobufSize is the length of e's encoding, ts being e.TS's.
func (e *NestedEvent) protobufSize(ts timestamp) int {
	n := 1 + protowire.SizeBytes(ts.size)
	if e.Kind != "" {
		n += 1 + protowire.SizeBytes(len(e.Kind))
	}
	if e.Value != 0 {
		n += 1 + protowire.SizeVarint(uint64(e.Value))
	}
	if e.Page != nil {
		n += 1 + protowire.SizeBytes(len(*e.Page))
	}
	for _, t := range e.Tags {
		n += 1 + protowire.SizeBytes(len(t))
	}
	return n
}

// appendProtoString appends field num of type string, left out when
// empty.
func appendProtoString(dst []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, tag(num, protowire.BytesType))
	return appendLen(dst, s)
}

// timestamp is a time as a google.protobuf.Timestamp message: its fields
// and the length of its encoding.
type timestamp struct {
	seconds int64
	nanos   int32
	size    int
}

func newTimestamp(t time.Time) timestamp {
	ts := timestamp{seconds: t.Unix(), nanos: int32(t.Nanosecond())}
	if ts.seconds != 0 {
		ts.size += 1 + protowire.SizeVarint(uint64(ts.seconds))
	}
	if ts.nanos != 0 {
		ts.size += 1 + protowire.SizeVarint(uint64(ts.nanos))
	}
	return ts
}

// appendTimestamp appends field num as a google.protobuf.Timestamp
// message (seconds = 1, nanos = 2), always present.
func appendTimestamp(dst []byte, num protowire.Number, ts timestamp) []byte {
	dst = append(dst, tag(num, protowire.BytesType))
	dst = binary.AppendUvarint(dst, uint64(ts.size))
	if ts.seconds != 0 {
		dst = append(dst, tag(1, protowire.VarintType))
		dst = binary.AppendUvarint(dst, uint64(ts.seconds))
	}
	if ts.nanos != 0 {
		dst = append(dst, tag(2, protowire.VarintType))
		dst = binary.AppendUvarint(dst, uint64(ts.nanos))
	}
	return dst
}
