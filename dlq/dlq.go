// Package dlq writes records that cannot be decoded to a dead-letter Kafka
// topic, with the reason and their source position in headers.
package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Header names added to every dead-letter record.
const (
	HeaderError     = "etl.error"
	HeaderReason    = "etl.error.reason"
	HeaderTopic     = "etl.source.topic"
	HeaderPartition = "etl.source.partition"
	HeaderOffset    = "etl.source.offset"
	HeaderPipeline  = "etl.pipeline"
)

// Header names added to a dead-letter record that was cut to fit the
// dead-letter topic's max.message.bytes.
const (
	// HeaderTruncated is "true" on a record whose value was cut.
	HeaderTruncated = "etl.truncated"
	// HeaderOriginalSize is the encoded size in bytes the whole
	// dead-letter record would have had.
	HeaderOriginalSize = "etl.original.size"
	// HeaderOriginalValueSize is the original value's length in bytes.
	HeaderOriginalValueSize = "etl.original.value.size"
	// HeaderKeyDropped is the original key's length in bytes, present when
	// the key was left out because it did not fit with the headers.
	HeaderKeyDropped = "etl.truncated.key"
	// HeaderHeadersDropped is the number of the source record's headers
	// left out, present when even without the key they did not fit.
	HeaderHeadersDropped = "etl.truncated.headers"
)

// ErrTopicMissing is the dead-letter topic not existing when New read its
// configuration.
var ErrTopicMissing = errors.New("does not exist")

// ErrFull is returned by Write when the producer's buffer stayed full for
// BufferWait: the dead-letter brokers are not acknowledging.
var ErrFull = errors.New("dead-letter buffer full: the dead-letter topic's brokers are not acknowledging")

// Bounds of what the producer buffers.
const (
	// DefaultMaxBufferedBytes is the least the producer may buffer, in
	// record bytes (keys, values and headers), before Write waits.
	// The bound in use is the larger of it and twice the record size
	// limit, so that a record of the largest size can wait for the
	// broker while the next one is buffered.
	DefaultMaxBufferedBytes = 64 << 20
	// BufferWait is how long Write waits for room in a full buffer before
	// it fails with ErrFull.
	BufferWait = 30 * time.Second
)

// Limits of the dead-letter record size.
const (
	// DefaultMaxMessageBytes is the limit used when the dead-letter topic's
	// max.message.bytes (or the broker's message.max.bytes) cannot be read
	// at startup. It is below Kafka's default of 1,048,588.
	DefaultMaxMessageBytes = 1 << 20
	// MaxMessageBytesCap bounds the limit read from the topic: larger
	// dead-letter records are truncated to it. It is below the broker's
	// default socket.request.max.bytes (100 MiB) and franz-go's default
	// BrokerMaxWriteBytes.
	MaxMessageBytesCap = 64 << 20
	// minMessageBytes is franz-go's smallest allowed batch limit.
	minMessageBytes = 512
)

// describeTimeout bounds reading the limit at startup.
var describeTimeout = 10 * time.Second

// Options configures a Writer.
type Options struct {
	Topic, Pipeline string
	// Opts are the client options: brokers, TLS, SASL.
	Opts []kgo.Opt
	// Registerer receives etl_dlq_records_total; nil registers nothing.
	Registerer prometheus.Registerer
	// Log receives the warning when the topic's limit cannot be read; nil
	// logs to slog.Default().
	Log *slog.Logger
	// MaxMessageBytes, when > 0, is used as the dead-letter topic's
	// max.message.bytes instead of reading it from the brokers.
	MaxMessageBytes int32
	// MaxBufferedBytes, when > 0, bounds the record bytes the producer
	// buffers instead of the default (DefaultMaxBufferedBytes, or twice the
	// record size limit when larger); it is raised to the record size
	// limit when below it, so that every record fits.
	MaxBufferedBytes int
	// BufferWait, when > 0, replaces BufferWait (tests).
	BufferWait time.Duration
}

// Writer produces dead-letter records asynchronously. It is safe for
// concurrent use.
type Writer struct {
	cl       *kgo.Client
	topic    string
	pipeline []byte
	limit    int32  // the record batch limit given to the producer
	source   string // where limit comes from, for error messages
	maxBuf   int    // the bound of buffered record bytes
	wait     time.Duration
	written  prometheus.Counter
	failed   prometheus.Counter
	missing  bool  // the topic did not exist at New
	denied   error // the brokers said at New that this client may not write to the topic
}

// FailedCounter is etl_dlq_errors_total.
func (w *Writer) FailedCounter() prometheus.Counter { return w.failed }

// TopicMissing reports whether the dead-letter topic did not exist when
// New read its configuration.
func (w *Writer) TopicMissing() bool { return w.missing }

// WriteDenied is the brokers' answer, when New asked, that this client may
// not write to the dead-letter topic (wrapping ErrWriteDenied), or nil when
// they allowed it or did not say.
func (w *Writer) WriteDenied() error { return w.denied }

// maxBuffered bounds the dead-letter records waiting for the broker.
const maxBuffered = 100_000

// New builds the producer. It reads the dead-letter topic's
// max.message.bytes (falling back to the broker's message.max.bytes) once,
// waiting at most 10 s; when that fails it logs a warning and assumes
// DefaultMaxMessageBytes. It never fails because of it.
func New(o Options) (*Writer, error) {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	limit, source := o.MaxMessageBytes, "configured"
	missing := false
	if limit <= 0 {
		var err error
		limit, source, err = readLimit(o.Topic, o.Opts)
		missing = errors.Is(err, ErrTopicMissing)
		if err != nil {
			log.Warn("dead-letter topic's max.message.bytes not read; larger dead-letter records are truncated to the limit used instead",
				"topic", o.Topic, "limit", limit, "from", source, "err", err)
		}
	}
	if limit > MaxMessageBytesCap {
		limit, source = MaxMessageBytesCap, source+", capped"
	}
	limit = max(limit, minMessageBytes)
	maxBuf := o.MaxBufferedBytes
	if maxBuf <= 0 {
		maxBuf = max(DefaultMaxBufferedBytes, 2*int(limit))
	}
	maxBuf = max(maxBuf, int(limit))
	wait := o.BufferWait
	if wait <= 0 {
		wait = BufferWait
	}
	opts := append([]kgo.Opt{
		kgo.DefaultProduceTopic(o.Topic),
		kgo.MaxBufferedRecords(maxBuffered),
		kgo.MaxBufferedBytes(maxBuf),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, o.Opts...)
	// After o.Opts: the batch limit is the topic's, and the connection
	// write limit must hold one full batch.
	opts = append(opts,
		kgo.ProducerBatchMaxBytes(limit),
		kgo.BrokerMaxWriteBytes(max(100<<20, limit+64<<10)),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter client: %w", err)
	}
	var denied error
	if !missing {
		ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
		err := checkWrite(ctx, cl, o.Topic)
		cancel()
		switch {
		case errors.Is(err, ErrWriteDenied):
			denied = err
		case err != nil:
			log.Warn("could not ask the brokers whether the dead-letter topic can be written", "topic", o.Topic, "err", err)
		}
	}
	w := &Writer{
		cl: cl, topic: o.Topic, pipeline: []byte(o.Pipeline), limit: limit, source: source, maxBuf: maxBuf, wait: wait, missing: missing, denied: denied,
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_dlq_records_total", Help: "Records written to the dead-letter topic and acknowledged by its brokers.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_dlq_errors_total", Help: "Dead-letter writes that failed (the pipeline retries them with backoff, not committing past their records).",
		}),
	}
	if o.Registerer != nil {
		buffered := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "etl_dlq_buffered_bytes", Help: "Record bytes (keys, values, headers) of dead-letter records waiting for the brokers.",
		}, func() float64 { return float64(cl.BufferedProduceBytes()) })
		bound := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "etl_dlq_buffer_max_bytes", Help: "The most record bytes the dead-letter producer buffers before a write waits.",
		}, func() float64 { return float64(maxBuf) })
		o.Registerer.MustRegister(w.written, w.failed, buffered, bound)
	}
	return w, nil
}

// MaxMessageBytes is the dead-letter record batch limit in use and where it
// comes from ("topic max.message.bytes", "broker message.max.bytes",
// "default", "configured", possibly ", capped").
func (w *Writer) MaxMessageBytes() (int32, string) { return w.limit, w.source }

// MaxBufferedBytes is the bound of the record bytes the producer buffers.
func (w *Writer) MaxBufferedBytes() int { return w.maxBuf }

// BufferedBytes is the record bytes buffered now.
func (w *Writer) BufferedBytes() int64 { return w.cl.BufferedProduceBytes() }

// readLimit reads topic's max.message.bytes, or the broker's
// message.max.bytes when the topic does not set it or does not exist yet.
// On error it returns DefaultMaxMessageBytes with the error.
func readLimit(topic string, opts []kgo.Opt) (int32, string, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return DefaultMaxMessageBytes, "default", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()

	// The topic's value counts when the topic sets it; otherwise it is
	// the broker's default (as Kafka reports it) and the broker's own
	// message.max.bytes is read, the topic's value kept in case that fails.
	var (
		topicErr     error
		inherited    int32
		hasInherited bool
	)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err == nil {
		var rc kadm.ResourceConfig
		if rc, err = rcs.On(topic, nil); err == nil {
			err = rc.Err
		}
	}
	switch {
	case err == nil:
		v, src, ok, perr := configValue(rcs[0].Configs, "max.message.bytes")
		switch {
		case perr != nil:
			return DefaultMaxMessageBytes, "default", perr
		case ok && (src == kmsg.ConfigSourceDynamicTopicConfig || src == kmsg.ConfigSourceUnknown):
			return v, "topic max.message.bytes", nil
		case ok:
			inherited, hasInherited = v, true
		}
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		topicErr = fmt.Errorf("topic %s %w", topic, ErrTopicMissing)
	default:
		return DefaultMaxMessageBytes, "default", fmt.Errorf("describe topic %s: %w", topic, err)
	}

	v, ok, err := brokerLimit(ctx, adm)
	switch {
	case (err != nil || !ok) && hasInherited:
		return inherited, "topic max.message.bytes", nil
	case err != nil:
		return DefaultMaxMessageBytes, "default", errors.Join(topicErr, err)
	case !ok:
		return DefaultMaxMessageBytes, "default", errors.Join(topicErr, errors.New("neither the topic nor the broker sets a message size limit"))
	}
	// A topic that does not exist yet is created with the broker's limit:
	// use it, but say so.
	return v, "broker message.max.bytes", topicErr
}

// brokerLimit reads message.max.bytes of one broker of the cluster.
func brokerLimit(ctx context.Context, adm *kadm.Client) (int32, bool, error) {
	bs, err := adm.ListBrokers(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("list brokers: %w", err)
	}
	if len(bs) == 0 {
		return 0, false, errors.New("no brokers in the metadata")
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, bs[0].NodeID)
	if err != nil {
		return 0, false, fmt.Errorf("describe broker %d: %w", bs[0].NodeID, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, false, fmt.Errorf("describe broker %d: %w", bs[0].NodeID, rc.Err)
		}
		if v, _, ok, err := configValue(rc.Configs, "message.max.bytes"); err != nil || ok {
			return v, ok, err
		}
	}
	return 0, false, nil
}

// configValue finds key in cs: its value, where it is defined and whether
// it is there.
func configValue(cs []kadm.Config, key string) (int32, kmsg.ConfigSource, bool, error) {
	for _, c := range cs {
		if c.Key != key || c.Value == nil {
			continue
		}
		n, err := strconv.ParseInt(*c.Value, 10, 32)
		if err != nil || n <= 0 {
			return 0, 0, false, fmt.Errorf("%s = %q is not a positive 32-bit number", key, *c.Value)
		}
		return int32(n), c.Source, true, nil
	}
	return 0, 0, false, nil
}

// Sizes of the encoded record batch, counted the way franz-go counts them
// (its batch overhead includes the 4-byte length before the batch, so it is
// 4 bytes above Kafka's 61) and with every varint at its widest.
const (
	batchOverhead  = 65
	recordOverhead = 5 + // length
		1 + // attributes
		10 + // timestamp delta
		5 + // offset delta
		5 + // key length
		5 + // value length
		5 // header count
	headerOverhead = 5 + 5 // key and value lengths
)

// encodedSize bounds the size of a batch holding only a record with the
// given key, value and headers.
func encodedSize(key, value int, hs []kgo.RecordHeader) int {
	n := batchOverhead + recordOverhead + key + value
	for _, h := range hs {
		n += headerOverhead + len(h.Key) + len(h.Value)
	}
	return n
}

// Write produces the dead-letter copy of r: its key, value and headers,
// plus headers naming the error, its reason, the source position and the
// pipeline. A copy larger than the dead-letter topic's max.message.bytes
// has its value cut to fit, with HeaderTruncated, HeaderOriginalSize and
// HeaderOriginalValueSize; when even the key and headers do not fit, the key
// is left out (HeaderKeyDropped), then the source record's headers
// (HeaderHeadersDropped). A cut value is a copy, so that the buffered
// record does not hold the whole source value.
//
// Write returns once the record is buffered. When the producer already
// buffers MaxBufferedBytes of records (or 100,000 records), it waits for
// room, at most BufferWait: the worker that rejected the record stops,
// which is backpressure. done is called once, from a client goroutine,
// with nil when the broker acknowledged the record, ErrFull when the
// buffer stayed full for BufferWait, or the error that made the client
// give up.
func (w *Writer) Write(r *kgo.Record, reason string, cause error, done func(error)) {
	own := []kgo.RecordHeader{
		{Key: HeaderError, Value: []byte(cause.Error())},
		{Key: HeaderReason, Value: []byte(reason)},
		{Key: HeaderTopic, Value: []byte(r.Topic)},
		{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		{Key: HeaderOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		{Key: HeaderPipeline, Value: w.pipeline},
	}
	h := make([]kgo.RecordHeader, 0, len(r.Headers)+len(own)+5)
	h = append(h, r.Headers...)
	h = append(h, own...)
	dl := &kgo.Record{Topic: w.topic, Key: r.Key, Value: r.Value, Headers: h}
	size := encodedSize(len(r.Key), len(r.Value), h)
	if size > int(w.limit) {
		w.truncate(dl, r, own, size)
	}
	// The context ends the wait for room only: once the record is
	// buffered the timer is stopped and the context never ends, so a
	// buffered record is not failed for waiting on the broker.
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(w.wait, cancel)
	defer timer.Stop()
	w.cl.Produce(ctx, dl, func(_ *kgo.Record, err error) {
		switch {
		case errors.Is(err, kgo.ErrMaxBuffered), errors.Is(err, context.Canceled):
			w.failed.Inc()
			done(ErrFull)
		case errors.Is(err, kerr.MessageTooLarge):
			w.failed.Inc()
			done(w.tooLarge(dl, err))
		case errors.Is(err, kerr.UnknownTopicID):
			w.failed.Inc()
			// The topic was deleted and created again (a new topic
			// ID): the client refuses the new topic until it forgets
			// the old one, and then produces to the new one.
			w.cl.PurgeTopicsFromProducing(w.topic)
			done(fmt.Errorf("dead-letter write to %s: %w (the topic was deleted, or deleted and created again: the next attempt writes to the new topic)", w.topic, err))
		case err != nil:
			w.failed.Inc()
			// The topic may have been deleted and created again (a new
			// topic ID): the next attempt must see it.
			w.cl.ForceMetadataRefresh()
			done(fmt.Errorf("dead-letter write to %s: %w", w.topic, err))
		default:
			w.written.Inc()
			done(nil)
		}
	})
}

// truncate cuts dl, the dead-letter copy of r, to fit w.limit: size is the
// size dl would have had.
func (w *Writer) truncate(dl, r *kgo.Record, own []kgo.RecordHeader, size int) {
	limit := int(w.limit)
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+len(own)+5)
	hs = append(hs, r.Headers...)
	hs = append(hs, own...)
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderTruncated, Value: []byte("true")},
		kgo.RecordHeader{Key: HeaderOriginalSize, Value: strconv.AppendInt(nil, int64(size), 10)},
		kgo.RecordHeader{Key: HeaderOriginalValueSize, Value: strconv.AppendInt(nil, int64(len(r.Value)), 10)},
	)
	key := r.Key
	if len(key) > 0 && encodedSize(len(key), 0, hs) > limit {
		key = nil
		hs = append(hs, kgo.RecordHeader{Key: HeaderKeyDropped, Value: strconv.AppendInt(nil, int64(len(r.Key)), 10)})
	}
	if len(r.Headers) > 0 && encodedSize(len(key), 0, hs) > limit {
		// Leave out the source record's headers, keep etl's own.
		hs = append(slices.Clone(hs[len(r.Headers):]),
			kgo.RecordHeader{Key: HeaderHeadersDropped, Value: strconv.AppendInt(nil, int64(len(r.Headers)), 10)})
	}
	if over := encodedSize(len(key), 0, hs) - limit; over > 0 {
		// Even etl's headers do not fit (a tiny limit): cut the error
		// text, the only one of them that can be long.
		for i := range hs {
			if hs[i].Key == HeaderError {
				hs[i].Value = hs[i].Value[:max(0, len(hs[i].Value)-over)]
				break
			}
		}
	}
	room := max(0, limit-encodedSize(len(key), 0, hs))
	dl.Key, dl.Value, dl.Headers = key, bytes.Clone(r.Value[:min(room, len(r.Value))]), hs
}

// tooLarge names the limit a dead-letter record was rejected for.
func (w *Writer) tooLarge(dl *kgo.Record, err error) error {
	size := encodedSize(len(dl.Key), len(dl.Value), dl.Headers)
	if size > int(w.limit) {
		return fmt.Errorf("dead-letter record of %d bytes exceeds the dead-letter topic %s's max.message.bytes %d (%s): %w",
			size, w.topic, w.limit, w.source, err)
	}
	return fmt.Errorf("dead-letter record of at most %d bytes rejected as too large by the brokers of the dead-letter topic %s: its max.message.bytes is lower than the %d in use (%s): %w",
		size, w.topic, w.limit, w.source, err)
}

// Flush waits until every buffered record is acknowledged or ctx ends.
func (w *Writer) Flush(ctx context.Context) error { return w.cl.Flush(ctx) }

// Close flushes briefly and closes the client.
func (w *Writer) Close() { w.cl.Close() }
