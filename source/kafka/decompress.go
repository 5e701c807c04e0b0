package kafka

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Decompression is bounded before it allocates, for every codec:
//
//   - per batch by source.kafka.max_decompressed_batch_bytes (the limit):
//     snappy's declared length (of each xerial chunk) and zstd's declared
//     frame content size are checked before anything is allocated; a zstd
//     frame without one, gzip and lz4 are read through a bound that stops
//     at the limit. A batch past it is refused with kgo.ErrMaxDecompress:
//     franz-go reports it as *kgo.ErrDecompressTooLarge and stops fetching
//     the partition until the poll loop moves past it (refused.go);
//   - in all by the in-flight budget: a batch is decompressed only into the
//     room the budget has left next to what is in flight and what the
//     client holds decompressed and not yet polled (room). A batch that
//     does not fit is deferred (errDeferred): franz-go returns the records
//     of the partition's batches before it and fetches it again later, or,
//     for the partition's first batch, reports the error, which the poll
//     loop ignores, and fetches it again. When the client holds nothing
//     decompressed, a batch up to the limit is read whatever the room, so
//     that fetching always makes progress.
//
// What the client holds decompressed is counted per broker from the batch
// hook (OnFetchBatchRead, right after the batch was decompressed) and
// released when that broker's next fetch response arrives (OnBrokerE2E):
// franz-go fetches from a broker again only once the poll loop took (or
// the client dropped) everything of its previous response. It is also
// released for partitions revoked or lost.

// errDeferred is a batch that does not fit in the room left: it is fetched
// again once the poll loop took what the client holds.
var errDeferred = errors.New("decompressed batch deferred: the in-flight budget has no room for it now")

// minRoom: with less room than this, a batch is deferred without being
// read.
const minRoom = 64 << 10

// heldBytes is what the client holds decompressed from one broker's
// latest fetch response.
type heldBytes struct {
	bytes int64
	parts map[topicPartition]int64
}

// reserve returns the most the next batch may decompress to, or false when
// it must be deferred without being read. The caller returns the
// reservation with unreserve.
func (d *decompressor) reserve() (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bound := d.max
	if total := d.reserved + d.held; total > 0 && d.room != nil {
		room := d.room() - total
		if room < minRoom {
			return 0, false
		}
		bound = int(min(int64(bound), room))
	}
	d.reserved += int64(bound)
	d.peak = max(d.peak, d.reserved+d.held)
	return bound, true
}

func (d *decompressor) unreserve(n int) {
	d.mu.Lock()
	d.reserved -= int64(n)
	d.mu.Unlock()
}

// batchRead counts a batch read from node's fetch response for tp:
// decompressed bytes the client now holds until node's next response.
func (d *decompressor) batchRead(node int32, tp topicPartition, m kgo.FetchBatchMetrics) {
	if m.CompressionType == 0 {
		return
	}
	n := int64(m.UncompressedBytes)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byNode == nil {
		d.byNode = map[int32]*heldBytes{}
	}
	h := d.byNode[node]
	if h == nil {
		h = &heldBytes{parts: map[topicPartition]int64{}}
		d.byNode[node] = h
	}
	h.bytes += n
	h.parts[tp] += n
	d.held += n
	d.peak = max(d.peak, d.reserved+d.held)
}

// responseRead is node's next fetch response arriving: what the client
// held of its previous one was polled or dropped.
func (d *decompressor) responseRead(node int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.byNode[node]; h != nil {
		d.held -= h.bytes
		delete(d.byNode, node)
	}
}

// dropParts releases what the client holds of partitions revoked or lost.
func (d *decompressor) dropParts(p Partitions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.byNode {
		for t, ps := range p {
			for _, part := range ps {
				tp := topicPartition{t, part}
				if n, ok := h.parts[tp]; ok {
					h.bytes -= n
					d.held -= n
					delete(h.parts, tp)
				}
			}
		}
	}
}

// Held is what the client holds decompressed and not yet polled, with the
// reservations of the batches being decompressed now.
func (d *decompressor) Held() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held + d.reserved
}

// bounded decompresses src of codec into at most bound bytes; past it,
// kgo.ErrMaxDecompress.
func (d *decompressor) bounded(src []byte, codec kgo.CompressionCodecType, bound int) ([]byte, error) {
	switch codec {
	case kgo.CodecSnappy:
		if err := snappyFits(src, bound); err != nil {
			return nil, err
		}
		return d.def.Decompress(src, codec)
	case kgo.CodecZstd:
		return d.zstd(src, bound)
	case kgo.CodecGzip:
		r := d.gzipPool.Get().(*gzip.Reader)
		defer d.gzipPool.Put(r)
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		return readBounded(r, bound)
	case kgo.CodecLz4:
		r := d.lz4Pool.Get().(*lz4.Reader)
		defer d.lz4Pool.Put(r)
		r.Reset(bytes.NewReader(src))
		return readBounded(r, bound)
	}
	return d.def.Decompress(src, codec) // unknown codecs: the default's error
}

// readBounded reads r to its end, at most bound bytes.
func readBounded(r io.Reader, bound int) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(bound)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(bound) {
		return nil, kgo.ErrMaxDecompress
	}
	return out.Bytes(), nil
}

var xerialMagic = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// snappyFits checks the decoded length snappy declares (per chunk of the
// xerial framing Java producers write) against bound, before the decoder
// allocates it.
func snappyFits(src []byte, bound int) error {
	if len(src) > 16 && bytes.HasPrefix(src, xerialMagic) {
		var total int64
		for rem := src[16:]; len(rem) >= 4; {
			size := int64(binary.BigEndian.Uint32(rem))
			rem = rem[4:]
			if size > int64(len(rem)) {
				return nil // malformed: the decoder reports it
			}
			l, err := s2.DecodedLen(rem[:size])
			if err != nil {
				return nil
			}
			if total += int64(l); total > int64(bound) {
				return kgo.ErrMaxDecompress
			}
			rem = rem[size:]
		}
		return nil
	}
	if l, err := s2.DecodedLen(src); err == nil && l > bound {
		return kgo.ErrMaxDecompress
	}
	return nil
}

// zstd decodes src: whole when its frame declares a content size within
// bound (a frame that outgrows its declaration is an error), streamed
// through the bound otherwise. The decoders refuse more than the limit in
// any case.
func (d *decompressor) zstd(src []byte, bound int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, err
	}
	dec := d.zstdPool.Get().(*zstd.Decoder)
	defer d.zstdPool.Put(dec)
	if h.HasFCS && !h.Skippable {
		if h.FrameContentSize > uint64(bound) {
			return nil, kgo.ErrMaxDecompress
		}
		out, err := dec.DecodeAll(src, make([]byte, 0, h.FrameContentSize))
		if zstdTooLarge(err) || err == nil && len(out) > bound {
			return nil, kgo.ErrMaxDecompress
		}
		return out, err
	}
	if err := dec.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	defer dec.Reset(nil) //nolint:errcheck // releases the source
	out, err := readBounded(dec, bound)
	if zstdTooLarge(err) {
		return nil, kgo.ErrMaxDecompress
	}
	return out, err
}

// zstdTooLarge: the frame outgrows the limit, or asks for a window larger
// than it.
func zstdTooLarge(err error) bool {
	return errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded)
}

// initPools makes the decoders' pools, bounded at limit.
func (d *decompressor) initPools(limit int) {
	d.gzipPool.New = func() any { return new(gzip.Reader) }
	d.lz4Pool.New = func() any { return lz4.NewReader(nil) }
	d.zstdPool.New = func() any {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderLowmem(true), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			panic(fmt.Sprintf("zstd decoder: %v", err)) // only for invalid options
		}
		return dec
	}
}

// poolsOnce guards pools of a decompressor built as a literal (tests).
func (d *decompressor) pools() {
	d.poolOnce.Do(func() { d.initPools(d.max) })
}
