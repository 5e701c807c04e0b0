package chunk

import (
	"fmt"
	"testing"
)

// TestTypeDefaults: without a table DEFAULT, AppendDefault appends the
// value ClickHouse gives a column of the type that has none, a value of
// the type (not the Go zero value of its buffer).
func TestTypeDefaults(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{"Int32", "0"},
		{"String", ""},
		{"FixedString(3)", ""},
		{"UUID", "00000000-0000-0000-0000-000000000000"},
		{"Decimal(9, 2)", "0"},
		{"Enum8('b' = 2, 'c' = 1, 'a' = 1)", "a"},
		{"Enum16('x' = -300, 'y' = 5)", "x"},
		{"Date", "1970-01-01 00:00:00 +0000 UTC"},
		{"Date32", "1970-01-01 00:00:00 +0000 UTC"},
		{"DateTime", "0"},
		{"IPv4", "0"},
		{"Nullable(UUID)", "<nil>"},
		{"Array(Date)", "[]"},
		{"Tuple(UUID, Date)", "[00000000-0000-0000-0000-000000000000 1970-01-01 00:00:00 +0000 UTC]"},
		{"Map(String, Decimal(9, 2))", "[]"},
		{"LowCardinality(String)", ""},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		col, err := NewColumn(typ)
		if err != nil {
			t.Fatal(err)
		}
		col.AppendDefault()
		if got := fmt.Sprint(col.Row(0)); got != tc.want {
			t.Errorf("%s: default %q, want %q", tc.typ, got, tc.want)
		}
	}
}
