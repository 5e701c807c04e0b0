package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// produceProtobuf sends gen's nested batches [start, start+count) as
// Protobuf: value makes batch n's record value.
func (e *schemaEnv) produceProtobuf(start, count uint64, value func(n uint64, b gen.Batch) []byte) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for n := start; n < start+count; n++ {
		recs = append(recs, &kgo.Record{Topic: batchTopic, Partition: int32(n % 3), Value: value(n, gen.MakeBatch(seed, n))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// protobufConfig is schemaEnv.config's nested pipeline with Protobuf
// values: decode.protobuf holds protobuf (a YAML flow mapping).
func (e *schemaEnv) protobufConfig(group, table, protobuf, schemaKeys string) string {
	avro := e.config(group, table, e.ch.TCPAddr(), schemaKeys)
	text := readFile(e.t, avro)
	old := fmt.Sprintf("  format: avro\n  avro: {framing: confluent, registry: {url: %q}}\n", e.reg.URL())
	if !strings.Contains(text, old) {
		e.t.Fatalf("the nested pipeline's decode section changed:\n%s", text)
	}
	return writeConfig(e.t, strings.Replace(text, old, "  format: protobuf\n  protobuf: "+protobuf+"\n", 1))
}

// protobufRowSelect is rowSelect with the two times as the server prints
// them (toString), which protobufLine gives from the produced values.
const protobufRowSelect = rowSelect + ", toString(sent_at), toString(ts)"

func protobufLine(b gen.Batch, ev gen.NestedEvent) string {
	const layout = "2006-01-02 15:04:05"
	return rowLine(b, ev) + "\t" + b.SentAt.UTC().Format(layout) + "\t" + ev.TS.UTC().Format(layout)
}

// batchV2 is gen.ProtobufBatchSchema with one more field, region (6).
var batchV2 = func() string {
	s := gen.ProtobufBatchSchema
	i := strings.LastIndex(s, "}")
	return s[:i] + "  string region = 6;\n" + s[i:]
}()

// appendRegion appends batch n's region field (6, "r" and n%4) to a
// record: a later occurrence of a message's fields, as Protobuf allows.
func appendRegion(n uint64, v []byte) []byte {
	region := fmt.Sprintf("r%d", n%4)
	v = append(v, 6<<3|2, byte(len(region)))
	return append(v, region...)
}

// TestProtobufRegistry: Confluent-framed Protobuf records of a registry
// schema with a reference (the event's file), a nested repeated message,
// repeated strings, a proto3 optional and well-known Timestamps go,
// flattened and filtered by the chain, into a table
// sink.clickhouse.schema.create derives from the schema; every value is
// the one produced. Then a new schema id with one more field: add_columns
// adds its column before its records are written, the older rows hold
// NULL and the newer ones their region. A record of an id the registry
// does not know is dead-lettered as unknown_schema. The subject's latest
// schema is prewarmed (decode.protobuf.prewarm_subjects).
func TestProtobufRegistry(t *testing.T) {
	e := newSchemaEnv(t)
	_, eventVersion := e.reg.RegisterSchema(gen.ProtobufEventImport, registrytest.Schema{Text: gen.ProtobufEventSchema, Type: "PROTOBUF"})
	refs := []registrytest.Reference{{Name: gen.ProtobufEventImport, Subject: gen.ProtobufEventImport, Version: eventVersion}}
	id1, _ := e.reg.RegisterSchema(batchTopic+"-value", registrytest.Schema{Text: gen.ProtobufBatchSchema, Type: "PROTOBUF", References: refs})
	e.produceProtobuf(0, 40, func(_ uint64, b gen.Batch) []byte { return b.AppendProtobufConfluent(nil, id1) })
	cfg := e.protobufConfig("pb-registry", "pb1", fmt.Sprintf("{framing: confluent, registry: {url: %q}, prewarm_subjects: [%s-value]}", e.reg.URL(), batchTopic),
		"    schema: {create: true, add_columns: true, order_by: [kind, ts]}")
	p := startETL(t, cfg)
	first := expectedRows(0, 40, protobufLine)
	e.waitCount("default.pb1", uint64(len(first)), p)
	sameLines(t, "pb1 v1 rows", e.rows("default.pb1", protobufRowSelect, ""), first)
	desc := e.ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 'pb1' FORMAT TSV")
	wantDesc := "batch_id\tUInt64\nuser\tString\nsent_at\tDateTime\nts\tDateTime\nkind\tString\nvalue\tInt64\npage\tNullable(String)\ntags\tArray(String)\namount\tInt64\nkey\tString\n"
	if strings.TrimSpace(desc) != strings.TrimSpace(wantDesc) {
		t.Fatalf("the table etl created has\n%s\nwant\n%s", desc, wantDesc)
	}

	// A schema change mid-run: a new id, one more field.
	id2, _ := e.reg.RegisterSchema(batchTopic+"-value", registrytest.Schema{Text: batchV2, Type: "PROTOBUF", References: refs})
	if id2 == id1 {
		t.Fatal("the new schema has the old one's id")
	}
	e.produceProtobuf(40, 40, func(n uint64, b gen.Batch) []byte { return appendRegion(n, b.AppendProtobufConfluent(nil, id2)) })
	// An id the registry does not know, then more of the new schema.
	e.produceProtobuf(80, 1, func(_ uint64, b gen.Batch) []byte { return b.AppendProtobufConfluent(nil, id2+100) })
	e.produceProtobuf(81, 9, func(n uint64, b gen.Batch) []byte { return appendRegion(n, b.AppendProtobufConfluent(nil, id2)) })
	second := append(expectedRows(40, 80, protobufLine), expectedRows(81, 90, protobufLine)...)
	e.waitCount("default.pb1", uint64(len(first)+len(second)), p)
	if got := e.ch.Query(t, "SELECT type FROM system.columns WHERE database = 'default' AND table = 'pb1' AND name = 'region' FORMAT TSV"); strings.TrimSpace(got) != "Nullable(String)" {
		t.Fatalf("region column: %q, want Nullable(String)", got)
	}
	sameLines(t, "pb1 v1 rows after the change", e.rows("default.pb1", protobufRowSelect+", region", "WHERE batch_id < 40"),
		expectedRows(0, 40, func(b gen.Batch, ev gen.NestedEvent) string { return protobufLine(b, ev) + "\t\\N" }))
	withRegion := func(b gen.Batch, ev gen.NestedEvent) string {
		return protobufLine(b, ev) + fmt.Sprintf("\tr%d", b.ID%4)
	}
	sameLines(t, "pb1 v2 rows", e.rows("default.pb1", protobufRowSelect+", region", "WHERE batch_id >= 40"),
		append(expectedRows(40, 80, withRegion), expectedRows(81, 90, withRegion)...))
	if dl := readDLQ(t, e.kb.Addr(), batchTopic+".dlq", 1); len(dl) != 1 || dl[0] != "unknown_schema" {
		t.Fatalf("dead-letter reasons %v, want one unknown_schema", dl)
	}
	if !strings.Contains(p.logText(), "added a column") {
		t.Errorf("etl did not log the column it added:\n%s", tailLog(p))
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d\n%s", code, tailLog(p))
	}
}

// TestProtobufRaw: unframed Protobuf records of a local schema (.proto
// files, one importing the other through an import path) go through the
// same chain into a table made by hand; every value is the one produced.
// Then the same with the schema as a compiled descriptor set.
func TestProtobufRaw(t *testing.T) {
	e := newSchemaEnv(t)
	dir := t.TempDir()
	event := filepath.Join(dir, filepath.FromSlash(gen.ProtobufEventImport))
	if err := os.MkdirAll(filepath.Dir(event), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{event: gen.ProtobufEventSchema, filepath.Join(dir, "batch.proto"): gen.ProtobufBatchSchema} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.ch.Exec(t, "CREATE TABLE default.pb2 (batch_id UInt64, user String, sent_at DateTime, ts DateTime, kind String, value Int64, "+
		"page Nullable(String), tags Array(String), amount Int64, key String) ENGINE = MergeTree ORDER BY (kind, ts)")
	e.produceProtobuf(0, 60, func(_ uint64, b gen.Batch) []byte { return b.AppendProtobuf(nil) })
	cfg := e.protobufConfig("pb-raw", "pb2",
		fmt.Sprintf("{framing: raw, message: %s, proto_files: [batch.proto], import_paths: [%q]}", gen.ProtobufMessage, dir), "")
	p := startETL(t, cfg)
	want := expectedRows(0, 60, protobufLine)
	e.waitCount("default.pb2", uint64(len(want)), p)
	sameLines(t, "pb2", e.rows("default.pb2", protobufRowSelect, ""), want)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d\n%s", code, tailLog(p))
	}

	// The same schema as a descriptor set (the batch's file and the
	// event's it imports; the well-known types are built in).
	files, err := protoschema.CompileFiles(context.Background(), []string{dir}, "batch.proto")
	if err != nil {
		t.Fatal(err)
	}
	root := files.Root()
	var set descriptorpb.FileDescriptorSet
	for i := 0; i < root.Imports().Len(); i++ {
		if fd := root.Imports().Get(i).FileDescriptor; !strings.HasPrefix(fd.Path(), "google/protobuf/") {
			set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
		}
	}
	set.File = append(set.File, protodesc.ToFileDescriptorProto(root))
	b, err := proto.Marshal(&set)
	if err != nil {
		t.Fatal(err)
	}
	setFile := filepath.Join(dir, "batch.pb")
	if err := os.WriteFile(setFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	e.ch.Exec(t, "CREATE TABLE default.pb3 AS default.pb2")
	cfg = e.protobufConfig("pb-set", "pb3", fmt.Sprintf("{framing: raw, message: %s, descriptor_set: %q}", gen.ProtobufMessage, setFile), "")
	p = startETL(t, cfg)
	e.waitCount("default.pb3", uint64(len(want)), p)
	sameLines(t, "pb3", e.rows("default.pb3", protobufRowSelect, ""), want)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d\n%s", code, tailLog(p))
	}
}
