package native

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// Hand-written Native bytes for the types ClickHouse 18.16 cannot create
// (Bool, Date32, DateTime64, IPv4, IPv6, the wide integers, Map) and for
// the composites: the encoder's output is checked against the wire format
// as ClickHouse documents it, independently of any other encoder.

// encode is the Native encoding of col, of type typ: its data, without a
// state prefix (none of these types has one).
func encode(t *testing.T, typ string, col chunk.Column) []byte {
	t.Helper()
	return nativeOf(t, typ, []chunk.Column{col})
}

// le builds little-endian bytes from fixed-size values.
func le(vs ...any) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func newCol(t *testing.T, typ string) chunk.Column {
	t.Helper()
	ty, err := chunk.ParseType(typ)
	if err != nil {
		t.Fatalf("ParseType(%q): %v", typ, err)
	}
	c, err := chunk.NewColumn(ty)
	if err != nil {
		t.Fatalf("NewColumn(%q): %v", typ, err)
	}
	return c
}

func checkBytes(t *testing.T, typ string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s encodes as\n%s\nwant\n%s", typ, hex.Dump(got), hex.Dump(want))
	}
}

func TestEncodeBool(t *testing.T) {
	c := newCol(t, "Bool").(*chunk.Fixed[bool])
	c.Append(true)
	c.Append(false)
	c.AppendDefault()
	checkBytes(t, "Bool", encode(t, "Bool", c), []byte{1, 0, 0})
}

func TestEncodeDate32(t *testing.T) {
	c := newCol(t, "Date32").(*chunk.Fixed[time.Time])
	for _, s := range []string{"1900-01-01", "1970-01-02", "2299-12-31", "1969-12-31"} {
		d, _ := time.Parse("2006-01-02", s)
		c.Append(d)
	}
	checkBytes(t, "Date32", encode(t, "Date32", c), le(int32(-25567), int32(1), int32(120529), int32(-1)))
}

func TestEncodeDateTime64(t *testing.T) {
	for _, typ := range []string{"DateTime64(3)", "DateTime64(0)", "DateTime64(6, 'Europe/Berlin')", "DateTime64(9)"} {
		c := newCol(t, typ).(*chunk.DateTime64)
		ticks := []int64{1, -1, 1700000000, -2208988800, 0}
		for _, v := range ticks {
			c.Append(v)
		}
		checkBytes(t, typ, encode(t, typ, c), le(ticks))
	}
	c := newCol(t, "DateTime64(3)").(*chunk.DateTime64)
	c.Append(-1)
	if got := c.Time(0); !got.Equal(time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)) {
		t.Errorf("Time(-1 ms) = %v", got)
	}
}

func TestEncodeIPv4(t *testing.T) {
	c := newCol(t, "IPv4").(*chunk.Fixed[uint32])
	c.Append(0x01020304) // 1.2.3.4
	c.AppendDefault()
	checkBytes(t, "IPv4", encode(t, "IPv4", c), []byte{4, 3, 2, 1, 0, 0, 0, 0})
}

func TestEncodeIPv6(t *testing.T) {
	c := newCol(t, "IPv6").(*chunk.Fixed[[16]byte])
	a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	c.Append(a)
	c.AppendDefault()
	checkBytes(t, "IPv6", encode(t, "IPv6", c), append(a[:], make([]byte, 16)...))
}

func TestEncodeBigInt(t *testing.T) {
	ff := ^uint64(0)
	cases := []struct {
		typ   string
		words [][]uint64
	}{
		{"Int128", [][]uint64{{1, 0}, {ff, ff}, {0, 1 << 63}, {ff, ff >> 1}, {0x0102030405060708, 0x1112131415161718}}},
		{"UInt128", [][]uint64{{1, 0}, {ff, ff}, {0, 1}}},
		{"Int256", [][]uint64{{1, 0, 0, 0}, {ff, ff, ff, ff}, {0, 0, 0, 1 << 63}, {5, 6, 7, 8}}},
		{"UInt256", [][]uint64{{ff, ff, ff, ff}, {0, 0, 0, 1}}},
	}
	for _, tc := range cases {
		c := newCol(t, tc.typ).(*chunk.BigInt)
		var want []uint64
		for _, w := range tc.words {
			c.Append(w)
			want = append(want, w...)
		}
		c.AppendDefault()
		want = append(want, make([]uint64, c.Words)...)
		checkBytes(t, tc.typ, encode(t, tc.typ, c), le(want))
	}
	c := newCol(t, "Int128").(*chunk.BigInt)
	c.Append([]uint64{ff - 41, ff})
	if got := c.Big(0).String(); got != "-42" {
		t.Errorf("Int128 -42 reads back as %s", got)
	}
}

func TestEncodeNullableArrayOfNewTypes(t *testing.T) {
	// Nullable(DateTime64(6)): null map, then the values (0 under NULL).
	n := newCol(t, "Nullable(DateTime64(6))").(*chunk.Nullable)
	n.Inner.(*chunk.DateTime64).Append(1500000)
	n.MarkValue()
	n.AppendNull()
	checkBytes(t, "Nullable(DateTime64(6))", encode(t, "Nullable(DateTime64(6))", n), append([]byte{0, 1}, le(int64(1500000), int64(0))...))

	// Array(Int256): offsets, then the values.
	a := newCol(t, "Array(Int256)").(*chunk.Array)
	a.Inner.(*chunk.BigInt).Append([]uint64{7, 0, 0, 0})
	a.Inner.(*chunk.BigInt).Append([]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
	a.EndRow()
	a.EndRow()
	checkBytes(t, "Array(Int256)", encode(t, "Array(Int256)", a), le(uint64(2), uint64(2), []uint64{7, 0, 0, 0}, []uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}))

	// Array(IPv6) and Nullable(Int128).
	ip := newCol(t, "Array(IPv6)").(*chunk.Array)
	ip.Inner.(*chunk.Fixed[[16]byte]).Append([16]byte{15: 9})
	ip.EndRow()
	checkBytes(t, "Array(IPv6)", encode(t, "Array(IPv6)", ip), append(append(le(uint64(1)), make([]byte, 15)...), 9))
	ni := newCol(t, "Nullable(Int128)").(*chunk.Nullable)
	ni.AppendNull()
	ni.Inner.(*chunk.BigInt).Append([]uint64{3, 0})
	ni.MarkValue()
	checkBytes(t, "Nullable(Int128)", encode(t, "Nullable(Int128)", ni), append([]byte{1, 0}, le([]uint64{0, 0, 3, 0})...))
}

// str is a String column's Native encoding of one value: a varint length,
// then the bytes.
func str(s string) []byte { return append([]byte{byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestEncodeMap: Map(K, V) in Native format is the offsets (UInt64, the
// end of each row), then the keys column, then the values column.
func TestEncodeMap(t *testing.T) {
	m := newCol(t, "Map(String, UInt64)").(*chunk.Map)
	put := func(k string, v uint64) {
		m.Keys.(*chunk.Strings).AppendString(k)
		m.Values.(*chunk.Fixed[uint64]).Append(v)
	}
	put("a", 1)
	put("b", 2)
	m.EndRow()
	m.AppendDefault() // {}
	put("c", 3)
	put("a", 4) // order and duplicate keys are kept
	m.EndRow()
	checkBytes(t, "Map(String, UInt64)", encode(t, "Map(String, UInt64)", m),
		cat(le(uint64(2), uint64(2), uint64(4)), str("a"), str("b"), str("c"), str("a"), le(uint64(1), uint64(2), uint64(3), uint64(4))))

	// Integer keys, Nullable values: the null map comes before the values.
	n := newCol(t, "Map(Int32, Nullable(String))").(*chunk.Map)
	n.Keys.(*chunk.Fixed[int32]).Append(-1)
	n.Values.(*chunk.Nullable).AppendNull()
	n.Keys.(*chunk.Fixed[int32]).Append(7)
	n.Values.(*chunk.Nullable).Inner.(*chunk.Strings).AppendString("x")
	n.Values.(*chunk.Nullable).MarkValue()
	n.EndRow()
	checkBytes(t, "Map(Int32, Nullable(String))", encode(t, "Map(Int32, Nullable(String))", n),
		cat(le(uint64(2), int32(-1), int32(7)), []byte{1, 0}, str(""), str("x")))

	// Array(Map(String, UInt8)): the array offsets, then the map.
	a := newCol(t, "Array(Map(String, UInt8))").(*chunk.Array)
	am := a.Inner.(*chunk.Map)
	am.Keys.(*chunk.Strings).AppendString("k")
	am.Values.(*chunk.Fixed[uint8]).Append(9)
	am.EndRow()
	am.EndRow()
	a.EndRow()
	a.EndRow()
	checkBytes(t, "Array(Map(String, UInt8))", encode(t, "Array(Map(String, UInt8))", a),
		cat(le(uint64(2), uint64(2)), le(uint64(1), uint64(1)), str("k"), []byte{9}))

	// Map(String, Array(Int16)) and Map(String, Map(String, Int8)).
	ma := newCol(t, "Map(String, Array(Int16))").(*chunk.Map)
	ma.Keys.(*chunk.Strings).AppendString("xs")
	ma.Values.(*chunk.Array).Inner.(*chunk.Fixed[int16]).Append(5)
	ma.Values.(*chunk.Array).Inner.(*chunk.Fixed[int16]).Append(-5)
	ma.Values.(*chunk.Array).EndRow()
	ma.EndRow()
	checkBytes(t, "Map(String, Array(Int16))", encode(t, "Map(String, Array(Int16))", ma),
		cat(le(uint64(1)), str("xs"), le(uint64(2), int16(5), int16(-5))))
	mm := newCol(t, "Map(String, Map(String, Int8))").(*chunk.Map)
	mm.Keys.(*chunk.Strings).AppendString("o")
	inner := mm.Values.(*chunk.Map)
	inner.Keys.(*chunk.Strings).AppendString("i")
	inner.Values.(*chunk.Fixed[int8]).Append(-2)
	inner.EndRow()
	mm.EndRow()
	checkBytes(t, "Map(String, Map(String, Int8))", encode(t, "Map(String, Map(String, Int8))", mm),
		cat(le(uint64(1)), str("o"), le(uint64(1)), str("i"), []byte{0xfe}))
}

// TestEncodeTuple: Tuple(T1, ..., Tn) in Native format is the element
// columns one after the other.
func TestEncodeTuple(t *testing.T) {
	tu := newCol(t, "Tuple(Int32, String)").(*chunk.Tuple)
	tu.Elems[0].(*chunk.Fixed[int32]).Append(1)
	tu.Elems[1].(*chunk.Strings).AppendString("ab")
	tu.EndRow()
	tu.AppendDefault()
	checkBytes(t, "Tuple(Int32, String)", encode(t, "Tuple(Int32, String)", tu), cat(le(int32(1), int32(0)), str("ab"), str("")))

	named := "Tuple(a Int32, b Nullable(String))"
	nt := newCol(t, named).(*chunk.Tuple)
	nt.Elems[0].(*chunk.Fixed[int32]).Append(-1)
	nt.Elems[1].(*chunk.Nullable).AppendNull()
	nt.EndRow()
	nt.Elems[0].(*chunk.Fixed[int32]).Append(2)
	nt.Elems[1].(*chunk.Nullable).Inner.(*chunk.Strings).AppendString("z")
	nt.Elems[1].(*chunk.Nullable).MarkValue()
	nt.EndRow()
	checkBytes(t, named, encode(t, named, nt), cat(le(int32(-1), int32(2)), []byte{1, 0}, str(""), str("z")))

	// Nested(a UInt32, b String) is Array(Tuple(a UInt32, b String)): the
	// offsets, then each element's column.
	ne := newCol(t, "Nested(a UInt32, b String)").(*chunk.Array)
	nte := ne.Inner.(*chunk.Tuple)
	for i, s := range []string{"p", "q"} {
		nte.Elems[0].(*chunk.Fixed[uint32]).Append(uint32(i + 1))
		nte.Elems[1].(*chunk.Strings).AppendString(s)
		nte.EndRow()
	}
	ne.EndRow()
	ne.EndRow()
	checkBytes(t, "Nested(a UInt32, b String)", encode(t, "Nested(a UInt32, b String)", ne),
		cat(le(uint64(2), uint64(2)), le(uint32(1), uint32(2)), str("p"), str("q")))
}
