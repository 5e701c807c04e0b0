package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// lockedBuffer is a log destination several goroutines write to.
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

// TestDefaultedColumn: with schemaless JSON (no field list to check the
// configuration against), a column mapped to a field no record has
// (user_id <- user_idd) holds 0 in every row; each batch adds its rows to
// etl_sink_defaulted_rows_total{table,column}, and one WARN names the
// table, the column and the field; a later batch within the hour is
// counted but not logged again. Columns the records fill are not counted.
// The same holds on the staged path (a transform step), where the count
// goes from the staging chunk to the output chunks.
func TestDefaultedColumn(t *testing.T) {
	t.Run("direct", func(t *testing.T) { testDefaultedColumn(t, "") })
	t.Run("staged", func(t *testing.T) { testDefaultedColumn(t, "transform:\n  - filter: \"id >= 0\"\n") })
}

func testDefaultedColumn(t *testing.T, transform string) {
	kb, ch := setup(t)
	ch.Exec(t, `CREATE TABLE default.dflt (id UInt64, user_id UInt32, kind String) ENGINE = MergeTree ORDER BY id`)
	y := fmt.Sprintf(`pipeline: {name: dflt, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events], group_id: dflt, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: dflt
    columns: {user_id: user_idd}
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
%s`, kb.Addr(), ch.TCPAddr(), transform)
	cfg, err := config.Parse([]byte(y), "dflt.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	reg := prometheus.NewPedanticRegistry()
	p, err := New(context.Background(), Options{Config: cfg, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	defaulted := func(column string) float64 {
		return metricSum(t, reg, "etl_sink_defaulted_rows_total", func(m *dto.Metric) bool {
			ok := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "column" && l.GetValue() == column {
					ok = true
				}
				if l.GetName() == "table" && l.GetValue() != "default.dflt" {
					return false
				}
			}
			return ok
		})
	}
	warnings := func() []string {
		var out []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "column=user_id") {
				out = append(out, line)
			}
		}
		return out
	}

	const n1, n2 = 2500, 1500
	produce(t, kb, 0, n1, nil)
	testenv.WaitFor(t, "the first rows", time.Minute, func() bool { return ch.Count(t, "default.dflt") >= n1 })
	testenv.WaitFor(t, "the first rows counted", 10*time.Second, func() bool { return defaulted("user_id") >= n1 })
	if got := ch.Query(t, "SELECT count(), countIf(user_id = 0), countIf(kind != '') FROM default.dflt"); got != fmt.Sprintf("%d\t%d\t%d", n1, n1, n1) {
		t.Fatalf("rows, rows with user_id 0, rows with a kind = %s", got)
	}
	if got := defaulted("user_id"); got != n1 {
		t.Fatalf("etl_sink_defaulted_rows_total{column=user_id} = %v after %d rows, want %d", got, n1, n1)
	}
	w := warnings()
	if len(w) != 1 {
		t.Fatalf("%d warnings about column user_id, want 1:\n%s", len(w), logs.String())
	}
	for _, want := range []string{"table=default.dflt", "column=user_id", "field=user_idd"} {
		if !strings.Contains(w[0], want) {
			t.Errorf("the warning lacks %s: %s", want, w[0])
		}
	}

	produce(t, kb, n1, n2, nil)
	testenv.WaitFor(t, "the later rows counted", time.Minute, func() bool { return defaulted("user_id") >= n1+n2 })
	if got := defaulted("user_id"); got != n1+n2 {
		t.Fatalf("etl_sink_defaulted_rows_total{column=user_id} = %v after %d rows, want %d", got, n1+n2, n1+n2)
	}
	if w := warnings(); len(w) != 1 {
		t.Fatalf("%d warnings about column user_id after a later batch, want still 1:\n%s", len(w), logs.String())
	}
	for _, col := range []string{"id", "kind"} {
		if got := defaulted(col); got != 0 {
			t.Errorf("etl_sink_defaulted_rows_total{column=%s} = %v for a column every record fills", col, got)
		}
	}
}
