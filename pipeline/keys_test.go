package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
	"github.com/etl-project/etl/source/kafka"
)

// keysConfig is a pipeline reading topic keys into the table keys; decode
// and rest are YAML lines (decode's mapping, then the other sections).
func keysConfig(t *testing.T, kb *testenv.Broker, ch *testenv.CH, name, decode, sinks string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: %s, workers: 2}
source:
  kafka: {brokers: [%q], topics: [keys], group_id: %s, session_timeout: 6s}
decode: %s
%s
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, name, kb.Addr(), name, decode, sinks)
	cfg, err := config.Parse([]byte(y), name+".yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// oneSink is the sink section of a pipeline writing table with columns.
func oneSink(ch *testenv.CH, table, columns string) string {
	return fmt.Sprintf(`sink:
  clickhouse:
    addr: [%q]
    table: %s
    columns: {%s}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}`, ch.TCPAddr(), table, columns)
}

// headersOf is a record's headers by key.
func headersOf(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// TestKeyJSON: JSON keys fill columns through _key.NAME (a field the key
// lacks and a null key give the column's default: NULL for a Nullable),
// on the direct path; a key that is not JSON and one whose field has the
// wrong type go to the dead-letter topic with reasons naming the key, its
// offset and what is wrong, and no other record is lost.
func TestKeyJSON(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "keys", 3)
	kb.CreateTopic(t, "keys.dlq", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.keys (id UInt64, user_id UInt64, region Nullable(String), k String, part Int32, off Int64)
		ENGINE = MergeTree ORDER BY (part, off)`)
	const n = 300
	recs := make([]*kgo.Record, n)
	bad := map[int]string{}
	for i := range recs {
		r := &kgo.Record{Topic: "keys", Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"id":%d}`, i)}
		switch i % 50 {
		case 7:
			r.Key = []byte("not json")
			bad[i] = "corrupt"
		case 17:
			r.Key = []byte(`{"user_id":"abc"}`)
			bad[i] = "wrong_type"
		case 13:
			// A null key: the fields' defaults.
		case 23:
			r.Key = fmt.Appendf(nil, `{"user_id":%d}`, 10*i)
		default:
			r.Key = fmt.Appendf(nil, `{"region":"r%d","user_id":%d,"other":[1,2]}`, i%5, 10*i)
		}
		recs[i] = r
	}
	produceMeta(t, kb, recs)
	cfg := keysConfig(t, kb, ch, "keyjson", `{key: {format: json}, on_error: dlq, dlq: {topic: keys.dlq}}`,
		oneSink(ch, "keys", "user_id: _key.user_id, region: _key.region, k: _key, part: _partition, off: _offset"))
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.keys") >= uint64(n-len(bad)) })
	dead := readTopic(t, kb, "keys.dlq", len(bad))
	stop()
	var want []string
	for i, r := range recs {
		if bad[i] != "" {
			continue
		}
		user, region := "0", "NULL"
		switch {
		case r.Key == nil:
		case i%50 == 23:
			user = strconv.Itoa(10 * i)
		default:
			user, region = strconv.Itoa(10*i), fmt.Sprintf("r%d", i%5)
		}
		want = append(want, fmt.Sprintf("%d\t%s\t%s\t%s", i, user, region, r.Key))
	}
	if got := ch.Query(t, "SELECT id, user_id, ifNull(region, 'NULL'), k FROM default.keys ORDER BY id"); got != strings.Join(want, "\n") {
		t.Fatalf("rows:\n got %s\nwant %s", got, strings.Join(want, "\n"))
	}
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d", len(dead), len(bad))
	}
	for _, d := range dead {
		h := headersOf(d)
		var id int
		if _, err := fmt.Sscanf(string(d.Value), `{"id":%d}`, &id); err != nil {
			t.Fatalf("dead letter %q: %v", d.Value, err)
		}
		r := recs[id]
		wantErr := fmt.Sprintf("key %q (partition %d, offset %d) is not a JSON object", r.Key, r.Partition, r.Offset)
		if h[dlq.HeaderReason] != bad[id] || !strings.Contains(h[dlq.HeaderError], wantErr) {
			t.Errorf("record %d: reason %q, error %q; want %q and an error containing %q", id, h[dlq.HeaderReason], h[dlq.HeaderError], bad[id], wantErr)
		}
	}
}

// TestKeyString: decode.key.format string takes keys that are UTF-8
// text into _key; one that is not is skipped under on_error skip, and
// the others arrive.
func TestKeyString(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "keys", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.keys (id UInt64, k String) ENGINE = MergeTree ORDER BY id`)
	const n = 200
	recs := make([]*kgo.Record, n)
	skipped := 0
	var want []string
	for i := range recs {
		r := &kgo.Record{Topic: "keys", Partition: int32(i % 3), Value: fmt.Appendf(nil, `{"id":%d}`, i), Key: []byte("clé-" + strconv.Itoa(i))}
		if i%40 == 9 {
			r.Key = []byte{0xff, 0xfe, byte(i)}
			skipped++
		} else {
			want = append(want, fmt.Sprintf("%d\t%s", i, r.Key))
		}
		recs[i] = r
	}
	produceMeta(t, kb, recs)
	cfg := keysConfig(t, kb, ch, "keystring", `{key: {format: string}, on_error: skip}`, oneSink(ch, "keys", "k: _key"))
	p, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool {
		c := kb.CommittedOffsets(t, "keystring", "keys")
		return c[0]+c[1]+c[2] == n
	})
	stop()
	if got := ch.Query(t, "SELECT id, k FROM default.keys ORDER BY id"); got != strings.Join(want, "\n") {
		t.Fatalf("rows:\n got %s\nwant %s", got, strings.Join(want, "\n"))
	}
	if s := p.Stats(); s.DecodeErrors != int64(skipped) {
		t.Fatalf("%d records rejected, want %d", s.DecodeErrors, skipped)
	}
}

const (
	keyValueSchema = `{"type":"record","name":"V","fields":[{"name":"id","type":"long"},{"name":"amount","type":"long"}]}`
	keyKeySchema   = `{"type":"record","name":"K","fields":[{"name":"user_id","type":"long"},{"name":"region","type":"string"},{"name":"unused","type":"double"}]}`
)

// TestKeyAvro: Confluent-framed Avro keys, their schema from the
// registry as the values' is, fill columns on the staged path (a filter
// reads a key field): a key field flows into a column and another is
// only read by the filter.
func TestKeyAvro(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "keys", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.keys (id Int64, amount Int64, user_id Int64, off Int64) ENGINE = MergeTree ORDER BY id`)
	reg := registrytest.New(t)
	vid := reg.Register("keys-value", valueSchemaOrDie(t, keyValueSchema))
	kid := reg.Register("keys-key", valueSchemaOrDie(t, keyKeySchema))
	vs, ks := avro.MustParse(keyValueSchema), avro.MustParse(keyKeySchema)
	const n = 300
	recs := make([]*kgo.Record, n)
	var want []string
	for i := range recs {
		v, err := avro.Marshal(vs, map[string]any{"id": int64(i), "amount": int64(3 * i)})
		if err != nil {
			t.Fatal(err)
		}
		region := []string{"eu", "us"}[i%2]
		k, err := avro.Marshal(ks, map[string]any{"user_id": int64(7 * i), "region": region, "unused": 1.5})
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = &kgo.Record{Topic: "keys", Partition: int32(i % 3),
			Key: schemaregistry.AppendFrame(nil, kid, k), Value: schemaregistry.AppendFrame(nil, vid, v)}
		if region == "eu" {
			want = append(want, fmt.Sprintf("%d\t%d\t%d", i, 3*i, 7*i))
		}
	}
	produceMeta(t, kb, recs)
	cfg := keysConfig(t, kb, ch, "keyavro",
		fmt.Sprintf(`{format: avro, avro: {framing: confluent, registry: {url: %q}}, key: {format: avro}}
transform:
  - filter: "_key.region == 'eu'"`, reg.URL()),
		oneSink(ch, "keys", "user_id: _key.user_id, off: _offset"))
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool {
		c := kb.CommittedOffsets(t, "keyavro", "keys")
		return c[0]+c[1]+c[2] == n
	})
	stop()
	if got := ch.Query(t, "SELECT id, amount, user_id FROM default.keys ORDER BY id"); got != strings.Join(want, "\n") {
		t.Fatalf("rows:\n got %s\nwant %s", got, strings.Join(want, "\n"))
	}
}

// valueSchemaOrDie checks that text parses, and returns it.
func valueSchemaOrDie(t *testing.T, text string) string {
	t.Helper()
	if _, err := avro.Parse(text); err != nil {
		t.Fatal(err)
	}
	return text
}

// TestTombstonesRouted: with a route reading _tombstone (as the UInt8 of
// the column it also fills), records of a null value go to a table of
// deletes (the key's fields and the metadata filled, the value's columns
// their defaults) and the others to the main table; under a filter
// dropping them (_tombstone read as Bool), tombstones are counted as
// dropped, not rejected.
func TestTombstonesRouted(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "keys", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.main (id UInt64, amount UInt64, user_id UInt64, off Int64) ENGINE = MergeTree ORDER BY id`)
	ch.Exec(t, `CREATE TABLE default.deletes (id UInt64, amount UInt64, user_id UInt64, part Int32, off Int64, gone UInt8) ENGINE = MergeTree ORDER BY (part, off)`)
	const n = 300
	recs := make([]*kgo.Record, n)
	var main, deletes []string
	for i := range recs {
		r := &kgo.Record{Topic: "keys", Partition: int32(i % 3), Key: fmt.Appendf(nil, `{"user_id":%d}`, 100+i)}
		if i%10 == 4 {
			deletes = append(deletes, strconv.Itoa(i))
		} else {
			r.Value = fmt.Appendf(nil, `{"id":%d,"amount":%d}`, i, 2*i)
			main = append(main, fmt.Sprintf("%d\t%d\t%d", i, 2*i, 100+i))
		}
		recs[i] = r
	}
	produceMeta(t, kb, recs)
	sink := func(name, columns string) string {
		return fmt.Sprintf(`  %s:
    clickhouse:
      addr: [%q]
      table: %s
      columns: {%s}
      batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
`, name, ch.TCPAddr(), name, columns)
	}
	cfg := keysConfig(t, kb, ch, "tombstones", `{key: {format: json}}
transform:
  - route:
      rules:
        - {when: "_tombstone == 1", sink: deletes}
      unmatched: main`,
		"sinks:\n"+sink("main", "user_id: _key.user_id, off: _offset")+sink("deletes", "user_id: _key.user_id, part: _partition, off: _offset, gone: _tombstone"))
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool {
		c := kb.CommittedOffsets(t, "tombstones", "keys")
		return c[0]+c[1]+c[2] == n
	})
	stop()
	if got := ch.Query(t, "SELECT id, amount, user_id FROM default.main ORDER BY id"); got != strings.Join(main, "\n") {
		t.Fatalf("main:\n got %s\nwant %s", got, strings.Join(main, "\n"))
	}
	var wantDel []string
	for i, r := range recs {
		if r.Value == nil {
			wantDel = append(wantDel, fmt.Sprintf("0\t0\t%d\t%d\t%d\t1", 100+i, r.Partition, r.Offset))
		}
	}
	if got := ch.Query(t, "SELECT id, amount, user_id, part, off, gone FROM default.deletes ORDER BY user_id"); got != strings.Join(wantDel, "\n") {
		t.Fatalf("deletes:\n got %s\nwant %s", got, strings.Join(wantDel, "\n"))
	}
	if len(wantDel) != len(deletes) {
		t.Fatalf("%d tombstones produced, %d expected", len(wantDel), len(deletes))
	}

	// Dropped on purpose: a filter, with on_error fail (a tombstone
	// rejected would stop the pipeline).
	ch.Exec(t, `TRUNCATE TABLE default.main`)
	cfg = keysConfig(t, kb, ch, "tombdrop", `{key: {format: json}, on_error: fail}
transform:
  - filter: "!_tombstone"`, oneSink(ch, "main", "user_id: _key.user_id, off: _offset"))
	p, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool {
		c := kb.CommittedOffsets(t, "tombdrop", "keys")
		return c[0]+c[1]+c[2] == n
	})
	stop()
	if got := ch.Query(t, "SELECT id, amount, user_id FROM default.main ORDER BY id"); got != strings.Join(main, "\n") {
		t.Fatalf("main after the filter:\n got %s\nwant %s", got, strings.Join(main, "\n"))
	}
	if s := p.Stats(); s.DecodeErrors != 0 {
		t.Fatalf("%d records rejected, want 0", s.DecodeErrors)
	}
	if d := testutil.ToFloat64(p.m.transformDropped); d != float64(len(deletes)) {
		t.Fatalf("%v rows dropped by the filter, want the %d tombstones", d, len(deletes))
	}
}

// BenchmarkPipelineNullSinkKey is BenchmarkPipelineNullSinkMeta's
// meta=0 case with each record's JSON key decoded (decode.key.format
// json) and one of its fields in a column more.
func BenchmarkPipelineNullSinkKey(b *testing.B) {
	p, _ := newBarePipeline(b, &nopSource{}, 64<<10)
	p.cfg.Decode.Key.Format = config.KeyJSON
	base := p.sinks[0].target.Load().Schema
	s := &chunk.Schema{Names: append(slices.Clone(base.Names), "key_user"), Types: slices.Clone(base.Types)}
	ct, err := chunk.ParseType("Int64")
	if err != nil {
		b.Fatal(err)
	}
	s.Types = append(s.Types, ct)
	dec := benchBind(b, p, s, append(slices.Clone(base.Names), "_key.user_id"))
	p.queue = nullSink{p}
	h := (*handler)(p)
	h.Assigned(context.Background(), kafka.Partitions{"events": {0}})
	l := p.lanes[TopicPartition{Topic: "events", Partition: 0}]
	const perPoll = 4096
	recs := make([]*kgo.Record, perPoll)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "events", Value: gen.Make(1, uint64(i)).AppendJSON(nil),
			Key: fmt.Appendf(nil, `{"user_id":%d}`, i)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	offset := int64(0)
	for done := 0; done < b.N; done += perPoll {
		for i := range recs {
			recs[i].Offset = offset
			offset++
		}
		h.Fetched(&kgo.FetchTopicPartition{Topic: "events", FetchPartition: kgo.FetchPartition{Partition: 0, Records: recs}})
		p.runq.pop()
		l.start()
		p.process(l, dec)
		l.finish()
		p.processAcks()
	}
	el := time.Since(start)
	b.ReportMetric(float64(el.Nanoseconds())/float64(offset), "ns/row")
	if st, _ := p.tracker.Status(TopicPartition{Topic: "events", Partition: 0}); st.Watermark != offset {
		b.Fatalf("watermark %d, want %d", st.Watermark, offset)
	}
}
