package native

import (
	"fmt"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

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
