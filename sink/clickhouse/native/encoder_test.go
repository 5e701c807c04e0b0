package native

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

// nativeTypes are the types Encoder must write exactly as the
// driver's column encoder does: every element type of the composite tests,
// and more nullable, LowCardinality and nested shapes.
var nativeTypes = append(slices.Clone(elemTypes),
	"Decimal(18, 4)", "Decimal(76, 10)", "Int256", "UInt128", "Int16",
	"Nullable(UUID)", "Nullable(FixedString(3))", "Nullable(Enum8('a' = 1, 'b' = 2))", "Nullable(Date)",
	"Nullable(Bool)", "Nullable(IPv6)", "Nullable(Int128)",
	"Array(LowCardinality(String))", "Array(Decimal(18, 4))", "Array(UUID)", "Array(FixedString(3))", "Array(Date32)",
	"LowCardinality(UInt32)", "LowCardinality(FixedString(3))", "LowCardinality(Date)", "LowCardinality(DateTime)",
	"LowCardinality(Nullable(Int64))", "LowCardinality(Float64)",
	"Map(LowCardinality(String), Array(Nullable(Decimal(18, 4))))", "Map(UInt64, Tuple(String, Nullable(Int8)))",
	"Nested(a UInt32, b String)", "Array(Tuple(a LowCardinality(String), b Nullable(UUID)))",
	"Tuple(Nullable(Int32), Decimal(9, 2), DateTime('UTC'), Enum8('a' = 1, 'b' = 2))",
)

// driverNative is the reference: the driver's column of type typ, given
// each column of cols by the whole-column Append the driver path uses, and
// encoded with its state prefix. LowCardinality(Nullable(T)) is given row by
// row: its whole-column Append keys the dictionary by pointer.
func driverNative(t *testing.T, typ string, cols []chunk.Column) []byte {
	t.Helper()
	dc, err := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
	if err != nil {
		t.Fatalf("driver column %s: %v", typ, err)
	}
	for _, c := range cols {
		if c.Len() == 0 {
			continue
		}
		if strings.HasPrefix(typ, "LowCardinality(Nullable(") {
			v := reflect.ValueOf(driverValue(c))
			for i := 0; i < v.Len(); i++ {
				var x any
				if e := v.Index(i); !e.IsNil() {
					x = e.Elem().Interface()
				}
				if err := dc.AppendRow(x); err != nil {
					t.Fatalf("driver AppendRow %s: %v", typ, err)
				}
			}
			continue
		}
		if _, err := dc.Append(driverValue(c)); err != nil {
			t.Fatalf("driver Append %s (%T): %v", typ, driverValue(c), err)
		}
	}
	var buf proto.Buffer
	if cs, ok := dc.(column.CustomSerialization); ok {
		if err := cs.WriteStatePrefix(&buf); err != nil {
			t.Fatal(err)
		}
	}
	dc.Encode(&buf)
	return buf.Buf
}

// driverDecode reads rows of type typ from data with the driver's decoder
// and checks that every byte was used.
func driverDecode(t *testing.T, typ string, data []byte, rows int) []any {
	t.Helper()
	dc, err := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	r := proto.NewReader(bytes.NewReader(data))
	if cs, ok := dc.(column.CustomSerialization); ok {
		if err := cs.ReadStatePrefix(r); err != nil {
			t.Fatalf("%s: read prefix: %v", typ, err)
		}
	}
	if err := dc.Decode(r, rows); err != nil {
		t.Fatalf("%s: decode: %v", typ, err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatalf("%s: bytes left after %d rows", typ, rows)
	}
	out := make([]any, rows)
	for i := range out {
		out[i] = dc.Row(i, false)
	}
	return out
}

// nativeOf encodes cols with a Encoder for typ.
func nativeOf(t *testing.T, typ string, cols []chunk.Column) []byte {
	t.Helper()
	ty, err := chunk.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEncoder(ty)
	if err != nil {
		t.Fatalf("NewEncoder(%s): %v", typ, err)
	}
	if err := e.Prepare(cols); err != nil {
		t.Fatalf("%s: Prepare: %v", typ, err)
	}
	defer e.Release()
	out := e.AppendNative([]byte{0xee}) // appends to what is there
	if out[0] != 0xee {
		t.Fatalf("%s: AppendNative overwrote its input", typ)
	}
	if len(out)-1 > e.SizeHint() {
		t.Errorf("%s: %d bytes, SizeHint %d", typ, len(out)-1, e.SizeHint())
	}
	return out[1:]
}

// splitChunks fills the rows 0..n-1 of type ty into columns of the given
// sizes (one column per chunk).
func splitChunks(t *testing.T, ty *chunk.Type, sizes ...int) []chunk.Column {
	t.Helper()
	var cols []chunk.Column
	row := 0
	for _, n := range sizes {
		c, err := chunk.NewColumn(ty)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			fill(t, ty, c, row)
			row++
		}
		cols = append(cols, c)
	}
	return cols
}

// TestNativeMatchesDriver: for every type, one chunk and several (some
// empty), the encoder writes the bytes the driver path writes, and the
// driver decodes them to the same rows.
func TestNativeMatchesDriver(t *testing.T) {
	for _, typ := range nativeTypes {
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		// At most 6 rows: fill puts DateTime64 row 6 past 2262, which the
		// driver cannot carry (decoders refuse such values).
		for _, sizes := range [][]int{{6}, {3, 0, 2, 1}, {0, 1}} {
			cols := splitChunks(t, ty, sizes...)
			rows := 0
			for _, c := range cols {
				rows += c.Len()
			}
			got := nativeOf(t, typ, cols)
			want := driverNative(t, typ, cols)
			if !bytes.Equal(got, want) {
				t.Errorf("%s, chunks %v: encodes as\n%x\nthe driver as\n%x", typ, sizes, got, want)
				continue
			}
			if g, w := driverDecode(t, typ, got, rows), driverDecode(t, typ, want, rows); !reflect.DeepEqual(g, w) {
				t.Errorf("%s: decodes as %v, want %v", typ, g, w)
			}
		}
	}
}

// TestNativeEdgeValues: values at the edges of the conversions the driver
// does (DateTime's 32 bits, dates before 1970 and the zero time, varint
// lengths, FixedString padding, NULL over a value the inner type would
// refuse).
func TestNativeEdgeValues(t *testing.T) {
	check := func(typ string, cols ...chunk.Column) {
		t.Helper()
		got, want := nativeOf(t, typ, cols), driverNative(t, typ, cols)
		if !bytes.Equal(got, want) {
			t.Errorf("%s encodes as\n%x\nthe driver as\n%x", typ, got, want)
		}
	}
	dt := &chunk.Fixed[int64]{Data: []int64{0, 1, 4294967295, 4294967296, -1, zeroTimeUnix, 1700000000}}
	check("DateTime", dt)
	check("DateTime('Asia/Tokyo')", dt)
	dates := &chunk.Fixed[time.Time]{Data: []time.Time{{}, time.Unix(0, 0).UTC(), time.Date(2149, 6, 6, 0, 0, 0, 0, time.UTC),
		time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 23, 0, 0, 0, time.FixedZone("x", 3600)),
		time.Date(2299, 12, 31, 0, 0, 0, 0, time.UTC)}}
	check("Date", dates)
	check("Date32", dates)
	s := &chunk.Strings{}
	for _, v := range []string{"", "a", strings.Repeat("x", 127), strings.Repeat("y", 128), strings.Repeat("z", 20000), "é€"} {
		s.AppendString(v)
	}
	check("String", s)
	fs := &chunk.Strings{}
	for _, v := range []string{"", "a", "abc"} {
		fs.AppendString(v)
	}
	check("FixedString(3)", fs)
	// Under NULL the inner text is whatever the decoder put there (here
	// text that does not parse): the driver writes zero.
	for _, typ := range []string{"Nullable(Decimal(9, 2))", "Nullable(UUID)", "Nullable(Enum8('a' = 1))", "Nullable(FixedString(1))"} {
		n := &chunk.Nullable{Inner: &chunk.Strings{}}
		n.Inner.(*chunk.Strings).AppendString("not a value")
		n.Nulls = append(n.Nulls, 1)
		check(typ, n)
	}
	// More distinct LowCardinality values than one-byte keys hold.
	for _, distinct := range []int{254, 255, 300, 70000} {
		lc := &chunk.Strings{}
		for i := range distinct + 10 {
			lc.AppendString(fmt.Sprint(i % distinct))
		}
		check("LowCardinality(String)", lc)
	}
	// Empty rows of an Array(LowCardinality(String)): the prefix only.
	a := &chunk.Array{Inner: &chunk.Strings{}}
	a.EndRow()
	check("Array(LowCardinality(String))", a)
}

// TestNativeDecimals: Decimal text converts as the driver converts it
// (shopspring/decimal, scaled, truncated toward zero, range-checked), on
// the fast path for plain text and the big-number path for the rest.
func TestNativeDecimals(t *testing.T) {
	values := []string{"0", "-0", "1.5", "-1.005", "123456.789", "1e3", "-1.2345e-2", "0001.10", "00000000000000000000001",
		"21474836.47", "-21474836.48", "21474836.48", "-21474836.49", "99999999.99", "999999999999999999", "-999999999999999999",
		"9223372036854775807", "12345678901234567890.123", "1.23456789012345678901234567890", ".5", "5.", "+5",
		"1_000", " 1", "", "abc", "1.2.3", "-", "1e", "0.0000000000000000000000000000000000001",
		"57896044618658097711785492504343953926634992332820282019728792003956564819967"}
	for _, typ := range []string{"Decimal(9, 2)", "Decimal(18, 4)", "Decimal(18, 0)", "Decimal(38, 10)", "Decimal(76, 20)", "Decimal(9, 0)"} {
		ty, _ := chunk.ParseType(typ)
		for _, v := range values {
			c := &chunk.Strings{}
			c.AppendString(v)
			e, _ := NewEncoder(ty)
			err := e.Prepare([]chunk.Column{c})
			dc, _ := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
			_, derr := dc.Append([]string{v})
			if (err == nil) != (derr == nil) {
				t.Errorf("%s %q: encoder error %v, driver error %v", typ, v, err, derr)
				continue
			}
			if err != nil {
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Chunk != 0 {
					t.Errorf("%s %q: error %v is not a ValueError of chunk 0", typ, v, err)
				}
				continue
			}
			var buf proto.Buffer
			dc.Encode(&buf)
			if got := e.AppendNative(nil); !bytes.Equal(got, buf.Buf) {
				t.Errorf("%s %q: %x, driver %x", typ, v, got, buf.Buf)
			}
		}
	}
}

// TestNativeRefusals: values the driver refuses are refused by Prepare,
// naming the chunk that holds them, before anything is written.
func TestNativeRefusals(t *testing.T) {
	for _, tc := range []struct{ typ, good, bad string }{
		{"FixedString(2)", "ab", "abc"},
		{"UUID", "123e4567-e89b-12d3-a456-426614174000", "nope"},
		{"UUID", "{123e4567-e89b-12d3-a456-426614174000}", ""},
		{"Enum8('a' = 1)", "a", "b"},
		{"Decimal(9, 2)", "1.5", "x"},
		{"Decimal(9, 2)", "1.5", "100000000"},
		{"Nullable(Enum16('a' = 1000))", "a", "z"},
		{"Array(UUID)", "123e4567-e89b-12d3-a456-426614174000", "nope"},
		{"LowCardinality(FixedString(1))", "a", "ab"},
		{"LowCardinality(Nullable(FixedString(1)))", "a", "ab"},
		{"Map(String, Decimal(9, 2))", "1", "x"},
		{"Tuple(String, Enum8('a' = 1))", "a", "b"},
	} {
		ty, err := chunk.ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		var cols []chunk.Column
		for _, v := range []string{tc.good, tc.good, tc.bad} {
			c, _ := chunk.NewColumn(ty)
			putText(t, ty, c, v)
			cols = append(cols, c)
		}
		e, err := NewEncoder(ty)
		if err != nil {
			t.Fatal(err)
		}
		err = e.Prepare(cols)
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Chunk != 2 {
			t.Errorf("%s %q: Prepare = %v, want a ValueError of chunk 2", tc.typ, tc.bad, err)
			continue
		}
		dc, _ := column.Type(tc.typ).Column("c", &column.ServerContext{Timezone: time.UTC})
		if _, derr := dc.Append(driverValue(cols[2])); derr == nil && !strings.HasPrefix(tc.typ, "LowCardinality(Nullable") {
			t.Errorf("%s %q: the driver takes it", tc.typ, tc.bad)
		}
		if err := e.Prepare(cols[:2]); err != nil {
			t.Errorf("%s: good values: %v", tc.typ, err)
		}
		e.Release()
	}
}

// putText appends one row holding text v (wrapped in the type's
// Nullable, Array, Tuple or Map as needed) to col.
func putText(t *testing.T, ty *chunk.Type, col chunk.Column, v string) {
	t.Helper()
	switch ty.Kind {
	case chunk.KindNullable:
		n := col.(*chunk.Nullable)
		putText(t, ty.Elem, n.Inner, v)
		n.MarkValue()
	case chunk.KindLowCardinality:
		putText(t, ty.Elem, col, v)
	case chunk.KindArray:
		a := col.(*chunk.Array)
		putText(t, ty.Elem, a.Inner, v)
		a.EndRow()
	case chunk.KindMap:
		m := col.(*chunk.Map)
		m.Keys.(*chunk.Strings).AppendString("k")
		putText(t, ty.Elem, m.Values, v)
		m.EndRow()
	case chunk.KindTuple:
		tu := col.(*chunk.Tuple)
		tu.Elems[0].(*chunk.Strings).AppendString("x")
		putText(t, ty.Elems[1], tu.Elems[1], v)
		tu.EndRow()
	default:
		col.(*chunk.Strings).AppendString(v)
	}
}

// TestNativeReuse: an encoder used for several blocks in a row writes each
// as a fresh one would (scratch buffers and dictionaries are reset).
func TestNativeReuse(t *testing.T) {
	for _, typ := range []string{"LowCardinality(Nullable(String))", "Map(String, Array(Nullable(Decimal(18, 4))))", "Tuple(UUID, FixedString(3))"} {
		ty, _ := chunk.ParseType(typ)
		e, err := NewEncoder(ty)
		if err != nil {
			t.Fatal(err)
		}
		for _, sizes := range [][]int{{5, 2}, {1}, {9}} {
			cols := splitChunks(t, ty, sizes...)
			if err := e.Prepare(cols); err != nil {
				t.Fatal(err)
			}
			if got, want := e.AppendNative(nil), driverNative(t, typ, cols); !bytes.Equal(got, want) {
				t.Errorf("%s, reused for %v: %x, want %x", typ, sizes, got, want)
			}
			e.Release()
		}
	}
}

// TestNativeLowCardinalityRecent: dictionaries built through the recent-key
// slots match the driver's for keys that share a slot (the same length
// and end bytes), for a column whose keys are mostly distinct (the slots
// are given up after 1,024 rows), for NULLs and empty strings among them,
// and across blocks encoded one after another by the same encoder.
func TestNativeLowCardinalityRecent(t *testing.T) {
	for _, typ := range []string{"LowCardinality(String)", "LowCardinality(Nullable(String))"} {
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := NewEncoder(ty)
		if err != nil {
			t.Fatal(err)
		}
		for block, value := range []func(i int) string{
			func(i int) string { return "a" + strconv.Itoa(i%7) + "z" }, // one slot for seven keys
			func(i int) string { return []string{"", "x", "a1z", "view"}[i%4] },
			func(i int) string { return []string{"view", "a1z", "x", ""}[i%4] }, // the same keys, in another order
			func(i int) string { return "user-" + strconv.Itoa(i*7919%3000) },   // mostly distinct
			func(i int) string { return "k" + strconv.Itoa(i/500) },             // runs
		} {
			var cols []chunk.Column
			for range 3 {
				col, err := chunk.NewColumn(ty)
				if err != nil {
					t.Fatal(err)
				}
				for range 1500 {
					i := len(cols)*1500 + col.Len()
					if n, ok := col.(*chunk.Nullable); ok {
						if i%11 == 3 {
							n.AppendNull()
						} else {
							chunk.AppendString(n.Inner, value(i))
							n.MarkValue()
						}
						continue
					}
					chunk.AppendString(col, value(i))
				}
				cols = append(cols, col)
			}
			if err := enc.Prepare(cols); err != nil {
				t.Fatal(err)
			}
			got := enc.AppendNative(nil)
			enc.Release()
			if want := driverNative(t, typ, cols); !bytes.Equal(got, want) {
				t.Errorf("%s, block %d: encodes unlike the driver (%d bytes against %d)", typ, block, len(got), len(want))
			}
		}
	}
}
