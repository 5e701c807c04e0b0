package chunk

import (
	"fmt"
	"testing"
)

// show formats every row of col, one string per row (Row's values).
func show(col Column) []string {
	out := make([]string, col.Len())
	for i := range out {
		out[i] = fmt.Sprint(col.Row(i))
	}
	return out
}

func sp(s string) *string { return &s }

// TestAppendRows: rows copied from a column of the same type, in the
// middle of both columns, keep their values.
func TestAppendRows(t *testing.T) {
	for _, tc := range []struct {
		typ string
		add func(c Column, i int) // appends row i (0..3)
	}{
		{"Array(Nullable(String))", func(c Column, i int) {
			a := c.(*Array)
			n := a.Inner.(*Nullable)
			for _, v := range [][]*string{{nil}, {sp("a"), sp("b")}, {}, {sp("c")}}[i] {
				if v == nil {
					n.AppendNull()
					continue
				}
				n.Inner.(*Strings).AppendString(*v)
				n.MarkValue()
			}
			a.EndRow()
		}},
		{"Map(String, Array(UInt8))", func(c Column, i int) {
			m := c.(*Map)
			type kv struct {
				k string
				v []uint8
			}
			for _, e := range [][]kv{{{"x", []uint8{1}}}, {}, {{"y", []uint8{2, 3}}, {"z", nil}}, {{"w", []uint8{4}}}}[i] {
				m.Keys.(*Strings).AppendString(e.k)
				a := m.Values.(*Array)
				for _, b := range e.v {
					a.Inner.(*Fixed[uint8]).Append(b)
				}
				a.EndRow()
			}
			m.EndRow()
		}},
		{"Tuple(String, Array(Int16))", func(c Column, i int) {
			tu := c.(*Tuple)
			tu.Elems[0].(*Strings).AppendString([]string{"a", "", "bc", "d"}[i])
			a := tu.Elems[1].(*Array)
			for _, v := range [][]int16{{1}, {}, {2, 3}, {4}}[i] {
				a.Inner.(*Fixed[int16]).Append(v)
			}
			a.EndRow()
			tu.EndRow()
		}},
		{"Int256", func(c Column, i int) {
			w := []uint64{2 + uint64(i), 0, 0, 0}
			if i == 0 {
				w = []uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} // -1
			}
			c.(*BigInt).Append(w)
		}},
		{"String", func(c Column, i int) { c.(*Strings).AppendString([]string{"a", "", "bc", "d"}[i]) }},
	} {
		ty, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := NewColumn(ty)
		for i := range 4 {
			tc.add(src, i)
		}
		dst, _ := NewColumn(ty)
		tc.add(dst, 3)
		dst.(rowCopier).appendRows(src, 1, 3)
		tc.add(dst, 0)
		all := show(src)
		want := []string{all[3], all[1], all[2], all[0]}
		if got := show(dst); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", tc.typ, got, want)
		}
	}
}

// TestSetDefaultColumn: a type's default, a one-row column, is what every
// column built for the type appends in AppendDefault, after rows of its
// own and after Truncate; a column of another type or of another number
// of rows is refused.
func TestSetDefaultColumn(t *testing.T) {
	ty, err := ParseType("Array(Nullable(String))")
	if err != nil {
		t.Fatal(err)
	}
	def, _ := NewColumn(ty)
	a := def.(*Array)
	a.Inner.(*Nullable).AppendNull()
	a.Inner.(*Nullable).Inner.(*Strings).AppendString("d")
	a.Inner.(*Nullable).MarkValue()
	a.EndRow()
	other, _ := NewColumn(&Type{Kind: KindString, Name: "String"})
	other.AppendDefault()
	empty, _ := NewColumn(ty)
	for _, bad := range []Column{nil, empty, other} {
		if err := ty.SetDefaultColumn(bad); err == nil || ty.HasDefault() {
			t.Errorf("SetDefaultColumn(%v) accepted", bad)
		}
	}
	if err := ty.SetDefaultColumn(def); err != nil || !ty.HasDefault() || ty.Default() != def {
		t.Fatalf("SetDefaultColumn: %v", err)
	}
	col, _ := NewColumn(ty)
	col.(*Array).EndRow()
	col.AppendDefault()
	col.Truncate(1)
	col.AppendDefault()
	if got := fmt.Sprint(show(col)); got != "[[] [<nil> d]]" {
		t.Errorf("rows %s", got)
	}
}
