package clickhouse

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

// encode appends col's driver value to the driver's own column of type typ
// and returns the Native-format bytes it encodes.
func encode(t *testing.T, typ string, col chunk.Column) []byte {
	t.Helper()
	dc, err := column.Type(typ).Column("c", &column.ServerContext{Timezone: time.UTC})
	if err != nil {
		t.Fatalf("driver column %s: %v", typ, err)
	}
	if _, err := dc.Append(driverValue(col)); err != nil {
		t.Fatalf("driver Append %s (%T): %v", typ, driverValue(col), err)
	}
	if dc.Rows() != col.Len() {
		t.Fatalf("driver column has %d rows, ours %d", dc.Rows(), col.Len())
	}
	var buf proto.Buffer
	dc.Encode(&buf)
	return buf.Buf
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
