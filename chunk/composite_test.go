package chunk

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
)

// str is a String column's Native encoding of one value: a varint length,
// then the bytes.
func str(s string) []byte { return append([]byte{byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestParseComposite(t *testing.T) {
	for _, tc := range []struct {
		in    string
		kind  Kind
		names []string
		elems []string
	}{
		{"Map(String, UInt64)", KindMap, nil, []string{"String", "UInt64"}},
		{"Map(LowCardinality(String), Array(Nullable(Decimal(9, 2))))", KindMap, nil, []string{"LowCardinality(String)", "Array(Nullable(Decimal(9, 2)))"}},
		{"Tuple(Int32, String)", KindTuple, nil, []string{"Int32", "String"}},
		{"Tuple(Nullable(Int32), Decimal(9, 2), DateTime('UTC'), Enum8('a, b' = 1))", KindTuple, nil,
			[]string{"Nullable(Int32)", "Decimal(9, 2)", "DateTime('UTC')", "Enum8('a, b' = 1)"}},
		{"Tuple(a Int32, b Tuple(c String, d Array(UInt8)))", KindTuple, []string{"a", "b"}, []string{"Int32", "Tuple(c String, d Array(UInt8))"}},
		{"Tuple(`a b` Int32, `c,d` String)", KindTuple, []string{"a b", "c,d"}, []string{"Int32", "String"}},
		{"Nested(a UInt32, b String)", KindArray, nil, []string{"Tuple(a UInt32, b String)"}},
	} {
		ty, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tc.in, err)
			continue
		}
		if ty.Kind != tc.kind || ty.Name != tc.in {
			t.Errorf("ParseType(%q) = kind %d name %q", tc.in, ty.Kind, ty.Name)
		}
		var elems []string
		switch ty.Kind {
		case KindMap:
			elems = []string{ty.Key.Name, ty.Elem.Name}
		case KindTuple:
			for _, e := range ty.Elems {
				elems = append(elems, e.Name)
			}
			if fmt.Sprint(ty.ElemNames) != fmt.Sprint(tc.names) || (tc.names == nil) != (ty.ElemNames == nil) {
				t.Errorf("ParseType(%q) names %q, want %q", tc.in, ty.ElemNames, tc.names)
			}
		case KindArray:
			elems = []string{ty.Elem.Name}
			if ty.Elem.Kind != KindTuple || len(ty.Elem.ElemNames) != 2 {
				t.Errorf("ParseType(%q) element %+v", tc.in, ty.Elem)
			}
		}
		if fmt.Sprint(elems) != fmt.Sprint(tc.elems) {
			t.Errorf("ParseType(%q) elements %q, want %q", tc.in, elems, tc.elems)
		}
		if _, err := NewColumn(ty); err != nil {
			t.Errorf("NewColumn(%q): %v", tc.in, err)
		}
	}
	for _, bad := range []string{"Map(String)", "Map", "Tuple", "Tuple()", "Tuple(a Int32, String)", "Nested(Int32)",
		"Map(String, Nope)", "Tuple(x Nope)"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
	for _, bad := range []string{"Nullable(Tuple(Int8))", "Nullable(Map(String, Int8))"} {
		if ty, err := ParseType(bad); err == nil {
			if _, err := NewColumn(ty); err == nil {
				t.Errorf("NewColumn(%q) succeeded", bad)
			}
		}
	}
}

// TestEncodeMap: Map(K, V) in Native format is the offsets (UInt64, the
// end of each row), then the keys column, then the values column.
func TestEncodeMap(t *testing.T) {
	m := newCol(t, "Map(String, UInt64)").(*Map)
	put := func(k string, v uint64) {
		m.Keys.(*Strings).AppendString(k)
		m.Values.(*Fixed[uint64]).Append(v)
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
	n := newCol(t, "Map(Int32, Nullable(String))").(*Map)
	n.Keys.(*Fixed[int32]).Append(-1)
	n.Values.(*Nullable).AppendNull()
	n.Keys.(*Fixed[int32]).Append(7)
	n.Values.(*Nullable).Inner.(*Strings).AppendString("x")
	n.Values.(*Nullable).MarkValue()
	n.EndRow()
	checkBytes(t, "Map(Int32, Nullable(String))", encode(t, "Map(Int32, Nullable(String))", n),
		cat(le(uint64(2), int32(-1), int32(7)), []byte{1, 0}, str(""), str("x")))

	// Array(Map(String, UInt8)): the array offsets, then the map.
	a := newCol(t, "Array(Map(String, UInt8))").(*Array)
	am := a.Inner.(*Map)
	am.Keys.(*Strings).AppendString("k")
	am.Values.(*Fixed[uint8]).Append(9)
	am.EndRow()
	am.EndRow()
	a.EndRow()
	a.EndRow()
	checkBytes(t, "Array(Map(String, UInt8))", encode(t, "Array(Map(String, UInt8))", a),
		cat(le(uint64(2), uint64(2)), le(uint64(1), uint64(1)), str("k"), []byte{9}))

	// Map(String, Array(Int16)) and Map(String, Map(String, Int8)).
	ma := newCol(t, "Map(String, Array(Int16))").(*Map)
	ma.Keys.(*Strings).AppendString("xs")
	ma.Values.(*Array).Inner.(*Fixed[int16]).Append(5)
	ma.Values.(*Array).Inner.(*Fixed[int16]).Append(-5)
	ma.Values.(*Array).EndRow()
	ma.EndRow()
	checkBytes(t, "Map(String, Array(Int16))", encode(t, "Map(String, Array(Int16))", ma),
		cat(le(uint64(1)), str("xs"), le(uint64(2), int16(5), int16(-5))))
	mm := newCol(t, "Map(String, Map(String, Int8))").(*Map)
	mm.Keys.(*Strings).AppendString("o")
	inner := mm.Values.(*Map)
	inner.Keys.(*Strings).AppendString("i")
	inner.Values.(*Fixed[int8]).Append(-2)
	inner.EndRow()
	mm.EndRow()
	checkBytes(t, "Map(String, Map(String, Int8))", encode(t, "Map(String, Map(String, Int8))", mm),
		cat(le(uint64(1)), str("o"), le(uint64(1)), str("i"), []byte{0xfe}))
}

// TestEncodeTuple: Tuple(T1, ..., Tn) in Native format is the element
// columns one after the other.
func TestEncodeTuple(t *testing.T) {
	tu := newCol(t, "Tuple(Int32, String)").(*Tuple)
	tu.Elems[0].(*Fixed[int32]).Append(1)
	tu.Elems[1].(*Strings).AppendString("ab")
	tu.EndRow()
	tu.AppendDefault()
	checkBytes(t, "Tuple(Int32, String)", encode(t, "Tuple(Int32, String)", tu), cat(le(int32(1), int32(0)), str("ab"), str("")))

	named := "Tuple(a Int32, b Nullable(String))"
	nt := newCol(t, named).(*Tuple)
	nt.Elems[0].(*Fixed[int32]).Append(-1)
	nt.Elems[1].(*Nullable).AppendNull()
	nt.EndRow()
	nt.Elems[0].(*Fixed[int32]).Append(2)
	nt.Elems[1].(*Nullable).Inner.(*Strings).AppendString("z")
	nt.Elems[1].(*Nullable).MarkValue()
	nt.EndRow()
	checkBytes(t, named, encode(t, named, nt), cat(le(int32(-1), int32(2)), []byte{1, 0}, str(""), str("z")))

	// Nested(a UInt32, b String) is Array(Tuple(a UInt32, b String)): the
	// offsets, then each element's column.
	ne := newCol(t, "Nested(a UInt32, b String)").(*Array)
	nte := ne.Inner.(*Tuple)
	for i, s := range []string{"p", "q"} {
		nte.Elems[0].(*Fixed[uint32]).Append(uint32(i + 1))
		nte.Elems[1].(*Strings).AppendString(s)
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
func fill(t *testing.T, ty *Type, col Column, i int) {
	t.Helper()
	switch ty.Kind {
	case KindNullable:
		n := col.(*Nullable)
		if i%3 == 1 {
			n.AppendNull()
			return
		}
		fill(t, ty.Elem, n.Inner, i)
		n.MarkValue()
		return
	case KindLowCardinality:
		fill(t, ty.Elem, col, i%2)
		return
	case KindArray:
		a := col.(*Array)
		for j := 0; j < i%3; j++ {
			fill(t, ty.Elem, a.Inner, i+j)
		}
		a.EndRow()
		return
	case KindMap:
		m := col.(*Map)
		for j := 0; j < i%3; j++ {
			fill(t, ty.Key, m.Keys, i+j)
			fill(t, ty.Elem, m.Values, i+j)
		}
		m.EndRow()
		return
	case KindTuple:
		tu := col.(*Tuple)
		for j, et := range ty.Elems {
			fill(t, et, tu.Elems[j], i+j)
		}
		tu.EndRow()
		return
	}
	switch c := col.(type) {
	case *Fixed[int8]:
		c.Append(int8(i - 2))
	case *Fixed[int16]:
		c.Append(int16(i * -300))
	case *Fixed[int32]:
		c.Append(int32(i * 70000))
	case *Fixed[int64]:
		c.Append(int64(i) * 1700000000) // also DateTime seconds
	case *Fixed[uint8]:
		c.Append(uint8(i))
	case *Fixed[uint16]:
		c.Append(uint16(i * 1000))
	case *Fixed[uint32]:
		c.Append(uint32(i) * 0x01020304) // also IPv4
	case *Fixed[uint64]:
		c.Append(uint64(i) << 40)
	case *Fixed[float32]:
		c.Append(float32(i) / 4)
	case *Fixed[float64]:
		c.Append(float64(i) * 1.5)
	case *Fixed[bool]:
		c.Append(i%2 == 1)
	case *Fixed[time.Time]:
		c.Append(time.Unix(int64(i)*86400*400, 0).UTC())
	case *Fixed[[16]byte]:
		c.Append([16]byte{0x20, 0x01, 15: byte(i)})
	case *DateTime64:
		c.Append(int64(i)*1700000000123 + 7)
	case *BigInt:
		w := make([]uint64, c.Words)
		w[0], w[c.Words-1] = uint64(i), uint64(i)<<8
		c.Append(w)
	case *Strings:
		switch ty.Kind {
		case KindString:
			c.AppendString(fmt.Sprintf("s%d", i))
		case KindFixedString:
			c.AppendString(fmt.Sprintf("f%d", i%10))
		case KindUUID:
			c.AppendString(fmt.Sprintf("123e4567-e89b-12d3-a456-4266141740%02d", i%100))
		case KindDecimal:
			c.AppendString(fmt.Sprintf("%d.25", i*7-3))
		case KindEnum8:
			c.AppendString([]string{"a", "b"}[i%2])
		case KindEnum16:
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
func encodeElem(t *testing.T, typ string, col Column) []byte {
	t.Helper()
	n, ok := col.(*Nullable)
	if !strings.HasPrefix(typ, "LowCardinality(Nullable(") || !ok {
		return encode(t, typ, col)
	}
	dc, err := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	s := n.Inner.(*Strings)
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
// driver row by row (Driver's cells); that must encode exactly as the
// element column handed over whole does.
func TestEncodeTupleElements(t *testing.T) {
	const rows = 5
	for _, et := range elemTypes {
		ty, err := ParseType(et)
		if err != nil {
			t.Fatal(err)
		}
		typ := "Tuple(UInt8, " + et + ")"
		tu := newCol(t, typ).(*Tuple)
		for i := range rows {
			tu.Elems[0].(*Fixed[uint8]).Append(uint8(i))
			fill(t, ty, tu.Elems[1], i)
			tu.EndRow()
		}
		want := cat(encode(t, "UInt8", tu.Elems[0]), encodeElem(t, et, tu.Elems[1]))
		checkBytes(t, typ, encode(t, typ, tu), want)

		mtyp := "Map(String, " + et + ")"
		m := newCol(t, mtyp).(*Map)
		for i := range rows {
			for j := 0; j < i%3; j++ {
				m.Keys.(*Strings).AppendString(fmt.Sprint(i, j))
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
		a := newCol(t, atyp).(*Array)
		ai := a.Inner.(*Tuple)
		for i := range rows {
			for j := 0; j < i%3; j++ {
				ai.Elems[0].(*Fixed[uint8]).Append(uint8(j))
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
	m := newCol(t, typ).(*Map)
	for i := range 6 {
		m.Keys.(*Strings).AppendString([]string{"x", "y"}[i%2])
		m.Values.(*Fixed[uint8]).Append(uint8(i))
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

// TestCompositeTruncate: a partly appended row of a Tuple or Map (some
// elements or a key without its value) is undone by Truncate.
func TestCompositeTruncate(t *testing.T) {
	tu := newCol(t, "Tuple(Int8, Array(String))").(*Tuple)
	tu.Elems[0].(*Fixed[int8]).Append(1)
	tu.Elems[1].(*Array).EndRow()
	tu.EndRow()
	tu.Elems[0].(*Fixed[int8]).Append(2)
	tu.Elems[1].(*Array).Inner.(*Strings).AppendString("half")
	if tu.Len() != 1 {
		t.Fatalf("Len = %d", tu.Len())
	}
	tu.Truncate(1)
	if tu.Elems[0].Len() != 1 || tu.Elems[1].(*Array).Inner.Len() != 0 {
		t.Errorf("after Truncate(1): %d, %d", tu.Elems[0].Len(), tu.Elems[1].(*Array).Inner.Len())
	}

	m := newCol(t, "Map(String, Int8)").(*Map)
	m.Keys.(*Strings).AppendString("k")
	m.Values.(*Fixed[int8]).Append(1)
	m.EndRow()
	m.Keys.(*Strings).AppendString("orphan")
	m.Truncate(1)
	if m.Keys.Len() != 1 || m.Values.Len() != 1 || m.Len() != 1 {
		t.Errorf("after Truncate(1): keys %d values %d rows %d", m.Keys.Len(), m.Values.Len(), m.Len())
	}
	m.Truncate(0)
	if m.Keys.Len() != 0 || m.Len() != 0 {
		t.Errorf("after Truncate(0): keys %d rows %d", m.Keys.Len(), m.Len())
	}
}

// TestMapRowIterates: the driver reads a MapRow through its iterator, in
// order, any number of times.
func TestMapRowIterates(t *testing.T) {
	m := newCol(t, "Map(String, UInt8)").(*Map)
	m.AppendDefault()
	for i, k := range []string{"b", "a"} {
		m.Keys.(*Strings).AppendString(k)
		m.Values.(*Fixed[uint8]).Append(uint8(i))
	}
	m.EndRow()
	rows := m.Driver().([]*MapRow)
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
