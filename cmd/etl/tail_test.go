package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/internal/testenv"
)

// derivedColumns lets etl tail run without ClickHouse (-columns derived).
const derivedColumns = "decode: {format: json, fields: {id: UInt64}}\n"

// produceIDs writes {"id": i} for i in [from, to) to partition part of
// events.
func produceIDs(t *testing.T, kb *testenv.Broker, part int32, from, to int) {
	t.Helper()
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: part, Value: []byte(fmt.Sprintf(`{"id": %d}`, i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestTailFailsWithTheCause: etl tail fails within its -timeout, naming
// the cause, against a port nothing listens on, a wrong SASL password
// (at once, the refused login first), a topic that does not exist and
// partitions the topic lacks.
func TestTailFailsWithTheCause(t *testing.T) {
	none := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	sasl := saslBroker(t)
	plain := testenv.Kafka(t, kfake.SeedTopics(2, "events"))
	empty := testenv.Kafka(t, kfake.SeedTopics(1, "other"))
	cases := []struct {
		name, brokers, sasl, args string
		code                      int
		want                      []string
		within                    time.Duration
	}{
		{"unreachable", none, "", "-timeout 3s", exitFailed,
			[]string{"etl tail: source.kafka.brokers " + none + ": ", "connection refused (nothing listens on that address"}, 10 * time.Second},
		{"wrong password", sasl.Addr(), wrongPassword, "", exitUsage,
			[]string{`etl tail: source.kafka.sasl: the brokers refused the SASL authentication of user "etl"`}, 5 * time.Second},
		{"missing topic", empty.Addr(), "", "", exitFailed,
			[]string{`etl tail: source.kafka.topics: topic "events" does not exist`}, 5 * time.Second},
		{"missing partition", plain.Addr(), "", "-partitions 1,99", exitUsage,
			[]string{"etl tail: -partitions: no such partition 99: topic events has 2 partitions (0-1)"}, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := cliConfig(t, c.brokers, c.sasl, "127.0.0.1:1", derivedColumns)
			args := append([]string{"tail", "-config", cfg, "-columns", "derived"}, strings.Fields(c.args)...)
			code, out, errOut, took := runCLI(t, args...)
			if code != c.code || out != "" {
				t.Fatalf("exit %d, stdout %q; want %d and nothing", code, out, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if !strings.HasPrefix(errOut, c.want[0]) {
				t.Errorf("stderr %q does not start with %q", errOut, c.want[0])
			}
			if took > c.within {
				t.Errorf("took %v, want at most %v", took, c.within)
			}
		})
	}
}

// TestTailStopsAtTheLogEnd: by default etl tail prints the last -n
// records and exits at the log end as of its start; -n with fewer records
// exits at the log end saying how many rows it found; -from earliest -n 0
// reads everything up to the end; -follow keeps reading records produced
// after its start.
func TestTailStopsAtTheLogEnd(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(2, "events"))
	produceIDs(t, kb, 0, 0, 3)
	produceIDs(t, kb, 1, 100, 101)
	cfg := cliConfig(t, kb.Addr(), "", "127.0.0.1:1", derivedColumns)
	ids := func(out string) string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if i := strings.Index(l, `"row":{"id":`); i >= 0 {
				got = append(got, strings.TrimSuffix(l[i+len(`"row":{"id":`):], "}}"))
			}
		}
		return strings.Join(got, ",")
	}

	// 4 records, 5 asked for: all 4, then the end of the log.
	code, out, errOut, took := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "5")
	if got := ids(out); code != exitOK || len(strings.Split(got, ",")) != 4 || !strings.Contains(errOut, "the end of the log: 4 rows of the 5 asked for") {
		t.Fatalf("-n 5 with 4 records: exit %d, ids %s, stderr %q", code, got, errOut)
	}
	if took > 10*time.Second {
		t.Fatalf("-n 5 with 4 records took %v", took)
	}
	// The last record of each partition.
	code, out, _, _ = runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "1", "-partitions", "0")
	if got := ids(out); code != exitOK || got != "2" {
		t.Fatalf("-n 1 -partitions 0: exit %d, ids %s, want 2", code, got)
	}
	code, out, _, _ = runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "0", "-from", "earliest", "-partitions", "0")
	if got := ids(out); code != exitOK || got != "0,1,2" {
		t.Fatalf("-n 0 -from earliest: exit %d, ids %s, want 0,1,2", code, got)
	}
	// -from latest reads nothing without -follow.
	code, out, errOut, _ = runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-from", "latest")
	if code != exitOK || out != "" || !strings.Contains(errOut, "the end of the log: 0 rows of the 10 asked for") {
		t.Fatalf("-from latest: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// -follow: records produced after the start are printed.
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut, _ := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-from", "latest", "-follow", "-n", "2", "-partitions", "1")
		done <- result{code, out, errOut}
	}()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	next := 200
	for {
		select {
		case r := <-done:
			if got := ids(r.out); r.code != exitOK || !strings.HasPrefix(got, "20") || len(strings.Split(got, ",")) != 2 {
				t.Fatalf("-follow: exit %d, ids %s, stderr %q; want 2 records produced after the start", r.code, got, r.errOut)
			}
			return
		case <-tick.C:
			produceIDs(t, kb, 1, next, next+1) // until the follower has two
			next++
		case <-deadline:
			t.Fatal("-follow -n 2 did not exit within 30s of records produced")
		}
	}
}

// TestTailBrokerStopsAnswering: records before the log end that do not
// come (every fetch fails) end etl tail after -timeout with exit 1, naming
// the partitions short of their log end, instead of a silent wait.
func TestTailBrokerStopsAnswering(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "events"))
	produceIDs(t, kb, 0, 0, 3)
	var fetches atomic.Int64
	kb.Cluster().ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		kb.Cluster().KeepControl()
		fetches.Add(1)
		return nil, errors.New("fetch refused by the test"), true
	})
	cfg := cliConfig(t, kb.Addr(), "", "127.0.0.1:1", derivedColumns)
	code, out, errOut, took := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-from", "earliest", "-timeout", "2s")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "etl tail: no record within 2s (-timeout) before the log end of events/0 (end offset 3)") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 naming the partition short of its end", code, out, errOut)
	}
	if fetches.Load() == 0 {
		t.Fatal("no fetch was refused: the test did not test the refusal")
	}
	if took > 10*time.Second {
		t.Fatalf("took %v with -timeout 2s", took)
	}
}

// lockedBuffer is a bytes.Buffer safe to read while etl writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTailFollowBrokerGone: etl tail -follow, having printed the records
// there, keeps following an idle log (no exit while the broker answers),
// and when the broker goes away it exits 1 within -timeout and the ping
// after it, naming the brokers and the connection error, instead of
// following nothing in silence.
func TestTailFollowBrokerGone(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "events"))
	produceIDs(t, kb, 0, 0, 3)
	cfg := cliConfig(t, kb.Addr(), "", "127.0.0.1:1", derivedColumns)
	var out, errOut lockedBuffer
	type result struct {
		code int
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		code := run([]string{"tail", "-config", cfg, "-columns", "derived", "-from", "earliest", "-follow", "-timeout", "1s"}, &out, &errOut)
		done <- result{code, time.Now()}
	}()
	running := func() {
		select {
		case r := <-done:
			t.Fatalf("exited %d while the broker answers; stdout %q, stderr %q", r.code, out.String(), errOut.String())
		default:
		}
	}
	testenv.WaitFor(t, "the three records printed", 20*time.Second, func() bool {
		running()
		return strings.Count(out.String(), `"id"`) >= 3
	})
	// An idle log is followed: three quiet periods of -timeout, each
	// checked against the broker, end in no exit. Counted by the
	// broker's answers to the pings (metadata requests for no topic),
	// not by sleeping.
	var pings atomic.Int64
	kb.Cluster().ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kb.Cluster().KeepControl()
		if m := req.(*kmsg.MetadataRequest); m.Topics != nil && len(m.Topics) == 0 {
			pings.Add(1)
		}
		return nil, nil, false
	})
	testenv.WaitFor(t, "three pings answered", 20*time.Second, func() bool {
		running()
		return pings.Load() >= 3
	})
	gone := time.Now()
	kb.Cluster().Close()
	select {
	case r := <-done:
		took := r.at.Sub(gone)
		t.Logf("exit %d %v after the broker went away; stderr %q", r.code, took.Round(time.Millisecond), errOut.String())
		if r.code != exitFailed || !strings.Contains(errOut.String(), "etl tail: -follow: no record for 1s and no broker answers: source.kafka.brokers "+kb.Addr()) {
			t.Fatalf("exit %d, stderr %q; want 1 naming the brokers", r.code, errOut.String())
		}
		if took > 10*time.Second {
			t.Fatalf("took %v to notice the broker gone with -timeout 1s", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("etl tail -follow still running 30s after the broker went away; stderr %q", errOut.String())
	}
}

// TestTailMetadata: etl tail fills the columns mapped to a record's
// metadata as a run does, and -raw prints each record's key (text, or
// hex when it is not UTF-8), timestamp and headers.
func TestTailMetadata(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "events"))
	cl := kb.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := []*kgo.Record{
		{Topic: "events", Value: []byte(`{"id": 1}`), Key: []byte("k1"), Timestamp: time.UnixMilli(1_700_000_000_123),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0xff, 0x01}}}},
		{Topic: "events", Value: []byte(`{"id": 2}`), Timestamp: time.UnixMilli(1_700_000_001_000)},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "pipeline.yaml", fmt.Sprintf(`pipeline: {name: cli}
source:
  kafka: {brokers: [%q], topics: [events], group_id: cli}
decode: {format: json, fields: {id: UInt64}}
sink:
  clickhouse:
    addr: ["127.0.0.1:1"]
    table: events
    columns: {off: _offset, key: _key, ts: _timestamp}
metrics: {listen: "off"}
`, kb.Addr()))
	code, out, _, _ := runCLI(t, "tail", "-config", cfg, "-columns", "derived", "-n", "2", "-from", "earliest", "-raw")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		`"row":{"id":1,"key":"k1","off":0,"ts":"2023-11-14 22:13:20.123"}`,
		`"row":{"id":2,"key":"","off":1,"ts":"2023-11-14 22:13:21.000"}`,
		`{"topic":"events","partition":0,"offset":0,"timestamp":"2023-11-14T22:13:20.123Z","timestamp_type":"create","key":"k1","headers":[["h",{"hex":"ff01"}]],"raw":`,
		`{"topic":"events","partition":0,"offset":1,"timestamp":"2023-11-14T22:13:21.000Z","timestamp_type":"create","key":null,"headers":[],"raw":`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %s", want)
		}
	}
}
