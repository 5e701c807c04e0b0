package pipeline

import (
	"context"
	"fmt"
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

const eventSchema = gen.AvroSchema

// TestAvroConfluent: Confluent-framed Avro through a real registry (an
// in-process HTTP server), broker and ClickHouse. The registry is down when
// the pipeline starts: records wait for their schema (none is
// dead-lettered for it) and arrive once it is back. A record naming an
// unknown schema id, one with a wrong magic byte and a truncated datum go to the dead-letter
// topic with their reasons; every good record arrives with its values.
func TestAvroConfluent(t *testing.T) {
	kb, ch := setup(t)
	kb.CreateTopic(t, "events.dlq", 1)
	reg := registrytest.New(t)
	id := reg.Register("events-value", eventSchema)
	schema := avro.MustParse(eventSchema)

	const n = 3000
	raw := map[uint64][]byte{}
	for i := uint64(0); i < n; i++ {
		e := gen.Make(seed, i)
		payload, err := avro.Marshal(schema, e.Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, payload)
	}
	raw[10] = schemaregistry.AppendFrame(nil, 9999, raw[10][5:]) // unknown schema id
	raw[20] = append([]byte{1}, raw[20][1:]...)                  // wrong magic byte
	raw[30] = raw[30][:len(raw[30])-4]                           // truncated datum
	produce(t, kb, 0, n, raw)

	reg.SetDown(true)
	cfg := testConfig(t, kb, ch, "avro")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	cfg.Decode.OnError = "dlq"
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// The registry has refused the pipeline's lookups over several
	// backoffs (100 ms doubling: more than a second), long past the 100 ms
	// linger of a batch the records would have been in.
	waitRunning(t, done, "lookups refused by the registry", 30*time.Second, func() error {
		if n := reg.Requests(); n < 6 {
			return fmt.Errorf("%d registry requests", n)
		}
		return nil
	})
	if got, written := ch.Count(t, "default.events"), p.Stats().RowsWritten; got != 0 || written != 0 {
		t.Fatalf("%d rows in the table, %d written, while the registry was down", got, written)
	}
	reg.SetDown(false)
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n-3 })
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "avro", "events")
		return c[0]+c[1]+c[2] == n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	dead := readTopic(t, kb, "events.dlq", 3)
	reasons := map[string]string{}
	for _, r := range dead {
		for _, h := range r.Headers {
			if h.Key == "etl.error.reason" {
				reasons[fmt.Sprint(r.Value[len(r.Value)-1] == raw[30][len(raw[30])-1] && len(r.Value) == len(raw[30]), "/", r.Value[0])] = string(h.Value)
			}
		}
	}
	// By record: the wrong magic byte starts with 1; of the two with magic
	// 0, the truncated one has raw[30]'s length and last byte.
	want := map[string]string{"false/1": "corrupt", "false/0": "unknown_schema", "true/0": "corrupt"}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Fatalf("dead-letter reasons %v, want %v", reasons, want)
	}
	// Values: compare a digest of every good row with the generator's.
	var digest float64
	for i := uint64(0); i < n; i++ {
		if i == 10 || i == 20 || i == 30 {
			continue
		}
		e := gen.Make(seed, i)
		digest += float64(e.UserID) + float64(e.TS.Unix()%1000)
	}
	got := ch.Query(t, "SELECT count(), sum(user_id) + sum(toUnixTimestamp(ts) % 1000), countIf(note IS NULL) FROM default.events")
	nulls := 0
	for i := uint64(0); i < n; i++ {
		if i != 10 && i != 20 && i != 30 && gen.Make(seed, i).Note == nil {
			nulls++
		}
	}
	if wantS := fmt.Sprintf("%d\t%.0f\t%d", n-3, digest, nulls); got != wantS {
		t.Fatalf("count, digest, nulls = %s, want %s", got, wantS)
	}
}
