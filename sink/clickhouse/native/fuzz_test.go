package native

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/etl-project/etl/chunk"
)

// FuzzNativeEncoder: the fuzz input picks a column type (its first byte),
// a number of chunks and of rows, and every value; the values are appended
// to the chunks' columns, the columns encoded with a Encoder and the
// bytes decoded with ch-go's column readers (proto), which must use every
// byte and give back each value appended. A value the encoder must refuse
// (a FixedString too long, a Decimal that does not parse or overflows, a
// UUID or Enum name that does not parse) makes Prepare return a
// *ValueError naming a chunk that holds such a value; any other
// value must be accepted.
//
// The expected value of a row is computed from what was appended, by the
// rules the driver follows (Decimal as shopspring/decimal parses it,
// truncated toward zero; UUID as google/uuid parses it; Date as the day of
// the value in its own zone; DateTime as the seconds truncated to 32
// bits, the zero time.Time as 0), not from the encoder's code.
func FuzzNativeEncoder(f *testing.F) {
	for i := range fuzzNativeTypes {
		f.Add([]byte{byte(i)})
		f.Add([]byte{byte(i), 3, 5, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0xff, 0x80, 0x7f})
		f.Add(append([]byte{byte(i), 1, 0x10}, bytes.Repeat([]byte{2, 0xc3, 0x28, 9}, 8)...))
	}
	// Many rows with distinct values: LowCardinality keys wider than a byte.
	for _, typ := range []string{"LowCardinality(String)", "LowCardinality(Nullable(String))", "LowCardinality(UInt32)"} {
		f.Add([]byte{byte(slices.Index(fuzzNativeTypes, typ)), 3, 0, 0x10, 0xff, 0x01, 0, 0x20, 0xff, 0x01, 0, 0x30, 0x2c, 0x01, 0, 0x40, 0x2c, 0x01})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		typ := fuzzNativeTypes[int(data[0])%len(fuzzNativeTypes)]
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatalf("ParseType(%s): %v", typ, err)
		}
		enc, err := NewEncoder(ty)
		if err != nil {
			t.Fatalf("NewEncoder(%s): %v", typ, err)
		}
		r := newFuzzBytes(data[1:])

		// The chunks: 1 to 4, of 0 to 7 rows each or, one time in 16, of
		// 100 to 400.
		nchunks := 1 + r.n(4)
		var cols []chunk.Column
		var want []any
		bad := map[int]bool{} // the chunks holding a value to refuse
		for k := range nchunks {
			rows := r.n(8)
			if r.byte()&0x0f == 0 {
				rows = 100 + r.n(301)
			}
			c, err := chunk.NewColumn(ty)
			if err != nil {
				t.Fatalf("NewColumn(%s): %v", typ, err)
			}
			for range rows {
				v, refuse := r.gen(ty, c)
				want = append(want, v)
				if refuse {
					bad[k] = true
				}
			}
			if c.Len() != rows {
				t.Fatalf("%s: chunk %d has %d rows, %d appended", typ, k, c.Len(), rows)
			}
			cols = append(cols, c)
		}

		err = enc.Prepare(cols)
		if len(bad) > 0 {
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("%s: Prepare accepted a value to refuse (chunks %v), error %v", typ, bad, err)
			}
			if !bad[ve.Chunk] || ve.Error() == "" {
				t.Fatalf("%s: Prepare's error names chunk %d (%q), the values to refuse are in chunks %v", typ, ve.Chunk, ve, bad)
			}
			enc.Release()
			return
		}
		if err != nil {
			t.Fatalf("%s: Prepare refused valid values: %v\nrows: %#v", typ, err, want)
		}
		if enc.Rows() != len(want) {
			t.Fatalf("%s: Rows() = %d, want %d", typ, enc.Rows(), len(want))
		}
		hint := enc.SizeHint()
		out := enc.AppendNative([]byte{0xee})
		if out[0] != 0xee {
			t.Fatalf("%s: AppendNative overwrote its input", typ)
		}
		out = out[1:]
		if len(out) > hint {
			t.Errorf("%s: %d bytes written, SizeHint %d", typ, len(out), hint)
		}
		enc.Release()

		// The scratch buffers kept after Release do not change the output.
		if err := enc.Prepare(cols); err != nil {
			t.Fatalf("%s: second Prepare: %v", typ, err)
		}
		again := enc.AppendNative(nil)
		enc.Release()
		if !bytes.Equal(again, out) {
			t.Fatalf("%s: a second encoding differs:\n%x\n%x", typ, out, again)
		}

		col := protoColumn(t, ty)
		pr := proto.NewReader(bytes.NewReader(out))
		if err := col.DecodeState(pr); err != nil {
			t.Fatalf("%s: ch-go reads the state prefix: %v\n%x", typ, err, out)
		}
		if err := col.DecodeColumn(pr, len(want)); err != nil {
			t.Fatalf("%s: ch-go reads %d rows: %v\n%x", typ, len(want), err, out)
		}
		if _, err := pr.ReadByte(); err == nil {
			t.Fatalf("%s: bytes left after %d rows:\n%x", typ, len(want), out)
		}
		for i, w := range want {
			if got := col.Row(i); !reflect.DeepEqual(got, w) {
				t.Fatalf("%s: row %d of %d: ch-go reads %#v, appended %#v", typ, i, len(want), got, w)
			}
		}
	})
}

// fuzzNativeTypes are the column types FuzzNativeEncoder writes; the first
// byte of an input picks one.
var fuzzNativeTypes = []string{
	"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
	"Float32", "Float64", "Bool", "String", "FixedString(4)",
	"Date", "Date32", "DateTime", "DateTime('UTC')", "DateTime64(3)", "DateTime64(9, 'UTC')",
	"Decimal(9, 2)", "Decimal(18, 4)", "Decimal(38, 10)", "Decimal(76, 20)", "Decimal32(0)",
	"UUID", "Enum8('a' = 1, 'b' = -128, 'c' = 127, '' = 0)", "Enum16('x' = -32768, 'y' = 32767, 'it\\'s' = 5)",
	"IPv4", "IPv6", "Int128", "UInt128", "Int256", "UInt256",
	"Nullable(Int32)", "Nullable(String)", "Nullable(FixedString(3))", "Nullable(UUID)",
	"Nullable(Decimal(18, 4))", "Nullable(Enum8('a' = 1, 'b' = 2))", "Nullable(Date)", "Nullable(Float64)",
	"Nullable(DateTime)", "Nullable(Int128)",
	"Array(Int64)", "Array(String)", "Array(Nullable(String))", "Array(Array(UInt8))", "Array(FixedString(2))",
	"Array(LowCardinality(String))", "Array(Decimal(9, 2))", "Array(Nullable(UUID))",
	"LowCardinality(String)", "LowCardinality(Nullable(String))", "LowCardinality(FixedString(3))",
	"LowCardinality(Nullable(FixedString(2)))", "LowCardinality(UInt32)", "LowCardinality(Date)",
	"LowCardinality(Nullable(Int64))",
	"Map(String, UInt64)", "Map(LowCardinality(String), Array(Nullable(Decimal(18, 4))))",
	"Map(UInt64, Tuple(String, Nullable(Int8)))",
	"Tuple(Int32, String)", "Tuple(a Nullable(Int32), b Decimal(9, 2), c DateTime('UTC'), d Enum8('a' = 1, 'b' = 2))",
	"Array(Tuple(a LowCardinality(String), b Nullable(UUID)))", "Nested(a UInt32, b String)",
}

// The decoded forms of values that are not plain Go values.
type (
	// nullVal is a NULL row; Zero is what its inner column holds there.
	nullVal struct{ Zero any }
	// tupleVal is a Tuple row.
	tupleVal []any
	// mapEntry is one entry of a Map row (a row is a []mapEntry).
	mapEntry struct{ K, V any }
)

// fuzzBytes reads the fuzz input; past its end it goes on with bytes from
// a generator seeded by the input, so that a short input can still stand
// for many rows.
type fuzzBytes struct {
	data  []byte
	state uint64
	seq   int // numbers distinct values
}

func newFuzzBytes(data []byte) *fuzzBytes {
	h := fnv.New64a()
	h.Write(data)
	return &fuzzBytes{data: data, state: h.Sum64()}
}

func (r *fuzzBytes) byte() byte {
	if len(r.data) > 0 {
		b := r.data[0]
		r.data = r.data[1:]
		return b
	}
	r.state = r.state*6364136223846793005 + 1442695040888963407
	return byte(r.state >> 56)
}

// n is a number in [0, k), k <= 65536.
func (r *fuzzBytes) n(k int) int {
	if k <= 256 {
		return int(r.byte()) % k
	}
	return (int(r.byte()) | int(r.byte())<<8) % k
}

func (r *fuzzBytes) u64() uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(r.byte()) << (8 * i)
	}
	return v
}

// bits is a value of n bits, often one at a bound: 0, all ones (the
// unsigned maximum, or -1), the signed minimum or maximum.
func (r *fuzzBytes) bits(n int) uint64 {
	mask := uint64(math.MaxUint64) >> (64 - n)
	switch r.byte() % 8 {
	case 0:
		return 0
	case 1:
		return mask
	case 2:
		return 1 << (n - 1)
	case 3:
		return 1<<(n-1) - 1
	case 4:
		return uint64(r.byte() % 4)
	}
	return r.u64() & mask
}

// str is a string: from a small set (for repeats), of random bytes
// (invalid UTF-8 too), distinct, or long (a two-byte length).
func (r *fuzzBytes) str(max int) string {
	switch r.byte() % 10 {
	case 0, 1, 2, 3:
		pool := []string{"", "a", "b", "\xff\xfe", "héllo", "a\x00b"}
		return pool[r.n(len(pool))]
	case 4, 5, 6:
		b := make([]byte, r.n(max+1))
		for i := range b {
			b[i] = r.byte()
		}
		return string(b)
	case 7, 8:
		r.seq++
		s := fmt.Sprint(r.seq)
		if len(s) > max {
			s = s[len(s)-max:]
		}
		return s
	}
	if max < 200 {
		return strings.Repeat("x", r.n(max+1))
	}
	return strings.Repeat("é", 64+r.n(200))
}

// decimalText is text for a Decimal: plain digits of any length, with an
// exponent, or bytes that may not parse.
func (r *fuzzBytes) decimalText() string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = '0' + r.byte()%10
		}
		return string(b)
	}
	sign := ""
	if r.byte()%3 == 0 {
		sign = "-"
	}
	switch r.byte() % 8 {
	case 0, 1, 2:
		return sign + digits(1+r.n(20))
	case 3, 4:
		return sign + digits(1+r.n(20)) + "." + digits(1+r.n(25))
	case 5:
		return sign + digits(1+r.n(80)) + "." + digits(r.n(30))
	case 6:
		return sign + digits(1+r.n(4)) + "e" + fmt.Sprint(r.n(60)-30)
	}
	const chars = "0123456789.-+eE x"
	b := make([]byte, r.n(7))
	for i := range b {
		b[i] = chars[r.n(len(chars))]
	}
	return string(b)
}

// uuidText is a UUID in one of the spellings google/uuid accepts, or text
// that may not parse.
func (r *fuzzBytes) uuidText() string {
	var u uuid.UUID
	for i := range u {
		u[i] = r.byte()
	}
	s := u.String()
	switch r.byte() % 8 {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return "urn:uuid:" + s
	case 2:
		return "{" + s + "}"
	case 3:
		return strings.ReplaceAll(s, "-", "")
	case 4:
		return s[:r.n(len(s))]
	case 5:
		return r.str(40)
	}
	return s
}

// gen appends a value of type t to c, a column of that type, and returns
// the value ch-go must read back, and whether Prepare must refuse it.
func (r *fuzzBytes) gen(t *chunk.Type, c chunk.Column) (want any, refuse bool) {
	switch t.Kind {
	case chunk.KindInt8:
		return appendFixed(c, int8(r.bits(8))), false
	case chunk.KindInt16:
		return appendFixed(c, int16(r.bits(16))), false
	case chunk.KindInt32:
		return appendFixed(c, int32(r.bits(32))), false
	case chunk.KindInt64:
		return appendFixed(c, int64(r.bits(64))), false
	case chunk.KindUInt8:
		return appendFixed(c, uint8(r.bits(8))), false
	case chunk.KindUInt16:
		return appendFixed(c, uint16(r.bits(16))), false
	case chunk.KindUInt32, chunk.KindIPv4:
		return appendFixed(c, uint32(r.bits(32))), false
	case chunk.KindUInt64:
		return appendFixed(c, r.bits(64)), false
	case chunk.KindFloat32:
		specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
			float32(math.Copysign(0, -1)), math.MaxFloat32, math.SmallestNonzeroFloat32}
		v := math.Float32frombits(uint32(r.bits(32)))
		if i := r.n(16); i < len(specials) {
			v = specials[i]
		}
		return math.Float32bits(appendFixed(c, v)), false
	case chunk.KindFloat64:
		specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1),
			math.MaxFloat64, math.SmallestNonzeroFloat64}
		v := math.Float64frombits(r.bits(64))
		if i := r.n(16); i < len(specials) {
			v = specials[i]
		}
		return math.Float64bits(appendFixed(c, v)), false
	case chunk.KindBool:
		return appendFixed(c, r.byte()&1 == 1), false
	case chunk.KindIPv6:
		var v [16]byte
		for i := range v {
			v[i] = r.byte()
		}
		return appendFixed(c, v), false
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		b := c.(*chunk.BigInt)
		words := make([]uint64, b.Words)
		for i := range words {
			words[i] = r.bits(64)
		}
		b.Append(words)
		return wordsText(words, b.Signed), false
	case chunk.KindDateTime:
		var v int64
		switch r.byte() % 8 {
		case 0:
			v = time.Time{}.Unix() // the driver writes the zero time as 0
		case 1:
			v = int64(r.u64()) // out of range: truncated to 32 bits
		default:
			v = int64(uint32(r.bits(32)))
		}
		appendFixed(c, v)
		if v == (time.Time{}).Unix() {
			return uint32(0), false
		}
		return uint32(v), false
	case chunk.KindDateTime64:
		d := c.(*chunk.DateTime64)
		v := int64(r.bits(64))
		d.Append(v)
		return v, false
	case chunk.KindDate, chunk.KindDate32:
		// A day, as midnight or a time of that day, in UTC or another
		// zone; the value is that day wherever the zone is.
		lo, span := 0, 65536
		if t.Kind == chunk.KindDate32 {
			lo, span = -25567, 25567+120530
		}
		day := lo + r.n(span)
		if r.byte()%8 == 0 {
			appendFixed(c, time.Time{})
			if t.Kind == chunk.KindDate {
				return uint16(0), false
			}
			return int32(0), false
		}
		zone := time.UTC
		if h := r.n(27) - 12; h != 0 {
			zone = time.FixedZone("z", h*3600)
		}
		midnight := time.Unix(int64(day)*86400, 0).UTC()
		local := time.Date(midnight.Year(), midnight.Month(), midnight.Day(), 0, 0, 0, 0, zone)
		if day >= 0 {
			local = local.Add(time.Duration(r.n(86400)) * time.Second)
		}
		appendFixed(c, local)
		if t.Kind == chunk.KindDate {
			return uint16(day), false
		}
		return int32(day), false
	case chunk.KindString:
		s := r.str(20)
		c.(*chunk.Strings).AppendString(s)
		return s, false
	case chunk.KindFixedString:
		s := r.str(t.Len + 2)
		c.(*chunk.Strings).AppendString(s)
		if len(s) > t.Len {
			return nil, true
		}
		return s + strings.Repeat("\x00", t.Len-len(s)), false
	case chunk.KindUUID:
		s := r.uuidText()
		c.(*chunk.Strings).AppendString(s)
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, true
		}
		return u, false
	case chunk.KindEnum8, chunk.KindEnum16:
		names := make([]string, 0, len(t.Enum)+1)
		for name := range t.Enum {
			names = append(names, name)
		}
		slices.Sort(names)
		names = append(names, "nope")
		s := names[r.n(len(names))]
		c.(*chunk.Strings).AppendString(s)
		v, ok := t.Enum[s]
		if !ok {
			return nil, true
		}
		if t.Kind == chunk.KindEnum8 {
			return int8(v), false
		}
		return v, false
	case chunk.KindDecimal:
		s := r.decimalText()
		c.(*chunk.Strings).AppendString(s)
		d, err := decimal.NewFromString(s)
		if err != nil {
			return nil, true
		}
		v := d.Shift(int32(t.Scale)).BigInt() // truncated toward zero
		bits := 8 * decimalWidth(t)
		limit := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		if v.Cmp(limit) >= 0 || v.Cmp(new(big.Int).Neg(limit)) < 0 {
			return nil, true
		}
		return v.String(), false
	case chunk.KindNullable:
		n := c.(*chunk.Nullable)
		if r.byte()%4 == 0 {
			n.AppendNull()
			return nullVal{zeroOf(t.Elem)}, false
		}
		v, refuse := r.gen(t.Elem, n.Inner)
		n.MarkValue()
		return v, refuse
	case chunk.KindLowCardinality:
		return r.gen(t.Elem, c)
	case chunk.KindArray:
		a := c.(*chunk.Array)
		var out []any
		refuse := false
		for range r.n(4) {
			v, bad := r.gen(t.Elem, a.Inner)
			out = append(out, v)
			refuse = refuse || bad
		}
		a.EndRow()
		return out, refuse
	case chunk.KindMap:
		m := c.(*chunk.Map)
		var out []mapEntry
		refuse := false
		for range r.n(4) {
			k, bad1 := r.gen(t.Key, m.Keys)
			v, bad2 := r.gen(t.Elem, m.Values)
			out = append(out, mapEntry{k, v})
			refuse = refuse || bad1 || bad2
		}
		m.EndRow()
		return out, refuse
	case chunk.KindTuple:
		tc := c.(*chunk.Tuple)
		out := make(tupleVal, len(t.Elems))
		refuse := false
		for j, et := range t.Elems {
			v, bad := r.gen(et, tc.Elems[j])
			out[j] = v
			refuse = refuse || bad
		}
		tc.EndRow()
		return out, refuse
	}
	panic(fmt.Sprintf("gen: type %s", t.Name))
}

func appendFixed[T any](c chunk.Column, v T) T {
	c.(*chunk.Fixed[T]).Append(v)
	return v
}

// decimalWidth is the byte width of Decimal(P, S) on the wire.
func decimalWidth(t *chunk.Type) int {
	switch {
	case t.Precision <= 9:
		return 4
	case t.Precision <= 18:
		return 8
	case t.Precision <= 38:
		return 16
	}
	return 32
}

// wordsText is the integer of little-endian two's complement 64-bit words,
// in decimal.
func wordsText(words []uint64, signed bool) string {
	v := new(big.Int)
	for i := len(words) - 1; i >= 0; i-- {
		v.Lsh(v, 64)
		v.Or(v, new(big.Int).SetUint64(words[i]))
	}
	if signed && words[len(words)-1]>>63 == 1 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(64*len(words))))
	}
	return v.String()
}

// zeroOf is what ch-go reads for the zero value of t (the inner value of
// a NULL row).
func zeroOf(t *chunk.Type) any {
	switch t.Kind {
	case chunk.KindInt8:
		return int8(0)
	case chunk.KindInt16:
		return int16(0)
	case chunk.KindInt32:
		return int32(0)
	case chunk.KindInt64:
		return int64(0)
	case chunk.KindUInt8:
		return uint8(0)
	case chunk.KindUInt16:
		return uint16(0)
	case chunk.KindUInt32, chunk.KindIPv4, chunk.KindDateTime, chunk.KindFloat32:
		return uint32(0)
	case chunk.KindUInt64, chunk.KindFloat64:
		return uint64(0)
	case chunk.KindBool:
		return false
	case chunk.KindIPv6:
		return [16]byte{}
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256, chunk.KindDecimal:
		return "0"
	case chunk.KindDateTime64:
		return int64(0)
	case chunk.KindDate:
		return uint16(0)
	case chunk.KindDate32:
		return int32(0)
	case chunk.KindString:
		return ""
	case chunk.KindFixedString:
		return strings.Repeat("\x00", t.Len)
	case chunk.KindUUID:
		return uuid.UUID{}
	case chunk.KindEnum8:
		return int8(0)
	case chunk.KindEnum16:
		return int16(0)
	}
	panic(fmt.Sprintf("zeroOf: type %s", t.Name))
}

// anyCol is a ch-go column whose rows are read as the values gen returns,
// so that ch-go's generic Array, Nullable, Map, Tuple and LowCardinality
// columns can hold any column.
type anyCol struct {
	proto.Column
	row func(i int) any
}

var (
	_ proto.ColumnOf[any] = (*anyCol)(nil)
	_ proto.StateDecoder  = (*anyCol)(nil)
)

func (c *anyCol) Row(i int) any     { return c.row(i) }
func (c *anyCol) Append(any)        { panic("anyCol is read-only") }
func (c *anyCol) AppendArr(v []any) { panic("anyCol is read-only") }

// DecodeState reads the state prefix of the column it wraps, if any.
func (c *anyCol) DecodeState(r *proto.Reader) error {
	if s, ok := c.Column.(proto.StateDecoder); ok {
		return s.DecodeState(r)
	}
	return nil
}

// lcEntry is a row of a LowCardinality(Nullable(T)) column as ch-go reads
// it: the dictionary row of its key (0 for NULL) and its value.
type lcEntry struct {
	key int
	v   any
}

// protoColumn is ch-go's column for t.
func protoColumn(tb testing.TB, t *chunk.Type) *anyCol {
	switch t.Kind {
	case chunk.KindInt8:
		c := new(proto.ColInt8)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindInt16:
		c := new(proto.ColInt16)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindInt32:
		c := new(proto.ColInt32)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindInt64:
		c := new(proto.ColInt64)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindUInt8:
		c := new(proto.ColUInt8)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindUInt16:
		c := new(proto.ColUInt16)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindUInt32:
		c := new(proto.ColUInt32)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindUInt64:
		c := new(proto.ColUInt64)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindFloat32:
		c := new(proto.ColFloat32)
		return &anyCol{c, func(i int) any { return math.Float32bits((*c)[i]) }}
	case chunk.KindFloat64:
		c := new(proto.ColFloat64)
		return &anyCol{c, func(i int) any { return math.Float64bits((*c)[i]) }}
	case chunk.KindBool:
		c := new(proto.ColBool)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindIPv4:
		c := new(proto.ColIPv4)
		return &anyCol{c, func(i int) any { return uint32((*c)[i]) }}
	case chunk.KindIPv6:
		c := new(proto.ColIPv6)
		return &anyCol{c, func(i int) any { return [16]byte((*c)[i]) }}
	case chunk.KindInt128:
		c := new(proto.ColInt128)
		return &anyCol{c, func(i int) any { v := (*c)[i]; return wordsText([]uint64{v.Low, v.High}, true) }}
	case chunk.KindUInt128:
		c := new(proto.ColUInt128)
		return &anyCol{c, func(i int) any { v := (*c)[i]; return wordsText([]uint64{v.Low, v.High}, false) }}
	case chunk.KindInt256:
		c := new(proto.ColInt256)
		return &anyCol{c, func(i int) any {
			v := (*c)[i]
			return wordsText([]uint64{v.Low.Low, v.Low.High, v.High.Low, v.High.High}, true)
		}}
	case chunk.KindUInt256:
		c := new(proto.ColUInt256)
		return &anyCol{c, func(i int) any {
			v := (*c)[i]
			return wordsText([]uint64{v.Low.Low, v.Low.High, v.High.Low, v.High.High}, false)
		}}
	case chunk.KindDateTime:
		c := new(proto.ColDateTime)
		return &anyCol{c, func(i int) any { return uint32(c.Data[i]) }}
	case chunk.KindDateTime64:
		c := new(proto.ColDateTime64)
		return &anyCol{c, func(i int) any { return int64(c.Data[i]) }}
	case chunk.KindDate:
		c := new(proto.ColDate)
		return &anyCol{c, func(i int) any { return uint16((*c)[i]) }}
	case chunk.KindDate32:
		c := new(proto.ColDate32)
		return &anyCol{c, func(i int) any { return int32((*c)[i]) }}
	case chunk.KindString:
		c := new(proto.ColStr)
		return &anyCol{c, func(i int) any { return c.Row(i) }}
	case chunk.KindFixedString:
		c := &proto.ColFixedStr{Size: t.Len}
		return &anyCol{c, func(i int) any { return string(c.Row(i)) }}
	case chunk.KindUUID:
		c := new(proto.ColUUID)
		return &anyCol{c, func(i int) any { return (*c)[i] }}
	case chunk.KindEnum8:
		c := new(proto.ColEnum8)
		return &anyCol{c, func(i int) any { return int8((*c)[i]) }}
	case chunk.KindEnum16:
		c := new(proto.ColEnum16)
		return &anyCol{c, func(i int) any { return int16((*c)[i]) }}
	case chunk.KindDecimal:
		switch decimalWidth(t) {
		case 4:
			c := new(proto.ColDecimal32)
			return &anyCol{c, func(i int) any { return fmt.Sprint(int32((*c)[i])) }}
		case 8:
			c := new(proto.ColDecimal64)
			return &anyCol{c, func(i int) any { return fmt.Sprint(int64((*c)[i])) }}
		case 16:
			c := new(proto.ColDecimal128)
			return &anyCol{c, func(i int) any { v := (*c)[i]; return wordsText([]uint64{v.Low, v.High}, true) }}
		}
		c := new(proto.ColDecimal256)
		return &anyCol{c, func(i int) any {
			v := (*c)[i]
			return wordsText([]uint64{v.Low.Low, v.Low.High, v.High.Low, v.High.High}, true)
		}}
	case chunk.KindNullable:
		c := proto.NewColNullable[any](protoColumn(tb, t.Elem))
		return &anyCol{c, func(i int) any {
			v := c.Row(i)
			if !v.Set {
				return nullVal{v.Value}
			}
			return v.Value
		}}
	case chunk.KindArray:
		c := proto.NewArray[any](protoColumn(tb, t.Elem))
		return &anyCol{c, func(i int) any { return c.Row(i) }}
	case chunk.KindMap:
		c := proto.NewMap[any, any](protoColumn(tb, t.Key), protoColumn(tb, t.Elem))
		return &anyCol{c, func(i int) any {
			var out []mapEntry
			for _, kv := range c.RowKV(i) {
				out = append(out, mapEntry{kv.Key, kv.Value})
			}
			return out
		}}
	case chunk.KindTuple:
		var elems []*anyCol
		var c proto.ColTuple
		for _, et := range t.Elems {
			e := protoColumn(tb, et)
			elems = append(elems, e)
			c = append(c, e)
		}
		return &anyCol{c, func(i int) any {
			out := make(tupleVal, len(elems))
			for j, e := range elems {
				out[j] = e.Row(i)
			}
			return out
		}}
	case chunk.KindLowCardinality:
		if t.Elem.Kind != chunk.KindNullable {
			c := proto.NewLowCardinality[any](protoColumn(tb, t.Elem))
			return &anyCol{c, func(i int) any { return c.Row(i) }}
		}
		// ch-go has no LowCardinality(Nullable(T)): its dictionary is of
		// T, and key 0 stands for NULL.
		dict := protoColumn(tb, t.Elem.Elem)
		keyed := &anyCol{dict, func(i int) any { return lcEntry{i, dict.Row(i)} }}
		c := proto.NewLowCardinality[any](keyed)
		return &anyCol{c, func(i int) any {
			e := c.Row(i).(lcEntry)
			if e.key == 0 {
				return nullVal{e.v}
			}
			return e.v
		}}
	}
	tb.Fatalf("no ch-go column for %s", t.Name)
	return nil
}
