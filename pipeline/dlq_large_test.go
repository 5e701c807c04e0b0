package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestDeadLetterLargeRecords: with on_error: dlq, two large poison records
// among good ones do not stop the pipeline. Record A is a corrupt value of
// 1,040,013 bytes: above franz-go's old 1,000,012-byte producer batch limit
// but within the dead-letter topic's default max.message.bytes (1,048,588),
// so its dead-letter copy must be written whole. Record B is a 3,000,000-byte
// value above decode.max_record_bytes (2 MiB) that the source topic accepts
// (max.message.bytes 4,000,000) but the dead-letter topic does not: its copy
// is written truncated, with the etl.truncated headers. Every good record
// arrives once and the offsets commit to the end of the source topic.
func TestDeadLetterLargeRecords(t *testing.T) {
	const (
		good       = 100     // good records before, between and after
		sizeA      = 1040013 // corrupt
		sizeB      = 3000000 // too_large
		idA        = good
		idB        = 2*good + 1
		n          = 3*good + 2
		srcLimit   = 4000000
		group      = "dead-large"
		kfakeLimit = 1048588 // kfake's (and Kafka's) default message.max.bytes
	)
	kb := testenv.Kafka(t)
	adm := kadm.NewClient(kb.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	limit := strconv.Itoa(srcLimit)
	resp, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"max.message.bytes": &limit}, "events")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create events: %v", err)
	}
	kb.CreateTopic(t, "events.dlq", 1) // the broker's default limit
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))

	// Random bytes, so that no size check is helped by compression. A
	// starts with a byte no JSON value starts with.
	valA := make([]byte, sizeA)
	valB := make([]byte, sizeB)
	rand.Read(valA)
	rand.Read(valB)
	valA[0] = '!'
	poison := map[uint64][]byte{idA: valA, idB: valB}

	recs := make([]*kgo.Record, 0, n)
	for i := uint64(0); i < n; i++ {
		v, ok := poison[i]
		if !ok {
			v = gen.Make(seed, i).AppendJSON(nil)
		}
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: v})
	}
	pcl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(srcLimit), kgo.MaxBufferedRecords(n+1))
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	end := kb.EndOffsets(t, "events")

	cfg := testConfig(t, kb, ch, group)
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.OnError = "dlq"
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
	cfg.Decode.MaxRecordBytes = 2 * config.MiB
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	stopped := false
	defer func() {
		if !stopped {
			stop()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
			}
		}
	}()
	wait := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		waitRunning(t, done, what, timeout, notYet(cond))
	}
	wait("good rows", 20*time.Second, func() bool { return ch.Count(t, "default.events") >= n-2 })
	wait("commits to the end", 10*time.Second, func() bool {
		c := kb.CommittedOffsets(t, group, "events")
		for part, off := range end {
			if c[part] != off {
				return false
			}
		}
		return true
	})
	stop()
	stopped = true
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pipeline did not stop")
	}

	want := fmt.Sprintf("%d\t%d\t0\t%d\t0", n-2, n-2, n-1)
	if got := ch.Query(t, fmt.Sprintf("SELECT count(), uniqExact(id), min(id), max(id), countIf(id IN (%d, %d)) FROM default.events", idA, idB)); got != want {
		t.Fatalf("count, distinct, min, max, poison rows = %s, want %s", got, want)
	}

	dead := readTopic(t, kb, "events.dlq", 2)
	var sawA, sawB bool
	for _, r := range dead {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		size := len(r.Value)
		for _, x := range r.Headers {
			size += len(x.Key) + len(x.Value)
		}
		var id uint64
		switch {
		case h[dlq.HeaderReason] == "corrupt":
			id, sawA = idA, true
			// Observed: A fits the dead-letter topic's default limit
			// and is written whole, without the truncation headers.
			if !bytes.Equal(r.Value, valA) {
				t.Errorf("A: value of %d bytes is not the original's %d", len(r.Value), sizeA)
			}
			if _, ok := h[dlq.HeaderTruncated]; ok {
				t.Errorf("A: truncated: headers %v", h)
			}
		case h[dlq.HeaderReason] == "too_large":
			id, sawB = idB, true
			osize, _ := strconv.Atoi(h[dlq.HeaderOriginalSize])
			if h[dlq.HeaderTruncated] != "true" || osize < sizeB ||
				h[dlq.HeaderOriginalValueSize] != strconv.Itoa(sizeB) ||
				len(r.Value) == 0 || len(r.Value) >= sizeB || !bytes.Equal(r.Value, valB[:len(r.Value)]) {
				t.Errorf("B: value of %d bytes (a prefix: %v), headers %s=%s %s=%s %s=%s",
					len(r.Value), bytes.HasPrefix(valB, r.Value),
					dlq.HeaderTruncated, h[dlq.HeaderTruncated], dlq.HeaderOriginalSize, h[dlq.HeaderOriginalSize],
					dlq.HeaderOriginalValueSize, h[dlq.HeaderOriginalValueSize])
			}
			if size > kfakeLimit {
				t.Errorf("B: %d bytes of value and headers, above the dead-letter topic's %d", size, kfakeLimit)
			}
		default:
			t.Fatalf("dead-letter record with reason %q, value of %d bytes", h[dlq.HeaderReason], len(r.Value))
		}
		part, off := int32(id%3), int64(id/3)
		if h[dlq.HeaderTopic] != "events" || h[dlq.HeaderPartition] != fmt.Sprint(part) ||
			h[dlq.HeaderOffset] != fmt.Sprint(off) || h[dlq.HeaderPipeline] != "test" || h[dlq.HeaderError] == "" {
			t.Errorf("record %d: source headers %s=%s %s=%s %s=%s %s=%s, error %q", id,
				dlq.HeaderTopic, h[dlq.HeaderTopic], dlq.HeaderPartition, h[dlq.HeaderPartition],
				dlq.HeaderOffset, h[dlq.HeaderOffset], dlq.HeaderPipeline, h[dlq.HeaderPipeline], h[dlq.HeaderError])
		}
		t.Logf("dead letter %d: value %d bytes, value+headers %d bytes, reason %s, truncated %q, original.size %q, original.value.size %q",
			id, len(r.Value), size, h[dlq.HeaderReason], h[dlq.HeaderTruncated], h[dlq.HeaderOriginalSize], h[dlq.HeaderOriginalValueSize])
	}
	if !sawA || !sawB {
		t.Fatalf("dead letters: A %v, B %v", sawA, sawB)
	}
}
