// Package decodetest holds the helpers the JSON and Avro decoders' tests
// share: schemas from column specs, chunks, and rows rendered as text.
package decodetest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// SchemaOf builds a schema from "name Type" pairs.
func SchemaOf(t testing.TB, cols ...string) *chunk.Schema {
	t.Helper()
	s := &chunk.Schema{}
	for _, c := range cols {
		name, typ, ok := strings.Cut(c, " ")
		if !ok {
			t.Fatalf("bad column spec %q", c)
		}
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatalf("parse type %q: %v", typ, err)
		}
		s.Names = append(s.Names, name)
		s.Types = append(s.Types, ty)
	}
	return s
}

func NewChunk(t testing.TB, s *chunk.Schema) *chunk.Chunk {
	t.Helper()
	c, err := chunk.New(s)
	if err != nil {
		t.Fatalf("chunk.New: %v", err)
	}
	return c
}

// Render formats row i of col: NULL, [a,b], strings as they are, Date as
// 2006-01-02, everything else with %v.
func Render(col chunk.Column, i int) string {
	switch c := col.(type) {
	case *chunk.Strings:
		return c.Value(i)
	case *chunk.Nullable:
		if c.Nulls[i] != 0 {
			return "NULL"
		}
		return Render(c.Inner, i)
	case *chunk.Array:
		start := 0
		if i > 0 {
			start = c.Ends[i-1]
		}
		parts := make([]string, 0, c.Ends[i]-start)
		for j := start; j < c.Ends[i]; j++ {
			parts = append(parts, Render(c.Inner, j))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *chunk.Map:
		start := 0
		if i > 0 {
			start = c.Ends[i-1]
		}
		parts := make([]string, 0, c.Ends[i]-start)
		for j := start; j < c.Ends[i]; j++ {
			parts = append(parts, Render(c.Keys, j)+":"+Render(c.Values, j))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case *chunk.Tuple:
		parts := make([]string, len(c.Elems))
		for j, e := range c.Elems {
			parts[j] = Render(e, i)
		}
		return "(" + strings.Join(parts, ",") + ")"
	case *chunk.Fixed[time.Time]:
		return c.Data[i].Format("2006-01-02")
	}
	return fmt.Sprint(col.Row(i))
}

// Dump renders every row of c and the internal Lengths of its columns, so
// two dumps are equal only if the chunks hold the same data and buffers.
func Dump(c *chunk.Chunk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rows=%d\n", c.Rows)
	for i, col := range c.Cols {
		fmt.Fprintf(&b, "%s %s:", c.Schema.Names[i], Lengths(col))
		for r := 0; r < col.Len(); r++ {
			fmt.Fprintf(&b, " %q", Render(col, r))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func Lengths(col chunk.Column) string {
	switch c := col.(type) {
	case *chunk.Strings:
		return fmt.Sprintf("strings(%d,%d)", len(c.Ends), len(c.Buf))
	case *chunk.Nullable:
		return fmt.Sprintf("nullable(%d,%s)", len(c.Nulls), Lengths(c.Inner))
	case *chunk.Array:
		return fmt.Sprintf("array(%d,%s)", len(c.Ends), Lengths(c.Inner))
	case *chunk.Map:
		return fmt.Sprintf("map(%d,%s,%s)", len(c.Ends), Lengths(c.Keys), Lengths(c.Values))
	case *chunk.Tuple:
		parts := make([]string, len(c.Elems))
		for j, e := range c.Elems {
			parts[j] = Lengths(e)
		}
		return fmt.Sprintf("tuple(%d,%s)", c.Len(), strings.Join(parts, ","))
	}
	return fmt.Sprintf("fixed(%d)", col.Len())
}

// CheckConsistent returns an error unless every column of c has c.Rows
// rows and every nested buffer agrees with its parent.
func CheckConsistent(c *chunk.Chunk) error {
	for i, col := range c.Cols {
		if col.Len() != c.Rows {
			return fmt.Errorf("column %s has %d rows, chunk %d", c.Schema.Names[i], col.Len(), c.Rows)
		}
		if err := CheckColumn(col); err != nil {
			return fmt.Errorf("column %s: %w", c.Schema.Names[i], err)
		}
	}
	return nil
}

func CheckColumn(col chunk.Column) error {
	switch c := col.(type) {
	case *chunk.Strings:
		if n := len(c.Ends); n > 0 && c.Ends[n-1] != len(c.Buf) || n == 0 && len(c.Buf) != 0 {
			return fmt.Errorf("string arena of %d bytes, last end %v", len(c.Buf), c.Ends)
		}
	case *chunk.Nullable:
		if c.Inner.Len() != len(c.Nulls) {
			return fmt.Errorf("nullable: %d values, %d null flags", c.Inner.Len(), len(c.Nulls))
		}
		return CheckColumn(c.Inner)
	case *chunk.Array:
		want := 0
		if n := len(c.Ends); n > 0 {
			want = c.Ends[n-1]
		}
		if c.Inner.Len() != want {
			return fmt.Errorf("array: %d elements, ends say %d", c.Inner.Len(), want)
		}
		return CheckColumn(c.Inner)
	case *chunk.Map:
		want := 0
		if n := len(c.Ends); n > 0 {
			want = c.Ends[n-1]
		}
		if c.Keys.Len() != want || c.Values.Len() != want {
			return fmt.Errorf("map: %d keys, %d values, ends say %d", c.Keys.Len(), c.Values.Len(), want)
		}
		if err := CheckColumn(c.Keys); err != nil {
			return err
		}
		return CheckColumn(c.Values)
	case *chunk.Tuple:
		for j, e := range c.Elems {
			if e.Len() != c.Len() {
				return fmt.Errorf("tuple: element %d has %d rows, the tuple %d", j, e.Len(), c.Len())
			}
			if err := CheckColumn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// RenderNew formats row i of a column of the types added with DateTime64:
// DateTime64 in RFC 3339 with nanoseconds, big integers in decimal, IP
// addresses in their text forms, dates as 2006-01-02.
func RenderNew(typ string, col chunk.Column, i int) string {
	switch c := col.(type) {
	case *chunk.DateTime64:
		return c.Time(i).Format(time.RFC3339Nano)
	case *chunk.BigInt:
		return c.Big(i).String()
	case *chunk.Fixed[uint32]:
		if typ == "IPv4" {
			x := c.Data[i]
			return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}).String()
		}
	case *chunk.Fixed[[16]byte]:
		return netip.AddrFrom16(c.Data[i]).String()
	case *chunk.Fixed[time.Time]:
		return c.Data[i].Format("2006-01-02")
	}
	return Render(col, i)
}
