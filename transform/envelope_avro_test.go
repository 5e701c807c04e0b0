package transform

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
)

// The envelope over the Avro decoder: Debezium's AvroConverter writes a
// change event as one record, <server>.<schema>.<table>.Envelope, whose
// before and after are ["null", Value] unions of the same row record.

// dbzAvroSource is the source record of each connector.
var dbzAvroSource = map[string]string{
	"postgresql": `{"name":"lsn","type":["null","long"],"default":null},{"name":"txId","type":["null","long"],"default":null}`,
	"mysql":      `{"name":"file","type":"string"},{"name":"pos","type":"long"},{"name":"row","type":"int"}`,
}

// dbzAvroSchema is the Envelope schema of a table whose row record has
// fields value (JSON text of the fields), for connector; op false leaves
// out the op field.
func dbzAvroSchema(connector, value string, op bool) string {
	opField := `{"name":"op","type":"string"},`
	if !op {
		opField = ""
	}
	return fmt.Sprintf(`{"type":"record","name":"Envelope","namespace":"srv.public.accounts","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[%s]}],"default":null},
{"name":"after","type":["null","Value"],"default":null},
{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.%s","fields":[
 {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
 {"name":"ts_ms","type":"long"},{"name":"snapshot","type":[{"type":"string"},"null"],"default":"false"},
 {"name":"db","type":"string"},%s]}},
%s{"name":"ts_ms","type":["null","long"],"default":null},
{"name":"transaction","type":["null",{"type":"record","name":"ConnectDefault","namespace":"event.block","fields":[
 {"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null}]}`,
		value, connector, dbzAvroSource[connector], opField)
}

const dbzAvroValue = `{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}`

// avroCDC is newCDC's chain fed by the Avro decoder of one writer schema.
type avroCDC struct {
	*cdc
	dec    *avro.Decoder
	schema havro.Schema
	// api encodes with caches of its own: hamba/avro's default caches
	// the encoder of a named type across schemas.
	api havro.API
}

func newAvroCDC(t testing.TB, d config.Debezium, writer string) *avroCDC {
	t.Helper()
	if d.Key == nil {
		d.Key = []string{"id"}
	}
	d = (&config.Config{Decode: config.Decode{Debezium: d}}).DebeziumSettings()
	d.Wrapper = config.WrapperNone // as the pipeline sets it for Avro
	outs := []Output{output(t, "main", cdcColumns...)}
	declared := maps.Clone(EnvelopeFields)
	known := map[string]string{"id": "Int64", "name": "Nullable(String)"}
	rows, err := InputsKnown(nil, outs, declared, known)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := Compile(nil, rows, outs)
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewDebezium(d, rows, known)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SetEnvelope(env); err != nil {
		t.Fatal(err)
	}
	dec, err := avro.New(writer, env.Stage(), avro.Options{Fields: env.Stage().Names})
	if err != nil {
		t.Fatal(err)
	}
	return &avroCDC{cdc: &cdc{t: t, chain: chain, stage: mkChunk(t, env.Stage()), em: newEmitter(t, outs)}, dec: dec, schema: parseAvro(t, writer), api: havro.Config{}.Freeze()}
}

// event is a change event as the AvroConverter's datum.
type avroEvent map[string]any

// union is a value of a union's named branch as hamba/avro encodes it
// from a map (nil for null).
func union(name string, v map[string]any) any {
	if v == nil {
		return nil
	}
	return map[string]any{name: v}
}

const dbzValueName = "srv.public.accounts.Value"

func pgAvro(op string, before, after map[string]any, lsn int64) avroEvent {
	return avroEvent{"before": union(dbzValueName, before), "after": union(dbzValueName, after), "op": op, "ts_ms": int64(1700000000001), "transaction": nil,
		"source": map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "name": "srv", "ts_ms": int64(1700000000000),
			"snapshot": "false", "db": "shop", "lsn": lsn, "txId": int64(7)}}
}

func myAvro(op string, before, after map[string]any, file string, pos int64) avroEvent {
	return avroEvent{"before": union(dbzValueName, before), "after": union(dbzValueName, after), "op": op, "ts_ms": nil,
		"transaction": union("event.block.ConnectDefault", map[string]any{"id": "tx-1", "total_order": int64(1), "data_collection_order": int64(1)}),
		"source": map[string]any{"version": "2.5.0.Final", "connector": "mysql", "name": "srv", "ts_ms": int64(1700000000000),
			"snapshot": nil, "db": "shop", "file": file, "pos": pos, "row": 0}}
}

// parseAvro parses text with a cache of its own: the tests' schemas
// define the same names differently.
func parseAvro(t testing.TB, text string) havro.Schema {
	t.Helper()
	s, err := havro.ParseWithCache(text, "", &havro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func acct(id int64, name any) map[string]any { return map[string]any{"id": id, "name": name} }

func (c *avroCDC) run(ev avroEvent, offset int64) (Result, error) {
	c.t.Helper()
	b, err := c.api.Marshal(c.schema, map[string]any(ev))
	if err != nil {
		c.t.Fatalf("marshal %v: %v", ev, err)
	}
	c.stage.Reset()
	if _, err := c.dec.Decode(b, c.stage); err != nil {
		c.t.Fatalf("decode %v: %v", ev, err)
	}
	c.chain.SetOffset(offset)
	return c.chain.Run(c.stage, 0, c.em)
}

func (c *avroCDC) rows(evs ...avroEvent) []string {
	c.t.Helper()
	for i, e := range evs {
		if _, err := c.run(e, int64(i)); err != nil {
			c.t.Fatalf("event %d: %v", i, err)
		}
	}
	return c.em.rows(0, -1)
}

// TestEnvelopeAvroPostgreSQL: the PostgreSQL events of the registry's
// Envelope record: a null before or after leaves its image absent (an
// update without before writes the after row only, with no delete of a
// zero key), a key change deletes the old key, the version is the lsn of
// the ["null", "long"] union, and a null name in the ["null", "string"]
// union is the String column's default.
func TestEnvelopeAvroPostgreSQL(t *testing.T) {
	c := newAvroCDC(t, config.Debezium{}, dbzAvroSchema("postgresql", dbzAvroValue, true))
	same(t, c.rows(
		pgAvro("r", nil, acct(1, "a"), 10),
		pgAvro("c", nil, acct(2, nil), 20),
		pgAvro("u", acct(1, "a"), acct(1, "a2"), 30),
		pgAvro("u", nil, acct(2, "b2"), 40),
		pgAvro("u", acct(2, "b2"), acct(3, "b2"), 50),
		pgAvro("d", acct(1, "a2"), nil, 60),
	),
		"1|a|10|0|1|r",
		"2||20|0|1|c",
		"1|a2|30|0|1|u",
		"2|b2|40|0|1|u",
		"2|b2|50|1|-1|u",
		"3|b2|50|0|1|u",
		"1|a2|60|1|-1|d",
	)
}

// TestEnvelopeAvroMySQL: MySQL's source record (file string, pos long)
// gives the binlog version; collapsing mode cancels the before row; a
// delete whose before is null is corrupt and leaves no row.
func TestEnvelopeAvroMySQL(t *testing.T) {
	c := newAvroCDC(t, config.Debezium{Mode: config.DebeziumCollapsing}, dbzAvroSchema("mysql", dbzAvroValue, true))
	same(t, c.rows(
		myAvro("c", nil, acct(1, "a"), "mysql-bin.000003", 100),
		myAvro("u", acct(1, "a"), acct(1, "b"), "mysql-bin.000003", 200),
		myAvro("d", acct(1, "b"), nil, "mysql-bin.000004", 4),
	),
		"1|a|12884901988|0|1|c",
		"1|a|12884902088|0|-1|u",
		"1|b|12884902088|0|1|u",
		"1|b|17179869188|1|-1|d",
	)
	_, err := c.run(myAvro("d", nil, nil, "mysql-bin.000004", 9), 3)
	var te *Error
	if !errors.As(err, &te) || te.Reason != ReasonCorrupt || !strings.Contains(err.Error(), "the delete has no before with its key (id)") {
		t.Fatalf("a delete without before: %v, want corrupt", err)
	}
	if n := len(c.em.rows(0, -1)); n != 4 {
		t.Fatalf("%d rows after the corrupt delete, want 4", n)
	}
}

// TestEnvelopeAvroNoOp: a writer schema without op makes every record
// corrupt.
func TestEnvelopeAvroNoOp(t *testing.T) {
	c := newAvroCDC(t, config.Debezium{}, dbzAvroSchema("postgresql", dbzAvroValue, false))
	ev := pgAvro("c", nil, acct(1, "a"), 10)
	delete(ev, "op")
	_, err := c.run(ev, 0)
	var te *Error
	if !errors.As(err, &te) || te.Reason != ReasonCorrupt || !strings.Contains(err.Error(), "it has no op field") {
		t.Fatalf("err = %v, want corrupt: no op", err)
	}
}

// TestEnvelopeAvroNewField: events of a newer schema whose row record
// gained a field decode into the same staging schema (the field no
// column reads is skipped), and the older events' rows are unchanged.
func TestEnvelopeAvroNewField(t *testing.T) {
	c := newAvroCDC(t, config.Debezium{}, dbzAvroSchema("postgresql", `{"name":"id","type":"long"},{"name":"email","type":["null","string"],"default":null},{"name":"name","type":["null","string"],"default":null}`, true))
	same(t, c.rows(pgAvro("c", nil, map[string]any{"id": int64(5), "email": "x@y", "name": "e"}, 70)), "5|e|70|0|1|c")
}
