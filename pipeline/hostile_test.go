package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
)

// TestHostileJSONRecords runs the hostile records of the decoder's
// findings through a pipeline against the real servers, under on_error
// dlq: each goes to the dead-letter topic with the right reason and a
// message that names the cause first, within 1 KiB; the good records
// around them, and the last DateTime the server can hold, are written
// exactly; the offsets commit to the end. Nothing stops the pipeline.
func TestHostileJSONRecords(t *testing.T) {
	t.Parallel()
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	kb.CreateTopic(t, "events.dlq", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.hostile (id UInt64, d Decimal(18, 2), dt DateTime, s String) ENGINE = MergeTree ORDER BY id")

	deep := `{"id":3,"s":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}`
	type rec struct {
		value          []byte
		reason, errHas string // empty reason: written
	}
	recs := []rec{
		{value: []byte(`{"id":0,"d":"12.5","dt":"2020-01-02 03:04:05","s":"a"}`)},
		{value: nil, reason: "corrupt", errHas: "null record value"},
		{value: []byte(`{"id":2,"d":Infinity}`), reason: "corrupt", errHas: "Infinity"},
		{value: []byte(deep), reason: "corrupt", errHas: "nesting depth"},
		{value: []byte(`{"id":4,"d":1e30}`), reason: "out_of_range", errHas: "Decimal(18, 2)"},
		{value: []byte(`{"id":5,"d":"1e999999999"}`), reason: "out_of_range", errHas: "Decimal(18, 2)"},
		{value: []byte(`{"id":6,"dt":"2106-02-07 00:00:00"}`), reason: "out_of_range", errHas: "2106-02-06 23:59:59"},
		{value: []byte(`{"id":7,"d":"-9999999999999999.99","dt":"2106-02-06 23:59:59","s":"last"}`)},
		{value: []byte(`{"id":8,"d":1.5e2,"dt":0,"s":"exp"}`)},
	}
	var krecs []*kgo.Record
	for _, r := range recs {
		krecs = append(krecs, &kgo.Record{Topic: "events", Value: r.value})
	}
	cl := kb.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, krecs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := kb.EndOffsets(t, "events")

	cfg := testConfig(t, kb, ch, "hostile")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Sink.ClickHouse.Table = "hostile"
	cfg.Decode.OnError = "dlq"
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	waitRunning(t, done, "commits to the end", 30*time.Second, func() error {
		if c := kb.CommittedOffsets(t, "hostile", "events"); c[0] != end[0] {
			return fmt.Errorf("committed %v, want %d on partition 0", c, end[0])
		}
		return nil
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := ch.Query(t, "SELECT id, d, toUInt32(dt), s FROM default.hostile ORDER BY id FORMAT TSV"),
		"0\t12.50\t1577934245\ta\n"+
			"7\t-9999999999999999.99\t4294943999\tlast\n"+
			"8\t150.00\t0\texp"; got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}

	var wantDead []rec
	for _, r := range recs {
		if r.reason != "" {
			wantDead = append(wantDead, r)
		}
	}
	dead := readTopic(t, kb, "events.dlq", len(wantDead))
	if len(dead) != len(wantDead) {
		t.Fatalf("%d dead letters, want %d", len(dead), len(wantDead))
	}
	for i, r := range dead {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		w := wantDead[i]
		msg := h[dlq.HeaderError]
		t.Logf("dead letter %d: reason %s, %d-byte error: %.200s", i, h[dlq.HeaderReason], len(msg), msg)
		if h[dlq.HeaderReason] != w.reason || !strings.Contains(msg, w.errHas) {
			t.Errorf("dead letter %d (%.40s): reason %q error %q, want %q containing %q", i, w.value, h[dlq.HeaderReason], msg, w.reason, w.errHas)
		}
		if len(msg) > 1024 || strings.HasPrefix(msg, "cannot parse object value") {
			t.Errorf("dead letter %d: error of %d bytes, not cause first: %.100s", i, len(msg), msg)
		}
		if string(r.Value) != string(w.value) {
			t.Errorf("dead letter %d: value %.40q, want the original %.40q", i, r.Value, w.value)
		}
	}
}
