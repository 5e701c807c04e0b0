package transform

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
)

// TestFlattenLimits: a flatten of more elements than the row limit, or
// whose rows take more bytes than the byte limit (the record's other
// fields copied into every row), fails the record as too_large with the
// count and the limit, and leaves the output chunk as it was; a flatten
// within both limits makes its rows.
func TestFlattenLimits(t *testing.T) {
	outs := []Output{output(t, "o", "item UInt32 <- items", "note String")}
	steps := []config.Step{flatten("items", 1)}
	in, err := Inputs(steps, outs, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	c.Limit(decode.RowLimits{MaxRows: 100, MaxBytes: 64 << 10})
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"items": items(100), "note": "n"})                      // 100 rows: at the limit
	addRow(t, st, map[string]any{"items": items(101), "note": "n"})                      // 101 rows
	addRow(t, st, map[string]any{"items": items(60), "note": strings.Repeat("x", 1000)}) // 60 KB
	addRow(t, st, map[string]any{"items": items(70), "note": strings.Repeat("x", 1000)}) // 70 KB: refused at its end
	addRow(t, st, map[string]any{"items": items(99), "note": strings.Repeat("x", 2000)}) // 200 KB: refused after 64 rows
	e := newEmitter(t, outs)
	clone := c.Clone() // clones share the limits
	check := func(row int, wantOut int, wantErr ...string) {
		t.Helper()
		before := 0
		if ch := e.chunks[[2]int{0, -1}]; ch != nil {
			before = ch.Rows
		}
		res, err := clone.Run(st, row, e)
		if len(wantErr) == 0 {
			if err != nil || res.Out != wantOut {
				t.Fatalf("row %d: %+v, %v; want %d rows", row, res, err, wantOut)
			}
			return
		}
		var te *Error
		if !errors.As(err, &te) || te.Reason != ReasonTooLarge || te.Step != "transform[0].flatten" {
			t.Fatalf("row %d: %v, want too_large at transform[0].flatten", row, err)
		}
		for _, w := range wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("row %d: %q does not say %q", row, err, w)
			}
		}
		if ch := e.chunks[[2]int{0, -1}]; ch.Rows != before {
			t.Fatalf("row %d: the output chunk has %d rows after a refused record, want %d", row, ch.Rows, before)
		}
	}
	check(0, 100)
	check(1, 0, "101 elements", "limit of 100 rows per record")
	check(2, 60)
	before := e.chunks[[2]int{0, -1}].Measure()
	check(3, 0, "the rows of 70 elements take", "limit of 65536 bytes per record")
	check(4, 0, "the rows of 64 elements take", "limit of 65536 bytes per record")
	if got := e.chunks[[2]int{0, -1}].Measure(); got != before {
		t.Fatalf("output chunk size %d after refused records, want %d", got, before)
	}
}

// sealingEmitter is an emitter that takes chunks sealed in the middle of
// a flatten (Sealer), keeping them in order.
type sealingEmitter struct {
	*emitter
	sealed []*chunk.Chunk
}

func (e *sealingEmitter) Seal(sink, shard int, c *chunk.Chunk) *chunk.Chunk {
	k := [2]int{sink, shard}
	if e.chunks[k] != c {
		e.t.Fatalf("Seal given a chunk that is not the sink's current one")
	}
	e.sealed = append(e.sealed, c)
	delete(e.chunks, k)
	return e.Chunk(sink, shard)
}

// TestFlattenSeals: with SealBytes and a Sealer, a flatten's rows go on in
// a new chunk each time its chunk reaches SealBytes (measured every
// decode.RowBytesEvery elements); the rows over the sealed chunks and the
// last are the flatten's rows in order; MaxBytes counts the rows of all
// of them; a flatten that fails takes back only the rows of the chunk it
// ended in.
func TestFlattenSeals(t *testing.T) {
	outs := []Output{output(t, "o", "item UInt32 <- items", "note String")}
	steps := []config.Step{flatten("items", 1)}
	in, err := Inputs(steps, outs, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	c.Limit(decode.RowLimits{MaxRows: 100_000, MaxBytes: 256 << 10, SealBytes: 8 << 10})
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"items": items(1000), "note": strings.Repeat("x", 100)}) // about 110 KB
	addRow(t, st, map[string]any{"items": items(3000), "note": strings.Repeat("x", 100)}) // about 330 KB: too large
	e := &sealingEmitter{emitter: newEmitter(t, outs)}
	if res, err := c.Run(st, 0, e); err != nil || res.Out != 1000 {
		t.Fatalf("1,000 elements: %+v, %v", res, err)
	}
	if len(e.sealed) < 5 {
		t.Fatalf("%d chunks sealed, want a dozen (8 KiB each of about 110 KB)", len(e.sealed))
	}
	want := 0
	for _, k := range append(e.sealed, e.chunks[[2]int{0, -1}]) {
		if k.Size() > 8<<10+64*(4+8+100+16) {
			t.Fatalf("a chunk of %d bytes: over SealBytes by more than 64 rows", k.Size())
		}
		for i := 0; i < k.Rows; i++ {
			if got := cell(k.Cols[0], i); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("row %d holds item %v", want, got)
			}
			want++
		}
	}
	if want != 1000 {
		t.Fatalf("%d rows over the chunks, want 1,000", want)
	}
	before := len(e.sealed)
	_, err = c.Run(st, 1, e)
	var te *Error
	if !errors.As(err, &te) || te.Reason != ReasonTooLarge || !strings.Contains(err.Error(), "limit of 262144 bytes per record") {
		t.Fatalf("3,000 elements of about 330 KB against 256 KiB: %v", err)
	}
	if len(e.sealed) == before {
		t.Fatal("no chunk sealed before the flatten failed")
	}
	if cur := e.chunks[[2]int{0, -1}]; cur.Rows != 0 {
		t.Fatalf("the chunk the failed flatten ended in holds %d rows, want 0", cur.Rows)
	}
}
