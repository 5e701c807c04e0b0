package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

const metaDDL = "CREATE TABLE default.events (id UInt64, topic String, part Int32, off Int64, ts DateTime, ts_ms Int64, " +
	"key Nullable(String), headers Nested(key String, value String), raw String) " +
	"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/events', '{replica}') ORDER BY (part, off) " +
	"SETTINGS replicated_deduplication_window = 1000"

// metaRecord is record i of TestMetadataExactlyOnceKill: keys null, empty,
// binary and text; headers none, empty and binary, a key repeated.
func metaRecord(i int) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, `{"id":%d}`, i),
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)*7)}
	switch i % 4 {
	case 1:
		r.Key = []byte{}
	case 2:
		r.Key = []byte{0xff, 0x00, byte(i)}
	case 3:
		r.Key = []byte("k-" + strconv.Itoa(i))
	}
	switch i % 3 {
	case 1:
		r.Headers = []kgo.RecordHeader{{Key: "", Value: []byte{}}}
	case 2:
		r.Headers = []kgo.RecordHeader{{Key: "bin", Value: []byte{0x80, byte(i)}}, {Key: "dup", Value: []byte("x")}, {Key: "dup", Value: []byte("y")}}
	}
	return r
}

// metaRow is the row default.events holds for record r, as metaSelect
// reads it.
func metaRow(r *kgo.Record, id int) string {
	up := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	key := "NULL"
	if r.Key != nil {
		key = up(r.Key)
	}
	var hk, hv []string
	for _, h := range r.Headers {
		hk, hv = append(hk, "'"+up([]byte(h.Key))+"'"), append(hv, "'"+up(h.Value)+"'")
	}
	return fmt.Sprintf("%d\t%d\t%d\t%s\t%d\t%d\t%s\t[%s]\t[%s]\t%s", r.Partition, r.Offset, id, up([]byte(r.Topic)),
		r.Timestamp.Unix(), r.Timestamp.UnixMilli(), key, strings.Join(hk, ","), strings.Join(hv, ","), up(r.Value))
}

const metaSelect = "SELECT part, off, id, hex(topic), toUnixTimestamp(ts), ts_ms, ifNull(hex(key), 'NULL'), " +
	"arrayMap(x -> hex(x), headers.key), arrayMap(x -> hex(x), headers.value), hex(raw) FROM default.events ORDER BY part, off"

// TestMetadataExactlyOnceKill: a table with every metadata column, filled
// by runs of the binary under exactly_once killed with SIGKILL (at random
// instants, and between an insert and its acknowledgement), then a last
// run to the end: every record is in the table once, each column holding
// what was produced (keys null, empty and binary; headers none, empty and
// binary). Replayed blocks are rebuilt identical, metadata included, or
// the table would keep them twice.
func TestMetadataExactlyOnceKill(t *testing.T) {
	const (
		runs   = 8
		perRun = 3_000
		n      = runs * perRun
	)
	zk := testenv.ZooKeeper(t)
	e := &env{t: t, ch: testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()}), kb: testenv.KafkaProcess(t, partitions, topic)}
	e.ch.Exec(t, metaDDL)
	cfg := strings.Replace(readFile(t, e.eoConfig("eo-meta")), "    table: events\n",
		"    table: events\n    columns: {topic: _topic, part: _partition, off: _offset, ts: _timestamp, ts_ms: _timestamp, key: _key, headers: _headers, raw: _raw}\n", 1)
	cfg = writeConfig(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(perRun+1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	recs := make([]*kgo.Record, n)
	for run := 1; run <= runs; run++ {
		batch := make([]*kgo.Record, 0, perRun)
		for i := (run - 1) * perRun; i < run*perRun; i++ {
			recs[i] = metaRecord(i)
			batch = append(batch, recs[i])
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := cl.ProduceSync(ctx, batch...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if run%3 == 0 {
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", fmt.Sprint(1+rng.IntN(3)))
			p := startETL(t, cfg)
			if code := p.wait(t, time.Minute); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("run %d: exit code %d, want the crash hook's SIGKILL", run, code)
			}
			t.Setenv("ETL_TEST_CRASH_AFTER_INSERTS", "")
			continue
		}
		p := startETL(t, cfg)
		waitLog(t, p, "partitions assigned", 30*time.Second)
		// A random instant while it reads, inserts and commits: real
		// time, there is no event to wait for.
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		if code := p.stop(t, syscall.SIGKILL, 10*time.Second); code != 128+int(syscall.SIGKILL) && code != 0 {
			t.Fatalf("run %d: exit code %d", run, code)
		}
	}
	p := startETL(t, cfg)
	e.waitRows(n, 3*time.Minute, p)
	e.waitCommitted("eo-meta", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got, want := e.ch.Query(t, "SELECT count(), uniqExact(part, off), uniqExact(id) FROM default.events"), fmt.Sprintf("%d\t%d\t%d", n, n, n); got != want {
		t.Fatalf("count, distinct (partition, offset), distinct ids = %s, want %s", got, want)
	}
	want := map[string]string{}
	for i, r := range recs {
		want[fmt.Sprintf("%d\t%d", r.Partition, r.Offset)] = metaRow(r, i)
	}
	for _, line := range strings.Split(e.ch.Query(t, metaSelect), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			t.Fatalf("row %q", line)
		}
		if w := want[f[0]+"\t"+f[1]]; line != w {
			t.Fatalf("row\n got %s\nwant %s", line, w)
		}
	}
}
