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
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
)

// TestSealMidRecord: a record whose rows take more than one batch
// (decode.max_bytes_per_record set above batch.max_bytes) is written whole
// in several inserts, none above batch.max_bytes: its chunks seal at
// chunk.target_bytes in the middle of the record. A record that fails
// after some of its chunks were sealed leaves none of its rows in the
// table and goes to the dead-letter topic; the records around it are
// written, and the group commits to the end. Both framings that make many
// rows (ndjson, array) are run, on the direct path and, with a transform
// step, on the staged path (whose outputs seal between the record's
// staging rows).
func TestSealMidRecord(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	const (
		lines    = 20_000
		maxBytes = 1 << 20
		// A row takes at least 8 (id) + 256 (fs) bytes as a batch
		// counts it.
		minRowBytes = 8 + 256
	)
	for _, run := range []string{"ndjson", "array", "ndjson-staged"} {
		t.Run(run, func(t *testing.T) {
			framing, staged := strings.CutSuffix(run, "-staged")
			topic, table := "mid-"+run, "mid_"+strings.ReplaceAll(run, "-", "_")
			kb.CreateTopic(t, topic, 1)
			kb.CreateTopic(t, topic+".dlq", 1)
			ch.Exec(t, "CREATE TABLE default."+table+" (id UInt64, s String, fs FixedString(256)) ENGINE = MergeTree ORDER BY id")

			// rows makes ids [from, to) in the framing, with a value of
			// the wrong type at id bad (0: none).
			rows := func(from, to, bad int) []byte {
				var objs []string
				for id := from; id < to; id++ {
					if id == bad {
						objs = append(objs, fmt.Sprintf(`{"id":"not a number %d","s":"x"}`, id))
						continue
					}
					objs = append(objs, fmt.Sprintf(`{"id":%d,"s":"line %d","fs":"f%d"}`, id, id, id))
				}
				if framing == "array" {
					return []byte("[" + strings.Join(objs, ",") + "]")
				}
				return []byte(strings.Join(objs, "\n"))
			}
			// The third record fails near its end: a value of the wrong
			// type, or on the staged path a row no route takes, so that
			// its rows are taken back from the outputs.
			bad := 200_000 + lines - 100
			if staged {
				bad = 0
			}
			kb.Produce(t, topic, []*kgo.Record{
				{Value: rows(1, 2, 0)},
				{Value: rows(100_000, 100_000+lines, 0)},
				{Value: rows(200_000, 200_000+lines, bad)}, // fails near its end
				{Value: rows(300_000, 300_000+lines, 0)},
				{Value: rows(2, 3, 0)},
			})

			cfg := testConfig(t, kb, ch, "mid-"+run)
			if staged {
				cfg.Transform = []config.Step{{Route: &config.Route{
					Rules:     []config.RouteRule{{When: &config.Expr{Text: fmt.Sprintf("id != %d", 200_000+lines-100)}, Sink: "default"}},
					Unmatched: "fail",
				}}}
			}
			cfg.Source.Kafka.Topics = []string{topic}
			cfg.Sink.ClickHouse.Table = table
			cfg.Sink.ClickHouse.Batch.MaxRows = config.Defaults().Sink.ClickHouse.Batch.MaxRows
			cfg.Sink.ClickHouse.Batch.MaxBytes = maxBytes
			cfg.Backpressure.MaxInflightBytes = 64 * config.MiB
			cfg.Decode.MaxBytesPerRecord = 16 * config.MiB
			cfg.Decode.JSON.Framing = framing
			cfg.Decode.OnError = config.OnErrorDLQ
			cfg.Decode.DLQ = &config.DLQ{Topic: topic + ".dlq"}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			testenv.WaitFor(t, "commits to the end", time.Minute, func() bool {
				return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, topic)[0] == 5
			})

			// Every row of the good records, as sent; none of the failed
			// one.
			want := fmt.Sprintf("%d\t0\t0\t0", 2+2*lines)
			q := "SELECT count(), countIf(s != concat('line ', toString(id))), " +
				"countIf(fs != toFixedString(concat('f', toString(id)), 256)), countIf(id >= 200000 AND id < 300000) FROM default." + table
			if got := ch.Query(t, q); got != want {
				t.Errorf("rows, wrong s, wrong fs, rows of the failed record = %s, want %s", got, want)
			}
			// Each insert is one part of level 0 (none merged yet or kept
			// as an inactive part): none is above batch.max_bytes, while
			// one record's rows take more than five batches.
			parts := ch.Query(t, "SELECT count(), max(rows), sum(rows) FROM system.parts WHERE database = 'default' AND table = '"+table+"' AND level = 0")
			f := strings.Fields(parts)
			if len(f) != 3 {
				t.Fatalf("parts: %q", parts)
			}
			maxRows, _ := strconv.Atoi(f[1])
			// A batch passes max_bytes by at most its last chunk: the
			// target and the 64 rows between two measurements.
			limit := (maxBytes + int(cfg.Chunk.TargetBytes) + 64*(minRowBytes+32)) / minRowBytes
			if maxRows > limit || maxRows == 0 {
				t.Errorf("largest insert %d rows, want at most %d (batch.max_bytes %d over rows of at least %d bytes)", maxRows, limit, maxBytes, minRowBytes)
			}
			t.Logf("inserts (parts of level 0), the largest's rows, their rows: %s", parts)

			d := readTopic(t, kb, topic+".dlq", 1)
			h := map[string]string{}
			for _, x := range d[0].Headers {
				h[x.Key] = string(x.Value)
			}
			if h[dlq.HeaderOffset] != "2" || h[dlq.HeaderReason] == "" {
				t.Errorf("dead letter: offset %q reason %q, want offset 2", h[dlq.HeaderOffset], h[dlq.HeaderReason])
			}
			t.Logf("dead letter: %s %s", h[dlq.HeaderReason], h[dlq.HeaderError])
		})
	}
}

// TestSealMidRecordFlatten: a flatten of one record into 20,000 rows
// (decode.max_bytes_per_record above batch.max_bytes) seals its outputs
// in the middle of the flatten: the record is written whole in inserts
// none above batch.max_bytes. A record whose flatten fails near its end
// (a row no route takes) leaves none of its rows, and goes to the
// dead-letter topic.
func TestSealMidRecordFlatten(t *testing.T) {
	kb := testenv.Kafka(t)
	ch := testenv.ClickHouse(t)
	const (
		elems       = 20_000
		maxBytes    = 1 << 20
		minRowBytes = 8 + 4 + 256
		topic       = "mid-flatten"
	)
	kb.CreateTopic(t, topic, 1)
	kb.CreateTopic(t, topic+".dlq", 1)
	ch.Exec(t, "CREATE TABLE default.mid_flatten (id UInt64, item UInt32, fs FixedString(256)) ENGINE = MergeTree ORDER BY (id, item)")
	items := func(id, n int) []byte {
		b := fmt.Appendf(nil, `{"id":%d,"items":[`, id)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Append(b, i)
		}
		return append(b, "]}"...)
	}
	kb.Produce(t, topic, []*kgo.Record{{Value: items(1, 1)}, {Value: items(2, elems)}, {Value: items(3, elems)}, {Value: items(4, elems)}})

	cfg := testConfig(t, kb, ch, topic)
	cfg.Source.Kafka.Topics = []string{topic}
	cfg.Sink.ClickHouse.Table = "mid_flatten"
	cfg.Sink.ClickHouse.Batch.MaxRows = config.Defaults().Sink.ClickHouse.Batch.MaxRows
	cfg.Sink.ClickHouse.Batch.MaxBytes = maxBytes
	cfg.Decode.MaxBytesPerRecord = 16 * config.MiB
	cfg.Decode.Fields = map[string]string{"items": "Array(UInt32)"}
	cfg.Decode.OnError = config.OnErrorDLQ
	cfg.Decode.DLQ = &config.DLQ{Topic: topic + ".dlq"}
	cfg.Transform = []config.Step{
		{Flatten: "items"},
		{Set: []config.Assignment{{Field: "item", Expr: config.Expr{Text: "items"}}}},
		{Route: &config.Route{
			Rules:     []config.RouteRule{{When: &config.Expr{Text: fmt.Sprintf("id != 3 or item != %d", elems-100)}, Sink: "default"}},
			Unmatched: "fail",
		}},
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	testenv.WaitFor(t, "commits to the end", time.Minute, func() bool {
		return kb.CommittedOffsets(t, cfg.Source.Kafka.GroupID, topic)[0] == 4
	})
	want := fmt.Sprintf("%d\t0\t%d\t%d", 1+2*elems, elems, elems)
	q := "SELECT count(), countIf(id = 3), countIf(id = 2), uniqExactIf(item, id = 4) FROM default.mid_flatten"
	if got := ch.Query(t, q); got != want {
		t.Errorf("rows, of the failed record, of record 2, distinct items of record 4 = %s, want %s", got, want)
	}
	parts := ch.Query(t, "SELECT count(), max(rows), sum(rows) FROM system.parts WHERE database = 'default' AND table = 'mid_flatten' AND level = 0")
	f := strings.Fields(parts)
	maxRows, _ := strconv.Atoi(f[1])
	if limit := (maxBytes + int(cfg.Chunk.TargetBytes) + 64*minRowBytes) / minRowBytes; maxRows > limit || maxRows == 0 {
		t.Errorf("largest insert %d rows, want at most %d", maxRows, limit)
	}
	t.Logf("inserts (parts of level 0), the largest's rows, their rows: %s", parts)
	d := readTopic(t, kb, topic+".dlq", 1)
	for _, x := range d[0].Headers {
		if x.Key == dlq.HeaderOffset && string(x.Value) != "2" {
			t.Errorf("dead letter of offset %s, want 2", x.Value)
		}
	}
}
