package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
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
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.logText(), "commit failed") && !strings.Contains(p.logText(), "partitions lost") {
		if time.Now().After(deadline) {
			t.Fatal("no failed commit nor lost partition logged within 30s of the broker's stop")
		}
		if !p.running() {
			t.Fatalf("etl exited before the SIGTERM: %v", p.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
