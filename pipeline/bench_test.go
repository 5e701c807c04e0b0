package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/source/kafka"
)

// nullSink takes every chunk and acknowledges it at once.
type nullSink struct{ p *Pipeline }

func (s nullSink) TryEnqueue(c *chunk.Chunk) bool {
	s.p.acks.push([]*chunk.Chunk{c})
	return true
}

// BenchmarkPipelineNullSink is the pipeline's own ceiling on one core:
// fetched records handed to a lane, decoded into chunks by one worker,
// handed to a sink that acknowledges at once, acknowledgements applied to
// the tracker and chunks recycled. No Kafka, no ClickHouse.
func BenchmarkPipelineNullSink(b *testing.B) {
	p, dec := newBarePipeline(b, &nopSource{}, 64<<10)
	p.queue = nullSink{p}
	h := (*handler)(p)
	h.Assigned(context.Background(), kafka.Partitions{"events": {0}})
	l := p.lanes[TopicPartition{Topic: "events", Partition: 0}]

	// A poll's worth of records, reused with advancing offsets.
	const perPoll = 4096
	values := make([][]byte, perPoll)
	for i := range values {
		values[i] = gen.Make(1, uint64(i)).AppendJSON(nil)
	}
	recs := make([]*kgo.Record, perPoll)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Value: values[i]}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	offset := int64(0)
	for done := 0; done < b.N; done += perPoll {
		for i := range recs {
			recs[i].Offset = offset
			offset++
		}
		h.Fetched(&kgo.FetchTopicPartition{Topic: "events", FetchPartition: kgo.FetchPartition{Partition: 0, Records: recs}})
		p.runq.pop()
		l.start()
		p.process(l, dec)
		l.finish()
		p.processAcks()
	}
	el := time.Since(start)
	b.ReportMetric(float64(offset)/el.Seconds(), "rows/s")
	b.ReportMetric(float64(el.Nanoseconds())/float64(offset), "ns/row")
	if st, _ := p.tracker.Status(TopicPartition{Topic: "events", Partition: 0}); st.Watermark != offset {
		b.Fatalf("watermark %d, want %d", st.Watermark, offset)
	}
}
