package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/internal/testenv"
)

// oldBatchMax is franz-go's default ProducerBatchMaxBytes, the limit the
// dead-letter producer used to keep whatever the topic allowed.
const oldBatchMax = 1_000_012

// createTopic creates a one-partition topic with the given
// max.message.bytes ("" leaves it unset).
func createTopic(t *testing.T, kb *testenv.Broker, name, maxMessageBytes string) {
	t.Helper()
	var cfg map[string]*string
	if maxMessageBytes != "" {
		cfg = map[string]*string{"max.message.bytes": &maxMessageBytes}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(kb.Client(t)).CreateTopic(ctx, 1, -1, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

func newWriter(t *testing.T, kb *testenv.Broker, topic string, o Options) *Writer {
	t.Helper()
	o.Topic, o.Pipeline = topic, "p"
	o.Opts = append([]kgo.Opt{kgo.SeedBrokers(kb.Addrs()...)}, o.Opts...)
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// write writes a dead-letter copy of r and waits for the outcome.
func write(t *testing.T, w *Writer, r *kgo.Record) error {
	t.Helper()
	res := make(chan error, 1)
	w.Write(r, "corrupt", errors.New("invalid character"), func(err error) { res <- err })
	select {
	case err := <-res:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("dead-letter write not done after 30s")
		return nil
	}
}

// readOne reads the only record of topic.
func readOne(t *testing.T, kb *testenv.Broker, topic string) *kgo.Record {
	t.Helper()
	cl := kb.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(64<<20), kgo.BrokerMaxReadBytes(128<<20))
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if recs := fs.Records(); len(recs) > 0 {
			if len(recs) != 1 {
				t.Fatalf("%d records in %s, want 1", len(recs), topic)
			}
			return recs[0]
		}
	}
	t.Fatalf("no record in %s", topic)
	return nil
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// source is a source record with a value of n random bytes (which do not
// compress: kfake checks max.message.bytes against the compressed batch).
func source(n int) *kgo.Record {
	v := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n)}).Read(v)
	return &kgo.Record{
		Topic: "events", Partition: 2, Offset: 77,
		Key:     []byte("the-key"),
		Value:   v,
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}},
	}
}

// recordSize is the size the record takes in a batch of its own, as this
// package counts it (an upper bound of the encoded size).
func recordSize(r *kgo.Record) int { return encodedSize(len(r.Key), len(r.Value), r.Headers) }

func TestLimitFromTopicConfig(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "3000000")
	w := newWriter(t, kb, "dlq", Options{})
	if n, src := w.MaxMessageBytes(); n != 3_000_000 || src != "topic max.message.bytes" {
		t.Fatalf("limit = %d (%s), want 3000000 from the topic", n, src)
	}
}

func TestLimitFromBrokerWhenTopicMissing(t *testing.T) {
	kb := testenv.Kafka(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2500000"}))
	var logs bytes.Buffer
	w := newWriter(t, kb, "not-yet", Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if n, src := w.MaxMessageBytes(); n != 2_500_000 || src != "broker message.max.bytes" {
		t.Fatalf("limit = %d (%s), want 2500000 from the broker", n, src)
	}
	if !strings.Contains(logs.String(), "topic not-yet does not exist") || !w.TopicMissing() {
		t.Fatalf("no warning about the missing topic (TopicMissing %v): %q", w.TopicMissing(), logs.String())
	}
	// A topic that does not set it has the broker's limit.
	createTopic(t, kb, "plain", "")
	if n, src := newWriter(t, kb, "plain", Options{}).MaxMessageBytes(); n != 2_500_000 {
		t.Fatalf("limit of a topic that does not set it = %d (%s), want the broker's 2500000", n, src)
	}
}

func TestLimitDefaultWhenUnreachable(t *testing.T) {
	old := describeTimeout
	describeTimeout = 500 * time.Millisecond
	t.Cleanup(func() { describeTimeout = old })
	var logs bytes.Buffer
	w, err := New(Options{
		Topic: "dlq", Opts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)))},
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatalf("New fails when the limit cannot be read: %v", err)
	}
	defer w.Close()
	if n, src := w.MaxMessageBytes(); n != DefaultMaxMessageBytes || src != "default" {
		t.Fatalf("limit = %d (%s), want the default %d", n, src, DefaultMaxMessageBytes)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("no warning: %q", logs.String())
	}
}

func TestLimitCapped(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", strconv.Itoa(200<<20))
	w := newWriter(t, kb, "dlq", Options{})
	if n, _ := w.MaxMessageBytes(); n != MaxMessageBytesCap {
		t.Fatalf("limit = %d, want the cap %d", n, MaxMessageBytesCap)
	}
}

// TestWholeAboveOldDefault: a record above franz-go's default batch limit
// but within the topic's (here the broker's default 1,048,588) is written
// whole.
func TestWholeAboveOldDefault(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "")
	w := newWriter(t, kb, "dlq", Options{})
	r := source(1_040_013 - len("the-key") - 20)
	if recordSize(r) <= oldBatchMax {
		t.Fatalf("test record of %d bytes is not above the old limit", recordSize(r))
	}
	if err := write(t, w, r); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := readOne(t, kb, "dlq")
	if !bytes.Equal(got.Value, r.Value) || !bytes.Equal(got.Key, r.Key) {
		t.Fatalf("value of %d bytes read back as %d bytes", len(r.Value), len(got.Value))
	}
	if _, ok := header(got, HeaderTruncated); ok {
		t.Fatal("whole record marked truncated")
	}
	for k, v := range map[string]string{HeaderTopic: "events", HeaderPartition: "2", HeaderOffset: "77", HeaderReason: "corrupt", "trace": "abc"} {
		if h, _ := header(got, k); h != v {
			t.Fatalf("header %s = %q, want %q", k, h, v)
		}
	}
}

// TestTruncated: a record above the topic's limit is written with its
// value cut, and headers say so; the broker (kfake enforces
// max.message.bytes) accepts it.
func TestTruncated(t *testing.T) {
	for _, c := range []struct {
		name, limit string
		value       int
	}{
		{"2MiB topic, 3MB record", strconv.Itoa(2 << 20), 3_000_000},
		{"default topic, 1.1MB record", "", 1_100_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			kb := testenv.Kafka(t)
			createTopic(t, kb, "dlq", c.limit)
			w := newWriter(t, kb, "dlq", Options{})
			limit, _ := w.MaxMessageBytes()
			r := source(c.value)
			if err := write(t, w, r); err != nil {
				t.Fatalf("write: %v", err)
			}
			got := readOne(t, kb, "dlq")
			if n := recordSize(got); n > int(limit) || n < int(limit)-64 {
				t.Fatalf("truncated record of %d bytes, want just under the limit %d", n, limit)
			}
			if !bytes.HasPrefix(r.Value, got.Value) || len(got.Value) >= len(r.Value) {
				t.Fatalf("value of %d bytes read back as %d bytes, not a prefix", len(r.Value), len(got.Value))
			}
			if !bytes.Equal(got.Key, r.Key) {
				t.Fatalf("key %q, want %q", got.Key, r.Key)
			}
			want := map[string]string{
				HeaderTruncated:         "true",
				HeaderOriginalValueSize: strconv.Itoa(c.value),
				HeaderTopic:             "events", HeaderPartition: "2", HeaderOffset: "77", "trace": "abc",
			}
			for k, v := range want {
				if h, _ := header(got, k); h != v {
					t.Fatalf("header %s = %q, want %q", k, h, v)
				}
			}
			orig, _ := header(got, HeaderOriginalSize)
			if n, _ := strconv.Atoi(orig); n <= recordSize(r) || n <= int(limit) {
				t.Fatalf("%s = %q, want the whole dead-letter record's size, above %d", HeaderOriginalSize, orig, recordSize(r))
			}
			if _, ok := header(got, HeaderKeyDropped); ok {
				t.Fatal("key dropped though it fits")
			}
		})
	}
}

// TestKeyAndHeadersDropped: with a key or source headers that do not fit
// the limit even without the value, they are left out and headers say so.
func TestKeyAndHeadersDropped(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "2000")
	w := newWriter(t, kb, "dlq", Options{})

	r := source(5000)
	r.Key = bytes.Repeat([]byte("k"), 3000)
	if err := write(t, w, r); err != nil {
		t.Fatalf("write with a large key: %v", err)
	}
	got := readOne(t, kb, "dlq")
	if len(got.Key) != 0 || recordSize(got) > 2000 {
		t.Fatalf("key of %d bytes, record of %d bytes", len(got.Key), recordSize(got))
	}
	if h, _ := header(got, HeaderKeyDropped); h != "3000" {
		t.Fatalf("%s = %q, want 3000", HeaderKeyDropped, h)
	}
	if h, _ := header(got, "trace"); h != "abc" {
		t.Fatal("source header dropped though it fits without the key")
	}
	if len(got.Value) == 0 {
		t.Fatal("no room left for any of the value")
	}

	kb2 := testenv.Kafka(t)
	createTopic(t, kb2, "dlq", "2000")
	w2 := newWriter(t, kb2, "dlq", Options{})
	r = source(10)
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: "big", Value: bytes.Repeat([]byte("h"), 3000)})
	if err := write(t, w2, r); err != nil {
		t.Fatalf("write with large headers: %v", err)
	}
	got = readOne(t, kb2, "dlq")
	if h, _ := header(got, HeaderHeadersDropped); h != "2" {
		t.Fatalf("%s = %q, want 2", HeaderHeadersDropped, h)
	}
	if _, ok := header(got, "big"); ok {
		t.Fatal("large source header kept")
	}
	if h, _ := header(got, HeaderOffset); h != "77" || recordSize(got) > 2000 {
		t.Fatalf("offset header %q, record of %d bytes", h, recordSize(got))
	}
}

// TestTooLargeNamesTheLimit: when the brokers reject a record (their limit
// is lower than the one in use), the error names the limit.
func TestTooLargeNamesTheLimit(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "100000")
	w := newWriter(t, kb, "dlq", Options{MaxMessageBytes: 200_000})
	err := write(t, w, source(150_000))
	if err == nil {
		t.Fatal("a record over the topic's real limit was written")
	}
	if !strings.Contains(err.Error(), "its max.message.bytes is lower than the 200000") {
		t.Fatalf("error does not name the limit: %v", err)
	}
	t.Log(err)
}

// TestBufferedBytesBounded: while the brokers do not acknowledge, the
// producer buffers at most MaxBufferedBytes of records; a write beyond it
// waits for room, fails with ErrFull after BufferWait, and goes through
// when room comes in time.
func TestBufferedBytesBounded(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "2000000")
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	c := kb.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	const bound = 4 << 20
	wait := 2 * time.Second
	w := newWriter(t, kb, "dlq", Options{MaxBufferedBytes: bound, BufferWait: wait})
	if got := w.MaxBufferedBytes(); got != bound {
		t.Fatalf("MaxBufferedBytes = %d, want %d", got, bound)
	}
	results := make(chan error, 8)
	writeAsync := func() time.Duration {
		start := time.Now()
		w.Write(source(1_000_000), "too_large", errors.New("record too large"), func(err error) { results <- err })
		if b := w.BufferedBytes(); b > bound {
			t.Fatalf("%d bytes buffered, more than the bound %d", b, bound)
		}
		return time.Since(start)
	}
	// Four records of 1 MB fit in 4 MiB, each buffered at once.
	for i := range 4 {
		if d := writeAsync(); d > wait/2 {
			t.Fatalf("write %d waited %v with room in the buffer", i+1, d)
		}
	}
	if b := w.BufferedBytes(); b < 4_000_000 {
		t.Fatalf("%d bytes buffered after four 1 MB records, want them all", b)
	}
	// The fifth does not fit: it waits, then fails.
	if d := writeAsync(); d < wait*9/10 {
		t.Fatalf("write over the bound returned after %v, want a wait of %v", d, wait)
	}
	select {
	case err := <-results:
		if !errors.Is(err, ErrFull) {
			t.Fatalf("write over the bound: %v, want ErrFull", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write over the bound not done")
	}
	// The sixth waits for room, which comes when the brokers answer, a
	// quarter into its wait.
	var opened atomic.Bool
	answer := time.AfterFunc(wait/4, func() { opened.Store(true); open() })
	defer answer.Stop()
	if d := writeAsync(); !opened.Load() {
		t.Fatalf("write over the bound returned after %v, before the brokers answered", d)
	}
	for i := range 5 {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("record %d: %v", i+1, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("record %d not acknowledged", i+1)
		}
	}
}

// TestTruncatedCopies: a cut dead-letter value is a copy, so a buffered
// dead-letter record does not hold the whole source value: the source
// value, changed while its cut copy waits for the broker, does not change
// what is written.
func TestTruncatedCopies(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dlq", "100000")
	release := make(chan struct{})
	c := kb.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	w := newWriter(t, kb, "dlq", Options{})
	r := source(3_000_000)
	want := bytes.Clone(r.Value)
	res := make(chan error, 1)
	w.Write(r, "too_large", errors.New("record too large"), func(err error) { res <- err })
	clear(r.Value)
	close(release)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	got := readOne(t, kb, "dlq")
	if len(got.Value) == 0 || len(got.Value) >= 100_000 || !bytes.Equal(got.Value, want[:len(got.Value)]) {
		t.Fatalf("dead-letter value of %d bytes is not the start of the source value as it was written", len(got.Value))
	}
}

// TestBufferBoundDerived: the default bound is 64 MiB, or twice the record
// size limit when that is more; a configured bound below the limit is
// raised to it.
func TestBufferBoundDerived(t *testing.T) {
	kb := testenv.Kafka(t)
	for _, c := range []struct {
		limit  int32
		buffer int
		want   int
	}{
		{1 << 20, 0, DefaultMaxBufferedBytes},
		{48 << 20, 0, 96 << 20},
		{8 << 20, 1 << 20, 8 << 20},
		{1 << 20, 5 << 20, 5 << 20},
	} {
		w := newWriter(t, kb, "dlq", Options{MaxMessageBytes: c.limit, MaxBufferedBytes: c.buffer})
		if got := w.MaxBufferedBytes(); got != c.want {
			t.Errorf("limit %d, configured %d: bound %d, want %d", c.limit, c.buffer, got, c.want)
		}
	}
}

// TestRecreatedTopicWritable: the dead-letter topic deleted and created
// again under a writer: the writes fail while it is missing, and once it
// exists again a write is acknowledged by the new topic within seconds,
// without a new writer.
func TestRecreatedTopicWritable(t *testing.T) {
	kb := testenv.Kafka(t)
	createTopic(t, kb, "dead", "")
	w := newWriter(t, kb, "dead", Options{})
	if err := write(t, w, source(10)); err != nil {
		t.Fatalf("first write: %v", err)
	}
	kb.DeleteTopic(t, "dead")
	createTopic(t, kb, "dead", "")
	start := time.Now()
	// Writes buffered together all end (the purge fails the others
	// buffered for the topic; nothing waits on itself).
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := make(chan error, 1)
			w.Write(source(10), "corrupt", errors.New("invalid character"), func(err error) { res <- err })
			select {
			case <-res:
			case <-time.After(30 * time.Second):
				t.Error("a concurrent dead-letter write not done after 30s")
			}
		}()
	}
	wg.Wait()
	var errs []string
	testenv.Eventually(t, "a write the recreated topic takes", time.Until(start.Add(30*time.Second)), func() error {
		err := write(t, w, source(10))
		if err != nil {
			errs = append(errs, err.Error())
			return fmt.Errorf("%d failures, last %w", len(errs), err)
		}
		return nil
	})
	t.Logf("written to the recreated topic %v after it was created, after %d failed writes: %v", time.Since(start).Round(time.Millisecond), len(errs), errs)
	if end := kb.EndOffsets(t, "dead")[0]; end < 1 {
		t.Fatalf("the new topic's end offset is %d after an acknowledged write", end)
	}
}
