package kafka

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

type nopHandler struct{}

func (nopHandler) Assigned(context.Context, Partitions) {}
func (nopHandler) Revoked(context.Context, Partitions)  {}
func (nopHandler) Lost(context.Context, Partitions)     {}
func (nopHandler) Fetched(*kgo.FetchTopicPartition)     {}

type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRestartOffsetsBounded: a partition kept across a member change
// restarts from the group's committed offset, moved into the log when it
// is outside: below the log start to the log start (retention), above the
// log end to the log end (truncated), each with an ERROR and a count; an
// offset inside the log and a partition without one are as before.
func TestRestartOffsetsBounded(t *testing.T) {
	kb := testenv.Kafka(t)
	const group = "restart-bounded"
	for _, topic := range []string{"below", "above", "inside", "none"} {
		kb.CreateTopic(t, topic, 1)
		recs := make([]*kgo.Record, 100)
		for i := range recs {
			recs[i] = &kgo.Record{Value: []byte("v")}
		}
		kb.Produce(t, topic, recs)
	}
	kb.DeleteRecords(t, "below", 0, 50)
	kb.CommitOffset(t, group, "below", 0, 20)
	kb.CommitOffset(t, group, "above", 0, 500)
	kb.CommitOffset(t, group, "inside", 0, 30)

	// The member consumes another topic of the group: the partitions
	// under test are only restarted, never assigned (whose check would log
	// too).
	kb.CreateTopic(t, "other", 1)
	var logs lockedLog
	src, err := New(Options{Config: &config.Kafka{Brokers: []string{kb.Addr()}, Topics: []string{"other"}, GroupID: group, StartOffset: "latest"},
		Handler: nopHandler{}, Registerer: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(rctx) }()
	defer func() {
		stop()
		<-done
		src.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at, err := src.restartOffsets(ctx, Partitions{"below": {0}, "above": {0}, "inside": {0}, "none": {0}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"below": 50, "above": 100, "inside": 30, "none": 100}
	for topic, w := range want {
		if got := at[topic][0]; got != w {
			t.Errorf("%s restarts at %d, want %d", topic, got, w)
		}
	}
	log := logs.String()
	for _, line := range []string{
		"level=ERROR msg=\"records skipped: the committed offset is below the log start",
		"topic=below partition=0 committed=20 log_start=50 log_end=100 skipped=30 reason=retention",
		"topic=above partition=0 committed=500 log_start=0 log_end=100 skipped=400 reason=truncated",
	} {
		if !strings.Contains(log, line) {
			t.Errorf("log lacks %q:\n%s", line, log)
		}
	}
	if n := strings.Count(log, "records skipped"); n != 2 {
		t.Errorf("%d lines say records skipped, want 2:\n%s", n, log)
	}
	for _, c := range []struct {
		topic, reason string
		want          float64
	}{{"below", reasonRetention, 30}, {"above", reasonTruncated, 400}, {"inside", reasonRetention, 0}, {"inside", reasonTruncated, 0}} {
		if got := testutil.ToFloat64(src.metrics.skipped.WithLabelValues(c.topic, c.reason)); got != c.want {
			t.Errorf("etl_source_records_skipped_total{topic=%s,reason=%s} = %v, want %v", c.topic, c.reason, got, c.want)
		}
	}
}
