package clickhouse

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/etl-project/etl/chunk"
)

// An INSERT of the chgo path may carry its batch as several Native blocks
// ("pieces") instead of one. The server squashes the blocks of one INSERT
// into blocks of min_insert_block_size_rows rows or
// min_insert_block_size_bytes bytes before the table writes them
// (SquashingBlockOutputStream in InterpreterInsertQuery, 18.16 and later
// alike), so a batch below both limits still becomes one part per
// partition, written at the end of the INSERT: a failed insert still
// inserted nothing. What pieces change is on this side: only one piece is
// encoded at a time, so the connection's write buffer (and, with
// compression, the compressor's) holds about PieceBytes instead of a copy
// of the whole batch, and stays small enough to be kept between inserts.
//
// A batch is sent whole, as one block, under Options.WholeBlocks
// (exactly-once delivery), when the server's limits could not be read,
// when it would reach either limit (the server would then write parts
// before the end of the INSERT, and a failed insert could leave some of
// its rows behind), and when the session's insert_distributed_sync is set
// (18.16 does not squash a synchronous insert into a Distributed table).

// PieceBytes is about the chunk bytes of each Native block of a batch sent
// in pieces.
const PieceBytes = 4 << 20

// squashLimits are the server's limits of the squashing of one INSERT's
// blocks, for this client's session settings.
type squashLimits struct {
	rows, bytes int64
	// ok: the limits were read and squashing applies to this client's
	// inserts.
	ok bool
}

// squashQuery reads the settings that decide whether an INSERT's blocks
// are squashed. system.settings shows the values of the query's session,
// so the settings configured under sink.clickhouse.settings are counted.
const squashQuery = "SELECT name, value FROM system.settings WHERE name IN " +
	"('min_insert_block_size_rows', 'min_insert_block_size_bytes', 'insert_distributed_sync')"

// squash returns the server's squashing limits, reading them on first use.
// A failed read is not retried: the client's batches then go whole, as
// they always did.
func (c *Client) squash(ctx context.Context) *squashLimits {
	if l := c.squashed.Load(); l != nil {
		return l
	}
	if ctx.Err() != nil {
		// The insert is ending anyway: decide on a later one.
		return nil
	}
	l := c.readSquash(ctx)
	if c.squashed.CompareAndSwap(nil, &l) {
		if l.ok {
			c.log.Debug("an insert's blocks are squashed by the server: large batches go in pieces",
				slog.Int64("min_insert_block_size_rows", l.rows), slog.Int64("min_insert_block_size_bytes", l.bytes))
		}
	}
	return c.squashed.Load()
}

func (c *Client) readSquash(ctx context.Context) squashLimits {
	unread := func(args ...any) squashLimits {
		c.log.Info("the server's squashing settings cannot be read: batches go as one block each", args...)
		return squashLimits{}
	}
	rows, err := c.conn.Query(ctx, squashQuery)
	if err != nil {
		return unread(slog.Any("error", err))
	}
	defer rows.Close()
	var l squashLimits
	seen := 0
	sync := false
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return unread(slog.Any("error", err))
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return unread(slog.String("setting", name), slog.String("value", value))
		}
		switch name {
		case "min_insert_block_size_rows":
			l.rows = n
			seen++
		case "min_insert_block_size_bytes":
			l.bytes = n
			seen++
		case "insert_distributed_sync":
			sync = n != 0
		}
	}
	if rows.Err() != nil || seen != 2 {
		return squashLimits{}
	}
	// Both limits 0: the server does not squash.
	l.ok = !sync && (l.rows > 0 || l.bytes > 0)
	return l
}

// fits reports whether a batch of rows rows and bytes chunk bytes stays
// in the squashing buffer until the end of the INSERT. The server's bytes
// of a block can exceed the chunk's (String's offsets and terminating
// zeros, Array's offsets), so the bytes must be below half its limit.
func (l squashLimits) fits(rows, bytes int) bool {
	return l.ok &&
		(l.rows == 0 || int64(rows) < l.rows) &&
		(l.bytes == 0 || 2*int64(bytes) < l.bytes)
}

// pieces splits chunks into groups of about PieceBytes, leaving out the
// chunks without rows (an empty block would end the INSERT's data). It
// appends to dst and returns it.
func pieces(dst [][]*chunk.Chunk, chunks []*chunk.Chunk) [][]*chunk.Chunk {
	size := 0
	var cur []*chunk.Chunk
	for _, c := range chunks {
		if c.Rows == 0 {
			continue
		}
		cur = append(cur, c)
		size += c.Size()
		if size >= PieceBytes {
			dst = append(dst, cur)
			cur, size = nil, 0
		}
	}
	if len(cur) > 0 {
		dst = append(dst, cur)
	}
	return dst
}

// inPieces reports whether a batch of rows rows and bytes chunk bytes goes
// in pieces under the server's limits, which limits gives (nil: not
// known): the one place that decides it, for the insert and for the byte
// budget's count. limits is called only for a batch that could go in
// pieces.
func (c *Client) inPieces(rows, bytes int, limits func() *squashLimits) bool {
	if c.chgo == nil || c.opts.WholeBlocks || bytes <= PieceBytes {
		return false
	}
	l := limits()
	return l != nil && l.fits(rows, bytes)
}

// EncodedCopy is about the bytes the insert of a batch of rows rows and
// bytes chunk bytes holds in encoded form while it runs: the batch's size
// when it goes as one block, about a piece when it goes in pieces. It does
// not read the server's limits: before the first insert has, it counts
// the batch.
func (c *Client) EncodedCopy(rows, bytes int) int {
	if c.inPieces(rows, bytes, c.squashed.Load) {
		return 2 * PieceBytes // a piece ends with the chunk that passes PieceBytes
	}
	return bytes
}
