package clickhouse

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// testLog logs through t, so a failing test shows the sink's logs.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testenv.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// connect opens a client to table in the default database of srv.
func connect(t testing.TB, srv *testenv.CH, table string, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{
		Addr:        []string{srv.TCPAddr()},
		Database:    "default",
		Table:       table,
		DialTimeout: 2 * time.Second,
		Settings:    map[string]any{"max_execution_time": int64(60)},
	}
	for _, m := range mod {
		m(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, o, testLog(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func plan(t testing.TB, c *Client) *Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tg, err := c.Plan(ctx)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return tg
}

// execWithSettings runs a statement over HTTP with settings as URL
// parameters (the HTTP interface's way to set them for one query).
func execWithSettings(t testing.TB, srv *testenv.CH, query string, settings url.Values) {
	t.Helper()
	u := "http://" + srv.HTTPAddr() + "/?" + settings.Encode()
	resp, err := http.Post(u, "text/plain", strings.NewReader(query))
	if err != nil {
		t.Fatalf("exec %s: %v", query, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec %s: HTTP %d: %s", query, resp.StatusCode, body)
	}
}

// appendValue appends one Go value to a chunk column: nil is NULL for a
// Nullable, []any the elements of an Array row.
func appendValue(t testing.TB, col chunk.Column, v any) {
	t.Helper()
	switch c := col.(type) {
	case *chunk.Nullable:
		if v == nil {
			c.AppendNull()
			return
		}
		appendValue(t, c.Inner, v)
		c.MarkValue()
	case *chunk.Array:
		for _, e := range v.([]any) {
			appendValue(t, c.Inner, e)
		}
		c.EndRow()
	case *chunk.Strings:
		c.AppendString(v.(string))
	case *chunk.Fixed[int8]:
		c.Append(v.(int8))
	case *chunk.Fixed[int16]:
		c.Append(v.(int16))
	case *chunk.Fixed[int32]:
		c.Append(v.(int32))
	case *chunk.Fixed[int64]:
		c.Append(v.(int64))
	case *chunk.Fixed[uint8]:
		c.Append(v.(uint8))
	case *chunk.Fixed[uint16]:
		c.Append(v.(uint16))
	case *chunk.Fixed[uint32]:
		c.Append(v.(uint32))
	case *chunk.Fixed[uint64]:
		c.Append(v.(uint64))
	case *chunk.Fixed[float32]:
		c.Append(v.(float32))
	case *chunk.Fixed[float64]:
		c.Append(v.(float64))
	case *chunk.Fixed[bool]:
		c.Append(v.(bool))
	case *chunk.Fixed[time.Time]:
		c.Append(v.(time.Time))
	default:
		t.Fatalf("appendValue: column %T", col)
	}
}

// buildChunk builds a measured chunk for tg from rows of Go values, with
// one span covering offsets [first, first+len(rows)) of partition 0.
func buildChunk(t testing.TB, tg *Target, first int64, rows [][]any) *chunk.Chunk {
	t.Helper()
	c, err := chunk.New(tg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for r, row := range rows {
		if len(row) != len(c.Cols) {
			t.Fatalf("row %d has %d values, schema %d columns", r, len(row), len(c.Cols))
		}
		for i, v := range row {
			appendValue(t, c.Cols[i], v)
		}
		c.Rows++
		c.AddRange("events", 0, 1, first+int64(r), first+int64(r)+1)
	}
	c.Measure()
	return c
}

// idChunk builds a chunk for a table (id UInt64, msg String) with ids
// [first, first+n).
func idChunk(t testing.TB, tg *Target, first, n int) *chunk.Chunk {
	t.Helper()
	rows := make([][]any, n)
	for i := range rows {
		id := uint64(first + i)
		rows[i] = []any{id, fmt.Sprintf("m%d", id)}
	}
	return buildChunk(t, tg, int64(first), rows)
}

// freeze stops srv (SIGSTOP) until the returned thaw is called; a test
// that ends first thaws it on cleanup.
func freeze(t *testing.T, srv *testenv.CH) (thaw func()) {
	t.Helper()
	srv.Freeze(t)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			srv.Thaw(t)
		}
	})
	return func() {
		srv.Thaw(t)
		thawed = true
	}
}

// eventually polls cond until it holds, and fails t once d passes first.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, d, cond)
}
