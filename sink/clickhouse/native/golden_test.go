package native

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the encoder")

// goldenTypes are one or more types of each column family, each with the
// name of its golden file.
var goldenTypes = []struct{ file, typ string }{
	{"int8", "Int8"},
	{"int16", "Int16"},
	{"int32", "Int32"},
	{"int64", "Int64"},
	{"uint8", "UInt8"},
	{"uint16", "UInt16"},
	{"uint32", "UInt32"},
	{"uint64", "UInt64"},
	{"int128", "Int128"},
	{"uint128", "UInt128"},
	{"int256", "Int256"},
	{"uint256", "UInt256"},
	{"float32", "Float32"},
	{"float64", "Float64"},
	{"bool", "Bool"},
	{"string", "String"},
	{"fixedstring", "FixedString(3)"},
	{"uuid", "UUID"},
	{"decimal32", "Decimal(9, 2)"},
	{"decimal64", "Decimal(18, 4)"},
	{"decimal128", "Decimal(38, 4)"},
	{"decimal256", "Decimal(76, 10)"},
	{"enum8", "Enum8('a' = 1, 'b' = 2)"},
	{"enum16", "Enum16('x' = 1000)"},
	{"date", "Date"},
	{"date32", "Date32"},
	{"datetime", "DateTime"},
	{"datetime_tz", "DateTime('UTC')"},
	{"datetime64", "DateTime64(3)"},
	{"ipv4", "IPv4"},
	{"ipv6", "IPv6"},
	{"nullable_string", "Nullable(String)"},
	{"nullable_int64", "Nullable(Int64)"},
	{"nullable_decimal", "Nullable(Decimal(9, 2))"},
	{"array_int32", "Array(Int32)"},
	{"array_nullable_string", "Array(Nullable(String))"},
	{"array_array_uint8", "Array(Array(UInt8))"},
	{"lowcardinality_string", "LowCardinality(String)"},
	{"lowcardinality_nullable_string", "LowCardinality(Nullable(String))"},
	{"lowcardinality_uint32", "LowCardinality(UInt32)"},
	{"array_lowcardinality_string", "Array(LowCardinality(String))"},
	{"map_string_int8", "Map(String, Int8)"},
	{"map_lowcardinality_array", "Map(LowCardinality(String), Array(Nullable(Decimal(18, 4))))"},
	{"tuple", "Tuple(Int8, String)"},
	{"tuple_named", "Tuple(a UInt8, b Array(String))"},
	{"nested", "Nested(a UInt32, b String)"},
}

// goldenSizes are the chunks of a golden block: 5 rows in three chunks,
// one of them empty.
var goldenSizes = []int{3, 0, 2}

// TestGolden: the exact bytes of a small block of each type (its state
// prefix and data, 5 rows from three chunks, filled by fill) are those of
// its file in testdata/golden, a hex dump headed by the type. The files
// were written by the encoder with -update once its bytes matched the
// driver's column encoder (TestNativeMatchesDriver); a change to any
// type's wire form shows here as a diff of its file.
func TestGolden(t *testing.T) {
	for _, g := range goldenTypes {
		t.Run(g.file, func(t *testing.T) {
			ty, err := chunk.ParseType(g.typ)
			if err != nil {
				t.Fatal(err)
			}
			cols := splitChunks(t, ty, goldenSizes...)
			got := nativeOf(t, g.typ, cols)
			if want := driverNative(t, g.typ, cols); !bytes.Equal(got, want) {
				t.Fatalf("%s: encodes as\n%x\nthe driver as\n%x", g.typ, got, want)
			}
			text := fmt.Sprintf("# %s, %d rows in chunks of %v\n%s", g.typ, 5, goldenSizes, hex.Dump(got))
			path := filepath.Join("testdata", "golden", g.file+".hex")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to write it)", err)
			}
			if string(want) != text {
				t.Errorf("%s: the block differs from %s\ngot:\n%s\nwant:\n%s", g.typ, path, text, want)
			}
			if !strings.HasPrefix(string(want), "# "+g.typ+",") {
				t.Errorf("%s: the header of %s names another type", g.typ, path)
			}
		})
	}
}
