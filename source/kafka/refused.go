package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/decode"
)

// Refused record batches. A batch that would decompress past
// source.kafka.max_decompressed_batch_bytes is not read (decompress.go):
// franz-go reports it as *kgo.ErrDecompressTooLarge and stops fetching its
// partition. Its records are not available, so the poll loop hands the
// handler one stand-in record for the whole batch, in offset order with
// the partition's other records: its offset is the batch's first, its
// value nil, and RefusedOf names the batch. The pipeline treats it as a
// record refused as too large (decode.ReasonTooLarge: skipped, dead-
// lettered or stopping the pipeline under on_error) whose acknowledgement
// covers the batch's offsets [First, Next). Under on_error skip or dlq the
// poll loop then moves the partition past the batch (SetOffsets); under
// fail it stays stopped at it.

// Headers of the stand-in record, copied into its dead-letter record.
const (
	HeaderBatchFirstOffset = "etl.batch.first_offset"
	HeaderBatchLastOffset  = "etl.batch.last_offset"
	HeaderBatchLimit       = "etl.batch.max_decompressed_bytes"
)

// RefusedBatch is a record batch that was not decompressed: it would
// decompress to more than Limit bytes.
type RefusedBatch struct {
	Topic       string
	Partition   int32
	First, Next int64 // the batch's offsets [First, Next)
	Limit       int64
}

func (b *RefusedBatch) Error() string {
	return fmt.Sprintf("record batch %s/%d offsets %d-%d decompresses to more than source.kafka.max_decompressed_batch_bytes (%d bytes): not read",
		b.Topic, b.Partition, b.First, b.Next-1, b.Limit)
}

// Err is the batch as a decode error of reason too_large.
func (b *RefusedBatch) Err() error {
	return &decode.Error{Reason: decode.ReasonTooLarge, Err: b}
}

type refusedKey struct{}

// RefusedOf returns the batch r stands for, or nil for a record fetched
// from Kafka. It costs nothing for records with a value.
func RefusedOf(r *kgo.Record) *RefusedBatch {
	if r.Value != nil || r.Context == nil {
		return nil
	}
	b, _ := r.Context.Value(refusedKey{}).(*RefusedBatch)
	return b
}

// RecordEnd is the offset after what r stands for: the record's next
// offset, or the end of a refused batch.
func RecordEnd(r *kgo.Record) int64 {
	if b := RefusedOf(r); b != nil {
		return b.Next
	}
	return r.Offset + 1
}

// standIn is the record handed over for b.
func standIn(b *RefusedBatch) *kgo.Record {
	return &kgo.Record{
		Topic: b.Topic, Partition: b.Partition, Offset: b.First, Timestamp: time.Now(),
		Context: context.WithValue(context.Background(), refusedKey{}, b),
		Headers: []kgo.RecordHeader{
			{Key: HeaderBatchFirstOffset, Value: strconv.AppendInt(nil, b.First, 10)},
			{Key: HeaderBatchLastOffset, Value: strconv.AppendInt(nil, b.Next-1, 10)},
			{Key: HeaderBatchLimit, Value: strconv.AppendInt(nil, b.Limit, 10)},
		},
	}
}

// refused handles a batch franz-go would not decompress: logged, counted,
// handed over as its stand-in record and, when the handler moves past
// refused batches, skipped by the client.
func (s *Source) refused(e *kgo.ErrDecompressTooLarge) {
	b := &RefusedBatch{Topic: e.Topic, Partition: e.Partition, First: e.Offset, Next: e.NextOffset, Limit: int64(s.decomp.max)}
	s.metrics.refused.WithLabelValues(b.Topic).Inc()
	then := "the partition stops at it (on_error: fail)"
	if s.o.SkipRefused {
		then = "its offsets go to on_error as too_large and the partition goes on after it"
	}
	s.log.Error("record batch refused: it decompresses past source.kafka.max_decompressed_batch_bytes; "+then,
		"topic", b.Topic, "partition", b.Partition, "first_offset", b.First, "last_offset", b.Next-1,
		"max_decompressed_batch_bytes", b.Limit)
	p := kgo.FetchTopicPartition{Topic: b.Topic, FetchPartition: kgo.FetchPartition{Partition: b.Partition, Records: []*kgo.Record{standIn(b)}}}
	s.o.Handler.Fetched(&p)
	if s.o.SkipRefused {
		s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{b.Topic: {b.Partition: {Epoch: e.Epoch, Offset: b.Next}}})
		s.pos.set(b.Topic, b.Partition, b.Next)
	}
}

func newRefused(topics []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_source_batches_refused_total",
		Help: "Record batches not read because they decompress past source.kafka.max_decompressed_batch_bytes, by topic; their offsets go to on_error as too_large. Each is logged at ERROR with the partition, offsets and limit.",
	}, []string{"topic"})
	for _, t := range topics {
		c.WithLabelValues(t)
	}
	return c
}
