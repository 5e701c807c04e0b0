package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
)

// TestDeadLetterFailure: a dead-letter topic that does not exist stops the
// start (a configuration error); a broker that refuses the produce to it
// (TOPIC_AUTHORIZATION_FAILED, as a denied ACL) makes the dead-letter
// writes fail. Those records are not skipped: they
// are retried with backoff, their offsets are not committed, the failures
// show in etl_dlq_errors_total and /healthz, and once the topic is back
// every bad record is in it and the offsets commit to the end.
func TestDeadLetterFailure(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.events (id UInt64) ENGINE = MergeTree ORDER BY id")
	cfg := testConfig(t, kb, ch, "dlqfail")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.OnError = "dlq"
	cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}

	_, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `decode.dlq.topic: topic "events.dlq" does not exist`) {
		t.Fatalf("New with a missing dead-letter topic: %v", err)
	}

	kb.CreateTopic(t, "events.dlq", 1)
	reg := prometheus.NewRegistry()
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// 100 records, every tenth not JSON.
	values := func(from int) map[uint64][]byte {
		m := map[uint64][]byte{}
		for i := from; i < from+100; i++ {
			v := fmt.Sprintf(`{"id":%d}`, i)
			if i%10 == 0 {
				v = "not json"
			}
			m[uint64(i)] = []byte(v)
		}
		return m
	}
	produceValues(t, kb, 0, values(0))
	testenv.WaitFor(t, "the first commits", 30*time.Second, func() bool { return kb.CommittedOffsets(t, "dlqfail", "events")[0] == 100 })

	// The broker refuses every produce to the dead-letter topic, as a
	// denied ACL does.
	topics, err := kadm.NewClient(kb.Client(t)).ListTopics(context.Background(), "events.dlq")
	if err != nil {
		t.Fatal(err)
	}
	dlqID := topics["events.dlq"].ID
	var refuse atomic.Bool
	refuse.Store(true)
	kb.Cluster().ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kb.Cluster().KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if !refuse.Load() || len(pr.Topics) == 0 || (pr.Topics[0].Topic != "events.dlq" && pr.Topics[0].TopicID != dlqID) {
			return nil, nil, false
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	produceValues(t, kb, 100, values(100))
	testenv.WaitFor(t, "failed dead-letter writes", time.Minute, func() bool {
		return testutil.ToFloat64(p.dlq.(*dlq.Writer).FailedCounter()) > 0
	})
	testenv.WaitFor(t, "/healthz to report them", 30*time.Second, func() bool { ok, _ := p.Health(); return !ok })
	_, msg := p.Health()
	t.Logf("health: %s", msg)
	if !strings.Contains(msg, "dead-letter writes failing") {
		t.Fatalf("health message %q", msg)
	}
	if c := kb.CommittedOffsets(t, "dlqfail", "events")[0]; c > 100 {
		t.Fatalf("committed %d, past the record whose dead-letter write failed (offset 100)", c)
	}
	refuse.Store(false)
	recovered := time.Now()
	testenv.WaitFor(t, "commits to the end", 2*time.Minute, func() bool { return kb.CommittedOffsets(t, "dlqfail", "events")[0] == 200 })
	t.Logf("recovered %v after the broker accepted the writes again; %v failed writes", time.Since(recovered).Round(time.Millisecond), testutil.ToFloat64(p.dlq.(*dlq.Writer).FailedCounter()))
	testenv.WaitFor(t, "/healthz ok", 30*time.Second, func() bool { ok, _ := p.Health(); return ok })
	dead := readTopic(t, kb, "events.dlq", 20)
	seen := map[string]bool{}
	for _, r := range dead {
		for _, h := range r.Headers {
			if h.Key == "etl.source.offset" {
				seen[string(h.Value)] = true
			}
		}
	}
	for off := 100; off < 200; off += 10 {
		if !seen[fmt.Sprint(off)] {
			t.Errorf("record %d is not in the dead-letter topic (%d records there)", off, len(dead))
		}
	}
	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != "180\t180" {
		t.Fatalf("count, distinct = %s, want 180 good rows", got)
	}
}

// produceValues sends values (record number to value, all to partition 0
// of events, in number order from start).
func produceValues(t *testing.T, kb *testenv.Broker, start int, values map[uint64][]byte) {
	t.Helper()
	var recs []*kgo.Record
	for i := start; i < start+len(values); i++ {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: 0, Value: values[uint64(i)]})
	}
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
