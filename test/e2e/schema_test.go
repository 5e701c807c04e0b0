package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

const batchTopic = "batches"

// schemaEnv is a ClickHouse, a broker with the batches topic (and its
// dead-letter topic) and a registry.
type schemaEnv struct {
	t   *testing.T
	ch  *testenv.CH
	kb  *testenv.BrokerProcess
	reg *registrytest.Server
}

func newSchemaEnv(t *testing.T) *schemaEnv {
	return &schemaEnv{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, 3, batchTopic, batchTopic+".dlq"), reg: registrytest.New(t)}
}

// produceBatches sends gen's nested batches [start, start+count) framed
// with schema id; extra appends the fields a later schema version adds.
func (e *schemaEnv) produceBatches(id int32, start, count uint64, extra func(n uint64, b []byte) []byte) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for n := start; n < start+count; n++ {
		v := gen.MakeBatch(seed, n).AppendAvro(gen.AppendConfluent(nil, id))
		if extra != nil {
			v = extra(n, v)
		}
		recs = append(recs, &kgo.Record{Topic: batchTopic, Partition: int32(n % 3), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

// config is the nested pipeline: the events flattened and filtered as the
// benchmark's, two derived fields, the event fields renamed to columns of
// their own names (tags through the column map), source dropped.
func (e *schemaEnv) config(group, table, chAddr, schemaKeys string) string {
	return writeConfig(e.t, fmt.Sprintf(`pipeline: {name: schema}
source:
  kafka: {brokers: [%q], topics: [%s], group_id: %s, start_offset: earliest, session_timeout: 6s}
decode:
  format: avro
  avro: {framing: confluent, registry: {url: %q}}
  on_error: dlq
  dlq: {topic: %s.dlq}
transform:
  - flatten: events
  - filter: "events.value %% 10 != 0 && events.kind != 'debug'"
  - set:
      amount: "events.value * 100"
      key: "concat(user, ':', events.kind)"
  - rename: {events.ts: ts, events.kind: kind, events.value: value, events.page: page}
  - drop: [source]
sink:
  clickhouse:
    addr: [%q]
    table: %s
    columns: {tags: events.tags}
    batch: {max_rows: 50000, max_bytes: 16MiB, linger: 200ms}
    retry: {initial_backoff: 100ms, max_backoff: 1s}
%s
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
log: {level: info, format: text}
`, e.kb.Addr(), batchTopic, group, e.reg.URL(), batchTopic, chAddr, table, schemaKeys))
}

// waitCount waits until table holds n rows.
func (e *schemaEnv) waitCount(table string, n uint64, p *proc) {
	e.t.Helper()
	testenv.Eventually(e.t, fmt.Sprintf("%d rows in %s", n, table), 2*time.Minute, func() error {
		// The table may not exist yet (schema.create makes it).
		var got uint64
		if out, err := e.ch.QueryErr("SELECT count() FROM " + table); err == nil {
			fmt.Sscan(out, &got)
		}
		if got == n {
			return nil
		}
		if got > n {
			e.t.Fatalf("%s holds %d rows, want %d", table, got, n)
		}
		if !p.running() {
			e.t.Fatalf("%s holds %d of %d rows and etl exited\n%s", table, got, n, tailLog(p))
		}
		return fmt.Errorf("%s holds %d rows\n%s", table, got, tailLog(p))
	})
}

func tailLog(p *proc) string {
	l := p.logText()
	if len(l) > 6000 {
		l = l[len(l)-6000:]
	}
	return l
}

// expectedRows is the rows the chain keeps of batches [start, end), as
// the TSV line checkedRows reads.
func expectedRows(start, end uint64, line func(b gen.Batch, ev gen.NestedEvent) string) []string {
	var out []string
	for n := start; n < end; n++ {
		b := gen.MakeBatch(seed, n)
		for _, ev := range b.Events {
			if gen.NestedKeep(ev) {
				out = append(out, line(b, ev))
			}
		}
	}
	sort.Strings(out)
	return out
}

// rowLine is a kept event as checkedRows selects it.
func rowLine(b gen.Batch, ev gen.NestedEvent) string {
	page := `\N`
	if ev.Page != nil {
		page = *ev.Page
	}
	return fmt.Sprintf("%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%d\t%s", b.ID, b.User, b.SentAt.Unix(), ev.TS.Unix(), ev.Kind, ev.Value,
		page, strings.Join(ev.Tags, ","), ev.Value*100, b.User+":"+ev.Kind)
}

const rowSelect = "batch_id, user, toUnixTimestamp(sent_at), toUnixTimestamp(ts), kind, value, page, arrayStringConcat(tags, ','), amount, key"

// checkedRows reads the table's rows (with more columns after them) as
// sorted TSV lines.
func (e *schemaEnv) rows(table, cols, where string) []string {
	out := strings.TrimSpace(e.ch.Query(e.t, "SELECT "+cols+" FROM "+table+" "+where+" FORMAT TSV"))
	if out == "" {
		return nil
	}
	lines := strings.Split(out, "\n")
	sort.Strings(lines)
	return lines
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d is\n%q, want\n%q", what, i, got[i], want[i])
		}
	}
}

// ddlStatements splits etl schema's output into statements, without the
// comment lines.
func ddlStatements(out string) []string {
	var kept []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			kept = append(kept, l)
		}
	}
	var stmts []string
	for _, s := range strings.Split(strings.Join(kept, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// TestSchemaFromAvro: etl schema derives the table from the registry's
// Avro schema (an array of records, flattened) through the chain; the
// server accepts its statement as printed, and the pipeline then fills
// the table with every kept event, value for value. etl tail, with a
// ClickHouse address nothing listens on, prints the same rows from the
// derived columns. A second pipeline with sink.clickhouse.schema.create
// makes the (missing) table itself, with LowCardinality strings, and
// fills it with the same rows.
func TestSchemaFromAvro(t *testing.T) {
	const batches = 300
	e := newSchemaEnv(t)
	id := e.reg.Register(batchTopic+"-value", gen.NestedSchema)
	e.produceBatches(id, 0, batches, nil)
	want := expectedRows(0, batches, rowLine)

	cfg := e.config("schema-a", "t1", e.ch.TCPAddr(), "")
	code, out, errOut := etlCmd(t, "schema", "-config", cfg, "-order-by", "kind,ts")
	if code != 0 {
		t.Fatalf("etl schema exited %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "CREATE TABLE `default`.`t1`") || strings.Contains(out, "`source`") {
		t.Fatalf("etl schema printed:\n%s", out)
	}
	for _, s := range ddlStatements(out) {
		e.ch.Exec(t, s)
	}
	desc := e.ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 't1' FORMAT TSV")
	wantDesc := "batch_id\tInt64\nuser\tString\nsent_at\tDateTime\nts\tDateTime\nkind\tString\nvalue\tInt64\npage\tNullable(String)\ntags\tArray(String)\namount\tInt64\nkey\tString\n"
	if strings.TrimSpace(desc) != strings.TrimSpace(wantDesc) {
		t.Fatalf("the table etl schema made has\n%s\nwant\n%s\n(statement:\n%s)", desc, wantDesc, out)
	}

	// etl tail with no ClickHouse: the derived columns.
	dead := e.config("schema-tail", "t1", "127.0.0.1:1", "")
	lines := tailOut(t, "-config", dead, "-from", "earliest", "-n", "30")
	byKey := map[string]string{}
	for _, w := range want {
		f := strings.Split(w, "\t")
		byKey[f[0]+"/"+f[4]+"/"+f[5]] = w // batch, kind, value
	}
	if len(lines) != 30 {
		t.Fatalf("etl tail printed %d lines, want 30:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil || tl.Row == nil {
			t.Fatalf("etl tail line %q: %v", l, err)
		}
		r := tl.Row
		var names []string
		for k := range r {
			names = append(names, k)
		}
		sort.Strings(names)
		if got := strings.Join(names, ","); got != "amount,batch_id,key,kind,page,sent_at,tags,ts,user,value" {
			t.Fatalf("etl tail's row has columns %s", got)
		}
		num := func(k string) string { return fmt.Sprintf("%.0f", r[k]) }
		k := num("batch_id") + "/" + fmt.Sprint(r["kind"]) + "/" + num("value")
		w, ok := byKey[k]
		if !ok {
			t.Fatalf("etl tail printed a row no kept event gives: %q", l)
		}
		f := strings.Split(w, "\t")
		page := `\N`
		if r["page"] != nil {
			page = r["page"].(string)
		}
		var tags []string
		for _, x := range r["tags"].([]any) {
			tags = append(tags, x.(string))
		}
		got := []string{fmt.Sprint(r["user"]), page, strings.Join(tags, ","), num("amount"), fmt.Sprint(r["key"])}
		if exp := []string{f[1], f[6], f[7], f[8], f[9]}; strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Fatalf("etl tail's row %v, want user, page, tags, amount, key %v", got, exp)
		}
	}

	p := startETL(t, cfg)
	e.waitCount("default.t1", uint64(len(want)), p)
	sameLines(t, "t1", e.rows("default.t1", rowSelect, ""), want)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d\n%s", code, tailLog(p))
	}

	// sink.clickhouse.schema.create: the table is made at startup.
	cfg2 := e.config("schema-b", "t2", e.ch.TCPAddr(), "    schema: {create: true, order_by: [kind, ts], low_cardinality: true}")
	// validate -connect changes nothing, and says the table will be made.
	if code, out, errOut := etlCmd(t, "validate", "-connect", "-config", cfg2); code != 0 || !strings.Contains(out+errOut, "table default.t2 is missing: sink.clickhouse.schema.create makes it") {
		t.Fatalf("validate -connect exited %d:\n%s%s", code, out, errOut)
	}
	if _, err := e.ch.QueryErr("SELECT count() FROM default.t2"); err == nil {
		t.Fatal("validate -connect created the table")
	}
	p2 := startETL(t, cfg2)
	e.waitCount("default.t2", uint64(len(want)), p2)
	sameLines(t, "t2", e.rows("default.t2", rowSelect, ""), want)
	desc2 := e.ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = 't2' FORMAT TSV")
	wantDesc2 := strings.NewReplacer("user\tString", "user\tLowCardinality(String)", "kind\tString", "kind\tLowCardinality(String)",
		"key\tString", "key\tLowCardinality(String)", "page\tNullable(String)", "page\tLowCardinality(Nullable(String))").Replace(wantDesc)
	if strings.TrimSpace(desc2) != strings.TrimSpace(wantDesc2) {
		t.Fatalf("the table etl created has\n%s\nwant\n%s", desc2, wantDesc2)
	}
	if key := e.ch.Query(t, "SELECT sorting_key FROM system.tables WHERE database = 'default' AND name = 't2' FORMAT TSV"); strings.TrimSpace(key) != "kind, ts" {
		t.Errorf("t2's sorting key is %q, want kind, ts", key)
	}
	if !strings.Contains(p2.logText(), "created the table") {
		t.Errorf("etl did not log the table it created:\n%s", tailLog(p2))
	}
}

// v2Schema is gen.NestedSchema with two top-level fields added at the end:
// region (a string, default "eu") and score (nullable double).
var v2Schema = strings.TrimSuffix(gen.NestedSchema, "]}") +
	`,{"name":"region","type":"string","default":"eu"},{"name":"score","type":["null","double"],"default":null}]}`

// v2Fields appends region and score for batch n.
func v2Fields(n uint64, b []byte) []byte {
	region := fmt.Sprintf("r%d", n%4)
	b = binary.AppendVarint(b, int64(len(region)))
	b = append(b, region...)
	if n%2 == 0 {
		return binary.AppendVarint(b, 0) // null
	}
	b = binary.AppendVarint(b, 1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(n)+0.5))
}

// TestSchemaAddColumns: with sink.clickhouse.schema.add_columns, a new
// writer schema with two added fields makes their columns appear (with
// the Avro default, or Nullable) before its records are written, and
// their values land; the older rows hold the default. A writer schema
// that changes a field's type (long to string) cannot be followed: its
// records are dead-lettered as schema_mismatch and the table keeps its
// columns.
func TestSchemaAddColumns(t *testing.T) {
	e := newSchemaEnv(t)
	id1 := e.reg.Register(batchTopic+"-value", gen.NestedSchema)
	e.produceBatches(id1, 0, 40, nil)
	cfg := e.config("schema-add", "t3", e.ch.TCPAddr(), "    schema: {create: true, add_columns: true, order_by: [kind, ts]}")
	p := startETL(t, cfg)
	first := expectedRows(0, 40, rowLine)
	e.waitCount("default.t3", uint64(len(first)), p)

	id2 := e.reg.Register(batchTopic+"-value", v2Schema)
	e.produceBatches(id2, 40, 40, v2Fields)
	second := expectedRows(40, 80, rowLine)
	e.waitCount("default.t3", uint64(len(first)+len(second)), p)
	desc := e.ch.Query(t, "SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = 'default' AND table = 't3' AND name IN ('region', 'score') ORDER BY name FORMAT TSV")
	if want := "region\tString\tDEFAULT\t\\'eu\\'\nscore\tNullable(Float64)\t\t"; strings.TrimRight(desc, "\n") != want {
		t.Fatalf("added columns:\n%s\nwant\n%s", desc, want)
	}
	sameLines(t, "t3 v1 rows", e.rows("default.t3", rowSelect+", region, score", "WHERE batch_id < 40"),
		expectedRows(0, 40, func(b gen.Batch, ev gen.NestedEvent) string { return rowLine(b, ev) + "\teu\t\\N" }))
	sameLines(t, "t3 v2 rows", e.rows("default.t3", rowSelect+", region, score", "WHERE batch_id >= 40"),
		expectedRows(40, 80, func(b gen.Batch, ev gen.NestedEvent) string {
			score := `\N`
			if b.ID%2 == 1 {
				score = fmt.Sprint(float64(b.ID) + 0.5)
			}
			return rowLine(b, ev) + fmt.Sprintf("\tr%d\t%s", b.ID%4, score)
		}))
	if !strings.Contains(p.logText(), "added a column") {
		t.Errorf("etl did not log the columns it added:\n%s", tailLog(p))
	}

	// A type change: events.value becomes a string.
	v3 := strings.Replace(gen.NestedSchema, `{"name":"value","type":"long"}`, `{"name":"value","type":"string"}`, 1)
	if v3 == gen.NestedSchema {
		t.Fatal("the schema has no long value field to change")
	}
	id3 := e.reg.Register(batchTopic+"-value", v3)
	e.produceBatches(id3, 80, 5, nil)
	e.produceBatches(id2, 85, 5, v2Fields)
	total := uint64(len(first) + len(second) + len(expectedRows(85, 90, rowLine)))
	e.waitCount("default.t3", total, p)
	dl := readDLQ(t, e.kb.Addr(), batchTopic+".dlq", 5)
	for _, r := range dl {
		if r != "schema_mismatch" {
			t.Fatalf("dead-letter reasons %v, want 5 schema_mismatch", dl)
		}
	}
	if got := e.ch.Query(t, "SELECT type FROM system.columns WHERE database = 'default' AND table = 't3' AND name = 'value' FORMAT TSV"); strings.TrimSpace(got) != "Int64" {
		t.Fatalf("value's type became %q", got)
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d\n%s", code, tailLog(p))
	}
}

// readDLQ reads n records of a dead-letter topic and returns their
// etl.error.reason headers.
func readDLQ(t *testing.T, broker, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var reasons []string
	for len(reasons) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d dead-letter records", len(reasons), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "etl.error.reason" {
					reasons = append(reasons, string(h.Value))
				}
			}
		})
	}
	return reasons
}
