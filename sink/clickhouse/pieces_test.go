package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// pieceChunks builds n chunks of rows rows each for a table (id UInt64,
// msg String, fs FixedString(2)), each msg 500 bytes, ids from first.
func pieceChunks(t *testing.T, tg *Target, first, n, rows int) []*chunk.Chunk {
	return pieceChunksFS(t, tg, first, n, rows, -1)
}

// pieceChunksFS is pieceChunks with "abc", too long for the column, as the
// fs of row id bad.
func pieceChunksFS(t *testing.T, tg *Target, first, n, rows, bad int) []*chunk.Chunk {
	t.Helper()
	var out []*chunk.Chunk
	pad := strings.Repeat("x", 490)
	for k := range n {
		vals := make([][]any, rows)
		for i := range vals {
			id := first + k*rows + i
			fs := "ab"
			if id == bad {
				fs = "abc"
			}
			vals[i] = []any{uint64(id), fmt.Sprintf("%010d", id) + pad, fs}
		}
		out = append(out, buildChunk(t, tg, int64(first+k*rows), vals))
	}
	return out
}

// TestChgoPieces: a batch larger than PieceBytes goes as several Native
// blocks of one INSERT, which the server squashes into one part; every row
// arrives whole. A value the encoder refuses in a later piece fails the
// insert with the column named, and inserts nothing although earlier
// pieces were sent. A session whose squashing limit the batch reaches
// sends it as one block.
func TestChgoPieces(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	ctx := context.Background()
	for _, table := range []string{"pieces", "pieces_whole"} {
		srv.Exec(t, "CREATE TABLE default."+table+" (id UInt64, msg String, fs FixedString(2)) ENGINE = MergeTree ORDER BY id")
	}
	parts := func(table string) string {
		// Active and merged-away parts alike: a part per block would
		// show here even after a merge.
		return srv.Query(t, "SELECT count() FROM system.parts WHERE database = 'default' AND table = '"+table+"'")
	}

	c := connect(t, srv, "pieces")
	tg := plan(t, c)
	// 24 chunks of 1,000 rows of about 520 bytes: 12 MiB, three pieces.
	chunks := pieceChunks(t, tg, 0, 24, 1000)
	size := 0
	for _, k := range chunks {
		size += k.Size()
	}
	if size <= 2*PieceBytes {
		t.Fatalf("test batch of %d bytes: want more than two pieces of %d", size, PieceBytes)
	}
	if err := c.Insert(ctx, tg, chunks); err != nil {
		t.Fatalf("insert in pieces: %v", err)
	}
	if got := c.chgo.pieces.Load(); got < 3 {
		t.Errorf("blocks sent as pieces: %d, want at least 3 for %d bytes", got, size)
	}
	if got := srv.Query(t, "SELECT count(), uniqExact(id), min(id), max(id), sum(length(msg)), countIf(toUInt64(substring(msg, 1, 10)) != id) FROM default.pieces"); got != "24000\t24000\t0\t23999\t12000000\t0" {
		t.Errorf("rows inserted in pieces: %q", got)
	}
	if got := parts("pieces"); got != "1" {
		t.Errorf("parts written for one insert in pieces: %s, want 1 (the server squashes an INSERT's blocks)", got)
	}
	// The byte budget counts a piece for the encoded copy of a batch that
	// goes in pieces, the batch itself otherwise.
	if got := c.EncodedCopy(24000, size); got != 2*PieceBytes {
		t.Errorf("encoded copy of a batch in pieces: %d, want %d", got, 2*PieceBytes)
	}
	if got := c.EncodedCopy(10, PieceBytes/2); got != PieceBytes/2 {
		t.Errorf("encoded copy of a small batch: %d, want %d", got, PieceBytes/2)
	}

	// A FixedString(2) value of three bytes in the last chunk: the encoder
	// refuses it when that piece is prepared, after the first pieces went.
	before := c.chgo.pieces.Load()
	bad := pieceChunksFS(t, tg, 100_000, 24, 1000, 100_000+23*1000+7)
	err := c.Insert(ctx, tg, bad)
	var ie *InsertError
	if !errors.As(err, &ie) || ie.Column != "fs" || !strings.Contains(err.Error(), "exceeds FixedString(2)") || !Permanent(err) {
		t.Fatalf("bad value in a later piece: %v (column %q), want a permanent error naming column fs", err, func() string {
			if ie != nil {
				return ie.Column
			}
			return ""
		}())
	}
	if c.chgo.pieces.Load() == before {
		t.Errorf("the refused batch went as one block: the test does not reach a later piece")
	}
	if got := srv.Count(t, "default.pieces"); got != 24000 {
		t.Errorf("rows after the refused batch: %d, want 24000 (the earlier pieces must not be inserted)", got)
	}
	// The pool recovers: the next insert goes in.
	if err := c.Insert(ctx, tg, pieceChunks(t, tg, 200_000, 24, 1000)); err != nil {
		t.Fatalf("insert after the refused batch: %v", err)
	}
	if got := srv.Count(t, "default.pieces"); got != 48000 {
		t.Errorf("rows after the next batch: %d, want 48000", got)
	}

	// A session whose min_insert_block_size_rows the batch reaches: one
	// block, as the server would otherwise write parts before the end of
	// the INSERT.
	w := connect(t, srv, "pieces_whole", func(o *Options) {
		o.Settings = map[string]any{"max_execution_time": int64(60), "min_insert_block_size_rows": int64(10_000)}
	})
	wtg := plan(t, w)
	if err := w.Insert(ctx, wtg, pieceChunks(t, wtg, 0, 24, 1000)); err != nil {
		t.Fatalf("insert as one block: %v", err)
	}
	if got := w.chgo.pieces.Load(); got != 0 {
		t.Errorf("blocks sent as pieces with min_insert_block_size_rows 10000: %d, want 0", got)
	}
	if got := srv.Count(t, "default.pieces_whole"); got != 24000 {
		t.Errorf("rows inserted as one block: %d", got)
	}
	if got := parts("pieces_whole"); got != "1" {
		t.Errorf("parts of one block: %s, want 1", got)
	}
	if l := w.squash(ctx); l.fits(24000, size) || l.rows != 10_000 {
		t.Errorf("squashing limits read with min_insert_block_size_rows 10000: %+v", l)
	}
	if got := w.EncodedCopy(24000, size); got != size {
		t.Errorf("encoded copy of a batch sent whole: %d, want the batch's %d", got, size)
	}

	// WholeBlocks (exactly-once delivery): one block whatever the size.
	e := connect(t, srv, "pieces_whole", func(o *Options) { o.WholeBlocks = true })
	etg := plan(t, e)
	if err := e.Insert(ctx, etg, pieceChunks(t, etg, 100_000, 24, 1000)); err != nil {
		t.Fatalf("insert with WholeBlocks: %v", err)
	}
	if got := e.chgo.pieces.Load(); got != 0 {
		t.Errorf("blocks sent as pieces with WholeBlocks: %d, want 0", got)
	}
	if got := e.EncodedCopy(24000, size); got != size {
		t.Errorf("encoded copy with WholeBlocks: %d, want the batch's %d", got, size)
	}
	if got := srv.Count(t, "default.pieces_whole"); got != 48000 {
		t.Errorf("rows after the WholeBlocks insert: %d, want 48000", got)
	}
}
