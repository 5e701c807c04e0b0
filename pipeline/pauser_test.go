package pipeline

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/source/kafka"
)

// pauseLog counts what the pauser asks of the source, per partition.
type pauseLog struct{ paused, resumed map[TopicPartition]int }

func (s *pauseLog) Pause(ps kafka.Partitions) {
	for topic, parts := range ps {
		for _, p := range parts {
			s.paused[TopicPartition{Topic: topic, Partition: p}]++
		}
	}
}

func (s *pauseLog) Resume(ps kafka.Partitions) {
	for topic, parts := range ps {
		for _, p := range parts {
			s.resumed[TopicPartition{Topic: topic, Partition: p}]++
		}
	}
}

// TestPauserResumeRestartsDecoded checks the read-ahead rule for a lane
// waiting for a full queue: its partition pauses at once only when the
// lane decoded at least its read-ahead since the partition was last
// resumed. After a resume the count starts again, so a lane blocked again
// right away keeps fetching until it has decoded another read-ahead.
func TestPauserResumeRestartsDecoded(t *testing.T) {
	src := &pauseLog{paused: map[TopicPartition]int{}, resumed: map[TopicPartition]int{}}
	ps := newPauser(src, prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_test_paused"}))
	tp := TopicPartition{Topic: "events", Partition: 0}
	l := newLane(tp, 1, nil, nil)
	l.readAhead = 1000
	ps.assign(l)

	l.advanceDecoded(999)
	ps.block(l, 0)
	if src.paused[tp] != 0 {
		t.Fatalf("paused after decoding 999 of a read-ahead of 1000")
	}
	ps.unblock(l)
	l.advanceDecoded(1)
	ps.block(l, 0)
	if src.paused[tp] != 1 {
		t.Fatalf("paused %d times after decoding a read-ahead, want 1", src.paused[tp])
	}
	ps.unblock(l)
	if src.resumed[tp] != 1 {
		t.Fatalf("resumed %d times after the unblock, want 1", src.resumed[tp])
	}
	if _, decoded := l.pauseState(); decoded != 0 {
		t.Fatalf("decoded since the resume = %d right after it, want 0", decoded)
	}
	ps.block(l, 0)
	if src.paused[tp] != 1 {
		t.Fatalf("a lane blocked right after its resume paused its partition again before decoding a read-ahead")
	}
}

// advanceDecoded adds n to the bytes l decoded since its last resume, as
// advance does for decoded records.
func (l *lane) advanceDecoded(n int64) {
	l.mu.Lock()
	l.decoded += n
	l.mu.Unlock()
}
