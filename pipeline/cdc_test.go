package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/transform"
)

// cdcEvent is a PostgreSQL change event of the table (id, name).
func cdcEvent(op, before, after string, lsn int) []byte {
	return fmt.Appendf(nil, `{"before":%s,"after":%s,"source":{"connector":"postgresql","lsn":%d,"ts_ms":1},"op":%q}`, before, after, lsn, op)
}

// TestCDCCounted: on the staged path the debezium envelope writes the
// rows of each change event; a tombstone is dropped and counted, never an
// error; truncates, messages and unknown operations are skipped and
// counted by reason; a record that is no change event and a delete
// without its key are dead letters with reason corrupt. With a chain that
// reads _tombstone, the tombstone goes through it instead.
func TestCDCCounted(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "keys", 1)
	kb.CreateTopic(t, "keys.dlq", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, `CREATE TABLE default.t (id Int64, name String, _version UInt64, _deleted UInt8, _op String) ENGINE = MergeTree ORDER BY (id, _version)`)
	recs := []*kgo.Record{
		{Value: cdcEvent("c", "null", `{"id":1,"name":"a"}`, 10)},
		{Value: cdcEvent("u", `{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`, 20)},
		{Value: cdcEvent("d", `{"id":2,"name":"b"}`, "null", 30)},
		{Key: []byte(`{"id":2}`)},
		{Value: cdcEvent("t", "null", "null", 40)},
		{Value: cdcEvent("m", "null", "null", 41)},
		{Value: cdcEvent("x", "null", "null", 42)},
		{Value: []byte(`{"id":3,"name":"c"}`)},
		{Value: cdcEvent("d", "null", "null", 50)},
		{Value: []byte(`{"schema":{},"payload":` + string(cdcEvent("r", "null", `{"id":4,"name":"d"}`, 60)) + `}`)},
	}
	for _, r := range recs {
		r.Topic = "keys"
	}
	produceMeta(t, kb, recs)
	const decode = `{format: json, envelope: debezium, fields: {id: Int64, name: String}, debezium: {key: [id]}, on_error: dlq, dlq: {topic: keys.dlq}}`
	cfg := keysConfig(t, kb, ch, "cdc", decode, oneSink(ch, "t", ""))
	p, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool { return kb.CommittedOffsets(t, "cdc", "keys")[0] == int64(len(recs)) })
	dead := readTopic(t, kb, "keys.dlq", 2)
	stop()
	if got, want := ch.Query(t, "SELECT id, name, _version, _deleted, _op FROM default.t ORDER BY _version, _deleted DESC"),
		"1\ta\t10\t0\tc\n1\ta\t20\t1\tu\n2\tb\t20\t0\tu\n2\tb\t30\t1\td\n4\td\t60\t0\tr"; got != want {
		t.Fatalf("rows:\n got %s\nwant %s", got, want)
	}
	if n := testutil.ToFloat64(p.m.cdcTombstones); n != 1 {
		t.Errorf("%v tombstones counted, want 1", n)
	}
	for _, r := range []string{transform.SkipTruncate, transform.SkipMessage, transform.SkipUnknownOp} {
		if n := testutil.ToFloat64(p.m.cdcSkipped[r]); n != 1 {
			t.Errorf("%v events skipped as %s, want 1", n, r)
		}
	}
	wantErr := map[int64]string{7: "not a Debezium change event: it has no op nor payload.op field", 8: "the delete has no before with its key (id)"}
	for _, d := range dead {
		h := headersOf(d)
		if h[dlq.HeaderReason] != "corrupt" || !strings.Contains(h[dlq.HeaderError], wantErr[offsetOf(t, h)]) {
			t.Errorf("dead letter %q: reason %q, error %q", d.Value, h[dlq.HeaderReason], h[dlq.HeaderError])
		}
	}

	// A chain that reads _tombstone takes the tombstone in (and drops it).
	ch.Exec(t, "TRUNCATE TABLE default.t")
	cfg = keysConfig(t, kb, ch, "cdc2", strings.Replace(decode, "on_error: dlq, dlq: {topic: keys.dlq}", "on_error: skip", 1)+"\ntransform:\n  - filter: \"!_tombstone\"", oneSink(ch, "t", ""))
	p, stop = runPipeline(t, cfg)
	testenv.WaitFor(t, "commits", time.Minute, func() bool { return kb.CommittedOffsets(t, "cdc2", "keys")[0] == int64(len(recs)) })
	stop()
	if n := ch.Count(t, "default.t"); n != 5 {
		t.Errorf("%d rows, want 5", n)
	}
	if n, d := testutil.ToFloat64(p.m.cdcTombstones), testutil.ToFloat64(p.m.transformDropped); n != 0 || d != 1 {
		t.Errorf("tombstones counted %v, rows dropped %v; want 0 and 1 (the filter's)", n, d)
	}
}

// offsetOf reads the source offset of a dead letter from its headers.
func offsetOf(t *testing.T, h map[string]string) int64 {
	t.Helper()
	var off int64
	if _, err := fmt.Sscan(h[dlq.HeaderOffset], &off); err != nil {
		t.Fatalf("dead letter headers %v: %v", h, err)
	}
	return off
}
