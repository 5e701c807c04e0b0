package pipeline

import (
	"math/rand/v2"
	"testing"
)

func TestTrackerOutOfOrderAcks(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 0}
	e := tr.Assign(tp)
	tr.Start(tp, e, 100)
	tr.Ack(tp, e, 110, 120)
	tr.Ack(tp, e, 130, 140)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("pending with a gap at 100: %v", got)
	}
	if s, _ := tr.Status(tp); s.Ranges != 2 || s.Watermark != 100 {
		t.Fatalf("status = %+v", s)
	}
	tr.Ack(tp, e, 100, 110)
	got := tr.Pending(nil)
	if len(got) != 1 || got[0].Offset != 120 {
		t.Fatalf("pending = %v, want offset 120", got)
	}
	tr.Ack(tp, e, 120, 130)
	if got := tr.Pending(nil); got[0].Offset != 140 {
		t.Fatalf("pending = %v, want 140", got)
	}
	if s, _ := tr.Status(tp); s.Ranges != 0 {
		t.Fatalf("ranges left: %+v", s)
	}
}

func TestTrackerAcksBeforeStart(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 1}
	e := tr.Assign(tp)
	tr.Ack(tp, e, 5, 10)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("committable before start: %v", got)
	}
	tr.Start(tp, e, 5)
	if got := tr.Pending(nil); len(got) != 1 || got[0].Offset != 10 {
		t.Fatalf("pending = %v", got)
	}
}

func TestTrackerEpochs(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 2}
	e1 := tr.Assign(tp)
	tr.Start(tp, e1, 0)
	tr.Ack(tp, e1, 0, 10)
	e2 := tr.Assign(tp) // revoked and assigned again
	if e2 == e1 {
		t.Fatal("epoch not advanced")
	}
	if tr.Ack(tp, e1, 10, 20) {
		t.Fatal("stale ack taken")
	}
	tr.Start(tp, e2, 10)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("stale ack moved watermark: %v", got)
	}
	tr.Ack(tp, e2, 10, 15)
	got := tr.Pending(nil)
	if len(got) != 1 || got[0].Offset != 15 || got[0].Epoch != e2 {
		t.Fatalf("pending = %v", got)
	}
	tr.Committed(Commit{TopicPartition: tp, Epoch: e1, Offset: 100})
	if s, _ := tr.Status(tp); s.Committed != 10 {
		t.Fatalf("stale commit recorded: %+v", s)
	}
	tr.Committed(got[0])
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("pending after commit: %v", got)
	}
	tr.Remove(tp, e1) // stale: no effect
	if _, ok := tr.Status(tp); !ok {
		t.Fatal("removed by a stale epoch")
	}
	tr.Remove(tp, e2)
	if _, ok := tr.Status(tp); ok {
		t.Fatal("not removed")
	}
}

// TestTrackerRandom acknowledges a shuffled cover of [0, n) in random pieces,
// some of them overlapping, and checks the watermark against a bitmap.
func TestTrackerRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		n := int64(1 + r.IntN(500))
		var pieces [][2]int64
		for from := int64(0); from < n; {
			to := min(n, from+1+r.Int64N(20))
			pieces = append(pieces, [2]int64{from, to})
			if r.IntN(4) == 0 { // a duplicate ack overlapping the piece
				pieces = append(pieces, [2]int64{max(0, from-r.Int64N(5)), to})
			}
			from = to
		}
		r.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		tr := NewTracker()
		tp := TopicPartition{"t", 0}
		e := tr.Assign(tp)
		tr.Start(tp, e, 0)
		acked := make([]bool, n)
		for _, p := range pieces {
			tr.Ack(tp, e, p[0], p[1])
			for o := p[0]; o < p[1]; o++ {
				acked[o] = true
			}
			want := int64(0)
			for want < n && acked[want] {
				want++
			}
			s, _ := tr.Status(tp)
			if s.Watermark != want {
				t.Fatalf("round %d: watermark %d, want %d", round, s.Watermark, want)
			}
		}
		if s, _ := tr.Status(tp); s.Ranges != 0 || s.Watermark != n {
			t.Fatalf("round %d: end state %+v, want watermark %d", round, s, n)
		}
	}
}
