// Package dlq writes records that cannot be decoded to a dead-letter Kafka
// topic, with the reason and their source position in headers.
package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
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

// ErrFull is returned by Write when the producer's buffer is full: the
// dead-letter brokers are not acknowledging.
var ErrFull = errors.New("dead-letter buffer full: the dead-letter topic's brokers are not acknowledging")

// Options configures a Writer.
type Options struct {
	Topic, Pipeline string
	// Opts are the client options: brokers, TLS, SASL.
	Opts []kgo.Opt
	// Registerer receives etl_dlq_records_total; nil registers nothing.
	Registerer prometheus.Registerer
}

// Writer produces dead-letter records asynchronously. It is safe for
// concurrent use.
type Writer struct {
	cl       *kgo.Client
	topic    string
	pipeline []byte
	written  prometheus.Counter
	failed   prometheus.Counter
}

// maxBuffered bounds the dead-letter records waiting for the broker.
const maxBuffered = 100_000

// New builds the producer. It does not contact the brokers until the first
// Write.
func New(o Options) (*Writer, error) {
	opts := append([]kgo.Opt{
		kgo.DefaultProduceTopic(o.Topic),
		kgo.MaxBufferedRecords(maxBuffered),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, o.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter client: %w", err)
	}
	w := &Writer{
		cl: cl, topic: o.Topic, pipeline: []byte(o.Pipeline),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_dlq_records_total", Help: "Records written to the dead-letter topic and acknowledged by its brokers.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_dlq_errors_total", Help: "Dead-letter writes that failed for good (the pipeline stops).",
		}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(w.written, w.failed)
	}
	return w, nil
}

// Write produces the dead-letter copy of r: its key, value and headers,
// plus headers naming the error, its reason, the source position and the
// pipeline. It never blocks: done is called once, from a client goroutine,
// with nil when the broker acknowledged the record, ErrFull when too many
// dead-letter records were waiting, or the error that made the client give
// up.
func (w *Writer) Write(r *kgo.Record, reason string, cause error, done func(error)) {
	h := make([]kgo.RecordHeader, 0, len(r.Headers)+6)
	h = append(h, r.Headers...)
	h = append(h,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(cause.Error())},
		kgo.RecordHeader{Key: HeaderReason, Value: []byte(reason)},
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: HeaderOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		kgo.RecordHeader{Key: HeaderPipeline, Value: w.pipeline},
	)
	dl := &kgo.Record{Topic: w.topic, Key: r.Key, Value: r.Value, Headers: h}
	w.cl.TryProduce(context.Background(), dl, func(_ *kgo.Record, err error) {
		switch {
		case errors.Is(err, kgo.ErrMaxBuffered):
			w.failed.Inc()
			done(ErrFull)
		case err != nil:
			w.failed.Inc()
			done(fmt.Errorf("dead-letter write to %s: %w", w.topic, err))
		default:
			w.written.Inc()
			done(nil)
		}
	})
}

// Flush waits until every buffered record is acknowledged or ctx ends.
func (w *Writer) Flush(ctx context.Context) error { return w.cl.Flush(ctx) }

// Close flushes briefly and closes the client.
func (w *Writer) Close() { w.cl.Close() }
