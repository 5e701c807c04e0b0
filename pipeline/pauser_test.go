package pipeline

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/chunk"
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

// TestLaneOverAtReadAhead checks that a lane waiting for a queue goes over
// its read-ahead when it holds exactly the read-ahead, not only above it.
func TestLaneOverAtReadAhead(t *testing.T) {
	l := newLane(TopicPartition{Topic: "events"}, 1, nil, nil)
	l.readAhead = 1000
	l.recBytes = 999
	l.block(0)
	if over, _ := l.pauseState(); over {
		t.Fatal("over its read-ahead of 1000 holding 999 undecoded bytes")
	}
	l.unblock()
	l.recBytes = 1000
	l.block(0)
	if over, _ := l.pauseState(); !over {
		t.Fatal("not over its read-ahead of 1000 holding 1000 undecoded bytes")
	}
}

// TestLaneIdleWithParkedChunk checks that a lane holding a parked chunk
// (a sealed chunk a queue refused) is not idle, whatever its state says:
// the drain and the stop wait for it.
func TestLaneIdleWithParkedChunk(t *testing.T) {
	for _, state := range []laneState{laneIdle, laneFailed} {
		l := newLane(TopicPartition{Topic: "events"}, 1, nil, nil)
		l.state = state
		if !l.idle() {
			t.Fatalf("an empty lane in state %d is not idle", state)
		}
		l.parked = &chunk.Chunk{}
		if l.idle() {
			t.Fatalf("a lane in state %d with a parked chunk is idle", state)
		}
	}
}

// TestFollowBudgetLostUpdate runs two callers of followBudget the way the
// poll loop and the controller can: the first waits at its hook while the
// budget turns over and the second follows it. Whatever the order, the
// pauser must end as the budget is, and so must the source's partitions.
func TestFollowBudgetLostUpdate(t *testing.T) {
	for _, startPaused := range []bool{false, true} {
		src := &pauseLog{paused: map[TopicPartition]int{}, resumed: map[TopicPartition]int{}}
		ps := newPauser(src, prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_test_paused"}))
		tp := TopicPartition{Topic: "events", Partition: 0}
		ps.assign(newLane(tp, 1, nil, nil))
		b, err := backpressure.New(backpressure.Options{Bytes: 1000, HighRatio: 0.8, LowRatio: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(0, 0)
		if startPaused {
			b.Add(900)
			b.Check(now)
			ps.followBudget(b, func(hookPoint, *lane) {})
		}
		inner := false
		var yield func(hookPoint, *lane)
		yield = func(at hookPoint, _ *lane) {
			if at != hookFollowBudget || inner {
				return
			}
			inner = true
			// The other caller: the budget turns over and it follows.
			if startPaused {
				b.Release(900)
			} else {
				b.Add(900)
			}
			now = now.Add(time.Second)
			if b.Check(now) == backpressure.None {
				t.Fatalf("the budget did not turn over")
			}
			ps.followBudget(b, yield)
		}
		ps.followBudget(b, yield)
		ps.mu.Lock()
		followed := ps.budget
		ps.mu.Unlock()
		if followed != b.Paused() {
			t.Fatalf("started paused=%v: the pauser holds paused=%v, the budget says paused=%v", startPaused, followed, b.Paused())
		}
		if sourcePaused := src.paused[tp] > src.resumed[tp]; sourcePaused != b.Paused() {
			t.Fatalf("started paused=%v: the partition is paused=%v (paused %d times, resumed %d), the budget says paused=%v",
				startPaused, sourcePaused, src.paused[tp], src.resumed[tp], b.Paused())
		}
	}
}
