package clickhouse

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BreakerOptions configures each replica's circuit breaker.
type BreakerOptions struct {
	// FailureThreshold consecutive failed inserts open the breaker
	// (default 3).
	FailureThreshold int
	// OpenFor is how long an open breaker refuses inserts (default 30 s).
	OpenFor time.Duration
	// HalfOpenProbes successful inserts close a half-open breaker
	// (default 1).
	HalfOpenProbes int
}

func (o *BreakerOptions) defaults() {
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = 3
	}
	if o.OpenFor <= 0 {
		o.OpenFor = 30 * time.Second
	}
	if o.HalfOpenProbes <= 0 {
		o.HalfOpenProbes = 1
	}
}

// Breaker states.
const (
	breakerClosed = iota
	breakerOpen
	breakerHalfOpen
)

// breaker is a replica's circuit breaker: closed (in use, counting
// consecutive failures), open (not used until openUntil), half-open (in
// use; probes successes close it, one failure opens it again).
type breaker struct {
	o   BreakerOptions
	now func() time.Time

	mu        sync.Mutex
	state     int
	failures  int // consecutive, while closed
	successes int // while half-open
	openUntil time.Time

	healthy prometheus.Gauge
	opens   prometheus.Counter
}

func newBreaker(o BreakerOptions, now func() time.Time, healthy prometheus.Gauge, opens prometheus.Counter) *breaker {
	o.defaults()
	b := &breaker{o: o, now: now, healthy: healthy, opens: opens}
	healthy.Set(1)
	return b
}

// allow reports whether an insert may go to the replica now; an open
// breaker whose time is up turns half-open.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerOpen {
		if b.now().Before(b.openUntil) {
			return false
		}
		b.state, b.successes = breakerHalfOpen, 0
	}
	return true
}

// probe turns an open breaker half-open before its time is up, so that the
// next insert tries the replica: a shard whose every breaker is open
// probes one at the retry backoff rather than wait out open_for.
func (b *breaker) probe() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerOpen {
		b.state, b.successes = breakerHalfOpen, 0
	}
}

// until is when an open breaker lets inserts through again (zero when it
// is not open).
func (b *breaker) until() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != breakerOpen {
		return time.Time{}
	}
	return b.openUntil
}

// success records a successful insert.
func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		b.failures = 0
	case breakerHalfOpen:
		b.successes++
		if b.successes >= b.o.HalfOpenProbes {
			b.state, b.failures = breakerClosed, 0
			b.healthy.Set(1)
		}
	}
}

// failure records a failed insert; it reports whether a closed breaker
// opened (a half-open one that fails opens again, and is counted, but is
// not news to log).
func (b *breaker) failure() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.state
	switch b.state {
	case breakerClosed:
		b.failures++
		if b.failures < b.o.FailureThreshold {
			return false
		}
	case breakerOpen:
		return false
	}
	b.state, b.openUntil = breakerOpen, b.now().Add(b.o.OpenFor)
	b.healthy.Set(0)
	b.opens.Inc()
	return was == breakerClosed
}
