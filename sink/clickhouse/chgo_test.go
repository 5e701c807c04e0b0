package clickhouse

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// chgoTypesDDL has a column of every column type the chunk package
// supports that ClickHouse 18.16 can create (the others are checked byte
// for byte against the driver's encoder in chunk/native_test.go), scalar,
// Nullable, in arrays, in tuples, Nested and LowCardinality.
const chgoTypesDDL = `(
	row UInt32,
	i8 Int8, i16 Int16, i32 Int32, i64 Int64, u8 UInt8, u16 UInt16, u32 UInt32, u64 UInt64,
	f32 Float32, f64 Float64,
	s String, fs FixedString(5), id UUID, d Date, dt DateTime, dtu DateTime('UTC'),
	e8 Enum8('a' = 1, 'b' = -2), e16 Enum16('x' = 1000, 'y' = -1000),
	d9 Decimal(9, 2), d18 Decimal(18, 4), d38 Decimal(38, 10),
	n_i32 Nullable(Int32), n_u64 Nullable(UInt64), n_f Nullable(Float64), n_s Nullable(String),
	n_fs Nullable(FixedString(3)), n_id Nullable(UUID), n_d Nullable(Date), n_dt Nullable(DateTime),
	n_e Nullable(Enum8('a' = 1, 'b' = -2)), n_dec Nullable(Decimal(18, 4)),
	a_s Array(String), a_u Array(UInt64), a_n Array(Nullable(String)), a_a Array(Array(Int16)),
	a_dec Array(Decimal(9, 2)), a_id Array(UUID), a_fs Array(FixedString(2)), a_d Array(Date),
	a_e Array(Enum16('x' = 1000, 'y' = -1000)), a_ni Array(Nullable(Int64)),
	t Tuple(Int32, String, Nullable(Decimal(9, 2))), t2 Tuple(UUID, Array(Nullable(String)), Enum8('a' = 1, 'b' = -2)),
	a_t Array(Tuple(UInt8, FixedString(2))),
	nest Nested(a UInt32, b String, c Nullable(Decimal(18, 4))),
	lc LowCardinality(String), lc_n LowCardinality(Nullable(String)), a_lc Array(LowCardinality(String)),
	lc_u LowCardinality(UInt32), lc_fs LowCardinality(FixedString(2)), lc_d LowCardinality(Date),
	lc_nu LowCardinality(Nullable(UInt64)), lc_f LowCardinality(Float64)
) ENGINE = MergeTree ORDER BY row`

// fillRow appends value number i of type ty to col: values at and near the
// edges of each type, NULL every third row of a Nullable, arrays of 0 to
// 3 elements.
func fillRow(t testing.TB, ty *chunk.Type, col chunk.Column, i int) {
	t.Helper()
	switch ty.Kind {
	case chunk.KindNullable:
		n := col.(*chunk.Nullable)
		if i%3 == 1 {
			n.AppendNull()
			return
		}
		fillRow(t, ty.Elem, n.Inner, i)
		n.MarkValue()
		return
	case chunk.KindLowCardinality:
		fillRow(t, ty.Elem, col, i%5)
		return
	case chunk.KindArray:
		a := col.(*chunk.Array)
		for j := range i % 4 {
			fillRow(t, ty.Elem, a.Inner, i*3+j)
		}
		a.EndRow()
		return
	case chunk.KindTuple:
		tu := col.(*chunk.Tuple)
		for j, et := range ty.Elems {
			fillRow(t, et, tu.Elems[j], i+j)
		}
		tu.EndRow()
		return
	}
	edge := i % 7
	switch c := col.(type) {
	case *chunk.Fixed[int8]:
		c.Append([]int8{-128, 127, 0, -1, 1, 42, -42}[edge])
	case *chunk.Fixed[int16]:
		c.Append([]int16{-32768, 32767, 0, -1, 1, 300, -300}[edge])
	case *chunk.Fixed[int32]:
		c.Append([]int32{-2147483648, 2147483647, 0, -1, 1, 70000, -70000}[edge])
	case *chunk.Fixed[int64]:
		if ty.Kind == chunk.KindDateTime {
			c.Append([]int64{0, 1, 4294967295, 1700000000, 946684800, 2147483648, 86399}[edge])
			return
		}
		c.Append([]int64{-9223372036854775808, 9223372036854775807, 0, -1, 1, 1 << 40, -(1 << 40)}[edge])
	case *chunk.Fixed[uint8]:
		c.Append([]uint8{0, 255, 1, 128, 7, 8, 9}[edge])
	case *chunk.Fixed[uint16]:
		c.Append([]uint16{0, 65535, 1, 32768, 7, 8, 9}[edge])
	case *chunk.Fixed[uint32]:
		c.Append([]uint32{0, 4294967295, 1, 1 << 31, 7, 8, 9}[edge])
	case *chunk.Fixed[uint64]:
		c.Append([]uint64{0, 18446744073709551615, 1, 1 << 63, 7, 8, uint64(i)}[edge])
	case *chunk.Fixed[float32]:
		c.Append([]float32{0, -1.5, 3.25e38, 1e-38, 7, float32(i) / 3, -0.125}[edge])
	case *chunk.Fixed[float64]:
		c.Append([]float64{0, -1.5, 1.7976931348623157e308, 5e-324, 7, float64(i) / 3, -0.125}[edge])
	case *chunk.Fixed[time.Time]:
		c.Append([]time.Time{time.Unix(0, 0).UTC(), time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC),
			time.Date(2038, 1, 19, 0, 0, 0, 0, time.UTC), time.Date(2149, 6, 6, 0, 0, 0, 0, time.UTC)}[edge])
	case *chunk.Strings:
		switch ty.Kind {
		case chunk.KindString:
			c.AppendString([]string{"", "a", "héllo wörld", strings.Repeat("x", 200), "tab\there", "日本語", fmt.Sprintf("s%d", i)}[edge])
		case chunk.KindFixedString:
			c.AppendString([]string{"", "a", "ab", strings.Repeat("z", ty.Len), "\x00b", "é", fmt.Sprint(i % 10)}[edge])
		case chunk.KindUUID:
			c.AppendString([]string{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
				"123e4567-e89b-12d3-a456-426614174000", "{123e4567-e89b-12d3-a456-426614174001}",
				"123E4567E89B12D3A456426614174002", "urn:uuid:123e4567-e89b-12d3-a456-426614174003",
				fmt.Sprintf("00000000-0000-0000-0000-%012d", i)}[edge])
		case chunk.KindDecimal:
			intDigits := ty.Precision - ty.Scale
			big := strings.Repeat("9", intDigits) + "." + strings.Repeat("9", ty.Scale)
			c.AppendString([]string{"0", big, "-" + big, "1.5", "-0.0001", "1e2", fmt.Sprintf("%d.%d", i, i%10)}[edge])
		case chunk.KindEnum8:
			c.AppendString([]string{"a", "b"}[i%2])
		case chunk.KindEnum16:
			c.AppendString([]string{"x", "y"}[i%2])
		default:
			t.Fatalf("fillRow: text of %s", ty.Name)
		}
	default:
		t.Fatalf("fillRow: column %T of %s", col, ty.Name)
	}
}

// typedChunks builds chunks of the given row counts for tg, row r holding
// fillRow(r) in every column but the first, which is the row number.
func typedChunks(t testing.TB, tg *Target, sizes ...int) []*chunk.Chunk {
	t.Helper()
	var out []*chunk.Chunk
	r := 0
	for _, n := range sizes {
		c, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		first := r
		for range n {
			c.Cols[0].(*chunk.Fixed[uint32]).Append(uint32(r))
			for i := 1; i < len(c.Cols); i++ {
				fillRow(t, tg.Schema.Types[i], c.Cols[i], r)
			}
			c.Rows++
			r++
		}
		c.AddRange("events", 0, 1, int64(first), int64(r))
		c.Measure()
		out = append(out, c)
	}
	return out
}

// typesGolden holds the rows of the types table after TestChgoTypes's
// inserts, as the server prints them (SELECT * ... ORDER BY row, tab
// separated). It was written from clickhouse-go's column API, inserting
// the same chunks, and the encoder's rows matched it then.
const typesGolden = "testdata/types_18.16.tsv.gz"

// TestChgoTypes inserts the same chunks into tables of every 18.16 type,
// with each compression, and reads them back: every table holds the rows
// of typesGolden. "auto" on the loopback test server must send
// uncompressed blocks.
func TestChgoTypes(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	lc := url.Values{"allow_experimental_low_cardinality_type": {"1"}}
	comps := []string{"auto", "none", "lz4", "zstd"}
	for _, comp := range comps {
		execWithSettings(t, srv, "CREATE TABLE default.types_"+comp+" "+chgoTypesDDL, lc)
	}
	want := readGzip(t, typesGolden)
	ctx := context.Background()
	for _, comp := range comps {
		c := connect(t, srv, "types_"+comp, func(o *Options) { o.Compression = comp })
		if want := map[string]string{"auto": "none"}[comp]; want != "" && c.opts.Compression != want {
			t.Fatalf("compression %s to %s resolved to %q, want %q", comp, srv.TCPAddr(), c.opts.Compression, want)
		}
		tg := plan(t, c)
		// Several chunks per insert, one of them empty, and two inserts.
		if err := c.Insert(ctx, tg, typedChunks(t, tg, 5, 0, 17, 1)); err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		if err := c.Insert(ctx, tg, typedChunks(t, tg, 300)[0:1]); err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		got := srv.Query(t, "SELECT * FROM default.types_"+comp+" ORDER BY row") + "\n"
		if got == want {
			continue
		}
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		t.Errorf("%s: the table differs from %s (%d and %d rows)", comp, typesGolden, len(gl)-1, len(wl)-1)
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				gf, wf := strings.Split(gl[i], "\t"), strings.Split(wl[i], "\t")
				for j := range min(len(gf), len(wf)) {
					if gf[j] != wf[j] {
						t.Errorf("row %d column %d: %q, want %q", i, j, gf[j], wf[j])
					}
				}
				break
			}
		}
	}
}

// readGzip returns the text of the gzipped file at path.
func readGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChgoErrors: the errors an insert returns name the table and the
// server's exception, and classify (Permanent, missingColumn) by the
// server's code read from ch-go's exception.
func TestChgoErrors(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	const table = "e"
	srv.Exec(t, "CREATE TABLE default."+table+" (id UInt64, msg String, extra String, n UInt8) ENGINE = MergeTree ORDER BY id")
	ctx := context.Background()
	c := connect(t, srv, table)
	tg := plan(t, c)
	row := func(first int64) []*chunk.Chunk {
		return []*chunk.Chunk{buildChunk(t, tg, first, [][]any{{uint64(first), "m", "x", uint8(1)}})}
	}
	check := func(name string, err error, code int32, perm bool, msg string) {
		t.Helper()
		got, _ := exceptionCode(err)
		t.Logf("%s: %v (code %d, permanent %v)", name, err, got, Permanent(err))
		if got != code || Permanent(err) != perm || err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v (code %d, permanent %v); want code %d, permanent %v, a message saying %q",
				name, err, got, Permanent(err), code, perm, msg)
		}
		if _, ok := errors.AsType[*InsertError](err); !ok {
			t.Errorf("%s: %T is not an *InsertError", name, err)
		}
	}
	if err := c.Insert(ctx, tg, row(0)); err != nil {
		t.Fatal(err)
	}
	// A column dropped under the plan: NO_SUCH_COLUMN_IN_TABLE, permanent.
	srv.Exec(t, "ALTER TABLE default."+table+" DROP COLUMN extra")
	err := c.Insert(ctx, tg, row(1))
	check("dropped column", err, 16, true, "insert into default.e: NO_SUCH_COLUMN_IN_TABLE (16): ")
	if !missingColumn(err) {
		t.Errorf("dropped column: missingColumn(%v) = false", err)
	}
	// A column whose type changed under the plan: the INSERT header shows
	// the server's type, and the insert fails before sending data, naming
	// the column and both types; permanent (the shard then converts the
	// batch to the new types).
	srv.Exec(t, "ALTER TABLE default."+table+" ADD COLUMN extra String")
	srv.Exec(t, "ALTER TABLE default."+table+" MODIFY COLUMN n Date")
	check("type changed", c.Insert(ctx, tg, row(2)), 0, true, "column n (UInt8): the column is Date on the server, planned as UInt8")
	// A table dropped under the plan.
	srv.Exec(t, "DROP TABLE default."+table)
	check("table dropped", c.Insert(ctx, tg, row(3)), 60, true, "UNKNOWN_TABLE (60)")
	// Settings: an unknown one, a value this server cannot receive.
	c2 := connect(t, srv, table, func(o *Options) { o.Settings, o.Lazy = map[string]any{"no_such_setting": 1}, true })
	check("unknown setting", c2.Insert(ctx, tg, row(4)), 115, true, "UNKNOWN_SETTING (115)")
	c3 := connect(t, srv, table, func(o *Options) { o.Settings, o.Lazy = map[string]any{"max_execution_time": 1.5}, true })
	check("string setting", c3.Insert(ctx, tg, row(4)), 0, true, "query setting max_execution_time = 1.5")

	// The pool dials its own connections: a server refusing them (a
	// password changed since Connect) is a permanent error, as a refused
	// ping at Connect is.
	srv.Exec(t, "CREATE TABLE default.pw (id UInt64, msg String) ENGINE = Memory")
	c = connect(t, srv, "pw")
	tg = plan(t, c)
	c.chgo.close()
	c.chgo.closed = false
	c.chgo.secret = &secret{last: "nope"} // a password given in the configuration, not a password_file
	check("wrong password", c.Insert(ctx, tg, []*chunk.Chunk{idChunk(t, tg, 0, 1)}), 193, true, "WRONG_PASSWORD (193)")
}

// TestChgoCancel: a caller's context ending while an insert waits on a
// frozen server ends the insert at once, and the pool recovers.
func TestChgoCancel(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.cancel (id UInt64, msg String) ENGINE = Memory")
	c := connect(t, srv, "cancel")
	tg := plan(t, c)
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 0, 10)}); err != nil {
		t.Fatal(err)
	}
	thaw := freeze(t, srv) // returns once every server thread has stopped
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err := c.Insert(ctx, tg, []*chunk.Chunk{idChunk(t, tg, 10, 10)})
	elapsed := time.Since(start)
	thaw()
	if !errors.Is(err, context.Canceled) || Permanent(err) {
		t.Errorf("cancelled insert: err = %v", err)
	}
	if elapsed > 1500*time.Millisecond {
		t.Errorf("cancelled insert returned after %v", elapsed)
	}
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 20, 10)}); err != nil {
		t.Errorf("after cancel: %v", err)
	}
	if n := srv.Count(t, "default.cancel"); n != 20 {
		t.Errorf("%d rows, want 20 (the cancelled insert inserted nothing)", n)
	}
}

// TestChgoPoolRecovers: after the server restarts, the idle connections
// it dropped are not used: the next insert succeeds at once.
func TestChgoPoolRecovers(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.restart (id UInt64, msg String) ENGINE = MergeTree ORDER BY id")
	c := connect(t, srv, "restart")
	tg := plan(t, c)
	for i := range 3 {
		if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, i*10, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop(t)
	if err := c.Ping(context.Background()); err == nil {
		t.Error("Ping of a stopped server succeeded")
	}
	srv.Start(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Errorf("Ping after a restart: %v", err)
	}
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 30, 10)}); err != nil {
		t.Errorf("first insert after a restart: %v", err)
	}
	// A connection idle for long is pinged first; one that does not
	// answer is replaced.
	c.chgo.mu.Lock()
	idle := len(c.chgo.idle)
	for _, cn := range c.chgo.idle {
		cn.used = time.Now().Add(-time.Minute)
	}
	c.chgo.mu.Unlock()
	if idle != 1 {
		t.Errorf("%d idle connections, want 1", idle)
	}
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 40, 10)}); err != nil {
		t.Errorf("insert on a pinged connection: %v", err)
	}
	srv.Freeze(t) // returns once every server thread has stopped
	c.chgo.mu.Lock()
	for _, cn := range c.chgo.idle {
		cn.used = time.Now().Add(-time.Minute)
	}
	c.chgo.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := c.Insert(ctx, tg, []*chunk.Chunk{idChunk(t, tg, 50, 10)})
	cancel()
	srv.Thaw(t)
	if err == nil {
		t.Error("insert into a frozen server succeeded")
	}
	if err := c.Insert(context.Background(), tg, []*chunk.Chunk{idChunk(t, tg, 50, 10)}); err != nil {
		t.Errorf("after thaw: %v", err)
	}
	if n := srv.Count(t, "default.restart"); n != 60 {
		t.Errorf("%d rows, want 60", n)
	}
}

// TestChgoPlainOnOldServer documents why chgo_compat.go exists: without
// it, ch-go cannot run a query on a server older than 19.9.
func TestChgoPlainOnOldServer(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	ctx := context.Background()
	cl, err := chgo.Dial(ctx, chgo.Options{Address: srv.TCPAddr(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rev := cl.ServerInfo().Revision
	err = cl.Do(ctx, chgo.Query{Body: "SELECT 1", Result: proto.Results{{Name: "1", Data: new(proto.ColUInt8)}}})
	t.Logf("server revision %d, plain ch-go: %v", rev, err)
	if rev >= chgoRevClientInfo {
		t.Skipf("server revision %d: ch-go needs no help", rev)
	}
	if !chgo.IsErr(err, proto.ErrUnknownSetting) {
		t.Errorf("ch-go against revision %d: %v, want UNKNOWN_SETTING (the shim's reason to exist)", rev, err)
	}
}

// TestChgoEncodedSize compares the bytes the chgo path encodes for a batch
// with what the shard counts in the byte budget while it is in an insert
// (the chunks' Size): the budget's estimate of the insert's copy holds.
func TestChgoEncodedSize(t *testing.T) {
	tg, err := Plan("default", "events", benchCols, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	chunks := benchChunks(t, tg, 100_000, 1_000)
	size := 0
	for _, c := range chunks {
		size += c.Size()
	}
	cn := &chgoConn{}
	b, err := cn.block(tg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.prepare(tg, chunks); err != nil {
		t.Fatal(err)
	}
	enc := b.encodedSize()
	b.release()
	t.Logf("batch of %d rows: chunks hold %d bytes, the encoded block %d (%.0f%%)", 100_000, size, enc, 100*float64(enc)/float64(size))
	if enc > size {
		t.Errorf("encoded block (%d bytes) larger than the chunks (%d)", enc, size)
	}
}

// encodedSize is the size of the block's encoded columns (for tests).
func (b *chgoBlock) encodedSize() int {
	n := 0
	for i := range b.cols {
		n += len(b.cols[i].enc.AppendNative(nil))
	}
	return n
}
