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

// Insert inserts chunks, built for t.Schema, as one INSERT of t.Query. The
// chgo path (chgo.go, the default) sends one Native block encoded straight
// from the chunks. The driver path (Options.Insert "driver", and the inserts
// the chgo path hands over) uses the driver's column API: each column of
// each chunk is appended whole, so rows are never materialised.
//
// The connection is held from PrepareBatch to Send (no
// driver.WithReleaseConnection): the columns are appended in memory right
// after the server sent the insert's header block, so releasing the
// connection in between would only cost a second round trip to reopen the
// INSERT at Send.
//
// A failed insert inserted nothing: the batch is aborted (its connection is
// closed, so the server drops the unfinished INSERT) before any data block is
// sent, and Send sends the whole block at once. Errors are *InsertError,
// except that when ctx itself is cancelled or past its deadline, ctx.Err()
// is returned as is. Options.InsertTimeout running out is a transient
// *InsertError. Use Permanent to tell whether retrying can help.
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
		// The driver's socket deadline comes from ictx and may fire a
		// moment before ictx reports its own expiry. Another socket
		// timeout (a connection's handshake, after dial_timeout) is not
		// the insert's: it keeps its own message.
		if (ictx.Err() != nil || (errors.Is(err, os.ErrDeadlineExceeded) && nearDeadline(ictx))) && errors.As(err, &ie) {
			ie.Err = fmt.Errorf("insert timeout %s exceeded: %w", c.opts.InsertTimeout, errors.Join(ictx.Err(), ie.Err))
		}
	}()

	if c.chgo != nil {
		// The chgo path (chgo.go); it hands over, having inserted
		// nothing, the targets and servers it cannot serve.
		if handled, err := c.insertChgo(ictx, t, chunks); handled {
			return err
		}
	}

	hintStrings(t, chunks)
	batch, err := c.conn.PrepareBatch(ictx, t.Query)
	if err != nil {
		return &InsertError{Table: name, Err: err}
	}
	for i, col := range t.Schema.Names {
		bc := batch.Column(i)
		for _, ch := range chunks {
			if ch.Rows == 0 {
				continue
			}
			if err := bc.Append(driverValue(ch.Cols[t.col(i)])); err != nil {
				_ = batch.Abort()
				return &InsertError{
					Table: name, Column: col, Type: t.Schema.Types[i].Name,
					Err: &appendError{spans: spansString(ch.Spans), err: err},
				}
			}
		}
	}
	if err := batch.Send(); err != nil {
		return &InsertError{Table: name, Err: err}
	}
	return nil
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
