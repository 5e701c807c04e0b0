package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestFailFast: under on_error fail, the binary stops on a bad record and
// exits 1 well within checkpoint.drain_timeout (20 s here), for JSON and
// for Confluent Avro alike, having written the rows before the record.
func TestFailFast(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) {
			const n = 3000
			ch := testenv.ClickHouse(t)
			ch.Exec(t, gen.TableDDL("default", "events"))
			kb := testenv.KafkaProcess(t, partitions, topic)
			reg := registrytest.New(t)
			id := reg.Register("events-value", gen.AvroSchema)
			schema := avro.MustParse(gen.AvroSchema)
			var recs []*kgo.Record
			for i := uint64(0); i < n; i++ {
				e := gen.Make(seed, i)
				v := e.AppendJSON(nil)
				if format == "avro" {
					payload, err := avro.Marshal(schema, e.Avro())
					if err != nil {
						t.Fatal(err)
					}
					v = schemaregistry.AppendFrame(nil, id, payload)
				}
				if i == n/2 {
					v = v[:len(v)-3] // truncated
				}
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: v})
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n+10))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			e := &env{t: t, ch: ch, kb: kb}
			extra := "decode: {on_error: fail}\n"
			if format == "avro" {
				extra = fmt.Sprintf("decode:\n  format: avro\n  avro: {framing: confluent, registry: {url: %q}}\n  on_error: fail\n", reg.URL())
			}
			cfg := e.config("failfast-"+format, extra)
			testenv.Build(t, "./cmd/etl") // built before the clock starts
			start := time.Now()
			p := startETL(t, cfg)
			code := p.wait(t, time.Minute)
			took := time.Since(start)
			t.Logf("%s: exit %d after %v", format, code, took.Round(time.Millisecond))
			if code != 1 {
				t.Fatalf("exit code %d, want 1; log:\n%s", code, p.logText())
			}
			if took >= 20*time.Second {
				t.Errorf("the stop took %v: it waited for the drain timeout; log:\n%s", took, p.logText())
			}
		})
	}
}
