package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestAvroSchemaTypesTheChain: with a writer schema file, fields that only
// the transform chain reads (amount, user_id: no column of the table)
// take their types from the schema; decode.fields is not needed. The rows
// written are exactly those the filter keeps.
func TestAvroSchemaTypesTheChain(t *testing.T) {
	kb, ch := setup(t)
	ch.Exec(t, "CREATE TABLE default.slim (id UInt64, kind String, big UInt8) ENGINE = MergeTree ORDER BY id")
	schema := avro.MustParse(eventSchema)
	const n = 500
	raw := map[uint64][]byte{}
	want := 0
	for i := uint64(0); i < n; i++ {
		e := gen.Make(seed, i)
		b, err := avro.Marshal(schema, e.Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
		if e.Amount > 50 && e.UserID%2 == 0 {
			want++
		}
	}
	produce(t, kb, 0, n, raw)
	file := filepath.Join(t.TempDir(), "event.avsc")
	if err := os.WriteFile(file, []byte(eventSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, kb, ch, "avro-types")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Sink.ClickHouse.Table = "slim"
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "raw", SchemaFile: file}
	cfg.Decode.OnError = "fail"
	cfg.Transform = []config.Step{
		{Filter: &config.Expr{Text: "amount > 50.0 && user_id % 2 == 0"}},
		{Set: []config.Assignment{{Field: "big", Expr: config.Expr{Text: "amount > 75.0 ? 1 : 0"}}}},
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "avro-types", "events")
		return c[0]+c[1]+c[2] == n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ch.Query(t, "SELECT count() FROM default.slim"); got != fmt.Sprint(want) {
		t.Fatalf("%s rows, want %d", got, want)
	}
}

// TestRegistryTypesTheChain: with Confluent framing and no reader schema,
// the fields only the chain reads take their types from the latest schema
// of the topic's subject, fetched at startup.
func TestRegistryTypesTheChain(t *testing.T) {
	kb, ch := setup(t)
	ch.Exec(t, "CREATE TABLE default.slim (id UInt64, kind String) ENGINE = MergeTree ORDER BY id")
	reg := registrytest.New(t)
	id := reg.Register("events-value", eventSchema)
	schema := avro.MustParse(eventSchema)
	const n = 300
	raw := map[uint64][]byte{}
	want := 0
	for i := uint64(0); i < n; i++ {
		e := gen.Make(seed, i)
		b, err := avro.Marshal(schema, e.Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, b)
		if e.Amount > 50 {
			want++
		}
	}
	produce(t, kb, 0, n, raw)
	cfg := testConfig(t, kb, ch, "registry-types")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Sink.ClickHouse.Table = "slim"
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	cfg.Decode.OnError = "fail"
	cfg.Transform = []config.Step{{Filter: &config.Expr{Text: "amount > 50.0"}}}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "registry-types", "events")
		return c[0]+c[1]+c[2] == n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ch.Query(t, "SELECT count() FROM default.slim"); got != fmt.Sprint(want) {
		t.Fatalf("%s rows, want %d", got, want)
	}
}
