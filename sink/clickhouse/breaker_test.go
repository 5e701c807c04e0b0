package clickhouse

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBreaker(t *testing.T) {
	healthy := prometheus.NewGauge(prometheus.GaugeOpts{Name: "h"})
	opens := prometheus.NewCounter(prometheus.CounterOpts{Name: "o"})
	now := time.Unix(1000, 0)
	b := newBreaker(BreakerOptions{FailureThreshold: 3, OpenFor: time.Minute, HalfOpenProbes: 2}, func() time.Time { return now }, healthy, opens)

	// Failures below the threshold, interrupted by a success, do not open.
	b.failure()
	b.failure()
	b.success()
	b.failure()
	b.failure()
	if !b.allow() || testutil.ToFloat64(healthy) != 1 {
		t.Fatal("opened below the threshold")
	}
	if !b.failure() || b.allow() || testutil.ToFloat64(healthy) != 0 || testutil.ToFloat64(opens) != 1 {
		t.Fatal("did not open at the threshold")
	}
	if got := b.until(); !got.Equal(now.Add(time.Minute)) {
		t.Fatalf("until = %v", got)
	}
	// Half-open after open_for; one failure opens it again at once.
	now = now.Add(time.Minute)
	if !b.allow() {
		t.Fatal("not half-open after open_for")
	}
	if b.failure() || b.allow() || testutil.ToFloat64(opens) != 2 {
		t.Fatal("a half-open failure did not reopen (counted, not reported as newly opened)")
	}
	// Half-open, then two probes close it.
	now = now.Add(time.Minute)
	if !b.allow() {
		t.Fatal("not half-open")
	}
	b.success()
	if testutil.ToFloat64(healthy) != 0 {
		t.Fatal("closed after one of two probes")
	}
	b.success()
	if testutil.ToFloat64(healthy) != 1 || !b.allow() {
		t.Fatal("not closed after the probes")
	}
	// Closed again: the failure count starts over.
	b.failure()
	b.failure()
	if !b.allow() {
		t.Fatal("failure count carried over")
	}
	// A probe half-opens an open breaker before open_for is up; a
	// closed one stays closed.
	if !b.failure() || b.allow() {
		t.Fatal("did not open")
	}
	b.probe()
	if !b.allow() || !b.until().IsZero() {
		t.Fatal("a probe did not half-open the breaker")
	}
	b.success()
	b.success()
	b.probe()
	if !b.allow() || testutil.ToFloat64(healthy) != 1 {
		t.Fatal("a probe changed a closed breaker")
	}
}
