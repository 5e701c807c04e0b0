package kafka

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// sizesHandler records the value bytes of each partition's records per
// poll, in order.
type sizesHandler struct {
	assignedHandler
	mu    sync.Mutex
	sizes []int
	total int
}

func (h *sizesHandler) Fetched(p *kgo.FetchTopicPartition) {
	n := 0
	for _, r := range p.Records {
		n += len(r.Value)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sizes = append(h.sizes, n)
	h.total += len(p.Records)
}

// TestFirstFetchSmall: the first fetch of a source asks for at most 64 KiB
// of a partition, so the first records arrive at once on a backlog; each
// fetch that returned records raises the size fourfold, up to the
// configured fetch_max_partition_bytes.
func TestFirstFetchSmall(t *testing.T) {
	const n, size = 10_000, 200 // 2 MB of values in one partition
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	// Uncompressed batches of at most 16 KiB: the broker returns whole
	// batches, and counts their bytes as stored.
	pr := kb.Client(t, kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("events"))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: bytes.Repeat([]byte{'a' + byte(i%26)}, size)}
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if err := pr.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	h := &sizesHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 4)}}
	runSource(t, kb.Addr(), "sizes", 16<<20, h)
	testenv.Eventually(t, "every record read", 30*time.Second, func() error {
		h.mu.Lock()
		total := h.total
		h.mu.Unlock()
		if total < n {
			return fmt.Errorf("read %d of %d records", total, n)
		}
		return nil
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	// The broker returns whole batches: the first fetch may pass 64 KiB by
	// one batch.
	if h.sizes[0] > 64<<10+16<<10 {
		t.Errorf("the first fetch returned %d value bytes, want about 64 KiB at most", h.sizes[0])
	}
	if len(h.sizes) < 3 || h.sizes[1] > 256<<10+16<<10 {
		t.Errorf("the second fetch returned more than the first's fourfold, 256 KiB: %v", h.sizes)
	}
	largest := 0
	for _, n := range h.sizes[1:] {
		largest = max(largest, n)
	}
	if largest < 512<<10 {
		t.Errorf("no later fetch above 512 KiB (largest %d bytes in %d polls): the configured 1 MiB was not applied", largest, len(h.sizes))
	}
	t.Logf("value bytes per poll: %v", h.sizes)
}
