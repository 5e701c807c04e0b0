package fields

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

const customerProto = `syntax = "proto3";
package shop.common;
message Customer { int64 id = 1; optional string email = 2; }
`

const orderProto = `syntax = "proto3";
package shop;
import "shop/common/customer.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  shop.common.Customer customer = 2;
  repeated string tags = 3;
  map<string, int64> counts = 4;
  google.protobuf.Timestamp created_at = 5;
}
message Refund { int64 order_id = 1; double amount = 2; }
`

// protoConfig is a configuration reading topic orders into table orders,
// its decode section set to Protobuf (built here, not loaded: the
// configuration rules for decode.format protobuf are not this package's).
func protoConfig(t *testing.T, p config.Protobuf, columns string) *config.Config {
	t.Helper()
	y := `pipeline: {name: test}
source:
  kafka: {brokers: ["127.0.0.1:1"], topics: [orders], group_id: g}
sink:
  clickhouse:
    addr: ["127.0.0.1:1"]
    table: orders
` + columns + `
metrics: {listen: "off"}
`
	cfg, err := config.Parse([]byte(y), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Decode.Format = config.FormatProtobuf
	cfg.Decode.Protobuf = p
	return cfg
}

// writeProtos writes the order schema's files under a new directory, its
// import path.
func writeProtos(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shop", "common"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"shop/common/customer.proto": customerProto, "shop/order.proto": orderProto} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func columnNames(src schema.Source) string {
	var out []string
	for _, c := range src.Columns {
		out = append(out, c.Name+" "+c.Type)
	}
	return strings.Join(out, ", ")
}

func TestProtobufSourceLocal(t *testing.T) {
	dir := writeProtos(t)
	cfg := protoConfig(t, config.Protobuf{Framing: config.ProtobufRaw, Message: "shop.Order",
		ProtoFiles: []string{"shop/order.proto"}, ImportPaths: []string{dir}}, "")
	s, err := LoadSchemas(context.Background(), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src, err := s.Source(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "id Int64, customer Tuple(Int64, Nullable(String)), tags Array(String), counts Map(String, Int64), created_at DateTime64(9)"
	if got := columnNames(src); got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
	if s.FieldTypes["customer.email"] != "Nullable(String)" {
		t.Errorf("the chain's field customer.email is typed %q", s.FieldTypes["customer.email"])
	}

	// The same offline, for validate: the fields, and a column mapped to
	// a field the message lacks, with the closest.
	cfg = protoConfig(t, cfg.Decode.Protobuf, "    columns: {cust: customer.idd, t: tags, ts: _timestamp}")
	r, err := Offline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "customer", "customer.id", "counts", "created_at"} {
		if !r.Has(f) {
			t.Errorf("the offline fields lack %s", f)
		}
	}
	errs := CheckMapped(cfg, r)
	if len(errs) != 1 {
		t.Fatalf("CheckMapped: %v, want one error", errs)
	}
	for _, want := range []string{`columns.cust: field "customer.idd"`, "the Protobuf message shop.Order of decode.protobuf.proto_files shop/order.proto", `(did you mean "customer.id"?)`} {
		if !strings.Contains(errs[0].Error(), want) {
			t.Errorf("error %q lacks %q", errs[0], want)
		}
	}
}

func TestProtobufUnknownMessage(t *testing.T) {
	dir := writeProtos(t)
	for _, tc := range []struct{ name, want string }{
		{"shop.Ordr", `did you mean "shop.Order"?`},
		{"Refund", `did you mean "shop.Refund"? a message is named in full`},
	} {
		cfg := protoConfig(t, config.Protobuf{Framing: config.ProtobufRaw, Message: tc.name,
			ProtoFiles: []string{"shop/order.proto"}, ImportPaths: []string{dir}}, "")
		_, err := Offline(cfg)
		if !errors.Is(err, protoschema.ErrUnknownMessage) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "decode.protobuf.message: ") {
			t.Errorf("Offline with message %s: %v, want ErrUnknownMessage with %q", tc.name, err, tc.want)
		}
		if _, err := LoadSchemas(context.Background(), Options{Config: cfg}); !errors.Is(err, protoschema.ErrUnknownMessage) {
			t.Errorf("LoadSchemas with message %s: %v, want ErrUnknownMessage", tc.name, err)
		}
	}
}

func TestProtobufSourceRegistry(t *testing.T) {
	srv := registrytest.New(t)
	_, v := srv.RegisterSchema("shop/common/customer.proto", registrytest.Schema{Text: customerProto, Type: "PROTOBUF"})
	srv.RegisterSchema("orders-value", registrytest.Schema{Text: orderProto, Type: "PROTOBUF", References: []registrytest.Reference{
		{Name: "shop/common/customer.proto", Subject: "shop/common/customer.proto", Version: v}}})
	srv.RegisterSchema("refunds-value", registrytest.Schema{Text: `syntax = "proto3"; package pay; message Refund { int64 order_id = 1; repeated string notes = 2; int64 id = 3; }`, Type: "PROTOBUF"})
	reg := &config.Registry{URL: config.URL(srv.URL())}

	// <topic>-value, the first message of the file.
	cfg := protoConfig(t, config.Protobuf{Framing: config.ProtobufConfluent, Registry: reg}, "")
	s, err := LoadSchemas(context.Background(), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src, err := s.Source(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "id Int64, customer Tuple(Int64, Nullable(String)), tags Array(String), counts Map(String, Int64), created_at DateTime64(9)"
	if got := columnNames(src); got != want {
		t.Errorf("columns %s, want %s", got, want)
	}

	// The message named, of each prewarm subject, merged.
	cfg = protoConfig(t, config.Protobuf{Framing: config.ProtobufConfluent, Registry: reg, Message: "shop.Refund",
		PrewarmSubjects: []string{"orders-value"}}, "")
	s2, err := LoadSchemas(context.Background(), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if src, err = s2.Source(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := columnNames(src), "order_id Int64, amount Float64"; got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
	cfg.Decode.Protobuf.Message = ""
	cfg.Decode.Protobuf.PrewarmSubjects = []string{"refunds-value", "orders-value"}
	if src, err = s2.Source(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := columnNames(src), "order_id Int64, notes Array(String), id Int64, customer Tuple(Int64, Nullable(String)), tags Array(String), counts Map(String, Int64), created_at DateTime64(9)"; got != want {
		t.Errorf("merged columns %s, want %s", got, want)
	}

	// A subject the registry lacks, a message the schema lacks.
	cfg.Decode.Protobuf.PrewarmSubjects = []string{"nope-value"}
	if _, err := s2.Source(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `subject "nope-value"`) {
		t.Errorf("Source of a missing subject: %v", err)
	}
	cfg.Decode.Protobuf.PrewarmSubjects = []string{"orders-value"}
	cfg.Decode.Protobuf.Message = "shop.Refnud"
	if _, err := s2.Source(context.Background(), cfg); !errors.Is(err, protoschema.ErrUnknownMessage) || !strings.Contains(err.Error(), `did you mean "shop.Refund"?`) {
		t.Errorf("Source of an unknown message: %v", err)
	}
}

// TestProtobufCheckExpr: the fields the chain's expressions read are
// checked against the local message, with the closest field.
func TestProtobufCheckExpr(t *testing.T) {
	dir := writeProtos(t)
	cfg := protoConfig(t, config.Protobuf{Framing: config.ProtobufRaw, Message: "shop.Order",
		ProtoFiles: []string{"shop/order.proto"}, ImportPaths: []string{dir}}, `transform:
  - set: {cid: "customer.id * 2"}
`)
	r, err := Offline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckExpr(cfg, r); err != nil {
		t.Errorf("a known field: %v", err)
	}
	cfg = protoConfig(t, cfg.Decode.Protobuf, `transform:
  - set: {cid: "customer.idd * 2"}
`)
	if err := CheckExpr(cfg, r); err == nil || !strings.Contains(err.Error(), "customer.idd") || !strings.Contains(err.Error(), `"customer.id"`) {
		t.Errorf("an unknown field: %v", err)
	}
}
