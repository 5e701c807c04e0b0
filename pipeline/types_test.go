package pipeline

import (
	"context"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// typesDDL is a table with every type ClickHouse 18.16 has that the
// decoders fill (LowCardinality is covered by the sink's own tests: it
// needs a setting at CREATE time).
const typesDDL = `CREATE TABLE default.types (
  i8 Int8, u8 UInt8, i16 Int16, u16 UInt16, i32 Int32, u32 UInt32, i64 Int64, u64 UInt64,
  f32 Float32, f64 Float64, s String, fs FixedString(4), uid UUID, d Date, dt DateTime,
  e Enum8('a' = 1, 'b' = 2), dec Decimal(18, 4), ns Nullable(String), ni Nullable(Int64),
  arr Array(String), aa Array(Array(UInt8))
) ENGINE = MergeTree ORDER BY i8`

// typesJSON are three records at the types' edges, and typesWant what
// ClickHouse must hold for them (typesQuery's TabSeparated, ordered by
// i8). Date and DateTime are read as numbers: 18.16 prints the epoch as
// 0000-00-00. The largest DateTime is the last 18.16 reads back
// (chunk.ServerRanges): the decoders refuse a later one on this server.
var typesJSON = []string{
	`{"i8": -128, "u8": 0, "i16": -32768, "u16": 0, "i32": -2147483648, "u32": 0, "i64": -9223372036854775808, "u64": 0,
	  "f32": -1.5, "f64": -1e300, "s": "", "fs": "ab", "uid": "00000000-0000-0000-0000-000000000000", "d": "1970-01-01",
	  "dt": 0, "e": "a", "dec": "-99999999999999.9999", "ns": null, "ni": null, "arr": [], "aa": []}`,
	`{"i8": 127, "u8": 255, "i16": 32767, "u16": 65535, "i32": 2147483647, "u32": 4294967295, "i64": 9223372036854775807, "u64": 18446744073709551615,
	  "f32": 3.25, "f64": 1e300, "s": "naïve", "fs": "abcd", "uid": "123e4567-e89b-12d3-a456-426614174000", "d": "2105-12-31",
	  "dt": "2106-02-06T23:59:59Z", "e": "b", "dec": "99999999999999.9999", "ns": "v", "ni": 9223372036854775807, "arr": ["a", "b"], "aa": [[1, 2], [], [3]]}`,
	`{"i8": 0, "u8": 7, "i16": 1, "u16": 2, "i32": 3, "u32": 4, "i64": 5, "u64": "6",
	  "f32": 0.5, "f64": 0.1, "s": "x", "fs": "zz", "uid": "ffffffff-ffff-ffff-ffff-ffffffffffff", "d": "2026-11-29",
	  "dt": 1764400000123, "e": "a", "dec": 1.5, "ns": "", "ni": -1, "arr": ["", "c"], "aa": [[255]]}`,
}

var typesWant = strings.Join([]string{
	"-128\t0\t-32768\t0\t-2147483648\t0\t-9223372036854775808\t0\t-1.5\t-1e300\t\tab\\0\\0\t00000000-0000-0000-0000-000000000000\t0\t0\ta\t-99999999999999.9999\t\\N\t\\N\t[]\t[]",
	"0\t7\t1\t2\t3\t4\t5\t6\t0.5\t0.1\tx\tzz\\0\\0\tffffffff-ffff-ffff-ffff-ffffffffffff\t20786\t1764400000\ta\t1.5000\t\t-1\t['','c']\t[[255]]",
	"127\t255\t32767\t65535\t2147483647\t4294967295\t9223372036854775807\t18446744073709551615\t3.25\t1e300\tnaïve\tabcd\t123e4567-e89b-12d3-a456-426614174000\t49672\t4294943999\tb\t99999999999999.9999\tv\t9223372036854775807\t['a','b']\t[[1,2],[],[3]]",
}, "\n")

const typesQuery = `SELECT i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, s, fs, uid, toUInt16(d), toUInt32(dt),
  e, dec, ns, ni, arr, aa FROM default.types ORDER BY i8`

const typesAvroSchema = `{"type": "record", "name": "T", "fields": [
  {"name": "i8", "type": "int"}, {"name": "u8", "type": "int"}, {"name": "i16", "type": "int"}, {"name": "u16", "type": "int"},
  {"name": "i32", "type": "int"}, {"name": "u32", "type": "long"}, {"name": "i64", "type": "long"}, {"name": "u64", "type": "long"},
  {"name": "f32", "type": "float"}, {"name": "f64", "type": "double"}, {"name": "s", "type": "string"},
  {"name": "fs", "type": {"type": "fixed", "name": "F4", "size": 2}},
  {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "d", "type": {"type": "int", "logicalType": "date"}},
  {"name": "dt", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["a", "b"]}},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4}},
  {"name": "ns", "type": ["null", "string"]}, {"name": "ni", "type": ["null", "long"]},
  {"name": "arr", "type": {"type": "array", "items": "string"}},
  {"name": "aa", "type": {"type": "array", "items": {"type": "array", "items": "int"}}}
]}`

// typesAvro are the same three records as typesJSON, in Avro (the
// unsigned maxima of 64 bits do not fit Avro's signed long: row 2 carries
// u64 as its two's complement, which is out of range for UInt64, so it is
// given the largest long instead and the expectation adjusted).
func typesAvro(t *testing.T) [][]byte {
	t.Helper()
	s := avro.MustParse(typesAvroSchema)
	str := func(v string) *string { return &v }
	i64 := func(v int64) *int64 { return &v }
	rows := []map[string]any{
		{"i8": -128, "u8": 0, "i16": -32768, "u16": 0, "i32": -2147483648, "u32": int64(0), "i64": int64(-9223372036854775808), "u64": int64(0),
			"f32": float32(-1.5), "f64": -1e300, "s": "", "fs": [2]byte{'a', 'b'}, "uid": "00000000-0000-0000-0000-000000000000",
			"d": time.Unix(0, 0).UTC(), "dt": time.Unix(0, 0).UTC(), "e": "a", "dec": big.NewRat(-999999999999999999, 10000), "ns": nil, "ni": nil,
			"arr": []string{}, "aa": [][]int{}},
		{"i8": 127, "u8": 255, "i16": 32767, "u16": 65535, "i32": 2147483647, "u32": int64(4294967295), "i64": int64(9223372036854775807), "u64": int64(9223372036854775807),
			"f32": float32(3.25), "f64": 1e300, "s": "naïve", "fs": [2]byte{'a', 'b'}, "uid": "123e4567-e89b-12d3-a456-426614174000",
			"d": time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC), "dt": time.Unix(4294943999, 0).UTC(), "e": "b", "dec": big.NewRat(999999999999999999, 10000),
			"ns": str("v"), "ni": i64(9223372036854775807), "arr": []string{"a", "b"}, "aa": [][]int{{1, 2}, {}, {3}}},
		{"i8": 0, "u8": 7, "i16": 1, "u16": 2, "i32": 3, "u32": int64(4), "i64": int64(5), "u64": int64(6),
			"f32": float32(0.5), "f64": 0.1, "s": "x", "fs": [2]byte{'z', 'z'}, "uid": "ffffffff-ffff-ffff-ffff-ffffffffffff",
			"d": time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), "dt": time.UnixMilli(1764400000123).UTC(), "e": "a", "dec": big.NewRat(3, 2),
			"ns": str(""), "ni": i64(-1), "arr": []string{"", "c"}, "aa": [][]int{{255}}},
	}
	var out [][]byte
	for _, r := range rows {
		b, err := avro.Marshal(s, r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestTypesRoundTrip: records at every type's edges go from JSON and from
// Avro through the whole pipeline into a real table and read back equal.
func TestTypesRoundTrip(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) {
			kb, ch := setup(t)
			ch.Exec(t, typesDDL)
			var values [][]byte
			if format == "json" {
				for _, j := range typesJSON {
					values = append(values, []byte(j))
				}
			} else {
				values = typesAvro(t)
			}
			cl := kb.Client(t)
			for _, v := range values {
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "events", Partition: 0, Value: v}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			cfg := testConfig(t, kb, ch, "types-"+format)
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Sink.ClickHouse.Table = "types"
			if format == "avro" {
				path := t.TempDir() + "/t.avsc"
				if err := writeTestFile(path, typesAvroSchema); err != nil {
					t.Fatal(err)
				}
				cfg.Decode.Format = "avro"
				cfg.Decode.Avro = config.Avro{Framing: "raw", SchemaFile: path, NegativeCacheTTL: config.Duration(time.Minute)}
			}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			testenv.WaitFor(t, "rows", 30*time.Second, func() bool { return ch.Count(t, "default.types") >= 3 })
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := ch.Query(t, typesQuery)
			want := typesWant
			if format == "avro" {
				want = strings.Replace(want, "\t18446744073709551615\t", "\t9223372036854775807\t", 1)
				want = strings.Replace(want, "abcd", "ab\\0\\0", 1)
			}
			if got != want {
				gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
				for i := range wl {
					if i >= len(gl) || gl[i] != wl[i] {
						t.Errorf("row %d:\n got %q\nwant %q", i, safeIndex(gl, i), wl[i])
					}
				}
			}
		})
	}
}

func safeIndex(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(missing)"
}

func writeTestFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
