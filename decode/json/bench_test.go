package json

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// benchRecords is how many distinct records a benchmark cycles through.
const benchRecords = 1024

// chunkRows is the chunk size the benchmarks truncate at, as a pipeline
// worker would seal a chunk.
const chunkRows = 8192

// bench12Columns is a 12-field shape: two nullable columns, an array of
// strings, a timestamp.
var bench12Columns = []string{
	"id UInt64", "ts DateTime", "user_id UInt32", "session UUID", "kind LowCardinality(String)",
	"amount Float64", "currency FixedString(3)", "country Nullable(String)",
	"referrer Nullable(String)", "tags Array(String)", "ok UInt8", "latency Float32",
}

var bench12Fields = []string{
	"id", "ts", "user_id", "session", "kind", "amount", "currency", "country", "referrer", "tags", "ok", "latency",
}

// record12 returns record n of the 12-field shape.
func record12(n int) []byte {
	e := gen.Make(5, uint64(n))
	b := []byte(`{"id":`)
	b = strconv.AppendUint(b, e.ID, 10)
	b = append(b, `,"ts":"`...)
	b = e.TS.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","user_id":`...)
	b = strconv.AppendUint(b, uint64(e.UserID), 10)
	b = fmt.Appendf(b, `,"session":"%08x-%04x-4%03x-a%03x-%012x"`, e.UserID, n&0xffff, n&0xfff, e.ID&0xfff, uint64(e.UserID)*uint64(n+1))
	b = append(b, `,"kind":"`...)
	b = append(b, e.Kind...)
	b = append(b, `","amount":`...)
	b = strconv.AppendFloat(b, e.Amount, 'g', -1, 64)
	b = append(b, `,"currency":"EUR"`...)
	if n%3 == 0 {
		b = append(b, `,"country":null`...)
	} else {
		b = append(b, `,"country":"DE"`...)
	}
	if n%2 == 0 {
		b = append(b, `,"referrer":"https://example.com/a/b?c=d"`...)
	} else {
		b = append(b, `,"referrer":null`...)
	}
	b = append(b, `,"tags":["a","`...)
	b = append(b, e.Kind...)
	b = append(b, `","long-tag-name"]`...)
	b = fmt.Appendf(b, `,"ok":%v,"latency":%d.%d}`, n%5 != 0, n%1000, n%7)
	return b
}

func records6() [][]byte {
	recs := make([][]byte, benchRecords)
	for n := range recs {
		recs[n] = gen.Make(5, uint64(n)).AppendJSON(nil)
	}
	return recs
}

func records12() [][]byte {
	recs := make([][]byte, benchRecords)
	for n := range recs {
		recs[n] = record12(n)
	}
	return recs
}

func gen6Schema(b *testing.B) *chunk.Schema {
	s, err := gen.Schema()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchDecode decodes b.N records; ns/op and allocs/op are per record.
func benchDecode(b *testing.B, s *chunk.Schema, o Options, recs [][]byte, byGet bool) {
	benchDecoder(b, s, o, recs, func(d *Decoder) { d.lookupByGet = byGet })
}

func benchDecoder(b *testing.B, s *chunk.Schema, o Options, recs [][]byte, set func(*Decoder)) {
	d, err := New(s, o)
	if err != nil {
		b.Fatal(err)
	}
	set(d)
	c, err := chunk.New(s)
	if err != nil {
		b.Fatal(err)
	}
	bytes := 0
	for _, r := range recs {
		if _, err := d.Decode(r, c); err != nil {
			b.Fatalf("%v: %s", err, r)
		}
		bytes += len(r)
	}
	c.Truncate(0)
	b.SetBytes(int64(bytes / len(recs)))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuOK := testenv.ThreadCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.Rows == chunkRows {
			c.Truncate(0)
		}
		if _, err := d.Decode(recs[i%len(recs)], c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// On a shared machine ns/op includes time spent waiting for a core;
	// cpu-ns/op is the decoding goroutine's own CPU time per record.
	if cpu1, ok := testenv.ThreadCPU(); ok && cpuOK {
		per := float64(cpu1-cpu0) / float64(b.N)
		b.ReportMetric(per, "cpu-ns/op")
		b.ReportMetric(1e9/per, "records/cpu-s")
	}
}

// BenchmarkJSON6 decodes gen's 6-column record.
func BenchmarkJSON6(b *testing.B) {
	benchDecode(b, gen6Schema(b), Options{}, records6(), false)
}

// BenchmarkFastPath compares the one-pass fast path with the fastjson
// path on gen's 6-column record.
func BenchmarkFastPath(b *testing.B) {
	for _, noFast := range []bool{false, true} {
		name := "fast"
		if noFast {
			name = "fastjson"
		}
		b.Run(name, func(b *testing.B) {
			benchDecoder(b, gen6Schema(b), Options{}, records6(), func(d *Decoder) { d.noFast = noFast })
		})
	}
}

// BenchmarkJSON12 decodes the 12-field shape.
func BenchmarkJSON12(b *testing.B) {
	benchDecode(b, schemaOf(b, bench12Columns...), Options{Fields: bench12Fields}, records12(), false)
}

// BenchmarkLookup compares finding the fields by one Object.Visit with a
// name->column map against one Object.Get per column.
func BenchmarkLookup(b *testing.B) {
	for _, byGet := range []bool{false, true} {
		name := "visit"
		if byGet {
			name = "get"
		}
		b.Run("6/"+name, func(b *testing.B) {
			benchDecode(b, gen6Schema(b), Options{}, records6(), byGet)
		})
		b.Run("12/"+name, func(b *testing.B) {
			benchDecode(b, schemaOf(b, bench12Columns...), Options{Fields: bench12Fields}, records12(), byGet)
		})
	}
}

// BenchmarkParseOnly is the fastjson parse alone, the floor for Decode.
func BenchmarkParseOnly(b *testing.B) {
	for _, sh := range []struct {
		name string
		recs [][]byte
	}{{"6", records6()}, {"12", records12()}} {
		b.Run(sh.name, func(b *testing.B) {
			var p fastjson.Parser
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := p.ParseBytes(sh.recs[i%len(sh.recs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNDJSON decodes records of 100 lines of gen's 6-column record,
// without and with the default row limits: the limits' cost per record
// (a measurement at the record's start, one every 64 rows and one at its
// end). One op is one record.
func BenchmarkNDJSON(b *testing.B) {
	recs := make([][]byte, 64)
	for i := range recs {
		var v []byte
		for j := 0; j < 100; j++ {
			v = gen.Make(5, uint64(i*100+j)).AppendJSON(v)
			v = append(v, '\n')
		}
		recs[i] = v
	}
	for _, lim := range []decode.RowLimits{{}, {MaxRows: 100_000, MaxBytes: 64 << 20}} {
		name := "nolimit"
		if lim.MaxRows > 0 {
			name = "limits"
		}
		b.Run(name, func(b *testing.B) {
			s := gen6Schema(b)
			d, err := New(s, Options{Framing: FramingNDJSON, Rows: lim})
			if err != nil {
				b.Fatal(err)
			}
			c, err := chunk.New(s)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(recs[0])))
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, cpuOK := testenv.ThreadCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.Rows >= 8192 {
					c.Truncate(0)
				}
				if _, err := d.Decode(recs[i%len(recs)], c); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if cpu1, ok := testenv.ThreadCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(100*b.N), "cpu-ns/row")
			}
		})
	}
}
