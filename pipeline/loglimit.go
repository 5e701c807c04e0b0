package pipeline

import (
	"sync"
	"time"
)

// logLimiter allows at most n log lines per interval, so that a flood of
// bad records cannot flood the log; the metrics still count every one.
type logLimiter struct {
	mu       sync.Mutex
	n        int
	interval time.Duration
	start    time.Time
	used     int
}

func newLogLimiter(n int, interval time.Duration) *logLimiter {
	return &logLimiter{n: n, interval: interval}
}

// Allow reports whether one more line may be logged now.
func (l *logLimiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.start) >= l.interval {
		l.start, l.used = now, 0
	}
	if l.used >= l.n {
		return false
	}
	l.used++
	return true
}
