package transform

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/json"
)

// cdc is a chain with the debezium envelope, its JSON decoder and a
// staging chunk: the pipeline's staged path in miniature.
type cdc struct {
	t     testing.TB
	chain *Chain
	dec   *json.Decoder
	stage *chunk.Chunk
	em    *emitter
}

// cdcColumns are the sink's columns of the tests: the row's fields and
// the envelope's.
var cdcColumns = []string{"id Int64", "name String", "_version UInt64", "_deleted UInt8", "_sign Int8", "_op String"}

func newCDC(t testing.TB, d config.Debezium, steps []config.Step, cols ...string) *cdc {
	t.Helper()
	if len(cols) == 0 {
		cols = cdcColumns
	}
	if d.Key == nil {
		d.Key = []string{"id"}
	}
	d = (&config.Config{Decode: config.Decode{Debezium: d}}).DebeziumSettings()
	outs := []Output{output(t, "main", cols...)}
	declared := map[string]string{"id": "Int64", "name": "String"}
	maps.Copy(declared, EnvelopeFields)
	rows, err := InputsKnown(steps, outs, declared, map[string]string{"_tombstone": "Bool"})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := Compile(steps, rows, outs)
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewDebezium(d, rows, declared)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SetEnvelope(env); err != nil {
		t.Fatal(err)
	}
	dec, err := json.New(env.Stage(), json.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &cdc{t: t, chain: chain, dec: dec, stage: mkChunk(t, env.Stage()), em: newEmitter(t, outs)}
}

// run decodes one event at offset and runs the chain over it.
func (c *cdc) run(event string, offset int64) (Result, error) {
	c.t.Helper()
	c.stage.Reset()
	if _, err := c.dec.Decode([]byte(event), c.stage); err != nil {
		c.t.Fatalf("decode %s: %v", event, err)
	}
	c.chain.SetOffset(offset)
	return c.chain.Run(c.stage, 0, c.em)
}

// rows runs the events and returns the rows written, "id|name|_version|_deleted|_sign|_op".
func (c *cdc) rows(events ...string) []string {
	c.t.Helper()
	for i, e := range events {
		if _, err := c.run(e, int64(i)); err != nil {
			c.t.Fatalf("event %d: %v", i, err)
		}
	}
	return c.em.rows(0, -1)
}

func pg(op, before, after string, lsn int) string {
	return `{"before":` + before + `,"after":` + after + `,"source":{"connector":"postgresql","lsn":` + itoa(lsn) + `,"ts_ms":1700000000000},"op":"` + op + `","ts_ms":1700000000001}`
}

func itoa(n int) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func same(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\ngot\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestEnvelopeReplacing: c, r and u give the after row, d the before row
// deleted, a key change the old key deleted and the new inserted; the
// version is the LSN.
func TestEnvelopeReplacing(t *testing.T) {
	c := newCDC(t, config.Debezium{}, nil)
	got := c.rows(
		pg("r", `null`, `{"id":1,"name":"a"}`, 10),
		pg("c", `null`, `{"id":2,"name":"b"}`, 20),
		pg("u", `{"id":1,"name":"a"}`, `{"id":1,"name":"a2"}`, 30),
		pg("u", `null`, `{"id":2,"name":"b2"}`, 40),
		pg("u", `{"id":2,"name":"b2"}`, `{"id":3,"name":"b2"}`, 50),
		pg("d", `{"id":1,"name":"a2"}`, `null`, 60),
	)
	same(t, got,
		"1|a|10|0|1|r",
		"2|b|20|0|1|c",
		"1|a2|30|0|1|u",
		"2|b2|40|0|1|u",
		"2|b2|50|1|-1|u",
		"3|b2|50|0|1|u",
		"1|a2|60|1|-1|d",
	)
}

// TestEnvelopeCollapsing: an update cancels the before row and inserts
// the after row, a delete cancels the before row, a key change cancels
// the old key.
func TestEnvelopeCollapsing(t *testing.T) {
	c := newCDC(t, config.Debezium{Mode: config.DebeziumCollapsing}, nil)
	got := c.rows(
		pg("c", `null`, `{"id":1,"name":"a"}`, 10),
		pg("u", `{"id":1,"name":"a"}`, `{"id":1,"name":"a2"}`, 30),
		pg("u", `{"id":1,"name":"a2"}`, `{"id":4,"name":"a2"}`, 40),
		pg("d", `{"id":4,"name":"a2"}`, `null`, 60),
	)
	same(t, got,
		"1|a|10|0|1|c",
		"1|a|30|0|-1|u",
		"1|a2|30|0|1|u",
		"1|a2|40|1|-1|u",
		"4|a2|40|0|1|u",
		"4|a2|60|1|-1|d",
	)
}

// TestEnvelopeMissingBefore: a delete without the key in before, and a
// collapsing update without before, are corrupt records that leave no
// row; a replacing update needs no before.
func TestEnvelopeMissingBefore(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mode  string
		event string
		want  string
	}{
		{"delete without before", "", pg("d", `null`, `null`, 5), "the delete has no before with its key (id)"},
		{"delete with a before without the key", "", pg("d", `{"name":"x"}`, `null`, 5), "the delete has no before with its key (id)"},
		{"collapsing update without before", config.DebeziumCollapsing, pg("u", `null`, `{"id":1,"name":"a"}`, 5), "the update has no before with its key (id)"},
		{"create without after", "", pg("c", `null`, `null`, 5), "the change event (op c) has no after with its key (id)"},
		{"not an event", "", `{"id":1,"name":"a"}`, "not a Debezium change event: it has no op nor payload.op field"},
		{"empty op", "", `{"op":"","after":{"id":1}}`, "op is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCDC(t, config.Debezium{Mode: tt.mode}, nil)
			c.rows(pg("c", `null`, `{"id":9,"name":"z"}`, 1))
			_, err := c.run(tt.event, 2)
			var te *Error
			if !errors.As(err, &te) || te.Reason != ReasonCorrupt || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a %s error with %q", err, ReasonCorrupt, tt.want)
			}
			same(t, c.em.rows(0, -1), "9|z|1|0|1|c")
		})
	}
	c := newCDC(t, config.Debezium{}, nil)
	same(t, c.rows(pg("u", `null`, `{"id":1,"name":"a"}`, 5)), "1|a|5|0|1|u")
}

// TestEnvelopeSkips: truncate, message and unknown operations make no
// row and say why.
func TestEnvelopeSkips(t *testing.T) {
	c := newCDC(t, config.Debezium{}, nil)
	for op, want := range map[string]string{"t": SkipTruncate, "m": SkipMessage, "x": SkipUnknownOp} {
		res, err := c.run(pg(op, `null`, `null`, 3), 0)
		if err != nil || res.Skipped != want || res.Out != 0 {
			t.Errorf("op %s: %+v, %v; want skipped %s", op, res, err, want)
		}
	}
	if rows := c.em.rows(0, -1); len(rows) != 0 {
		t.Fatalf("rows %v", rows)
	}
}

// TestEnvelopeWrapper: auto reads wrapped and unwrapped events; payload
// and none read only theirs.
func TestEnvelopeWrapper(t *testing.T) {
	plain := pg("c", `null`, `{"id":1,"name":"a"}`, 10)
	wrapped := `{"schema":{"type":"struct"},"payload":` + pg("c", `null`, `{"id":2,"name":"b"}`, 20) + `}`
	c := newCDC(t, config.Debezium{}, nil)
	same(t, c.rows(plain, wrapped), "1|a|10|0|1|c", "2|b|20|0|1|c")
	c = newCDC(t, config.Debezium{Wrapper: config.WrapperPayload}, nil)
	same(t, c.rows(wrapped), "2|b|20|0|1|c")
	if _, err := c.run(plain, 1); err == nil || !strings.Contains(err.Error(), "it has no payload.op field") {
		t.Fatalf("plain event under wrapper payload: %v", err)
	}
	c = newCDC(t, config.Debezium{Wrapper: config.WrapperNone}, nil)
	if _, err := c.run(wrapped, 1); err == nil || !strings.Contains(err.Error(), "it has no op field") {
		t.Fatalf("wrapped event under wrapper none: %v", err)
	}
}

func mysql(op, before, after, file string, pos int) string {
	return `{"before":` + before + `,"after":` + after + `,"source":{"connector":"mysql","file":"` + file + `","pos":` + itoa(pos) + `,"ts_ms":1700000000000},"op":"` + op + `"}`
}

// TestEnvelopeVersions: the binlog version orders files before positions;
// ts_ms breaks ties with the offset; auto picks by connector; replays
// give the same version; a missing or oversized position is corrupt.
func TestEnvelopeVersions(t *testing.T) {
	c := newCDC(t, config.Debezium{}, nil)
	got := c.rows(
		mysql("c", `null`, `{"id":1,"name":"a"}`, "mysql-bin.000003", 4000),
		mysql("u", `null`, `{"id":1,"name":"b"}`, "mysql-bin.000004", 4),
	)
	same(t, got, "1|a|"+itoa(3<<32|4000)+"|0|1|c", "1|b|"+itoa(4<<32|4)+"|0|1|u")

	ts := func(op, after string, ms int) string {
		return `{"after":` + after + `,"source":{"connector":"sqlserver","ts_ms":` + itoa(ms) + `},"op":"` + op + `"}`
	}
	c = newCDC(t, config.Debezium{}, nil)
	for _, off := range []int64{7, 7, 1<<20 + 9} { // a replay of offset 7 gives the same version
		if _, err := c.run(ts("c", `{"id":1,"name":"a"}`, 1000), off); err != nil {
			t.Fatal(err)
		}
	}
	v := 1000 << 20
	same(t, c.em.rows(0, -1), "1|a|"+itoa(v|7)+"|0|1|c", "1|a|"+itoa(v|7)+"|0|1|c", "1|a|"+itoa(v|9)+"|0|1|c")

	// version: lsn fixed refuses an event without one.
	c = newCDC(t, config.Debezium{Version: config.VersionLSN}, nil)
	if _, err := c.run(mysql("c", `null`, `{"id":1}`, "b.1", 1), 0); err == nil || !strings.Contains(err.Error(), "has no source.lsn") {
		t.Fatalf("lsn missing: %v", err)
	}
	for _, tt := range []struct{ file, pos, want string }{
		{"mysql-bin.4294967296", "4", "file number of \"mysql-bin.4294967296\" is 2^32 or more"},
		{"mysql-bin.1", "4294967296", "binlog position 4294967296 is 2^32 or more"},
		{"mysql-bin", "4", "does not end in .NUMBER"},
		{"mysql-bin.x1", "4", "does not end in .NUMBER"},
	} {
		c = newCDC(t, config.Debezium{}, nil)
		ev := `{"after":{"id":1},"source":{"connector":"mysql","file":"` + tt.file + `","pos":` + tt.pos + `},"op":"c"}`
		if _, err := c.run(ev, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want %q", tt.file, tt.pos, err, tt.want)
		}
	}
}

// TestEnvelopeChain: later steps see the row's fields and the envelope's;
// a filter drops rows of an event one by one; metadata-like fields and
// source fields pass through.
func TestEnvelopeChain(t *testing.T) {
	steps := []config.Step{filter("_op != 'd' || id > 1", 3), set(4, "label", "concat(name, '@', string(_source.lsn), '/', _source.connector)")}
	c := newCDC(t, config.Debezium{}, steps, "id Int64", "label String", "_deleted UInt8")
	got := c.rows(
		pg("c", `null`, `{"id":1,"name":"a"}`, 10),
		pg("d", `{"id":1,"name":"a"}`, `null`, 11),
		pg("d", `{"id":2,"name":"b"}`, `null`, 12),
	)
	same(t, got, "1|a@10/postgresql|0", "2|b@12/postgresql|1")
}

// TestEnvelopeFailedRowUndoesEvent: when the second row of an event
// fails, the first row is taken back too.
func TestEnvelopeFailedRowUndoesEvent(t *testing.T) {
	steps := []config.Step{set(3, "q", "intDiv(10, id)")}
	c := newCDC(t, config.Debezium{}, steps, "id Int64", "q Int64", "_sign Int8")
	c.rows(pg("c", `null`, `{"id":5,"name":"a"}`, 1))
	// The key change's old row (id 5) passes, the new one (id 0) divides by zero.
	if _, err := c.run(pg("u", `{"id":5,"name":"a"}`, `{"id":0,"name":"a"}`, 2), 1); err == nil {
		t.Fatal("no error")
	}
	same(t, c.em.rows(0, -1), "5|2|1")
}

// TestEnvelopeTombstone: with _tombstone read, a tombstone gives one row
// whose passed-through fields are set and whose row fields are defaults.
func TestEnvelopeTombstone(t *testing.T) {
	steps := []config.Step{filter("!_tombstone", 3)}
	c := newCDC(t, config.Debezium{}, steps)
	c.stage.Reset()
	ti := slices.Index(c.stage.Schema.Names, "_tombstone")
	if ti < 0 {
		t.Fatalf("_tombstone is not staged: %v", c.stage.Schema.Names)
	}
	for i, col := range c.stage.Cols {
		if i == ti {
			chunk.AppendBool(col, true)
			continue
		}
		col.AppendDefault()
	}
	c.stage.Rows++
	res, err := c.chain.Run(c.stage, 0, c.em)
	if err != nil || res.Dropped != 1 || res.Out != 0 {
		t.Fatalf("tombstone: %+v, %v", res, err)
	}
}

// TestEnvelopeNoAllocs: an update of two rows allocates nothing once
// warm, with a key of one field and of two (a key change).
func TestEnvelopeNoAllocs(t *testing.T) {
	for _, key := range [][]string{{"id"}, {"id", "name"}} {
		c := newCDC(t, config.Debezium{Mode: config.DebeziumCollapsing, Key: key}, nil)
		ev := []byte(pg("u", `{"id":1,"name":"a"}`, `{"id":1,"name":"b"}`, 30))
		out := mkChunk(t, c.em.outs[0].Schema)
		em := &fixedEmitter{c: out}
		c.stage.Reset()
		if _, err := c.dec.Decode(ev, c.stage); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if out.Rows > 1000 {
				out.Reset()
			}
			if _, err := c.chain.Run(c.stage, 0, em); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("key %v: %v allocations per event", key, allocs)
		}
	}
}

type fixedEmitter struct{ c *chunk.Chunk }

func (e *fixedEmitter) Chunk(int, int) *chunk.Chunk { return e.c }

// TestEnvelopeEventFields: the source and transaction fields reach the
// rows (0 or "" when the event lacks them), under either prefix.
func TestEnvelopeEventFields(t *testing.T) {
	steps := []config.Step{set(3, "src", `concat(string(_source.ts_ms), "/", string(_source.pos), "/", _source.file, "/", _transaction.id, "/", string(_ts_ms))`)}
	c := newCDC(t, config.Debezium{}, steps, "id Int64", "src String")
	ev := `{"after":{"id":1},"source":{"connector":"mysql","file":"b.000002","pos":77,"ts_ms":5},"op":"c","ts_ms":6,"transaction":{"id":"tx-9"}}`
	got := c.rows(ev, `{"payload":`+ev+`}`, pg("c", "null", `{"id":2}`, 3))
	same(t, got, "1|5/77/b.000002/tx-9/6", "1|5/77/b.000002/tx-9/6", "2|1700000000000/0///1700000000001")
}
