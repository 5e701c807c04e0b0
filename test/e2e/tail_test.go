package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// tailOut runs etl tail with args (bounded by a minute) and returns its
// stdout lines.
func tailOut(t *testing.T, args ...string) []string {
	t.Helper()
	bin := testenv.Build(t, "./cmd/etl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"tail"}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("etl tail %v: %v\nstderr: %s", args, err, errb.String())
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// tailLine is one JSON line of etl tail.
type tailLine struct {
	Sink      string         `json:"sink"`
	Table     string         `json:"table"`
	Row       map[string]any `json:"row"`
	Raw       map[string]any `json:"raw"`
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Rejected  string         `json:"rejected"`
	Reason    string         `json:"reason"`
	Error     string         `json:"error"`
	Dropped   string         `json:"dropped"`
}

// tailed is what etl tail printed, by kind of line.
type tailed struct {
	rows     map[float64]map[string]any // by id
	raw      map[float64]map[string]any // by id
	rejected []tailLine
	dropped  int
}

// parseTail sorts etl tail's JSON lines; every row must be of the
// default sink's table default.events.
func parseTail(t *testing.T, lines []string) tailed {
	t.Helper()
	out := tailed{rows: map[float64]map[string]any{}, raw: map[float64]map[string]any{}}
	for _, l := range lines {
		var tl tailLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		switch {
		case tl.Row != nil:
			if tl.Sink != "default" || tl.Table != "default.events" {
				t.Fatalf("row of sink %q table %q", tl.Sink, tl.Table)
			}
			out.rows[tl.Row["id"].(float64)] = tl.Row
		case tl.Raw != nil:
			out.raw[tl.Raw["id"].(float64)] = tl.Raw
		case tl.Rejected != "":
			out.rejected = append(out.rejected, tl)
		case tl.Dropped != "":
			out.dropped++
		default:
			t.Fatalf("unexpected line %q", l)
		}
	}
	return out
}

// insertedRows reads the table's rows as JSON objects keyed by id, with
// ts as etl tail prints a DateTime (UTC) and id as a JSON number (the
// server quotes 64-bit integers; the ids here are small).
func insertedRows(t *testing.T, e *env) map[float64]map[string]any {
	t.Helper()
	out := e.ch.Query(t, "SELECT toUInt32(id) AS id, formatDateTime(ts, '%Y-%m-%d %H:%M:%S', 'UTC') AS ts, user_id, kind, amount, note FROM default.events ORDER BY id FORMAT JSONEachRow")
	rows := map[float64]map[string]any{}
	for _, l := range strings.Split(out, "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		rows[r["id"].(float64)] = r
	}
	return rows
}

// TestTail: etl tail prints, without joining the group or committing, the
// rows the pipeline then inserts, value for value; a record it would skip
// is printed with its reason; with a transform chain, records the chain
// drops are printed as dropped and -raw shows each record before the
// chain; -format table prints aligned columns.
func TestTail(t *testing.T) {
	t.Run("direct", func(t *testing.T) {
		e := newEnv(t)
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(`{"id": "not a number"`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		const n = 300
		e.produce(0, n)
		cfg := e.config("tail", "decode: {format: json, on_error: skip}\n")

		lines := tailOut(t, "-config", cfg, "-from", "earliest", "-n", fmt.Sprint(n))
		out := parseTail(t, lines)
		tailed := out.rows
		if len(tailed) != n || len(out.rejected) != 1 || len(out.raw) != 0 || out.dropped != 0 {
			t.Fatalf("tail printed %d rows and %d rejected records, want %d and 1:\n%s", len(tailed), len(out.rejected), n, strings.Join(lines, "\n"))
		}
		if r := out.rejected[0]; r.Rejected != "skipped" || r.Reason != "corrupt" || r.Partition != 0 || r.Offset != 0 || r.Error == "" {
			t.Fatalf("rejected line %+v", r)
		}
		if got := e.kb.CommittedOffsets(t, "tail", topic); len(got) != 0 {
			t.Fatalf("etl tail committed %v", got)
		}
		table := tailOut(t, "-config", cfg, "-from", "earliest", "-n", "5", "-format", "table", "-partitions", "1")
		t.Logf("etl tail -format table:\n%s\netl tail (json), first lines:\n%s", strings.Join(table, "\n"), strings.Join(lines[:3], "\n"))
		if len(table) != 7 || table[0] != "-- sink default, table default.events" || !slices.Equal(strings.Fields(table[1]), []string{"id", "ts", "user_id", "kind", "amount", "note"}) {
			t.Fatalf("-format table printed:\n%s", strings.Join(table, "\n"))
		}

		p := startETL(t, cfg)
		e.waitRows(n, time.Minute, p)
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("etl exited %d", code)
		}
		inserted := insertedRows(t, e)
		if len(inserted) != n {
			t.Fatalf("%d rows inserted, want %d", len(inserted), n)
		}
		for id, want := range inserted {
			if got := tailed[id]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("id %v: tail printed %v, the pipeline inserted %v", id, got, want)
			}
		}
	})

	t.Run("stored", func(t *testing.T) {
		// etl tail prints each value as the column will hold it: a
		// Decimal at its scale, a DateTime in its column's zone, and a
		// value the column cannot hold exactly (19.999 into Decimal(12, 2))
		// as a refusal, as the run refuses it.
		e := newEnv(t)
		e.ch.Exec(t, "DROP TABLE default.events")
		e.ch.Exec(t, "CREATE TABLE default.events (id UInt64, amount Decimal(12, 2), fee Nullable(Decimal(12, 2)), ts DateTime('Asia/Tokyo')) ENGINE = MergeTree ORDER BY id")
		recs := []string{
			`{"id":1,"amount":1.5,"fee":null,"ts":"2021-01-01 00:00:00"}`,
			`{"id":2,"amount":19.990,"fee":"0.1","ts":"2021-01-01T00:00:00Z"}`,
			`{"id":3,"amount":1e2,"fee":7,"ts":1609459200}`,
			`{"id":4,"amount":19.999,"fee":1,"ts":"2021-01-01 00:00:00"}`,
			`{"id":5,"amount":1,"fee":0.005,"ts":"2021-01-01 00:00:00"}`,
			`{"id":6,"amount":-0.00,"fee":-12.3,"ts":"2106-02-06 23:59:59"}`,
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, r := range recs {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(r)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cl.Close()
		cfg := e.config("tail-stored", "decode: {format: json, on_error: skip}\n")
		lines := tailOut(t, "-config", cfg, "-from", "earliest", "-n", "4", "-partitions", "0")
		out := parseTail(t, lines)
		if len(out.rows) != 4 || len(out.rejected) != 2 {
			t.Fatalf("tail printed %d rows and %d rejected records, want 4 and 2:\n%s", len(out.rows), len(out.rejected), strings.Join(lines, "\n"))
		}
		for _, r := range out.rejected {
			if r.Reason != "out_of_range" || !strings.Contains(r.Error, "more fraction digits than Decimal(12, 2)") {
				t.Errorf("rejected %+v, want out_of_range naming the scale", r)
			}
		}
		p := startETL(t, cfg)
		e.waitRows(4, time.Minute, p)
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("etl exited %d", code)
		}
		stored := e.ch.Query(t, "SELECT toUInt32(id) AS id, toString(amount) AS amount, toString(fee) AS fee, toString(ts) AS ts FROM default.events ORDER BY id FORMAT JSONEachRow")
		t.Logf("etl tail:\n%s\nstored:\n%s", strings.Join(lines, "\n"), stored)
		n := 0
		for _, l := range strings.Split(stored, "\n") {
			var want map[string]any
			if err := json.Unmarshal([]byte(l), &want); err != nil {
				t.Fatalf("%v: %q", err, l)
			}
			n++
			got := out.rows[want["id"].(float64)]
			if want["fee"] == "\\N" { // toString of a NULL
				want["fee"] = nil
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("id %v: tail printed %v, the table holds %v", want["id"], got, want)
			}
		}
		if n != 4 {
			t.Fatalf("%d rows stored, want 4", n)
		}
	})

	t.Run("chain", func(t *testing.T) {
		e := newEnv(t)
		const n = 120
		e.produce(0, n)
		cfg := e.config("tail-chain", `decode: {format: json, fields: {amount: Float64}}
transform:
  - filter: "id % 3 != 0"
  - set:
      amount: "amount * 2"
`)
		lines := tailOut(t, "-config", cfg, "-from", "earliest", "-n", fmt.Sprint(n*2/3), "-raw")
		out := parseTail(t, lines)
		tailed, raw := out.rows, out.raw
		if len(tailed) != n*2/3 || out.dropped != n/3 || len(raw) != n || len(out.rejected) != 0 {
			t.Fatalf("tail printed %d rows, %d dropped, %d raw records, %d rejected; want %d, %d, %d, 0", len(tailed), out.dropped, len(raw), len(out.rejected), n*2/3, n/3, n)
		}
		for id, row := range tailed {
			if int(id)%3 == 0 || row["amount"].(float64) != 2*raw[id]["amount"].(float64) {
				t.Fatalf("id %v: row %v from raw %v", id, row, raw[id])
			}
		}
		p := startETL(t, cfg)
		e.waitRows(n*2/3, time.Minute, p)
		if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("etl exited %d", code)
		}
		inserted := insertedRows(t, e)
		if len(inserted) != len(tailed) {
			t.Fatalf("%d rows inserted, tail printed %d", len(inserted), len(tailed))
		}
		for id, want := range inserted {
			if got := tailed[id]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("id %v: tail printed %v, the pipeline inserted %v", id, got, want)
			}
		}
	})
}
