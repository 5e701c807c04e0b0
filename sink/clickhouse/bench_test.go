package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// BenchmarkInsert inserts 100k-row batches of a 6-column table through
// Client.Insert (the column API) into a real server. It reports rows/s;
// allocs/op and B/op are the client side of one insert. MergeTree is the
// real cost; Null (the server parses the blocks and drops them) shows what
// the client and the protocol allow when storage is not the bottleneck. A
// batch is one chunk of 100k rows, or 100 chunks of 1,000 rows as the
// pipeline makes them (chunk.target_bytes).
func BenchmarkInsert(b *testing.B) {
	srv := testenv.ClickHouse(b)
	for _, engine := range []string{"MergeTree ORDER BY id", "Null"} {
		name := strings.Fields(engine)[0]
		for _, chunkRows := range []int{100_000, 1_000} {
			b.Run(fmt.Sprintf("%s/chunk=%d", name, chunkRows), func(b *testing.B) {
				benchInsert(b, srv, "bench_"+strings.ToLower(name), engine, chunkRows)
			})
		}
	}
}

func benchInsert(b *testing.B, srv *testenv.CH, table, engine string, chunkRows int) {
	const rows = 100_000
	srv.Exec(b, "DROP TABLE IF EXISTS default."+table)
	srv.Exec(b, "CREATE TABLE default."+table+" (id UInt64, ts DateTime, n UInt32, s String, f Float64, ns Nullable(String)) "+
		"ENGINE = "+engine)
	c := connect(b, srv, table, func(o *Options) { o.Settings = nil })
	tg := plan(b, c)

	var batch []*chunk.Chunk
	size := 0
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for first := 0; first < rows; first += chunkRows {
		ch, err := chunk.New(tg.Schema)
		if err != nil {
			b.Fatal(err)
		}
		id := ch.Cols[0].(*chunk.Fixed[uint64])
		ts := ch.Cols[1].(*chunk.Fixed[int64])
		n := ch.Cols[2].(*chunk.Fixed[uint32])
		s := ch.Cols[3].(*chunk.Strings)
		f := ch.Cols[4].(*chunk.Fixed[float64])
		ns := ch.Cols[5].(*chunk.Nullable)
		nsInner := ns.Inner.(*chunk.Strings)
		for i := first; i < first+chunkRows; i++ {
			id.Append(uint64(i))
			ts.Append(base + int64(i))
			n.Append(uint32(i * 7))
			s.AppendString(fmt.Sprintf("event-%08d-payload", i))
			f.Append(float64(i) * 0.25)
			if i%4 == 0 {
				ns.AppendNull()
			} else {
				nsInner.AppendString(fmt.Sprintf("note %d", i))
				ns.MarkValue()
			}
			ch.Rows++
		}
		ch.AddRange("bench", 0, 1, int64(first), int64(first+chunkRows))
		size += ch.Measure()
		batch = append(batch, ch)
	}
	ctx := context.Background()

	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if err := c.Insert(ctx, tg, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
	if cpu1, ok := processCPU(); ok && cpuOK {
		// The client's side of the insert: the server is another process.
		b.ReportMetric(float64(cpu1-cpu0)/float64(rows*b.N), "client-CPU-ns/row")
	}
	b.StopTimer()
	if engine == "Null" {
		return
	}
	if got, want := srv.Count(b, "default."+table), uint64(rows*b.N); got != want {
		b.Fatalf("table holds %d rows, want %d", got, want)
	}
}
