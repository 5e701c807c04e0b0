package pipeline

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/etl-project/etl/config"
)

// TestWatchdogWaitsWhileIdle: with nothing in flight the watchdog checks
// once and then waits for records instead of waking every second; bytes
// handed over wake it, a partition's age then counts from that moment
// (not from the check before the wait), and it ticks every second until
// nothing is in flight again.
func TestWatchdogWaitsWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newBarePipeline(t, &nopSource{}, 1024)
		p.cfg.Checkpoint.StalledFailAfter = config.Duration(2500 * time.Millisecond)
		tp := TopicPartition{Topic: "t", Partition: 0}
		l := newLane(tp, p.tracker.Assign(tp), new(fetchLag), &p.settle)
		p.tracker.Start(tp, l.epoch, 0)
		p.lanes[tp] = l

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.watchdog(ctx)
		}()
		defer func() {
			cancel()
			<-done
		}()

		time.Sleep(30*time.Second + time.Millisecond)
		synctest.Wait()
		if n := p.wdChecks.Load(); n != 1 {
			t.Fatalf("idle for 30 s: %d checks, want 1 (then a wait for records)", n)
		}

		// Records fetched: five offsets in flight.
		l.mu.Lock()
		l.nextFetch = 5
		l.mu.Unlock()
		p.budget.Add(100)
		p.wakeController()
		synctest.Wait()
		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		if n := p.wdChecks.Load(); n != 3 {
			t.Fatalf("2 s with records in flight: %d checks in all, want 3 (one a second)", n)
		}
		if s := stalledNow(p); len(s) != 0 {
			t.Fatalf("in flight for 2 s (stalled after 2.5 s): stalled %v", s)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if stalled := stalledNow(p); len(stalled) != 1 || stalled[0].For != 3*time.Second {
			t.Fatalf("in flight for 3 s since the wake: stalled %v, want the partition stuck for 3s", stalled)
		}

		// Acknowledged: one more check finds nothing in flight, then the
		// watchdog waits again.
		p.tracker.Ack(tp, l.epoch, 0, 5)
		p.budget.Release(100)
		time.Sleep(time.Second)
		synctest.Wait()
		n0 := p.wdChecks.Load()
		if s := stalledNow(p); len(s) != 0 {
			t.Fatalf("acknowledged: still stalled %v", s)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := p.wdChecks.Load(); n != n0 {
			t.Fatalf("idle again for 30 s: %d more checks, want none", n-n0)
		}
	})
}

// stalledNow is what the watchdog last found stalled.
func stalledNow(p *Pipeline) []Stalled {
	p.health.mu.Lock()
	defer p.health.mu.Unlock()
	return append([]Stalled(nil), p.health.stalled...)
}
