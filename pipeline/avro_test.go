package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
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
	dead := runRegistryOutage(t, kb, ch, reg, cfg, "avro", n, 3)
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
