package gen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceOptions configures Produce.
type ProduceOptions struct {
	// Topic to produce to; empty uses the client's default produce topic.
	Topic string
	// Seed and the ids Start, Start+1, ... select the records (Make).
	Seed  int64
	Start uint64
	// Count is how many records to produce; 0 means no bound by count.
	Count uint64
	// Rate limits production to this many records per second; 0 means as
	// fast as the client takes them.
	Rate int
	// Duration stops production after this long; 0 means no bound by time.
	// With Count and Duration both 0, Produce runs until ctx is done.
	Duration time.Duration
	// Partitions > 0 sends record id to partition id % Partitions, which
	// requires a client built with
	// kgo.RecordPartitioner(kgo.ManualPartitioner()). With 0 the record's
	// key (the decimal id) and the client's partitioner decide.
	Partitions int
	// TS is the form of the records' timestamps (TSMixed: each record's
	// TSFormOf).
	TS TSForm
	// NestedSchemaID, when not 0, makes the records the nested data set's
	// batches (MakeBatch, Batch.AppendAvro), Confluent-framed with this
	// schema id (NestedSchema's, registered by the caller), instead of
	// JSON events.
	NestedSchemaID int32
	// ProtobufSchemaID, when not 0, makes the records the nested data
	// set's batches in Protobuf (Batch.AppendProtobufConfluent) under this
	// schema id (ProtobufBatchSchema's, registered by the caller with its
	// reference). At most one of NestedSchemaID and ProtobufSchemaID is
	// set.
	ProtobufSchemaID int32
	// Progress, if set, is called from Produce's goroutine with the number
	// of records acknowledged so far, about every 1024 records sent and
	// once at the end.
	Progress func(acked uint64)
}

// progressEvery is how many records Produce sends between Progress calls.
const progressEvery = 1024

// Produce produces records Make(o.Seed, id) as JSON (Event.AppendJSON) for
// id = o.Start, o.Start+1, ... until o.Count records or o.Duration, and
// returns how many the brokers acknowledged.
//
// Records are produced asynchronously; how many are in flight is bounded by
// the client's kgo.MaxBufferedRecords (Produce blocks when it is reached).
// Produce returns only after every record it handed to the client was
// acknowledged or failed. The first failure stops production and is
// returned; so is ctx's error when ctx ends before the last record was
// sent.
func Produce(ctx context.Context, cl *kgo.Client, o ProduceOptions) (uint64, error) {
	if o.Rate < 0 || o.Partitions < 0 || o.Duration < 0 {
		return 0, fmt.Errorf("gen: produce: negative Rate, Partitions or Duration in %+v", o)
	}
	if o.NestedSchemaID != 0 && o.ProtobufSchemaID != 0 {
		return 0, errors.New("gen: produce: NestedSchemaID (Avro) and ProtobufSchemaID both set")
	}
	// stop ends the loop on the first failure; records already handed to
	// the client keep the caller's ctx, so they still complete and are
	// counted.
	stop, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		acked    atomic.Uint64
		wg       sync.WaitGroup
		failOnce sync.Once
		failErr  error
	)
	promise := func(r *kgo.Record, err error) {
		defer wg.Done()
		if err != nil {
			failOnce.Do(func() {
				failErr = fmt.Errorf("gen: produce record %s to %s/%d: %w", r.Key, r.Topic, r.Partition, err)
				cancel(failErr)
			})
			return
		}
		acked.Add(1)
	}

	start := time.Now()
	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}
	pace := time.NewTimer(time.Hour)
	defer pace.Stop()
loop:
	for i := uint64(0); o.Count == 0 || i < o.Count; i++ {
		if o.Rate > 0 {
			offset := time.Duration(float64(i) / float64(o.Rate) * float64(time.Second))
			if o.Duration > 0 && offset > o.Duration {
				break // due after the run ends, whatever the timers say
			}
			due := start.Add(offset)
			if wait := time.Until(due); wait > 0 {
				pace.Reset(wait)
				select {
				case <-pace.C:
				case <-deadline:
					break loop
				case <-stop.Done():
					break loop
				}
			}
		}
		select {
		case <-deadline:
			break loop
		case <-stop.Done():
			break loop
		default:
		}

		id := o.Start + i
		r := &kgo.Record{
			Topic: o.Topic,
			Key:   strconv.AppendUint(nil, id, 10),
		}
		switch {
		case o.NestedSchemaID != 0:
			r.Value = MakeBatch(o.Seed, id).AppendAvro(AppendConfluent(nil, o.NestedSchemaID))
		case o.ProtobufSchemaID != 0:
			r.Value = MakeBatch(o.Seed, id).AppendProtobufConfluent(nil, o.ProtobufSchemaID)
		default:
			r.Value = Make(o.Seed, id).AppendJSONTS(nil, o.TS)
		}
		if o.Partitions > 0 {
			r.Partition = int32(id % uint64(o.Partitions))
		}
		wg.Add(1)
		cl.Produce(ctx, r, promise)
		if o.Progress != nil && (i+1)%progressEvery == 0 {
			o.Progress(acked.Load())
		}
	}
	wg.Wait()
	if o.Progress != nil {
		o.Progress(acked.Load())
	}
	switch {
	case failErr != nil && (ctx.Err() == nil || !errors.Is(failErr, ctx.Err())):
		return acked.Load(), failErr
	case ctx.Err() != nil:
		// Records the client still held failed with ctx's error.
		return acked.Load(), fmt.Errorf("gen: produce stopped: %w", context.Cause(ctx))
	}
	return acked.Load(), nil
}
