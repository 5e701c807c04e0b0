package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schemaregistry/registrytest"
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
	for _, w := range []string{"`counts` Map(String, Int64),", "`created_at` DateTime64(9)\n"} {
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

// produce writes values to partition 0 of topic on kb.
func produce(t *testing.T, kb *testenv.Broker, topic string, values ...[]byte) {
	t.Helper()
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// orderBytes is a shop.Order message built with google.golang.org/protobuf
// (dynamicpb) and marshalled by it, as a producer would.
func orderBytes(t *testing.T, md protoreflect.MessageDescriptor, id int64, email *string, tags []string, counts map[string]int64, created time.Time) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	f := md.Fields()
	m.Set(f.ByName("id"), protoreflect.ValueOfInt64(id))
	cust := dynamicpb.NewMessage(f.ByName("customer").Message())
	cust.Set(cust.Descriptor().Fields().ByName("id"), protoreflect.ValueOfInt64(id*10))
	if email != nil {
		cust.Set(cust.Descriptor().Fields().ByName("email"), protoreflect.ValueOfString(*email))
	}
	m.Set(f.ByName("customer"), protoreflect.ValueOfMessage(cust))
	l := m.Mutable(f.ByName("tags")).List()
	for _, s := range tags {
		l.Append(protoreflect.ValueOfString(s))
	}
	mp := m.Mutable(f.ByName("counts")).Map()
	for k, v := range counts {
		mp.Set(protoreflect.ValueOfString(k).MapKey(), protoreflect.ValueOfInt64(v))
	}
	if email != nil {
		item := dynamicpb.NewMessage(f.ByName("items").Message())
		item.Set(item.Descriptor().Fields().ByName("sku"), protoreflect.ValueOfString("s1"))
		item.Set(item.Descriptor().Fields().ByName("qty"), protoreflect.ValueOfUint32(3))
		m.Mutable(f.ByName("items")).List().Append(protoreflect.ValueOfMessage(item))
	}
	m.Set(f.ByName("status"), protoreflect.ValueOfEnum(1))
	ts := dynamicpb.NewMessage(f.ByName("created_at").Message())
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(created.Unix()))
	ts.Set(ts.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(created.Nanosecond())))
	m.Set(f.ByName("created_at"), protoreflect.ValueOfMessage(ts))
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tailRows are the "row" objects of etl tail's JSON lines, and the
// reasons of the rejected records.
func tailRows(t *testing.T, out string) (rows []map[string]any, rejected []string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var line struct {
			Row    map[string]any `json:"row"`
			Reason string         `json:"reason"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if line.Reason != "" {
			rejected = append(rejected, line.Reason)
			continue
		}
		rows = append(rows, line.Row)
	}
	return rows, rejected
}

// TestTailProtobufRaw: etl tail decodes raw-framed Protobuf messages of
// a local .proto file into the derived table's rows (no ClickHouse), as
// google.golang.org/protobuf wrote them; a record that is not such a
// message is reported as corrupt.
func TestTailProtobufRaw(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "orders"))
	cfg := protoPipeline(t, kb.Addr(), "127.0.0.1:1", "shop.Order", "    dial_timeout: 2s\nmetrics: {listen: \"off\"}\n")
	files, err := protoschema.CompileSources(context.Background(), "shop.proto", map[string]string{"shop.proto": shopProto}, "shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	md, err := files.Message("shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	email := "a@example.com"
	created := time.Date(2026, 12, 7, 3, 4, 5, 678_901_234, time.UTC)
	produce(t, kb, "orders",
		orderBytes(t, md, 1, &email, []string{"x", "y"}, map[string]int64{"a": 1}, created),
		orderBytes(t, md, 2, nil, nil, nil, created.Add(time.Hour)),
		[]byte{0x08}) // a varint field's tag with no varint
	code, out, errOut, _ := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "0", "-from", "earliest")
	needsProtobufConfig(t, code, errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, rejected := tailRows(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2:\n%s", len(rows), out)
	}
	want := []map[string]any{
		{"id": 1.0, "customer": []any{10.0, "a@example.com"}, "tags": []any{"x", "y"}, "items.sku": []any{"s1"}, "items.qty": []any{3.0}, "counts": []any{[]any{"a", 1.0}}, "status": "PAID", "priority": nil, "created_at": "2026-12-07 03:04:05.678901234"},
		{"id": 2.0, "customer": []any{20.0, nil}, "tags": []any{}, "counts": []any{}, "status": "PAID", "priority": nil, "created_at": "2026-12-07 04:04:05.678901234"},
	}
	for i, w := range want {
		for k, v := range w {
			if got := fmt.Sprint(rows[i][k]); got != fmt.Sprint(v) {
				t.Errorf("row %d: %s = %s, want %s", i, k, got, fmt.Sprint(v))
			}
		}
	}
	if len(rejected) != 1 || rejected[0] != "corrupt" {
		t.Errorf("rejected %v, want the third record as corrupt", rejected)
	}
}

// TestTailProtobufRegistry: etl tail decodes the Confluent-framed
// Protobuf batches `etl gen -format nested-protobuf` produces, their
// schema (with a reference) read from the registry, into the table
// derived from the latest schema of the topic's subject.
func TestTailProtobufRegistry(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "pb"))
	srv := registrytest.New(t)
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", "pb", "-format", "nested-protobuf", "-registry", srv.URL(), "-seed", "3", "-count", "4", "-partitions", "1"}, &out, &errb); code != exitOK {
		t.Fatalf("etl gen: exit %d: %s", code, errb.String())
	}
	cfg := writeFile(t, "p.yaml", `pipeline: {name: p}
source:
  kafka: {brokers: ["`+kb.Addr()+`"], topics: [pb], group_id: g}
decode:
  format: protobuf
  protobuf:
    framing: confluent
    registry: {url: "`+srv.URL()+`"}
sink:
  clickhouse:
    addr: ["127.0.0.1:1"]
    table: nested
    dial_timeout: 2s
metrics: {listen: "off"}
`)
	code, stdout, errOut, _ := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "0", "-from", "earliest")
	needsProtobufConfig(t, code, errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, rejected := tailRows(t, stdout)
	if len(rows) != 4 || len(rejected) != 0 {
		t.Fatalf("%d rows, %d rejected; want 4 rows:\n%s", len(rows), len(rejected), stdout)
	}
	for i, r := range rows {
		b := gen.MakeBatch(3, uint64(i))
		kinds, _ := r["events.kind"].([]any)
		if fmt.Sprint(r["batch_id"]) != fmt.Sprint(b.ID) || r["user"] != b.User || r["source"] != b.Source ||
			r["sent_at"] != b.SentAt.UTC().Format("2006-01-02 15:04:05.000000000") || len(kinds) != len(b.Events) || kinds[0] != b.Events[0].Kind {
			t.Errorf("row %d: batch %v of user %v from %v sent at %v, %d events; want batch %d of user %s from %s sent at %v, %d events, the first %s",
				i, r["batch_id"], r["user"], r["source"], r["sent_at"], len(kinds), b.ID, b.User, b.Source, b.SentAt, len(b.Events), b.Events[0].Kind)
		}
	}
}
