package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// The source table of the change data capture tests, its row as Debezium
// sends it in before and after.
type dbzRow struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	Amount  int64   `json:"amount"`
	Note    *string `json:"note"`
	Updated int64   `json:"updated"`         // epoch seconds
	Email   *string `json:"email,omitempty"` // from the schema change of the Avro history on
}

type dbzSource struct {
	Version   string  `json:"version"`
	Connector string  `json:"connector"`
	Name      string  `json:"name"`
	TsMs      int64   `json:"ts_ms"`
	DB        string  `json:"db"`
	Table     string  `json:"table"`
	TxID      int64   `json:"txId,omitempty"`
	LSN       *uint64 `json:"lsn,omitempty"`
	File      string  `json:"file,omitempty"`
	Pos       *uint64 `json:"pos,omitempty"`
	Row       *int    `json:"row,omitempty"`
}

type dbzEvent struct {
	Before      *dbzRow   `json:"before"`
	After       *dbzRow   `json:"after"`
	Source      dbzSource `json:"source"`
	Op          string    `json:"op"`
	TsMs        int64     `json:"ts_ms"`
	Transaction any       `json:"transaction"`
}

// cdcFields declares the source table's fields (decode.fields).
const cdcFields = "{id: Int64, name: String, amount: Int64, note: Nullable(String), updated: DateTime}"

// cdcSource generates a source table and the Debezium change events of
// its history, keeping the table's state as the events leave it.
type cdcSource struct {
	rng       *rand.Rand
	connector string // postgresql or mysql
	topic     string
	rows      map[int64]dbzRow
	live      []int64 // the keys of rows, in no order
	nextID    int64
	pos       uint64 // the LSN, or the binlog position
	file      int    // the binlog file's number
	recs      []*kgo.Record
	rows1     []int // the rows each record makes in replacing mode
	outRows   int   // the rows the events make in replacing mode
	ms        int64
	// avro, when set, writes the events in Avro through the registry
	// (cdcavro_test.go); at change evolveAt (> 0) the source table gains
	// the column email and the connector a new schema id.
	avro     *cdcAvro
	evolveAt int
}

// withAvro makes s write Debezium Avro through reg.
func (s *cdcSource) withAvro(reg *registrytest.Server) *cdcSource {
	s.avro = newCDCAvro(reg, s.topic, s.connector)
	return s
}

func newCDCSource(seed uint64, connector, topic string) *cdcSource {
	return &cdcSource{rng: rand.New(rand.NewPCG(seed, 7)), connector: connector, topic: topic,
		rows: map[int64]dbzRow{}, pos: 0x1000000, file: 3, ms: 1_700_000_000_000}
}

func (s *cdcSource) row(id int64) dbzRow {
	r := dbzRow{ID: id, Name: fmt.Sprintf("n-%d-%d", id, s.rng.IntN(1000)), Amount: s.rng.Int64N(2_000_000) - 1_000_000,
		Updated: 1_700_000_000 + s.rng.Int64N(10_000_000)}
	switch s.rng.IntN(4) {
	case 0:
	case 1:
		n := ""
		r.Note = &n
	default:
		n := fmt.Sprintf("note \"%d\" é\n", s.rng.IntN(100))
		r.Note = &n
	}
	if s.avro != nil && s.avro.email && s.rng.IntN(3) > 0 {
		m := fmt.Sprintf("%d@example.com", id)
		r.Email = &m
	}
	return r
}

// emit appends the event (and a tombstone after a delete).
func (s *cdcSource) emit(op string, before, after *dbzRow) {
	s.ms += int64(s.rng.IntN(3))
	src := dbzSource{Version: "2.5.0.Final", Connector: s.connector, Name: "srv", TsMs: s.ms, DB: "shop", Table: "accounts"}
	if s.connector == "postgresql" {
		s.pos += uint64(1 + s.rng.IntN(500))
		lsn := s.pos
		src.LSN, src.TxID = &lsn, int64(s.pos/7)
	} else {
		if s.rng.IntN(3000) == 0 {
			s.file, s.pos = s.file+1, 4
		}
		s.pos += uint64(1 + s.rng.IntN(500))
		pos, row := s.pos, 0
		src.File, src.Pos, src.Row = fmt.Sprintf("mysql-bin.%06d", s.file), &pos, &row
	}
	ev := dbzEvent{Before: before, After: after, Source: src, Op: op, TsMs: s.ms + 3}
	var value []byte
	var err error
	switch {
	case s.avro != nil:
		value = s.avro.encode(ev)
	case s.rng.IntN(2) == 0:
		// The JSON converter with schemas enabled.
		value, err = json.Marshal(struct {
			Schema  map[string]any `json:"schema"`
			Payload dbzEvent       `json:"payload"`
		}{map[string]any{"type": "struct", "optional": false, "name": "srv.shop.accounts.Envelope"}, ev})
	default:
		value, err = json.Marshal(ev)
	}
	if err != nil {
		panic(err)
	}
	key := after
	if key == nil {
		key = before
	}
	k := fmt.Appendf(nil, `{"id":%d}`, key.ID)
	part := int32(uint64(key.ID) % partitions)
	n := 1
	if op == "u" && before.ID != after.ID {
		n = 2
	}
	s.add(&kgo.Record{Topic: s.topic, Partition: part, Key: k, Value: value}, n)
	if op == "d" {
		s.add(&kgo.Record{Topic: s.topic, Partition: part, Key: k}, 0)
	}
}

// add appends a record that makes n rows.
func (s *cdcSource) add(r *kgo.Record, n int) {
	s.recs = append(s.recs, r)
	s.rows1 = append(s.rows1, n)
	s.outRows += n
}

// resend appends the records [from, from+n) again, as a connector that
// restarts from an older position sends its events again: their versions
// are older than the rows they would overwrite.
func (s *cdcSource) resend(from, n int) {
	for i := from; i < from+n; i++ {
		r := *s.recs[i]
		s.add(&r, s.rows1[i])
	}
}

func (s *cdcSource) insert(op string) {
	id := s.nextID
	s.nextID++
	r := s.row(id)
	s.rows[id] = r
	s.live = append(s.live, id)
	s.emit(op, nil, &r)
}

// pick returns the index in live of a random live key.
func (s *cdcSource) pick() int { return s.rng.IntN(len(s.live)) }

func (s *cdcSource) drop(i int) {
	s.live[i] = s.live[len(s.live)-1]
	s.live = s.live[:len(s.live)-1]
}

// history makes a snapshot of keys rows (op r) and then changes events:
// inserts, updates (some changing the key), deletes (each followed by a
// tombstone), and a few logical messages (op m, skipped).
func (s *cdcSource) history(keys, changes int) {
	for range keys {
		s.insert("r")
	}
	for i := range changes {
		if s.avro != nil && s.evolveAt > 0 && i == s.evolveAt {
			s.avro.addEmail()
		}
		switch n := s.rng.IntN(100); {
		case n < 15 || len(s.live) < 100:
			s.insert("c")
		case n < 70:
			i := s.pick()
			before := s.rows[s.live[i]]
			after := s.row(before.ID)
			if s.rng.IntN(3) == 0 {
				after.Name = before.Name // an update of some fields only
			}
			s.rows[after.ID] = after
			s.emit("u", &before, &after)
		case n < 78:
			// The key changes: the old row goes, the new key comes.
			i := s.pick()
			before := s.rows[s.live[i]]
			after := before
			after.ID = s.nextID
			after.Amount++
			s.nextID++
			delete(s.rows, before.ID)
			s.drop(i)
			s.rows[after.ID] = after
			s.live = append(s.live, after.ID)
			s.emit("u", &before, &after)
		case n < 99:
			i := s.pick()
			before := s.rows[s.live[i]]
			delete(s.rows, before.ID)
			s.drop(i)
			s.emit("d", &before, nil)
		default:
			s.ms++
			if s.avro != nil {
				// A logical message as the Envelope with op m.
				v := s.avro.encode(dbzEvent{Op: "m", TsMs: s.ms, Source: dbzSource{Version: "2.5.0.Final", Connector: s.connector, Name: "srv", TsMs: s.ms, DB: "shop", Table: "accounts"}})
				s.add(&kgo.Record{Topic: s.topic, Partition: int32(s.rng.IntN(partitions)), Value: v}, 0)
				continue
			}
			v, _ := json.Marshal(map[string]any{"op": "m", "ts_ms": s.ms,
				"source": map[string]any{"connector": s.connector, "ts_ms": s.ms}, "message": map[string]any{"prefix": "audit", "content": "eA=="}})
			s.add(&kgo.Record{Topic: s.topic, Partition: int32(s.rng.IntN(partitions)), Key: nil, Value: v}, 0)
		}
	}
}

// want is the source table as the converged table's query prints it.
func (s *cdcSource) want() string {
	ids := make([]int64, 0, len(s.rows))
	for id := range s.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		r := s.rows[id]
		note := "NULL"
		if r.Note != nil {
			note = strings.ReplaceAll(*r.Note, "\n", "\\n")
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d\t%s\t%d\t%s\t%s", r.ID, r.Name, r.Amount, note, time.Unix(r.Updated, 0).UTC().Format(time.DateTime))
		if s.evolveAt > 0 {
			email := "NULL"
			if r.Email != nil {
				email = *r.Email
			}
			b.WriteString("\t" + email)
		}
	}
	return b.String()
}

func (s *cdcSource) produce(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(len(s.recs)+1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, s.recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// cdcColumns selects the row's own columns as text.
const cdcColumns = "toString(id), name, toString(amount), ifNull(note, 'NULL'), toString(updated)"

// cdcSourceConfig is cdcConfig reading s's topic, in Avro through the
// registry when s writes Avro (no decode.fields: the schema types the
// row).
func cdcSourceConfig(t *testing.T, e *env, s *cdcSource, group, table, mode, extra string) string {
	t.Helper()
	p := cdcConfig(t, e, group, s.topic, table, mode, extra)
	if s.avro == nil {
		return p
	}
	jsonDecode := fmt.Sprintf("decode:\n  format: json\n  envelope: debezium\n  fields: %s\n  debezium: {key: [id], mode: %s}\n", cdcFields, mode)
	y := readFile(t, p)
	if !strings.Contains(y, jsonDecode) {
		t.Fatalf("the decode section of %s is not\n%s", y, jsonDecode)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(y, jsonDecode, cdcAvroDecode(s.avro.reg, mode), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cdcConfig is the pipeline file reading topic into table in mode.
func cdcConfig(t *testing.T, e *env, group, topic, table, mode, extra string) string {
	t.Helper()
	y := fmt.Sprintf(`pipeline:
  name: cdc
source:
  kafka:
    brokers: [%q]
    topics: [%s]
    group_id: %s
    start_offset: earliest
    session_timeout: 6s
    rebalance_timeout: 30s
decode:
  format: json
  envelope: debezium
  fields: %s
  debezium: {key: [id], mode: %s}
sink:
  clickhouse:
    addr: [%q]
    table: %s
    batch: {max_rows: 3000, max_bytes: 16MiB, linger: 200ms}
    retry: {initial_backoff: 100ms, max_backoff: 1s}
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}
%s`, e.kb.Addr(), topic, group, cdcFields, mode, e.ch.TCPAddr(), table, extra)
	p := filepath.Join(t.TempDir(), group+".yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	cdcReplacingDDL  = "CREATE TABLE default.%s (id Int64, name String, amount Int64, note Nullable(String), updated DateTime, _version UInt64, _deleted UInt8, _op String) ENGINE = ReplacingMergeTree(_version) ORDER BY id"
	cdcCollapsingDDL = "CREATE TABLE default.%s (id Int64, name String, amount Int64, note Nullable(String), updated DateTime, _sign Int8, _version UInt64) ENGINE = CollapsingMergeTree(_sign) ORDER BY id"
	// The current state of a replacing table: the last version of each
	// key, without the deleted ones (a subquery: the server must not
	// filter _deleted before FINAL picks the versions).
	cdcReplacingState = "SELECT " + cdcColumns + " FROM (SELECT * FROM default.%s FINAL) WHERE _deleted = 0 ORDER BY id"
	// The current state of a collapsing table: the keys whose signs sum
	// to more than 0, with the fields of their last inserted row (a tuple:
	// argMax skips a NULL argument).
	cdcCollapsingState = "SELECT toString(id), r.1, toString(r.2), ifNull(r.3, 'NULL'), toString(r.4) FROM (" +
		"SELECT id, argMaxIf((name, amount, note, updated), _version, _sign = 1) AS r FROM default.%s GROUP BY id HAVING sum(_sign) > 0) ORDER BY id"
)

// runToEnd runs the binary on cfg until group has committed every record
// of topic, and stops it.
func runToEnd(t *testing.T, e *env, cfg, group, topic string) *proc {
	t.Helper()
	p := startETL(t, cfg)
	waitCommittedEnd(t, e.kb, group, topic, partitions, 3*time.Minute, func() error {
		if !p.running() {
			return fmt.Errorf("etl exited: %v", p.err)
		}
		return nil
	})
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	return p
}

func sameState(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			t.Fatalf("%s: row %d of %d (want %d rows):\n got %s\nwant %s", what, i, len(g), len(w), g[i], w[i])
		}
	}
	t.Fatalf("%s: %d rows, want %d", what, len(g), len(w))
}

// TestCDCConverges: a source table of 10,000 keys and 20,000 changes
// (inserts, updates, key changes, deletes with their tombstones, logical
// messages), as Debezium JSON events with and without the schema/payload
// wrapper, PostgreSQL's (versions from the LSN) on one topic and MySQL's
// (from the binlog file and position, with 5,000 events sent again after
// the history, as a connector restarted from an older position does) on
// another. Replacing mode into a
// ReplacingMergeTree(_version): the table's state with FINAL, deleted rows
// filtered, equals the source table row by row. Collapsing mode into a
// CollapsingMergeTree(_sign): the keys whose signs sum above 0 and their
// last rows equal it too, and no key's signs sum above 1. The same as
// Debezium Avro through the registry (no decode.fields: the tables derive
// from the registry's Envelope schemas).
func TestCDCConverges(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { cdcConverges(t, format) })
	}
}

func cdcConverges(t *testing.T, format string) {
	const pgTopic, myTopic = "cdc_pg", "cdc_my"
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, pgTopic, myTopic)}
	pg := newCDCSource(1, "postgresql", pgTopic)
	my := newCDCSource(2, "mysql", myTopic)
	if format == "avro" {
		reg := registrytest.New(t)
		pg.withAvro(reg)
		my.withAvro(reg)
	}
	pg.history(10_000, 20_000)
	pg.produce(t, e.kb.Addr())
	my.history(10_000, 20_000)
	// The connector restarts from an older binlog position and sends the
	// events after it again: 5,000 events of the middle of the history.
	my.resend(len(my.recs)/2, 5_000)
	my.produce(t, e.kb.Addr())

	for _, s := range []*cdcSource{pg, my} {
		table := "r_" + s.connector
		cfg := cdcSourceConfig(t, e, s, "g-"+table, table, "replacing", "")
		if s == pg {
			// The table etl schema derives for the server.
			createDerived(t, e, cfg, "ENGINE = ReplacingMergeTree(`_version`)\nORDER BY `id`")
		} else {
			e.ch.Exec(t, fmt.Sprintf(cdcReplacingDDL, table))
		}
		e.ch.Exec(t, "SYSTEM STOP MERGES default."+table)
		p := runToEnd(t, e, cfg, "g-"+table, s.topic)
		if log := p.logText(); !strings.Contains(log, "a change event was skipped") || strings.Contains(log, "level=ERROR") {
			t.Fatalf("%s: the log should warn of the skipped messages and hold no error:\n%s", s.connector, log)
		}
		sameState(t, s.connector+" replacing", e.ch.Query(t, fmt.Sprintf(cdcReplacingState, table)), s.want())
		direct := fmt.Sprintf("SELECT %s FROM default.%s FINAL WHERE _deleted = 0 ORDER BY id", cdcColumns, table)
		sameState(t, s.connector+" replacing, FINAL WHERE", e.ch.Query(t, direct), s.want())
		// The argMax view of the README, without FINAL.
		view := "SELECT toString(id), r.1, toString(r.2), ifNull(r.3, 'NULL'), toString(r.4) FROM (SELECT id, " +
			"argMax((name, amount, note, updated), _version) AS r, argMax(_deleted, _version) AS deleted FROM default." + table +
			" GROUP BY id HAVING deleted = 0) ORDER BY id"
		sameState(t, s.connector+" replacing, argMax", e.ch.Query(t, view), s.want())
		if got := e.ch.Count(t, "default."+table); got != uint64(s.outRows) {
			t.Fatalf("%s: %d rows, want %d: one per event, two per key change", s.connector, got, s.outRows)
		}
	}

	// The table sink.clickhouse.schema.create makes at startup.
	cfg := writeConfig(t, strings.Replace(readFile(t, cdcSourceConfig(t, e, pg, "g-c", "c_pg", "collapsing", "")), "    table: c_pg\n",
		"    table: c_pg\n    inflight: {max_per_shard: 1}\n    schema: {create: true}\n", 1))
	runToEnd(t, e, cfg, "g-c", pgTopic)
	if ddl := e.ch.Query(t, "SHOW CREATE TABLE default.c_pg"); !strings.Contains(ddl, "_version UInt64,  _sign Int8) ENGINE = CollapsingMergeTree(_sign) ORDER BY id") {
		t.Fatalf("schema.create made %s", ddl)
	}
	sameState(t, "collapsing", e.ch.Query(t, fmt.Sprintf(cdcCollapsingState, "c_pg")), pg.want())
	if got := e.ch.Query(t, "SELECT max(s), min(s) FROM (SELECT sum(_sign) AS s FROM default.c_pg GROUP BY id)"); got != "1\t0" {
		t.Fatalf("the signs of a key sum to %s (max, min), want 1 and 0", got)
	}
	// Merged, the table keeps the state: a key's rows came in the order
	// of its changes.
	e.ch.Exec(t, "OPTIMIZE TABLE default.c_pg FINAL")
	sameState(t, "collapsing, merged", e.ch.Query(t, fmt.Sprintf(cdcCollapsingState, "c_pg")), pg.want())
}

// createDerived creates the table etl schema derives for cfg, whose
// statement must contain want.
func createDerived(t *testing.T, e *env, cfg, want string) {
	t.Helper()
	code, out, errOut := etlCmd(t, "schema", "-config", cfg)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("etl schema: exit %d, want a statement with %q:\n%s%s", code, want, out, errOut)
	}
	for _, st := range ddlStatements(out) {
		e.ch.Exec(t, st)
	}
}

// TestCDCTail: etl tail shows the rows a run would write of each change
// event, with their versions and flags, and the tombstone and the
// logical message as records that make no row: of Debezium JSON, and of
// Debezium Avro through the registry (whose schema etl validate -connect
// checks the key fields against).
func TestCDCTail(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { cdcTail(t, format) })
	}
}

func cdcTail(t *testing.T, format string) {
	const tailTopic = "cdc_tail"
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, tailTopic)}
	e.ch.Exec(t, fmt.Sprintf(cdcReplacingDDL, "t"))
	ev := func(op, before, after string, lsn int) []byte {
		return fmt.Appendf(nil, `{"before":%s,"after":%s,"source":{"connector":"postgresql","lsn":%d,"ts_ms":1},"op":%q}`, before, after, lsn, op)
	}
	row := `{"id":%d,"name":"n","amount":5,"note":null,"updated":1700000000}`
	recs := []*kgo.Record{
		{Value: ev("c", "null", fmt.Sprintf(row, 1), 100)},
		{Value: []byte(`{"schema":{},"payload":` + string(ev("u", fmt.Sprintf(row, 1), fmt.Sprintf(row, 2), 200)) + `}`)},
		{Value: ev("d", fmt.Sprintf(row, 2), "null", 300)},
		{Key: []byte(`{"id":2}`)},
		{Value: []byte(`{"op":"m","source":{"connector":"postgresql"},"message":{"prefix":"p"}}`)},
	}
	src := &cdcSource{topic: tailTopic}
	if format == "avro" {
		src.avro = newCDCAvro(registrytest.New(t), tailTopic, "postgresql")
		ev := func(op string, before, after *dbzRow, lsn uint64) []byte {
			return src.avro.encode(dbzEvent{Op: op, Before: before, After: after,
				Source: dbzSource{Version: "2.5.0.Final", Connector: "postgresql", Name: "srv", TsMs: 1, DB: "shop", Table: "accounts", LSN: &lsn, TxID: 7}})
		}
		row := func(id int64) *dbzRow { return &dbzRow{ID: id, Name: "n", Amount: 5, Updated: 1700000000} }
		recs = []*kgo.Record{
			{Value: ev("c", nil, row(1), 100)},
			{Value: ev("u", row(1), row(2), 200)},
			{Value: ev("d", row(2), nil, 300)},
			{Key: []byte(`{"id":2}`)},
			{Value: src.avro.encode(dbzEvent{Op: "m", Source: dbzSource{Connector: "postgresql"}})},
		}
	}
	cfg := cdcSourceConfig(t, e, src, "tail", "t", "replacing", "")
	if format == "avro" {
		if code, out, errOut := etlCmd(t, "validate", "-connect", "-config", cfg); code != 0 {
			t.Fatalf("etl validate -connect: exit %d\n%s%s", code, out, errOut)
		}
		bad := writeConfig(t, strings.Replace(readFile(t, cfg), "key: [id]", "key: [idd]", 1))
		code, out, errOut := etlCmd(t, "validate", "-connect", "-config", bad)
		if want := `decode.debezium.key: "idd" is not a field of the row record (after's Value) of the registry's latest schemas (cdc_tail-value)`; code == 0 || !strings.Contains(out+errOut, want) {
			t.Fatalf("etl validate -connect with a key the schema lacks: exit %d, want an error with %q:\n%s%s", code, want, out, errOut)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Topic = tailTopic
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	lines := tailOut(t, "-config", cfg, "-from", "earliest", "-n", "5")
	var got []string
	for _, l := range lines {
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		switch {
		case tl.Row != nil:
			got = append(got, fmt.Sprintf("row id=%v _version=%v _deleted=%v _op=%v", tl.Row["id"], tl.Row["_version"], tl.Row["_deleted"], tl.Row["_op"]))
		case tl.Dropped != "":
			got = append(got, fmt.Sprintf("dropped %d", tl.Offset))
		default:
			got = append(got, l)
		}
	}
	want := []string{
		"row id=1 _version=100 _deleted=0 _op=c",
		"row id=1 _version=200 _deleted=1 _op=u",
		"row id=2 _version=200 _deleted=0 _op=u",
		"row id=2 _version=300 _deleted=1 _op=d",
		"dropped 3",
		"dropped 4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("etl tail printed\n%s\nwant\n%s\n(lines:\n%s)", strings.Join(got, "\n"), strings.Join(want, "\n"), strings.Join(lines, "\n"))
	}
}

// TestCDCKillAtLeastOnce: the PostgreSQL history in replacing mode at
// at_least_once, as Debezium JSON and as Debezium Avro through the
// registry, the binary killed with SIGKILL three times between an insert
// and its acknowledgement, then run to the end: the replayed events carry
// the versions they had, and the table converges to the source; the
// kills left duplicate rows for FINAL to remove.
func TestCDCKillAtLeastOnce(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { cdcKillAtLeastOnce(t, format) })
	}
}

func cdcKillAtLeastOnce(t *testing.T, format string) {
	const topicName = "cdc"
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, topicName)}
	s := newCDCSource(3, "postgresql", topicName)
	if format == "avro" {
		s.withAvro(registrytest.New(t))
	}
	s.history(10_000, 20_000)
	s.produce(t, e.kb.Addr())
	e.ch.Exec(t, fmt.Sprintf(cdcReplacingDDL, "t"))
	e.ch.Exec(t, "SYSTEM STOP MERGES default.t")
	cfg := cdcSourceConfig(t, e, s, "alo", "t", "replacing", "delivery: at_least_once\n")
	for run := range 3 {
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", strconv.Itoa(1+run))
		p := startETL(t, cfg)
		if code := p.wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
			t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
		}
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
	}
	runToEnd(t, e, cfg, "alo", topicName)
	sameState(t, "after three kills", e.ch.Query(t, fmt.Sprintf(cdcReplacingState, "t")), s.want())
	plain := e.ch.Count(t, "default.t")
	if plain <= uint64(s.outRows) {
		t.Fatalf("count() = %d for %d rows the events make: the kills replayed nothing", plain, s.outRows)
	}
	t.Logf("%s, three kills at at_least_once: %d rows written for %d rows the events make", format, plain, s.outRows)
}

// TestCDCExactlyOnceKill: the MySQL history in replacing mode under
// exactly_once into a ReplicatedReplacingMergeTree, as Debezium JSON and
// as Debezium Avro through the registry, the binary killed with SIGKILL
// three times between an insert and its acknowledgement, then run to the
// end: before any merge, plain count() is the number of rows the events
// make (each replayed block was rebuilt identical, versions and all, and
// the table dropped it), and the state with FINAL equals the source
// table.
func TestCDCExactlyOnceKill(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { cdcExactlyOnceKill(t, format) })
	}
}

func cdcExactlyOnceKill(t *testing.T, format string) {
	const topicName = "cdc"
	zk := testenv.ZooKeeper(t)
	e := &env{t: t, ch: testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()}), kb: testenv.KafkaProcess(t, partitions, topicName)}
	s := newCDCSource(4, "mysql", topicName)
	if format == "avro" {
		s.withAvro(registrytest.New(t))
	}
	s.history(10_000, 20_000)
	s.produce(t, e.kb.Addr())
	e.ch.Exec(t, "CREATE TABLE default.t (id Int64, name String, amount Int64, note Nullable(String), updated DateTime, _version UInt64, _deleted UInt8) "+
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/t', '{replica}', _version) ORDER BY id "+
		"SETTINGS replicated_deduplication_window = 1000")
	e.ch.Exec(t, "SYSTEM STOP MERGES default.t")
	cfg := cdcSourceConfig(t, e, s, "eo", "t", "replacing", "delivery: exactly_once\n")
	for run := range 3 {
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", strconv.Itoa(1+run))
		p := startETL(t, cfg)
		if code := p.wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
			t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
		}
		t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
	}
	runToEnd(t, e, cfg, "eo", topicName)
	if got := e.ch.Count(t, "default.t"); got != uint64(s.outRows) {
		t.Fatalf("count() = %d before any merge, want %d: one row per event, two per key change", got, s.outRows)
	}
	sameState(t, "exactly once", e.ch.Query(t, fmt.Sprintf(cdcReplacingState, "t")), s.want())
}
