// Package protobuf decodes Protobuf messages (their wire bytes, framing
// removed) into the rows of a chunk.Chunk: New compiles a Decoder for one
// message descriptor (google.golang.org/protobuf's protoreflect, however
// it was had: compiled .proto files, a descriptor set, a registry's
// schema) and the table's columns; Decode reads the wire format with this
// package's own reader, without reflection or dynamic messages. Errors
// are *decode.Error.
//
// # The plan
//
// New compiles, per message level, a table from field number to the
// field's plan: a slot, and for a message whose fields feed columns of
// their own ("a.b") the plan of its fields, read into the same slots.
// Decode scans the message once, in wire order, recording in each slot
// the field's last occurrence (and, for a field kept whole, the chain of
// all of them); then every column takes its value from its slot. So
// fields may come in any order and repeat, with Protobuf's meaning: the
// last occurrence of a scalar wins, the occurrences of a message merge
// (they are read one after the other into the same slots), those of a
// repeated field append, a later map entry replaces an earlier one of the
// same key, and a oneof member empties the other members. Fields no
// column reads, and fields the descriptor lacks (written with a newer
// schema), are skipped unparsed. Decoding allocates nothing but column
// growth (and the scratch buffers' first growth).
//
// Most messages are written in field number order, each field once (a
// repeated field's occurrences together): a plan without oneofs,
// flattened messages or maps first reads the message in one pass,
// appending each value as it comes, and only a message (or a Nested
// element) out of that order, or one with a value its column refuses,
// is taken back and read again the slow way above; the result is the
// same either way.
//
// # Absent fields
//
// A field that is not on the wire has its default value as Protobuf
// defines it (zero, the empty string, an enum's zero value, proto2's
// [default = ...]), which goes into its column as any value would;
// except that into a Nullable column it is NULL when the field has
// presence (proto3 optional, proto2 optional, a oneof member, a message)
// or when the message it is flattened from is absent. A message that is
// absent goes into a non-Nullable column as the empty message. A column
// whose field the message type lacks gets the column's default (the
// table's DEFAULT when the plan computed one), as with JSON and Avro; so
// does an absent string or bytes field into a column other than String
// and FixedString (UUID, IPv4, IPv6, Enum, Decimal), whose types have no
// empty value.
//
// # Conversions
//
// By column type (a LowCardinality wrapper is ignored; Nullable(T)
// converts as T):
//
//   - Int8..Int64, UInt8..UInt64, Int128..UInt256: int32, int64, uint32,
//     uint64, sint32, sint64, fixed32, fixed64, sfixed32, sfixed64, an
//     enum's number; a value outside the column's range is out_of_range.
//     Int8 and UInt8 also take a bool as 0 or 1. A Duration gives its
//     whole seconds (the fraction dropped toward zero).
//   - Bool: bool.
//   - Float32, Float64: float, double, and the integer kinds (the nearest
//     float). A double beyond Float32's range is out_of_range
//     (infinities and NaN pass). A Duration gives its seconds with their
//     fraction.
//   - String: string, bytes (raw), an enum's name (a number the enum does
//     not declare is out_of_range); a Timestamp as RFC 3339 in UTC with
//     0, 3, 6 or 9 fraction digits and a Duration as "1.5s" (protojson's
//     texts); Struct, Value and ListValue as their JSON text (protojson's
//     JSON, compact, a Struct's keys sorted; a Value with no kind is
//     null, a NaN or infinite number is the string "NaN", "Infinity" or
//     "-Infinity").
//   - FixedString(N): string or bytes of at most N bytes (out_of_range
//     past them).
//   - Enum8, Enum16: an enum's name, or a string, that is one of the
//     column's names (out_of_range otherwise).
//   - UUID, IPv4, IPv6: a string in the type's text form (wrong_type
//     otherwise), or bytes of its raw form (16, 4 or 16 bytes); IPv4 also
//     from uint32 or fixed32 (the address as a number).
//   - Decimal(P, S): the integer kinds, or a string holding a plain
//     decimal (wrong_type otherwise); a value of more than P-S digits
//     before the point, or with a nonzero digit past S, is out_of_range.
//     A Duration gives its exact seconds.
//   - DateTime, Date, Date32, DateTime64(P): a google.protobuf.Timestamp
//     (seconds, the UTC day, or ticks of 10^-P s, rounded down), within
//     the type's range (and the server's: Options.Ranges), else
//     out_of_range. A Timestamp or Duration outside the range protojson
//     accepts is out_of_range.
//   - Nullable(T): the wrapper types (google.protobuf.Int64Value,
//     StringValue, ...) give their value, NULL when absent; any field
//     with presence gives NULL when absent (see Absent fields). The
//     wrappers go into T too (the zero value when absent).
//   - Array(T): a repeated field (packed or not: both are read), each
//     element converted as T; a repeated message's elements into Tuple,
//     or a well-known type's column type.
//   - Map(K, V): a map field, the last entry of each key, in wire order;
//     K from the key's kind (String, an integer type, Bool), V from the
//     value's. Options.Version before 21.8 refuses Map columns.
//   - Tuple(T1, ..., Tn): a message, its fields in declaration order into
//     the elements of an unnamed tuple (the counts must agree), or by
//     name into a named tuple's (fields the tuple lacks are skipped,
//     elements the message lacks get their default).
//   - Nested: the Array columns n.a, n.b, ... of a Nested structure n
//     take, from a repeated message n, field a, b, ... of each element:
//     one element per message in every column (the element type's
//     default for a column no field of the message feeds). A map field n
//     is a repeated message of fields key and value: n.key and n.value
//     are its keys and values (the last entry of each key), which is how
//     a map goes into a server before 21.8. Repeated messages inside the
//     elements cannot feed columns of their own. The arrays of one Nested
//     structure must end up of equal lengths (out_of_range otherwise).
//
// A message whose fields feed columns ("a.b") is flattened: its fields
// are read as if they were the containing message's, at any depth.
//
// # Hostile input
//
// A message that ends inside a field, holds a malformed or truncated
// varint, a length past the end of its message, a field number out of
// range, a group (wire types 3 and 4: groups are not supported) or wire
// type 6 or 7, a field the plan reads whose wire type is not its declared
// type's (Protobuf's own parser would keep it as an unknown field; here it
// means the bytes were not written with this schema), a string that must
// be valid UTF-8 (proto3) and is not, or Struct/Value/ListValue nested
// more than 100 deep, is corrupt; the error names the field and the byte
// offset in the record. Every value a record makes is bounded by its
// bytes: a length-delimited field never makes more than its bytes, an
// element of a repeated field takes at least one byte.
package protobuf
