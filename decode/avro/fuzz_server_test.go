package avro

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	jsondec "github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/sink/clickhouse"
)

// The server fuzz targets check at length (make fuzz), against a real
// ClickHouse (one per fuzz process), that a record the decoder accepts is
// accepted by the server's insert, and, for FuzzServerJSON's one-field
// records, that the row etl stores equals the row the server's own
// JSONEachRow parser stores from the same record into a twin table, or
// that the difference is a documented one (jsonDifferences). Run alone,
// they check their seeds.

// serverFuzzTable is FuzzJSON's column set less the types 18.16 lacks
// (Bool, Map, named Tuple).
const serverFuzzTable = `CREATE TABLE default.%s (
  a Int8, b Int64, c Float32, d Float64, f String, g FixedString(4), h UUID, i Decimal(6, 2),
  j Enum8('x' = 1, 'y' = -2), k Enum16('big' = 1000), l DateTime, m Date, n Nullable(Int16),
  o Array(Nullable(String)), p Array(Array(UInt8)), q LowCardinality(Nullable(String)), r Array(Date),
  s Nullable(DateTime), t Tuple(Int8, Nullable(String)), w Nested(a Int32, b String), dd Decimal(18, 4),
  u8 UInt8, u32 UInt32, u64 UInt64, dn Nullable(Date), ds Decimal(38, 10)
) ENGINE = Memory`

// serverFuzz is the table a fuzz target inserts into, and its twin
// (table "_srv"), which the server's own parser fills.
type serverFuzz struct {
	d       *diffCH
	table   string
	cl      *clickhouse.Client
	tg      *clickhouse.Target
	rg      chunk.ServerRanges
	inserts int
}

// serverFuzzTarget creates the table and connects to it.
func serverFuzzTarget(f *testing.F, table, ddl string) *serverFuzz {
	d := newDiffCH(f)
	for _, tb := range []string{table, table + "_srv"} {
		create := strings.Replace(ddl, "%s", tb, 1)
		resp, err := postSettings(d, create)
		if err != nil {
			f.Fatalf("%s: %v %s", create, err, resp)
		}
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
	return &serverFuzz{d: d, table: table, cl: c, tg: tg, rg: chunk.RangesFor(c.ServerVersion())}
}

// insertOrFail inserts c and fails t if the server refuses it. The table
// (Memory, which checks the block as a real table does) is emptied every
// 10,000 inserts, so that a long run does not fill the server's memory.
func (s *serverFuzz) insertOrFail(t *testing.T, c *chunk.Chunk, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.cl.Insert(ctx, s.tg, []*chunk.Chunk{c}); err != nil {
		t.Fatalf("decoded %s, but the server refused the insert: %v", what, err)
	}
	if s.inserts++; s.inserts%10000 == 0 {
		if _, err := s.d.srv.QueryErr("TRUNCATE TABLE default." + s.table); err != nil {
			t.Fatal(err)
		}
	}
}

// sameAsServer inserts rec (a one-field record: the field of column col
// holding value, its JSON text) through etl (c, decoded from it) and
// through the server's JSONEachRow parser into the twin, each into an
// empty table, and fails t unless both store the same row, or the
// difference in column col is a documented one (jsonDifferences); every
// other column must hold the same default on both sides.
func (s *serverFuzz) sameAsServer(t *testing.T, c *chunk.Chunk, rec []byte, col int, value string) {
	for _, tb := range []string{s.table, s.table + "_srv"} {
		if _, err := s.d.srv.QueryErr("TRUNCATE TABLE default." + tb); err != nil {
			t.Fatal(err)
		}
	}
	s.insertOrFail(t, c, fmt.Sprintf("%q", rec))
	_, srvErr := s.d.srv.QueryErr("INSERT INTO default." + s.table + "_srv FORMAT JSONEachRow\n" + string(rec) + "\n")
	row := func(tb string) []string {
		text := s.d.srv.Query(t, "SELECT * FROM default."+tb+" FORMAT TabSeparated")
		if text == "" {
			return nil
		}
		return strings.Split(text, "\t")
	}
	etl, srv := row(s.table), row(s.table+"_srv")
	if len(etl) != len(s.tg.Schema.Names) {
		t.Fatalf("etl stored %d columns for %q, want one row of %d", len(etl), rec, len(s.tg.Schema.Names))
	}
	fam := diffFamily{name: s.tg.Schema.Names[col], typ: s.tg.Schema.Types[col].Name}
	e := diffResult{ok: true, stored: etl[col]}
	r := diffResult{ok: srvErr == nil && srv != nil}
	if r.ok {
		r.stored = srv[col]
	} else if srvErr != nil {
		r.err = srvErr.Error()
	}
	if r.ok {
		for i := range etl {
			if i != col && etl[i] != srv[i] {
				t.Fatalf("%q: column %s (not in the record): etl stores %q, the server %q", rec, s.tg.Schema.Names[i], etl[i], srv[i])
			}
		}
	}
	if r.ok && e.stored == r.stored {
		return
	}
	if why := documented(fam, value, e, r); why == "" {
		t.Fatalf("%q: column %s (%s): etl stores %q; the server ok=%v stores %q %s", rec, fam.name, fam.typ, e.stored, r.ok, r.stored, firstLine(r.err))
	}
}

// serverFuzzRecord is the record a FuzzServerJSON input stands for: with
// whole set, text itself; else an object with the field of column col%n
// holding text, as it is or (quoted) as a JSON string (only its double
// quotes escaped, so that its backslashes are escapes to parse). Most
// inputs then are records the decoder reads as far as the value's
// conversion, and many of them it accepts: those are what the server is
// asked about.
func serverFuzzRecord(tg *clickhouse.Target, col uint8, text string, quoted, whole bool) []byte {
	if whole {
		return []byte(text)
	}
	field := tg.Fields[int(col)%len(tg.Fields)]
	if quoted {
		text = `"` + strings.ReplaceAll(text, `"`, `\"`) + `"`
	}
	return []byte(`{"` + field + `":` + text + `}`)
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
		f.Add(uint8(0), s, false, true)
	}
	// Edge values of the differential test, a few into every column.
	var edges []string
	for _, fam := range diffFamilies() {
		edges = append(edges, fam.values...)
	}
	for col := range 27 {
		for k := range 6 {
			v := edges[(col*37+k*101)%len(edges)]
			if unq, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) && !strings.ContainsAny(unq, `"\`) {
				f.Add(uint8(col), unq, true, false)
			} else {
				f.Add(uint8(col), v, false, false)
			}
		}
	}
	sf := serverFuzzTarget(f, "fuzz_json", serverFuzzTable)
	tg := sf.tg
	dec, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields, MaxRecordBytes: 4096, Ranges: sf.rg})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, col uint8, text string, quoted, whole bool) {
		c, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		rec := serverFuzzRecord(tg, col, text, quoted, whole)
		if _, err := dec.Decode(rec, c); err != nil {
			return
		}
		if whole {
			sf.insertOrFail(t, c, fmt.Sprintf("%q", rec))
			return
		}
		i := int(col) % len(tg.Fields)
		if tg.Fields[i] != tg.Schema.Names[i] || strings.Contains(tg.Fields[i], ".") {
			// A Nested column's field: its arrays are compared as a whole
			// record's.
			sf.insertOrFail(t, c, fmt.Sprintf("%q", rec))
			return
		}
		value := text
		if quoted {
			value = `"` + strings.ReplaceAll(text, `"`, `\"`) + `"`
		}
		sf.sameAsServer(t, c, rec, i, value)
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

// serverFuzzDatum is the datum of FuzzServerAvro's typed inputs: every
// input is a valid datum of serverFuzzAvroSchema. Field which%15 takes
// its input, the others a value every column accepts, so that a value out
// of its column's range refuses only the inputs that put it there, and
// whatever the decoder accepts goes to the server.
func serverFuzzDatum(schema havro.Schema, which uint8, a int64, u8 int32, u32, l int64, m int32, dn int64, dnNull bool, dec []byte,
	c float64, g, h, j string, n int64, nNull bool, p int64) ([]byte, error) {
	unscaled := new(big.Int).SetBytes(dec)
	if len(dec) > 0 && dec[0]&0x80 != 0 { // two's complement
		unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(dec))))
	}
	// Within the writer's precision: 30 digits at scale 4, 38 at scale 2.
	lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)
	unscaled.Rem(unscaled, lim)
	v := map[string]any{
		"a": int64(1), "u8": int32(1), "u32": int64(1), "l": time.Unix(1, 0).UTC(), "m": time.Unix(86400, 0).UTC(),
		"dn": nil, "i": big.NewRat(1, 1), "dd": big.NewRat(1, 1), "c": 1.0, "g": "g", "h": "123e4567-e89b-12d3-a456-426614174000",
		"j": "x", "n": nil, "p": [][]int64{{1}}, "s": nil,
	}
	date := time.Unix(int64(m)*86400, 0).UTC()
	switch which % 15 {
	case 0:
		v["a"] = a
	case 1:
		v["u8"] = u8
	case 2:
		v["u32"] = u32
	case 3:
		v["l"] = time.UnixMilli(l).UTC()
	case 4:
		v["m"] = date
	case 5:
		if !dnNull {
			v["dn"] = time.UnixMicro(dn).UTC()
		}
	case 6:
		v["i"] = new(big.Rat).SetFrac(unscaled, big.NewInt(10000))
	case 7:
		v["dd"] = new(big.Rat).SetFrac(unscaled, big.NewInt(100))
	case 8:
		v["c"] = c
	case 9:
		v["g"] = g
	case 10:
		v["h"] = h
	case 11:
		v["j"] = j
	case 12:
		if !nNull {
			v["n"] = n
		}
	case 13:
		v["p"] = [][]int64{{p}, {}, {p, a}}
	case 14:
		if !dnNull {
			v["s"] = date
		}
	}
	return havro.Marshal(schema, v)
}

func FuzzServerAvro(f *testing.F) {
	schema := avroParse(f, serverFuzzAvroSchema)
	type in struct {
		a       int64
		u8      int32
		u32, l  int64
		m       int32
		dn      int64
		dnNull  bool
		dec     []byte
		c       float64
		g, h, j string
		n       int64
		nNull   bool
		p       int64
	}
	for _, x := range []in{
		{127, 255, 4294967295, 4294943999999, 49710, 4294943999999999, false, []byte{0x3b, 0x9a, 0xc9, 0xff}, 3.4e38, "abcd",
			"123e4567-e89b-12d3-a456-426614174000", "y", -32768, false, 255},
		{-128, 0, 0, 0, 0, 0, true, []byte{0xff}, math.Copysign(0, -1), "", "00000000-0000-0000-0000-000000000000", "x", 0, true, 0},
		{128, 256, 4294967296, 4294944000000, 49711, -1, false, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 3.5e38,
			"abcde", "not a uuid", "z", 32768, false, 256},
		{-1 << 63, -1, -1, -1, -1, 1 << 62, false, nil, math.Inf(1), "é", "", "", 1 << 40, false, -1},
	} {
		for which := range uint8(15) {
			f.Add(which, x.a, x.u8, x.u32, x.l, x.m, x.dn, x.dnNull, x.dec, x.c, x.g, x.h, x.j, x.n, x.nNull, x.p)
		}
	}
	sf := serverFuzzTarget(f, "fuzz_avro", serverFuzzTable)
	tg := sf.tg
	// Only the columns the writer schema fills: the others get defaults.
	a, err := New(serverFuzzAvroSchema, tg.Schema, Options{Fields: tg.Fields, MaxRecordBytes: 1 << 16, Ranges: sf.rg})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, av int64, u8 int32, u32, l int64, m int32, dn int64, dnNull bool, dec []byte,
		c float64, g, h, j string, n int64, nNull bool, p int64) {
		datum, err := serverFuzzDatum(schema, which, av, u8, u32, l, m, dn, dnNull, dec, c, g, h, j, n, nNull, p)
		if err != nil {
			return // not a datum of the schema (hamba/avro refuses to write it)
		}
		ch, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Decode(datum, ch); err != nil {
			return
		}
		sf.insertOrFail(t, ch, fmt.Sprintf("Avro datum %x", datum))
	})
}
