package clickhouse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// benchCols are the columns of the benchmark's table (gen.Columns: the
// 6-column event of scripts/bench.sh).
var benchCols = func() []ColumnInfo {
	var out []ColumnInfo
	for _, c := range gen.Columns {
		out = append(out, ColumnInfo{Name: c.Name, Type: c.Type})
	}
	return out
}()

// benchChunks builds rows generated events (gen.Make, as the benchmark
// produces them) into chunks of chunkRows rows for tg (gen.Columns).
func benchChunks(t testing.TB, tg *Target, rows, chunkRows int) []*chunk.Chunk {
	t.Helper()
	var out []*chunk.Chunk
	for first := 0; first < rows; first += chunkRows {
		c, err := chunk.New(tg.Schema)
		if err != nil {
			t.Fatal(err)
		}
		id := c.Cols[0].(*chunk.Fixed[uint64])
		ts := c.Cols[1].(*chunk.Fixed[int64])
		user := c.Cols[2].(*chunk.Fixed[uint32])
		kind := c.Cols[3].(*chunk.Strings)
		amount := c.Cols[4].(*chunk.Fixed[float64])
		note := c.Cols[5].(*chunk.Nullable)
		for i := first; i < first+chunkRows && i < rows; i++ {
			e := gen.Make(1, uint64(i))
			id.Append(e.ID)
			ts.Append(e.TS.Unix())
			user.Append(e.UserID)
			kind.AppendString(e.Kind)
			amount.Append(e.Amount)
			if e.Note == nil {
				note.AppendNull()
			} else {
				note.Inner.(*chunk.Strings).AppendString(*e.Note)
				note.MarkValue()
			}
			c.Rows++
		}
		c.AddRange("events", 0, 1, int64(first), int64(first+c.Rows))
		c.Measure()
		out = append(out, c)
	}
	return out
}

// BenchmarkChgoEncode encodes a 100k-row batch of the benchmark's 6 columns
// as a Native block (native.Encoder over the chunks), without the network.
// The batch is one chunk, or 100 chunks of 1,000 rows as the pipeline
// builds them.
func BenchmarkChgoEncode(b *testing.B) {
	tg, err := Plan("default", "events", benchCols, Mapping{})
	if err != nil {
		b.Fatal(err)
	}
	const rows = 100_000
	for _, chunkRows := range []int{100_000, 1_000} {
		chunks := benchChunks(b, tg, rows, chunkRows)
		b.Run(fmt.Sprintf("chgo/chunk=%d", chunkRows), func(b *testing.B) {
			var buf proto.Buffer
			cn := &chgoConn{}
			blk, err := cn.block(tg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := blk.prepare(tg, chunks); err != nil {
					b.Fatal(err)
				}
				for i := range blk.cols {
					blk.cols[i].EncodeColumn(&buf)
				}
				blk.release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows*b.N), "ns/row")
		})
	}
}

// BenchmarkChgoInsert inserts 100k-row batches of the benchmark's 6
// columns into a real server with lz4, into a Null table (the server decodes the block and drops it) and a
// MergeTree one, from one chunk or 100 chunks of 1,000 rows. It reports
// rows/s, the client's CPU per row (this process) and the server's CPU per
// row (its /proc/PID/stat). "chgo-blocks" is the chgo path sending one
// block per chunk within the one INSERT (not what the sink does: measured
// to compare).
func BenchmarkChgoInsert(b *testing.B) {
	srv := testenv.ClickHouse(b)
	pid, err := serverPID(srv.TCPAddr())
	if err != nil {
		b.Logf("server CPU not measured: %v", err)
	}
	for _, engine := range []string{"Null", "MergeTree ORDER BY id"} {
		ename := strings.Fields(engine)[0]
		table := "chgo_bench_" + strings.ToLower(ename)
		srv.Exec(b, "CREATE TABLE default."+table+" ("+
			"id UInt64, ts DateTime, user_id UInt32, kind String, amount Float64, note Nullable(String)) ENGINE = "+engine)
		for _, chunkRows := range []int{100_000, 1_000} {
			for _, path := range []string{"chgo", "chgo-blocks"} {
				if path == "chgo-blocks" && chunkRows == 100_000 {
					continue
				}
				b.Run(fmt.Sprintf("%s/chunk=%d/%s", ename, chunkRows, path), func(b *testing.B) {
					c := connect(b, srv, table, func(o *Options) { o.Settings, o.Compression = nil, "lz4" })
					tg := plan(b, c)
					const rows = 100_000
					batch := benchChunks(b, tg, rows, chunkRows)
					insert := func() error { return c.Insert(context.Background(), tg, batch) }
					if path == "chgo-blocks" {
						insert = func() error { return insertBlocks(c, tg, batch) }
					}
					if err := insert(); err != nil { // warm up the connection
						b.Fatal(err)
					}
					cpu0, _ := processCPU()
					srv0 := procCPU(pid)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if err := insert(); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					cpu1, _ := processCPU()
					srv1 := procCPU(pid)
					n := float64(rows * b.N)
					b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
					b.ReportMetric(float64(cpu1-cpu0)/n, "client-CPU-ns/row")
					if pid > 0 {
						b.ReportMetric(float64(srv1-srv0)/n, "server-CPU-ns/row")
					}
				})
			}
		}
	}
}

// insertBlocks inserts batch with the chgo path as one INSERT of one
// Native block per chunk.
func insertBlocks(c *Client, tg *Target, batch []*chunk.Chunk) error {
	ctx := context.Background()
	cn, err := c.chgo.get(ctx)
	if err != nil {
		return err
	}
	blk, err := cn.block(tg)
	if err != nil {
		return err
	}
	next := 0
	feed := func(context.Context) error {
		blk.release()
		if next == len(batch) {
			return io.EOF
		}
		next++
		return blk.prepare(tg, batch[next-1:next])
	}
	if err := feed(ctx); err != nil {
		return err
	}
	if err := cn.armCompat("blocks"); err != nil {
		return err
	}
	err = cn.cl.Do(ctx, chgo.Query{Body: tg.Query + " VALUES", Input: blk.input, OnInput: feed, QueryID: "blocks"})
	cn.nc.disarm()
	blk.release()
	c.chgo.put(cn, err)
	return err
}

// serverPID finds the process listening on addr (a local TCP port).
func serverPID(addr string) (int, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", p)
	inode := ""
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" { // LISTEN
				inode = fs[9]
			}
		}
		fh.Close()
	}
	if inode == "" {
		return 0, fmt.Errorf("no listener on %s", addr)
	}
	target := "socket:[" + inode + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if l, err := os.Readlink(fd); err == nil && l == target {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process holds the listener on %s", addr)
}

// procCPU is the CPU time process pid has used.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}
