package transform

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/etl-project/etl/chunk"
)

// ShardOf picks the shard of a row whose sharding key hashes to hash, as
// ClickHouse's Distributed engine does: the remainder of hash divided by
// the sum of the weights falls in shard i's range, the ranges laid out in
// shard order, each as long as its shard's weight. Shards of weight 0 get
// no rows. With no positive weight it returns 0.
func ShardOf(hash uint64, weights []int) int {
	total := uint64(0)
	for _, w := range weights {
		if w > 0 {
			total += uint64(w)
		}
	}
	if total == 0 {
		return 0
	}
	x := hash % total
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		if x < uint64(w) {
			return i
		}
		x -= uint64(w)
	}
	return len(weights) - 1
}

// KeyHasher returns the function computing ClickHouse's xxHash64(col) (seed
// 0) of row i of a column of type t: the hash of the value's bytes as the
// server holds them (chunk.KeyOf). Strings hash their bytes, FixedString(N)
// its N bytes (zero-padded); numbers, Bool, Enum, Date (UInt16 days), Date32
// (Int32 days), DateTime (UInt32 seconds), DateTime64 (Int64 ticks), IPv4
// and the 128/256-bit integers hash the little-endian bytes of the value at
// the type's width. Nullable, Array, Map, Tuple, UUID and Decimal keys are
// not supported.
func KeyHasher(t *chunk.Type) (func(col chunk.Column, i int) uint64, error) {
	k, ok := chunk.KeyOf(t)
	if !ok {
		return nil, fmt.Errorf("a sharding key of type %s is not supported", t.Name)
	}
	switch {
	case k.Width > 0:
		bits, width := k.Bits, k.Width
		return func(c chunk.Column, i int) uint64 { return hashN(bits(c, i), width) }, nil
	case k.Words != nil:
		words := k.Words
		return func(c chunk.Column, i int) uint64 {
			var buf [32]byte
			ws := words(c, i)
			for j, w := range ws {
				binary.LittleEndian.PutUint64(buf[8*j:], w)
			}
			return xxhash.Sum64(buf[:8*len(ws)])
		}, nil
	case k.Pad > 0:
		text, n := k.Text, k.Pad
		return func(c chunk.Column, i int) uint64 { return hashPadded(text(c, i), n) }, nil
	}
	text := k.Text
	return func(c chunk.Column, i int) uint64 { return xxhash.Sum64String(text(c, i)) }, nil
}

// AppendKeyBytes appends to dst the bytes ClickHouse hashes for row i of
// col, a column of type t, when it computes xxHash64 (or murmurHash2_64,
// sipHash64, ...) of the value: what KeyHasher hashes.
func AppendKeyBytes(dst []byte, t *chunk.Type, col chunk.Column, i int) ([]byte, error) {
	k, ok := chunk.KeyOf(t)
	if !ok {
		return dst, fmt.Errorf("a sharding key of type %s is not supported", t.Name)
	}
	switch {
	case k.Width > 0:
		return binary.LittleEndian.AppendUint64(dst, k.Bits(col, i))[:len(dst)+k.Width], nil
	case k.Words != nil:
		for _, w := range k.Words(col, i) {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
		return dst, nil
	}
	s := k.Text(col, i)
	dst = append(dst, s...)
	for range k.Pad - len(s) {
		dst = append(dst, 0)
	}
	return dst, nil
}

// KeyHash is ClickHouse's xxHash64 of row i of col, a column of type t
// (see KeyHasher).
func KeyHash(t *chunk.Type, col chunk.Column, i int) (uint64, error) {
	h, err := KeyHasher(t)
	if err != nil {
		return 0, err
	}
	return h(col, i), nil
}

// hashN is the xxHash64 of the n low bytes of v, little-endian.
func hashN(v uint64, n int) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return xxhash.Sum64(b[:n])
}

// hashPadded is the xxHash64 of s padded with zero bytes to n.
func hashPadded(s string, n int) uint64 {
	if len(s) >= n {
		return xxhash.Sum64String(s[:n])
	}
	if n <= 64 {
		var b [64]byte
		copy(b[:], s)
		return xxhash.Sum64(b[:n])
	}
	var d xxhash.Digest
	d.Reset()
	d.WriteString(s)
	var zero [64]byte
	for k := n - len(s); k > 0; k -= 64 {
		d.Write(zero[:min(k, 64)])
	}
	return d.Sum64()
}
