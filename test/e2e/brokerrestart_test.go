package e2e

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

var errExited = errors.New("etl exited")

// TestBrokerRestarts: the broker (devbroker with its data on disk) is
// stopped and started five times while records are produced and consumed.
// Nothing is lost (records may be written twice: at least once), and
// after each restart the commits move again; the
// time from the broker listening again to the next commit is reported.
func TestBrokerRestarts(t *testing.T) {
	const n = 200_000
	e := newEnv(t)
	p := startETL(t, e.config("restarts", ""))
	wait := e.produceAsync(0, n, 10_000)
	var worst time.Duration
	const between = 10_000 // records committed between two restarts: a second of production
	for i := 0; i < 5; i++ {
		// Records flow between the restarts: the commits move by
		// between records, or reach the end of all n records.
		from := sumOffsets(e.kb.CommittedOffsets(t, "restarts", topic))
		testenv.WaitFor(t, fmt.Sprintf("%d records committed before restart %d", between, i+1), time.Minute, func() bool {
			if !p.running() {
				t.Fatalf("etl exited before restart %d:\n%s", i+1, p.logText())
			}
			c := sumOffsets(e.kb.CommittedOffsets(t, "restarts", topic))
			return c >= from+between || c == n
		})
		before := sumOffsets(e.kb.CommittedOffsets(t, "restarts", topic))
		e.kb.Stop(t)
		time.Sleep(500 * time.Millisecond) // an outage of a set length
		e.kb.Start(t)
		back := time.Now()
		testenv.WaitFor(t, fmt.Sprintf("a commit after restart %d", i+1), time.Minute, func() bool {
			c := sumOffsets(e.kb.CommittedOffsets(t, "restarts", topic))
			if c > before || c == sumOffsets(e.kb.EndOffsets(t, topic)) {
				return true // moved, or nothing was left to commit
			}
			if !p.running() {
				t.Fatalf("etl exited after restart %d:\n%s", i+1, p.logText())
			}
			return false
		})
		took := time.Since(back)
		worst = max(worst, took)
		t.Logf("restart %d: commits moved %v after the broker listened again", i+1, took.Round(time.Millisecond))
	}
	if err := wait(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	waitCommittedEnd(t, e.kb, "restarts", topic, partitions, 2*time.Minute, func() error {
		if !p.running() {
			return errExited
		}
		return nil
	})
	// A restart can end the member's session (its partitions are lost)
	// while commits fail: records written but not committed then are
	// written again, at least once. None may be missing.
	dups := e.checkAllPresent(n)
	t.Logf("all %d records in ClickHouse, %d written more than once (read again after a restart before their commit); slowest recovery %v", n, dups, worst.Round(time.Millisecond))
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func sumOffsets(m map[int32]int64) int64 {
	var s int64
	for _, o := range m {
		s += o
	}
	return s
}
