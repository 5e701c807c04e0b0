package decode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/sink/clickhouse"
)

// The server fuzz targets check the invariant "decoded => the server
// accepts it" at length (make fuzz): a record the decoder accepts is
// inserted through the sink into a real ClickHouse (one per fuzz process),
// and a refused insert fails. Run alone, they check their seeds.

// serverFuzzTable is FuzzJSON's column set less the types 18.16 lacks
// (Bool, Map, named Tuple).
const serverFuzzTable = `CREATE TABLE default.%s (
  a Int8, b Int64, c Float32, d Float64, f String, g FixedString(4), h UUID, i Decimal(6, 2),
  j Enum8('x' = 1, 'y' = -2), k Enum16('big' = 1000), l DateTime, m Date, n Nullable(Int16),
  o Array(Nullable(String)), p Array(Array(UInt8)), q LowCardinality(Nullable(String)), r Array(Date),
  s Nullable(DateTime), t Tuple(Int8, Nullable(String)), w Nested(a Int32, b String), dd Decimal(18, 4),
  u8 UInt8, u32 UInt32, u64 UInt64, dn Nullable(Date), ds Decimal(38, 10)
) ENGINE = Memory`

// serverFuzzTarget creates the table and returns its client and target.
func serverFuzzTarget(f *testing.F, table, ddl string) (*clickhouse.Client, *clickhouse.Target, chunk.ServerRanges) {
	d := newDiffCH(f)
	create := strings.Replace(ddl, "%s", table, 1)
	resp, err := postSettings(d, create)
	if err != nil {
		f.Fatalf("%s: %v %s", create, err, resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := clickhouse.Connect(ctx, clickhouse.Options{Addr: []string{d.srv.TCPAddr()}, Database: "default", Table: table,
		DialTimeout: 5 * time.Second, Settings: map[string]any{"max_execution_time": 60}}, d.log)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	tg, err := c.Plan(ctx)
	if err != nil {
		f.Fatal(err)
	}
	return c, tg, chunk.RangesFor(c.ServerVersion())
}

// insertOrFail inserts c and fails t if the server refuses it.
func insertOrFail(t *testing.T, cl *clickhouse.Client, tg *clickhouse.Target, c *chunk.Chunk, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Insert(ctx, tg, []*chunk.Chunk{c}); err != nil {
		t.Fatalf("decoded %s, but the server refused the insert: %v", what, err)
	}
}

func FuzzServerJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"b":-5,"c":1.5,"d":"2.5","f":{"z":[1]},"g":"abcd","h":"123e4567-e89b-12d3-a456-426614174000","i":"1234.56",` +
			`"j":"y","k":1000,"l":"2026-11-29 10:00:00","m":1795946400000,"n":null,"o":[null,"x"],"p":[[1],[],[2,3]],"q":"lc",` +
			`"r":["2026-01-01",0],"s":"2026-11-29T10:00:00+01:00","t":[1,"x"],"w":[{"a":1,"b":"p"},{"b":"q"}]}`,
		`{"i":1e3,"dd":"99999999999999.99999","ds":-1e-999999999,"u64":18446744073709551615,"u8":"255","u32":4.294967295e9}`,
		`{"l":4294943999,"m":"2106-02-07","dn":"2106-02-07T23:59:59Z","r":[49710]}`,
		`{"c":3.4028235e38,"d":4.9e-324,"f":"\u0000\ud800","g":"éé","h":"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"}`,
	} {
		f.Add([]byte(s))
	}
	cl, tg, rg := serverFuzzTarget(f, "fuzz_json", serverFuzzTable)
	dec, err := NewJSON(tg.Schema, JSONOptions{Fields: tg.Fields, MaxRecordBytes: 4096, Ranges: rg})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		c, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dec.Decode(value, c); err != nil {
			return
		}
		insertOrFail(t, cl, tg, c, string(value))
	})
}

// serverFuzzAvroSchema writes edge-prone Avro types into narrower columns.
const serverFuzzAvroSchema = `{"type":"record","name":"R","fields":[
  {"name":"a","type":"long"}, {"name":"u8","type":"int"}, {"name":"u32","type":"long"},
  {"name":"l","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"m","type":{"type":"int","logicalType":"date"}},
  {"name":"dn","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
  {"name":"i","type":{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}},
  {"name":"dd","type":{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":38,"scale":2}},
  {"name":"c","type":"double"}, {"name":"g","type":"string"}, {"name":"h","type":"string"},
  {"name":"j","type":"string"}, {"name":"n","type":["null","long"]},
  {"name":"p","type":{"type":"array","items":{"type":"array","items":"long"}}},
  {"name":"s","type":["null",{"type":"int","logicalType":"date"}]}
]}`

func FuzzServerAvro(f *testing.F) {
	f.Add([]byte{})
	schema := avroParse(f, serverFuzzAvroSchema)
	for _, v := range []map[string]any{
		{"a": int64(127), "u8": 255, "u32": int64(4294967295), "l": time.Unix(4294943999, 0).UTC(), "m": time.Unix(49710*86400, 0).UTC(),
			"dn": nil, "i": avroDec(999999999, 2), "dd": avroDec(-99999999999999, 4), "c": 3.4e38, "g": "abcd",
			"h": "123e4567-e89b-12d3-a456-426614174000", "j": "y", "n": int64(-32768), "p": [][]int64{{255}, {}}, "s": nil},
		{"a": int64(-128), "u8": 0, "u32": int64(0), "l": time.Unix(0, 0).UTC(), "m": time.Unix(0, 0).UTC(),
			"dn": time.Unix(1795946400, 0).UTC(), "i": avroDec(-1, 6), "dd": avroDec(1, 0), "c": -0.0, "g": "",
			"h": "00000000-0000-0000-0000-000000000000", "j": "x", "n": nil, "p": [][]int64{}, "s": time.Unix(86400, 0).UTC()},
	} {
		b, err := avro.Marshal(schema, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	cl, tg, rg := serverFuzzTarget(f, "fuzz_avro", serverFuzzTable)
	// Only the columns the writer schema fills: the others get defaults.
	a, err := NewAvro(serverFuzzAvroSchema, tg.Schema, AvroOptions{Fields: tg.Fields, MaxRecordBytes: 1 << 16, Ranges: rg})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, datum []byte) {
		c, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Decode(datum, c); err != nil {
			return
		}
		insertOrFail(t, cl, tg, c, fmt.Sprintf("Avro datum %x", datum))
	})
}
