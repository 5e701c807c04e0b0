package protobuf

import (
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// The nested workload's batches (gen.MakeBatch: a batch of
// gen.BatchEvents events of one user) as Protobuf, next to the same
// batches in Avro (gen.NestedSchema), decoded into the same table: the
// batch's fields and the events' as the Array columns of the Nested
// structure events.

const nestedProto = `syntax = "proto3";
package etl.bench;

import "google/protobuf/timestamp.proto";

message Event {
  google.protobuf.Timestamp ts = 1;
  string kind = 2;
  int64 value = 3;
  optional string page = 4;
  repeated string tags = 5;
}

message Batch {
  uint64 batch_id = 1;
  string source = 2;
  string user = 3;
  google.protobuf.Timestamp sent_at = 4;
  repeated Event events = 5;
}
`

var nestedColumns = []string{
	"batch_id UInt64", "source LowCardinality(String)", "user String", "sent_at DateTime",
	"events.ts Array(DateTime)", "events.kind Array(LowCardinality(String))", "events.value Array(Int64)",
	"events.page Array(Nullable(String))", "events.tags Array(Array(String))",
}

// nestedRecords is how many distinct batches a benchmark cycles through.
const nestedRecords = 64

func pbTimestamp(b []byte, num protowire.Number, t time.Time) []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(t.Unix()))
	if ns := t.Nanosecond(); ns != 0 {
		m = protowire.AppendTag(m, 2, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(ns))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func pbString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// protoBatch encodes a batch as nestedProto's Batch.
func protoBatch(bt gen.Batch) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, bt.ID)
	b = pbString(b, 2, bt.Source)
	b = pbString(b, 3, bt.User)
	b = pbTimestamp(b, 4, bt.SentAt)
	var e []byte
	for _, ev := range bt.Events {
		e = e[:0]
		e = pbTimestamp(e, 1, ev.TS)
		e = pbString(e, 2, ev.Kind)
		e = protowire.AppendTag(e, 3, protowire.VarintType)
		e = protowire.AppendVarint(e, uint64(ev.Value))
		if ev.Page != nil {
			e = pbString(e, 4, *ev.Page)
		}
		for _, tg := range ev.Tags {
			e = pbString(e, 5, tg)
		}
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

func nestedInputs(b *testing.B) (pb, av [][]byte) {
	for n := range nestedRecords {
		bt := gen.MakeBatch(7, uint64(n))
		pb = append(pb, protoBatch(bt))
		av = append(av, bt.AppendAvro(nil))
	}
	return pb, av
}

// TestNestedSameRows checks that the benchmark's two decoders make the
// same rows of the same batches.
func TestNestedSameRows(t *testing.T) {
	md := compileProto(t, map[string]string{"nested.proto": nestedProto}, "etl.bench.Batch")
	s := schemaOf(t, nestedColumns...)
	pd, err := New(md, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := avro.New(gen.NestedSchema, s, avro.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pc, ac := newChunk(t, s), newChunk(t, s)
	for n := range 8 {
		bt := gen.MakeBatch(7, uint64(n))
		if _, err := pd.Decode(protoBatch(bt), pc); err != nil {
			t.Fatal(err)
		}
		if _, err := ad.Decode(bt.AppendAvro(nil), ac); err != nil {
			t.Fatal(err)
		}
	}
	if p, a := dump(pc), dump(ac); p != a {
		t.Fatalf("protobuf:\n%s\navro:\n%s", p, a)
	}
}

// BenchmarkProtobufNested and BenchmarkAvroNested decode the same
// batches into a chunk truncated every 64 rows (6400 events); ns/record
// and allocs/record are per batch, cpu-ns/event per event.
func BenchmarkProtobufNested(b *testing.B) {
	md := compileProto(b, map[string]string{"nested.proto": nestedProto}, "etl.bench.Batch")
	s := schemaOf(b, nestedColumns...)
	d, err := New(md, s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	pb, _ := nestedInputs(b)
	benchDecode(b, d, s, pb)
}

func BenchmarkAvroNested(b *testing.B) {
	s := schemaOf(b, nestedColumns...)
	d, err := avro.New(gen.NestedSchema, s, avro.Options{})
	if err != nil {
		b.Fatal(err)
	}
	_, av := nestedInputs(b)
	benchDecode(b, d, s, av)
}

func benchDecode(b *testing.B, d decode.Decoder, s *chunk.Schema, recs [][]byte) {
	c, err := chunk.New(s)
	if err != nil {
		b.Fatal(err)
	}
	bytes := 0
	for _, r := range recs {
		if _, err := d.Decode(r, c); err != nil {
			b.Fatalf("%v: %x", err, r)
		}
		bytes += len(r)
	}
	c.Truncate(0)
	b.SetBytes(int64(bytes / len(recs)))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0, cpuOK := testenv.ThreadCPU()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if c.Rows == 64 {
			c.Truncate(0)
		}
		if _, err := d.Decode(recs[i%len(recs)], c); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/record")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/record")
	if cpu1, ok := testenv.ThreadCPU(); ok && cpuOK {
		per := float64(cpu1-cpu0) / float64(b.N)
		b.ReportMetric(per, "cpu-ns/record")
		b.ReportMetric(per/gen.BatchEvents, "cpu-ns/event")
	}
}
