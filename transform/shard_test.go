package transform

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// keyCase is a sharding key value: its column type, the same value in
// ClickHouse SQL, and in a chunk column.
type keyCase struct {
	typ string
	sql string
	val any
}

var keyCases = []keyCase{
	{"UInt64", "toUInt64(12345)", uint64(12345)},
	{"UInt64", "toUInt64(18446744073709551615)", uint64(18446744073709551615)},
	{"UInt32", "toUInt32(12345)", 12345},
	{"UInt16", "toUInt16(65535)", 65535},
	{"UInt8", "toUInt8(57)", 57},
	{"Int64", "toInt64(-5)", int64(-5)},
	{"Int64", "toInt64(1234567890123)", int64(1234567890123)},
	{"Int32", "toInt32(-70000)", -70000},
	{"Int16", "toInt16(-300)", -300},
	{"Int8", "toInt8(-1)", -1},
	{"Float64", "toFloat64(1.5)", 1.5},
	{"Float32", "toFloat32(-2.25)", -2.25},
	{"String", "'abc'", "abc"},
	{"String", "''", ""},
	{"String", "'héllo wörld, a string longer than the thirty-two bytes of one stripe'", "héllo wörld, a string longer than the thirty-two bytes of one stripe"},
	{"FixedString(8)", "toFixedString('ab', 8)", "ab"},
	{"FixedString(2)", "toFixedString('ab', 2)", "ab"},
	{"Date", "toDate('2020-01-01')", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
	{"DateTime", "toDateTime(1577836800)", time.Unix(1577836800, 0)},
	{"Enum8('a' = 1, 'b' = -2)", "CAST('b' AS Enum8('a' = 1, 'b' = -2))", "b"},
	{"Enum16('x' = 1000, 'y' = 2)", "CAST('x' AS Enum16('x' = 1000, 'y' = 2))", "x"},
}

func (k keyCase) column(t testing.TB) (*chunk.Type, chunk.Column) {
	t.Helper()
	typ, err := chunk.ParseType(k.typ)
	if err != nil {
		t.Fatal(err)
	}
	col, err := chunk.NewColumn(typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendVal(col, typ, k.val); err != nil {
		t.Fatalf("%s: %v", k.typ, err)
	}
	return typ, col
}

// TestKeyHashClickHouse checks the sharding hash against the real server.
//
// The ClickHouse 18.16.1 of the test environment (Debian's build) has no
// xxHash64 at all ("Unknown function xxHash64"): it was built without the
// xxhash library. So the test checks the two halves separately where the
// function is missing: (1) the bytes KeyHasher hashes are the bytes the
// server hashes for a value of the column's type, checked with
// murmurHash2_64 and sipHash64, which hash a value's bytes the same way
// (murmurHash2_64(toUInt32(x)) = murmurHash2_64(<its 4 bytes>)); (2) the
// hash of those bytes is XXH64 with seed 0 (cespare/xxhash, and
// ClickHouse's documented xxHash64(”) = 17241709254077376921). Where the
// server has xxHash64 the values are compared directly.
func TestKeyHashClickHouse(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	hasXX := srv.Query(t, "SELECT count() FROM system.functions WHERE name = 'xxHash64'") == "1"
	if !hasXX {
		t.Logf("server %s has no xxHash64: checking the hashed bytes with murmurHash2_64 and sipHash64",
			srv.Query(t, "SELECT version()"))
	}
	var exprs []string
	for _, k := range keyCases {
		typ, col := k.column(t)
		b, err := AppendKeyBytes(nil, typ, col, 0)
		if err != nil {
			t.Fatalf("%s: %v", k.typ, err)
		}
		h, err := KeyHash(typ, col, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h != xxhash.Sum64(b) {
			t.Errorf("%s %s: KeyHash %d is not the xxHash64 of its bytes %x", k.typ, k.sql, h, b)
		}
		lit := fmt.Sprintf("unhex('%s')", strings.ToUpper(hex.EncodeToString(b)))
		exprs = append(exprs,
			fmt.Sprintf("murmurHash2_64(%s) = murmurHash2_64(%s)", k.sql, lit),
			fmt.Sprintf("sipHash64(%s) = sipHash64(%s)", k.sql, lit))
		if hasXX {
			exprs = append(exprs, fmt.Sprintf("xxHash64(%s) = %d", k.sql, h))
		}
	}
	got := strings.Split(srv.Query(t, "SELECT "+strings.Join(exprs, ", ")), "\t")
	if len(got) != len(exprs) {
		t.Fatalf("got %d values for %d expressions", len(got), len(exprs))
	}
	for i, g := range got {
		if g != "1" {
			t.Errorf("ClickHouse disagrees: %s", exprs[i])
		}
	}
	if xxhash.Sum64(nil) != 17241709254077376921 || xxhash.Sum64String("abc") != 0x44bc2cf5ad770999 {
		t.Errorf("xxhash is not XXH64 with seed 0")
	}
}

func TestKeyHasherNoAlloc(t *testing.T) {
	for _, k := range keyCases {
		typ, col := k.column(t)
		h, err := KeyHasher(typ)
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(10, func() { h(col, 0) }); a != 0 {
			t.Errorf("%s: %v allocations", k.typ, a)
		}
	}
	for _, n := range []int{3, 64, 65, 200} {
		s := strings.Repeat("x", n/2)
		want := xxhash.Sum64([]byte(s + strings.Repeat("\x00", n-len(s))))
		if got := hashPadded(s, n); got != want {
			t.Errorf("hashPadded(%d) = %d, want %d", n, got, want)
		}
	}
	for _, typ := range []string{"Nullable(UInt64)", "Array(UInt8)", "UUID", "Decimal(9, 2)"} {
		ct, _ := chunk.ParseType(typ)
		if _, err := KeyHasher(ct); err == nil {
			t.Errorf("%s: no error", typ)
		}
	}
}
