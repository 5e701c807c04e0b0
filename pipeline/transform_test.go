package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

var routeKinds = [3]string{"click", "view", "buy"}

// routedMessage is message m: 100 events whose fields are closed-form in
// m and the event's index.
func routedMessage(m int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"msg_id": %d, "source": "s%d", "events": [`, m, m%5)
	for j := 0; j < 100; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"seq": %d, "kind": %q, "value": %d}`, j, routeKinds[(m+j)%3], (m*7+j*13)%1000)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

const routedTable = "(msg_id UInt64, seq UInt32, source String, value UInt32, score Int64, label String) ENGINE = MergeTree ORDER BY (msg_id, seq)"

func routedConfig(kb *testenv.Broker, ch *testenv.CH, group string) string {
	sink := func(table string) string {
		return fmt.Sprintf("  %s:\n    clickhouse: {addr: [%q], table: %s, batch: {max_rows: 20000, linger: 100ms}}\n", table, ch.TCPAddr(), table)
	}
	return fmt.Sprintf(`pipeline: {name: routed, workers: 2}
source:
  kafka: {brokers: [%q], topics: [msgs], group_id: %s, session_timeout: 6s}
decode:
  fields: {events.seq: UInt32, events.kind: String, events.value: UInt32}
transform:
  - flatten: events
  - filter: "events.value >= 100"
  - filter: "source != 's4'"
  - set:
      seq: "events.seq"
      value: "events.value"
      score: "int(events.value) * 3 - 7"
      label: "concat(upper(source), '-', string(events.seq))"
  - route:
      rules:
        - {when: "events.kind == 'click'", sink: clicks}
        - {when: "events.kind == 'view'", sink: views}
      unmatched: buys
sinks:
%s%s%scheckpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, sink("clicks"), sink("views"), sink("buys"))
}

// TestTransformRouting: messages carrying 100 events each are flattened,
// filtered twice, given derived fields and routed by kind into three
// tables. Every table holds exactly the rows a closed-form computation
// from the generator expects, and the offsets commit to the end.
func TestTransformRouting(t *testing.T) {
	const msgs = 600
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "msgs", 3)
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"clicks", "views", "buys"} {
		ch.Exec(t, "CREATE TABLE default."+table+" "+routedTable)
	}
	var recs []*kgo.Record
	want := map[string][]string{}
	for m := 0; m < msgs; m++ {
		recs = append(recs, &kgo.Record{Topic: "msgs", Partition: int32(m % 3), Value: routedMessage(m)})
		if m%5 == 4 {
			continue // source s4 is filtered out
		}
		for j := 0; j < 100; j++ {
			value := (m*7 + j*13) % 1000
			if value < 100 {
				continue
			}
			table := map[string]string{"click": "clicks", "view": "views", "buy": "buys"}[routeKinds[(m+j)%3]]
			want[table] = append(want[table], fmt.Sprintf("%d\t%d\ts%d\t%d\t%d\tS%d-%d", m, j, m%5, value, value*3-7, m%5, j))
		}
	}
	cl := kb.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg, err := config.Parse([]byte(routedConfig(kb, ch, "routed")), "pipeline.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	total := uint64(len(want["clicks"]) + len(want["views"]) + len(want["buys"]))
	testenv.WaitFor(t, "all rows", time.Minute, func() bool {
		return ch.Count(t, "default.clicks")+ch.Count(t, "default.views")+ch.Count(t, "default.buys") >= total
	})
	testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "routed", "msgs")
		return c[0]+c[1]+c[2] == msgs
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, table := range []string{"clicks", "views", "buys"} {
		got := ch.Query(t, "SELECT msg_id, seq, source, value, score, label FROM default."+table+" ORDER BY msg_id, seq")
		sort.Slice(want[table], func(i, j int) bool { return lessRow(want[table][i], want[table][j]) })
		if exp := strings.Join(want[table], "\n"); got != exp {
			gl := strings.Split(got, "\n")
			for i := range min(len(gl), len(want[table])) {
				if gl[i] != want[table][i] {
					t.Fatalf("%s row %d: got %q, want %q (%d rows, want %d)", table, i, gl[i], want[table][i], len(gl), len(want[table]))
				}
			}
			t.Fatalf("%s: %d rows, want %d", table, len(gl), len(want[table]))
		}
		t.Logf("%s: %d rows as expected", table, len(want[table]))
	}
}

// lessRow orders "msg_id\tseq\t..." rows numerically by msg_id, seq.
func lessRow(a, b string) bool {
	var am, aj, bm, bj int
	fmt.Sscanf(a, "%d\t%d", &am, &aj)
	fmt.Sscanf(b, "%d\t%d", &bm, &bj)
	if am != bm {
		return am < bm
	}
	return aj < bj
}

// TestTransformConfigErrors: an expression that does not parse and one
// that does not type-check each stop New with the step, the expression and
// its line.
func TestTransformConfigErrors(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "msgs", 3)
	ch := testenv.ClickHouse(t)
	for _, table := range []string{"clicks", "views", "buys"} {
		ch.Exec(t, "CREATE TABLE default."+table+" "+routedTable)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`filter: "events.value >= 100"`, `filter: "events.value >= "`, `pipeline.yaml:8:13: transform[1].filter`},
		{`score: "int(events.value) * 3 - 7"`, `score: "source * 3"`, `pipeline.yaml:13:14: transform[3].set.score`},
	} {
		y := strings.Replace(routedConfig(kb, ch, "bad"), tc.from, tc.to, 1)
		cfg, err := config.Parse([]byte(y), "pipeline.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.to, err, tc.want)
			continue
		}
		t.Logf("%s:\n%v", tc.to, err)
	}
}
