package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/source/kafka"
)

// TestDecodeExpansionHeldToBudget: records of a 20,000-element
// Array(String) of one-letter strings take 4 bytes an element as JSON and
// 9 as decoded (the byte and its 8-byte end offset), 2.25 times their
// fetched size. With ClickHouse frozen and a 4 MiB budget, the 3.7 MB
// fetched (in one fetch, before the budget's pause) would become 8.3 MB
// of chunks: decoding stops at max_inflight_bytes instead, so
// etl_backpressure_inflight_bytes never passes the budget by more than one
// chunk and one record's rows per decode worker, plus what the sink counts
// on top of the chunks (the encoded copy of each insert in flight,
// batch.max_bytes and a chunk); after the thaw every record is written and
// committed.
func TestDecodeExpansionHeldToBudget(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.expand (id UInt64, a Array(String)) ENGINE = MergeTree ORDER BY id")

	const (
		n        = 46
		elems    = 20_000
		rowBytes = 8 + 8 + 9*elems // id, the array's end offset, its strings
	)
	value := func(id int) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"id":%d,"a":["x"`, id)
		for range elems - 1 {
			b.WriteString(`,"x"`)
		}
		b.WriteString("]}")
		return b.Bytes()
	}

	// The records are in the topic before the pipeline starts, and a
	// fetch takes a partition's whole log: the budget's pause comes after
	// every record was fetched, and only decoding could take the count
	// further.
	var fetched int64
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Value: value(i)}
		fetched += recordBytes(recs[i])
	}
	// One batch: the first fetch brings every record.
	cl := kb.Client(t, kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerLinger(time.Second))
	pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cancel()

	cfg := testConfig(t, kb, ch, "expand")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Source.Kafka.FetchMaxPartitionBytes = 4 * config.MiB
	cfg.Sink.ClickHouse.Table = "expand"
	cfg.Backpressure.MaxInflightBytes = 4 * config.MiB
	cfg.Sink.ClickHouse.Batch.MaxBytes = 512 * config.KiB
	reg := prometheus.NewRegistry()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ch.Freeze(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	budget := p.budget.Bytes()
	batch := int64(cfg.Sink.ClickHouse.Batch.MaxBytes)
	allowance := int64(p.workers)*(int64(cfg.Chunk.TargetBytes)+rowBytes) +
		int64(cfg.Sink.ClickHouse.Inflight.MaxPerShard)*(batch+rowBytes)
	// Decoding ends while ClickHouse is frozen: every record decoded, or
	// the lanes held for the budget (or the count past the bound).
	testenv.WaitFor(t, "decoding to stop while ClickHouse is frozen", time.Minute, func() bool {
		return p.prog.rowsDecoded.Load() == n || counterSum(t, reg, "etl_backpressure_decode_holds_total") > 0 ||
			p.budget.Peak() > budget+allowance
	})
	holds := counterSum(t, reg, "etl_backpressure_decode_holds_total")
	t.Logf("ClickHouse frozen: %d bytes fetched (%d as decoded), %d rows decoded, budget %d, in flight %d, peak %d, %0.f holds",
		fetched, n*rowBytes, p.prog.rowsDecoded.Load(), budget, p.budget.Inflight(), p.budget.Peak(), holds)
	if peak := p.budget.Peak(); peak > budget+allowance {
		t.Errorf("etl_backpressure_inflight_bytes peaked at %d, past the budget %d plus %d (per decode worker one chunk of %d and one record's %d bytes of rows, per insert in flight its encoded copy)",
			peak, budget, allowance, cfg.Chunk.TargetBytes, rowBytes)
	}
	if holds == 0 {
		t.Errorf("etl_backpressure_decode_holds_total = 0 with the budget past max_inflight_bytes")
	}

	start := time.Now()
	ch.Thaw(t)
	testenv.WaitFor(t, "every record committed after the thaw", 2*time.Minute, func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("pipeline stopped: %v", err)
		default:
		}
		offs := kb.CommittedOffsets(t, "expand", "events")
		return offs[0] == n
	})
	t.Logf("thawed: every record committed in %v", time.Since(start).Round(time.Millisecond))
	if got := ch.Query(t, "SELECT count(), uniqExact(id), min(length(a)), max(length(a)) FROM default.expand"); got != fmt.Sprintf("%d\t%d\t%d\t%d", n, n, elems, elems) {
		t.Fatalf("count, distinct ids, array lengths = %s", got)
	}
	if peak := p.budget.Peak(); peak > budget+allowance {
		t.Errorf("etl_backpressure_inflight_bytes peaked at %d, past the budget %d plus %d", peak, budget, allowance)
	}
	testenv.WaitFor(t, "the budget released", 10*time.Second, func() bool { return p.budget.Inflight() == 0 })
}

// TestDecodeHoldCannotDeadlock: a lane holds for the budget only while the
// sink holds chunks, whose acknowledgements wake it. With the budget full
// of records not yet decoded and nothing in the sink, the lane decodes;
// once its chunk is in the sink, it holds (Waiting) until that chunk is
// acknowledged, and every record is acknowledged in the end.
func TestDecodeHoldCannotDeadlock(t *testing.T) {
	p, dec := newBarePipeline(t, &nopSource{}, 8<<10)
	budget, err := backpressure.New(backpressure.Options{Bytes: 64 << 10, HighRatio: 0.8, LowRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	p.budget = budget
	sink := &holdSink{}
	p.queue = sink
	h := (*handler)(p)
	tp := TopicPartition{Topic: "events", Partition: 0}
	h.Assigned(context.Background(), kafka.Partitions{tp.Topic: {tp.Partition}})
	l := p.lanes[tp]
	const n = 1000
	h.Fetched(&kgo.FetchTopicPartition{Topic: tp.Topic, FetchPartition: kgo.FetchPartition{Partition: tp.Partition, Records: simRecords(tp, n)}})
	if p.budget.Inflight() <= p.budget.Bytes() {
		t.Fatalf("the fetched records take %d bytes, not past the budget %d", p.budget.Inflight(), p.budget.Bytes())
	}

	run := func() {
		t.Helper()
		if got := p.runq.pop(); got != l {
			t.Fatal("the lane is not on the run queue")
		}
		l.start()
		p.process(l, dec)
		l.finish()
	}
	held := func() int {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.held)
	}
	ack := func() {
		sink.mu.Lock()
		p.acks.push(sink.held)
		sink.held = nil
		sink.mu.Unlock()
		p.processAcks()
	}

	// The budget holds only undecoded records: the lane decodes.
	run()
	if held() == 0 {
		t.Fatal("nothing decoded with the budget full of undecoded records and the sink empty")
	}
	// Its chunk is in the sink and the budget is still past: it holds.
	l.mu.Lock()
	state, left := l.state, len(l.recs)-l.head
	l.mu.Unlock()
	if state != laneWaiting || left == 0 {
		t.Fatalf("lane %v with %d records undecoded and %d chunks in the sink, want waiting with records left", state, left, held())
	}
	// Each acknowledgement wakes it; it makes progress to the end.
	chunks := 0
	for i := 0; ; i++ {
		if i == n {
			t.Fatalf("not done after %d acknowledgements", i)
		}
		chunks += held()
		ack()
		if len(p.runq.q) == 0 {
			break
		}
		run()
	}
	if st, _ := p.tracker.Status(tp); st.Watermark != n {
		t.Fatalf("watermark %d, want %d", st.Watermark, n)
	}
	if got := p.budget.Inflight(); got != 0 {
		t.Fatalf("%d bytes left in the budget", got)
	}
	t.Logf("%d records through a %d-byte budget, %d chunks", n, p.budget.Bytes(), chunks)
}
