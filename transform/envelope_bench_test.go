package transform

import (
	"fmt"
	"maps"
	"testing"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/decode/json"
)

// The CPU of a change event against the plain JSON path's: the same rows
// (a source table of five fields), as Debezium events (decoded, the
// envelope, the chain into the table's columns) and as plain JSON objects
// of the row (decoded straight into the table's columns).

var benchCDCFields = map[string]string{"id": "Int64", "name": "String", "amount": "Int64", "note": "Nullable(String)", "updated": "DateTime"}

const benchCDCEvents = 1024

func benchRowJSON(i int) string {
	return fmt.Sprintf(`{"id":%d,"name":"customer-%d","amount":%d,"note":"note %d","updated":%d}`, i, i, i*37-5000, i%97, 1_700_000_000+i)
}

// benchCDCEvent is event i: 20% inserts, 60% updates, 20% deletes, half of
// them with the JSON converter's schema/payload wrapper (its schema part
// left small).
func benchCDCEvent(i int, wrap bool) []byte {
	op, before, after := "u", benchRowJSON(i), benchRowJSON(i)
	switch i % 5 {
	case 0:
		op, before = "c", "null"
	case 4:
		op, after = "d", "null"
	}
	ev := fmt.Sprintf(`{"before":%s,"after":%s,"source":{"version":"2.5.0.Final","connector":"postgresql","name":"srv","ts_ms":1700000000000,"snapshot":"false","db":"shop","sequence":"[\"1\",\"2\"]","schema":"public","table":"accounts","txId":%d,"lsn":%d,"xmin":null},"op":"%s","ts_ms":1700000000123,"transaction":null}`,
		before, after, 700+i, 24_000_000+i*64, op)
	if wrap && i%2 == 1 {
		ev = `{"schema":{"type":"struct","optional":false,"name":"srv.public.accounts.Envelope"},"payload":` + ev + `}`
	}
	return []byte(ev)
}

// BenchmarkCDCEvent: one Debezium event decoded, through the envelope and
// the chain into the table's columns (replacing mode: _version, _deleted):
// JSON with wrapper auto, half the events wrapped; with wrapper none,
// none; Avro, the same events as the AvroConverter writes them.
func BenchmarkCDCEvent(b *testing.B) {
	b.Run("wrapper=auto", func(b *testing.B) { benchCDC(b, config.WrapperAuto) })
	b.Run("wrapper=none", func(b *testing.B) { benchCDC(b, config.WrapperNone) })
	b.Run("avro", benchCDCAvro)
}

func benchCDC(b *testing.B, wrapper string) {
	outs := []Output{output(b, "t", "id Int64", "name String", "amount Int64", "note Nullable(String)", "updated DateTime", "_version UInt64", "_deleted UInt8")}
	declared := map[string]string{}
	for k, v := range benchCDCFields {
		declared[k] = v
	}
	for k, v := range EnvelopeFields {
		declared[k] = v
	}
	rows, err := Inputs(nil, outs, declared)
	if err != nil {
		b.Fatal(err)
	}
	chain, err := Compile(nil, rows, outs)
	if err != nil {
		b.Fatal(err)
	}
	d := (&config.Config{Decode: config.Decode{Debezium: config.Debezium{Key: []string{"id"}, Wrapper: wrapper}}}).DebeziumSettings()
	env, err := NewDebezium(d, rows, benchCDCFields)
	if err != nil {
		b.Fatal(err)
	}
	if err := chain.SetEnvelope(env); err != nil {
		b.Fatal(err)
	}
	dec, err := json.New(env.Stage(), json.Options{})
	if err != nil {
		b.Fatal(err)
	}
	events := make([][]byte, benchCDCEvents)
	size := 0
	for i := range events {
		events[i] = benchCDCEvent(i, wrapper == config.WrapperAuto)
		size += len(events[i])
	}
	runCDCBench(b, dec, chain, env, outs[0], events, size)
}

// BenchmarkCDCPlainJSON: the plain JSON path's cost for the same rows: the
// row as a JSON object decoded straight into the table's columns.
func BenchmarkCDCPlainJSON(b *testing.B) {
	s := mkSchema(b, "id Int64", "name String", "amount Int64", "note Nullable(String)", "updated DateTime")
	dec, err := json.New(s, json.Options{})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([][]byte, benchCDCEvents)
	size := 0
	for i := range recs {
		recs[i] = []byte(benchRowJSON(i))
		size += len(recs[i])
	}
	out, err := chunk.New(s)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if n%benchCDCEvents == 0 {
			out.Reset()
		}
		if _, err := dec.Decode(recs[n%benchCDCEvents], out); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCDCAvro is BenchmarkCDCEvent's events as Debezium Avro (the
// AvroConverter's Envelope record, PostgreSQL's source, read with the
// registry's writer schema).
func benchCDCAvro(b *testing.B) {
	value := `{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"amount","type":"long"},{"name":"note","type":["null","string"],"default":null},{"name":"updated","type":{"type":"long","logicalType":"timestamp-millis"}}`
	writer := dbzAvroSchema("postgresql", value, true)
	cols := []string{"id Int64", "name String", "amount Int64", "note Nullable(String)", "updated DateTime", "_version UInt64", "_deleted UInt8"}
	outs := []Output{output(b, "t", cols...)}
	rows, err := InputsKnown(nil, outs, maps.Clone(EnvelopeFields), nil)
	if err != nil {
		b.Fatal(err)
	}
	chain, err := Compile(nil, rows, outs)
	if err != nil {
		b.Fatal(err)
	}
	d := (&config.Config{Decode: config.Decode{Debezium: config.Debezium{Key: []string{"id"}, Wrapper: config.WrapperNone}}}).DebeziumSettings()
	env, err := NewDebezium(d, rows, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := chain.SetEnvelope(env); err != nil {
		b.Fatal(err)
	}
	dec, err := avro.New(writer, env.Stage(), avro.Options{Fields: env.Stage().Names})
	if err != nil {
		b.Fatal(err)
	}
	sc := parseAvro(b, writer)
	events := make([][]byte, benchCDCEvents)
	size := 0
	for i := range events {
		events[i] = benchAvroEvent(b, sc, i)
		size += len(events[i])
	}
	runCDCBench(b, dec, chain, env, outs[0], events, size)
}

// benchAvroRow is benchRowJSON's row i as the Avro Value record.
func benchAvroRow(i int) map[string]any {
	return map[string]any{"id": int64(i), "name": fmt.Sprintf("customer-%d", i), "amount": int64(i*37 - 5000),
		"note": fmt.Sprintf("note %d", i%97), "updated": int64(1_700_000_000+i) * 1000}
}

// benchAvroEvent is benchCDCEvent's event i (the same ops) in Avro.
func benchAvroEvent(b *testing.B, sc havro.Schema, i int) []byte {
	op, before, after := "u", benchAvroRow(i), benchAvroRow(i)
	switch i % 5 {
	case 0:
		op, before = "c", nil
	case 4:
		op, after = "d", nil
	}
	ev := pgAvro(op, before, after, int64(24_000_000+i*64))
	p, err := havro.Marshal(sc, map[string]any(ev))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkCDCPlainAvro: the plain Avro path's cost for the same rows:
// the row record decoded straight into the table's columns.
func BenchmarkCDCPlainAvro(b *testing.B) {
	writer := `{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"amount","type":"long"},{"name":"note","type":["null","string"],"default":null},{"name":"updated","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	s := mkSchema(b, "id Int64", "name String", "amount Int64", "note Nullable(String)", "updated DateTime")
	dec, err := avro.New(writer, s, avro.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sc := parseAvro(b, writer)
	recs := make([][]byte, benchCDCEvents)
	size := 0
	for i := range recs {
		p, err := havro.Marshal(sc, benchAvroRow(i))
		if err != nil {
			b.Fatal(err)
		}
		recs[i] = p
		size += len(p)
	}
	out, err := chunk.New(s)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if n%benchCDCEvents == 0 {
			out.Reset()
		}
		if _, err := dec.Decode(recs[n%benchCDCEvents], out); err != nil {
			b.Fatal(err)
		}
	}
}

// runCDCBench times events decoded by dec into env's staging chunk and run
// through chain into out's columns, one event per iteration; size is the
// events' bytes.
func runCDCBench(b *testing.B, dec interface {
	Decode([]byte, *chunk.Chunk) (int, error)
}, chain *Chain, env *Envelope, out Output, events [][]byte, size int) {
	stage := mkChunk(b, env.Stage())
	c := mkChunk(b, out.Schema)
	em := &fixedEmitter{c: c}
	b.SetBytes(int64(size / len(events)))
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if n%benchCDCEvents == 0 {
			c.Reset()
		}
		stage.Reset()
		if _, err := dec.Decode(events[n%benchCDCEvents], stage); err != nil {
			b.Fatal(err)
		}
		chain.SetOffset(int64(n))
		if _, err := chain.Run(stage, 0, em); err != nil {
			b.Fatal(err)
		}
	}
}
