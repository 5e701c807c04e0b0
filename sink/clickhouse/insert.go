package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/etl-project/etl/chunk"
)

// Insert inserts chunks, built for t.Schema, as one INSERT of t.Query:
// one Native block encoded straight from the chunks' column buffers and
// sent with ch-go (chgo.go), or, for a batch larger than PieceBytes, a few
// blocks the server squashes back into one (pieces.go).
//
// A failed insert inserted nothing: the block is sent whole before the end
// of data, and an INSERT left unfinished (a value the encoder refuses in a
// later piece, a connection cut, the context ending) is dropped by the
// server with its connection. Errors are *InsertError, except that when
// ctx itself is cancelled or past its deadline, ctx.Err() is returned as
// is. Options.InsertTimeout running out is a transient *InsertError. Use
// Permanent to tell whether retrying can help.
func (c *Client) Insert(ctx context.Context, t *Target, chunks []*chunk.Chunk) (err error) {
	name := t.Name()
	if err := checkChunks(t, chunks); err != nil {
		return &InsertError{Table: name, Err: err}
	}
	rows := 0
	for _, ch := range chunks {
		rows += ch.Rows
	}
	if rows == 0 {
		// Chunks whose records were all filtered out carry only source
		// spans: there is nothing to send, and they are done.
		return nil
	}
	ictx := ctx
	if c.opts.InsertTimeout > 0 {
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ctx, c.opts.InsertTimeout)
		defer cancel()
	}
	defer func() {
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			return
		}
		var ie *InsertError
		if code, ok := exceptionCode(err); ok && authCodes[code] != "" && c.opts.PasswordFunc != nil && errors.As(err, &ie) {
			// The password comes from a file: a rotation may be under way
			// (the server's password changed before the mounted file), and
			// the next connection reads the file again.
			ie.Err = &loginRefused{user: c.opts.User, err: ie.Err}
		}
		// The connection's deadline comes from ictx and may fire a
		// moment before ictx reports its own expiry. Another socket
		// timeout (a connection's handshake, after dial_timeout) is not
		// the insert's: it keeps its own message.
		if (ictx.Err() != nil || (errors.Is(err, os.ErrDeadlineExceeded) && nearDeadline(ictx))) && errors.As(err, &ie) {
			ie.Err = fmt.Errorf("insert timeout %s exceeded: %w", c.opts.InsertTimeout, errors.Join(ictx.Err(), ie.Err))
		}
	}()
	return c.insertChgo(ictx, t, chunks)
}

// checkChunks makes sure every chunk was built for t's schema, so a mix-up
// is a clear error and not an index panic or a column shifted by one.
func checkChunks(t *Target, chunks []*chunk.Chunk) error {
	built := t.Schema
	if t.From != nil {
		built = t.From
	}
	n := len(built.Names)
	for k, ch := range chunks {
		if ch.Schema != built && (ch.Schema == nil || !slices.Equal(ch.Schema.Names, built.Names)) {
			return &mismatchError{fmt.Sprintf("chunk %d (source %s) was not built for the target's columns", k, spansString(ch.Spans))}
		}
		if len(ch.Cols) != n {
			return &mismatchError{fmt.Sprintf("chunk %d (source %s) has %d columns, the target %d", k, spansString(ch.Spans), len(ch.Cols), n)}
		}
		for i, col := range ch.Cols {
			if col.Len() != ch.Rows {
				return &mismatchError{fmt.Sprintf("chunk %d (source %s): column %s has %d rows, the chunk %d",
					k, spansString(ch.Spans), built.Names[i], col.Len(), ch.Rows)}
			}
		}
	}
	return nil
}

// spansString names a chunk's source ranges for an error: the first span and
// how many more there are.
func spansString(spans []chunk.Span) string {
	switch len(spans) {
	case 0:
		return "(no source span)"
	case 1:
		return spans[0].String()
	}
	var b strings.Builder
	b.WriteString(spans[0].String())
	fmt.Fprintf(&b, " and %d more span(s)", len(spans)-1)
	return b.String()
}

// nearDeadline reports whether ctx's deadline is less than a second away
// (or passed).
func nearDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < time.Second
}
