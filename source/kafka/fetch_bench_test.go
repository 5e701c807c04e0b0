package kafka

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/gen"
)

// BenchmarkFetchFloor is the floor of the fetch stage: franz-go's own
// processing of a fetched partition (kgo.ProcessFetchPartition: each
// batch's CRC32C, its decompression, the records parsed into kgo.Records),
// on batches of 1,000 of gen's 6-column JSON records, as `etl gen`
// produces them, for each codec. No network and no broker: what is left of
// the fetch stage in a run (scripts/stages.sh) beyond this is the
// client's I/O and bookkeeping. One op is one record. The /source
// variants use the source's decompressor (decompressor: lz4 read block by
// block into one buffer).
func BenchmarkFetchFloor(b *testing.B) {
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16
	}{
		{"none", kgo.NoCompression(), 0},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	decs := []struct {
		name string
		dec  kgo.Decompressor
	}{{"", kgo.DefaultDecompressor()}, {"/source", newDecompressor()}}
	const batches, perBatch = 10, 1000
	for _, c := range codecs {
		for _, d := range decs {
			b.Run(c.name+d.name, func(b *testing.B) {
				comp, err := kgo.DefaultCompressor(c.codec)
				if err != nil {
					b.Fatal(err)
				}
				var raw []byte
				var value int
				for i := range batches {
					batch, n := benchBatch(b, comp, c.attr, int64(i*perBatch), perBatch)
					raw = append(raw, batch...)
					value += n
				}
				rp := &kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: batches * perBatch, RecordBatches: raw}
				dec := d.dec
				opts := kgo.ProcessFetchPartitionOpts{Topic: "events"}
				b.SetBytes(int64(value) / (batches * perBatch))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batches * perBatch {
					fp, _ := kgo.ProcessFetchPartition(opts, rp, dec, nil)
					if fp.Err != nil || len(fp.Records) != batches*perBatch {
						b.Fatalf("%d records, err %v", len(fp.Records), fp.Err)
					}
				}
			})
		}
	}
}

// benchBatch returns a v2 record batch of n of gen's JSON records from
// offset base, its records compressed by comp (codec attr), and the bytes
// of their values.
func benchBatch(b *testing.B, comp kgo.Compressor, attr int16, base int64, n int) ([]byte, int) {
	var recs []byte
	value := 0
	for i := range n {
		id := uint64(base) + uint64(i)
		r := kmsg.Record{OffsetDelta: int32(i), Key: strconv.AppendUint(nil, id, 10), Value: gen.Make(1, id).AppendJSON(nil)}
		value += len(r.Value)
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 takes one byte
		recs = r.AppendTo(recs)
	}
	if attr != 0 {
		var buf bytes.Buffer
		out, _ := comp.Compress(&buf, recs)
		recs = append([]byte(nil), out...)
	}
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attr, LastOffsetDelta: int32(n - 1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: recs}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "events"},
		&kmsg.FetchResponseTopicPartition{RecordBatches: out, HighWatermark: base + int64(n)}, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil || len(fp.Records) != n || string(fp.Records[n-1].Value) != string(gen.Make(1, uint64(base)+uint64(n-1)).AppendJSON(nil)) {
		b.Fatalf("the batch does not read back: %d records, err %v", len(fp.Records), fp.Err)
	}
	return out, value
}
