package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestPartialColumnMap: sink.clickhouse.columns names only the column
// whose field has another name, and every other column is filled from the
// field of its own name; a column in exclude_columns is left to the
// server, which computes its DEFAULT now(); a computable DEFAULT of a
// column no record has a field for is written by etl.
func TestPartialColumnMap(t *testing.T) {
	kb, ch := setup(t)
	ch.Exec(t, `CREATE TABLE default.partial (
		id UInt64, ts DateTime, user_id UInt32, event_kind String, amount Float64, note Nullable(String),
		inserted_at DateTime DEFAULT now(), src String DEFAULT 'etl'
	) ENGINE = MergeTree ORDER BY id`)
	const n = 3000
	produce(t, kb, 0, n, nil)
	start := time.Now().Add(-2 * time.Second).Unix()
	y := fmt.Sprintf(`pipeline: {name: partial, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events], group_id: partial, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: partial
    columns: {event_kind: kind}
    exclude_columns: [inserted_at]
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 100ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "partial.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runPipeline(t, cfg)
	testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default.partial") >= n })
	stop()
	got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(src = 'etl'), countIf(toUnixTimestamp(inserted_at) >= "+strconv.FormatInt(start, 10)+") FROM default.partial")
	if want := fmt.Sprintf("%d\t%d\t%d\t%d", n, n, n, n); got != want {
		t.Fatalf("count, distinct ids, src from its DEFAULT, inserted_at from the server's now() = %s, want %s", got, want)
	}
	rows := ch.Query(t, "SELECT id, toUnixTimestamp(ts), user_id, event_kind, amount, ifNull(note, '<null>') FROM default.partial ORDER BY id")
	for i, line := range strings.Split(rows, "\n") {
		e := gen.Make(seed, uint64(i))
		note := "<null>"
		if e.Note != nil {
			note = *e.Note
		}
		want := []string{strconv.Itoa(i), strconv.FormatInt(e.TS.Unix(), 10), strconv.FormatUint(uint64(e.UserID), 10), e.Kind, strconv.FormatFloat(e.Amount, 'f', -1, 64)}
		f := strings.SplitN(line, "\t", 6)
		if len(f) != 6 || strings.Join(f[:5], "\t") != strings.Join(want, "\t") || testenv.UnescapeTSV(f[5]) != note {
			t.Fatalf("row %d = %q, want %q and note %q", i, line, strings.Join(want, "\t"), note)
		}
	}
}
