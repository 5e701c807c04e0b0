package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// pausingHandler pauses partition 0 once it has handed over first
// records of it, and counts each partition's records.
type pausingHandler struct {
	assignedHandler
	s     *Source
	first int
	mu    sync.Mutex
	n     map[int32]int
	next  map[int32]int64
	dup   int
}

func (h *pausingHandler) Fetched(p *kgo.FetchTopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range p.Records {
		if n, ok := h.next[p.Partition]; ok && r.Offset < n {
			h.dup++
		}
		h.next[p.Partition] = r.Offset + 1
	}
	before := h.n[p.Partition]
	h.n[p.Partition] += len(p.Records)
	if p.Partition == 0 && before < h.first && h.n[0] >= h.first {
		h.s.Pause(Partitions{"events": {0}})
	}
}

func (h *pausingHandler) count(part int32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[part]
}

// TestResumeFetchesAtOnce: a partition resumed while the client's fetch
// over the other, idle partitions is held by the broker (up to
// fetch_max_wait, here 30 s) is fetched at once: the source restarts the
// client's fetches at the partition's position, and no record is read
// twice or skipped. Without the restart its records wait for the held
// fetch's end.
func TestResumeFetchesAtOnce(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 2)
	pr := kb.Client(t, kgo.DefaultProduceTopic("events"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(10)

	h := &pausingHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 4)}, first: 10,
		n: map[int32]int{}, next: map[int32]int64{}}
	reg := prometheus.NewPedanticRegistry()
	s, err := New(Options{Config: &config.Kafka{Brokers: []string{kb.Addr()}, Topics: []string{"events"}, GroupID: "resume",
		StartOffset: "earliest", SessionTimeout: config.Duration(6 * time.Second), RebalanceTimeout: config.Duration(6 * time.Second),
		FetchMaxBytes: 1 << 20, FetchMaxPartitionBytes: 1 << 20, FetchMaxWait: config.Duration(30 * time.Second)},
		Handler: h, Log: slog.Default(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	testenv.WaitFor(t, "the first records of partition 0", 20*time.Second, func() bool { return h.count(0) >= 10 })

	// Records arrive for the paused partition: the client's fetches leave
	// it out, and the broker holds each fetch over the empty partition 1.
	produce(20)
	polled := s.LastPoll()
	testenv.WaitFor(t, "two polls after the pause", 10*time.Second, func() bool {
		return s.LastPoll().Sub(polled) >= pollWait
	})
	if got := h.count(0); got != 10 {
		t.Fatalf("partition 0 handed %d records while paused, want 10", got)
	}
	s.Resume(Partitions{"events": {0}})
	resumed := time.Now()
	testenv.WaitFor(t, "the paused partition's records after the resume, long before the held fetch ends", 10*time.Second, func() bool {
		return h.count(0) >= 30
	})
	t.Logf("records of the resumed partition after %v", time.Since(resumed).Round(time.Millisecond))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n[0] != 30 || h.dup != 0 {
		t.Errorf("partition 0: %d records handed over, %d of them again; want 30, none again", h.n[0], h.dup)
	}
	if n := testutil.ToFloat64(s.metrics.restarts); n < 1 {
		t.Errorf("etl_source_fetch_restarts_total = %v, want at least 1", n)
	}
}
