package avro

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// bench12Schema is a 12-field record: two nullable unions, an array
// of strings, a timestamp-millis.
// benchRecords is how many distinct records a benchmark cycles through.
const benchRecords = 1024

// chunkRows is the chunk size the benchmarks truncate at, as a pipeline
// worker would seal a chunk.
const chunkRows = 8192

const bench12Schema = `{"type":"record","name":"Event","namespace":"etl.bench","fields":[
	{"name":"id","type":"long"},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"user_id","type":"long"},
	{"name":"session","type":{"type":"string","logicalType":"uuid"}},
	{"name":"kind","type":"string"},
	{"name":"amount","type":"double"},
	{"name":"currency","type":"string"},
	{"name":"country","type":["null","string"]},
	{"name":"parent_id","type":["null","long"]},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"ok","type":"boolean"},
	{"name":"latency","type":"float"}]}`

var bench12Columns = []string{
	"id UInt64", "ts DateTime", "user_id UInt32", "session UUID", "kind LowCardinality(String)",
	"amount Float64", "currency FixedString(3)", "country Nullable(String)",
	"parent_id Nullable(Int64)", "tags Array(String)", "ok UInt8", "latency Float32",
}

// records12 returns benchRecords datums of the 12-field record, made
// with hamba/avro's Marshal from gen's events.
func records12(b *testing.B) [][]byte {
	recs := make([][]byte, benchRecords)
	for n := range recs {
		e := gen.Make(5, uint64(n))
		v := map[string]any{
			"id":        int64(e.ID & math.MaxInt64),
			"ts":        e.TS.Add(time.Duration(n%1000) * time.Millisecond),
			"user_id":   int64(e.UserID),
			"session":   fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", e.UserID, n&0xffff, n&0xfff, e.ID&0xfff, uint64(e.UserID)*uint64(n+1)),
			"kind":      e.Kind,
			"amount":    e.Amount,
			"currency":  "EUR",
			"country":   nil,
			"parent_id": nil,
			"tags":      []string{"a", e.Kind, "long-tag-name"},
			"ok":        n%5 != 0,
			"latency":   float32(n%1000) + float32(n%7)/10,
		}
		if n%3 != 0 {
			v["country"] = "DE"
		}
		if n%2 == 0 {
			v["parent_id"] = int64(n) * 977
		}
		recs[n] = avroMarshal(b, bench12Schema, v)
	}
	return recs
}

// BenchmarkAvro12 decodes the 12-field record into a chunk that is
// truncated every chunkRows rows, as a pipeline worker reuses chunks;
// ns/op and allocs/op are per record.
func BenchmarkAvro12(b *testing.B) {
	s := schemaOf(b, bench12Columns...)
	a, err := New(bench12Schema, s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	recs := records12(b)
	c, err := chunk.New(s)
	if err != nil {
		b.Fatal(err)
	}
	bytes := 0
	for _, r := range recs {
		if _, err := a.Decode(r, c); err != nil {
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
		if c.Rows == chunkRows {
			c.Truncate(0)
		}
		if _, err := a.Decode(recs[i%len(recs)], c); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/record")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/record")
	// On a shared machine ns/op includes time spent waiting for a core;
	// cpu-ns/op is the decoding goroutine's own CPU time per record.
	if cpu1, ok := testenv.ThreadCPU(); ok && cpuOK {
		per := float64(cpu1-cpu0) / float64(b.N)
		b.ReportMetric(per, "cpu-ns/op")
		b.ReportMetric(1e9/per, "records/cpu-s")
	}
}
