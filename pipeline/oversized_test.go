package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// TestOversizedRecords: records larger than what the pipeline batches or
// fetches at once are delivered, as batches of their own, without a
// stall: a record larger than batch.max_bytes, a flatten making more rows
// than batch.max_rows, and a record larger than
// source.kafka.fetch_max_partition_bytes. Records larger than
// decode.max_record_bytes are too_large (TestDeadLetterLargeRecords). The
// flatten's rows (144 KB) are more than batch.max_bytes, which is the
// default bound of one record's rows: decode.max_bytes_per_record is
// raised for it (TestRowsPerRecord holds the bound).
func TestOversizedRecords(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.big (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
	ch.Exec(t, "CREATE TABLE default.flat (id UInt64, item UInt32) ENGINE = MergeTree ORDER BY (id, item)")

	// Record 1: 600 KB of text (batch.max_bytes 64 KiB, fetch 64 KiB per
	// partition); records 0 and 2 are small; record 3 holds 12,000 items
	// for the flatten (batch.max_rows 1,000).
	big := strings.Repeat("x", 600_000)
	items := make([]string, 12000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	vals := []string{
		`{"id":0,"s":"a","items":[1]}`,
		fmt.Sprintf(`{"id":1,"s":%q,"items":[1]}`, big),
		`{"id":2,"s":"b","items":[1]}`,
		`{"id":3,"s":"c","items":[` + strings.Join(items, ",") + `]}`,
	}
	var recs []*kgo.Record
	for _, v := range vals {
		recs = append(recs, &kgo.Record{Topic: "events", Value: []byte(v)})
	}
	cl := kb.Client(t, kgo.ProducerBatchMaxBytes(2<<20))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, table, transform string }{
		{"large-record", "big", ""},
		{"flatten", "flat", "flatten"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, kb, ch, "oversized-"+tc.name)
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Source.Kafka.FetchMaxPartitionBytes = 64 * config.KiB
			cfg.Sink.ClickHouse.Table = tc.table
			cfg.Sink.ClickHouse.Batch.MaxBytes = 64 * config.KiB
			cfg.Sink.ClickHouse.Batch.MaxRows = 1000
			cfg.Decode.OnError = "fail"
			if tc.transform != "" {
				cfg.Transform = []config.Step{{Flatten: "items"}, {Set: []config.Assignment{{Field: "item", Expr: config.Expr{Text: "items"}}}}}
				cfg.Decode.Fields = map[string]string{"items": "Array(UInt32)"}
				cfg.Decode.MaxBytesPerRecord = config.MiB
			}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			rctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(rctx) }()
			start := time.Now()
			waitRunning(t, done, "commits to the end", time.Minute, func() error {
				if c := kb.CommittedOffsets(t, "oversized-"+tc.name, "events"); c[0] != 4 {
					return fmt.Errorf("committed %v, want 4 on partition 0", c)
				}
				return nil
			})
			t.Logf("%s: committed to the end in %v", tc.name, time.Since(start).Round(time.Millisecond))
			stop()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			switch tc.table {
			case "big":
				if got := ch.Query(t, "SELECT count(), sum(length(s)) FROM default.big"); got != "4\t600003" {
					t.Fatalf("count, total length = %s, want 4 600003", got)
				}
			case "flat":
				if got := ch.Query(t, "SELECT count(), countIf(id = 3), uniqExact(item) FROM default.flat"); got != "12003\t12000\t12000" {
					t.Fatalf("rows, rows of the large record, distinct items = %s", got)
				}
			}
		})
	}
}
