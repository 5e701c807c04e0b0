package testenv

import (
	"testing"
	"time"
)

// pollMax is the longest pause between two polls of WaitFor and Eventually:
// short enough that a test sees its condition within a few tens of
// milliseconds, long enough that a condition that queries a server does not
// load it.
const pollMax = 50 * time.Millisecond

// WaitFor polls cond until it returns true and returns how long that took.
// It fails t with what once timeout passes with cond still false. Polls
// start 1 ms apart and back off to 50 ms. cond runs on the caller's
// goroutine, so it may itself fail t (for example when the process under
// test died). Inside a synctest bubble the pauses and the deadline are the
// bubble's fake time.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	took, ok := poll(timeout, cond)
	if !ok {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	return took
}

// Eventually is WaitFor for a condition that says why it does not hold
// yet: it polls check until it returns nil, and fails t with check's last
// error once timeout passes.
func Eventually(t testing.TB, what string, timeout time.Duration, check func() error) time.Duration {
	t.Helper()
	var last error
	took, ok := poll(timeout, func() bool {
		last = check()
		return last == nil
	})
	if !ok {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, last)
	}
	return took
}

// poll calls cond until it returns true (ok) or timeout passes (not ok),
// pausing between calls from 1 ms up to pollMax.
func poll(timeout time.Duration, cond func() bool) (took time.Duration, ok bool) {
	start := time.Now()
	deadline := start.Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if !time.Now().Before(deadline) {
			return time.Since(start), false
		}
		time.Sleep(min(pause, time.Until(deadline)+time.Millisecond))
		pause = min(2*pause, pollMax)
	}
	return time.Since(start), true
}
