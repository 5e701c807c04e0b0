package clickhouse

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

func TestConnectDescribePlan(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.described (\n"+
		"id UInt64,\n"+
		"msg Nullable(String),\n"+
		"twice UInt64 MATERIALIZED id * 2,\n"+
		"plus UInt64 ALIAS id + 1,\n"+
		"tag String DEFAULT 'none',\n"+
		"amount Decimal(18, 4)\n"+
		") ENGINE = Memory")
	c := connect(t, srv, "described", func(o *Options) {
		o.Compression = "lz4"
		o.Settings = map[string]any{"max_block_size": int64(65536), "max_execution_time": float64(30), "log_queries": true}
	})
	if v := c.ServerVersion(); !strings.HasPrefix(v, "18.16.") {
		t.Errorf("server version %q, want 18.16.x", v)
	}
	// The server's zone, from its hello, is its timezone().
	if tz, want := c.ServerTimezone(), srv.Query(t, "SELECT timezone()"); tz == "" || tz != want {
		t.Errorf("server time zone %q, want %q (timezone())", tz, want)
	}

	ctx := context.Background()
	cols, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 18.16 lists MATERIALIZED and ALIAS columns after the others.
	want := []ColumnInfo{
		{Name: "id", Type: "UInt64"},
		{Name: "msg", Type: "Nullable(String)"},
		{Name: "tag", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "'none'"},
		{Name: "amount", Type: "Decimal(18, 4)"},
		{Name: "twice", Type: "UInt64", DefaultKind: "MATERIALIZED", DefaultExpr: "id * 2"},
		{Name: "plus", Type: "UInt64", DefaultKind: "ALIAS", DefaultExpr: "id + 1"},
	}
	if len(cols) != len(want) {
		t.Fatalf("describe: %+v", cols)
	}
	for i := range want {
		if cols[i] != want[i] {
			t.Errorf("column %d = %+v, want %+v", i, cols[i], want[i])
		}
	}

	tg, err := c.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `default`.`described` (`id`, `msg`, `tag`, `amount`)"; tg.Query != want {
		t.Errorf("query = %s, want %s", tg.Query, want)
	}
	ch := buildChunk(t, tg, 0, [][]any{
		{uint64(1), "a", "t1", "1.5"},
		{uint64(2), nil, "t2", "-0.0001"},
	})
	if err := c.Insert(ctx, tg, []*chunk.Chunk{ch}); err != nil {
		t.Fatal(err)
	}
	got := srv.Query(t, "SELECT id, msg, twice, plus, tag, toString(amount) FROM default.described ORDER BY id")
	if want := "1\ta\t2\t2\tt1\t1.5000\n2\t\\N\t4\t3\tt2\t-0.0001"; got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}

	// A mapping names only the column whose field differs, and the
	// excluded columns are left out: they take the server's DEFAULT.
	c2 := connect(t, srv, "described", func(o *Options) {
		o.Columns, o.Exclude = map[string]string{"id": "event_id"}, []string{"msg", "tag", "amount"}
	})
	tg2, err := c2.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tg2.Fields[0] != "event_id" || len(tg2.Fields) != 1 || tg2.Query != "INSERT INTO `default`.`described` (`id`)" {
		t.Errorf("fields = %v, query %s", tg2.Fields, tg2.Query)
	}
	if err := c2.Insert(ctx, tg2, []*chunk.Chunk{buildChunk(t, tg2, 2, [][]any{{uint64(3)}})}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Query(t, "SELECT msg, tag, amount FROM default.described WHERE id = 3"); got != "\\N\tnone\t0.0000" {
		t.Errorf("defaults = %q", got)
	}

	// A mapping naming a column the table lacks.
	c3 := connect(t, srv, "described", func(o *Options) { o.Columns = map[string]string{"id": "id", "nope": "x"} })
	if _, err := c3.Plan(ctx); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("plan with unknown column: %v", err)
	}

	// An unknown table.
	c4 := connect(t, srv, "missing")
	_, err = c4.Describe(ctx)
	if err == nil || !strings.Contains(err.Error(), "table default.missing does not exist") {
		t.Errorf("describe unknown table: %v", err)
	}
	// An unknown database: the server refuses the connection's handshake.
	_, err = Connect(ctx, Options{Addr: []string{srv.TCPAddr()}, Database: "nodb", Table: "t"}, testLog(t))
	if err == nil || !strings.Contains(err.Error(), "database nodb does not exist") || !Permanent(err) {
		t.Errorf("connect to unknown database: %v", err)
	}
}

// allTypesDDL has a column of every type chunk.NewColumn supports that
// 18.16 can create.
const allTypesDDL = `CREATE TABLE default.all_types (
	row UInt32,
	i8 Int8, i16 Int16, i32 Int32, i64 Int64,
	u8 UInt8, u16 UInt16, u32 UInt32, u64 UInt64,
	f32 Float32, f64 Float64,
	s String, fs FixedString(4), id UUID,
	d Date, dt DateTime,
	e Enum8('a' = 1, 'b' = 2),
	dec Decimal(18, 4),
	ni Nullable(Int64), ns Nullable(String),
	as Array(String), au Array(UInt32), ani Array(Nullable(Int32)), aa Array(Array(UInt8)),
	lc LowCardinality(String)
) ENGINE = Memory`

func TestInsertAllTypes(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	execWithSettings(t, srv, allTypesDDL, url.Values{"allow_experimental_low_cardinality_type": {"1"}})
	c := connect(t, srv, "all_types", func(o *Options) { o.Compression = "zstd" })
	tg := plan(t, c)

	day := func(s string) time.Time {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rows := [][]any{
		{uint32(0), int8(-128), int16(-32768), int32(-2147483648), int64(-9223372036854775808),
			uint8(255), uint16(65535), uint32(4294967295), uint64(18446744073709551615),
			float32(1.5), float64(-2.25),
			"héllo wörld", "abcd", "123e4567-e89b-12d3-a456-426614174000",
			day("2024-02-29"), int64(1700000000),
			"a", "12.3456",
			nil, "x",
			[]any{"a", "b c"}, []any{uint32(1), uint32(4294967295)}, []any{int32(1), nil, int32(-3)},
			[]any{[]any{uint8(1), uint8(2)}, []any{}, []any{uint8(3)}},
			"lc0"},
		{uint32(1), int8(0), int16(0), int32(0), int64(0),
			uint8(0), uint16(0), uint32(0), uint64(0),
			float32(0), float64(0),
			"", "wxyz", "00000000-0000-0000-0000-000000000000",
			day("2000-01-01"), int64(946684800),
			"b", "-0.0001",
			int64(42), nil,
			[]any{}, []any{}, []any{}, []any{},
			""},
		{uint32(2), int8(127), int16(32767), int32(2147483647), int64(9223372036854775807),
			uint8(1), uint16(2), uint32(3), uint64(4),
			float32(-0.5), float64(3.141592653589793),
			"日本語", "ab\x00\x00", "ffffffff-ffff-ffff-ffff-ffffffffffff",
			day("2105-12-31"), int64(4102444799),
			"a", "99999999999999.9999",
			int64(-1), "",
			[]any{""}, []any{uint32(7)}, []any{nil}, []any{[]any{}},
			"lc0"},
	}
	// Two chunks, so one insert appends several chunks per column.
	chunks := []*chunk.Chunk{buildChunk(t, tg, 0, rows[:1]), buildChunk(t, tg, 1, rows[1:])}
	if err := c.Insert(context.Background(), tg, chunks); err != nil {
		t.Fatal(err)
	}
	got := srv.Query(t, "SELECT row, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, s, fs, id, d, dt, e, "+
		"toString(dec), ni, ns, as, au, ani, aa, lc, toTypeName(lc) FROM default.all_types ORDER BY row")
	want := strings.Join([]string{
		"0\t-128\t-32768\t-2147483648\t-9223372036854775808\t255\t65535\t4294967295\t18446744073709551615\t1.5\t-2.25\t" +
			"héllo wörld\tabcd\t123e4567-e89b-12d3-a456-426614174000\t2024-02-29\t2023-11-14 22:13:20\ta\t" +
			"12.3456\t\\N\tx\t['a','b c']\t[1,4294967295]\t[1,NULL,-3]\t[[1,2],[],[3]]\tlc0\tLowCardinality(String)",
		"1\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t" +
			"\twxyz\t00000000-0000-0000-0000-000000000000\t2000-01-01\t2000-01-01 00:00:00\tb\t" +
			"-0.0001\t42\t\\N\t[]\t[]\t[]\t[]\t\tLowCardinality(String)",
		"2\t127\t32767\t2147483647\t9223372036854775807\t1\t2\t3\t4\t-0.5\t3.141592653589793\t" +
			"日本語\tab\\0\\0\tffffffff-ffff-ffff-ffff-ffffffffffff\t2105-12-31\t2099-12-31 23:59:59\ta\t" +
			"99999999999999.9999\t-1\t\t['']\t[7]\t[NULL]\t[[]]\tlc0\tLowCardinality(String)",
	}, "\n")
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				gf, wf := strings.Split(g, "\t"), strings.Split(w, "\t")
				for j := range max(len(gf), len(wf)) {
					if j >= len(gf) || j >= len(wf) || gf[j] != wf[j] {
						t.Errorf("row %d field %d: got %q, want %q", i, j, at(gf, j), at(wf, j))
					}
				}
			}
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<missing>"
}

func TestInsertConversionErrorIsPermanent(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.conv (id UInt64, amount Decimal(18, 4), e Enum8('a' = 1)) ENGINE = Memory")
	c := connect(t, srv, "conv")
	tg := plan(t, c)
	ctx := context.Background()

	err := c.Insert(ctx, tg, []*chunk.Chunk{buildChunk(t, tg, 40, [][]any{{uint64(1), "1.5", "a"}, {uint64(2), "x1.5", "a"}})})
	var ie *InsertError
	if !errors.As(err, &ie) || !Permanent(err) {
		t.Fatalf("bad decimal: err = %v (%T), permanent %v", err, err, Permanent(err))
	}
	for _, s := range []string{"default.conv", "column amount (Decimal(18, 4))", `"x1.5"`, "events/0@1[40,42)"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	err = c.Insert(ctx, tg, []*chunk.Chunk{buildChunk(t, tg, 0, [][]any{{uint64(1), "1", "zz"}})})
	if !Permanent(err) || !strings.Contains(err.Error(), "column e") {
		t.Errorf("bad enum: err = %v, permanent %v", err, Permanent(err))
	}
	if n := srv.Count(t, "default.conv"); n != 0 {
		t.Errorf("%d rows inserted by failed inserts", n)
	}
	// The pool still works after the aborted batches.
	if err := c.Insert(ctx, tg, []*chunk.Chunk{buildChunk(t, tg, 0, [][]any{{uint64(1), "1", "a"}})}); err != nil {
		t.Fatal(err)
	}
}

func TestPermanentOnRealErrors(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.evolving (id UInt64, msg String, extra String) ENGINE = MergeTree ORDER BY id")
	c := connect(t, srv, "evolving")
	tg := plan(t, c)
	ctx := context.Background()
	ch := buildChunk(t, tg, 0, [][]any{{uint64(1), "m", "x"}})
	if err := c.Insert(ctx, tg, []*chunk.Chunk{ch}); err != nil {
		t.Fatal(err)
	}

	// The schema changes under the plan: the server refuses the INSERT.
	srv.Exec(t, "ALTER TABLE default.evolving DROP COLUMN extra")
	err := c.Insert(ctx, tg, []*chunk.Chunk{ch})
	if err == nil {
		t.Fatal("insert of a dropped column succeeded")
	}
	code, _ := exceptionCode(err)
	t.Logf("dropped column: %v (code %d)", err, code)
	if !Permanent(err) {
		t.Errorf("dropped column: Permanent(%v) = false", err)
	}
	if !strings.Contains(err.Error(), "default.evolving") || !strings.Contains(err.Error(), "extra") {
		t.Errorf("error %q does not name table and column", err)
	}

	// A caller's cancelled context is returned as is.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Insert(cctx, tg, []*chunk.Chunk{ch}); !errors.Is(err, context.Canceled) || Permanent(err) {
		t.Errorf("cancelled: err = %v", err)
	}

	// Nothing listens: connection refused is transient, for Connect and for
	// an insert through a pool whose server went away.
	srv.Stop(t)
	err = c.Insert(ctx, tg, []*chunk.Chunk{ch})
	if err == nil || Permanent(err) {
		t.Errorf("server stopped: err = %v, permanent %v", err, Permanent(err))
	}
	t.Logf("insert with server stopped: %v", err)
	err = c.Insert(ctx, tg, []*chunk.Chunk{ch})
	if err == nil || Permanent(err) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("server stopped, second insert: err = %v, permanent %v", err, Permanent(err))
	}
	cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = Connect(cctx, Options{Addr: []string{srv.TCPAddr()}, Table: "evolving", DialTimeout: time.Second}, testLog(t))
	if err == nil || Permanent(err) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("connect refused: err = %v, permanent %v", err, Permanent(err))
	}
}

func TestInsertTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.slow (id UInt64, msg String) ENGINE = Memory")
	c := connect(t, srv, "slow", func(o *Options) { o.InsertTimeout = 500 * time.Millisecond })
	tg := plan(t, c)
	thaw := freeze(t, srv) // returns once every server thread has stopped
	start := time.Now()
	err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 0, 10)})
	elapsed := time.Since(start)
	thaw()
	if err == nil || Permanent(err) || !strings.Contains(err.Error(), "insert timeout") {
		t.Errorf("frozen server: err = %v, permanent %v", err, Permanent(err))
	}
	if elapsed > 3*time.Second {
		t.Errorf("insert gave up after %v, want about 500ms", elapsed)
	}
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 0, 10)}); err != nil {
		t.Errorf("after thaw: %v", err)
	}
}
