package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/source/kafka"
)

// bombTopic creates "events" (2 partitions, max.message.bytes 10 MiB) and
// writes to each partition a batch of good records, one compressed batch
// of bombN records of bombSize bytes of 'x' (2 MB decompressed, a few KB
// on the broker), and another batch of good records: partition 0 with
// zstd, partition 1 with gzip. It returns the bombs' first offsets and the
// number of good records.
func bombTopic(t *testing.T, kb *testenv.Broker) (bombs [2]int64, goods int) {
	t.Helper()
	const (
		good     = 50
		bombN    = 20
		bombSize = 100_000
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limit := strconv.Itoa(10 << 20)
	adm := kadm.NewClient(kb.Client(t))
	resp, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"max.message.bytes": &limit}, "events")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create events: %v", err)
	}
	id := uint64(0)
	for part, codec := range []kgo.CompressionCodec{kgo.ZstdCompression(), kgo.GzipCompression()} {
		cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(codec),
			kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerLinger(time.Second))
		batch := func(vals [][]byte) {
			recs := make([]*kgo.Record, len(vals))
			for i, v := range vals {
				recs[i] = &kgo.Record{Topic: "events", Partition: int32(part), Value: v}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		goodBatch := func() {
			vals := make([][]byte, good)
			for i := range vals {
				vals[i] = gen.Make(seed, id).AppendJSON(nil)
				id++
			}
			batch(vals)
			goods += good
		}
		goodBatch()
		bombs[part] = kb.EndOffsets(t, "events")[int32(part)]
		vals := make([][]byte, bombN)
		for i := range vals {
			vals[i] = []byte(strings.Repeat("x", bombSize))
		}
		batch(vals)
		goodBatch()
	}
	return bombs, goods
}

// TestDecompressionBomb: a compressed batch that decompresses past
// source.kafka.max_decompressed_batch_bytes (zstd on one partition, gzip on
// the other) is not read. Under on_error: dlq each goes to the dead-letter
// topic as one record of reason too_large naming the batch's offsets and
// the limit, is logged at ERROR and counted; the good records around it
// are written and the offsets commit to the end. Under on_error: fail the
// pipeline stops at the first one with an error naming it, and nothing is
// committed past it.
func TestDecompressionBomb(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events.dlq", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	bombs, goods := bombTopic(t, kb)
	end := kb.EndOffsets(t, "events")
	const bound = 1 << 20

	t.Run("dlq", func(t *testing.T) {
		const group = "bomb-dlq"
		cfg := testConfig(t, kb, ch, group)
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Source.Kafka.MaxDecompressedBatchBytes = bound
		cfg.Decode.OnError = "dlq"
		cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
		var logs lockedBuffer
		reg := prometheus.NewRegistry()
		log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testenv.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelWarn}))
		p, err := New(context.Background(), Options{Config: cfg, Log: log, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		start := time.Now()
		waitRunning(t, done, "commits to the end", time.Minute, func() error {
			if c := kb.CommittedOffsets(t, group, "events"); c[0] != end[0] || c[1] != end[1] {
				return fmt.Errorf("committed %v, want the ends %v", c, end)
			}
			return nil
		})
		t.Logf("committed to the end in %v", time.Since(start).Round(time.Millisecond))
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != fmt.Sprintf("%d\t%d", goods, goods) {
			t.Fatalf("rows, distinct ids = %s, want %d of each", got, goods)
		}
		dead := readTopic(t, kb, "events.dlq", 2)
		if len(dead) != 2 {
			t.Fatalf("%d dead letters, want 2", len(dead))
		}
		for _, r := range dead {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			part, _ := strconv.Atoi(h[dlq.HeaderPartition])
			first := bombs[part]
			want := map[string]string{
				dlq.HeaderReason: "too_large", dlq.HeaderTopic: "events", dlq.HeaderOffset: fmt.Sprint(first),
				kafka.HeaderBatchFirstOffset: fmt.Sprint(first), kafka.HeaderBatchLastOffset: fmt.Sprint(first + 19),
				kafka.HeaderBatchLimit: fmt.Sprint(bound),
			}
			for k, v := range want {
				if h[k] != v {
					t.Errorf("partition %d: header %s = %q, want %q (headers %v)", part, k, h[k], v, h)
				}
			}
			if !strings.Contains(h[dlq.HeaderError], "max_decompressed_batch_bytes") || len(r.Value) != 0 {
				t.Errorf("partition %d: error %q, value of %d bytes", part, h[dlq.HeaderError], len(r.Value))
			}
		}
		text := logs.String()
		for part, first := range bombs {
			line := fmt.Sprintf("partition=%d first_offset=%d last_offset=%d max_decompressed_batch_bytes=%d", part, first, first+19, bound)
			if !strings.Contains(text, "level=ERROR msg=\"record batch refused") || !strings.Contains(text, line) {
				t.Errorf("no ERROR line with %q in the log:\n%s", line, text)
			}
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		refused := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "etl_source_batches_refused_total" {
				refused = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if refused != 2 {
			t.Errorf("etl_source_batches_refused_total = %v, want 2", refused)
		}
	})

	t.Run("fail", func(t *testing.T) {
		const group = "bomb-fail"
		cfg := testConfig(t, kb, ch, group)
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Source.Kafka.MaxDecompressedBatchBytes = bound
		cfg.Decode.OnError = "fail"
		var logs lockedBuffer
		log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testenv.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelWarn}))
		p, err := New(context.Background(), Options{Config: cfg, Log: log, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(context.Background()) }()
		var runErr error
		select {
		case runErr = <-done:
		case <-time.After(time.Minute):
			t.Fatal("the pipeline did not stop within a minute")
		}
		if runErr == nil || !strings.Contains(runErr.Error(), "max_decompressed_batch_bytes") {
			t.Fatalf("Run: %v, want the refused batch's error", runErr)
		}
		c := kb.CommittedOffsets(t, group, "events")
		for part, first := range bombs {
			if c[int32(part)] > first {
				t.Errorf("partition %d committed at %d, past the refused batch at %d", part, c[int32(part)], first)
			}
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "max_decompressed_batch_bytes") {
			t.Errorf("no ERROR line naming the limit:\n%s", logs.String())
		}
		t.Logf("stopped: %v; committed %v", runErr, c)
	})
}

// TestMaxDecompressedBatchDefault: the bound's default follows the fetch
// size and the budget, at most 1 GiB; a configured value wins.
func TestMaxDecompressedBatchDefault(t *testing.T) {
	cfg := &config.Config{Source: config.Source{Kafka: &config.Kafka{FetchMaxPartitionBytes: config.MiB}}}
	for _, tt := range []struct {
		budget, set, want int64
	}{
		{144 << 20, 0, 36 << 20}, // the defaults
		{64 << 20, 0, 16 << 20},  // 16 × 1 MiB
		{32 << 20, 0, 16 << 20},
		{16 << 30, 0, 1 << 30},
		{64 << 20, 4 << 20, 4 << 20},
	} {
		cfg.Source.Kafka.MaxDecompressedBatchBytes = config.ByteSize(tt.set)
		if got := maxDecompressedBatch(cfg, tt.budget); got != tt.want {
			t.Errorf("budget %d, set %d: %d, want %d", tt.budget, tt.set, got, tt.want)
		}
	}
}
