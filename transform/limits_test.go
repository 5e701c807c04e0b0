package transform

import (
	"errors"
	"strings"
	"testing"

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
