// Package loglimit bounds how often a repeated log line is written, so that
// a flood of bad records or failing requests cannot flood the log; the
// metrics still count every one.
package loglimit

import (
	"sync"
	"time"
)

// Limiter allows at most n log lines per interval. It is safe for
// concurrent use.
type Limiter struct {
	mu         sync.Mutex
	n          int
	interval   time.Duration
	start      time.Time
	used       int
	suppressed int
}

// New returns a limiter of n lines per interval.
func New(n int, interval time.Duration) *Limiter {
	return &Limiter{n: n, interval: interval}
}

// Allow reports whether one more line may be logged now.
func (l *Limiter) Allow() bool {
	ok, _ := l.AllowCount()
	return ok
}

// AllowCount reports whether one more line may be logged now and, when it
// may, how many lines were refused since the last one allowed: the count
// the line reports as suppressed.
func (l *Limiter) AllowCount() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.start) >= l.interval {
		l.start, l.used = now, 0
	}
	if l.used >= l.n {
		l.suppressed++
		return false, 0
	}
	l.used++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
