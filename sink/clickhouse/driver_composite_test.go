package clickhouse

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

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

// elemTypes are the element types every Tuple element and Map value must
// encode as the element column itself does.
var elemTypes = []string{
	"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64", "Bool",
	"String", "FixedString(3)", "UUID", "Decimal(9, 2)", "Decimal(38, 4)", "Enum8('a' = 1, 'b' = 2)", "Enum16('x' = 1000)",
	"Date", "Date32", "DateTime", "DateTime('UTC')", "DateTime64(3)", "DateTime64(6)", "IPv4", "IPv6",
	"Int128", "UInt256", "Nullable(String)", "Nullable(Int64)", "Nullable(DateTime64(6))", "Nullable(Decimal(9, 2))",
	"Array(String)", "Array(Nullable(Int32))", "Array(Array(UInt8))", "LowCardinality(String)",
	"LowCardinality(Nullable(String))", "Map(String, Int8)", "Tuple(Int8, String)", "Tuple(a UInt8, b Array(String))",
}

// fill appends row i's value to col, a column of type ty.
func fill(t *testing.T, ty *chunk.Type, col chunk.Column, i int) {
	t.Helper()
	switch ty.Kind {
	case chunk.KindNullable:
		n := col.(*chunk.Nullable)
		if i%3 == 1 {
			n.AppendNull()
			return
		}
		fill(t, ty.Elem, n.Inner, i)
		n.MarkValue()
		return
	case chunk.KindLowCardinality:
		fill(t, ty.Elem, col, i%2)
		return
	case chunk.KindArray:
		a := col.(*chunk.Array)
		for j := 0; j < i%3; j++ {
			fill(t, ty.Elem, a.Inner, i+j)
		}
		a.EndRow()
		return
	case chunk.KindMap:
		m := col.(*chunk.Map)
		for j := 0; j < i%3; j++ {
			fill(t, ty.Key, m.Keys, i+j)
			fill(t, ty.Elem, m.Values, i+j)
		}
		m.EndRow()
		return
	case chunk.KindTuple:
		tu := col.(*chunk.Tuple)
		for j, et := range ty.Elems {
			fill(t, et, tu.Elems[j], i+j)
		}
		tu.EndRow()
		return
	}
	switch c := col.(type) {
	case *chunk.Fixed[int8]:
		c.Append(int8(i - 2))
	case *chunk.Fixed[int16]:
		c.Append(int16(i * -300))
	case *chunk.Fixed[int32]:
		c.Append(int32(i * 70000))
	case *chunk.Fixed[int64]:
		c.Append(int64(i) * 1700000000) // also DateTime seconds
	case *chunk.Fixed[uint8]:
		c.Append(uint8(i))
	case *chunk.Fixed[uint16]:
		c.Append(uint16(i * 1000))
	case *chunk.Fixed[uint32]:
		c.Append(uint32(i) * 0x01020304) // also IPv4
	case *chunk.Fixed[uint64]:
		c.Append(uint64(i) << 40)
	case *chunk.Fixed[float32]:
		c.Append(float32(i) / 4)
	case *chunk.Fixed[float64]:
		c.Append(float64(i) * 1.5)
	case *chunk.Fixed[bool]:
		c.Append(i%2 == 1)
	case *chunk.Fixed[time.Time]:
		c.Append(time.Unix(int64(i)*86400*400, 0).UTC())
	case *chunk.Fixed[[16]byte]:
		c.Append([16]byte{0x20, 0x01, 15: byte(i)})
	case *chunk.DateTime64:
		c.Append(int64(i)*1700000000123 + 7)
	case *chunk.BigInt:
		w := make([]uint64, c.Words)
		w[0], w[c.Words-1] = uint64(i), uint64(i)<<8
		c.Append(w)
	case *chunk.Strings:
		switch ty.Kind {
		case chunk.KindString:
			c.AppendString(fmt.Sprintf("s%d", i))
		case chunk.KindFixedString:
			c.AppendString(fmt.Sprintf("f%d", i%10))
		case chunk.KindUUID:
			c.AppendString(fmt.Sprintf("123e4567-e89b-12d3-a456-4266141740%02d", i%100))
		case chunk.KindDecimal:
			c.AppendString(fmt.Sprintf("%d.25", i*7-3))
		case chunk.KindEnum8:
			c.AppendString([]string{"a", "b"}[i%2])
		case chunk.KindEnum16:
			c.AppendString("x")
		default:
			t.Fatalf("fill: strings of %s", ty.Name)
		}
	default:
		t.Fatalf("fill: column %T of %s", col, ty.Name)
	}
}

// encodeElem is the reference encoding of an element column: the column
// handed to the driver whole, except for LowCardinality(Nullable(T)),
// whose whole-column path keys the dictionary by pointer (one entry per
// row): there the values are appended row by row, as the cells are.
func encodeElem(t *testing.T, typ string, col chunk.Column) []byte {
	t.Helper()
	n, ok := col.(*chunk.Nullable)
	if !strings.HasPrefix(typ, "LowCardinality(Nullable(") || !ok {
		return encode(t, typ, col)
	}
	dc, err := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	s := n.Inner.(*chunk.Strings)
	for i := range n.Nulls {
		var v any
		if n.Nulls[i] == 0 {
			v = s.Value(i)
		}
		if err := dc.AppendRow(v); err != nil {
			t.Fatal(err)
		}
	}
	var buf proto.Buffer
	dc.Encode(&buf)
	return buf.Buf
}

// TestEncodeTupleElements: a Tuple and a Map hand each element to the
// driver row by row (the driver value's cells); that must encode exactly as the
// element column handed over whole does.
func TestEncodeTupleElements(t *testing.T) {
	const rows = 5
	for _, et := range elemTypes {
		ty, err := chunk.ParseType(et)
		if err != nil {
			t.Fatal(err)
		}
		typ := "Tuple(UInt8, " + et + ")"
		tu := newCol(t, typ).(*chunk.Tuple)
		for i := range rows {
			tu.Elems[0].(*chunk.Fixed[uint8]).Append(uint8(i))
			fill(t, ty, tu.Elems[1], i)
			tu.EndRow()
		}
		want := cat(encode(t, "UInt8", tu.Elems[0]), encodeElem(t, et, tu.Elems[1]))
		checkBytes(t, typ, encode(t, typ, tu), want)

		mtyp := "Map(String, " + et + ")"
		m := newCol(t, mtyp).(*chunk.Map)
		for i := range rows {
			for j := 0; j < i%3; j++ {
				m.Keys.(*chunk.Strings).AppendString(fmt.Sprint(i, j))
				fill(t, ty, m.Values, i+j)
			}
			m.EndRow()
		}
		offsets := make([]uint64, len(m.Ends))
		for i, e := range m.Ends {
			offsets[i] = uint64(e)
		}
		want = cat(le(offsets), encode(t, "String", m.Keys), encodeElem(t, et, m.Values))
		checkBytes(t, mtyp, encode(t, mtyp, m), want)

		atyp := "Array(" + typ + ")"
		a := newCol(t, atyp).(*chunk.Array)
		ai := a.Inner.(*chunk.Tuple)
		for i := range rows {
			for j := 0; j < i%3; j++ {
				ai.Elems[0].(*chunk.Fixed[uint8]).Append(uint8(j))
				fill(t, ty, ai.Elems[1], i+j)
				ai.EndRow()
			}
			a.EndRow()
		}
		offsets = offsets[:0]
		for _, e := range a.Ends {
			offsets = append(offsets, uint64(e))
		}
		want = cat(le(offsets), encode(t, "UInt8", ai.Elems[0]), encodeElem(t, et, ai.Elems[1]))
		checkBytes(t, atyp, encode(t, atyp, a), want)
	}
}

// TestEncodeMapLowCardinalityKeys: LowCardinality(String) keys are handed
// over as values, so the driver's dictionary holds each key once.
func TestEncodeMapLowCardinalityKeys(t *testing.T) {
	typ := "Map(LowCardinality(String), UInt8)"
	m := newCol(t, typ).(*chunk.Map)
	for i := range 6 {
		m.Keys.(*chunk.Strings).AppendString([]string{"x", "y"}[i%2])
		m.Values.(*chunk.Fixed[uint8]).Append(uint8(i))
		if i%2 == 1 {
			m.EndRow()
		}
	}
	lc := encode(t, "LowCardinality(String)", m.Keys)
	checkBytes(t, typ, encode(t, typ, m), cat(le(uint64(2), uint64(4), uint64(6)), lc, le([]uint8{0, 1, 2, 3, 4, 5})))
	// The dictionary: one entry each for "", x, y (the driver's
	// LowCardinality keeps index 0 for the default).
	if !bytes.Contains(lc, cat(le(uint64(3)), str(""), str("x"), str("y"))) {
		t.Errorf("LowCardinality keys encode as\n% x\nwant a 3-entry dictionary", lc)
	}
}

// TestMapRowIterates: the driver reads a mapRow through its iterator, in
// order, any number of times.
func TestMapRowIterates(t *testing.T) {
	m := newCol(t, "Map(String, UInt8)").(*chunk.Map)
	m.AppendDefault()
	for i, k := range []string{"b", "a"} {
		m.Keys.(*chunk.Strings).AppendString(k)
		m.Values.(*chunk.Fixed[uint8]).Append(uint8(i))
	}
	m.EndRow()
	rows := driverValue(m).([]*mapRow)
	for range 2 {
		var got []string
		it := rows[1].Iterator()
		for it.Next() {
			got = append(got, fmt.Sprint(*it.Key().(*string), "=", *it.Value().(*uint8)))
		}
		if fmt.Sprint(got) != "[b=0 a=1]" || rows[1].Len() != 2 {
			t.Errorf("row 1 = %v", got)
		}
	}
	if it := rows[0].Iterator(); it.Next() {
		t.Errorf("row 0 is not empty")
	}
}
