package clickhouse

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// BenchmarkSortBatch is what sorting a 100k-row batch of the benchmark's 6
// columns by the table's sorting key (id) would cost etl, done the
// simplest way: the key of every row read through chunk.KeyOf, the rows
// sorted by it, and the batch copied in that order into one new chunk with
// AppendFrom. Keys come in ascending runs of 1,000 rows from 6
// interleaved partitions (as the pipeline's chunks hold a benchmark
// backlog), or in random order (a key unrelated to the offsets, such as
// (kind, ts)). docs/BENCHMARKS.md sets it against what a sorted block
// saves the server.
func BenchmarkSortBatch(b *testing.B) {
	tg, err := Plan("default", "events", benchCols, Mapping{})
	if err != nil {
		b.Fatal(err)
	}
	const rows, chunkRows = 100_000, 1_000
	key, ok := chunk.KeyOf(tg.Schema.Types[0])
	if !ok {
		b.Fatal("no key for id")
	}
	for _, mode := range []string{"runs", "random", "runs/sort-only", "random/sort-only"} {
		order, sortOnly := strings.CutSuffix(mode, "/sort-only")
		chunks := benchChunks(b, tg, rows, chunkRows)
		for k, c := range chunks {
			ids := c.Cols[0].(*chunk.Fixed[uint64]).Data
			for r := range ids {
				if order == "runs" {
					ids[r] = uint64(k%6) + 6*uint64((k/6)*chunkRows+r)
				} else {
					ids[r] = uint64(k*chunkRows+r) * 0x9E3779B97F4A7C15
				}
			}
		}
		b.Run("order="+mode, func(b *testing.B) {
			type ref struct {
				key   uint64
				chunk uint32
				row   uint32
			}
			refs := make([]ref, 0, rows)
			b.ReportAllocs()
			for b.Loop() {
				refs = refs[:0]
				for ci, c := range chunks {
					col := c.Cols[0]
					for r := range c.Rows {
						refs = append(refs, ref{key: key.Bits(col, r), chunk: uint32(ci), row: uint32(r)})
					}
				}
				slices.SortStableFunc(refs, func(a, b ref) int { return cmp.Compare(a.key, b.key) })
				if sortOnly {
					continue
				}
				out, err := chunk.New(tg.Schema)
				if err != nil {
					b.Fatal(err)
				}
				for i, dst := range out.Cols {
					for _, rf := range refs {
						dst.AppendFrom(chunks[rf.chunk].Cols[i], int(rf.row))
					}
				}
				out.Rows = rows
				if got := out.Cols[0].Len(); got != rows {
					b.Fatal(fmt.Sprint("rows ", got))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows*b.N), "ns/row")
		})
	}
}
