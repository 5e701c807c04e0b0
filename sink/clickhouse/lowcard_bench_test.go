package clickhouse

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/sink/clickhouse/native"
)

// BenchmarkLowCardinalityPrepare is the dictionary building of a
// LowCardinality(String) column of 100,000 rows, in chunks of 1,000: few
// distinct values in runs and shuffled, and every value distinct. One op
// is one row.
func BenchmarkLowCardinalityPrepare(b *testing.B) {
	kinds := []string{"view", "click", "purchase", "debug", "scroll", "login", "share", "search"}
	for _, tc := range []struct {
		name  string
		value func(i int, r *rand.Rand) string
	}{
		{"8-runs", func(i int, _ *rand.Rand) string { return kinds[i/50%len(kinds)] }},
		{"8-shuffled", func(_ int, r *rand.Rand) string { return kinds[r.IntN(len(kinds))] }},
		{"1000-shuffled", func(_ int, r *rand.Rand) string { return "user-" + strconv.Itoa(r.IntN(1000)) }},
		{"distinct", func(i int, _ *rand.Rand) string { return "user-" + strconv.Itoa(i) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ty, err := chunk.ParseType("LowCardinality(String)")
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			var cols []chunk.Column
			for range 100 {
				c, err := chunk.NewColumn(ty)
				if err != nil {
					b.Fatal(err)
				}
				for range 1000 {
					chunk.AppendString(c, tc.value(len(cols)*1000+c.Len(), r))
				}
				cols = append(cols, c)
			}
			e, err := native.NewEncoder(ty)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 100000 {
				if err := e.Prepare(cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
