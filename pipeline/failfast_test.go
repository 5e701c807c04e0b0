package pipeline

import (
	"context"
	"os"
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

// TestFailFastAvro: under on_error fail, a corrupt Avro record, or one
// naming a schema id the registry does not know, stops the pipeline with
// the record's error (the elapsed time is logged: tens of milliseconds,
// where a stop that waited for the drain would take drain_timeout).
func TestFailFastAvro(t *testing.T) {
	for _, bad := range []string{"truncated", "unknown-id", "raw-truncated"} {
		t.Run(bad, func(t *testing.T) { failFastAvro(t, bad) })
	}
}

func failFastAvro(t *testing.T, bad string) {
	kb, ch := setup(t)
	reg := registrytest.New(t)
	id := reg.Register("events-value", eventSchema)
	schema := avro.MustParse(eventSchema)
	const n = 300
	raw := map[uint64][]byte{}
	for i := uint64(0); i < n; i++ {
		payload, err := avro.Marshal(schema, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, payload)
	}
	switch bad {
	case "truncated":
		raw[150] = raw[150][:len(raw[150])-4]
	case "magic":
		raw[150] = append([]byte{1}, raw[150][1:]...)
	case "unknown-id":
		raw[150] = schemaregistry.AppendFrame(nil, 9999, raw[150][5:])
	case "first-truncated":
		raw[0] = raw[0][:len(raw[0])-4]
	case "raw-truncated":
		for i := range raw {
			raw[i] = raw[i][5:]
		}
		raw[150] = raw[150][:len(raw[150])-4]
	}
	produce(t, kb, 0, n, raw)
	cfg := testConfig(t, kb, ch, "failfast")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	cfg.Decode.OnError = "fail"
	if bad == "raw-truncated" {
		f := t.TempDir() + "/schema.avsc"
		if err := os.WriteFile(f, []byte(eventSchema), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Decode.Avro = config.Avro{Framing: "raw", SchemaFile: f}
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.Run(context.Background())
	t.Logf("Run returned after %v: %v", time.Since(start), err)
	if err == nil {
		t.Fatal("Run returned nil")
	}
}
