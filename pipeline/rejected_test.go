package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/internal/testenv"
)

// TestInsertRejectedRecords: records the decoder accepts but ClickHouse
// refuses (here through a MATERIALIZED column that parses msg as a Date:
// the server's own CANNOT_PARSE_DATE) do not stop the pipeline under
// on_error dlq or skip. The refused batch is bisected down to them; they go
// to the dead-letter topic (dlq) with reason insert_rejected, the server's
// message, their source position and their rows as JSON, or are counted
// and dropped (skip); every other row is written once, and the offsets
// commit to the end. The dlq case runs the staged path (a transform that
// makes two rows of each record): a record one of whose rows is refused is
// refused whole.
func TestInsertRejectedRecords(t *testing.T) {
	const n = 300
	bad := map[int]bool{17: true, 150: true, 299: true}
	for _, tc := range []struct {
		name, onError, transform string
		rowsPerRecord            int
	}{
		{name: "skip-direct", onError: "skip", rowsPerRecord: 1},
		{name: "dlq-staged", onError: "dlq", rowsPerRecord: 2, transform: `
transform:
  - flatten: ms
  - set: {msg: "ms"}
decode:
  format: json
  fields: {ms: String}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kb := testenv.Kafka(t)
			kb.CreateTopic(t, "events", 3)
			kb.CreateTopic(t, "events.dlq", 1)
			ch := testenv.ClickHouse(t)
			ch.Exec(t, "CREATE TABLE default.rej (id UInt64, msg String, d Date MATERIALIZED toDate(msg)) ENGINE = MergeTree ORDER BY id")

			recs := make([]*kgo.Record, 0, n)
			for i := 0; i < n; i++ {
				msg := "2020-01-02"
				if bad[i] {
					msg = "bad"
				}
				v := fmt.Sprintf(`{"id":%d,"msg":%q}`, i, msg)
				if tc.rowsPerRecord == 2 {
					v = fmt.Sprintf(`{"id":%d,"ms":["2020-01-03",%q]}`, i, msg)
				}
				recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: []byte(v)})
			}
			cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n+1))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			end := kb.EndOffsets(t, "events")

			group := "rej-" + tc.name
			y := fmt.Sprintf(`pipeline: {name: test, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events], group_id: %s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: rej
    batch: {max_rows: 5000, max_bytes: 4MiB, linger: 300ms}
    retry: {initial_backoff: 50ms, max_backoff: 500ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, ch.TCPAddr())
			if tc.transform != "" {
				y += tc.transform
			}
			cfg, err := config.Parse([]byte(y), "test.yaml", func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Decode.OnError = config.OnError(tc.onError)
			if tc.onError == "dlq" {
				cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
			}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(context.Background())
			defer stop()
			done := make(chan error, 1)
			go func() { done <- p.Run(runCtx) }()
			good := (n - len(bad)) * tc.rowsPerRecord
			waitRunning(t, done, "the good rows and commits to the end", 40*time.Second, func() error {
				c := kb.CommittedOffsets(t, group, "events")
				at := true
				for part, off := range end {
					at = at && c[part] == off
				}
				if rows := ch.Count(t, "default.rej"); !at || rows < uint64(good) {
					return fmt.Errorf("%d rows of %d, committed %v of %v", rows, good, c, end)
				}
				return nil
			})
			stop()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("pipeline did not stop")
			}
			want := fmt.Sprintf("%d\t%d\t0", good, n-len(bad))
			if got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(id IN (17, 150, 299)) FROM default.rej"); got != want {
				t.Fatalf("count, distinct ids, refused ids = %s, want %s", got, want)
			}
			if tc.onError != "dlq" {
				return
			}
			dead := readTopic(t, kb, "events.dlq", len(bad))
			if len(dead) != len(bad) {
				t.Fatalf("%d dead letters, want %d", len(dead), len(bad))
			}
			seen := map[int]bool{}
			for _, r := range dead {
				h := map[string]string{}
				for _, x := range r.Headers {
					h[x.Key] = string(x.Value)
				}
				// The record's two rows, as they were sent.
				var rows []struct {
					ID  int    `json:"id"`
					Msg string `json:"msg"`
				}
				if err := json.Unmarshal(r.Value, &rows); err != nil {
					t.Fatalf("dead letter value %q: %v", r.Value, err)
				}
				if len(rows) != 2 || rows[0].ID != rows[1].ID || rows[0].Msg != "2020-01-03" || rows[1].Msg != "bad" {
					t.Fatalf("dead letter %s", r.Value)
				}
				row := rows[0]
				if !bad[row.ID] || seen[row.ID] {
					t.Fatalf("dead letter %s", r.Value)
				}
				seen[row.ID] = true
				if h[dlq.HeaderReason] != "insert_rejected" || h[dlq.HeaderTopic] != "events" ||
					h[dlq.HeaderPartition] != strconv.Itoa(row.ID%3) || h[dlq.HeaderOffset] != strconv.Itoa(row.ID/3) ||
					!strings.Contains(h[dlq.HeaderError], "Cannot parse date") {
					t.Errorf("dead letter %s: headers %v", r.Value, h)
				}
			}
		})
	}
}
