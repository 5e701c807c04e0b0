package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// cluster is 2 shards x 2 replicas of ClickHouse, each replica its own
// server process with a plain MergeTree table.
type cluster [2][2]*testenv.CH

func newCluster(t *testing.T) cluster {
	var c cluster
	for s := range c {
		for r := range c[s] {
			c[s][r] = testenv.ClickHouse(t)
			c[s][r].Exec(t, gen.TableDDL("default", "events"))
		}
	}
	return c
}

// shardsYAML is the sink's shards list for c.
func (c cluster) shardsYAML() string {
	var b strings.Builder
	b.WriteString("    shards:\n")
	for s := range c {
		fmt.Fprintf(&b, "      - {weight: 1, replicas: [%q, %q]}\n", c[s][0].TCPAddr(), c[s][1].TCPAddr())
	}
	return b.String()
}

// lastCount is each server's row count when it last answered.
var lastCount = map[*testenv.CH]uint64{}

// rows is the number of rows on shard s (both replicas); a server that is
// down counts with what it held when it last answered.
func (c cluster) rows(t *testing.T, s int) uint64 {
	var sum uint64
	for _, ch := range c[s] {
		if out, err := ch.QueryErr("SELECT count() FROM default.events"); err == nil {
			v, _ := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
			lastCount[ch] = v
		}
		sum += lastCount[ch]
	}
	return sum
}

// ids counts, for every id below n, its rows on each shard, reading every
// replica; ids at or above n are counted in outside.
func (c cluster) ids(t *testing.T, n uint64) (perShard [2][]uint8, outside int) {
	for s := range c {
		perShard[s] = make([]uint8, n)
		for r := range c[s] {
			rc, err := c[s][r].QueryStream(context.Background(), "SELECT id FROM default.events")
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(rc)
			for sc.Scan() {
				id, err := strconv.ParseUint(sc.Text(), 10, 64)
				if err != nil {
					t.Fatalf("id %q: %v", sc.Text(), err)
				}
				if id >= n {
					outside++
					continue
				}
				perShard[s][id]++
			}
			rc.Close()
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return perShard, outside
}

// TestShardsAndReplicas: four ClickHouse servers as 2 shards x 2 replicas,
// rows sharded by xxHash64(user_id). Mid-run one replica of shard 0 is
// killed with SIGKILL (its batches move to the other replica), then both
// replicas of shard 1 are stopped: shard 1's queue fills and the
// partitions pause, and everything arrives once they are back. Every row is
// on the shard ClickHouse's own xxHash64(user_id) % 2 names, and no record
// is lost.
func TestShardsAndReplicas(t *testing.T) {
	const n = 300_000
	c := newCluster(t)
	kb := testenv.KafkaProcess(t, partitions, topic)
	e := &env{t: t, ch: c[0][0], kb: kb}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := readFile(t, e.config("shards", `backpressure: {max_inflight_bytes: 64MiB}
`))
	cfg = strings.Replace(cfg, fmt.Sprintf("    addr: [%q]\n", c[0][0].TCPAddr()), c.shardsYAML()+
		"    sharding: {by: key, column: user_id}\n    breaker: {failure_threshold: 2, open_for: 2s}\n    insert_timeout: 5s\n    dial_timeout: 1s\n", 1)
	cfg = strings.Replace(cfg, `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr), 1)
	p := startETL(t, writeConfig(t, cfg))
	produced := e.produceAsync(0, n, 15_000)

	waitTotal := func(want uint64, timeout time.Duration) {
		t.Helper()
		testenv.Eventually(t, fmt.Sprintf("%d rows", want), timeout, func() error {
			r0, r1 := c.rows(t, 0), c.rows(t, 1)
			if r0+r1 >= want {
				return nil
			}
			if !p.running() {
				t.Fatalf("etl exited: %v", p.err)
			}
			return fmt.Errorf("shard 0: %d, shard 1: %d", r0, r1)
		})
	}
	waitTotal(30_000, time.Minute)
	c[0][0].Kill9(t)
	waitTotal(80_000, time.Minute)

	// Shard 1 goes away at once (a stop would wait for its queries).
	c[1][0].Kill9(t)
	c[1][1].Kill9(t)
	stoppedAt := c.rows(t, 0)
	testenv.Eventually(t, "backpressure, both breakers open and rows on shard 0 while shard 1 is down", 30*time.Second, func() error {
		m := scrape(t, addr)
		if m["etl_backpressure_paused"] == 0 && m["etl_queue_full_events_total"] == 0 {
			return fmt.Errorf("no backpressure: paused %v, queue full events %v", m["etl_backpressure_paused"], m["etl_queue_full_events_total"])
		}
		if m["etl_sink_breaker_opens_total"] < 2 {
			return fmt.Errorf("etl_sink_breaker_opens_total = %v, want the breakers of the killed and the stopped replicas opened", m["etl_sink_breaker_opens_total"])
		}
		if got := c.rows(t, 0); got <= stoppedAt {
			return fmt.Errorf("shard 0 took no rows (%d before, %d now)", stoppedAt, got)
		}
		return nil
	})
	c[1][0].Start(t)
	c[1][1].Start(t)
	if err := produced(); err != nil {
		t.Fatal(err)
	}
	c[0][0].Start(t)
	waitTotal(n, 3*time.Minute)
	e.waitCommitted("shards", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// Each row is on the shard of xxHash64(user_id) % 2. Debian's 18.16
	// build has no xxHash64 function ("Unknown function xxHash64"), so the
	// hash of each row's user_id bytes (UInt32, little-endian, as ClickHouse
	// hashes a UInt32) is computed here with the same XXH64, seed 0.
	for s := range c {
		for r := range c[s] {
			out := c[s][r].Query(t, "SELECT user_id FROM default.events")
			wrong, rows := 0, 0
			for _, f := range strings.Fields(out) {
				u, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					t.Fatal(err)
				}
				rows++
				if int(xxhash.Sum64(binary.LittleEndian.AppendUint32(nil, uint32(u)))%2) != s {
					wrong++
				}
			}
			t.Logf("shard %d replica %d: %d rows, %d of them belong to the other shard", s, r, rows, wrong)
			if wrong > 0 {
				t.Errorf("shard %d replica %d holds %d rows of the other shard", s, r, wrong)
			}
		}
	}
	perShard, outside := c.ids(t, n)
	if outside > 0 {
		t.Fatalf("%d rows with ids outside the generated range", outside)
	}
	dups := 0
	for id := uint64(0); id < n; id++ {
		switch on := int(perShard[0][id]) + int(perShard[1][id]); {
		case perShard[0][id] > 0 && perShard[1][id] > 0:
			t.Fatalf("id %d is on both shards", id)
		case on == 0:
			t.Fatalf("id %d is missing", id)
		case on > 1:
			dups++
		}
	}
	t.Logf("every record on its shard; %d written twice (retried batches whose first attempt had gone in)", dups)
}
