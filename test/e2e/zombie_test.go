package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestZombieMember: a member frozen (SIGSTOP) past its session timeout
// while records flow loses its partitions to the other member. Thawed, it
// gives them up and rejoins: usually its heartbeat finds it unknown to the
// group (partitions lost: nothing is committed for the old assignment and
// its in-flight work is dropped); when its first answer is a rebalance in
// progress instead, the client revokes them the ordinary way (partitions
// revoked), committing only what the group still lets it commit. Every
// record arrives, and every commit of either member names only partitions
// it owned then.
// Under at_least_once the zombie's uncommitted rows may be written twice;
// under exactly_once (a replicated table) count() == uniqExact(id) ==
// produced.
func TestZombieMember(t *testing.T) {
	for _, delivery := range []string{"at_least_once", "exactly_once"} {
		t.Run(delivery, func(t *testing.T) { testZombieMember(t, delivery) })
	}
}

func testZombieMember(t *testing.T, delivery string) {
	const (
		n     = 150_000
		group = "zombie"
	)
	kb := testenv.KafkaProcess(t, partitions, topic)
	var e *env
	var base string
	if delivery == "exactly_once" {
		zk := testenv.ZooKeeper(t)
		ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
		ch.Exec(t, replicatedDDL)
		e = &env{t: t, ch: ch, kb: kb}
		base = readFile(t, e.eoConfig(group))
	} else {
		ch := testenv.ClickHouse(t)
		ch.Exec(t, gen.TableDDL("default", "events"))
		e = &env{t: t, ch: ch, kb: kb}
		base = readFile(t, e.config(group, ""))
	}
	base = strings.Replace(base, "log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}", "log: {level: debug, format: json}", 1)
	a := startETL(t, writeConfig(t, base))
	b := startETL(t, writeConfig(t, base))

	cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	produced := make(chan error, 1)
	go func() {
		got, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: topic, Seed: seed, Count: n, Rate: 10_000, Partitions: partitions})
		if err == nil && got != n {
			err = fmt.Errorf("produced %d of %d", got, n)
		}
		produced <- err
	}()

	e.waitRows(20_000, time.Minute, a)
	assignedB := strings.Count(b.logText(), "partitions assigned")
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// session_timeout is 6 s: the group moves A's partitions to B.
	testenv.WaitFor(t, "B to be assigned the frozen member's partitions", time.Minute, func() bool {
		return strings.Count(b.logText(), "partitions assigned") > assignedB
	})
	// The log's length while the member is frozen: what it logs from the
	// thaw on comes after it.
	atThaw := len(readFile(t, a.log))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The thawed member gives its partitions up (lost or revoked), then
	// rejoins.
	thawed := time.Now()
	noticed, rejoined := time.Duration(-1), time.Duration(-1)
	how := ""
	testenv.WaitFor(t, "the thawed member to give its partitions up and be assigned again", time.Minute, func() bool {
		log := readFile(t, a.log)[atThaw:]
		i := -1
		for _, m := range []string{"partitions lost", "partitions revoked"} {
			if j := strings.Index(log, m); j >= 0 && (i < 0 || j < i) {
				i, how = j, m
			}
		}
		if i < 0 {
			return false
		}
		if noticed < 0 {
			noticed = time.Since(thawed)
		}
		if strings.Contains(log[i:], "partitions assigned") {
			rejoined = time.Since(thawed)
			return true
		}
		return false
	})
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitCommittedEnd(t, kb, group, topic, partitions, 3*time.Minute, func() error {
		if !a.running() || !b.running() {
			return errExited
		}
		return nil
	})
	for _, p := range []*proc{a, b} {
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	}
	// Records the zombie wrote but had not committed are written again by
	// the member that took its partitions over (at least once): every
	// record must be there, none unexpected.
	dups := 0
	if delivery == "exactly_once" {
		e.checkOnce(n)
	} else {
		dups = e.checkAllPresent(n)
	}
	for i, p := range []*proc{a, b} {
		commits, err := commitsOnlyOwned(p.log)
		if err != nil {
			t.Errorf("member %d: %v", i+1, err)
		}
		t.Logf("member %d: %d commits, each of owned partitions only", i+1, commits)
	}
	t.Logf("%s: every record arrived; %d written more than once (written by the zombie, not committed, when its partitions moved); "+
		"after the thaw the zombie logged %q in %v and was assigned partitions again in %v",
		delivery, dups, how, noticed.Round(time.Millisecond), rejoined.Round(time.Millisecond))
}
