package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// Debezium's change events as its AvroConverter writes them: the value
// is Confluent-framed (magic byte, schema id), its schema the record
// srv.shop.accounts.Envelope registered under <topic>-value, with before
// and after ["null", Value] unions of the same row record, the
// connector's source record, op, ts_ms and transaction.

// cdcAvroValue is the row record's fields; email is the column the
// source table gains in the middle of the history (a new schema id).
const (
	cdcAvroValue = `{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"amount","type":"long"},
{"name":"note","type":["null","string"],"default":null},
{"name":"updated","type":{"type":"long","connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}}`
	cdcAvroEmail = `,{"name":"email","type":["null","string"],"default":null}`
)

var cdcAvroSource = map[string]string{
	"postgresql": `{"name":"lsn","type":["null","long"],"default":null},{"name":"txId","type":["null","long"],"default":null}`,
	"mysql":      `{"name":"file","type":"string"},{"name":"pos","type":"long"},{"name":"row","type":"int"}`,
}

func cdcAvroSchema(connector, value string) string {
	return fmt.Sprintf(`{"type":"record","name":"Envelope","namespace":"srv.shop.accounts","connect.name":"srv.shop.accounts.Envelope","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[%s]}],"default":null},
{"name":"after","type":["null","Value"],"default":null},
{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.%s","fields":[
 {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
 {"name":"ts_ms","type":"long"},{"name":"snapshot","type":[{"type":"string","connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},
 {"name":"db","type":"string"},{"name":"table","type":"string"},%s]}},
{"name":"op","type":"string"},
{"name":"ts_ms","type":["null","long"],"default":null},
{"name":"transaction","type":["null",{"type":"record","name":"ConnectDefault","namespace":"event.block","fields":[
 {"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null}]}`,
		value, connector, cdcAvroSource[connector])
}

// cdcAvro encodes a source's events in Avro, registering its schemas.
type cdcAvro struct {
	reg     *registrytest.Server
	subject string
	conn    string
	id      int32
	schema  avro.Schema
	api     avro.API
	email   bool // the row record has email
}

func newCDCAvro(reg *registrytest.Server, topic, connector string) *cdcAvro {
	a := &cdcAvro{reg: reg, subject: topic + "-value", conn: connector}
	a.use(cdcAvroValue)
	return a
}

// use registers the schema of row record value and writes with it.
func (a *cdcAvro) use(value string) {
	text := cdcAvroSchema(a.conn, value)
	a.id = a.reg.Register(a.subject, text)
	a.schema = avro.MustParse(text)
	// Caches of its own: the encoder of a named type is cached by name.
	a.api = avro.Config{}.Freeze()
}

// addEmail is the source table's ALTER TABLE ADD COLUMN email: the
// connector registers a new schema and writes with it.
func (a *cdcAvro) addEmail() {
	a.use(cdcAvroValue + cdcAvroEmail)
	a.email = true
}

func (a *cdcAvro) row(r *dbzRow) any {
	if r == nil {
		return nil
	}
	m := map[string]any{"id": r.ID, "name": r.Name, "amount": r.Amount, "updated": r.Updated * 1000, "note": nil}
	if r.Note != nil {
		m["note"] = *r.Note
	}
	if a.email {
		m["email"] = nil
		if r.Email != nil {
			m["email"] = *r.Email
		}
	}
	return map[string]any{"srv.shop.accounts.Value": m}
}

// encode is the framed value of ev.
func (a *cdcAvro) encode(ev dbzEvent) []byte {
	src := map[string]any{"version": ev.Source.Version, "connector": ev.Source.Connector, "name": ev.Source.Name,
		"ts_ms": ev.Source.TsMs, "snapshot": "false", "db": ev.Source.DB, "table": ev.Source.Table}
	if ev.Op == "r" {
		src["snapshot"] = "true"
	}
	if a.conn == "postgresql" {
		src["lsn"], src["txId"] = nil, nil
		if ev.Source.LSN != nil {
			src["lsn"], src["txId"] = int64(*ev.Source.LSN), ev.Source.TxID
		}
	} else {
		src["file"], src["pos"], src["row"] = ev.Source.File, int64(0), 0
		if ev.Source.Pos != nil {
			src["pos"] = int64(*ev.Source.Pos)
		}
	}
	var tx any
	if ev.Source.TxID != 0 {
		tx = map[string]any{"event.block.ConnectDefault": map[string]any{"id": fmt.Sprint(ev.Source.TxID), "total_order": int64(1), "data_collection_order": int64(1)}}
	}
	v := map[string]any{"before": a.row(ev.Before), "after": a.row(ev.After), "source": src, "op": ev.Op, "ts_ms": ev.TsMs, "transaction": tx}
	p, err := a.api.Marshal(a.schema, v)
	if err != nil {
		panic(err)
	}
	return schemaregistry.AppendFrame(nil, a.id, p)
}

// cdcAvroDecode is the decode section reading s's Avro events.
func cdcAvroDecode(reg *registrytest.Server, mode string) string {
	return fmt.Sprintf(`decode:
  format: avro
  envelope: debezium
  avro: {framing: confluent, registry: {url: %q}}
  debezium: {key: [id], mode: %s}
`, reg.URL(), mode)
}

// TestCDCAvroSchemaChange: the PostgreSQL history of TestCDCConverges
// (10,000 keys, 20,000 changes) as Debezium Avro through the registry,
// into the table etl schema derives from the registry's first Envelope
// schema. Half way through, the source table gains a nullable column: the
// connector registers a new schema, the pipeline adds the column
// (schema.add_columns) before the first event of the new schema id and
// fills it from there. The table's state with FINAL, deleted rows
// filtered, equals the source table row by row, the new column included,
// and the table holds one row per event, two per key change.
func TestCDCAvroSchemaChange(t *testing.T) {
	const topicName, table = "cdc_avro", "r_avro"
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, topicName)}
	reg := registrytest.New(t)
	s := newCDCSource(5, "postgresql", topicName).withAvro(reg)
	s.evolveAt = 10_000
	cfg := cdcSourceConfig(t, e, s, "g-avro", table, "replacing", "")
	cfg = writeConfig(t, strings.Replace(readFile(t, cfg), "    table: "+table+"\n", "    table: "+table+"\n    schema: {add_columns: true}\n", 1))
	// The table etl schema derives from the first schema: the row's
	// fields from after's Value record, the version and the flag.
	createDerived(t, e, cfg, "ENGINE = ReplacingMergeTree(`_version`)\nORDER BY `id`")
	if got := e.ch.Query(t, "SELECT name, type FROM system.columns WHERE database = 'default' AND table = '"+table+"'"); got != "id\tInt64\nname\tString\namount\tInt64\nnote\tNullable(String)\nupdated\tDateTime\n_version\tUInt64\n_deleted\tUInt8" {
		t.Fatalf("etl schema derived the columns\n%s", got)
	}
	e.ch.Exec(t, "SYSTEM STOP MERGES default."+table)
	s.history(10_000, 20_000)
	s.produce(t, e.kb.Addr())
	p := runToEnd(t, e, cfg, "g-avro", topicName)
	log := p.logText()
	if !strings.Contains(log, "a change event was skipped") || strings.Contains(log, "level=ERROR") || !strings.Contains(log, "added a column") {
		t.Fatalf("the log should warn of the skipped messages, tell of the added column and hold no error:\n%s", log)
	}
	q := "SELECT " + cdcColumns + ", ifNull(email, 'NULL') FROM (SELECT * FROM default." + table + " FINAL) WHERE _deleted = 0 ORDER BY id"
	sameState(t, "avro replacing", e.ch.Query(t, q), s.want())
	if got := e.ch.Count(t, "default."+table); got != uint64(s.outRows) {
		t.Fatalf("%d rows, want %d: one per event, two per key change", got, s.outRows)
	}
}
