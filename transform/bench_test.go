package transform

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/internal/testenv"
)

// The benchmark of the issue: messages carrying 100 events, flattened,
// then a 5-step chain (2 filters, 3 derived fields) into one output.

const (
	benchEvents  = 100
	benchRecords = 64
)

var benchKinds = []string{"click", "view", "buy", "debug", "scroll"}

func benchSteps() []config.Step {
	return []config.Step{
		flatten("events", 1),
		filter(`events.value % 10 != 0`, 2),
		filter(`events.kind != "debug"`, 3),
		set(4,
			"amount", `events.value * 100`,
			"bucket", `intDiv(events.value, 16)`,
			"key", `concat(user, ":", events.kind)`),
	}
}

func benchOutput(t testing.TB) Output {
	return output(t, "events",
		"id UInt64", "user String", "kind LowCardinality(String) <- events.kind",
		"value Int64 <- events.value", "amount Int64", "bucket Int32", "key String", "ts DateTime")
}

// benchOutputWide is benchOutput with a Nullable(String) and an
// Array(String) column copied from the events, as the nested benchmark's
// table has them.
func benchOutputWide(t testing.TB) Output {
	return output(t, "events",
		"id UInt64", "user String", "kind LowCardinality(String) <- events.kind",
		"value Int64 <- events.value", "amount Int64", "bucket Int32", "key String", "ts DateTime",
		"page Nullable(String) <- events.page", "tags Array(String) <- events.tags")
}

// benchStaging builds the staging chunk of benchRecords records, as the
// decoder would have left it.
func benchStaging(t testing.TB, in *chunk.Schema) *chunk.Chunk {
	st := mkChunk(t, in)
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range benchRecords {
		vals := make([]any, benchEvents)
		kinds := make([]any, benchEvents)
		pages := make([]any, benchEvents)
		tags := make([]any, benchEvents)
		for j := range benchEvents {
			vals[j] = r*1000 + j
			kinds[j] = benchKinds[(r+j)%len(benchKinds)]
			if j%4 != 0 {
				pages[j] = fmt.Sprintf("/product/%d", j)
			}
			tags[j] = []any{"a", "beta", "promo"}[:j%4]
		}
		addRow(t, st, map[string]any{"id": r, "user": fmt.Sprintf("user-%d", r), "ts": ts,
			"events.value": vals, "events.kind": kinds, "events.page": pages, "events.tags": tags})
	}
	return st
}

type oneChunk struct{ c *chunk.Chunk }

func (o *oneChunk) Chunk(int, int) *chunk.Chunk { return o.c }

func benchChain(b *testing.B, outs []Output) {
	steps := benchSteps()
	schemaOf := []Output{benchOutput(b)}
	if len(outs) > 0 {
		schemaOf = outs
	}
	in, err := Inputs(steps, schemaOf, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		b.Fatal(err)
	}
	c.Limit(benchLimits)
	st := benchStaging(b, in)
	e := &oneChunk{}
	if len(outs) > 0 {
		e.c = mkChunk(b, outs[0].Schema)
	}
	rowsOut := 0
	run := func(i int) {
		if e.c != nil && i%benchRecords == 0 {
			e.c.Reset()
		}
		res, err := c.Run(st, i%benchRecords, e)
		if err != nil {
			b.Fatal(err)
		}
		rowsOut += res.Out
		if len(outs) == 0 {
			rowsOut += benchEvents - res.Dropped
		}
	}
	for i := range 2 * benchRecords { // warm up: grow the buffers
		run(i)
	}
	rowsOut = 0
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, cpuOK := testenv.ThreadCPU()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		run(i)
	}
	elapsed := time.Since(start)
	cpu1, _ := testenv.ThreadCPU()
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	if rowsOut > 0 {
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(rowsOut), "ns/row")
		if cpuOK {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(rowsOut), "cpu-ns/row")
		}
		b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(rowsOut), "allocs/row")
		b.ReportMetric(float64(rowsOut)/float64(b.N), "rows/record")
	}
}

// BenchmarkChain is the whole transform of the benchmark: 100
// events per record, flatten, 2 filters, 3 derived fields, appended to one
// 8-column output chunk. One op is one record.
func BenchmarkChain(b *testing.B) {
	benchChain(b, []Output{benchOutput(b)})
}

// benchLimits are the row limits benchChain's chain runs with.
var benchLimits decode.RowLimits

// BenchmarkChainLimited is BenchmarkChain with the default row limits
// (100,000 rows, 64 MiB): the flatten of 100 events is measured twice.
func BenchmarkChainLimited(b *testing.B) {
	benchLimits = decode.RowLimits{MaxRows: 100_000, MaxBytes: 64 << 20}
	defer func() { benchLimits = decode.RowLimits{} }()
	benchChain(b, []Output{benchOutput(b)})
}

// BenchmarkChainWide is BenchmarkChain with a Nullable(String) and an
// Array(String) column copied from each event too.
func BenchmarkChainWide(b *testing.B) {
	benchChain(b, []Output{benchOutputWide(b)})
}

// BenchmarkChainExprOnly runs the same steps without an output: the
// expressions' cost alone, to compare with BenchmarkExprVM.
func BenchmarkChainExprOnly(b *testing.B) {
	benchChain(b, nil)
}

// vmEnv is the environment of expr's own VM for the same expressions.
type vmEnv struct {
	Value int64
	Kind  string
	User  string
}

// BenchmarkExprVM evaluates the same five expressions per event with
// expr's compiler and VM (a reused VM and a struct environment), without
// writing any output.
func BenchmarkExprVM(b *testing.B) {
	srcs := []string{
		`Value % 10 != 0`,
		`Kind != "debug"`,
		`Value * 100`,
		`Value / 16`, // expr has no intDiv; / is float division there too
		`User + ":" + Kind`,
	}
	progs := make([]*vm.Program, len(srcs))
	for i, s := range srcs {
		p, err := expr.Compile(s, expr.Env(vmEnv{}))
		if err != nil {
			b.Fatal(err)
		}
		progs[i] = p
	}
	in := mkSchema(b, "id UInt64", "user String", "ts DateTime", "events.value Array(Int64)", "events.kind Array(String)")
	st := benchStaging(b, in)
	vals := st.Cols[3].(*chunk.Array)
	kinds := st.Cols[4].(*chunk.Array)
	users := st.Cols[1].(*chunk.Strings)
	var machine vm.VM
	env := &vmEnv{}
	rowsOut := 0
	var sink any
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, cpuOK := testenv.ThreadCPU()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		row := i % benchRecords
		env.User = users.Value(row)
		from := 0
		if row > 0 {
			from = vals.Ends[row-1]
		}
		for j := from; j < vals.Ends[row]; j++ {
			env.Value = vals.Inner.(*chunk.Fixed[int64]).Data[j]
			env.Kind = kinds.Inner.(*chunk.Strings).Value(j)
			ok, err := machine.Run(progs[0], env)
			if err != nil {
				b.Fatal(err)
			}
			if !ok.(bool) {
				continue
			}
			ok, _ = machine.Run(progs[1], env)
			if !ok.(bool) {
				continue
			}
			for _, p := range progs[2:] {
				sink, _ = machine.Run(p, env)
			}
			rowsOut++
		}
	}
	elapsed := time.Since(start)
	cpu1, _ := testenv.ThreadCPU()
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	_ = sink
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(rowsOut), "ns/row")
	if cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(rowsOut), "cpu-ns/row")
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(rowsOut), "allocs/row")
}

// TestChainAllocs checks the no-allocation promise of the benchmark chain.
func TestChainAllocs(t *testing.T) {
	steps := benchSteps()
	out := benchOutput(t)
	in, err := Inputs(steps, []Output{out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(steps, in, []Output{out})
	if err != nil {
		t.Fatal(err)
	}
	st := benchStaging(t, in)
	e := &oneChunk{c: mkChunk(t, out.Schema)}
	i := 0
	run := func() {
		if i%benchRecords == 0 {
			e.c.Reset()
		}
		if _, err := c.Run(st, i%benchRecords, e); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 2 * benchRecords {
		run()
	}
	if a := testing.AllocsPerRun(2*benchRecords, run); a != 0 {
		t.Errorf("%v allocations per record", a)
	}
}

// TestFunctionsNoAlloc checks that the functions allocate nothing per row
// once the buffers have grown.
func TestFunctionsNoAlloc(t *testing.T) {
	exprs := []string{
		`upper(s)`, `lower(s)`, `trim(sp)`, `substring(s, 1, 3)`, `concat(s, "-", csv)`, `concat(s, csv, s, csv)`,
		`split(csv, ",")[1]`, `replace(s, "l", "LL")`, `matches(s, "^H[a-z]+")`, `s contains "lo"`,
		`json_string(js, "a.b")`, `json_int(js, "a.n")`, `json_float(js, "a.f")`, `json_bool(js, "a.t")`, `json_has(js, "arr.1")`,
		`format_time(ts, "2006-01-02T15:04:05")`, `parse_time("2024-03-15T13:45:30Z", "RFC3339")`, `truncate(ts, "month")`,
		`to_unix_ms(t64)`, `string(i)`, `string(f)`, `string(ts)`, `int(num)`, `float(num)`, `xxhash64(s)`, `xxhash64(i)`,
		`i in [1, 7]`, `s in ["a", "Hello, World"]`, `n ?? nn ?? 0`, `i > 5 ? upper(s) : lower(s)`, `dec * 2`, `to_unix(d)`,
	}
	s := mkSchema(t, exprCols...)
	var pairs []string
	for i, e := range exprs {
		pairs = append(pairs, fmt.Sprintf("x%d", i), e)
	}
	c, err := Compile([]config.Step{set(1, pairs...)}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := mkChunk(t, s)
	addRow(t, in, exprRow())
	e := newEmitter(t, nil)
	run := func() {
		if _, err := c.Run(in, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		// Find the culprits.
		for _, ex := range exprs {
			c, _ := Compile([]config.Step{set(1, "x", ex)}, s, nil)
			one := func() { c.Run(in, 0, e) }
			one()
			if a := testing.AllocsPerRun(20, one); a != 0 {
				t.Errorf("%s: %v allocations per row", ex, a)
			}
		}
	}
}

// BenchmarkChainNoFlatten is the same 5-step chain on records of one row
// each (no flatten): the per-record cost of Run.
func BenchmarkChainNoFlatten(b *testing.B) {
	steps := []config.Step{
		filter(`value % 10 != 0`, 2),
		filter(`kind != "debug"`, 3),
		set(4, "amount", `value * 100`, "bucket", `intDiv(value, 16)`, "key", `concat(user, ":", kind)`),
	}
	out := output(b, "events", "id UInt64", "user String", "kind LowCardinality(String)",
		"value Int64", "amount Int64", "bucket Int32", "key String", "ts DateTime")
	in, err := Inputs(steps, []Output{out}, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(steps, in, []Output{out})
	if err != nil {
		b.Fatal(err)
	}
	st := mkChunk(b, in)
	const n = 1024
	for i := range n {
		addRow(b, st, map[string]any{"id": i, "user": fmt.Sprintf("user-%d", i%50), "kind": benchKinds[i%len(benchKinds)],
			"value": i, "ts": time.Unix(1700000000, 0)})
	}
	e := &oneChunk{c: mkChunk(b, out.Schema)}
	rowsOut := 0
	run := func(i int) {
		if i%n == 0 {
			e.c.Reset()
		}
		res, err := c.Run(st, i%n, e)
		if err != nil {
			b.Fatal(err)
		}
		rowsOut += res.Out
	}
	for i := range n {
		run(i)
	}
	rowsOut = 0
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0, cpuOK := testenv.ThreadCPU()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		run(i)
	}
	elapsed := time.Since(start)
	cpu1, _ := testenv.ThreadCPU()
	b.StopTimer()
	if rowsOut > 0 {
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(rowsOut), "ns/row")
		if cpuOK {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(rowsOut), "cpu-ns/row")
		}
	}
}
