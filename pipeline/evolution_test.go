package pipeline

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// Writer schema v1: amount as float (promoted to double by the reader), the
// kind field under its old name "type" (a reader alias), no note.
const evolutionV1 = `{"type": "record", "name": "Event", "fields": [
  {"name": "id", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "user_id", "type": "long"},
  {"name": "type", "type": "string"},
  {"name": "amount", "type": "float"}
]}`

// Writer schema v2: fields reordered, note added, and a field the reader
// does not know (ignored).
const evolutionV2 = `{"type": "record", "name": "Event", "fields": [
  {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "kind", "type": "string"},
  {"name": "id", "type": "long"},
  {"name": "debug", "type": "string"},
  {"name": "amount", "type": "double"},
  {"name": "user_id", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}
]}`

const evolutionReader = `{"type": "record", "name": "Event", "fields": [
  {"name": "id", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "user_id", "type": "long"},
  {"name": "kind", "type": "string", "aliases": ["type"]},
  {"name": "amount", "type": "double"},
  {"name": "note", "type": ["null", "string"], "default": null}
]}`

// tsvEscaper escapes a string as ClickHouse's TabSeparated output does.
var tsvEscaper = strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\t", "\\t", "'", "\\'")

type evolutionV1Event struct {
	ID     int64     `avro:"id"`
	TS     time.Time `avro:"ts"`
	UserID int64     `avro:"user_id"`
	Type   string    `avro:"type"`
	Amount float32   `avro:"amount"`
}

type evolutionV2Event struct {
	Note   *string   `avro:"note"`
	Kind   string    `avro:"kind"`
	ID     int64     `avro:"id"`
	Debug  string    `avro:"debug"`
	Amount float64   `avro:"amount"`
	UserID int64     `avro:"user_id"`
	TS     time.Time `avro:"ts"`
}

// TestAvroEvolution: records of two writer schemas interleaved in one topic,
// served by the registry and resolved to a reader schema (promotions, an
// alias, a removed and an added field), arrive with every value right.
func TestAvroEvolution(t *testing.T) {
	kb, ch := setup(t)
	reg := registrytest.New(t)
	id1 := reg.Register("events-value", evolutionV1)
	id2 := reg.Register("events-value", evolutionV2)
	s1, s2 := avro.MustParse(evolutionV1), avro.MustParse(evolutionV2)

	const n = 4000
	raw := map[uint64][]byte{}
	var want strings.Builder
	for i := uint64(0); i < n; i++ {
		e := gen.Make(seed, i)
		var payload []byte
		var err error
		note := "<null>"
		amount := e.Amount
		if i%2 == 0 {
			payload, err = avro.Marshal(s1, evolutionV1Event{ID: int64(e.ID), TS: e.TS, UserID: int64(e.UserID), Type: e.Kind, Amount: float32(e.Amount)})
			raw[i] = schemaregistry.AppendFrame(nil, id1, payload)
			amount = float64(float32(e.Amount))
		} else {
			payload, err = avro.Marshal(s2, evolutionV2Event{Note: e.Note, Kind: e.Kind, ID: int64(e.ID), Debug: "x", Amount: e.Amount, UserID: int64(e.UserID), TS: e.TS})
			raw[i] = schemaregistry.AppendFrame(nil, id2, payload)
			if e.Note != nil {
				note = tsvEscaper.Replace(*e.Note)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&want, "%d\t%d\t%d\t%s\t%d\t%s\n", e.ID, e.TS.Unix(), e.UserID, e.Kind, int64(math.Round(amount*1000)), note)
	}
	produce(t, kb, 0, n, raw)

	cfg := testConfig(t, kb, ch, "evolution")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())},
		NegativeCacheTTL: config.Duration(time.Minute), ReaderSchema: evolutionReader}
	cfg.Decode.ValidateSchema = "full"
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n })
	stop()

	got := ch.Query(t, "SELECT id, toUnixTimestamp(ts), user_id, kind, toInt64(round(amount * 1000)), ifNull(note, '<null>') FROM default.events ORDER BY id")
	if got != strings.TrimSuffix(want.String(), "\n") {
		gl, wl := strings.Split(got, "\n"), strings.Split(want.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("row %d: got %q, want %q (%d rows)", i, gl[i], wl[i], len(gl))
			}
		}
		t.Fatalf("got %d rows, want %d", len(gl), len(wl)-1)
	}
}

// TestAvroNewSchemaReadsTable: a new writer schema adds a field and the
// table got the matching column (ALTER TABLE ... ADD COLUMN) before the
// producers moved on. The first record of the new schema id makes the
// pipeline read the table again before decoding it, so the column is filled
// from that record on. The periodic read is off: only the new id can
// trigger it.
func TestAvroNewSchemaReadsTable(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.events (id UInt64, ts DateTime, user_id UInt32, amount Float64, note Nullable(String)) ENGINE = MergeTree ORDER BY id")
	reg := registrytest.New(t)
	v1 := strings.Replace(eventSchema, `{"name": "kind", "type": "string"},`, "", 1)
	id1 := reg.Register("events-value", v1)
	s1, s2 := avro.MustParse(v1), avro.MustParse(eventSchema)

	frames := func(from, to uint64, id int32, s avro.Schema) map[uint64][]byte {
		return avroFrames(t, from, to, id, s)
	}
	cfg := testConfig(t, kb, ch, "newschema")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	cfg.Sink.ClickHouse.DescribeInterval = 0
	p, stop := runPipeline(t, cfg)

	produce(t, kb, 0, 500, frames(0, 500, id1, s1))
	testenv.WaitFor(t, "v1 rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 500 })
	ch.Exec(t, "ALTER TABLE default.events ADD COLUMN kind String")
	id2 := reg.Register("events-value", eventSchema)
	produce(t, kb, 500, 500, frames(500, 1000, id2, s2))
	testenv.WaitFor(t, "v2 rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= 1000 })
	stop()

	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "1000\t1000" {
		t.Fatalf("count, distinct = %s", got)
	}
	if got := ch.Query(t, "SELECT id, kind FROM default.events WHERE id >= 500 ORDER BY id"); got != kindsFrom(500, 1000) {
		t.Fatalf("kind of the v2 rows differs from the generated records:\n%.300s", got)
	}
	if got := ch.Query(t, "SELECT countIf(kind != '') FROM default.events WHERE id < 500"); got != "0" {
		t.Fatalf("v1 rows with a kind: %s", got)
	}
	if n := testutil.ToFloat64(p.m.tableChanges); n != 1 {
		t.Fatalf("etl_sink_table_changes_total = %v, want 1", n)
	}
}

// avroFrames is gen's records [from, to) in Avro schema s, framed with
// schema id, by record number.
func avroFrames(t *testing.T, from, to uint64, id int32, s avro.Schema) map[uint64][]byte {
	t.Helper()
	raw := map[uint64][]byte{}
	for i := from; i < to; i++ {
		payload, err := avro.Marshal(s, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, payload)
	}
	return raw
}
