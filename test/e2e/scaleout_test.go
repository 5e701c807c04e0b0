package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestScaleOut: three etl processes in one consumer group share 12
// partitions led by three brokers. Mid-stream one member is killed with
// SIGKILL and another stopped with SIGTERM while two new ones join. Every
// record arrives, offsets commit to the end, the survivors count their
// rebalances in etl_source_rebalances_total, and no member commits a
// partition after it released it on a revoke (read from each member's
// JSON log in order).
func TestScaleOut(t *testing.T) {
	const (
		n     = 600_000
		parts = 12
		group = "scale"
	)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	kb := testenv.KafkaCluster(t, 3, parts, topic)
	e := &env{t: t, ch: ch, kb: kb}
	base := readFile(t, e.config(group, ""))
	base = strings.Replace(base, "log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}", "log: {level: debug, format: json}", 1)
	start := func() (*proc, string) {
		addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		cfg := strings.Replace(base, `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr), 1)
		return startETL(t, writeConfig(t, cfg)), addr
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kb.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	produced := make(chan error, 1)
	go func() {
		got, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: topic, Seed: seed, Count: n, Rate: 40_000, Partitions: parts})
		if err == nil && got != n {
			err = fmt.Errorf("produced %d of %d", got, n)
		}
		produced <- err
	}()

	p1, a1 := start()
	p2, _ := start()
	p3, _ := start()
	procs := []*proc{p1, p2, p3}
	e.waitRows(100_000, 2*time.Minute, p1)
	if code := p2.stop(t, syscall.SIGKILL, 10*time.Second); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("killed member exit code %d", code)
	}
	p4, _ := start()
	procs = append(procs, p4)
	e.waitRows(250_000, 2*time.Minute, p1)
	if code := p3.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("stopped member exit code %d", code)
	}
	p5, a5 := start()
	procs = append(procs, p5)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	e.waitRows(n, 3*time.Minute, p1)
	waitCommittedEnd(t, kb, group, topic, parts, 2*time.Minute, nil)
	r1, r5 := scrape(t, a1)["etl_source_rebalances_total"], scrape(t, a5)["etl_source_rebalances_total"]
	// The first member is assigned at start and again at least once as
	// members leave and join (rebalances close together may merge).
	if r1 < 2 || r5 < 1 {
		t.Errorf("etl_source_rebalances_total: first member %v (want >= 2), last member %v (want >= 1)", r1, r5)
	}
	for _, p := range []*proc{p1, p4, p5} {
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	}

	got := ch.Query(t, "SELECT uniqExact(id), min(id), max(id), count() FROM default.events")
	f := strings.Fields(got)
	if len(f) != 4 || f[0] != fmt.Sprint(n) || f[1] != "0" || f[2] != fmt.Sprint(n-1) {
		t.Fatalf("distinct, min, max, count = %s; want %d distinct ids 0..%d", got, n, n-1)
	}
	t.Logf("%s rows for %d records", f[3], n)
	for i, p := range procs {
		commits, err := commitsOnlyOwned(p.log)
		if err != nil {
			t.Errorf("member %d: %v", i+1, err)
		}
		if i == 0 && commits == 0 {
			t.Errorf("member 1 never committed")
		}
		t.Logf("member %d: %d commits, each of owned partitions only", i+1, commits)
	}
}

// commitsOnlyOwned reads a member's JSON log in order and checks that every
// commit (and exactly-once block registration) names only partitions the
// member owned at that moment: assigned and not yet released after a
// revoke, nor lost. It returns the number of commits.
func commitsOnlyOwned(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	owned := map[int32]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	commits := 0
	for sc.Scan() {
		var line struct {
			Msg        string             `json:"msg"`
			Partitions map[string][]int32 `json:"partitions"`
			Topic      string             `json:"topic"`
			Partition  int32              `json:"partition"`
			Block      string             `json:"block"`
			Offsets    []struct {
				Topic     string
				Partition int32
				Offset    int64
			} `json:"offsets"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		msg := line.Msg
		if strings.HasPrefix(msg, "partitions lost") {
			// Also "partitions lost: revoked after the group had
			// dropped this member ..." and "... keeping them".
			msg = "partitions lost"
		}
		switch msg {
		case "partitions assigned":
			for _, p := range line.Partitions[topic] {
				owned[p] = true
			}
		case "revoked partitions released", "partitions lost":
			for _, p := range line.Partitions[topic] {
				delete(owned, p)
			}
		case "exactly_once: block registered":
			// A registration is a commit of the unchanged offset with
			// the block in its metadata.
			commits++
			if line.Topic == topic && !owned[line.Partition] {
				return commits, fmt.Errorf("registered block %s of partition %d while not owning it", line.Block, line.Partition)
			}
		case "committed":
			commits++
			for _, o := range line.Offsets {
				if !owned[o.Partition] {
					return commits, fmt.Errorf("committed partition %d (offset %d) while not owning it", o.Partition, o.Offset)
				}
			}
		}
	}
	return commits, sc.Err()
}
