package inspect

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/schema"
)

// shopProto has a nested message, repeated scalars and messages, a map,
// an enum, proto3 optional and a Timestamp.
const shopProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
enum Status { STATUS_UNKNOWN = 0; PAID = 1; }
message Customer { int64 id = 1; optional string email = 2; }
message Item { string sku = 1; uint32 qty = 2; }
message Order {
  int64 id = 1;
  Customer customer = 2;
  repeated string tags = 3;
  repeated Item items = 4;
  map<string, int64> counts = 5;
  Status status = 6;
  optional int32 priority = 7;
  google.protobuf.Timestamp created_at = 8;
}
`

// protoTestConfig is a configuration reading topic orders into table
// shop.orders, decoding the raw-framed messages of shop.Order in a local
// .proto file; columns and transform are YAML lines added to the sink
// and the file. The decode section is set on the parsed configuration:
// the configuration rules for decode.format protobuf are not this
// package's.
func protoTestConfig(t *testing.T, message, extra string) *config.Config {
	t.Helper()
	return protoTestConfigAt(t, "127.0.0.1:1", "127.0.0.1:1", message, extra)
}

// protoTestConfigAt is protoTestConfig with the brokers and the
// ClickHouse address given.
func protoTestConfigAt(t *testing.T, brokers, addr, message, extra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shop.proto"), []byte(shopProto), 0o644); err != nil {
		t.Fatal(err)
	}
	y := `pipeline: {name: test}
source:
  kafka: {brokers: ["` + brokers + `"], topics: [orders], group_id: g}
sink:
  clickhouse:
    addr: ["` + addr + `"]
    database: shop
    table: orders
    schema: {order_by: [id]}
` + extra + `
metrics: {listen: "off"}
`
	cfg, err := config.Parse([]byte(y), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Decode.Format = config.FormatProtobuf
	cfg.Decode.Protobuf = config.Protobuf{Framing: config.ProtobufRaw, Message: message,
		ProtoFiles: []string{filepath.Join(dir, "shop.proto")}}
	return cfg
}

// TestSchemaProtobuf: etl schema's source for a Protobuf pipeline is the
// message; its table is typed for each server's version, through the
// chain and the sink's column map.
func TestSchemaProtobuf(t *testing.T) {
	cfg := protoTestConfig(t, "shop.Order", `    columns: {customer_id: customer.id}
transform:
  - rename: {status: state}
`)
	src, err := SchemaSource(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckMapped(cfg, src); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ version, want string }{
		{"24.3", "CREATE TABLE `shop`.`orders`\n(\n" +
			"    `id` Int64,\n" +
			"    `customer` Tuple(Int64, Nullable(String)),\n" +
			"    `tags` Array(String),\n" +
			"    `items` Nested(\n        `sku` String,\n        `qty` UInt32\n    ),\n" +
			"    `counts` Map(String, Int64),\n" +
			"    `state` String,\n" +
			"    `priority` Nullable(Int32),\n" +
			"    `created_at` DateTime64(9),\n" +
			"    `customer_id` Int64\n" +
			")\nENGINE = MergeTree\nORDER BY `id`;\n"},
		{"18.16", "CREATE TABLE `shop`.`orders`\n(\n" +
			"    `id` Int64,\n" +
			"    `customer` Tuple(Int64, Nullable(String)),\n" +
			"    `tags` Array(String),\n" +
			"    `items` Nested(\n        `sku` String,\n        `qty` UInt32\n    ),\n" +
			"    `counts` Nested(\n        `key` String,\n        `value` Int64\n    ),\n" +
			"    `state` String,\n" +
			"    `priority` Nullable(Int32),\n" +
			"    `created_at` DateTime,\n" +
			"    `customer_id` Int64\n" +
			")\nENGINE = MergeTree\nORDER BY `id`;\n"},
	} {
		srv, err := schema.ParseServer(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		all, err := schema.DeriveSinks(cfg, src, schema.SinkOptions{Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		ch := cfg.Sink.ClickHouse
		_, text, err := schema.CreateTable(schema.Table{Database: ch.Database, Name: ch.Table, OrderBy: ch.Schema.OrderBy}, all["default"], srv)
		if err != nil {
			t.Fatal(err)
		}
		if text != tc.want {
			t.Errorf("for %s:\n%s\nwant:\n%s", tc.version, text, tc.want)
		}
	}
}

// TestSchemaProtobufRefusals: a message the schema lacks and a column
// mapped to a field the message lacks are named, with the closest.
func TestSchemaProtobufRefusals(t *testing.T) {
	_, err := SchemaSource(context.Background(), protoTestConfig(t, "shop.Ordre", ""), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), `decode.protobuf.message: `) || !strings.Contains(err.Error(), `did you mean "shop.Order"?`) {
		t.Errorf("unknown message: %v", err)
	}
	cfg := protoTestConfig(t, "shop.Order", "    columns: {who: customer.emial}\n")
	src, err := SchemaSource(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckMapped(cfg, src)
	var ce *pipeline.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `field "customer.emial" is not a field of the records: the Protobuf message has no such field (did you mean "customer.email"?)`) {
		t.Errorf("unknown field: %v", err)
	}
}
