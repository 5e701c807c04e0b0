package kafka

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

type assignedHandler struct{ assigned chan Partitions }

func (h *assignedHandler) Assigned(_ context.Context, p Partitions) { h.assigned <- p }
func (h *assignedHandler) Revoked(context.Context, Partitions)      {}
func (h *assignedHandler) Lost(context.Context, Partitions)         {}
func (h *assignedHandler) Fetched(*kgo.FetchTopicPartition)         {}

// runSource runs a source of group on the topic events until the test
// ends.
func runSource(t *testing.T, broker, group string, fetchMax config.ByteSize, h Handler) *Source {
	t.Helper()
	s, err := New(Options{Config: &config.Kafka{Brokers: []string{broker}, Topics: []string{"events"}, GroupID: group,
		StartOffset: "earliest", SessionTimeout: config.Duration(6 * time.Second), RebalanceTimeout: config.Duration(6 * time.Second),
		FetchMaxBytes: fetchMax, FetchMaxPartitionBytes: 1 << 20, FetchMaxWait: config.Duration(100 * time.Millisecond)},
		Handler: h, Log: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	return s
}

// TestCommitMetadata: a commit carries each partition's metadata, the last
// commit's metadata is what FetchCommitted reads back (also when only the
// metadata changed), and a partition never committed reads as offset -1.
func TestCommitMetadata(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	h := &assignedHandler{assigned: make(chan Partitions, 4)}
	s := runSource(t, kb.Addr(), "meta", 1<<20, h)
	select {
	case <-h.assigned:
	case <-time.After(20 * time.Second):
		t.Fatal("no assignment")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	steps := []struct {
		offsets []Offset
		want    map[int32]Committed
	}{
		{[]Offset{{"events", 0, 10, "etl1:10-20"}, {"events", 1, 5, "etl1:"}},
			map[int32]Committed{0: {10, "etl1:10-20"}, 1: {5, "etl1:"}, 2: {-1, ""}}},
		// Same offset, new metadata: the metadata changes.
		{[]Offset{{"events", 0, 10, "etl1:10-20,20-30"}},
			map[int32]Committed{0: {10, "etl1:10-20,20-30"}, 1: {5, "etl1:"}}},
		{[]Offset{{"events", 0, 30, "etl1:"}},
			map[int32]Committed{0: {30, "etl1:"}}},
	}
	for i, st := range steps {
		if err := s.Commit(cctx, st.offsets); err != nil {
			t.Fatalf("step %d: commit: %v", i, err)
		}
		got, err := s.FetchCommitted(cctx, Partitions{"events": {0, 1, 2}})
		if err != nil {
			t.Fatalf("step %d: fetch: %v", i, err)
		}
		for p, w := range st.want {
			if g := got["events"][p]; g != w {
				t.Errorf("step %d: partition %d: got %+v, want %+v", i, p, g, w)
			}
		}
	}
}
