package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/source/kafka"
)

// memoryBound is the peak RSS (VmHWM) the etl process may reach with a
// byte budget (backpressure.max_inflight_bytes) of budget, whatever its
// input: the budget plus a fixed allowance for what the budget does not
// count (the Go runtime, the client libraries' buffers, a fetch response
// and its decompression, a decode worker's parse state, the heap's
// fragmentation), 256 MiB: README's stated bound. The Go memory limit etl
// sets at startup (cmd/etl/memlimit.go) is tighter, the budget plus 64 MiB,
// and soft, so what the budget does not count may pass it but not this.
func memoryBound(budget int64) int64 {
	return budget + 256<<20
}

// TestHostileMemory runs the real binary against the real servers with
// inputs built to cost memory the byte budget might not count, one
// subtest each: FixedString padding, a record that becomes many rows, a
// decompression bomb, wide Strings, deep Arrays and a LowCardinality
// column with a million distinct values. Each asserts that the process's
// peak RSS stays within memoryBound of its budget, that every good record
// is in ClickHouse with its values, that every refused one is in the
// dead-letter topic with its reason, and that the group's commits reach
// the log end.
func TestHostileMemory(t *testing.T) {
	h := &hostileEnv{ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, 1, "unused")}
	t.Run("fixedstring_padding", h.fixedStringPadding)
	t.Run("rows_per_record", h.rowsPerRecord)
	t.Run("decompression_bomb", h.decompressionBomb)
	t.Run("wide_strings", h.wideStrings)
	t.Run("deep_arrays", h.deepArrays)
	t.Run("low_cardinality", h.lowCardinality)
}

// hostileEnv is the servers TestHostileMemory's cases share; each case has
// its own topics, table and group.
type hostileEnv struct {
	ch *testenv.CH
	kb *testenv.BrokerProcess
}

// createTopic creates a topic with parts partitions and, when not 0, the
// topic's max.message.bytes.
func (h *hostileEnv) createTopic(t *testing.T, name string, parts int32, maxMessageBytes int) {
	t.Helper()
	var cfg map[string]*string
	if maxMessageBytes > 0 {
		v := strconv.Itoa(maxMessageBytes)
		cfg = map[string]*string{"max.message.bytes": &v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(h.kb.Client(t)).CreateTopic(ctx, parts, -1, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// produceRecords writes recs with cl (a client with the manual partitioner), a
// bounded number at a time.
func produceRecords(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for start := 0; start < len(recs); start += 5000 {
		if err := cl.ProduceSync(ctx, recs[start:min(start+5000, len(recs))]...).FirstErr(); err != nil {
			t.Fatalf("produce records %d..: %v", start, err)
		}
	}
}

// hostileCase is one etl run of TestHostileMemory.
type hostileCase struct {
	name   string // pipeline name, group and (by default) topic
	topic  string
	parts  int
	table  string
	budget int64
	// YAML lines added to source.kafka and sink.clickhouse (indented to
	// their keys' level), and the decode section's lines.
	source, sink, decode string
	began                time.Time // when the case began making its input
}

// memRun is a running etl process whose memory and first insert are
// watched.
type memRun struct {
	p       *proc
	metrics string
	start   time.Time

	stopWatch chan struct{}
	watched   chan struct{}

	mu          sync.Mutex
	maxInflight float64
	firstInsert time.Duration // 0 until the first rows are acknowledged
}

// run starts etl for c and watches /metrics every 100 ms until finish.
func (h *hostileEnv) run(t *testing.T, c hostileCase) *memRun {
	t.Helper()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := writeConfig(t, fmt.Sprintf(`pipeline:
  name: %s
source:
  kafka:
    brokers: [%q]
    topics: [%s]
    group_id: %s
    start_offset: earliest
    session_timeout: 6s
%s
sink:
  clickhouse:
    addr: [%q]
    table: %s
    retry: {initial_backoff: 100ms, max_backoff: 1s}
%s
decode:
%s
backpressure: {max_inflight_bytes: %d}
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: %q}
log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}
`, c.name, h.kb.Addr(), c.topic, c.name, c.source, h.ch.TCPAddr(), c.table, c.sink, c.decode, c.budget, metricsAddr))
	t.Logf("%s: input ready in %v", c.name, time.Since(c.began).Round(100*time.Millisecond))
	r := &memRun{metrics: metricsAddr, start: time.Now(), stopWatch: make(chan struct{}), watched: make(chan struct{})}
	r.p = startETL(t, cfg)
	go r.watch()
	t.Cleanup(r.stop)
	return r
}

func (r *memRun) watch() {
	defer close(r.watched)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stopWatch:
			return
		case <-tick.C:
		}
		m := scrapeIfUp(r.metrics)
		if m == nil {
			continue
		}
		r.mu.Lock()
		r.maxInflight = max(r.maxInflight, m["etl_backpressure_inflight_bytes"])
		if r.firstInsert == 0 && m["etl_sink_records_total"] > 0 {
			r.firstInsert = time.Since(r.start)
		}
		r.mu.Unlock()
	}
}

func (r *memRun) stop() {
	select {
	case <-r.stopWatch:
	default:
		close(r.stopWatch)
	}
	<-r.watched
}

// finish waits until the group's commits reach the log end of every
// partition of c's topic, reads the process's peak RSS, stops it with
// SIGTERM (exit 0 expected), logs the figures and checks the peak against
// memoryBound.
func (h *hostileEnv) finish(t *testing.T, r *memRun, c hostileCase, timeout time.Duration) {
	t.Helper()
	alive := func() error {
		if !r.p.running() {
			return fmt.Errorf("etl exited: %v", r.p.err)
		}
		return nil
	}
	// The figures are logged however the wait ends, so that a run that
	// does not finish still shows how far its memory went.
	var peak int64
	committed := false
	defer func() {
		if !committed {
			peak = procStatusBytes(r.p.cmd.Process.Pid, "VmHWM")
		}
		r.stop()
		r.mu.Lock()
		defer r.mu.Unlock()
		first := "no insert"
		if r.firstInsert > 0 {
			first = "first insert after " + r.firstInsert.Round(100*time.Millisecond).String()
		}
		t.Logf("%s: committed to the log end: %v after %v, %s; peak RSS %.1f MiB (bound %d MiB: budget %d MiB + 256 MiB); peak in-flight %.1f MiB",
			c.name, committed, time.Since(r.start).Round(100*time.Millisecond), first,
			float64(peak)/(1<<20), memoryBound(c.budget)>>20, c.budget>>20, r.maxInflight/(1<<20))
	}()
	waitCommittedEnd(t, h.kb, c.name, c.topic, c.parts, timeout, alive)
	peak = procStatusBytes(r.p.cmd.Process.Pid, "VmHWM")
	committed = true
	// One scrape more, so that the figures include the run's end.
	if m := scrapeIfUp(r.metrics); m != nil {
		r.mu.Lock()
		r.maxInflight = max(r.maxInflight, m["etl_backpressure_inflight_bytes"])
		r.mu.Unlock()
	}
	if code := r.p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if peak == 0 {
		t.Fatal("no VmHWM read from /proc")
	}
	if bound := memoryBound(c.budget); peak > bound {
		t.Errorf("peak RSS %.1f MiB, over the bound of %d MiB (budget %d MiB + 256 MiB)", float64(peak)/(1<<20), bound>>20, c.budget>>20)
	}
}

// deadLetters reads every record of the dead-letter topic (as many as its
// end offsets say) and returns them with their headers as maps.
func (h *hostileEnv) deadLetters(t *testing.T, topic string) ([]*kgo.Record, []map[string]string) {
	t.Helper()
	n := 0
	for _, o := range h.kb.EndOffsets(t, topic) {
		n += int(o)
	}
	cl := h.kb.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(8<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, len(recs), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			r.Value = r.Value[:min(len(r.Value), 64)] // the start is all the checks need
			recs = append(recs, r)
		})
	}
	hs := make([]map[string]string, len(recs))
	for i, r := range recs {
		hs[i] = map[string]string{}
		for _, x := range r.Headers {
			hs[i][x.Key] = string(x.Value)
		}
	}
	return recs, hs
}

// chExecSettings runs a statement over ClickHouse's HTTP interface with
// settings (ClickHouse 18.16 creates LowCardinality columns only with
// allow_experimental_low_cardinality_type).
func chExecSettings(t *testing.T, ch *testenv.CH, query string, settings url.Values) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.HTTPAddr()+"/?"+settings.Encode(), strings.NewReader(query))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("exec %s: %v", query, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec %s: HTTP %d: %s", query, resp.StatusCode, body)
	}
}

// fixedStringPadding: 100,000 records of two bytes into a FixedString(4096)
// column are 410 MB of column data once padded, from 2.5 MB of input.
func (h *hostileEnv) fixedStringPadding(t *testing.T) {
	const n = 100_000
	c := hostileCase{began: time.Now(), name: "fixedstring", topic: "fixedstring", parts: 4, table: "fixedstring", budget: 64 << 20,
		decode: "  on_error: fail"}
	h.ch.Exec(t, "CREATE TABLE fixedstring (id UInt64, fs FixedString(4096)) ENGINE = MergeTree ORDER BY id")
	h.createTopic(t, c.topic, int32(c.parts), 0)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: c.topic, Partition: int32(i % c.parts), Value: fmt.Appendf(nil, `{"id":%d,"fs":"ab"}`, i)}
	}
	produceRecords(t, h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond)), recs)

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	padded := "6162" + strings.Repeat("00", 4094)
	want := fmt.Sprintf("%d\t%d\t%d\t0", n, n, n*(n-1)/2)
	if got := h.ch.Query(t, fmt.Sprintf("SELECT count(), uniqExact(id), sum(id), countIf(hex(fs) != '%s') FROM fixedstring", padded)); got != want {
		t.Errorf("count, distinct ids, sum of ids, values not 'ab' padded with zeros = %s, want %s", got, want)
	}
	if got := h.ch.Query(t, "SELECT hex(fs) FROM fixedstring WHERE id = 4242"); got != padded {
		t.Errorf("hex(fs) of id 4242 = %.40q... (%d characters), want 6162 and 4094 zero bytes", got, len(got))
	}
}

// rowsPerRecord: ndjson records whose empty objects become rows of
// defaults, each with a FixedString(4096) of zeros, against a budget of
// 32 MiB, batches of 4 MiB and decode.max_bytes_per_record 16 MiB. Three
// records of 87,381 lines (786 KB of input, about 360 MB of column data
// each) and one of 100,001 lines make more rows than a record may: they go
// to the dead-letter topic as too_large, each refused at about its first
// 4,000 rows. Two records of 3,000 lines (12.3 MB of rows each, three
// batches) are written, their rows sealed into chunks as they are made;
// and twenty records of 1,000 lines (4.1 MB of rows each, 82 MB in all).
func (h *hostileEnv) rowsPerRecord(t *testing.T) {
	const (
		lines     = 87_381
		overLines = 100_001
		fitLines  = 1_000
		fitting   = 10 // per partition
		bigLines  = 3_000
		maxRows   = 100_000
		dlqTopic  = "ndjson.dlq"
	)
	c := hostileCase{began: time.Now(), name: "ndjson", topic: "ndjson", parts: 2, table: "ndjson", budget: 32 << 20,
		sink: "    batch: {max_bytes: 4MiB}",
		decode: fmt.Sprintf(`  json: {framing: ndjson}
  max_rows_per_record: %d
  max_bytes_per_record: 16MiB
  on_error: dlq
  dlq: {topic: %s}`, maxRows, dlqTopic)}
	h.ch.Exec(t, "CREATE TABLE ndjson (id UInt64, s String, fs FixedString(4096)) ENGINE = MergeTree ORDER BY id")
	h.createTopic(t, c.topic, int32(c.parts), 0)
	h.createTopic(t, dlqTopic, 1, 0)

	empties := func(n int) []byte { return bytes.Repeat([]byte("{}\n"), n) }
	good := func(from, to int) []byte { // ids [from, to), one line each
		var b []byte
		for id := from; id < to; id++ {
			b = fmt.Appendf(b, `{"id":%d,"s":"line %d"}`+"\n", id, id)
		}
		return b
	}
	recs := []*kgo.Record{
		{Partition: 0, Value: good(1, 6)},
		{Partition: 0, Value: empties(lines)},     // partition 0, offset 1
		{Partition: 0, Value: empties(overLines)}, // partition 0, offset 2
		{Partition: 0, Value: good(6, 11)},
		{Partition: 1, Value: empties(lines)}, // partition 1, offset 0
		{Partition: 1, Value: empties(lines)}, // partition 1, offset 1
		{Partition: 1, Value: good(11, 16)},
		{Partition: 0, Value: empties(bigLines)},
		{Partition: 1, Value: empties(bigLines)},
	}
	for range fitting {
		recs = append(recs, &kgo.Record{Partition: 0, Value: empties(fitLines)}, &kgo.Record{Partition: 1, Value: empties(fitLines)})
	}
	for _, rec := range recs {
		rec.Topic = c.topic
	}
	produceRecords(t, h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4<<20)), recs)

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	empty := 2*fitting*fitLines + 2*bigLines
	want := fmt.Sprintf("%d\t%d\t15\t120\t0\t0", empty+15, empty)
	q := fmt.Sprintf("SELECT count(), countIf(id = 0 AND s = ''), countIf(id > 0), sum(id), countIf(id > 0 AND s != concat('line ', toString(id))), countIf(hex(fs) != '%s') FROM ndjson",
		strings.Repeat("00", 4096))
	if got := h.ch.Query(t, q); got != want {
		t.Errorf("rows, empty rows, good rows, sum of good ids, good rows with a wrong value, rows whose fs is not zeros = %s, want %s", got, want)
	}
	_, hs := h.deadLetters(t, dlqTopic)
	var got []string
	for _, x := range hs {
		got = append(got, fmt.Sprintf("%s/%s %s", x[dlq.HeaderPartition], x[dlq.HeaderOffset], x[dlq.HeaderReason]))
		if !strings.Contains(x[dlq.HeaderError], "decode.max_bytes_per_record") {
			t.Errorf("dead letter %s/%s: error %q does not name decode.max_bytes_per_record", x[dlq.HeaderPartition], x[dlq.HeaderOffset], x[dlq.HeaderError])
		}
	}
	sort.Strings(got)
	if w := "[0/1 too_large 0/2 too_large 1/0 too_large 1/1 too_large]"; fmt.Sprint(got) != w {
		t.Errorf("dead letters %v, want %s", got, w)
	}
}

// decompressionBomb: four partitions each hold one zstd batch of 250
// records of 1,048,577 bytes of x (250 MiB decompressed from about 50 KB),
// between good records. Each bomb decompresses past
// source.kafka.max_decompressed_batch_bytes; it is refused before it is
// decompressed, and goes to the dead-letter topic as one too_large dead
// letter naming its offsets.
func (h *hostileEnv) decompressionBomb(t *testing.T) {
	const (
		parts    = 4
		perBomb  = 250
		bombSize = 1<<20 + 1
		before   = 5
		after    = 5
		dlqTopic = "bomb.dlq"
	)
	c := hostileCase{began: time.Now(), name: "bomb", topic: "bomb", parts: parts, table: "bomb", budget: 64 << 20,
		decode: fmt.Sprintf("  on_error: dlq\n  dlq: {topic: %s}", dlqTopic)}
	h.ch.Exec(t, "CREATE TABLE bomb (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
	// Dead letters cut to 128 KiB, so the test reads 125 MB of them back,
	// not a gigabyte.
	h.createTopic(t, dlqTopic, 1, 128<<10)

	// Streaming compression merges a partition's batches into one whose
	// compressed size is under the batch limit: 250 records in one batch.
	// It merges once the client knows the broker's produce version, after
	// the first produce response: the good records before the bombs.
	cl := h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ManualFlushing(),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.StreamingCompression(),
		kgo.ProducerBatchMaxBytes(10<<20), kgo.MaxBufferedRecords(10_000))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		perr   error
		pmu    sync.Mutex
		record = func(r *kgo.Record, err error) {
			pmu.Lock()
			defer pmu.Unlock()
			if err != nil && perr == nil {
				perr = fmt.Errorf("produce %d bytes to partition %d: %w", len(r.Value), r.Partition, err)
			}
		}
		flush = func() {
			if err := cl.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			pmu.Lock()
			defer pmu.Unlock()
			if perr != nil {
				t.Fatal(perr)
			}
		}
		goodID = 0
		good   = func(n int) {
			for range n {
				goodID++
				cl.Produce(ctx, &kgo.Record{Topic: c.topic, Partition: int32(goodID % parts), Value: fmt.Appendf(nil, `{"id":%d,"s":"good %d"}`, goodID, goodID)}, record)
			}
		}
	)
	// Each partition: the good records before, the bomb, the good after.
	// The producer merges a partition's batches only as far as it has them
	// when it cuts a request; on a busy machine it can cut one early and
	// split a bomb in two. The input is then made again in a new topic.
	layout := func() string {
		goodID = 0
		good(before * parts)
		flush()
		bomb := bytes.Repeat([]byte("x"), bombSize)
		for p := range int32(parts) {
			for range perBomb {
				cl.Produce(ctx, &kgo.Record{Topic: c.topic, Partition: p, Value: bomb}, record)
			}
		}
		flush()
		good(after * parts)
		flush()
		batches := h.batchRecords(t, c.topic, parts)
		for p := range int32(parts) {
			if got := fmt.Sprint(batches[p]); got != fmt.Sprint([]int32{before, perBomb, after}) {
				return fmt.Sprintf("partition %d: batches of %s records, want [%d %d %d]", p, got, before, perBomb, after)
			}
		}
		return ""
	}
	for attempt := 1; ; attempt++ {
		c.topic = fmt.Sprintf("bomb%d", attempt)
		h.createTopic(t, c.topic, parts, 10<<20)
		bad := layout()
		if bad == "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("topic %s: %s (third attempt)", c.topic, bad)
		}
		t.Logf("topic %s: %s; making the input again in a new topic", c.topic, bad)
	}

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	n := (before + after) * parts
	want := fmt.Sprintf("%d\t%d\t%d\t0", n, n, n*(n+1)/2)
	if got := h.ch.Query(t, "SELECT count(), uniqExact(id), sum(id), countIf(s != concat('good ', toString(id))) FROM bomb"); got != want {
		t.Errorf("rows, distinct ids, sum of ids, rows with a wrong value = %s, want %s", got, want)
	}
	// A refused batch is one dead letter: its records cannot be read
	// without decompressing it, so the dead letter names the offsets it
	// covers and carries no value.
	recs, hs := h.deadLetters(t, dlqTopic)
	seen := map[string]int{}
	for i, x := range hs {
		if x[dlq.HeaderReason] != "too_large" || x[dlq.HeaderTopic] != c.topic {
			t.Errorf("dead letter %d: headers %v, want reason too_large from topic %s", i, x, c.topic)
			break
		}
		if len(recs[i].Value) > 0 {
			t.Errorf("dead letter %d: value of %d bytes, want none", i, len(recs[i].Value))
		}
		seen[fmt.Sprintf("%s/%s-%s", x[dlq.HeaderPartition], x[kafka.HeaderBatchFirstOffset], x[kafka.HeaderBatchLastOffset])]++
	}
	var wrong []string
	for p := range parts {
		if k := fmt.Sprintf("%d/%d-%d", p, before, before+perBomb-1); seen[k] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s (%d times)", k, seen[k]))
		}
	}
	if len(hs) != parts || len(wrong) > 0 {
		sort.Strings(wrong)
		t.Errorf("%d dead letters, want %d, one for each refused batch; wrong: %v (seen %v)", len(hs), parts, wrong, seen)
	}
}

// batchRecords returns, per partition of topic, the number of records in
// each of its record batches, read from the batch headers of one raw fetch
// (nothing is decompressed).
func (h *hostileEnv) batchRecords(t *testing.T, topic string, parts int) map[int32][]int32 {
	t.Helper()
	cl := h.kb.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		t.Fatalf("list topic %s: %v", topic, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes = -1, 64<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	for p := range int32(parts) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, 64<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch %s: %v", topic, err)
	}
	out := map[int32][]int32{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("fetch %s/%d: %v", topic, rp.Partition, err)
			}
			for raw := rp.RecordBatches; len(raw) > 0; {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(raw); err != nil {
					t.Fatalf("fetch %s/%d: batch header: %v", topic, rp.Partition, err)
				}
				out[rp.Partition] = append(out[rp.Partition], b.NumRecords)
				raw = raw[min(len(raw), 12+int(b.Length)):]
			}
		}
	}
	return out
}

// wideString is value k of record id: its id and k, then one letter to
// 512 KiB.
func wideString(id, k int) []byte {
	prefix := fmt.Sprintf("%08d-%d-", id, k)
	run := wideRuns()[(id+k)%26]
	return append([]byte(prefix), run[:len(run)-len(prefix)]...)
}

// wideRuns are 512 KiB of each letter, made once.
var wideRuns = sync.OnceValue(func() [][]byte {
	out := make([][]byte, 26)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte('a' + i)}, 512<<10)
	}
	return out
})

// wideStrings: records of three 512 KiB String values, 150 MiB through a
// 64 MiB budget.
func (h *hostileEnv) wideStrings(t *testing.T) {
	const n = 100
	c := hostileCase{began: time.Now(), name: "wide", topic: "wide", parts: 2, table: "wide", budget: 64 << 20,
		source: "    fetch_max_partition_bytes: 2MiB",
		decode: "  on_error: fail\n  max_record_bytes: 2MiB"}
	h.ch.Exec(t, "CREATE TABLE wide (id UInt64, a String, b String, c String) ENGINE = MergeTree ORDER BY id")
	h.createTopic(t, c.topic, int32(c.parts), 4<<20)
	cl := h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for start := 0; start < n; start += 10 {
		var recs []*kgo.Record
		for id := start; id < start+10; id++ {
			// The strings need no escaping: letters, digits and dashes.
			v := fmt.Appendf(nil, `{"id":%d`, id)
			for k, name := range []string{"a", "b", "c"} {
				v = append(append(append(v, `,"`+name+`":"`...), wideString(id, k)...), '"')
			}
			v = append(v, '}')
			recs = append(recs, &kgo.Record{Topic: c.topic, Partition: int32(id % c.parts), Value: v})
		}
		produceRecords(t, cl, recs)
	}

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	body, err := h.ch.QueryStream(context.Background(), "SELECT id, hex(MD5(a)), hex(MD5(b)), hex(MD5(c)) FROM wide ORDER BY id FORMAT TabSeparated")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	next := 0
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 || f[0] != strconv.Itoa(next) {
			t.Fatalf("row %q, want id %d and three digests", sc.Text(), next)
		}
		for k := range 3 {
			sum := md5.Sum(wideString(next, k))
			if !strings.EqualFold(f[1+k], hex.EncodeToString(sum[:])) {
				t.Fatalf("id %d: value %d differs from the record's", next, k)
			}
		}
		next++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if next != n {
		t.Errorf("%d rows, want %d", next, n)
	}
}

// deepArray is record id's Array(Array(Array(String))) as JSON: 8 × 15 ×
// 1000 strings of one letter.
func deepArray(id int) []byte {
	b := make([]byte, 0, 500_000)
	b = append(b, '[')
	for i := range 8 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j := range 15 {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for k := range 1000 {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, '"', byte('a'+(id+i+j+k)%26), '"')
			}
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	return append(b, ']')
}

// deepArrays: records of 120,000 one-letter strings in three levels of
// arrays (about 480 KB each), 18 million elements in all.
func (h *hostileEnv) deepArrays(t *testing.T) {
	const (
		n         = 150
		perRecord = 8 * 15 * 1000
	)
	c := hostileCase{began: time.Now(), name: "deep", topic: "deep", parts: 2, table: "deep", budget: 64 << 20, decode: "  on_error: fail"}
	h.ch.Exec(t, "CREATE TABLE deep (id UInt64, x Array(Array(Array(String)))) ENGINE = MergeTree ORDER BY id")
	h.createTopic(t, c.topic, int32(c.parts), 0)
	recs := make([]*kgo.Record, n)
	for id := range recs {
		v := fmt.Appendf(nil, `{"id":%d,"x":%s}`, id, deepArray(id))
		recs[id] = &kgo.Record{Topic: c.topic, Partition: int32(id % c.parts), Value: v}
	}
	produceRecords(t, h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs)
	recs = nil

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	want := fmt.Sprintf("%d\t%d\t%d", n, n*(n-1)/2, n*perRecord)
	if got := h.ch.Query(t, "SELECT count(), sum(id), sum(arraySum(arrayMap(m -> arraySum(arrayMap(i -> length(i), m)), x))) FROM deep"); got != want {
		t.Errorf("rows, sum of ids, elements = %s, want %s", got, want)
	}
	for _, id := range []int{0, 77, n - 1} {
		got := h.ch.Query(t, fmt.Sprintf("SELECT x FROM deep WHERE id = %d", id))
		if w := strings.ReplaceAll(string(deepArray(id)), `"`, `'`); got != w {
			t.Errorf("id %d: x = %.60q... (%d bytes), want %.60q... (%d bytes)", id, got, len(got), w, len(w))
		}
	}
}

// lowCardinality: a LowCardinality(String) column given a million distinct
// values, so that each batch's dictionary is as large as its column.
func (h *hostileEnv) lowCardinality(t *testing.T) {
	const n = 1_000_000
	c := hostileCase{began: time.Now(), name: "lowcard", topic: "lowcard", parts: 4, table: "lowcard", budget: 64 << 20, decode: "  on_error: fail"}
	chExecSettings(t, h.ch, "CREATE TABLE lowcard (id UInt64, lc LowCardinality(String)) ENGINE = MergeTree ORDER BY id",
		url.Values{"allow_experimental_low_cardinality_type": {"1"}})
	h.createTopic(t, c.topic, int32(c.parts), 0)
	cl := h.kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	for start := 0; start < n; start += 100_000 {
		recs := make([]*kgo.Record, 100_000)
		for i := range recs {
			id := start + i
			recs[i] = &kgo.Record{Topic: c.topic, Partition: int32(id % c.parts), Value: fmt.Appendf(nil, `{"id":%d,"lc":"value number %d"}`, id, id)}
		}
		produceRecords(t, cl, recs)
	}

	r := h.run(t, c)
	h.finish(t, r, c, 60*time.Second)

	want := fmt.Sprintf("%d\t%d\t%d\t0", n, n, n)
	if got := h.ch.Query(t, "SELECT count(), uniqExact(id), uniqExact(lc), countIf(lc != concat('value number ', toString(id))) FROM lowcard"); got != want {
		t.Errorf("rows, distinct ids, distinct values, wrong values = %s, want %s", got, want)
	}
}
