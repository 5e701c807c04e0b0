package kafka

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// topicHandler keeps the values of the records it is handed.
type topicHandler struct {
	assignedHandler
	mu     sync.Mutex
	values map[string]bool
}

func (h *topicHandler) Fetched(p *kgo.FetchTopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range p.Records {
		h.values[string(bytes.Clone(r.Value))] = true
	}
}

func (h *topicHandler) has(prefix string, n int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := 0
	for i := range n {
		if h.values[fmt.Sprintf("%s-%d", prefix, i)] {
			got++
		}
	}
	return got
}

func produceValues(t *testing.T, kb *testenv.Broker, prefix string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	kb.Produce(t, "events", recs)
}

// TestFetchErrorsBackOff: a source topic deleted under a running source
// answers every fetch with an error the client does not retry. The poll
// loop backs off: over 5 s it counts at most a handful of errors (a poll
// loop without the backoff counts tens of thousands), and the partition
// is reported failing, with the error and what the metadata says.
func TestFetchErrorsBackOff(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	produceValues(t, kb, "old", 10)
	h := &topicHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 8)}, values: map[string]bool{}}
	s := runSource(t, kb.Addr(), "backoff", 1<<20, h)
	testenv.WaitFor(t, "the first records", 20*time.Second, func() bool { return h.has("old", 10) == 10 })

	kb.DeleteTopic(t, "events")
	testenv.WaitFor(t, "a fetch error", 20*time.Second, func() bool { return testutil.ToFloat64(s.metrics.fetchErrors) > 0 })
	// Polls that fail back off from 100 ms, doubling: four more errors
	// take at least 100+200+400+800 ms; without a backoff they come within
	// milliseconds.
	before := testutil.ToFloat64(s.metrics.fetchErrors)
	took := testenv.WaitFor(t, "four more fetch errors", 30*time.Second, func() bool {
		return testutil.ToFloat64(s.metrics.fetchErrors) >= before+4
	})
	t.Logf("four more fetch errors in %v", took.Round(time.Millisecond))
	if took < time.Second {
		t.Fatalf("four more fetch errors in %v: the poll loop does not back off", took)
	}
	f := s.FetchFailing(time.Second)
	if len(f) != 1 || f[0].Topic != "events" || f[0].Partition != 0 || !strings.Contains(f[0].Err, "UNKNOWN_TOPIC_ID") {
		t.Fatalf("failing partitions: %v, want events/0 with UNKNOWN_TOPIC_ID", f)
	}
	t.Logf("failing: %v", f[0])
}

// TestRecreatedTopicResumes: a source topic deleted and created again is
// consumed again without a restart: the 2,000 records produced into the
// new topic are all handed over, and its partition is no longer failing.
func TestRecreatedTopicResumes(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	produceValues(t, kb, "old", 10)
	h := &topicHandler{assignedHandler: assignedHandler{assigned: make(chan Partitions, 8)}, values: map[string]bool{}}
	s := runSource(t, kb.Addr(), "recreate", 1<<20, h)
	testenv.WaitFor(t, "the first records", 20*time.Second, func() bool { return h.has("old", 10) == 10 })

	kb.DeleteTopic(t, "events")
	kb.CreateTopic(t, "events", 1)
	produceValues(t, kb, "new", 2000)
	took := testenv.WaitFor(t, "the new topic's 2,000 records", 60*time.Second, func() bool { return h.has("new", 2000) == 2000 })
	t.Logf("new topic's records handed over %v after they were produced; fetch errors: %.0f", took.Round(time.Millisecond), testutil.ToFloat64(s.metrics.fetchErrors))
	if f := s.FetchFailing(0); len(f) != 0 {
		t.Fatalf("still failing after the new topic's records arrived: %v", f)
	}
}

// TestFetchFailingSpan: a partition is reported only once its errors have
// kept recurring for the limit: one error is not enough, errors spanning
// the limit are, and errors that stopped recurring for fetchErrQuiet are
// not any more.
func TestFetchFailingSpan(t *testing.T) {
	s := &Source{metrics: newMetrics(nil, nil), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.fetchError("events", 3, kerr.UnknownTopicID)
	if f := s.FetchFailing(10 * time.Second); len(f) != 0 {
		t.Fatalf("one error: failing %v", f)
	}
	pf := s.fetch.failing[topicPartition{"events", 3}]
	now := time.Now()
	pf.first, pf.last = now.Add(-12*time.Second), now.Add(-time.Second)
	f := s.FetchFailing(10 * time.Second)
	if len(f) != 1 || f[0].String() != "events/3 has not fetched for 12s: "+kerr.UnknownTopicID.Error() {
		t.Fatalf("errors over 11 s: failing %v", f)
	}
	pf.first, pf.last = now.Add(-40*time.Second), now.Add(-fetchErrQuiet-time.Second)
	if f := s.FetchFailing(10 * time.Second); len(f) != 0 {
		t.Fatalf("errors stopped %v ago: failing %v", fetchErrQuiet+time.Second, f)
	}
	// A new error after the quiet starts a new span.
	s.fetchError("events", 3, kerr.UnknownTopicID)
	if pf := s.fetch.failing[topicPartition{"events", 3}]; time.Since(pf.first) > time.Second {
		t.Fatalf("the span did not restart: first error %v ago", time.Since(pf.first))
	}
}
