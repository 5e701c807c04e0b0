package schema

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode/protobuf"
	"github.com/etl-project/etl/protoschema"
)

// orderProto has a nested message, repeated scalars and messages, a map,
// an enum, proto3 optional, a oneof, and well-known types.
const orderProto = `syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

enum Status { STATUS_UNKNOWN = 0; PAID = 1; SHIPPED = 2; }

message Customer {
  int64 id = 1;
  optional string email = 2;
}

message Item {
  string sku = 1;
  uint32 qty = 2;
  double price = 3;
}

message Order {
  int64 id = 1;
  Customer customer = 2;
  repeated string tags = 3;
  repeated Item items = 4;
  map<string, int64> counts = 5;
  Status status = 6;
  optional int32 priority = 7;
  google.protobuf.Timestamp created_at = 8;
  google.protobuf.Duration ttl = 9;
  google.protobuf.StringValue note = 10;
  google.protobuf.Struct extra = 11;
  oneof payment { string card = 12; sint64 credit = 13; }
  bytes blob = 14;
  fixed64 checksum = 15;
  bool paid = 16;
  float weight = 17;
}
`

func orderMessage(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	files, err := protoschema.CompileSources(context.Background(), "order.proto", map[string]string{"order.proto": orderProto}, "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	md, err := files.Message("shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func TestFromProtobufDDL(t *testing.T) {
	src, err := FromProtobuf(orderMessage(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server string
		want   string
	}{
		{"24.3", "CREATE TABLE `orders`\n(\n" +
			"    `id` Int64,\n" +
			"    `customer` Tuple(Int64, Nullable(String)),\n" +
			"    `tags` Array(String),\n" +
			"    `items` Nested(\n        `sku` String,\n        `qty` UInt32,\n        `price` Float64\n    ),\n" +
			"    `counts` Map(String, Int64),\n" +
			"    `status` String,\n" +
			"    `priority` Nullable(Int32),\n" +
			"    `created_at` DateTime64(9),\n" +
			"    `ttl` Int64,\n" +
			"    `note` Nullable(String),\n" +
			"    `extra` String,\n" +
			"    `card` Nullable(String),\n" +
			"    `credit` Nullable(Int64),\n" +
			"    `blob` String,\n" +
			"    `checksum` UInt64,\n" +
			"    `paid` Bool,\n" +
			"    `weight` Float32\n" +
			")\nENGINE = MergeTree\nORDER BY `id`;\n"},
		{"18.16", "CREATE TABLE `orders`\n(\n" +
			"    `id` Int64,\n" +
			"    `customer` Tuple(Int64, Nullable(String)),\n" +
			"    `tags` Array(String),\n" +
			"    `items` Nested(\n        `sku` String,\n        `qty` UInt32,\n        `price` Float64\n    ),\n" +
			"    `counts` Nested(\n        `key` String,\n        `value` Int64\n    ),\n" +
			"    `status` String,\n" +
			"    `priority` Nullable(Int32),\n" +
			"    `created_at` DateTime,\n" +
			"    `ttl` Int64,\n" +
			"    `note` Nullable(String),\n" +
			"    `extra` String,\n" +
			"    `card` Nullable(String),\n" +
			"    `credit` Nullable(Int64),\n" +
			"    `blob` String,\n" +
			"    `checksum` UInt64,\n" +
			"    `paid` UInt8,\n" +
			"    `weight` Float32\n" +
			")\nENGINE = MergeTree\nORDER BY `id`;\n"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			srv := mustServer(t, tc.server)
			cols, err := Derive(src, Options{Server: srv})
			if err != nil {
				t.Fatal(err)
			}
			_, text, err := CreateTable(Table{Name: "orders", OrderBy: []string{"id"}}, cols, srv)
			if err != nil {
				t.Fatal(err)
			}
			if text != tc.want {
				t.Errorf("DDL for %s:\n%s\nwant:\n%s", tc.server, text, tc.want)
			}
			// The decoder fills every derived column from the message.
			s := &chunk.Schema{}
			for _, c := range cols {
				ct, err := chunk.ParseType(c.Type)
				if err != nil {
					t.Fatalf("column %s: %v", c.Name, err)
				}
				s.Names = append(s.Names, c.Name)
				s.Types = append(s.Types, ct)
			}
			if _, err := protobuf.New(orderMessage(t), s, protobuf.Options{Version: tc.server, Validate: protobuf.ValidateFull}); err != nil {
				t.Errorf("the decoder refuses the derived table for %s: %v", tc.server, err)
			}
		})
	}
}

func TestFromProtobufFields(t *testing.T) {
	src, err := FromProtobuf(orderMessage(t))
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{
		"customer.id":    "Int64",
		"customer.email": "Nullable(String)",
		"items.sku":      "Array(String)",
		"items.qty":      "Array(UInt32)",
		"counts":         "Map(String, Int64)",
		"counts.key":     "Array(String)",
		"counts.value":   "Array(Int64)",
		"created_at":     "DateTime64(9)",
		"status":         "String",
	} {
		if got := src.Fields[f]; got != want {
			t.Errorf("Fields[%q] = %q, want %q", f, got, want)
		}
	}
	for _, f := range []string{"created_at.seconds", "note.value", "extra.fields"} {
		if _, ok := src.Fields[f]; ok {
			t.Errorf("Fields has %q: a well-known type is one value", f)
		}
	}
}

// A column mapped to a field of a nested message ("customer.id") takes
// its type, as for Avro.
func TestFromProtobufOverride(t *testing.T) {
	src, err := FromProtobuf(orderMessage(t))
	if err != nil {
		t.Fatal(err)
	}
	cols, err := Derive(src, Options{Server: mustServer(t, "24.3"), Overrides: map[string]string{"customer_id": "customer.id"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cols); !strings.Contains(got, "customer_id Int64") {
		t.Errorf("columns %s lack customer_id Int64", got)
	}
}

const recursiveProto = `syntax = "proto3";
package t;
message Empty {}
message Node { string name = 1; Node child = 2; }
message Top { int64 id = 1; Node tree = 2; Empty nothing = 3; }
`

func TestFromProtobufNoType(t *testing.T) {
	files, err := protoschema.CompileSources(context.Background(), "r.proto", map[string]string{"r.proto": recursiveProto}, "r.proto")
	if err != nil {
		t.Fatal(err)
	}
	md, err := files.Message("t.Top")
	if err != nil {
		t.Fatal(err)
	}
	src, err := FromProtobuf(md)
	if err != nil {
		t.Fatal(err)
	}
	got := names(src.Columns)
	for _, want := range []string{"id Int64", "tree  -- message t.Node contains itself", "nothing  -- a message without fields"} {
		if !strings.Contains(got, want) {
			t.Errorf("columns %s lack %q", got, want)
		}
	}
}
