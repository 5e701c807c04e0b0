package testenv

import (
	"strings"
	"testing"
	"time"
)

// A goroutine started after the snapshot is reported with its stack until
// it ends; one that existed at the snapshot never is, nor is the caller.
func TestGoroutinesSince(t *testing.T) {
	old := make(chan struct{})
	oldDone := make(chan struct{})
	go func() { <-old; close(oldDone) }()
	before := Goroutines()
	if left := GoroutinesSince(before); len(left) != 0 {
		t.Fatalf("goroutines since a snapshot taken just now: %q", left)
	}

	close(old) // the snapshot's goroutine ends: it must not hide the new one
	<-oldDone
	started, stop, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go parkedForTest(started, stop, stopped)
	<-started
	left := GoroutinesSince(before)
	if len(left) != 1 || !strings.Contains(left[0], "parkedForTest") {
		t.Fatalf("goroutines since the snapshot = %q, want the one in parkedForTest", left)
	}

	close(stop)
	<-stopped
	Eventually(t, "the new goroutine to be gone", 5*time.Second, func() error {
		if left := GoroutinesSince(before); len(left) != 0 {
			return &leftError{left}
		}
		return nil
	})
}

type leftError struct{ left []string }

func (e *leftError) Error() string { return strings.Join(e.left, "\n\n") }

func parkedForTest(started chan<- struct{}, stop <-chan struct{}, stopped chan<- struct{}) {
	close(started)
	<-stop
	close(stopped)
}
