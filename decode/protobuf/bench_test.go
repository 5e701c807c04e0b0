package protobuf

import (
	"runtime"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// The nested workload's batches (gen.MakeBatch: a batch of
// gen.BatchEvents events of one user) as Protobuf (gen's schema and
// encoding, as etl gen -format nested-protobuf writes them), next to the
// same batches in Avro (gen.NestedSchema), decoded into the same table:
// the batch's fields and the events' as the Array columns of the Nested
// structure events.

// nestedFiles are gen's schema files of the nested workload in
// Protobuf (the batch's imports the event's).
var nestedFiles = map[string]string{
	"etl/bench/batch.proto": gen.ProtobufBatchSchema,
	gen.ProtobufEventImport: gen.ProtobufEventSchema,
}

var nestedColumns = []string{
	"batch_id UInt64", "source LowCardinality(String)", "user String", "sent_at DateTime",
	"events.ts Array(DateTime)", "events.kind Array(LowCardinality(String))", "events.value Array(Int64)",
	"events.page Array(Nullable(String))", "events.tags Array(Array(String))",
}

// nestedRecords is how many distinct batches a benchmark cycles through.
const nestedRecords = 64

func nestedInputs(b *testing.B) (pb, av [][]byte) {
	for n := range nestedRecords {
		bt := gen.MakeBatch(7, uint64(n))
		pb = append(pb, bt.AppendProtobuf(nil))
		av = append(av, bt.AppendAvro(nil))
	}
	return pb, av
}

// TestNestedSameRows checks that the benchmark's two decoders make the
// same rows of the same batches.
func TestNestedSameRows(t *testing.T) {
	md := compileProto(t, nestedFiles, gen.ProtobufMessage)
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
		if _, err := pd.Decode(bt.AppendProtobuf(nil), pc); err != nil {
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
	md := compileProto(b, nestedFiles, gen.ProtobufMessage)
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
