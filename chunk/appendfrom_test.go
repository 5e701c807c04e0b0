package chunk

import (
	"fmt"
	"testing"
)

// TestAppendFrom: every column copies a row of another column of its type
// exactly, whatever the row's neighbours (a NULL, an empty array, the
// last row).
func TestAppendFrom(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		fill func(c Column)
	}{
		{"Int64", func(c Column) { f := c.(*Fixed[int64]); f.Append(-5); f.Append(1 << 60); f.Append(0) }},
		{"IPv6", func(c Column) {
			f := c.(*Fixed[[16]byte])
			f.Append([16]byte{1})
			f.Append([16]byte{15: 2})
			f.Append([16]byte{})
		}},
		{"String", func(c Column) { s := c.(*Strings); s.AppendString("a"); s.AppendString(""); s.AppendString("héllo") }},
		{"DateTime64(3)", func(c Column) { d := c.(*DateTime64); d.Append(-1); d.Append(1_700_000_000_123); d.Append(0) }},
		{"Int128", func(c Column) {
			b := c.(*BigInt)
			b.Append([]uint64{1, 2})
			b.Append([]uint64{^uint64(0), ^uint64(0)})
			b.Append([]uint64{0, 0})
		}},
		{"UInt256", func(c Column) {
			b := c.(*BigInt)
			b.Append([]uint64{1, 2, 3, 4})
			b.Append([]uint64{0, 0, 0, 1 << 63})
			b.Append([]uint64{9, 0, 0, 0})
		}},
		{"Nullable(String)", func(c Column) {
			n := c.(*Nullable)
			n.Inner.(*Strings).AppendString("x")
			n.MarkValue()
			n.AppendNull()
			n.Inner.(*Strings).AppendString("")
			n.MarkValue()
		}},
		{"Array(Nullable(Int32))", func(c Column) {
			a := c.(*Array)
			in := a.Inner.(*Nullable)
			in.Inner.(*Fixed[int32]).Append(7)
			in.MarkValue()
			in.AppendNull()
			a.EndRow()
			a.EndRow() // empty
			in.Inner.(*Fixed[int32]).Append(-1)
			in.MarkValue()
			a.EndRow()
		}},
		{"Tuple(a String, b Array(UInt8))", func(c Column) {
			tu := c.(*Tuple)
			for i, s := range []string{"p", "", "q"} {
				tu.Elems[0].(*Strings).AppendString(s)
				arr := tu.Elems[1].(*Array)
				for j := 0; j < i; j++ {
					arr.Inner.(*Fixed[uint8]).Append(uint8(j))
				}
				arr.EndRow()
				tu.EndRow()
			}
		}},
		{"Map(String, Nullable(Float64))", func(c Column) {
			m := c.(*Map)
			m.Keys.(*Strings).AppendString("k1")
			v := m.Values.(*Nullable)
			v.Inner.(*Fixed[float64]).Append(1.5)
			v.MarkValue()
			m.Keys.(*Strings).AppendString("k2")
			v.AppendNull()
			m.EndRow()
			m.EndRow() // empty
			m.Keys.(*Strings).AppendString("k3")
			v.Inner.(*Fixed[float64]).Append(-0.5)
			v.MarkValue()
			m.EndRow()
		}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			typ, err := ParseType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			src, err := NewColumn(typ)
			if err != nil {
				t.Fatal(err)
			}
			tc.fill(src)
			if src.Len() != 3 {
				t.Fatalf("the source has %d rows, want 3", src.Len())
			}
			dst, _ := NewColumn(typ)
			order := []int{2, 0, 1, 1}
			for _, i := range order {
				dst.AppendFrom(src, i)
			}
			if dst.Len() != len(order) {
				t.Fatalf("copied %d rows, have %d", len(order), dst.Len())
			}
			for k, i := range order {
				if got, want := fmt.Sprint(dst.Row(k)), fmt.Sprint(src.Row(i)); got != want {
					t.Errorf("row %d (source row %d) = %s, want %s", k, i, got, want)
				}
			}
		})
	}
}
