package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/protoschema"
)

// TestProtobufSource checks the columns and field types a Protobuf
// message gives add_columns and create: the nested benchmark's batch
// (a Timestamp, a repeated message in Nested layout, a proto3 optional)
// and the other kinds.
func TestProtobufSource(t *testing.T) {
	const kinds = `syntax = "proto3";
package k;
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
enum Color { RED = 0; }
message Inner { int32 a = 1; }
message K {
  bool b = 1; sint32 s32 = 2; fixed64 f64 = 3; float f = 4; double d = 5; bytes raw = 6; Color c = 7;
  repeated int64 nums = 8; map<string, uint32> m = 9; optional uint32 opt = 10;
  google.protobuf.Int64Value w = 11; google.protobuf.Struct st = 12; Inner inner = 13;
  oneof o { string one = 14; }
}
`
	files, err := protoschema.CompileSources(context.Background(), "test", map[string]string{
		gen.ProtobufEventImport: gen.ProtobufEventSchema, "batch.proto": gen.ProtobufBatchSchema, "k.proto": kinds,
	}, "batch.proto", "k.proto")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ message, columns, fields string }{
		{gen.ProtobufMessage,
			"batch_id UInt64, source String, user String, sent_at DateTime64(9), events.ts Array(DateTime64(9)), events.kind Array(String), " +
				"events.value Array(Int64), events.page Array(Nullable(String)), events.tags Array(Array(String))",
			""},
		{"k.K",
			"b Bool, s32 Int32, f64 UInt64, f Float32, d Float64, raw String, c String, nums Array(Int64), m Map(String, UInt32), " +
				"opt Nullable(UInt32), w Nullable(Int64), st String, inner -, one Nullable(String)",
			"inner.a Int32"},
	} {
		md, err := files.Message(c.message)
		if err != nil {
			t.Fatal(err)
		}
		src := protobufSource(md)
		var cols []string
		for _, col := range src.Columns {
			typ := col.Type
			if typ == "" {
				typ = "-"
			}
			cols = append(cols, col.Name+" "+typ)
			if col.Type != "" && src.Fields[col.Name] != col.Type {
				t.Errorf("%s: field %s typed %q, column %q", c.message, col.Name, src.Fields[col.Name], col.Type)
			}
		}
		if got := strings.Join(cols, ", "); got != c.columns {
			t.Errorf("%s: columns\n%s\nwant\n%s", c.message, got, c.columns)
		}
		for _, f := range strings.Split(c.fields, ", ") {
			if f == "" {
				continue
			}
			name, typ, _ := strings.Cut(f, " ")
			if src.Fields[name] != typ {
				t.Errorf("%s: field %s typed %q, want %q (%s)", c.message, name, src.Fields[name], typ, fmt.Sprint(src.Fields))
			}
		}
	}
}
