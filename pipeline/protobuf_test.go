package pipeline

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// protoEventFile is gen.Event's fields as a Protobuf schema; the event
// message is the file's second (message indexes [1]).
const protoEventFile = `syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
message Unused { string x = 1; }
message Event {
  uint64 id = 1;
  google.protobuf.Timestamp ts = 2;
  uint32 user_id = 3;
  string kind = 4;
  double amount = 5;
  optional string note = 6;
}
`

// protoEvent is e's encoding as protoEventFile's Event.
func protoEvent(e gen.Event) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, e.ID)
	ts := protowire.AppendTag(nil, 1, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(e.TS.Unix()))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(e.UserID))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, e.Kind)
	b = protowire.AppendTag(b, 5, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.Amount))
	if e.Note != nil {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, *e.Note)
	}
	return b
}

// TestProtobufConfluent: Confluent-framed Protobuf through a real
// registry (an in-process HTTP server), broker and ClickHouse, as
// TestAvroConfluent does for Avro. The registry is down when the pipeline
// starts: records wait for their schema (none is dead-lettered for it)
// and arrive once it is back. A record naming an unknown schema id, one
// with a wrong magic byte, a truncated message and message indexes that
// name no message go to the dead-letter topic with their reasons; every
// good record arrives with its values.
func TestProtobufConfluent(t *testing.T) {
	kb, ch := setup(t)
	kb.CreateTopic(t, "events.dlq", 1)
	reg := registrytest.New(t)
	id, _ := reg.RegisterSchema("events-value", registrytest.Schema{Text: protoEventFile, Type: "PROTOBUF"})

	const n = 3000
	raw := map[uint64][]byte{}
	for i := uint64(0); i < n; i++ {
		raw[i] = protoschema.AppendFrame(nil, id, []int{1}, protoEvent(gen.Make(seed, i)))
	}
	payload := protoEvent(gen.Make(seed, 10))
	raw[10] = protoschema.AppendFrame(nil, 9999, []int{1}, payload) // unknown schema id
	raw[20] = append([]byte{1}, raw[20][1:]...)                     // wrong magic byte
	raw[30] = raw[30][:len(raw[30])-4]                              // truncated message
	raw[40] = protoschema.AppendFrame(nil, id, []int{7}, payload)   // no message 7
	reasonOf := map[string]string{string(raw[10]): "unknown_schema", string(raw[20]): "corrupt", string(raw[30]): "corrupt", string(raw[40]): "unknown_schema"}
	produce(t, kb, 0, n, raw)

	reg.SetDown(true)
	cfg := testConfig(t, kb, ch, "protobuf")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = config.FormatProtobuf
	cfg.Decode.Protobuf = config.Protobuf{Framing: config.ProtobufConfluent, Registry: &config.Registry{URL: config.URL(reg.URL())}, NegativeCacheTTL: config.Duration(time.Minute)}
	cfg.Decode.OnError = "dlq"
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
	dead := runRegistryOutage(t, kb, ch, reg, cfg, "protobuf", n, 4)
	for _, r := range dead {
		want, ok := reasonOf[string(r.Value)]
		if !ok {
			t.Fatalf("dead-lettered a record that is not one of the bad ones: %x", r.Value)
		}
		for _, h := range r.Headers {
			if h.Key == "etl.error.reason" && string(h.Value) != want {
				t.Errorf("record %x dead-lettered as %s, want %s", r.Value, h.Value, want)
			}
		}
		delete(reasonOf, string(r.Value))
	}
	if len(reasonOf) != 0 {
		t.Fatalf("%d bad records not dead-lettered", len(reasonOf))
	}
	// Values: every good row's, compared in one digest.
	var digest float64
	nulls := 0
	for i := uint64(0); i < n; i++ {
		if i == 10 || i == 20 || i == 30 || i == 40 {
			continue
		}
		e := gen.Make(seed, i)
		digest += float64(e.ID) + float64(e.UserID) + float64(e.TS.Unix()%1000) + float64(len(e.Kind))
		if e.Note == nil {
			nulls++
		}
	}
	got := ch.Query(t, "SELECT count(), sum(id) + sum(user_id) + sum(toUnixTimestamp(ts) % 1000) + sum(length(kind)), countIf(note IS NULL) FROM default.events")
	if want := fmt.Sprintf("%d\t%.0f\t%d", n-4, digest, nulls); got != want {
		t.Fatalf("count, digest, nulls = %s, want %s", got, want)
	}
	// The amounts exactly: the server's shortest text of each double is
	// Go's.
	var want []string
	for i := uint64(0); i < 50; i++ {
		if i != 10 && i != 20 && i != 30 && i != 40 {
			want = append(want, fmt.Sprintf("%d\t%s", i, strconv.FormatFloat(gen.Make(seed, i).Amount, 'f', -1, 64)))
		}
	}
	if got := strings.TrimSpace(ch.Query(t, "SELECT id, toString(amount) FROM default.events WHERE id < 50 ORDER BY id FORMAT TSV")); got != strings.Join(want, "\n") {
		t.Fatalf("amounts:\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// runRegistryOutage runs a pipeline of cfg (consumer group group) over n
// records on topic "events" while reg refuses every lookup, checks that
// nothing is written meanwhile (the records wait for their schema, past
// several lookup backoffs and the batch linger), brings reg back, waits
// for every good row and for the commits of all n offsets, and returns the
// bad records, read from the dead-letter topic "events.dlq".
func runRegistryOutage(t *testing.T, kb *testenv.Broker, ch *testenv.CH, reg *registrytest.Server, cfg *config.Config, group string, n, bad uint64) []*kgo.Record {
	t.Helper()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n-bad })
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, group, "events")
		return c[0]+c[1]+c[2] == int64(n)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return readTopic(t, kb, "events.dlq", int(bad))
}
