package pipeline

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// metaRecord is what record i of the metadata tests is produced with: keys
// null, empty, binary and text; headers none, empty and binary, with a
// repeated key.
func metaRecord(topic string, i int, value []byte) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: value,
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)*1001)}
	switch i % 4 {
	case 1:
		r.Key = []byte{}
	case 2:
		r.Key = []byte{0xff, 0x00, byte(i)}
	case 3:
		r.Key = []byte("k-" + strconv.Itoa(i))
	}
	switch i % 3 {
	case 1:
		r.Headers = []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "", Value: []byte{}}}
	case 2:
		r.Headers = []kgo.RecordHeader{{Key: "bin", Value: []byte{0x80, 0xfe, byte(i)}}, {Key: "dup", Value: []byte("x")}, {Key: "dup", Value: []byte("y")}}
	}
	return r
}

// produceMeta produces recs (partitions set) and returns them as the
// broker acknowledged them (offsets set).
func produceMeta(t *testing.T, kb *testenv.Broker, recs []*kgo.Record) {
	t.Helper()
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(len(recs)+1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// hexArray is how ClickHouse prints arrayMap(x -> hex(x), a) in TSV.
func hexArray(vals [][]byte) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = "'" + strings.ToUpper(hex.EncodeToString(v)) + "'"
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func upperHex(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }

// metaWant is the row metaTable holds for record r (its id, its value).
func metaWant(r *kgo.Record, id int) string {
	key := "NULL"
	if r.Key != nil {
		key = upperHex(r.Key)
	}
	var hk, hv [][]byte
	for _, h := range r.Headers {
		hk, hv = append(hk, []byte(h.Key)), append(hv, h.Value)
	}
	return strings.Join([]string{
		strconv.Itoa(id), upperHex([]byte(r.Topic)), strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.Offset, 10),
		strconv.FormatInt(r.Timestamp.Unix(), 10), strconv.FormatInt(r.Timestamp.UnixMilli(), 10), "create", "0",
		key, upperHex(r.Key), hexArray(hk), hexArray(hv), upperHex(r.Value),
	}, "\t")
}

const metaTable = `CREATE TABLE default.meta (
	id UInt64, topic String, part Int32, off Int64, ts DateTime, ts_ms Int64, tstype String, tstype_n Int8,
	key Nullable(String), key_s String, headers Nested(key String, value String), raw String%s
) ENGINE = MergeTree ORDER BY (part, off)`

const metaSelect = `SELECT id, hex(topic), part, off, toUnixTimestamp(ts), ts_ms, tstype, tstype_n,
	ifNull(hex(key), 'NULL'), hex(key_s), arrayMap(x -> hex(x), headers.key), arrayMap(x -> hex(x), headers.value), hex(raw)%s
	FROM default.meta ORDER BY id`

func metaConfig(t *testing.T, kb *testenv.Broker, ch *testenv.CH, name, extra, columns string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: %s, workers: 2}
source:
  kafka: {brokers: [%q], topics: [meta], group_id: %s, session_timeout: 6s}
%s
sink:
  clickhouse:
    addr: [%q]
    table: meta
    columns: {topic: _topic, part: _partition, off: _offset, ts: _timestamp, ts_ms: _timestamp, tstype: _timestamp_type,
      tstype_n: _timestamp_type, key: _key, key_s: _key, headers: _headers, raw: _raw%s}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, name, kb.Addr(), name, extra, ch.TCPAddr(), columns)
	cfg, err := config.Parse([]byte(y), name+".yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMetadataColumns: every metadata source fills its column from the
// Kafka record (keys null, empty and binary; headers none, empty and
// binary) over three partitions, each value read back as produced, into
// every type 18.16 has for it (LowCardinality(String), signed and
// unsigned integers, DateTime and milliseconds, String and Int8 timestamp
// types, String and Nullable(String) keys); a
// field whose name is a metadata source is read by quoting it (field:),
// and a column of such a name with no mapping reads the field.
func TestMetadataColumns(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	// LowCardinality needs a setting on 18.16 to be created.
	resp, err := http.Post("http://"+ch.HTTPAddr()+"/?allow_experimental_low_cardinality_type=1", "text/plain",
		strings.NewReader(fmt.Sprintf(metaTable, ", u Int64, _partition UInt32, topic_lc LowCardinality(String), part_u UInt32, off_u UInt64, ts_u UInt64")))
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("CREATE TABLE: HTTP %d: %s", resp.StatusCode, body)
	}
	resp.Body.Close()
	const n = 600
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = metaRecord("meta", i, fmt.Appendf(nil, `{"id":%d,"_offset":%d,"_partition":%d}`, i, 10*i, i+1))
	}
	produceMeta(t, kb, recs)
	_, stop := runPipeline(t, metaConfig(t, kb, ch, "meta", "", ", u: \"field:_offset\", topic_lc: _topic, part_u: _partition, off_u: _offset, ts_u: _timestamp"))
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.meta") >= n })
	stop()
	got := strings.Split(ch.Query(t, fmt.Sprintf(metaSelect, ", u, _partition, topic_lc, part_u, off_u, ts_u")), "\n")
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	for i, r := range recs {
		want := metaWant(r, i) + fmt.Sprintf("\t%d\t%d\t%s\t%d\t%d\t%d", 10*i, i+1, r.Topic, r.Partition, r.Offset, r.Timestamp.UnixMilli())
		if got[i] != want {
			t.Fatalf("row %d:\n got %s\nwant %s", i, got[i], want)
		}
	}
}

// TestMetadataManyRows: a record of many rows (ndjson) gives each of its
// rows its metadata, also when the open chunk is sealed in its middle.
func TestMetadataManyRows(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, fmt.Sprintf(metaTable, ""))
	const records, lines = 30, 200
	recs := make([]*kgo.Record, records)
	for i := range recs {
		var b []byte
		for j := range lines {
			b = fmt.Appendf(b, "{\"id\":%d}\n", i*lines+j)
		}
		recs[i] = metaRecord("meta", i, b)
	}
	produceMeta(t, kb, recs)
	cfg := metaConfig(t, kb, ch, "metamany", "decode: {json: {framing: ndjson}}\nchunk: {target_bytes: 16KiB}", "")
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.meta") >= records*lines })
	stop()
	got := strings.Split(ch.Query(t, fmt.Sprintf(metaSelect, "")), "\n")
	if len(got) != records*lines {
		t.Fatalf("%d rows, want %d", len(got), records*lines)
	}
	for i, r := range recs {
		for j := range lines {
			if want := metaWant(r, i*lines+j); got[i*lines+j] != want {
				t.Fatalf("record %d row %d:\n got %s\nwant %s", i, j, got[i*lines+j], want)
			}
		}
	}
}

// TestRawFormat: decode.format raw writes each value's bytes unchanged
// (JSON or not, binary, empty) with the metadata beside it.
func TestRawFormat(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.meta (topic String, part Int32, off Int64, raw String, key Nullable(String))
		ENGINE = MergeTree ORDER BY (part, off)`)
	const n = 300
	recs := make([]*kgo.Record, n)
	for i := range recs {
		var v []byte
		switch i % 3 {
		case 0:
			v = fmt.Appendf(nil, `{"id":%d}`, i)
		case 1:
			v = []byte{0x00, 0xff, 0xc3, byte(i)}
		default:
			v = []byte{}
		}
		recs[i] = metaRecord("meta", i, v)
	}
	produceMeta(t, kb, recs)
	y := fmt.Sprintf(`pipeline: {name: raw, workers: 2}
source:
  kafka: {brokers: [%q], topics: [meta], group_id: raw, session_timeout: 6s}
decode: {format: raw}
sink:
  clickhouse:
    addr: [%q]
    table: meta
    columns: {topic: _topic, part: _partition, off: _offset, raw: _raw, key: _key}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "raw.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.meta") >= n })
	stop()
	got := ch.Query(t, "SELECT topic, part, off, hex(raw), ifNull(hex(key), 'NULL') FROM default.meta ORDER BY part, off")
	byPos := map[string]string{}
	for _, line := range strings.Split(got, "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 {
			t.Fatalf("row %q", line)
		}
		byPos[f[1]+"/"+f[2]] = line
	}
	if len(byPos) != n {
		t.Fatalf("%d distinct (partition, offset), want %d", len(byPos), n)
	}
	for i, r := range recs {
		key := "NULL"
		if r.Key != nil {
			key = upperHex(r.Key)
		}
		want := fmt.Sprintf("meta\t%d\t%d\t%s\t%s", r.Partition, r.Offset, upperHex(r.Value), key)
		if g := byPos[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]; g != want {
			t.Fatalf("record %d:\n got %s\nwant %s", i, g, want)
		}
	}
}

// TestRawDecoderRefuses: under decode.format raw every column must take
// a record's metadata, and one its value.
func TestRawDecoderRefuses(t *testing.T) {
	s := &chunk.Schema{Names: []string{"a", "b"}, Types: []*chunk.Type{{Kind: chunk.KindString, Name: "String"}, {Kind: chunk.KindInt64, Name: "Int64"}}}
	for _, c := range []struct {
		srcs []string
		want string
	}{
		{[]string{"_raw", "b"}, `column b reads field "b", but a raw record has no fields`},
		{[]string{"_raw", "field:_offset"}, `column b reads field "_offset"`},
		{[]string{"_topic", "_offset"}, "no column takes the record's value: map a String column to _raw"},
	} {
		_, err := newRawDecoder(s, c.srcs, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sources %q: error %v, want one containing %q", c.srcs, err, c.want)
		}
	}
	d, err := newRawDecoder(s, []string{"_raw", "_offset"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	if _, err := d.Decode(nil, c); err == nil || c.Rows != 0 {
		t.Errorf("a null value: error %v, %d rows; want an error and no row", err, c.Rows)
	}
	if _, err := d.Decode([]byte("12345"), c); err == nil || c.Rows != 0 {
		t.Errorf("a value over max_record_bytes: error %v, %d rows; want an error and no row", err, c.Rows)
	}
	if n, err := d.Decode([]byte{}, c); err != nil || n != 1 || c.Rows != 1 {
		t.Errorf("an empty value: %d rows, error %v; want one row", n, err)
	}
}

// TestMetadataTypeRefused: a column whose type does not fit its source
// stops the pipeline at startup as a configuration error naming both.
func TestMetadataTypeRefused(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, fmt.Sprintf(metaTable, ", small UInt8"))
	cfg := metaConfig(t, kb, ch, "metabad", "", ", small: _partition")
	_, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	var ce *ConfigError
	if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "column small (UInt8) cannot hold _partition: its type must be one of Int32, Int64, UInt32, UInt64") {
		t.Fatalf("New = %v, want a configuration error naming column small and _partition", err)
	}
}

// TestTransformMetadata: the chain reads a record's metadata like fields:
// a filter on the partition, set steps from the topic and the offset, a
// route by topic; metadata mapped to columns flows through the chain.
func TestTransformMetadata(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	kb.CreateTopic(t, "meta2", 3)
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"t1", "t2"} {
		ch.Exec(t, "CREATE TABLE default."+table+` (id UInt64, part Int32, off Int64, off2 Int64, topic_up String, k Nullable(String), ts DateTime)
			ENGINE = MergeTree ORDER BY (part, off)`)
	}
	const n = 600
	recs := make([]*kgo.Record, n)
	for i := range recs {
		topic := "meta"
		if i%2 == 1 {
			topic = "meta2"
		}
		recs[i] = metaRecord(topic, i, fmt.Appendf(nil, `{"id":%d}`, i))
	}
	produceMeta(t, kb, recs)
	sink := func(name string) string {
		return fmt.Sprintf(`  %s:
    clickhouse:
      addr: [%q]
      table: %s
      columns: {part: _partition, off: _offset, k: _key, ts: _timestamp}
      batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
`, name, ch.TCPAddr(), name)
	}
	y := fmt.Sprintf(`pipeline: {name: metachain, workers: 2}
source:
  kafka: {brokers: [%q], topics: [meta, meta2], group_id: metachain, session_timeout: 6s}
transform:
  - filter: "_partition != 1"
  - set: {off2: "_offset * 2", topic_up: "upper(_topic)"}
  - route:
      rules:
        - {when: "_topic == 'meta2'", sink: t2}
      unmatched: t1
sinks:
%s%scheckpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), sink("t1"), sink("t2"))
	cfg, err := config.Parse([]byte(y), "metachain.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for i, r := range recs {
		if r.Partition == 1 {
			continue
		}
		table := "t1"
		if r.Topic == "meta2" {
			table = "t2"
		}
		key := "NULL"
		if r.Key != nil {
			key = upperHex(r.Key)
		}
		want[table] = append(want[table], fmt.Sprintf("%d\t%d\t%d\t%d\t%s\t%s\t%d", i, r.Partition, r.Offset, 2*r.Offset, strings.ToUpper(r.Topic), key, r.Timestamp.Unix()))
	}
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool {
		return ch.Count(t, "default.t1")+ch.Count(t, "default.t2") >= uint64(len(want["t1"])+len(want["t2"]))
	})
	stop()
	for _, table := range []string{"t1", "t2"} {
		got := ch.Query(t, "SELECT id, part, off, off2, topic_up, ifNull(hex(k), 'NULL'), toUnixTimestamp(ts) FROM default."+table+" ORDER BY id")
		if exp := strings.Join(want[table], "\n"); got != exp {
			t.Fatalf("%s:\n got %s\nwant %s", table, got, exp)
		}
	}
}

// TestRawFormatCreate: sink.clickhouse.schema.create makes a raw
// pipeline's table from its column map (the server's types: DateTime on
// 18.16), and the run fills it.
func TestRawFormatCreate(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	const n = 90
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = metaRecord("meta", i, fmt.Appendf(nil, "line %d", i))
	}
	produceMeta(t, kb, recs)
	y := fmt.Sprintf(`pipeline: {name: rawcreate, workers: 1}
source:
  kafka: {brokers: [%q], topics: [meta], group_id: rawcreate, session_timeout: 6s}
decode: {format: raw}
sink:
  clickhouse:
    addr: [%q]
    table: rawmade
    columns: {value: _raw, part: _partition, off: _offset, at: _timestamp}
    schema: {create: true, order_by: [part, off]}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "rawcreate.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.rawmade") >= n })
	stop()
	if got, want := ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 'rawmade' ORDER BY name"),
		"at\tDateTime\noff\tInt64\npart\tInt32\nvalue\tString"; got != want {
		t.Fatalf("columns:\n%s\nwant\n%s", got, want)
	}
	var want []string
	for _, r := range recs {
		want = append(want, fmt.Sprintf("%d\t%d\t%s\t%d", r.Partition, r.Offset, r.Value, r.Timestamp.Unix()))
	}
	slices.Sort(want)
	got := strings.Split(ch.Query(t, "SELECT part, off, value, toUnixTimestamp(at) FROM default.rawmade"), "\n")
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAvroMetadata: Avro records fill the metadata columns too, and
// validate_schema full does not count them as columns the writer schema
// leaves unfilled.
func TestAvroMetadata(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "meta", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.meta (id UInt64, ts DateTime, user_id UInt32, kind String, amount Float64, note Nullable(String),
		part Int32, off Int64, k Nullable(String),
		headers Nested(key String, value String)) ENGINE = MergeTree ORDER BY (part, off)`)
	schema := avro.MustParse(gen.AvroSchema)
	const n = 300
	recs := make([]*kgo.Record, n)
	for i := range recs {
		b, err := avro.Marshal(schema, gen.Make(seed, uint64(i)).Avro())
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = metaRecord("meta", i, b)
	}
	produceMeta(t, kb, recs)
	file := filepath.Join(t.TempDir(), "event.avsc")
	if err := os.WriteFile(file, []byte(gen.AvroSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	y := fmt.Sprintf(`pipeline: {name: avrometa, workers: 2}
source:
  kafka: {brokers: [%q], topics: [meta], group_id: avrometa, session_timeout: 6s}
decode: {format: avro, validate_schema: full, avro: {framing: raw, schema_file: %q}}
sink:
  clickhouse:
    addr: [%q]
    table: meta
    columns: {part: _partition, off: _offset, k: _key, headers: _headers}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), file, ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "avrometa.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.meta") >= n })
	stop()
	got := strings.Split(ch.Query(t, "SELECT id, kind, part, off, ifNull(hex(k), 'NULL'), arrayMap(x -> hex(x), headers.key), arrayMap(x -> hex(x), headers.value) FROM default.meta ORDER BY id"), "\n")
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	for i, r := range recs {
		key := "NULL"
		if r.Key != nil {
			key = upperHex(r.Key)
		}
		var hk, hv [][]byte
		for _, h := range r.Headers {
			hk, hv = append(hk, []byte(h.Key)), append(hv, h.Value)
		}
		want := fmt.Sprintf("%d\t%s\t%d\t%d\t%s\t%s\t%s", i, gen.Make(seed, uint64(i)).Kind, r.Partition, r.Offset, key, hexArray(hk), hexArray(hv))
		if got[i] != want {
			t.Fatalf("row %d:\n got %s\nwant %s", i, got[i], want)
		}
	}
}
