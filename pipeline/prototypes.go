package pipeline

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/schema"
)

// protobufSource is the columns and field types a Protobuf message gives,
// laid out as Avro's (schema.FromAvro): a scalar, enum (its name),
// repeated or map field is one column; a repeated message is one Array
// column per field of its elements, in Nested layout ("events.kind"); a
// message (other than a well-known type) is no column of its own, its
// fields typed as "a.b" for the chain and column mappings. A field with
// presence (proto3 optional, a oneof member) and a wrapper type are
// Nullable; a Timestamp is DateTime64(9) (DateTime before 20.1, by
// schema.Server.Adapt); Duration, Struct, Value and ListValue are their
// text, String.
func protobufSource(md protoreflect.MessageDescriptor) schema.Source {
	src := schema.Source{Fields: map[string]string{}}
	var walk func(md protoreflect.MessageDescriptor, prefix string, depth int)
	walk = func(md protoreflect.MessageDescriptor, prefix string, depth int) {
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			name := prefix + string(fd.Name())
			t, msg := protoType(fd)
			switch {
			case msg != nil && fd.IsList():
				// A repeated message: its fields in Nested layout.
				ef := msg.Fields()
				for j := 0; j < ef.Len(); j++ {
					e := ef.Get(j)
					et, emsg := protoType(e)
					if emsg != nil || et == "" {
						continue // no column of its own in an element
					}
					if e.IsList() {
						et = "Array(" + et + ")"
					}
					col := name + "." + string(e.Name())
					src.Columns = append(src.Columns, schema.Column{Name: col, Type: "Array(" + et + ")", Group: name})
					src.Fields[col] = "Array(" + et + ")"
				}
			case msg != nil:
				if prefix == "" {
					src.Columns = append(src.Columns, schema.Column{Name: name,
						Note: "a message: map a column to each of its fields (" + name + ".FIELD)"})
				}
				if depth < 8 {
					walk(msg, name+".", depth+1)
				}
			case t == "":
				if prefix == "" {
					src.Columns = append(src.Columns, schema.Column{Name: name, Note: "no ClickHouse type holds it"})
				}
			default:
				if fd.IsList() {
					t = "Array(" + t + ")"
				}
				src.Fields[name] = t
				if prefix == "" {
					src.Columns = append(src.Columns, schema.Column{Name: name, Type: t})
				}
			}
		}
	}
	walk(md, "", 0)
	return src
}

// protoType is the ClickHouse type of one value of field fd (its element
// for a repeated field), or the message whose fields are read instead.
func protoType(fd protoreflect.FieldDescriptor) (string, protoreflect.MessageDescriptor) {
	if fd.IsMap() {
		k, _ := protoType(fd.MapKey())
		v, vm := protoType(fd.MapValue())
		if k == "" || vm != nil || v == "" {
			return "", nil
		}
		return "Map(" + k + ", " + v + ")", nil
	}
	var t string
	switch fd.Kind() {
	case protoreflect.BoolKind:
		t = "Bool"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		t = "Int32"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		t = "Int64"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		t = "UInt32"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		t = "UInt64"
	case protoreflect.FloatKind:
		t = "Float32"
	case protoreflect.DoubleKind:
		t = "Float64"
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind:
		t = "String"
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := fd.Message()
		switch name := string(m.FullName()); {
		case name == "google.protobuf.Timestamp":
			t = "DateTime64(9)"
		case name == "google.protobuf.Duration", name == "google.protobuf.Struct",
			name == "google.protobuf.Value", name == "google.protobuf.ListValue":
			t = "String"
		case strings.HasPrefix(name, "google.protobuf.") && strings.HasSuffix(name, "Value"):
			inner, _ := protoType(m.Fields().ByName("value"))
			if inner == "" {
				return "", nil
			}
			return "Nullable(" + inner + ")", nil
		default:
			return "", m
		}
	default:
		return "", nil
	}
	if fd.HasPresence() && !fd.IsList() && fd.Kind() != protoreflect.MessageKind {
		t = "Nullable(" + t + ")"
	}
	return t, nil
}
