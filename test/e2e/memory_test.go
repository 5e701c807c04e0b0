package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// procStatusBytes reads a field in kB (VmRSS, VmHWM) of /proc/PID/status.
func procStatusBytes(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// numberArray returns {"id":ID,"arr":[d,d,...]} of about size bytes: an
// array of one-digit numbers, the record that costs a parse tree the most
// per byte. It returns the record and the array's length.
func numberArray(id, size int) ([]byte, int) {
	b := make([]byte, 0, size+16)
	b = fmt.Appendf(b, `{"id":%d,"arr":[`, id)
	n := 0
	for len(b) < size-3 {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, byte('0'+(id+n)%10))
		n++
	}
	return append(b, "]}"...), n
}

// TestMemoryPerRecord holds the memory bound of large records against the
// real binary: twenty records of 1 MB, each an array of small numbers, land
// in ClickHouse, and one of 50 MB goes to the dead-letter topic as
// too_large, cut to the topic's limit; the process's peak RSS (VmHWM) and
// its RSS after the run stay within the budget plus 100 MiB. (Before the
// decoder streamed arrays, this run peaked at 558 MiB, and stayed at
// 529 MiB.)
func TestMemoryPerRecord(t *testing.T) {
	const (
		budget   = 256 << 20
		allow    = 100 << 20
		good     = 20
		goodSize = 1_000_000
		hugeSize = 50_000_000
		parts    = 4
		src      = "big"
		dlqTopic = "big.dlq"
		group    = "memory"
	)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE mem (id UInt64, arr Array(UInt8)) ENGINE = MergeTree ORDER BY id")
	kb := testenv.KafkaProcess(t, 1, "unused")
	adm := kadm.NewClient(kb.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srcLimit := strconv.Itoa(64 << 20)
	for _, tc := range []struct {
		name  string
		parts int32
		cfg   map[string]*string
	}{{src, parts, map[string]*string{"max.message.bytes": &srcLimit}}, {dlqTopic, 1, nil}} {
		resp, err := adm.CreateTopic(ctx, tc.parts, -1, tc.cfg, tc.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %s: %v", tc.name, err)
		}
	}

	// Twenty good records, and the huge one in the middle of partition 0.
	var recs []*kgo.Record
	wantElems, hugeLen := 0, 0
	for i := range good {
		v, n := numberArray(i, goodSize)
		wantElems += n
		recs = append(recs, &kgo.Record{Topic: src, Partition: int32(i % parts), Value: v})
		if i == good/2 {
			huge, _ := numberArray(1000, hugeSize)
			hugeLen = len(huge)
			recs = append(recs, &kgo.Record{Topic: src, Partition: 0, Value: huge})
		}
	}
	pcl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(64<<20), kgo.BrokerMaxWriteBytes(128<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, r := range recs {
		// One at a time: the broker is a process of its own, and one
		// request of 70 MB would take its memory for nothing.
		if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d bytes: %v", len(r.Value), err)
		}
	}
	recs = nil

	cfg := writeConfig(t, fmt.Sprintf(`pipeline:
  name: memory
source:
  kafka:
    brokers: [%q]
    topics: [%s]
    group_id: %s
    start_offset: earliest
    session_timeout: 6s
sink:
  clickhouse:
    addr: [%q]
    table: mem
    batch: {max_rows: 50000, max_bytes: 16MiB, linger: 200ms}
    retry: {initial_backoff: 100ms, max_backoff: 1s}
decode:
  on_error: dlq
  dlq: {topic: %s}
backpressure: {max_inflight_bytes: %d}
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}
`, kb.Addr(), src, group, ch.TCPAddr(), dlqTopic, budget))
	start := time.Now()
	p := startETL(t, cfg)
	pid := p.cmd.Process.Pid

	// Every record is written or dead-lettered, and committed.
	alive := func() error {
		if !p.running() {
			return fmt.Errorf("etl exited: %s", p.logText())
		}
		return nil
	}
	waitCommittedEnd(t, kb, group, src, parts, 45*time.Second, alive)
	peak := procStatusBytes(pid, "VmHWM")
	took := time.Since(start)

	if got := ch.Query(t, "SELECT count(), sum(length(arr)), sum(arraySum(arr)) FROM mem"); got != "" {
		var rows, elems, sum int
		if _, err := fmt.Sscanf(got, "%d\t%d\t%d", &rows, &elems, &sum); err != nil {
			t.Fatalf("parse %q: %v", got, err)
		}
		wantSum := 0
		for i := range good {
			_, n := numberArray(i, goodSize)
			for k := range n {
				wantSum += (i + k) % 10
			}
		}
		if rows != good || elems != wantElems || sum != wantSum {
			t.Errorf("table holds %d rows, %d elements summing to %d; want %d, %d, %d", rows, elems, sum, good, wantElems, wantSum)
		}
	}

	dl := readDeadLetters(t, kb, dlqTopic, 1)
	h := map[string]string{}
	for _, x := range dl[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if h["etl.error.reason"] != "too_large" || h["etl.truncated"] != "true" || h["etl.original.value.size"] != strconv.Itoa(hugeLen) {
		t.Errorf("dead-letter headers %v, want reason too_large, truncated, original value size %d", h, hugeLen)
	}
	if len(dl[0].Value) < 11 || len(dl[0].Value) > 1<<20+64 || string(dl[0].Value[:11]) != `{"id":1000,` {
		t.Errorf("dead-letter value of %d bytes starting %.20q, want the start of the 50 MB record cut to the topic's limit", len(dl[0].Value), dl[0].Value)
	}

	// What the process holds once the records are done: the runtime
	// gives memory back over a few seconds.
	var after int64
	settled := testenv.Eventually(t, "the RSS after the run within the budget plus 100 MiB", 10*time.Second, func() error {
		if after = procStatusBytes(pid, "VmRSS"); after == 0 || after > budget+allow {
			return fmt.Errorf("RSS %d bytes, limit %d", after, budget+allow)
		}
		return nil
	})
	t.Logf("%d records of 1 MB and one of 50 MB in %v: peak RSS %.1f MiB, RSS after %.1f MiB (reached after a wait of %v), budget %d MiB",
		good, took.Round(100*time.Millisecond), float64(peak)/(1<<20), float64(after)/(1<<20), settled.Round(time.Millisecond), budget>>20)
	if peak == 0 {
		t.Fatal("no peak RSS read from /proc")
	}
	if peak > budget+allow {
		t.Errorf("peak RSS %d bytes, over the budget plus 100 MiB (%d)", peak, budget+allow)
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// readDeadLetters reads n records of topic from its start.
func readDeadLetters(t *testing.T, kb *testenv.BrokerProcess, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kb.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}
