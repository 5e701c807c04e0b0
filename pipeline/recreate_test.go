package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// TestDeadLetterTopicRecreated: the dead-letter topic is deleted and
// created again under a running pipeline. The bad records that arrive
// afterwards reach the new topic without a restart, their offsets are
// committed, and /healthz answers ok again.
func TestDeadLetterTopicRecreated(t *testing.T) {
	kb, ch := setup(t)
	kb.CreateTopic(t, "events.dlq", 1)
	bad := map[uint64][]byte{10: []byte(`{"id": 10, "ts": `), 20: []byte(`[1]`), 110: []byte(`{"id": 110, "ts": `), 120: []byte(`[2]`)}
	produce(t, kb, 0, 100, bad)
	cfg := testConfig(t, kb, ch, "dlq-recreate")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.OnError = config.OnErrorDLQ
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "the first dead letters", 30*time.Second, func() bool { return kb.EndOffsets(t, "events.dlq")[0] == 2 })

	kb.DeleteTopic(t, "events.dlq")
	kb.CreateTopic(t, "events.dlq", 1)
	start := time.Now()
	produce(t, kb, 100, 100, bad)
	testenv.WaitFor(t, "the dead letters in the new topic", 60*time.Second, func() bool { return kb.EndOffsets(t, "events.dlq")[0] == 2 })
	testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "dlq-recreate", "events")
		return c[0]+c[1]+c[2] == 200
	})
	t.Logf("dead letters written to the recreated topic and committed %v after it was created", time.Since(start).Round(100*time.Millisecond))
	testenv.WaitFor(t, "/healthz ok", 10*time.Second, func() bool { ok, _ := p.Health(); return ok })
	if n := ch.Count(t, "default.events"); n != 196 {
		t.Fatalf("%d rows, want 196", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
