package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// lz4Payloads are batch contents of the shapes and sizes around lz4's
// block sizes: empty, tiny, JSON records, incompressible bytes, zeros.
func lz4Payloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	json := func(n int) []byte {
		var b []byte
		for i := uint64(0); len(b) < n; i++ {
			b = gen.Make(1, i).AppendJSON(b)
		}
		return b[:n]
	}
	p := map[string][]byte{"empty": {}, "one byte": {'x'}, "zeros 1M": make([]byte, 1<<20)}
	for _, n := range []int{100, 64<<10 - 1, 64 << 10, 64<<10 + 1, 300 << 10, 5 << 20} {
		p[fmt.Sprintf("json %d", n)] = json(n)
		p[fmt.Sprintf("random %d", n)] = random(n)
	}
	return p
}

// lz4Frames compresses b the ways producers do: franz-go's compressor, and
// lz4 writers with each block size, block and content checksums, and the
// content size in the header.
func lz4Frames(t testing.TB, b []byte) map[string][]byte {
	t.Helper()
	frames := map[string][]byte{}
	comp, err := kgo.DefaultCompressor(kgo.Lz4Compression())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := comp.Compress(new(bytes.Buffer), b)
	frames["franz-go"] = bytes.Clone(out)
	for _, o := range []struct {
		name string
		opts []lz4.Option
	}{
		{"64K", []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}},
		{"256K block checksums", []lz4.Option{lz4.BlockSizeOption(lz4.Block256Kb), lz4.BlockChecksumOption(true)}},
		{"1M no content checksum", []lz4.Option{lz4.BlockSizeOption(lz4.Block1Mb), lz4.ChecksumOption(false)}},
		{"4M with size", []lz4.Option{lz4.BlockSizeOption(lz4.Block4Mb), lz4.SizeOption(uint64(len(b)))}},
		{"level 9", []lz4.Option{lz4.CompressionLevelOption(lz4.Level9)}},
	} {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(o.opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		frames[o.name] = buf.Bytes()
	}
	return frames
}

// TestLZ4Frame checks the direct path on the frames producers write: it
// reads every one, to the same bytes as the default decompressor, with one
// decompressor whose scratch buffer is reused from frame to frame.
func TestLZ4Frame(t *testing.T) {
	d := newDecompressor()
	def := kgo.DefaultDecompressor()
	for name, b := range lz4Payloads() {
		for fname, frame := range lz4Frames(t, b) {
			if _, _, ok := lz4Frame(frame, nil, maxDecompressBytes); !ok {
				t.Errorf("%s, %s: the direct path does not read the frame", name, fname)
				continue
			}
			got, err := d.Decompress(frame, kgo.CodecLz4)
			if err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s, %s: %d bytes, err %v; want the %d bytes compressed", name, fname, len(got), err, len(b))
			}
			want, err := def.Decompress(frame, kgo.CodecLz4)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s, %s: differs from the default decompressor's (err %v)", name, fname, err)
			}
		}
	}
}

// TestLZ4FrameLeftToDefault checks what the direct path leaves to the
// default decompressor: frames it does not read come out as the default
// makes them, errors included.
func TestLZ4FrameLeftToDefault(t *testing.T) {
	b := lz4Payloads()["json 307200"]
	if len(b) == 0 {
		t.Fatal("no payload")
	}
	frame := lz4Frames(t, b)["64K"]
	d := newDecompressor()
	def := kgo.DefaultDecompressor()
	mod := func(f func([]byte) []byte) []byte { return f(bytes.Clone(frame)) }
	cases := map[string][]byte{
		"dependent blocks": mod(func(f []byte) []byte { f[4] &^= lz4FlagIndep; return f }),
		"dictionary id":    mod(func(f []byte) []byte { f[4] |= lz4FlagDict; return f }),
		"version 0":        mod(func(f []byte) []byte { f[4] &^= 0x40; return f }),
		"legacy magic":     mod(func(f []byte) []byte { binary.LittleEndian.PutUint32(f, 0x184C2102); return f }),
		"bytes after":      mod(func(f []byte) []byte { return append(f, 1, 2, 3) }),
		"truncated":        mod(func(f []byte) []byte { return f[:len(f)-9] }),
		"no end mark":      mod(func(f []byte) []byte { return f[:len(f)-8] }),
		"block too large":  mod(func(f []byte) []byte { binary.LittleEndian.PutUint32(f[7:], 64<<10+1); return f }),
		"corrupt block":    mod(func(f []byte) []byte { f[11] = 0xff; f[12] = 0xff; f[13] = 0xff; return f }),
		"garbage":          []byte("not an lz4 frame at all"),
	}
	for name, f := range cases {
		if _, _, ok := lz4Frame(f, nil, maxDecompressBytes); ok {
			t.Errorf("%s: the direct path read it", name)
		}
		got, err := d.Decompress(f, kgo.CodecLz4)
		want, wantErr := def.Decompress(f, kgo.CodecLz4)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, err %v; the default gives %d bytes, err %v", name, len(got), err, len(want), wantErr)
		}
	}
	// A batch past the bound is refused whatever its codec.
	small := &decompressor{def: kgo.DefaultDecompressor(), max: len(b) - 1, scratch: make(chan []byte, 1)}
	for name, f := range map[string][]byte{"lz4": frame, "snappy": snappyBlock(t, b)} {
		codec := map[string]kgo.CompressionCodecType{"lz4": kgo.CodecLz4, "snappy": kgo.CodecSnappy}[name]
		if out, err := small.Decompress(f, codec); !errors.Is(err, kgo.ErrMaxDecompress) {
			t.Errorf("%s past the bound: %d bytes, err %v; want kgo.ErrMaxDecompress", name, len(out), err)
		}
	}
	// Past the bound, the default decides (and reports the batch too
	// large when past its own).
	if _, _, ok := lz4Frame(frame, nil, len(b)-1); ok {
		t.Error("a frame past the bound was read")
	}
	if _, _, ok := lz4Frame(frame, nil, len(b)); !ok {
		t.Error("a frame at the bound was not read")
	}
}

// FuzzLZ4Frame: whatever the bytes, the direct path does not panic, stays
// within its bound, and agrees with the default decompressor whenever the
// default reads them (the default checks the frame's checksums, so its
// output is the frame's content).
func FuzzLZ4Frame(f *testing.F) {
	p := lz4Payloads()
	for _, name := range []string{"empty", "one byte", "json 100", "json 65537", "random 100"} {
		for _, frame := range lz4Frames(f, p[name]) {
			f.Add(frame)
		}
	}
	def := kgo.DefaultDecompressor()
	const max = 1 << 20
	f.Fuzz(func(t *testing.T, frame []byte) {
		out, _, ok := lz4Frame(frame, nil, max)
		if !ok {
			return
		}
		if len(out) > max {
			t.Fatalf("%d bytes past the bound", len(out))
		}
		if want, err := def.Decompress(frame, kgo.CodecLz4); err == nil && !bytes.Equal(out, want) {
			t.Fatalf("%d bytes; the default reads %d other bytes", len(out), len(want))
		}
	})
}

// valuesHandler keeps a copy of every record's value by offset.
type valuesHandler struct {
	assignedHandler
	mu     sync.Mutex
	values map[int64][]byte
}

func (h *valuesHandler) Fetched(p *kgo.FetchTopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range p.Records {
		h.values[r.Offset] = bytes.Clone(r.Value)
	}
}

// TestSourceReadsLZ4: a source reads lz4-compressed batches, of several
// blocks each, from a broker through its decompressor, every record's
// value as produced.
func TestSourceReadsLZ4(t *testing.T) {
	const n = 20_000
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	pr := kb.Client(t, kgo.ProducerBatchMaxBytes(512<<10), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.DefaultProduceTopic("events"), kgo.ProducerLinger(50*time.Millisecond))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: gen.Make(1, uint64(i)).AppendJSON(nil)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	h := &valuesHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 4)}, values: map[int64][]byte{}}
	s := runSource(t, kb.Addr(), "lz4", 16<<20, h)
	testenv.Eventually(t, "every record read", 30*time.Second, func() error {
		h.mu.Lock()
		got := len(h.values)
		h.mu.Unlock()
		if got < n {
			return fmt.Errorf("read %d of %d records", got, n)
		}
		return nil
	})
	if s.decomp.direct.Load() == 0 {
		t.Error("no batch went through the direct lz4 path")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range recs {
		if !bytes.Equal(h.values[int64(i)], r.Value) {
			t.Fatalf("offset %d: %q, produced %q", i, h.values[int64(i)], r.Value)
		}
	}
}

// snappyBlock compresses b as franz-go's producer does with snappy.
func snappyBlock(t *testing.T, b []byte) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(kgo.SnappyCompression())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := comp.Compress(new(bytes.Buffer), b)
	return bytes.Clone(out)
}

// TestLZ4Concurrent: franz-go decompresses the batches of several brokers
// at once through the one decompressor; its scratch buffers are never
// shared (run with -race).
func TestLZ4Concurrent(t *testing.T) {
	p := lz4Payloads()
	var frames, want [][]byte
	for _, name := range []string{"json 100", "json 65537", "json 307200", "random 65536", "zeros 1M"} {
		for _, f := range lz4Frames(t, p[name]) {
			frames, want = append(frames, f), append(want, p[name])
		}
	}
	d := newDecompressor()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				i := (g*7 + k*3) % len(frames)
				got, err := d.Decompress(frames[i], kgo.CodecLz4)
				if err != nil || !bytes.Equal(got, want[i]) {
					errs <- fmt.Errorf("frame %d: %d bytes, err %v; want %d bytes", i, len(got), err, len(want[i]))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d.direct.Load() == 0 {
		t.Error("no frame went through the direct path")
	}
}
