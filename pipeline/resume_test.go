package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/loglimit"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// gateQueue is a shard queue that takes allow more chunks, then refuses.
type gateQueue struct {
	mu     sync.Mutex
	allow  int
	taken  []*chunk.Chunk
	refuse int
}

func (q *gateQueue) TryEnqueue(c *chunk.Chunk) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.allow == 0 {
		q.refuse++
		return false
	}
	q.allow--
	q.taken = append(q.taken, c)
	return true
}

func (q *gateQueue) setAllow(n int) {
	q.mu.Lock()
	q.allow = n
	q.mu.Unlock()
}

// countingDecoder counts how often each record value is decoded.
type countingDecoder struct {
	decode.Decoder
	seen map[string]int
}

func (d *countingDecoder) Decode(v []byte, c *chunk.Chunk) (int, error) {
	d.seen[string(v)]++
	return d.Decoder.Decode(v, c)
}

type nopSource struct{ paused, resumed int }

// newBarePipeline builds a pipeline without servers: one JSON decoder for
// gen's schema, a budget that never pauses, the given source for pauses and
// chunks of chunkTarget bytes. The caller sets p.queue.
func newBarePipeline(tb testing.TB, src partitionPauser, chunkTarget int) (*Pipeline, *boundDecoder) {
	tb.Helper()
	schema, err := gen.Schema()
	if err != nil {
		tb.Fatal(err)
	}
	budget, err := backpressure.New(backpressure.Options{Bytes: 1 << 40, HighRatio: 0.8, LowRatio: 0.5})
	if err != nil {
		tb.Fatal(err)
	}
	p := &Pipeline{
		cfg:         &config.Config{},
		tracker:     checkpoint.NewTracker(),
		runq:        newRunQueue(),
		acks:        newAckQueue(),
		lanes:       map[TopicPartition]*lane{},
		failc:       make(chan error, 1),
		chunkTarget: chunkTarget,
		onError:     config.OnErrorFail,
		rejectLog:   loglimit.New(10, time.Second),
		m:           newMetrics(nil),
		budget:      budget,
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	target := &clickhouse.Target{Schema: schema}
	sk := &sinkState{name: "default"}
	sk.target.Store(target)
	p.sinks = []*sinkState{sk}
	p.pause = newPauser(src, prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_test_paused"}))
	dec, err := json.New(schema, json.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return p, &boundDecoder{Decoder: dec, target: target}
}

func (s *nopSource) Pause(kafka.Partitions)  { s.paused++ }
func (s *nopSource) Resume(kafka.Partitions) { s.resumed++ }

// TestResumePoint refuses the shard queue's sends half-way through a lane's
// records, again and again, and checks that every record is decoded exactly
// once, that the chunks handed over hold every row in offset order, and that
// their spans cover every offset exactly once.
func TestResumePoint(t *testing.T) {
	src := &nopSource{}
	q := &gateQueue{}
	p, jd := newBarePipeline(t, src, 2048) // a few dozen rows per chunk
	p.queue = q
	cd := &countingDecoder{Decoder: jd.Decoder, seen: map[string]int{}}
	dec := &boundDecoder{Decoder: cd, target: jd.target}

	tp := TopicPartition{Topic: "events", Partition: 0}
	h := (*handler)(p)
	h.Assigned(context.Background(), kafka.Partitions{"events": {0}})
	l := p.lanes[tp]

	const n = 2000
	var recs []*kgo.Record
	for i := uint64(0); i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: 0, Offset: int64(100 + i), Value: gen.Make(1, i).AppendJSON(nil)})
	}
	// Fetched in four polls; the queue closes after every few chunks.
	for part := 0; part < 4; part++ {
		h.Fetched(&kgo.FetchTopicPartition{Topic: "events", FetchPartition: kgo.FetchPartition{Partition: 0, Records: recs[part*n/4 : (part+1)*n/4]}})
		if l2 := p.runq.pop(); l2 != l {
			t.Fatal("lane not scheduled after a fetch")
		}
		for round := 0; ; round++ {
			// Let one to three chunks through per run, so sends are
			// refused half-way through the fetched records.
			q.setAllow(1 + round%3)
			l.start()
			refusedBefore := q.refuse
			p.process(l, dec)
			l.mu.Lock()
			blocked, pending := l.blocked, l.head < len(l.recs)
			l.mu.Unlock()
			if push, _ := l.finish(); push {
				p.runq.pop()
			}
			if blocked && q.refuse == refusedBefore {
				t.Fatal("lane blocked without a refusal")
			}
			if blocked {
				if l.parked == nil {
					t.Fatal("blocked lane has no parked chunk: its resume point is lost")
				}
				if src.paused == 0 {
					t.Fatal("partition of a blocked lane was not paused")
				}
				p.wakeBlocked(0) // the queue's OnSpace
				if l2 := p.runq.pop(); l2 != l {
					t.Fatal("OnSpace did not reschedule the blocked lane")
				}
				continue
			}
			if !pending && l.parked == nil && l.cur == nil {
				break
			}
		}
	}
	if q.refuse == 0 {
		t.Fatal("the queue never refused: the test proves nothing")
	}
	for i := uint64(0); i < n; i++ {
		if c := cd.seen[string(recs[i].Value)]; c != 1 {
			t.Fatalf("record %d decoded %d times", i, c)
		}
	}
	next := int64(100)
	var id uint64
	for _, c := range q.taken {
		for _, s := range c.Spans {
			if s.First != next {
				t.Fatalf("span %v starts at %d, want %d", s, s.First, next)
			}
			next = s.Next
		}
		ids := c.Cols[0].(*chunk.Fixed[uint64]).Data
		for _, v := range ids {
			if v != id {
				t.Fatalf("row id %d, want %d", v, id)
			}
			id++
		}
	}
	if next != 100+n || id != n {
		t.Fatalf("chunks cover offsets up to %d and %d rows, want %d and %d", next, id, 100+n, n)
	}
	t.Logf("%d chunks, %d refusals, %d pauses, %d resumes", len(q.taken), q.refuse, src.paused, src.resumed)
}

// TestChunkTargetMeasured checks how far the direct path lets a chunk
// outgrow chunk.target_bytes now that it measures the open chunk once per
// measureEvery records or measureBytes value bytes: every chunk but the
// last reaches the target, and without its last measureEvery rows (with
// small records) or its last two rows (records of about 3 KiB, where the
// value bytes decide) it is below it.
func TestChunkTargetMeasured(t *testing.T) {
	big := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name   string
		value  func(i uint64) []byte
		target int
		spare  int // rows whose removal must bring a full chunk under target
	}{
		{"small records", func(i uint64) []byte { return gen.Make(1, i).AppendJSON(nil) }, 4096, measureEvery},
		{"3KiB records", func(i uint64) []byte {
			return fmt.Appendf(nil, `{"id":%d,"ts":0,"user_id":1,"kind":"k","amount":1.5,"note":"%s"}`, i, big)
		}, 32 << 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dec := newBarePipeline(t, &nopSource{}, tc.target)
			q := &gateQueue{allow: 1 << 30}
			p.queue = q
			h := (*handler)(p)
			h.Assigned(context.Background(), kafka.Partitions{"events": {0}})
			l := p.lanes[TopicPartition{Topic: "events", Partition: 0}]
			const n = 3000
			recs := make([]*kgo.Record, n)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "events", Offset: int64(i), Value: tc.value(uint64(i))}
			}
			// Fetched in uneven polls, so chunks span process calls.
			ends := map[int64]bool{}
			for at := 0; at < n; {
				next := min(n, at+1+at%977)
				ends[int64(next)] = true
				h.Fetched(&kgo.FetchTopicPartition{Topic: "events", FetchPartition: kgo.FetchPartition{Partition: 0, Records: recs[at:next]}})
				p.runq.pop()
				l.start()
				p.process(l, dec)
				if push, _ := l.finish(); push {
					p.runq.pop()
				}
				at = next
			}
			if len(q.taken) < 4 {
				t.Fatalf("%d chunks: too few to show anything", len(q.taken))
			}
			rows := 0
			for i, c := range q.taken {
				rows += c.Rows
				if i == len(q.taken)-1 {
					break
				}
				if size := c.Measure(); size < tc.target {
					// A chunk sealed because its lane ran out of
					// records may be short; one sealed full is not.
					if !ends[c.Spans[len(c.Spans)-1].Next] {
						t.Errorf("chunk %d: %d bytes, under the target %d", i, size, tc.target)
					}
					continue
				}
				c.Truncate(c.Rows - tc.spare)
				if size := c.Measure(); size >= tc.target {
					t.Errorf("chunk %d: %d bytes without its last %d rows, want under the target %d: measured too late", i, size, tc.spare, tc.target)
				}
			}
			if rows != n {
				t.Fatalf("%d rows in the chunks, want %d", rows, n)
			}
		})
	}
}
