// Package e2e runs the etl binary against a real ClickHouse server and a
// real Kafka-protocol broker, both in their own processes, and checks what a
// user would: rows and values in ClickHouse, committed offsets, exit codes.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

const (
	topic      = "events"
	partitions = 6
	seed       = 42
)

// env is one test's servers.
type env struct {
	t  *testing.T
	ch *testenv.CH
	kb *testenv.BrokerProcess
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ch: testenv.ClickHouse(t), kb: testenv.KafkaProcess(t, partitions, topic)}
	e.ch.Exec(t, gen.TableDDL("default", "events"))
	return e
}

// produce sends generated records [start, start+count) to the topic;
// record n goes to partition n mod 6, so its offset there is n / 6.
func (e *env) produce(start, count uint64) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: topic, Seed: seed, Start: start, Count: count, Partitions: partitions})
	if err != nil || n != count {
		e.t.Fatalf("produce: %d of %d records: %v", n, count, err)
	}
}

// produceAsync sends records [start, start+count) at rate records/s in
// the background; the returned function waits for the result.
func (e *env) produceAsync(start, count uint64, rate int) func() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	finished := make(chan struct{})
	var perr error
	go func() {
		defer close(finished)
		defer cl.Close()
		n, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: topic, Seed: seed, Start: start, Count: count, Rate: rate, Partitions: partitions})
		if err == nil && n != count {
			err = fmt.Errorf("produced %d of %d records", n, count)
		}
		perr = err
	}()
	e.t.Cleanup(func() { cancel(); <-finished })
	return func() error {
		<-finished
		return perr
	}
}

// config writes a pipeline file for group and returns its path.
func (e *env) config(group string, extra string) string {
	e.t.Helper()
	y := fmt.Sprintf(`pipeline:
  name: e2e
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
    table: events
    batch: {max_rows: 50000, max_bytes: 16MiB, linger: 200ms}
    retry: {initial_backoff: 100ms, max_backoff: 1s}
checkpoint: {commit_interval: 500ms, drain_timeout: 20s}
metrics: {listen: "off"}
log: {level: ${ETL_TEST_LOG_LEVEL:-info}, format: text}
%s`, e.kb.Addr(), topic, group, e.ch.TCPAddr(), extra)
	p := filepath.Join(e.t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// proc is a running etl process.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startETL(t *testing.T, cfg string, args ...string) *proc {
	t.Helper()
	bin := testenv.Build(t, "./cmd/etl")
	f, err := os.CreateTemp(t.TempDir(), "etl-*.log")
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{log: f.Name(), done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"-config", cfg}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("etl log (%s, tail):\n%s", p.log, b)
			// ETL_TEST_KEEP_LOGS=DIR keeps a failed test's whole logs.
			if dir := os.Getenv("ETL_TEST_KEEP_LOGS"); dir != "" {
				if all, err := os.ReadFile(p.log); err == nil && os.MkdirAll(dir, 0o755) == nil {
					name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+filepath.Base(p.log))
					_ = os.WriteFile(name, all, 0o644)
				}
			}
		}
	})
	return p
}

// signal sends sig and waits for the exit code.
func (p *proc) stop(t *testing.T, sig syscall.Signal, timeout time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	return p.wait(t, timeout)
}

func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("etl did not exit within %v", timeout)
	}
	if p.cmd.ProcessState == nil {
		t.Fatalf("etl: %v", p.err)
	}
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// waitRows waits until the table holds at least n rows.
func (e *env) waitRows(n uint64, timeout time.Duration, p *proc) {
	e.t.Helper()
	testenv.Eventually(e.t, fmt.Sprintf("%d rows", n), timeout, func() error {
		got := e.ch.Count(e.t, "default.events")
		if got >= n {
			return nil
		}
		if p != nil && !p.running() {
			e.t.Fatalf("etl exited with %v while waiting for %d rows (have %d)", p.err, n, got)
		}
		return fmt.Errorf("have %d", got)
	})
}

// waitCommitted waits until the group's committed offsets reach the end
// offsets of every partition.
func (e *env) waitCommitted(group string, timeout time.Duration) {
	e.t.Helper()
	waitCommittedEnd(e.t, e.kb, group, topic, partitions, timeout, nil)
}

// offsetReader reads a topic's end offsets and a group's committed ones
// (a broker in process or in its own process).
type offsetReader interface {
	EndOffsets(t testing.TB, topic string) map[int32]int64
	CommittedOffsets(t testing.TB, group, topic string) map[int32]int64
}

// waitCommittedEnd waits until group's committed offsets of topic reach
// the end offsets of all its parts partitions, and returns them. alive,
// when set, is asked on every round: an error (a member that exited) ends
// the wait at once.
func waitCommittedEnd(t testing.TB, kb offsetReader, group, topic string, parts int, timeout time.Duration, alive func() error) map[int32]int64 {
	t.Helper()
	var got map[int32]int64
	testenv.Eventually(t, "the commits to reach the end offsets", timeout, func() error {
		var end map[int32]int64
		end, got = kb.EndOffsets(t, topic), kb.CommittedOffsets(t, group, topic)
		ok := len(end) == parts
		for p, o := range end {
			ok = ok && got[p] == o
		}
		if ok {
			return nil
		}
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatalf("waiting for the commits to reach the end offsets: %v", err)
			}
		}
		return fmt.Errorf("committed offsets %v, end offsets %v", got, end)
	})
	return got
}

// row is one row read back from ClickHouse.
type row struct {
	id     uint64
	ts     int64
	userID uint32
	kind   string
	amount float64
	note   *string
}

// readRows streams every row of the table ordered by id.
func (e *env) readRows(fn func(r row)) {
	e.t.Helper()
	body, err := e.ch.QueryStream(context.Background(),
		"SELECT id, toUnixTimestamp(ts), user_id, kind, amount, note FROM default.events ORDER BY id FORMAT TabSeparated")
	if err != nil {
		e.t.Fatal(err)
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 6 {
			e.t.Fatalf("bad row %q", sc.Text())
		}
		var r row
		r.id, _ = strconv.ParseUint(f[0], 10, 64)
		r.ts, _ = strconv.ParseInt(f[1], 10, 64)
		u, _ := strconv.ParseUint(f[2], 10, 32)
		r.userID = uint32(u)
		r.kind = testenv.UnescapeTSV(f[3])
		r.amount, _ = strconv.ParseFloat(f[4], 64)
		if f[5] != `\N` {
			s := testenv.UnescapeTSV(f[5])
			r.note = &s
		}
		fn(r)
	}
	if err := sc.Err(); err != nil {
		e.t.Fatal(err)
	}
}

// checkRow compares a row with the generated record of the same id.
func checkRow(r row) error {
	want := gen.Make(seed, r.id)
	switch {
	case r.ts != want.TS.Unix():
		return fmt.Errorf("id %d: ts %d, want %d", r.id, r.ts, want.TS.Unix())
	case r.userID != want.UserID:
		return fmt.Errorf("id %d: user_id %d, want %d", r.id, r.userID, want.UserID)
	case r.kind != want.Kind:
		return fmt.Errorf("id %d: kind %q, want %q", r.id, r.kind, want.Kind)
	case r.amount != want.Amount && !(math.IsNaN(r.amount) && math.IsNaN(want.Amount)):
		return fmt.Errorf("id %d: amount %v, want %v", r.id, r.amount, want.Amount)
	case (r.note == nil) != (want.Note == nil):
		return fmt.Errorf("id %d: note %v, want %v", r.id, r.note, want.Note)
	case r.note != nil && *r.note != *want.Note:
		return fmt.Errorf("id %d: note %q, want %q", r.id, *r.note, *want.Note)
	}
	return nil
}

// offsetOf is the partition and offset record id was produced at.
func offsetOf(id uint64) (int32, int64) {
	return int32(id % partitions), int64(id / partitions)
}

// idCounts returns how many times each id in [0, n) is in the table, and
// the number of rows outside that range.
func (e *env) idCounts(n uint64) ([]uint8, int) {
	e.t.Helper()
	counts := make([]uint8, n)
	outside := 0
	body, err := e.ch.QueryStream(context.Background(), "SELECT id FROM default.events FORMAT TabSeparated")
	if err != nil {
		e.t.Fatal(err)
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		id, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil || id >= n {
			outside++
			continue
		}
		if counts[id] < 255 {
			counts[id]++
		}
	}
	return counts, outside
}

var _ = io.EOF

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkAllOnceBelow checks that every record [0, n) is in the table, that
// records below the committed offsets are there exactly once (duplicates
// may only come from offsets that were not committed), and that no other
// row is. It returns the number of records written more than once.
func (e *env) checkAllOnceBelow(n uint64, committed map[int32]int64) int {
	e.t.Helper()
	counts, outside := e.idCounts(n)
	dups := 0
	for id, c := range counts {
		part, off := offsetOf(uint64(id))
		switch {
		case c == 0:
			e.t.Fatalf("id %d missing", id)
		case c > 1 && off < committed[part]:
			e.t.Fatalf("id %d (partition %d offset %d) written %d times though its offset was committed (%d)", id, part, off, c, committed[part])
		case c > 1:
			dups++
		}
	}
	if outside != 0 {
		e.t.Fatalf("%d rows with unexpected ids", outside)
	}
	return dups
}

// checkAllPresent checks that every record [0, n) is in the table at least
// once and that no other row is (at-least-once delivery, where a record
// may be written again after a rebalance or a lost session). It returns
// the number of records written more than once.
func (e *env) checkAllPresent(n uint64) int {
	e.t.Helper()
	counts, outside := e.idCounts(n)
	dups := 0
	for id, c := range counts {
		if c == 0 {
			e.t.Fatalf("id %d missing", id)
		}
		if c > 1 {
			dups++
		}
	}
	if outside != 0 {
		e.t.Fatalf("%d rows with ids outside 0..%d", outside, n-1)
	}
	return dups
}
