package clickhouse

import (
	"context"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// budgetRecorder is a Budget that keeps its count and its peak.
type budgetRecorder struct {
	mu         sync.Mutex
	n, peak    int64
	adds, rels int
}

func (b *budgetRecorder) Add(n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += n
	b.peak = max(b.peak, b.n)
	b.adds++
	return b.n
}

func (b *budgetRecorder) Release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n -= n
	b.rels++
}

// TestInsertCountsDictionary: an insert into a LowCardinality(String)
// column of 100,000 distinct values counts the encoder's dictionary in
// the budget its shard gives while it runs, and releases it when it
// ends; the rows are in the table.
func TestInsertCountsDictionary(t *testing.T) {
	srv := testenv.ClickHouse(t)
	execWithSettings(t, srv, "CREATE TABLE default.lc (id UInt64, v LowCardinality(String)) ENGINE = MergeTree ORDER BY id",
		url.Values{"allow_experimental_low_cardinality_type": {"1"}})
	c := connect(t, srv, "lc")
	tg := plan(t, c)
	const rows = 100_000
	var chunks []*chunk.Chunk
	for k := range rows / 10_000 {
		ck, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10_000 {
			id := k*10_000 + i
			ck.Cols[0].(*chunk.Fixed[uint64]).Append(uint64(id))
			chunk.AppendString(ck.Cols[1], "user-"+strconv.Itoa(id))
		}
		ck.Rows = 10_000
		ck.Measure()
		chunks = append(chunks, ck)
	}
	b := &budgetRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Insert(withHeld(ctx, b), tg, chunks); err != nil {
		t.Fatal(err)
	}
	t.Logf("insert of %d distinct values counted a peak of %d bytes (%d a value)", rows, b.peak, b.peak/rows)
	if b.n != 0 {
		t.Errorf("%d bytes left counted after the insert", b.n)
	}
	// At least the keys (8 bytes a row), the dictionary's values and
	// offsets, and an index entry a value.
	if min := int64(rows * (8 + 11 + 8 + 16)); b.peak < min {
		t.Errorf("peak counted %d bytes, want at least %d", b.peak, min)
	}
	if got := srv.Query(t, "SELECT count(), uniqExact(v) FROM default.lc"); got != "100000\t100000" {
		t.Errorf("count, distinct values = %s", got)
	}
}
