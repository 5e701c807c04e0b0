package chunk

import (
	"fmt"
	"testing"
)

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

// newCol returns an empty column of type typ.
func newCol(t *testing.T, typ string) Column {
	t.Helper()
	ty, err := ParseType(typ)
	if err != nil {
		t.Fatalf("ParseType(%q): %v", typ, err)
	}
	c, err := NewColumn(ty)
	if err != nil {
		t.Fatalf("NewColumn(%q): %v", typ, err)
	}
	return c
}

func TestParseNewTypes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		prec int
		tz   string
	}{
		{"Date32", KindDate32, 0, ""},
		{"DateTime64(3)", KindDateTime64, 3, ""},
		{"DateTime64(9, 'Asia/Tokyo')", KindDateTime64, 9, "Asia/Tokyo"},
		{"IPv4", KindIPv4, 0, ""},
		{"IPv6", KindIPv6, 0, ""},
		{"Int128", KindInt128, 0, ""},
		{"UInt256", KindUInt256, 0, ""},
	} {
		ty, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tc.in, err)
			continue
		}
		if ty.Kind != tc.kind || ty.Precision != tc.prec || ty.TZ != tc.tz {
			t.Errorf("ParseType(%q) = kind %d precision %d tz %q", tc.in, ty.Kind, ty.Precision, ty.TZ)
		}
	}
	for _, bad := range []string{"DateTime64", "DateTime64(10)", "DateTime64(-1)", "DateTime64(3, 'UTC', 1)"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
}
