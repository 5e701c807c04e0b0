package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/sink/clickhouse"
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
	benchNullSink(b, p, dec)
}

// BenchmarkPipelineNullSinkMeta is BenchmarkPipelineNullSink through the
// run's decoder setup, with (meta=2) and without (meta=0) two more
// columns filled from the records' metadata (_partition, _offset).
func BenchmarkPipelineNullSinkMeta(b *testing.B) {
	for _, extra := range []int{0, 2} {
		b.Run(fmt.Sprintf("meta=%d", extra), func(b *testing.B) {
			p, _ := newBarePipeline(b, &nopSource{}, 64<<10)
			base := p.sinks[0].target.Load().Schema
			s := &chunk.Schema{Names: slices.Clone(base.Names), Types: slices.Clone(base.Types)}
			srcs := slices.Clone(base.Names)
			if extra > 0 {
				s.Names = append(s.Names, "part", "off")
				srcs = append(srcs, meta.Partition, meta.Offset)
				for _, typ := range []string{"Int32", "Int64"} {
					ct, err := chunk.ParseType(typ)
					if err != nil {
						b.Fatal(err)
					}
					s.Types = append(s.Types, ct)
				}
			}
			benchNullSink(b, p, benchBind(b, p, s, srcs))
		})
	}
}

// BenchmarkPipelineNullSinkRaw is BenchmarkPipelineNullSink with
// decode.format raw: each value into one String column beside its
// partition and offset.
func BenchmarkPipelineNullSinkRaw(b *testing.B) {
	p, _ := newBarePipeline(b, &nopSource{}, 64<<10)
	p.cfg.Decode.Format = config.FormatRaw
	s := &chunk.Schema{Names: []string{"raw", "part", "off"}}
	for _, typ := range []string{"String", "Int32", "Int64"} {
		ct, err := chunk.ParseType(typ)
		if err != nil {
			b.Fatal(err)
		}
		s.Types = append(s.Types, ct)
	}
	benchNullSink(b, p, benchBind(b, p, s, []string{meta.Raw, meta.Partition, meta.Offset}))
}

// benchBind makes schema s, whose columns read srcs, p's table, and
// returns the decoder bound to it.
func benchBind(b *testing.B, p *Pipeline, s *chunk.Schema, srcs []string) *boundDecoder {
	t := &clickhouse.Target{Schema: s, Fields: srcs}
	p.sinks[0].target.Store(t)
	d, filler, err := p.newDecoderMeasured(t, decode.RowLimits{})
	if err != nil {
		b.Fatal(err)
	}
	return &boundDecoder{Decoder: d, target: t, meta: filler}
}

func benchNullSink(b *testing.B, p *Pipeline, dec *boundDecoder) {
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
