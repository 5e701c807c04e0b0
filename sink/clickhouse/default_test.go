package clickhouse

import (
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// stringer stands for the driver's uuid.UUID and decimal.Decimal, which
// reach SetDefault as fmt.Stringers.
type stringer string

func (s stringer) String() string { return string(s) }

// show formats every row of col (its Row), one string per row: pointers
// followed (nil is NULL), times in UTC, map rows as {k:v ...}.
func show(col chunk.Column) []string {
	out := make([]string, col.Len())
	for i := range out {
		out[i] = showValue(reflect.ValueOf(col.Row(i)))
	}
	return out
}

func showValue(v reflect.Value) string {
	if !v.IsValid() {
		return "NULL"
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case [][2]any: // a Map's row
		var parts []string
		for _, kv := range x {
			parts = append(parts, showValue(reflect.ValueOf(kv[0]))+":"+showValue(reflect.ValueOf(kv[1])))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case big.Int:
		return x.String()
	case [16]byte:
		return net.IP(x[:]).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "NULL"
		}
		return showValue(v.Elem())
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = showValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	}
	return fmt.Sprint(v.Interface())
}

// TestSetDefault: a type's default, set from a value as the driver scans
// it, is what every column built for the type appends in AppendDefault,
// before and after rows of its own, after Truncate and after a chunk's
// Reset.
func TestSetDefault(t *testing.T) {
	s := func(v string) *string { return &v }
	plus3 := time.FixedZone("plus3", 3*3600)
	for _, tc := range []struct {
		typ  string
		v    any
		want string // one row
	}{
		{"Int32", int32(42), "42"},
		{"Int8", int64(-1), "-1"},
		{"UInt64", uint64(1 << 63), "9223372036854775808"},
		{"Float64", -1.5, "-1.5"},
		{"Float32", float32(0.25), "0.25"},
		{"Bool", true, "true"},
		{"String", "unknown", `"unknown"`},
		{"String", []byte("bytes"), `"bytes"`},
		{"LowCardinality(String)", "lc", `"lc"`},
		{"FixedString(3)", "ab\x00", `"ab\x00"`},
		{"Enum8('p' = 1, 'q' = 2)", "q", `"q"`},
		{"Enum16('p' = 1, 'q' = 2)", int16(1), `"p"`},
		{"UUID", stringer("01234567-89ab-cdef-0123-456789abcdef"), `"01234567-89ab-cdef-0123-456789abcdef"`},
		{"Decimal(9, 2)", stringer("-1.25"), `"-1.25"`},
		{"Date", time.Date(2020, 1, 2, 0, 0, 0, 0, plus3), "2020-01-02T00:00:00Z"},
		{"Date32", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), "1900-01-01T00:00:00Z"},
		{"DateTime", time.Date(2020, 1, 2, 3, 4, 5, 0, plus3), "1577923445"},
		{"DateTime('UTC')", time.Unix(7, 0), "7"},
		{"DateTime64(3)", time.Date(2020, 1, 2, 3, 4, 5, 678900000, time.UTC), "2020-01-02T03:04:05.678Z"},
		{"DateTime64(6, 'UTC')", time.Date(2020, 1, 2, 3, 4, 5, 678900000, time.UTC), "2020-01-02T03:04:05.6789Z"},
		{"IPv4", net.ParseIP("1.2.3.4"), "16909060"},
		{"IPv4", uint32(16909060), "16909060"},
		{"IPv4", netip.MustParseAddr("1.2.3.4"), "16909060"},
		{"IPv6", "::ffff:1.2.3.4", "1.2.3.4"},
		{"Int128", big.NewInt(-5), "-5"},
		{"UInt256", new(big.Int).Lsh(big.NewInt(1), 200), new(big.Int).Lsh(big.NewInt(1), 200).String()},
		{"Nullable(String)", s("x"), `"x"`},
		{"Nullable(String)", (*string)(nil), "NULL"},
		{"Nullable(Int64)", nil, "NULL"},
		{"LowCardinality(Nullable(String))", s("y"), `"y"`},
		{"Array(UInt8)", []uint8{1, 2}, "[1 2]"},
		{"Array(Array(String))", [][]string{{"a"}, {}, {"b", "c"}}, `[["a"] [] ["b" "c"]]`},
		{"Array(Nullable(Int8))", []*int8{nil, new(int8)}, "[NULL 0]"},
		{"Tuple(Int8, String)", []any{int8(1), "z"}, `[1 "z"]`},
		{"Tuple(a Int8, b Array(String))", map[string]any{"b": []string{"q"}}, `[0 ["q"]]`},
		{"Tuple(Int64, Date)", struct {
			N int64
			D time.Time
		}{3, time.Date(2021, 5, 6, 0, 0, 0, 0, time.UTC)}, "[3 2021-05-06T00:00:00Z]"},
		{"Map(String, UInt64)", map[string]uint64{"b": 2, "a": 1}, `{"a":1 "b":2}`},
		{"Map(String, Array(Int32))", map[string][]int32{"k": {1, 2}}, `{"k":[1 2]}`},
	} {
		ty, err := chunk.ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := SetDefault(ty, tc.v); err != nil {
			t.Errorf("%s: SetDefault(%v): %v", tc.typ, tc.v, err)
			continue
		}
		if !ty.HasDefault() || ty.Default().Len() != 1 {
			t.Errorf("%s: no one-row default", tc.typ)
			continue
		}
		c, err := chunk.New(&chunk.Schema{Names: []string{"c"}, Types: []*chunk.Type{ty}})
		if err != nil {
			t.Fatal(err)
		}
		col := c.Cols[0]
		col.AppendDefault()
		// A row of its own between two defaults: the default's rows must
		// not depend on what the column holds.
		if err := appendScanned(col, ty, tc.v); err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		col.AppendDefault()
		if got, want := strings.Join(show(col), "|"), strings.Repeat(tc.want+"|", 3); got+"|" != want {
			t.Errorf("%s: rows %s, want %s", tc.typ, got, want)
		}
		c.Rows = 3
		c.Reset()
		col.AppendDefault()
		if got := show(col); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: after Reset: %v, want %s", tc.typ, got, tc.want)
		}
		// Appending the default costs no allocation once the column has
		// grown.
		for range 8 {
			col.AppendDefault()
		}
		c.Reset()
		if n := testing.AllocsPerRun(100, func() {
			col.AppendDefault()
			col.Truncate(0)
		}); n != 0 {
			t.Errorf("%s: AppendDefault allocates %v times", tc.typ, n)
		}
	}
}

// TestSetDefaultRefused: values that are not of the type are refused.
func TestSetDefaultRefused(t *testing.T) {
	for _, tc := range []struct {
		typ string
		v   any
		msg string
	}{
		{"Int8", 300, "out of range"},
		{"UInt16", -1, "out of range"},
		{"String", nil, "NULL for a type that is not Nullable"},
		{"FixedString(2)", "abc", "do not fit"},
		{"Enum8('p' = 1)", "z", "not a name"},
		{"Date", "2020-01-02", "cannot be a value"},
		{"DateTime", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), "outside DateTime's range"},
		{"IPv4", "::1", "not an IPv4 address"},
		{"Int128", new(big.Int).Lsh(big.NewInt(1), 127), "out of range"},
		{"Tuple(Int8, String)", []any{1}, "1 elements"},
		{"Array(Int8)", 5, "cannot be a value"},
	} {
		ty, err := chunk.ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		err = SetDefault(ty, tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: SetDefault(%v) = %v, want %q", tc.typ, tc.v, err, tc.msg)
		}
		if ty.HasDefault() {
			t.Errorf("%s: a refused default was kept", tc.typ)
		}
	}
}
