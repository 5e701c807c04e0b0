package protobuf

import (
	"context"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode/internal/decodetest"
)

// The test helpers the decoders share (decode/internal/decodetest).
var (
	schemaOf        = decodetest.SchemaOf
	newChunk        = decodetest.NewChunk
	render          = decodetest.Render
	dump            = decodetest.Dump
	checkConsistent = decodetest.CheckConsistent
)

// testProto is the schema most tests read: every scalar kind, optional
// fields, packed and unpacked repeated fields, nested and repeated
// messages, maps, a oneof and the well-known types.
const testProto = `syntax = "proto3";
package etl.test;

import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

enum Color {
  RED = 0;
  GREEN = 1;
  BLUE = 2;
}

message Inner {
  int32 a = 1;
  string b = 2;
  repeated int64 r = 3;
}

message Item {
  int64 id = 1;
  string name = 2;
  optional double score = 3;
  repeated string tags = 4;
  Inner inner = 5;
}

message All {
` + allFieldsProto + `}
`

// newerProto is testProto's All with more fields, as a newer version of
// the schema writes them: the older decoder skips them.
const newerProto = `syntax = "proto3";
package etl.test;

import "test.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

message AllV2 {
` + allFieldsProto + `  // Not in All.
  int64 extra_i = 60;
  string extra_s = 61;
  Inner extra_m = 62;
  repeated fixed64 extra_r = 63;
  float extra_f = 64;
}
`

// compileProto compiles .proto sources (name -> text) and returns the
// message of the given full name.
func compileProto(t testing.TB, files map[string]string, name string) protoreflect.MessageDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files),
	})}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	fds, err := c.Compile(context.Background(), names...)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	for _, fd := range fds {
		if d, _ := fd.FindDescriptorByName(protoreflect.FullName(name)).(protoreflect.MessageDescriptor); d != nil {
			return d
		}
	}
	t.Fatalf("no message %s", name)
	return nil
}

func testMessage(t testing.TB) protoreflect.MessageDescriptor {
	return compileProto(t, map[string]string{"test.proto": testProto}, "etl.test.All")
}

func newerMessage(t testing.TB) (old, newer protoreflect.MessageDescriptor) {
	files := map[string]string{"test.proto": testProto, "newer.proto": newerProto}
	return compileProto(t, files, "etl.test.All"), compileProto(t, files, "etl.test.AllV2")
}

// newDecoder compiles a decoder of md for columns "name Type" read from
// fields (nil: the column names).
func newDecoder(t testing.TB, md protoreflect.MessageDescriptor, fields []string, cols ...string) (*Decoder, *chunk.Schema) {
	t.Helper()
	s := schemaOf(t, cols...)
	d, err := New(md, s, Options{Fields: fields})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d, s
}

// allFieldsProto is the body of testProto's All, which newerProto's AllV2
// repeats before its own fields.
const allFieldsProto = `  int32 i32 = 1;
  int64 i64 = 2;
  uint32 u32 = 3;
  uint64 u64 = 4;
  sint32 s32 = 5;
  sint64 s64 = 6;
  fixed32 f32 = 7;
  fixed64 f64 = 8;
  sfixed32 sf32 = 9;
  sfixed64 sf64 = 10;
  float fl = 11;
  double db = 12;
  bool bo = 13;
  string st = 14;
  bytes by = 15;
  Color color = 16;
  optional int32 opt_i32 = 17;
  optional string opt_st = 18;
  repeated int32 p_i32 = 19;
  repeated sint64 p_s64 = 20;
  repeated double p_db = 21;
  repeated int32 u_i32 = 22 [packed = false];
  repeated fixed32 u_f32 = 23 [packed = false];
  repeated string r_st = 24;
  Inner inner = 25;
  repeated Item items = 26;
  map<string, int64> m_si = 27;
  map<int32, string> m_is = 28;
  map<string, Inner> m_sm = 29;
  oneof choice {
    int64 c_i = 30;
    string c_s = 31;
    Inner c_m = 32;
  }
  google.protobuf.Timestamp ts = 33;
  google.protobuf.Duration du = 34;
  google.protobuf.Int64Value w_i64 = 35;
  google.protobuf.StringValue w_st = 36;
  google.protobuf.BoolValue w_bo = 37;
  google.protobuf.DoubleValue w_db = 38;
  google.protobuf.UInt32Value w_u32 = 39;
  google.protobuf.Struct js = 40;
  google.protobuf.Value jv = 41;
  google.protobuf.ListValue jl = 42;
  repeated Color colors = 43;
  optional Color opt_color = 44;
  map<bool, double> m_bd = 45;
  int64 far = 5000;
  string farther = 100000;
`
