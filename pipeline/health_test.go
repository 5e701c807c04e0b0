package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/config"
)

// stalePoll is a source whose poll loop last returned at a set time.
type stalePoll struct {
	*simSource
	last time.Time
}

func (s stalePoll) LastPoll() time.Time { return s.last }

// TestHealthDuringRevoke: a revoke blocks the poll loop for up to
// drain_timeout plus its commit. /healthz must not call that a dead poll
// loop (Kubernetes would kill a healthy member in the middle of a
// handover), but must still report a poll loop stuck for longer.
func TestHealthDuringRevoke(t *testing.T) {
	w := newDirectSimWorld(t, 1)
	p := w.p
	p.cfg.Checkpoint.DrainTimeout = config.Duration(40 * time.Second)
	check := func(age time.Duration, want bool) {
		t.Helper()
		p.src = stalePoll{w.src, time.Now().Add(-age)}
		ok, msg := p.Health()
		if ok != want {
			t.Fatalf("poll loop quiet for %s: healthy %v (%q), want %v", age, ok, msg, want)
		}
		if !ok && !strings.Contains(msg, "poll loop has not returned") {
			t.Fatalf("message %q does not name the poll loop", msg)
		}
	}
	check(5*time.Second, true)
	check(35*time.Second, false) // no callback: the loop is stuck
	done := p.callback()         // a revoke starts
	check(35*time.Second, true)
	check(75*time.Second, true) // 30 s + drain_timeout 40 s + commit 10 s = 80 s
	check(85*time.Second, false)
	done()
	check(35*time.Second, false)
}
