package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestRevokeOverFrozenSinkStaysHealthy: member A (checkpoint.drain_timeout
// 40s) consumes 4 partitions into a ClickHouse that is then frozen with
// records in flight. A second member B joins the group, so A must revoke 2
// partitions; A's revoke callback waits the whole drain timeout for the
// frozen sink, blocking A's poll loop for more than the 30 s after which
// /healthz reports a poll loop that has not returned. A's /healthz, asked
// every 500 ms from B's join until A has released the revoked partitions,
// answers 200 every time. Then ClickHouse is thawed, B leaves, and every
// produced record arrives.
//
// B is a plain consumer-group member (franz-go, the same cooperative-sticky
// protocol as etl) rather than a second etl: etl reads the target table
// before it joins the group and waits while ClickHouse does not answer, so
// an etl started against the frozen server would never join. B commits
// nothing and leaves once the revoke is over; its partitions return to A.
func TestRevokeOverFrozenSinkStaysHealthy(t *testing.T) {
	const (
		n     = 100_000
		rate  = 2_000
		parts = 4
		group = "revoke-health"
		drain = 40 * time.Second
	)
	begin := time.Now()
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	kb := testenv.KafkaProcess(t, parts, topic)
	e := &env{t: t, ch: ch, kb: kb}
	frozen := false
	defer func() {
		if frozen {
			ch.Thaw(t)
		}
	}()

	// The session and rebalance timeouts outlast the revoke (drain_timeout
	// plus its commit), so B's join expires no one.
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := stormReplace(t, readFile(t, e.config(group, "")),
		"session_timeout: 6s", "session_timeout: 60s\n    rebalance_timeout: 90s",
		"drain_timeout: 20s", "drain_timeout: 40s",
		`metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr))
	a := startETL(t, writeConfig(t, cfg))

	pcl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	produced := make(chan error, 1)
	go func() {
		got, err := gen.Produce(ctx, pcl, gen.ProduceOptions{Topic: topic, Seed: seed, Count: n, Rate: rate, Partitions: parts})
		if err == nil && got != n {
			err = fmt.Errorf("produced %d of %d", got, n)
		}
		produced <- err
	}()
	e.waitRows(10_000, time.Minute, a)
	if code, body, err := probe("http://" + addr + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz before the freeze: %d %q %v", code, body, err)
	}

	// Freeze with records flowing on every partition; let A hand the sink
	// more of them for two seconds, so each partition has chunks in flight.
	ch.Freeze(t)
	frozen = true
	frozenAt := time.Now()
	time.Sleep(2 * time.Second)

	b, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(60*time.Second), kgo.RebalanceTimeout(90*time.Second),
		kgo.FetchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	bClosed := false
	defer func() {
		if !bClosed {
			b.Close()
		}
	}()
	joinedAt := time.Now()

	// Ask A's /healthz every 500 ms until A has released the revoked
	// partitions (or 50 s after B's join, if it never does).
	var polls int
	var bad []string
	var revokedAt, releasedAt time.Time
	for time.Since(joinedAt) < 50*time.Second {
		if !a.running() {
			t.Fatalf("A exited (%v) during the revoke", a.err)
		}
		at := time.Since(joinedAt)
		code, body, err := probe("http://" + addr + "/healthz")
		polls++
		if err != nil || code != http.StatusOK {
			bad = append(bad, fmt.Sprintf("%5.1fs after B's join: %d %q %v", at.Seconds(), code, body, err))
		}
		log := a.logText()
		if revokedAt.IsZero() && strings.Contains(log, "partitions revoked") {
			revokedAt = time.Now()
		}
		if strings.Contains(log, "revoked partitions released") {
			releasedAt = time.Now()
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if revokedAt.IsZero() {
		t.Fatalf("A never logged a revoke within 50s of B's join")
	}
	t.Logf("A's revoke began about %v after B's join; %d /healthz requests every 500 ms from the join", revokedAt.Sub(joinedAt).Round(100*time.Millisecond), polls)
	if releasedAt.IsZero() {
		t.Errorf("A did not release the revoked partitions within 50s of B's join (drain_timeout 40s)")
	} else {
		took := releasedAt.Sub(revokedAt)
		t.Logf("A's revoke lasted about %v (drain_timeout %v); ClickHouse frozen %v before the release",
			took.Round(100*time.Millisecond), drain, releasedAt.Sub(frozenAt).Round(100*time.Millisecond))
		// The point of the test: the poll loop stayed blocked past the
		// 30 s after which a plain poll-loop check would report it.
		if took < 31*time.Second {
			t.Errorf("A's revoke lasted only %v: the sink was not stuck with records of the revoked partitions in flight, nothing was tested", took)
		}
	}
	if line := grepLines(a.logText(), "partitions revoked"); line != "" {
		t.Logf("A: %s", strings.TrimSpace(line))
	}
	if strings.Contains(a.logText(), "partitions lost") {
		t.Errorf("A lost its partitions (its session expired) during the revoke:\n%s", grepLines(a.logText(), "partitions lost"))
	}
	if len(bad) > 0 {
		t.Errorf("A's /healthz did not answer 200 %d of %d times during the revoke:\n%s", len(bad), polls, strings.Join(bad, "\n"))
	}

	ch.Thaw(t)
	frozen = false
	b.Close()
	bClosed = true
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 2*time.Minute, a)
	waitCommittedEnd(t, kb, group, topic, parts, 2*time.Minute, func() error {
		if !a.running() {
			return fmt.Errorf("A exited (%v)", a.err)
		}
		return nil
	})
	if code, body, err := probe("http://" + addr + "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz after the thaw: %d %q %v", code, body, err)
	}
	if code := a.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("A's exit code %d", code)
	}
	dups := e.checkAllPresent(n)
	t.Logf("every one of %d records arrived (%d written more than once); whole test %v", n, dups, time.Since(begin).Round(100*time.Millisecond))
}
