package kafka

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decompressor is franz-go's default decompressor with a direct path for
// lz4 batches: each block of the frame is decompressed straight into a
// reused scratch buffer, and the batch is copied out of it once. The default
// streams the frame through a reader into a buffer and copies the result
// out, and checks the frame's xxHash checksums: on batches of small JSON
// records that costs about as much as the decompression itself
// (BenchmarkFetchFloor/lz4).
//
// The frame's checksums are not checked: the batch's CRC-32C, which
// franz-go checks before decompressing, covers every byte of the frame.
// Anything the direct path does not read (the legacy frame, a dictionary,
// dependent blocks, bytes after the frame, a block that does not
// decompress) goes to the bounded lz4 reader, which decides; a batch
// past the bound is refused with kgo.ErrMaxDecompress (decompress.go).
type decompressor struct {
	def kgo.Decompressor
	max int // the most a batch may decompress to (max_decompressed_batch_bytes)
	// scratch holds the buffers lz4 frames are decompressed into, at most
	// scratchBuffers of at most maxScratch bytes each (a larger one is
	// left to the garbage collector). A free list rather than a
	// sync.Pool: the pool is emptied by garbage collections, which are
	// frequent under a fast fetch, and the buffer would be grown again.
	scratch chan []byte
	direct  atomic.Int64 // lz4 frames the direct path read (tests)

	// The bounded decoders (decompress.go), made on first use.
	poolOnce                    sync.Once
	gzipPool, lz4Pool, zstdPool sync.Pool

	// room, when set, is the in-flight budget's room: the budget less
	// what is in flight. What the client holds decompressed is bounded by
	// it (decompress.go).
	room     func() int64
	mu       sync.Mutex
	reserved int64 // bounds of the batches being decompressed now
	held     int64 // decompressed bytes the client holds, not yet polled
	byNode   map[int32]*heldBytes
	peak     int64        // the most held and reserved at once (tests)
	deferred atomic.Int64 // batches deferred for want of room
}

const (
	scratchBuffers = 2
	maxScratch     = 4 << 20
)

// maxDecompressBytes is franz-go's default bound on a batch's decompressed
// size (kgo.MaxDecompressBatchBytes), the bound of a source built without
// max_decompressed_batch_bytes.
const maxDecompressBytes = 1 << 30

func newDecompressor() *decompressor {
	return &decompressor{def: kgo.DefaultDecompressor(), max: maxDecompressBytes, scratch: make(chan []byte, scratchBuffers)}
}

func (d *decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	if codec == kgo.CodecNone {
		return src, nil
	}
	d.pools()
	bound, ok := d.reserve()
	if !ok {
		d.deferred.Add(1)
		return nil, errDeferred
	}
	defer d.unreserve(bound)
	out, err := d.decompress(src, codec, bound)
	if errors.Is(err, kgo.ErrMaxDecompress) && bound < d.max {
		d.deferred.Add(1)
		return nil, errDeferred
	}
	return out, err
}

func (d *decompressor) decompress(src []byte, codec kgo.CompressionCodecType, bound int) ([]byte, error) {
	if codec == kgo.CodecLz4 {
		var buf []byte
		select {
		case buf = <-d.scratch:
		default:
		}
		out, buf, ok := lz4Frame(src, buf, bound)
		if cap(buf) <= maxScratch {
			select {
			case d.scratch <- buf[:0]:
			default:
			}
		}
		if ok {
			d.direct.Add(1)
			return out, nil
		}
	}
	return d.bounded(src, codec, bound)
}

const (
	lz4Magic       = 0x184D2204
	lz4FlagVersion = 0xC0 // FLG bits 7-6: the version, 01
	lz4FlagIndep   = 0x20 // blocks are independent
	lz4FlagBlockCk = 0x10 // each block is followed by its checksum
	lz4FlagSize    = 0x08 // the descriptor holds the content size
	lz4FlagDict    = 0x01 // the descriptor holds a dictionary id
	lz4Uncompr     = 0x80000000
)

// lz4Frame decompresses the LZ4 frame src into scratch, grown as needed,
// and returns a copy of its exact size and the scratch buffer, or reports
// false for anything it does not read.
func lz4Frame(src, scratch []byte, max int) (out, buf []byte, ok bool) {
	buf = scratch[:0]
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4Magic {
		return nil, buf, false
	}
	flg, bd := src[4], src[5]
	if flg&lz4FlagVersion != 0x40 || flg&lz4FlagIndep == 0 || flg&(lz4FlagDict|0x02) != 0 || bd&0x8F != 0 {
		return nil, buf, false
	}
	id := int(bd >> 4 & 7)
	if id < 4 {
		return nil, buf, false
	}
	blockMax := 1 << (8 + 2*id) // 4: 64 KiB, 5: 256 KiB, 6: 1 MiB, 7: 4 MiB
	p := 6
	if flg&lz4FlagSize != 0 {
		p += 8
	}
	p++ // the descriptor's checksum
	blockCk := 0
	if flg&lz4FlagBlockCk != 0 {
		blockCk = 4
	}
	endCk := 0
	if flg&0x04 != 0 { // the content checksum follows the end mark
		endCk = 4
	}

	for {
		if p+4 > len(src) {
			return nil, buf, false
		}
		n := binary.LittleEndian.Uint32(src[p:])
		p += 4
		if n == 0 {
			break
		}
		size := int(n &^ lz4Uncompr)
		if size > len(src)-p-blockCk || size > blockMax {
			return nil, buf, false
		}
		block := src[p : p+size]
		p += size + blockCk
		if n&lz4Uncompr != 0 {
			buf = append(buf, block...)
		} else {
			// At most the room left under the bound (and one byte more,
			// to see a block go past it): a block that does not fit is
			// left to the bounded reader, which refuses it.
			room := min(blockMax, max-len(buf)+1)
			buf = slices.Grow(buf, room)
			got, err := lz4.UncompressBlock(block, buf[len(buf):len(buf)+room])
			if err != nil {
				return nil, buf, false
			}
			buf = buf[:len(buf)+got]
		}
		if len(buf) > max {
			return nil, buf, false // the default reports the batch too large
		}
	}
	if p+endCk != len(src) || flg&lz4FlagSize != 0 && binary.LittleEndian.Uint64(src[6:]) != uint64(len(buf)) {
		return nil, buf, false
	}
	return slices.Clone(buf), buf, true
}
