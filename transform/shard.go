package transform

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"

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
// server holds them. Strings hash their bytes, FixedString(N) its N bytes
// (zero-padded); numbers, Bool, Enum, Date (UInt16 days), Date32 (Int32
// days), DateTime (UInt32 seconds), DateTime64 (Int64 ticks), IPv4 and the
// 128/256-bit integers hash the little-endian bytes of the value at the
// type's width. Nullable, Array, Map, Tuple, UUID and Decimal keys are not
// supported.
func KeyHasher(t *chunk.Type) (func(col chunk.Column, i int) uint64, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[int8]).Data[i]), 1) }, nil
	case chunk.KindUInt8:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[uint8]).Data[i]), 1) }, nil
	case chunk.KindBool:
		return func(c chunk.Column, i int) uint64 {
			return hashN(uint64(boolInt(c.(*chunk.Fixed[bool]).Data[i])), 1)
		}, nil
	case chunk.KindInt16:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[int16]).Data[i]), 2) }, nil
	case chunk.KindUInt16:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[uint16]).Data[i]), 2) }, nil
	case chunk.KindInt32:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[int32]).Data[i]), 4) }, nil
	case chunk.KindUInt32, chunk.KindIPv4:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[uint32]).Data[i]), 4) }, nil
	case chunk.KindInt64:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[int64]).Data[i]), 8) }, nil
	case chunk.KindUInt64:
		return func(c chunk.Column, i int) uint64 { return hashN(c.(*chunk.Fixed[uint64]).Data[i], 8) }, nil
	case chunk.KindFloat32:
		return func(c chunk.Column, i int) uint64 {
			return hashN(uint64(math.Float32bits(c.(*chunk.Fixed[float32]).Data[i])), 4)
		}, nil
	case chunk.KindFloat64:
		return func(c chunk.Column, i int) uint64 {
			return hashN(math.Float64bits(c.(*chunk.Fixed[float64]).Data[i]), 8)
		}, nil
	case chunk.KindDateTime:
		// The server holds a DateTime as UInt32 seconds.
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.Fixed[int64]).Data[i]), 4) }, nil
	case chunk.KindDate, chunk.KindDate32:
		width := 2
		if t.Kind == chunk.KindDate32 {
			width = 4
		}
		return func(c chunk.Column, i int) uint64 {
			days := floorDiv(c.(*chunk.Fixed[time.Time]).Data[i].Unix(), 86400)
			return hashN(uint64(days), width)
		}, nil
	case chunk.KindDateTime64:
		return func(c chunk.Column, i int) uint64 { return hashN(uint64(c.(*chunk.DateTime64).Data[i]), 8) }, nil
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		return func(c chunk.Column, i int) uint64 {
			b := c.(*chunk.BigInt)
			var buf [32]byte
			for k, w := range b.Data[i*b.Words : (i+1)*b.Words] {
				binary.LittleEndian.PutUint64(buf[8*k:], w)
			}
			return xxhash.Sum64(buf[:8*b.Words])
		}, nil
	case chunk.KindIPv6:
		return func(c chunk.Column, i int) uint64 {
			v := c.(*chunk.Fixed[[16]byte]).Data[i]
			return xxhash.Sum64(v[:])
		}, nil
	case chunk.KindString:
		return func(c chunk.Column, i int) uint64 { return xxhash.Sum64String(c.(*chunk.Strings).Value(i)) }, nil
	case chunk.KindFixedString:
		n := t.Len
		return func(c chunk.Column, i int) uint64 { return hashPadded(c.(*chunk.Strings).Value(i), n) }, nil
	case chunk.KindEnum8, chunk.KindEnum16:
		width := 1
		if t.Kind == chunk.KindEnum16 {
			width = 2
		}
		names := make([]string, 0, len(t.Enum))
		for n := range t.Enum {
			names = append(names, n)
		}
		sort.Strings(names)
		vals := make([]int16, len(names))
		for i, n := range names {
			vals[i] = t.Enum[n]
		}
		return func(c chunk.Column, i int) uint64 {
			s := c.(*chunk.Strings).Value(i)
			k := sort.SearchStrings(names, s)
			v := int16(0)
			if k < len(names) && names[k] == s {
				v = vals[k]
			}
			return hashN(uint64(v), width)
		}, nil
	}
	return nil, fmt.Errorf("a sharding key of type %s is not supported", t.Name)
}

// AppendKeyBytes appends to dst the bytes ClickHouse hashes for row i of
// col, a column of type t, when it computes xxHash64 (or murmurHash2_64,
// sipHash64, ...) of the value: what KeyHasher hashes.
func AppendKeyBytes(dst []byte, t *chunk.Type, col chunk.Column, i int) ([]byte, error) {
	t = t.Base()
	le := func(v uint64, n int) []byte {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		return append(dst, b[:n]...)
	}
	switch t.Kind {
	case chunk.KindInt8:
		return le(uint64(col.(*chunk.Fixed[int8]).Data[i]), 1), nil
	case chunk.KindUInt8:
		return le(uint64(col.(*chunk.Fixed[uint8]).Data[i]), 1), nil
	case chunk.KindBool:
		return le(uint64(boolInt(col.(*chunk.Fixed[bool]).Data[i])), 1), nil
	case chunk.KindInt16:
		return le(uint64(col.(*chunk.Fixed[int16]).Data[i]), 2), nil
	case chunk.KindUInt16:
		return le(uint64(col.(*chunk.Fixed[uint16]).Data[i]), 2), nil
	case chunk.KindInt32:
		return le(uint64(col.(*chunk.Fixed[int32]).Data[i]), 4), nil
	case chunk.KindUInt32, chunk.KindIPv4:
		return le(uint64(col.(*chunk.Fixed[uint32]).Data[i]), 4), nil
	case chunk.KindInt64:
		return le(uint64(col.(*chunk.Fixed[int64]).Data[i]), 8), nil
	case chunk.KindUInt64:
		return le(col.(*chunk.Fixed[uint64]).Data[i], 8), nil
	case chunk.KindFloat32:
		return le(uint64(math.Float32bits(col.(*chunk.Fixed[float32]).Data[i])), 4), nil
	case chunk.KindFloat64:
		return le(math.Float64bits(col.(*chunk.Fixed[float64]).Data[i]), 8), nil
	case chunk.KindDateTime:
		return le(uint64(col.(*chunk.Fixed[int64]).Data[i]), 4), nil
	case chunk.KindDate:
		return le(uint64(floorDiv(col.(*chunk.Fixed[time.Time]).Data[i].Unix(), 86400)), 2), nil
	case chunk.KindDate32:
		return le(uint64(floorDiv(col.(*chunk.Fixed[time.Time]).Data[i].Unix(), 86400)), 4), nil
	case chunk.KindDateTime64:
		return le(uint64(col.(*chunk.DateTime64).Data[i]), 8), nil
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		b := col.(*chunk.BigInt)
		for _, w := range b.Data[i*b.Words : (i+1)*b.Words] {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
		return dst, nil
	case chunk.KindIPv6:
		v := col.(*chunk.Fixed[[16]byte]).Data[i]
		return append(dst, v[:]...), nil
	case chunk.KindString:
		return append(dst, col.(*chunk.Strings).Value(i)...), nil
	case chunk.KindFixedString:
		s := col.(*chunk.Strings).Value(i)
		if len(s) > t.Len {
			s = s[:t.Len]
		}
		dst = append(dst, s...)
		for range t.Len - len(s) {
			dst = append(dst, 0)
		}
		return dst, nil
	case chunk.KindEnum8, chunk.KindEnum16:
		v := t.Enum[col.(*chunk.Strings).Value(i)]
		if t.Kind == chunk.KindEnum8 {
			return le(uint64(v), 1), nil
		}
		return le(uint64(v), 2), nil
	}
	return dst, fmt.Errorf("a sharding key of type %s is not supported", t.Name)
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
