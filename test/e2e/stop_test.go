package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// TestFinalCommitLostExits3: exactly_once, the broker stopped while etl
// writes, then SIGTERM: the records written since the last commit cannot
// be committed (the commit fails, the partitions are lost), and the
// process says so with an ERROR line and exit code 3, not a clean 0.
func TestFinalCommitLostExits3(t *testing.T) {
	e := newReplicatedEnv(t)
	e.produce(0, 120_000)
	cfg := e.eoConfig("commit-lost")
	p := startETL(t, cfg)
	e.waitRows(8_000, time.Minute, p)
	e.kb.Stop(t)
	testenv.WaitFor(t, "a failed commit or a lost partition logged after the broker's stop", 30*time.Second, func() bool {
		if log := p.logText(); strings.Contains(log, "commit failed") || strings.Contains(log, "partitions lost") {
			return true
		}
		if !p.running() {
			t.Fatalf("etl exited before the SIGTERM: %v", p.err)
		}
		return false
	})
	start := time.Now()
	code := p.stop(t, syscall.SIGTERM, time.Minute)
	took := time.Since(start)
	log := p.logText()
	t.Logf("exit %d %v after SIGTERM; log:\n%s", code, took.Round(time.Millisecond), grepLines(log, "level=ERROR")+"\n"+grepLines(log, "lost")+"\n"+grepLines(log, "commit failed"))
	if code != 3 {
		t.Fatalf("exit code %d after the broker stopped mid-write, want 3 (the final commit did not happen)", code)
	}
	if !strings.Contains(log, "level=ERROR msg=\"stopped with everything written but not committed\"") {
		t.Fatal("no ERROR line saying the written records are not committed")
	}
	if took > 40*time.Second {
		t.Fatalf("took %v to stop", took)
	}
}

// TestRepeatedSIGTERMIsOneStop: a SIGTERM delivered twice within a
// second (as GNU timeout does) is one graceful stop: the drain runs, the
// process exits 0, and the log says the repeat counted as the same stop.
func TestRepeatedSIGTERMIsOneStop(t *testing.T) {
	e := newEnv(t)
	e.produce(0, 300_000)
	p := startETL(t, e.config("double-term", ""))
	e.waitRows(20_000, time.Minute, p)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	first := time.Now()
	testenv.WaitFor(t, "the first SIGTERM logged", 500*time.Millisecond, func() bool {
		return strings.Contains(p.logText(), "signal received: stopping")
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("second SIGTERM %v after the first: %v (etl had exited already)", time.Since(first), err)
	}
	gap := time.Since(first)
	code := p.wait(t, time.Minute)
	log := p.logText()
	t.Logf("second SIGTERM %v after the first; exit %d; %s", gap.Round(time.Millisecond), code, grepLines(log, "signal"))
	if gap >= time.Second {
		t.Fatalf("the second SIGTERM came %v after the first, not within a second", gap)
	}
	if code != 0 || strings.Contains(log, "second signal: exiting now") || !strings.Contains(log, "counted as the same stop") {
		t.Fatalf("exit %d; want 0, the repeat counted as the same stop and no immediate exit", code)
	}
	if !strings.Contains(log, `msg=stopped rows_written=`) {
		t.Fatal("no drain: the log lacks the stop's line")
	}
}
