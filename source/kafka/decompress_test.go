package kafka

import (
	"bytes"
	"compress/gzip"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
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
		// reader (the fallback of the direct path) keeps two blocks of up
		// to 4 MiB.
		if alloc > 16<<20 {
			t.Errorf("%s past the bound: allocated %d bytes refusing it, more than 16 MiB", name, alloc)
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
