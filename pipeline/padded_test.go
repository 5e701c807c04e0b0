package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// TestFixedStringPaddingCounted: records {"id":N,"fs":"ab"} into a
// FixedString(4096) column are counted as they are sent, 8 + 4096 bytes a
// row, not as the 2 bytes they hold: each insert (one part, merges
// stopped) stays within batch.max_bytes (4 MiB) plus one chunk,
// etl_sink_batch_bytes counts every row's padding, and while ClickHouse is
// frozen etl_backpressure_inflight_bytes holds the padded size of the
// records waiting.
func TestFixedStringPaddingCounted(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.padded (id UInt64, fs FixedString(4096)) ENGINE = MergeTree ORDER BY id")
	ch.Exec(t, "SYSTEM STOP MERGES default.padded")

	const rowBytes = 8 + 4096 // a row as the sink sends it
	produceIDs := func(from, n int) {
		t.Helper()
		recs := make([]*kgo.Record, 0, n)
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"fs":"ab"}`, i)})
		}
		cl := kb.Client(t, kgo.MaxBufferedRecords(n+1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cfg := testConfig(t, kb, ch, "padded")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Sink.ClickHouse.Table = "padded"
	cfg.Sink.ClickHouse.Batch.MaxBytes = 4 * config.MiB
	cfg.Sink.ClickHouse.Batch.MaxRows = 1_000_000
	cfg.Sink.ClickHouse.Batch.Linger = config.Duration(time.Second)
	reg := prometheus.NewRegistry()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	committed := func(want int64) func() bool {
		return func() bool {
			select {
			case err := <-done:
				done <- err
				t.Fatalf("pipeline stopped: %v", err)
			default:
			}
			return kb.CommittedOffsets(t, "padded", "events")[0] == want
		}
	}

	// 5,000 records: about 20 MB as sent, 90 KB as held before padding.
	const n1 = 5000
	start := time.Now()
	produceIDs(0, n1)
	testenv.WaitFor(t, "every record committed", time.Minute, committed(n1))
	t.Logf("%d records committed in %v", n1, time.Since(start).Round(time.Millisecond))
	if got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(fs = toFixedString('ab', 4096) AND length(fs) = 4096) FROM default.padded"); got != "5000\t5000\t5000" {
		t.Fatalf("count, distinct ids, padded values = %s, want 5000 5000 5000", got)
	}
	// A batch closes once it reaches max_bytes: it exceeds it by at most
	// its last chunk, chunk.target_bytes plus the records added between
	// two measurings (8).
	limit := int(cfg.Sink.ClickHouse.Batch.MaxBytes) + int(cfg.Chunk.TargetBytes) + 8*rowBytes
	parts := strings.Fields(ch.Query(t, "SELECT count(), max(rows) FROM system.parts WHERE database = 'default' AND table = 'padded' AND active"))
	nparts, _ := strconv.Atoi(parts[0])
	maxRows, _ := strconv.Atoi(parts[1])
	t.Logf("%d inserts, the largest %d rows (%d bytes as sent, limit %d)", nparts, maxRows, maxRows*rowBytes, limit)
	if maxRows*rowBytes > limit {
		t.Errorf("an insert of %d rows sent %d bytes, more than batch.max_bytes %d plus a chunk (%d)",
			maxRows, maxRows*rowBytes, cfg.Sink.ClickHouse.Batch.MaxBytes, limit)
	}
	if min := n1 * rowBytes / limit; nparts < min {
		t.Errorf("%d inserts, want at least %d", nparts, min)
	}
	sum, count := histogram(t, reg, "etl_sink_batch_bytes")
	if want := float64(n1 * rowBytes); sum != want {
		t.Errorf("etl_sink_batch_bytes_sum = %.0f for %d rows, want %.0f (8 + 4096 bytes a row)", sum, n1, want)
	}
	if count != uint64(nparts) {
		t.Errorf("etl_sink_batch_bytes_count = %d, %d parts inserted", count, nparts)
	}

	// ClickHouse frozen: the records waiting are counted padded in the
	// budget (with the encoded copies of the inserts in flight on top).
	ch.Freeze(t)
	const n2 = 1500
	produceIDs(n1, n2)
	want := float64(n2 * rowBytes)
	var held float64
	testenv.WaitFor(t, "the waiting records' padded size in etl_backpressure_inflight_bytes", 30*time.Second, func() bool {
		held, _ = gaugeSum(t, reg, "etl_backpressure_inflight_bytes")
		return held >= want
	})
	t.Logf("ClickHouse frozen, %d records waiting: etl_backpressure_inflight_bytes %.0f (%d bytes a row as sent)", n2, held, rowBytes)
	ch.Thaw(t)
	testenv.WaitFor(t, "every record committed after the thaw", time.Minute, committed(n1+n2))
	if got := ch.Count(t, "default.padded"); got != n1+n2 {
		t.Fatalf("%d rows, want %d", got, n1+n2)
	}
	testenv.WaitFor(t, "the budget released", 10*time.Second, func() bool {
		held, _ = gaugeSum(t, reg, "etl_backpressure_inflight_bytes")
		return held == 0
	})
}

// histogram is the sum and count of every series of the histogram name.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (sum float64, count uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
	}
	return sum, count
}
