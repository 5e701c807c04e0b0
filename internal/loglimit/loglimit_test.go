package loglimit

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestLimiter: a burst gets n lines per interval; the first line of the
// next interval reports the lines refused in between.
func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(2, 10*time.Second)
		allowed := 0
		for range 50 {
			if l.Allow() {
				allowed++
			}
		}
		if allowed != 2 {
			t.Fatalf("a burst of 50 in one interval: %d lines allowed, want 2", allowed)
		}
		if ok, _ := l.AllowCount(); ok {
			t.Fatal("a line allowed over the limit")
		}
		time.Sleep(10 * time.Second) // the bubble's clock: the next interval
		ok, n := l.AllowCount()
		if !ok || n != 49 {
			t.Fatalf("first line of the next interval: allowed %v, suppressed %d; want true, 49", ok, n)
		}
		if ok, n := l.AllowCount(); !ok || n != 0 {
			t.Fatalf("second line: allowed %v, suppressed %d; want true, 0", ok, n)
		}
	})
}
