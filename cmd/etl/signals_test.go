package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSignalsRepeatedWithinASecond: a SIGTERM delivered twice within a
// second (GNU timeout's) starts one graceful stop and no immediate exit;
// a signal a second or more after the first exits at once with 130.
func TestSignalsRepeatedWithinASecond(t *testing.T) {
	type result struct {
		stops, exitCode int
		log             string
	}
	run := func(gaps ...time.Duration) result {
		// Each signal reads the clock once: the scripted clock gives the
		// n-th signal its arrival time.
		sigs := make(chan os.Signal, len(gaps)+1)
		at := []time.Time{time.Unix(1_000_000, 0)}
		for _, g := range gaps {
			at = append(at, at[len(at)-1].Add(g))
		}
		var mu sync.Mutex
		calls := 0
		now := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return at[min(calls, len(at))-1]
		}
		var logb bytes.Buffer
		var r result
		r.exitCode = -1
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchSignals(sigs, func() { r.stops++ }, func(code int) { r.exitCode = code },
				slog.New(slog.NewTextHandler(&logb, nil)), now)
		}()
		for range at {
			sigs <- syscall.SIGTERM
		}
		close(sigs)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("watchSignals did not return")
		}
		r.log = logb.String()
		return r
	}

	r := run(3 * time.Millisecond)
	if r.stops != 1 || r.exitCode != -1 || strings.Contains(r.log, "exiting now") || !strings.Contains(r.log, "counted as the same stop") {
		t.Fatalf("two SIGTERMs 3ms apart: %d stops, exit %d, log:\n%s", r.stops, r.exitCode, r.log)
	}
	r = run(3*time.Millisecond, 200*time.Millisecond, 1200*time.Millisecond)
	if r.stops != 1 || r.exitCode != exitInterrupted || !strings.Contains(r.log, "second signal: exiting now") {
		t.Fatalf("SIGTERMs at 0, 3ms, 203ms, 1.4s: %d stops, exit %d, log:\n%s", r.stops, r.exitCode, r.log)
	}
	r = run(time.Second)
	if r.stops != 1 || r.exitCode != exitInterrupted {
		t.Fatalf("SIGTERMs a second apart: %d stops, exit %d, log:\n%s", r.stops, r.exitCode, r.log)
	}
}
