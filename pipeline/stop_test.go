package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/source/kafka"
)

// downSource is a source whose broker is out of reach: every commit and
// offset fetch fails.
type downSource struct {
	mu      sync.Mutex
	commits int
}

func (s *downSource) Pause(kafka.Partitions)        {}
func (s *downSource) Resume(kafka.Partitions)       {}
func (s *downSource) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (s *downSource) Close()                        {}
func (s *downSource) LastPoll() time.Time           { return time.Now() }
func (s *downSource) Brokers() (time.Time, string)  { return time.Now(), "" }
func (s *downSource) Commit(context.Context, []kafka.Offset) error {
	s.mu.Lock()
	s.commits++
	s.mu.Unlock()
	return errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
}
func (s *downSource) FetchCommitted(context.Context, kafka.Partitions) (map[string]map[int32]kafka.Committed, error) {
	return nil, errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
}

func simRecords(tp TopicPartition, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(i), Value: gen.Make(1, uint64(i)).AppendJSON(nil)}
	}
	return recs
}

// TestRunReportsFailedFinalCommit: every row is written, but Kafka is out
// of reach, so the final commit fails. Run must say so (the binary exits
// 3), not report a clean stop.
func TestRunReportsFailedFinalCommit(t *testing.T) {
	w := newDirectSimWorld(t, 1)
	p := w.p
	p.hook, p.clk = nil, nil
	p.commits = newCommitter(p)
	p.cfg.Delivery, p.exactlyOnce = "at_least_once", false
	p.cfg.Checkpoint.CommitInterval = config.Duration(time.Hour)
	p.cfg.Checkpoint.DrainTimeout = config.Duration(5 * time.Second)
	p.cfg.Sink.ClickHouse = p.sinks[0].cfg
	src := &downSource{}
	p.src = src
	p.pause = newPauser(src, p.pause.gauge)
	p.queue = nullSink{p}
	p.dests = nil // no shard workers: the null sink acknowledges
	// Run starts the describer; with no describe_interval and no Avro
	// schema it never reads.
	p.desc = newDescriber(0, time.Minute, p.log, p.readTables, p.addsColumns)

	tp := TopicPartition{Topic: simTopic, Partition: 0}
	h := (*handler)(p)
	h.Assigned(context.Background(), kafka.Partitions{tp.Topic: {tp.Partition}})
	h.Fetched(&kgo.FetchTopicPartition{Topic: tp.Topic, FetchPartition: kgo.FetchPartition{Partition: tp.Partition, Records: simRecords(tp, 100)}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "100 rows written", 10*time.Second, func() bool { return p.Stats().RowsWritten >= 100 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCommitFailed) {
			t.Fatalf("Run returned %v, want ErrCommitFailed", err)
		}
		t.Logf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestExactlyOnceRegisterEndsOnHalt: with Kafka out of reach, an
// exactly-once block cannot be registered and its worker retries. When
// the stop gives up (the drain deadline), the retry loop must end by
// itself: before, it ended only if the client declared the partition lost.
func TestExactlyOnceRegisterEndsOnHalt(t *testing.T) {
	w := newDirectSimWorld(t, 1)
	p := w.p
	p.hook, p.clk = nil, nil
	p.commits = newCommitter(p)
	p.cfg.Delivery, p.exactlyOnce = "exactly_once", true
	w.eo = true
	src := &downSource{}
	p.src = src
	p.pause = newPauser(src, p.pause.gauge)
	p.queue = nullSink{p}

	tp := TopicPartition{Topic: simTopic, Partition: 0}
	h := (*handler)(p)
	// A new partition's blocks are read first; with the broker down that
	// fails and the pipeline stops: give the lane by hand instead.
	p.mu.Lock()
	l := newLane(tp, p.tracker.Assign(tp), new(fetchLag), &p.settle)
	p.lanes[tp] = l
	p.mu.Unlock()
	p.pause.assign(l)
	h.Fetched(&kgo.FetchTopicPartition{Topic: tp.Topic, FetchPartition: kgo.FetchPartition{Partition: tp.Partition, Records: simRecords(tp, 50)}})
	p.closing.Store(true) // stopping: the open block is sealed at once

	if got := p.runq.pop(); got != l {
		t.Fatal("lane not scheduled")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var dec *boundDecoder
		p.runLane(l, &dec)
	}()
	// The worker retries the registration.
	testenv.WaitFor(t, "a second registration attempt", 10*time.Second, func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.commits >= 2
	})
	p.haltNow()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker still retries the block's registration after the stop gave up")
	}
	// What is left is the lane's (its records after the block): once it
	// is dropped nothing may stay counted.
	h.Lost(context.Background(), kafka.Partitions{tp.Topic: {tp.Partition}})
	for len(p.runq.q) > 0 {
		var dec *boundDecoder
		p.runLane(p.runq.pop(), &dec) // a lane closed while queued is dropped as its worker takes it
	}
	if got := p.budget.Inflight(); got != 0 {
		t.Fatalf("%d budget bytes in flight after the block was given up and the lane dropped", got)
	}
	if p.Stats().RowsWritten != 0 {
		t.Fatal("an unregistered block was written")
	}
}

// recSource is a source that takes every commit and records it.
type recSource struct {
	downSource
	committed map[TopicPartition]int64
}

func (s *recSource) Commit(_ context.Context, offs []kafka.Offset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range offs {
		s.committed[TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	return nil
}

// holdSink takes every chunk and keeps it unacknowledged until released.
type holdSink struct {
	mu   sync.Mutex
	held []*chunk.Chunk
}

func (s *holdSink) TryEnqueue(c *chunk.Chunk) bool {
	s.mu.Lock()
	s.held = append(s.held, c)
	s.mu.Unlock()
	return true
}

// TestRevokeWhileStoppingWaits: a rebalance that revokes partitions while
// the pipeline drains for a stop must still wait for their chunks in the
// sink and commit them; committing at once left the next owner to write
// them again, though the drain wrote them.
func TestRevokeWhileStoppingWaits(t *testing.T) {
	synctest.Test(t, testRevokeWhileStoppingWaits)
}

func testRevokeWhileStoppingWaits(t *testing.T) {
	w := newDirectSimWorld(t, 1)
	p := w.p
	p.hook, p.clk = nil, nil
	p.commits = newCommitter(p)
	p.cfg.Delivery, p.exactlyOnce = "at_least_once", false
	p.cfg.Checkpoint.DrainTimeout = config.Duration(10 * time.Second)
	src := &recSource{committed: map[TopicPartition]int64{}}
	p.src = src
	p.pause = newPauser(src, p.pause.gauge)
	sink := &holdSink{}
	p.queue = sink

	tp := TopicPartition{Topic: simTopic, Partition: 0}
	h := (*handler)(p)
	h.Assigned(context.Background(), kafka.Partitions{tp.Topic: {tp.Partition}})
	h.Fetched(&kgo.FetchTopicPartition{Topic: tp.Topic, FetchPartition: kgo.FetchPartition{Partition: tp.Partition, Records: simRecords(tp, 100)}})
	for len(p.runq.q) > 0 {
		var dec *boundDecoder
		p.runLane(p.runq.pop(), &dec)
	}
	sink.mu.Lock()
	n := len(sink.held)
	sink.mu.Unlock()
	if n == 0 {
		t.Fatal("no chunk reached the sink")
	}

	p.closing.Store(true) // the stop's drain is under way
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Revoked(context.Background(), kafka.Partitions{tp.Topic: {tp.Partition}})
	}()
	// Every goroutine of the bubble is blocked: the revoke has waited as
	// far as it will without the chunks' acknowledgement.
	synctest.Wait()
	select {
	case <-done:
		t.Fatal("the revoke did not wait for the chunks in the sink")
	default:
	}
	// The inserts finish.
	sink.mu.Lock()
	p.acks.push(sink.held)
	sink.held = nil
	sink.mu.Unlock()
	p.processAcks()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the revoke did not end once its chunks were durable")
	}
	src.mu.Lock()
	got := src.committed[tp]
	src.mu.Unlock()
	if got != 100 {
		t.Fatalf("the revoke committed offset %d, want 100", got)
	}
}
