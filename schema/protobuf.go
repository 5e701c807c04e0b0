package schema

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxProtoDepth bounds the nesting FromProtobuf follows: a message that
// contains itself, directly or not, has no ClickHouse type.
const maxProtoDepth = 32

// FromProtobuf reads the fields of a Protobuf message, whatever server
// the table is for (Derive adapts the types to it), with the column types
// decode/protobuf fills from them:
//
//   - int32, sint32, sfixed32 Int32; int64, sint64, sfixed64 Int64;
//     uint32, fixed32 UInt32; uint64, fixed64 UInt64; float Float32;
//     double Float64; bool Bool; string and bytes String.
//   - An enum is String, its value's name: a value a newer schema adds
//     still fits the column, where an Enum8 or Enum16 column would
//     refuse it until altered (an Enum column, or an integer one for the
//     numbers, can be declared by hand: the decoder fills both).
//   - A scalar with presence (proto3 optional, proto2 optional, a oneof
//     member) is Nullable: NULL when absent.
//   - The wrappers (google.protobuf.Int64Value, StringValue, ...) are
//     Nullable of their value's type; Timestamp is DateTime64(9), its nanoseconds kept
//     (DateTime before 20.1); Duration is Int64, its whole seconds;
//     Struct, Value and ListValue are String, their JSON text.
//   - A message is one Tuple column of its fields, in declaration order
//     (as an Avro record is); its fields are also typed as "a.b" for the
//     chain and for sink.clickhouse.columns.
//   - A repeated field is Array(T); a repeated message is a Nested
//     structure, one Array column per field of its elements ("items.sku").
//   - A map is Map(K, V); on a server without Map (before 21.8) it is the
//     Nested structure of its keys and values ("attrs.key",
//     "attrs.value"), which the decoder fills from the map's entries.
//
// A field whose type has no column (a message without fields, one that
// contains itself) is a Column with a Note.
func FromProtobuf(md protoreflect.MessageDescriptor) (Source, error) {
	if md == nil {
		return Source{}, fmt.Errorf("protobuf: no message")
	}
	src := Source{Fields: map[string]string{}}
	fs := md.Fields()
	if fs.Len() == 0 {
		return Source{}, fmt.Errorf("protobuf: message %s has no fields", md.FullName())
	}
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		name := string(fd.Name())
		switch {
		case fd.IsMap():
			t, why := protoType(fd, 0)
			if why != "" {
				src.Columns = append(src.Columns, Column{Name: name, Note: why})
				continue
			}
			src.Columns = append(src.Columns, Column{Name: name, Type: t})
			src.Fields[name] = t
			k, _ := protoType(fd.MapKey(), 1)
			v, _ := protoType(fd.MapValue(), 1)
			pair := []Column{
				{Name: name + ".key", Type: "Array(" + k + ")", Group: name},
				{Name: name + ".value", Type: "Array(" + v + ")", Group: name},
			}
			if src.NoMap == nil {
				src.NoMap = map[string][]Column{}
			}
			src.NoMap[name] = pair
			for _, c := range pair {
				src.Fields[c.Name] = c.Type
			}
		case fd.IsList() && fd.Message() != nil && wellKnown(fd.Message()) == "":
			em := fd.Message()
			efs := em.Fields()
			if efs.Len() == 0 {
				src.Columns = append(src.Columns, Column{Name: name, Note: "a message without fields has no ClickHouse type"})
				continue
			}
			for j := 0; j < efs.Len(); j++ {
				ef := efs.Get(j)
				c := Column{Name: name + "." + string(ef.Name()), Group: name}
				t, why := protoType(ef, 1)
				if why != "" {
					c.Note = why
				} else {
					c.Type = "Array(" + t + ")"
					src.Fields[c.Name] = c.Type
				}
				src.Columns = append(src.Columns, c)
			}
			addProtoFields(em, name+".", true, src.Fields, 1)
		default:
			t, why := protoType(fd, 0)
			if why != "" {
				src.Columns = append(src.Columns, Column{Name: name, Note: why})
				continue
			}
			src.Columns = append(src.Columns, Column{Name: name, Type: t})
			src.Fields[name] = t
			if m := fd.Message(); m != nil && !fd.IsList() && wellKnown(m) == "" {
				addProtoFields(m, name+".", false, src.Fields, 1)
			}
		}
	}
	return src, nil
}

// addProtoFields types the fields of message md under prefix ("a.b"),
// those of its messages too; inArray wraps their types in Array (the
// fields of the elements of a repeated message).
func addProtoFields(md protoreflect.MessageDescriptor, prefix string, inArray bool, out map[string]string, depth int) {
	if depth > maxProtoDepth {
		return // a message that contains itself: deeper fields are not typed
	}
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		name := prefix + string(fd.Name())
		t, why := protoType(fd, depth)
		if why != "" {
			continue
		}
		if inArray {
			t = "Array(" + t + ")"
		}
		if _, ok := out[name]; !ok {
			out[name] = t
		}
		if m := fd.Message(); m != nil && !fd.IsList() && !fd.IsMap() && wellKnown(m) == "" {
			addProtoFields(m, name+".", inArray, out, depth+1)
		}
	}
}

// protoType is the ClickHouse type of field fd's values (a repeated
// field's Array, a map's Map), or "" and why it has none.
func protoType(fd protoreflect.FieldDescriptor, depth int) (string, string) {
	if depth > maxProtoDepth {
		return "", "a message that contains itself has no ClickHouse type"
	}
	if fd.IsMap() {
		k, why := protoType(fd.MapKey(), depth+1)
		if why != "" {
			return "", why
		}
		v, why := protoType(fd.MapValue(), depth+1)
		if why != "" {
			return "", why
		}
		return "Map(" + k + ", " + v + ")", ""
	}
	var t string
	if m := fd.Message(); m != nil {
		var why string
		if t, why = messageType(m, depth); why != "" {
			return "", why
		}

	} else {
		t = scalarType(fd.Kind())
		if fd.HasPresence() && !fd.IsList() {
			t = "Nullable(" + t + ")"
		}
	}
	if fd.IsList() {
		// Array elements are never NULL: a repeated wrapper is the
		// wrapped values (the decoder takes an absent one as zero).
		return "Array(" + strings.TrimSuffix(strings.TrimPrefix(t, "Nullable("), ")") + ")", ""
	}
	return t, ""
}

// messageType is the type of a message's values: a well-known type's,
// or the Tuple of its fields.
func messageType(m protoreflect.MessageDescriptor, depth int) (string, string) {
	if t := wellKnown(m); t != "" {
		return t, ""
	}
	fs := m.Fields()
	if fs.Len() == 0 {
		return "", "a message without fields has no ClickHouse type"
	}
	if contains(m, m.FullName(), map[protoreflect.FullName]bool{}) {
		return "", fmt.Sprintf("message %s contains itself: it has no ClickHouse type", m.FullName())
	}
	parts := make([]string, 0, fs.Len())
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		t, why := protoType(f, depth+1)
		if why != "" {
			if strings.HasPrefix(why, "message ") {
				return "", why
			}
			return "", fmt.Sprintf("field %s: %s", f.Name(), why)
		}
		parts = append(parts, t)
	}
	return "Tuple(" + strings.Join(parts, ", ") + ")", ""
}

// contains reports whether message m holds a message of type target
// (through its fields, their elements and map values), at any depth.
func contains(m protoreflect.MessageDescriptor, target protoreflect.FullName, seen map[protoreflect.FullName]bool) bool {
	if seen[m.FullName()] {
		return false
	}
	seen[m.FullName()] = true
	fs := m.Fields()
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		if f.IsMap() {
			f = f.MapValue()
		}
		fm := f.Message()
		if fm == nil || wellKnown(fm) != "" {
			continue
		}
		if fm.FullName() == target || contains(fm, target, seen) {
			return true
		}
	}
	return false
}

// wellKnown is the column type of a well-known type the decoder converts
// (google/protobuf/*.proto), "" for any other message.
func wellKnown(m protoreflect.MessageDescriptor) string {
	switch m.FullName() {
	case "google.protobuf.Timestamp":
		return "DateTime64(9)"
	case "google.protobuf.Duration":
		return "Int64"
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return "String"
	case "google.protobuf.DoubleValue":
		return "Nullable(Float64)"
	case "google.protobuf.FloatValue":
		return "Nullable(Float32)"
	case "google.protobuf.Int64Value":
		return "Nullable(Int64)"
	case "google.protobuf.UInt64Value":
		return "Nullable(UInt64)"
	case "google.protobuf.Int32Value":
		return "Nullable(Int32)"
	case "google.protobuf.UInt32Value":
		return "Nullable(UInt32)"
	case "google.protobuf.BoolValue":
		return "Nullable(Bool)"
	case "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return "Nullable(String)"
	}
	return ""
}

// scalarType is the column type of a scalar kind's values.
func scalarType(k protoreflect.Kind) string {
	switch k {
	case protoreflect.BoolKind:
		return "Bool"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "Int32"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "Int64"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "UInt32"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "UInt64"
	case protoreflect.FloatKind:
		return "Float32"
	case protoreflect.DoubleKind:
		return "Float64"
	default: // string, bytes, enum (its name)
		return "String"
	}
}
