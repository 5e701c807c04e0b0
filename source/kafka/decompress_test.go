package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// bombs returns payload compressed the ways producers write it, by codec.
func bombs(t *testing.T, payload []byte) map[string]struct {
	codec kgo.CompressionCodecType
	src   []byte
} {
	t.Helper()
	out := map[string]struct {
		codec kgo.CompressionCodecType
		src   []byte
	}{}
	add := func(name string, codec kgo.CompressionCodecType, src []byte) {
		out[name] = struct {
			codec kgo.CompressionCodecType
			src   []byte
		}{codec, bytes.Clone(src)}
	}
	for name, c := range map[string]kgo.CompressionCodec{"franz-go gzip": kgo.GzipCompression(), "franz-go snappy": kgo.SnappyCompression(),
		"franz-go lz4": kgo.Lz4Compression(), "franz-go zstd": kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(c)
		if err != nil {
			t.Fatal(err)
		}
		src, codec := comp.Compress(new(bytes.Buffer), payload)
		add(name, codec, src)
	}
	// Streams that do not declare their size: zstd without a frame
	// content size, lz4 from a stream writer, snappy in Java's xerial
	// framing.
	var zb bytes.Buffer
	zw, err := zstd.NewWriter(&zb)
	if err != nil {
		t.Fatal(err)
	}
	for p := payload; len(p) > 0; p = p[min(len(p), 1<<20):] {
		if _, err := zw.Write(p[:min(len(p), 1<<20)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(zb.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("stream zstd frame: declares its size %v, err %v", h.HasFCS, err)
	}
	add("zstd stream", kgo.CodecZstd, zb.Bytes())
	var lb bytes.Buffer
	lw := lz4.NewWriter(&lb)
	if err := lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	add("lz4 stream", kgo.CodecLz4, lb.Bytes())
	var gb bytes.Buffer
	gw := gzip.NewWriter(&gb)
	gw.Write(payload) //nolint:errcheck // a bytes.Buffer
	gw.Close()        //nolint:errcheck
	add("gzip stream", kgo.CodecGzip, gb.Bytes())
	x := append([]byte{}, xerialMagic...)
	x = append(x, 0, 0, 0, 1, 0, 0, 0, 1)
	for p := payload; len(p) > 0; p = p[min(len(p), 32<<10):] {
		blk := s2.EncodeSnappy(nil, p[:min(len(p), 32<<10)])
		x = append(x, byte(len(blk)>>24), byte(len(blk)>>16), byte(len(blk)>>8), byte(len(blk)))
		x = append(x, blk...)
	}
	add("snappy xerial", kgo.CodecSnappy, x)
	return out
}

// TestDecompressBounded: for every codec and framing, a batch within the
// bound comes out whole, and a batch past it is refused with
// kgo.ErrMaxDecompress having allocated the bound and the decoder's state, not the batch:
// 64 MiB of 'x' against a 1 MiB bound.
func TestDecompressBounded(t *testing.T) {
	const bound = 1 << 20
	payload := bytes.Repeat([]byte("x"), 64<<20)
	for name, b := range bombs(t, payload) {
		d := newDecompressor()
		d.max = 128 << 20
		got, err := d.Decompress(b.src, b.codec)
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("%s within the bound: %d bytes, err %v", name, len(got), err)
		}
		got = nil
		d = newDecompressor()
		d.max = bound
		d.Decompress(b.src[:0], kgo.CodecNone) //nolint:errcheck // warms nothing; keeps d's pools out of the count
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, err := d.Decompress(b.src, b.codec)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if !errors.Is(err, kgo.ErrMaxDecompress) || out != nil {
			t.Errorf("%s past the bound: %d bytes, err %v; want kgo.ErrMaxDecompress", name, len(out), err)
		}
		// The decoders' own state comes on top of the bound: lz4's
		// reader (the fallback of the direct path) takes blocks of up to
		// 4 MiB, from pools a garbage collection may have emptied, and
		// measured 13–18 MiB in all. What matters is that the 64 MiB
		// batch is not taken.
		if alloc > 24<<20 {
			t.Errorf("%s past the bound: allocated %d bytes refusing it, more than 24 MiB", name, alloc)
		}
		t.Logf("%s: %d bytes compressed; refused after allocating %.1f MiB", name, len(b.src), float64(alloc)/(1<<20))
	}
}

// TestDecompressDeferred: a batch that does not fit in the budget's room
// next to what the client holds is deferred (not read, not refused), and
// read once the broker's next response shows the held bytes were polled;
// with nothing held, a batch up to the bound is read whatever the room.
func TestDecompressDeferred(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 2<<20)
	src := bombs(t, payload)["franz-go zstd"].src
	d := newDecompressor()
	d.max = 4 << 20
	room := int64(0)
	d.room = func() int64 { return room }
	if out, err := d.Decompress(src, kgo.CodecZstd); err != nil || len(out) != len(payload) {
		t.Fatalf("nothing held, no room: %d bytes, err %v; want the batch", len(out), err)
	}
	d.batchRead(1, topicPartition{"t", 0}, kgo.FetchBatchMetrics{UncompressedBytes: len(payload), CompressionType: 4})
	if d.Held() != int64(len(payload)) {
		t.Fatalf("held %d, want %d", d.Held(), len(payload))
	}
	room = 3 << 20 // 1 MiB left next to what is held
	if _, err := d.Decompress(src, kgo.CodecZstd); !errors.Is(err, errDeferred) {
		t.Fatalf("past the room: err %v, want errDeferred", err)
	}
	room = 0
	if _, err := d.Decompress(src, kgo.CodecZstd); !errors.Is(err, errDeferred) {
		t.Fatalf("no room: err %v, want errDeferred", err)
	}
	if d.deferred.Load() != 2 {
		t.Errorf("deferred %d, want 2", d.deferred.Load())
	}
	d.responseRead(2) // another broker: nothing of broker 1 released
	if d.Held() != int64(len(payload)) {
		t.Fatalf("held %d after another broker's response", d.Held())
	}
	d.responseRead(1)
	if d.Held() != 0 {
		t.Fatalf("held %d after the broker's next response, want 0", d.Held())
	}
	if out, err := d.Decompress(src, kgo.CodecZstd); err != nil || len(out) != len(payload) {
		t.Fatalf("after the release: %d bytes, err %v", len(out), err)
	}
	// Partitions revoked release what the client holds of them.
	d.batchRead(1, topicPartition{"t", 0}, kgo.FetchBatchMetrics{UncompressedBytes: 100, CompressionType: 4})
	d.batchRead(1, topicPartition{"t", 1}, kgo.FetchBatchMetrics{UncompressedBytes: 50, CompressionType: 4})
	d.batchRead(1, topicPartition{"t", 2}, kgo.FetchBatchMetrics{UncompressedBytes: 70}) // not compressed
	d.dropParts(Partitions{"t": {0}})
	if d.Held() != 50 {
		t.Fatalf("held %d after the revoke, want 50", d.Held())
	}
}

// countHandler counts the records handed over.
type countHandler struct {
	assignedHandler
	n atomic.Int64
}

func (h *countHandler) Fetched(p *kgo.FetchTopicPartition) { h.n.Add(int64(len(p.Records))) }

// TestSourceHoldsWithinRoom: many compressed batches, each under the
// bound, that a fetch response carries together (2 partitions of 8 zstd
// batches of 2 MB each, a few KB on the broker) are not all decompressed
// at once: what the client holds decompressed stays within the budget's
// room (6 MiB here), the batches that do not fit are deferred and fetched
// again, and every record is handed over.
func TestSourceHoldsWithinRoom(t *testing.T) {
	const (
		parts, batches, per = 2, 8, 20
		room                = 6 << 20
	)
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", parts)
	pr := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerLinger(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	val := bytes.Repeat([]byte("x"), 100_000)
	for p := range int32(parts) {
		for range batches {
			recs := make([]*kgo.Record, per)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "events", Partition: p, Value: val}
			}
			if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := &countHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 4)}}
	s, err := New(Options{Config: &config.Kafka{Brokers: []string{kb.Addr()}, Topics: []string{"events"}, GroupID: "held",
		StartOffset: "earliest", SessionTimeout: config.Duration(6 * time.Second), RebalanceTimeout: config.Duration(6 * time.Second),
		FetchMaxBytes: 16 << 20, FetchMaxPartitionBytes: 1 << 20, FetchMaxWait: config.Duration(100 * time.Millisecond)},
		Handler: h, Log: slog.Default(), MaxDecompressedBatchBytes: 4 << 20, Room: func() int64 { return room }})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	defer func() {
		stop()
		<-done
		s.Close()
	}()
	testenv.Eventually(t, "every record handed over", 30*time.Second, func() error {
		if got := h.n.Load(); got < parts*batches*per {
			return fmt.Errorf("%d of %d records handed over", got, parts*batches*per)
		}
		return nil
	})
	s.decomp.mu.Lock()
	peak := s.decomp.peak
	s.decomp.mu.Unlock()
	t.Logf("peak held %.1f MiB, %d batches deferred", float64(peak)/(1<<20), s.decomp.deferred.Load())
	if peak > room {
		t.Errorf("held %d bytes decompressed at once, more than the room of %d", peak, room)
	}
	if s.decomp.deferred.Load() == 0 {
		t.Error("no batch deferred: the response's batches all fit")
	}
}
