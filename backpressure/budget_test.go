package backpressure

import (
	"testing"
	"time"
)

func TestBudgetHysteresis(t *testing.T) {
	// The budget reads no clock: each Check is given the time, and the
	// test moves it.
	now := time.Unix(1_700_000_000, 0)
	b, err := New(Options{Bytes: 1000, HighRatio: 0.8, LowRatio: 0.5, MinPause: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if a := b.Check(now); a != None {
		t.Fatalf("empty budget: %v", a)
	}
	b.Add(799)
	if a := b.Check(now); a != None {
		t.Fatalf("below high: %v", a)
	}
	b.Add(1)
	if a := b.Check(now); a != Pause {
		t.Fatalf("at high: %v, want pause", a)
	}
	if a := b.Check(now); a != None {
		t.Fatalf("second check while paused: %v", a)
	}
	// Below high but above low: stays paused however long it waits.
	b.Release(200)
	now = now.Add(time.Second)
	if a := b.Check(now); a != None {
		t.Fatalf("between watermarks: %v", a)
	}
	// Below low, but the minimum pause counts from the pause, so it
	// has passed: resume.
	b.Release(100)
	if a := b.Check(now); a != Resume {
		t.Fatalf("below low after min pause: %v", a)
	}
	// Pause again, drop below low at once: held for min_pause.
	b.Add(400)
	if a := b.Check(now); a != Pause {
		t.Fatalf("want pause, got %v", a)
	}
	b.Release(700)
	now = now.Add(499 * time.Millisecond)
	if a := b.Check(now); a != None {
		t.Fatalf("before min pause: %v", a)
	}
	now = now.Add(time.Millisecond)
	if a := b.Check(now); a != Resume {
		t.Fatalf("at min pause: %v", a)
	}
	if b.Peak() != 900 {
		t.Fatalf("peak = %d", b.Peak())
	}
}

func TestBudgetRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Bytes: 0, HighRatio: 0.8, LowRatio: 0.5},
		{Bytes: 10, HighRatio: 0.5, LowRatio: 0.5},
		{Bytes: 10, HighRatio: 1.5, LowRatio: 0.5},
		{Bytes: 10, HighRatio: 0.8, LowRatio: 0},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestSizingRule(t *testing.T) {
	// The defaults: 1 shard, 2 inserts in flight of 16 MiB, 64 queued chunks
	// of 64 KiB, low ratio 0.5: 2 × (32 MiB + 4 MiB) / 0.5 = 144 MiB.
	s := Sizing{Shards: 1, MaxInflightPerShard: 2, QueueCapacity: 64, BatchMaxBytes: 16 << 20, ChunkTargetBytes: 64 << 10, LowRatio: 0.5}
	if got, want := s.Steady(), int64(36<<20); got != want {
		t.Fatalf("steady = %d, want %d", got, want)
	}
	if got, want := s.MinBudget(), int64(144<<20); got != want {
		t.Fatalf("min budget = %d, want %d", got, want)
	}
}
