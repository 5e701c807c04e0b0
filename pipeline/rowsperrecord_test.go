package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
)

// emptyLines is an ndjson record of n empty objects.
func emptyLines(n int) []byte { return bytes.Repeat([]byte("{}\n"), n) }

// emptyArray is an array-framed record of n empty objects.
func emptyArray(n int) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]")
}

// TestRowsPerRecord: the rows one record makes are bounded. With the
// defaults (decode.max_rows_per_record 100,000, the byte bound the
// smallest batch.max_bytes), under the settings of the reported case
// (max_inflight_bytes 32 MiB, batch.max_bytes 4 MiB), three ndjson records
// of 87,381 empty objects each are written; a record of 100,001 is
// dead-lettered as too_large (rows), and so are an array of 50,000 under
// decode.max_bytes_per_record 512 KiB (bytes) and a flatten of 100,001
// elements (a flatten of 100,000 is written) and an ndjson record of two
// flattens of 60,000 (the record's rows are bounded as a whole); under
// on_error fail such a
// record stops the pipeline with an error naming it, the count and the
// limit, and nothing is committed past it.
func TestRowsPerRecord(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.rows (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
	ch.Exec(t, "CREATE TABLE default.flat (id UInt64, item UInt32) ENGINE = MergeTree ORDER BY (id, item)")
	for _, topic := range []string{"rows.dlq", "rows-defaults", "rows-bytes", "rows-fail", "rows-flatten", "rows-flatten-lines"} {
		kb.CreateTopic(t, topic, 1)
	}

	newConfig := func(t *testing.T, topic, framing string, onError config.OnError) *config.Config {
		cfg := testConfig(t, kb, ch, "rows-"+topic)
		cfg.Source.Kafka.Topics = []string{topic}
		cfg.Sink.ClickHouse.Table = "rows"
		cfg.Sink.ClickHouse.Batch.MaxRows = config.Defaults().Sink.ClickHouse.Batch.MaxRows
		cfg.Sink.ClickHouse.Batch.MaxBytes = 4 * config.MiB
		cfg.Backpressure.MaxInflightBytes = 32 * config.MiB
		cfg.Decode.JSON.Framing = framing
		cfg.Decode.OnError = onError
		if onError == config.OnErrorDLQ {
			cfg.Decode.DLQ = &config.DLQ{Topic: "rows.dlq"}
		}
		return cfg
	}
	run := func(t *testing.T, cfg *config.Config) (*Pipeline, context.CancelFunc, chan error) {
		p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
			}
		})
		return p, cancel, done
	}
	wait := func(t *testing.T, done chan error, what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		waitRunning(t, done, what, timeout, notYet(cond))
	}
	deadLetters := 0
	checkDead := func(t *testing.T, topic string, offset int64, want ...string) {
		t.Helper()
		deadLetters++
		var r *kgo.Record
		for _, d := range readTopic(t, kb, "rows.dlq", deadLetters) {
			for _, h := range d.Headers {
				if h.Key == dlq.HeaderTopic && string(h.Value) == topic {
					r = d
				}
			}
		}
		if r == nil {
			t.Fatalf("no dead letter of %s", topic)
		}
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[dlq.HeaderReason] != "too_large" || h[dlq.HeaderPartition] != "0" || h[dlq.HeaderOffset] != fmt.Sprint(offset) {
			t.Fatalf("dead letter: reason %q, partition %q, offset %q; want too_large, 0, %d", h[dlq.HeaderReason], h[dlq.HeaderPartition], h[dlq.HeaderOffset], offset)
		}
		for _, w := range want {
			if !strings.Contains(h[dlq.HeaderError], w) {
				t.Fatalf("dead letter error %q does not say %q", h[dlq.HeaderError], w)
			}
		}
		t.Logf("dead letter of %s offset %d: %s", topic, offset, h[dlq.HeaderError])
	}

	t.Run("defaults", func(t *testing.T) {
		const n = 87381
		kb.Produce(t, "rows-defaults", []*kgo.Record{
			{Value: emptyLines(n)}, {Value: emptyLines(n)}, {Value: emptyLines(n)},
			{Value: emptyLines(100_001)},
			{Value: []byte(`{"id":1,"s":"after"}`)},
		})
		cfg := newConfig(t, "rows-defaults", "ndjson", config.OnErrorDLQ)
		start := time.Now()
		p, cancel, done := run(t, cfg)
		wait(t, done, "commits to the end", time.Minute, func() bool { return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, "rows-defaults")[0] == 5 })
		t.Logf("committed to the end in %v", time.Since(start).Round(time.Millisecond))
		if got := ch.Query(t, "SELECT count(), countIf(s = 'after') FROM default.rows"); got != fmt.Sprintf("%d\t1", 3*n+1) {
			t.Fatalf("rows, rows of the last record = %s, want %d 1", got, 3*n+1)
		}
		if s := p.Stats(); s.DecodeErrors != 1 {
			t.Fatalf("decode errors %d, want 1", s.DecodeErrors)
		}
		cancel()
		err := <-done
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkDead(t, "rows-defaults", 3, "at least 100001 rows", "limit of 100000 rows per record")
	})

	t.Run("bytes", func(t *testing.T) {
		ch.Exec(t, "TRUNCATE TABLE default.rows")
		kb.Produce(t, "rows-bytes", []*kgo.Record{
			{Value: emptyArray(10_000)}, // 160,000 bytes of rows
			{Value: emptyArray(50_000)}, // 800,000 bytes of rows
			{Value: []byte(`[{"id":1,"s":"after"}]`)},
		})
		cfg := newConfig(t, "rows-bytes", "array", config.OnErrorDLQ)
		cfg.Decode.MaxBytesPerRecord = 512 * config.KiB
		_, cancel, done := run(t, cfg)
		wait(t, done, "commits to the end", time.Minute, func() bool { return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, "rows-bytes")[0] == 3 })
		if got := ch.Query(t, "SELECT count(), countIf(s = 'after') FROM default.rows"); got != "10001\t1" {
			t.Fatalf("rows, rows of the last record = %s, want 10001 1", got)
		}
		cancel()
		err := <-done
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkDead(t, "rows-bytes", 1, "limit of 524288 bytes per record")
	})

	items := func(id, n int) []byte {
		b := fmt.Appendf(nil, `{"id":%d,"items":[`, id)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Append(b, i%10)
		}
		return append(b, "]}"...)
	}
	flattenConfig := func(t *testing.T, topic, framing string) *config.Config {
		cfg := newConfig(t, topic, framing, config.OnErrorDLQ)
		cfg.Sink.ClickHouse.Table = "flat"
		cfg.Transform = []config.Step{{Flatten: "items"}, {Set: []config.Assignment{{Field: "item", Expr: config.Expr{Text: "items"}}}}}
		cfg.Decode.Fields = map[string]string{"items": "Array(UInt32)"}
		return cfg
	}
	t.Run("flatten", func(t *testing.T) {
		kb.Produce(t, "rows-flatten", []*kgo.Record{
			{Value: items(1, 100_000)}, // at the limit
			{Value: items(2, 100_001)},
			{Value: items(3, 3)},
		})
		cfg := flattenConfig(t, "rows-flatten", "single")
		_, cancel, done := run(t, cfg)
		wait(t, done, "commits to the end", time.Minute, func() bool { return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, "rows-flatten")[0] == 3 })
		if got := ch.Query(t, "SELECT count(), countIf(id = 1), countIf(id = 2), countIf(id = 3) FROM default.flat"); got != "100003\t100000\t0\t3" {
			t.Fatalf("rows, of records 1, 2, 3 = %s, want 100003 100000 0 3", got)
		}
		cancel()
		err := <-done
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkDead(t, "rows-flatten", 1, "transform[0].flatten", "100001 elements", "limit of 100000 rows per record")
	})

	// Two lines of 60,000 elements each: each flatten is within the
	// limit, the record's 120,000 rows are not.
	t.Run("flatten-lines", func(t *testing.T) {
		ch.Exec(t, "TRUNCATE TABLE default.flat")
		kb.Produce(t, "rows-flatten-lines", []*kgo.Record{
			{Value: append(append(items(4, 60_000), '\n'), items(5, 60_000)...)},
			{Value: append(append(items(6, 3), '\n'), items(7, 3)...)},
		})
		cfg := flattenConfig(t, "rows-flatten-lines", "ndjson")
		_, cancel, done := run(t, cfg)
		wait(t, done, "commits to the end", time.Minute, func() bool {
			return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, "rows-flatten-lines")[0] == 2
		})
		if got := ch.Query(t, "SELECT count(), countIf(id IN (6, 7)) FROM default.flat"); got != "6\t6" {
			t.Fatalf("rows, of the second record = %s, want 6 6", got)
		}
		cancel()
		err := <-done
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkDead(t, "rows-flatten-lines", 0, "at least 120000 rows", "limit of 100000 rows per record")
	})

	t.Run("fail", func(t *testing.T) {
		ch.Exec(t, "TRUNCATE TABLE default.rows")
		kb.Produce(t, "rows-fail", []*kgo.Record{
			{Value: []byte(`{"id":1,"s":"before"}`)},
			{Value: emptyLines(100_001)},
			{Value: []byte(`{"id":2,"s":"after"}`)},
		})
		cfg := newConfig(t, "rows-fail", "ndjson", config.OnErrorFail)
		start := time.Now()
		_, _, done := run(t, cfg)
		var err error
		select {
		case err = <-done:
			done <- err
		case <-time.After(time.Minute):
			t.Fatal("the pipeline did not stop within a minute")
		}
		t.Logf("Run returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
		for _, w := range []string{"rows-fail/0 offset 1", "too_large", "at least 100001 rows", "limit of 100000 rows per record"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Fatalf("Run: %v, want an error saying %q", err, w)
			}
		}
		if got := ch.Query(t, "SELECT count(), countIf(s = 'before') FROM default.rows"); got != "1\t1" {
			t.Fatalf("rows, rows of the first record = %s, want 1 1", got)
		}
		if c := kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, "rows-fail")[0]; c > 1 {
			t.Fatalf("committed offset %d, past the refused record at 1", c)
		}
	})
}
