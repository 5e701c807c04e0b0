package pipeline

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestSchemaOnEveryShard: a sink of two shards with
// sink.clickhouse.schema.create and add_columns. Neither shard has the
// table: both get it at startup, derived from the registry's latest
// schema. A new writer schema with an added field gets its column on
// both shards before its records are written, and every row lands with
// its value. etl_schema_changes_total counts each statement run.
func TestSchemaOnEveryShard(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 4)
	ch1, ch2 := testenv.ClickHouse(t), testenv.ClickHouse(t)
	reg := registrytest.New(t)
	v1 := strings.Replace(eventSchema, `{"name": "kind", "type": "string"},`, "", 1)
	if v1 == eventSchema {
		t.Fatal("the schema has no kind field to take out")
	}
	id1 := reg.Register("events-value", v1)
	s1, s2 := avro.MustParse(v1), avro.MustParse(eventSchema)
	cfg := testConfig(t, kb, ch1, "schemashards")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	chc := cfg.Sink.ClickHouse
	chc.Addr = nil
	chc.Shards = []config.Shard{{Weight: 1, Replicas: []string{ch1.TCPAddr()}}, {Weight: 1, Replicas: []string{ch2.TCPAddr()}}}
	chc.Schema = config.TableSchema{Create: true, AddColumns: true, OrderBy: []string{"id"}}
	chc.DescribeInterval = 0
	p, stop := runPipeline(t, cfg)

	produce(t, kb, 0, 400, avroFrames(t, 0, 400, id1, s1))
	count := func() uint64 { return ch1.Count(t, "default.events") + ch2.Count(t, "default.events") }
	testenv.WaitFor(t, "v1 rows", time.Minute, func() bool { return count() >= 400 })
	for i, ch := range []*testenv.CH{ch1, ch2} {
		if got := ch.Query(t, "SELECT count() FROM system.columns WHERE database = 'default' AND table = 'events' AND name = 'kind'"); got != "0" {
			t.Fatalf("shard %d has a kind column before any schema has the field", i)
		}
	}
	id2 := reg.Register("events-value", eventSchema)
	produce(t, kb, 400, 400, avroFrames(t, 400, 800, id2, s2))
	testenv.WaitFor(t, "v2 rows", time.Minute, func() bool { return count() >= 800 })
	stop()

	var got []string
	for i, ch := range []*testenv.CH{ch1, ch2} {
		if n := ch.Count(t, "default.events"); n == 0 {
			t.Fatalf("shard %d has no rows: the sink did not spread them", i)
		}
		if ty := ch.Query(t, "SELECT type FROM system.columns WHERE database = 'default' AND table = 'events' AND name = 'kind'"); ty != "Nullable(String)" {
			t.Fatalf("shard %d: kind column type %q, want Nullable(String) (the field has no default)", i, ty)
		}
		if out := ch.Query(t, "SELECT id, kind FROM default.events WHERE id >= 400 ORDER BY id"); out != "" {
			got = append(got, strings.Split(out, "\n")...)
		}
		if n := ch.Query(t, "SELECT countIf(kind IS NOT NULL) FROM default.events WHERE id < 400"); n != "0" {
			t.Fatalf("shard %d: %s v1 rows have a kind", i, n)
		}
	}
	if total := count(); total != 800 {
		t.Fatalf("%d rows on the shards, want 800", total)
	}
	sort.Slice(got, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.SplitN(got[i], "\t", 2)[0])
		b, _ := strconv.Atoi(strings.SplitN(got[j], "\t", 2)[0])
		return a < b
	})
	if strings.Join(got, "\n") != kindsFrom(400, 800) {
		t.Fatalf("kind of the v2 rows differs from the generated records")
	}
	if n := testutil.ToFloat64(p.m.schemaChanges.WithLabelValues("default", changeCreateTable)); n != 2 {
		t.Errorf("etl_schema_changes_total{change=create_table} = %v, want 2 (one per shard)", n)
	}
	if n := testutil.ToFloat64(p.m.schemaChanges.WithLabelValues("default", changeAddColumn)); n != 2 {
		t.Errorf("etl_schema_changes_total{change=add_column} = %v, want 2 (one column on two shards)", n)
	}
}

// everyTypeSchema has a field of every Avro type, nullable ones, arrays,
// a map, a record, an array of records (with an array and a record in
// its elements) and a union no column can hold.
const everyTypeSchema = `{"type":"record","name":"All","fields":[
 {"name":"id","type":"long"},
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"by","type":"bytes"},
 {"name":"s","type":"string"},
 {"name":"fx","type":{"type":"fixed","name":"F4","size":4}},
 {"name":"en","type":{"type":"enum","name":"E","symbols":["A","B"]}},
 {"name":"u","type":{"type":"string","logicalType":"uuid"}},
 {"name":"dt","type":{"type":"int","logicalType":"date"}},
 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsm","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}},
 {"name":"ns","type":["null","string"]},
 {"name":"nl","type":["null","long"],"default":null},
 {"name":"arr","type":{"type":"array","items":"long"}},
 {"name":"arrn","type":{"type":"array","items":["null","string"]}},
 {"name":"m","type":{"type":"map","values":"long"}},
 {"name":"rec","type":{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"]}]}},
 {"name":"items","type":{"type":"array","items":{"type":"record","name":"It","fields":[
   {"name":"x","type":"long"},{"name":"y","type":{"type":"array","items":"string"}},
   {"name":"z","type":{"type":"record","name":"Z","fields":[{"name":"q","type":"double"}]}}]}}},
 {"name":"multi","type":["string","long"]}]}`

// TestSchemaEveryAvroType: the table sink.clickhouse.schema.create derives
// from a schema with every Avro type is accepted by the server, and the
// pipeline then fills it: every record lands, values at their bounds
// included, and reads back as written.
func TestSchemaEveryAvroType(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	ch := testenv.ClickHouse(t)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "all.avsc")
	if err := os.WriteFile(schemaFile, []byte(everyTypeSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := avro.MustParse(everyTypeSchema)
	str := func(s string) *string { return &s }
	ts := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	recs := map[uint64][]byte{}
	const n = 40
	for k := uint64(0); k < n; k++ {
		i := int64(k)
		v := map[string]any{
			"id": i, "b": k%2 == 0, "i": int32(math.MinInt32 + int64(k)), "f": float32(k) / 4, "d": -float64(k) * 1e300,
			"by": []byte{0, byte(k), 0xff}, "s": fmt.Sprintf("s\t%d'\\", k), "fx": [4]byte{1, 2, 3, byte(k)}, "en": []string{"A", "B"}[k%2],
			"u": fmt.Sprintf("00000000-0000-0000-0000-%012d", k), "dt": ts.AddDate(0, 0, int(k)).Truncate(24 * time.Hour),
			"tm": time.Duration(k) * time.Millisecond, "tu": time.Duration(k) * time.Microsecond,
			"tsm": ts.Add(time.Duration(k) * time.Second), "tsu": ts.Add(time.Duration(k) * time.Minute),
			"dec": big.NewRat(int64(k)*1000+123, 1000), "ns": nil, "nl": nil,
			"arr": []any{math.MaxInt64 - i, math.MinInt64 + i}, "arrn": []any{nil, str("x")},
			"m": map[string]any{"k": i}, "rec": map[string]any{"a": int32(k), "b": str("rb")},
			"items": []any{map[string]any{"x": i, "y": []any{"p", "q"}, "z": map[string]any{"q": 0.5}}},
			"multi": "m",
		}
		if k%3 == 0 {
			v["ns"], v["nl"] = str("n"), i*7
		}
		b, err := avro.Marshal(sc, v)
		if err != nil {
			t.Fatal(err)
		}
		recs[k] = b
	}
	cfg := testConfig(t, kb, ch, "everytype")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "raw", SchemaFile: schemaFile}
	cfg.Sink.ClickHouse.Table = "every"
	cfg.Sink.ClickHouse.Schema = config.TableSchema{Create: true, OrderBy: []string{"id"}}
	_, stop := runPipeline(t, cfg)
	produce(t, kb, 0, n, recs)
	testenv.WaitFor(t, "rows", time.Minute, func() bool {
		out, err := ch.QueryErr("SELECT count() FROM default.every")
		return err == nil && out == fmt.Sprint(n)
	})
	stop()

	types := ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 'every' FORMAT TSV")
	want := "id\tInt64\nb\tUInt8\ni\tInt32\nf\tFloat32\nd\tFloat64\nby\tString\ns\tString\nfx\tFixedString(4)\nen\tString\n" +
		"u\tUUID\ndt\tDate\ntm\tInt32\ntu\tInt64\ntsm\tDateTime\ntsu\tDateTime\ndec\tDecimal(10, 3)\nns\tNullable(String)\n" +
		"nl\tNullable(Int64)\narr\tArray(Int64)\narrn\tArray(Nullable(String))\nrec\tTuple(Int32, Nullable(String))\n" +
		"items.x\tArray(Int64)\nitems.y\tArray(Array(String))\nitems.z\tArray(Tuple(Float64))"
	if types != want {
		t.Fatalf("the created table:\n%s\nwant\n%s", types, want)
	}
	got := ch.Query(t, "SELECT id, b, i, f, d, hex(by), s, hex(fx), en, toString(u), dt, tm, tu, toUnixTimestamp(tsm), toUnixTimestamp(tsu), dec, ns, nl, arr, arrn, rec, items.x, items.y, items.z FROM default.every WHERE id IN (0, 3, 39) ORDER BY id FORMAT TSV")
	wantRows := "0\t1\t-2147483648\t0\t-0\t0000FF\ts\\t0\\'\\\\\t01020300\tA\t00000000-0000-0000-0000-000000000000\t2026-03-04\t0\t0\t1772600767\t1772600767\t0.123\tn\t0\t[9223372036854775807,-9223372036854775808]\t[NULL,'x']\t(0,'rb')\t[0]\t[['p','q']]\t[(0.5)]\n" +
		"3\t0\t-2147483645\t0.75\t-3e300\t0003FF\ts\\t3\\'\\\\\t01020303\tB\t00000000-0000-0000-0000-000000000003\t2026-03-07\t3\t3\t1772600770\t1772600947\t3.123\tn\t21\t[9223372036854775804,-9223372036854775805]\t[NULL,'x']\t(3,'rb')\t[3]\t[['p','q']]\t[(0.5)]\n" +
		"39\t0\t-2147483609\t9.75\t-3.9e301\t0027FF\ts\\t39\\'\\\\\t01020327\tB\t00000000-0000-0000-0000-000000000039\t2026-04-12\t39\t39\t1772600806\t1772603107\t39.123\tn\t273\t[9223372036854775768,-9223372036854775769]\t[NULL,'x']\t(39,'rb')\t[39]\t[['p','q']]\t[(0.5)]"
	if got != wantRows {
		t.Fatalf("rows:\n%s\nwant\n%s", got, wantRows)
	}
	if got := ch.Query(t, "SELECT countIf(ns IS NULL), countIf(nl IS NULL), sum(length(arr)), sum(b) FROM default.every"); got != "26\t26\t80\t20" {
		t.Fatalf("NULLs, array lengths, trues: %s", got)
	}
}
