package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/etl-project/etl/chunk"
)

// A batch the server refuses for the values of some of its rows (a value
// it cannot parse or that is out of its range, a constraint, a function of
// a MATERIALIZED column that throws) is bisected down to the records
// behind those rows. The halves are inserted in turn; a half that goes in
// is written, one that is refused again is halved again, until it holds
// the rows of one source record (chunk.Mark). That record is handed to
// OnRejected with the server's refusal of its rows alone, and the rest of
// the batch is written. The batch is acknowledged once every part of it is
// written or handed over, so the offsets of the refused records commit only
// after OnRejected returned (for a dead-letter topic: after the broker took
// the copy).
//
// Only refusals caused by the values (RowRejected) are bisected. A refusal
// that every row would meet (a missing table, a column the table lacks, a
// denied user) ends the shard as before. More than MaxRejectedPerBatch
// refused records in one batch are not one record's fault either: the
// bisection stops and the shard fails, as on_error fail would.

// MaxRejectedPerBatch bounds the records one batch's bisection hands to
// OnRejected before the refusal is treated as the batch's, not a record's.
const MaxRejectedPerBatch = 100

// Rejected is a source record whose rows the server refused.
type Rejected struct {
	// Chunk holds the rows [From, To) made from the record; it is
	// read-only.
	Chunk    *chunk.Chunk
	From, To int
	// Topic, Partition and Offset are the record's source position;
	// Offset is -1 when the chunk does not say which record made the rows.
	Topic     string
	Partition int32
	Offset    int64
	Table     string
	// Err is the server's refusal of these rows alone.
	Err error
}

// rowRejectedCodes are the permanent server codes that a value of the
// inserted rows causes: another row would have gone in.
var rowRejectedCodes = map[int32]bool{
	6:   true, // CANNOT_PARSE_TEXT
	26:  true, // CANNOT_PARSE_QUOTED_STRING
	27:  true, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
	38:  true, // CANNOT_PARSE_DATE
	41:  true, // CANNOT_PARSE_DATETIME
	53:  true, // TYPE_MISMATCH (a value of an enum or a conversion)
	69:  true, // ARGUMENT_OUT_OF_BOUND
	70:  true, // CANNOT_CONVERT_TYPE
	72:  true, // CANNOT_PARSE_NUMBER
	117: true, // INCORRECT_DATA
	131: true, // TOO_LARGE_STRING_SIZE
	321: true, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
	349: true, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
	395: true, // FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
	407: true, // DECIMAL_OVERFLOW
	469: true, // VIOLATED_CONSTRAINT
}

// RowRejected reports whether err, a permanent insert error, was caused by
// the values of some rows rather than by the statement, the table or the
// user: a server code of rowRejectedCodes, or a value the encoder could not
// write.
func RowRejected(err error) bool {
	if code, ok := exceptionCode(err); ok {
		return rowRejectedCodes[code]
	}
	var ae *appendError
	return errors.As(err, &ae)
}

// unit is the rows [from, to) of chunk c made from one source record.
type unit struct {
	c        *chunk.Chunk
	from, to int
	offset   int64 // -1: not known
}

// unitsOf splits chunks into the rows of each record. Rows no mark covers
// (chunks built without marks) are units of one row.
func unitsOf(chunks []*chunk.Chunk) []unit {
	var us []unit
	for _, c := range chunks {
		end := 0
		for i := range c.Marks {
			from, to, off := c.RecordRows(i)
			if to > c.Rows {
				break
			}
			us = append(us, unit{c: c, from: from, to: to, offset: off})
			end = to
		}
		for r := end; r < c.Rows; r++ {
			us = append(us, unit{c: c, from: r, to: r + 1, offset: -1})
		}
	}
	return us
}

// bisect inserts b, which the server refused with first, without the
// records whose rows it refuses, handing each of those to OnRejected. It
// returns nil once every row is written or handed over, or the error that
// ends the shard.
func (s *Shard) bisect(ctx context.Context, b *batch, first error) error {
	s.m.bisections.Inc()
	us := unitsOf(b.chunks)
	rejected := 0
	var run func(us []unit, known error) error
	run = func(us []unit, known error) error {
		if known == nil {
			err := s.tryUnits(ctx, us)
			if err == nil || ctx.Err() != nil {
				return err
			}
			if !Permanent(err) || !RowRejected(err) {
				return err
			}
			known = err
		}
		if len(us) == 1 {
			rejected++
			if rejected > MaxRejectedPerBatch {
				return fmt.Errorf("more than %d records of one batch refused, the last: %w", MaxRejectedPerBatch, known)
			}
			return s.reject(ctx, us[0], known)
		}
		mid := len(us) / 2
		if err := run(us[:mid], nil); err != nil {
			return err
		}
		return run(us[mid:], nil)
	}
	err := run(us, first)
	if err == nil {
		s.log.Info("bisected batch written without its refused records",
			slog.Int("rows", b.rows), slog.Int("refused_records", rejected))
	}
	return err
}

// tryUnits inserts copies of the rows of us (consecutive units of one
// chunk share one copy).
func (s *Shard) tryUnits(ctx context.Context, us []unit) error {
	var (
		chunks      []*chunk.Chunk
		rows, bytes int
	)
	for i := 0; i < len(us); {
		j := i + 1
		for j < len(us) && us[j].c == us[i].c && us[j].from == us[j-1].to {
			j++
		}
		part, err := us[i].c.Slice(us[i].from, us[j-1].to)
		if err != nil {
			return &InsertError{Table: s.targetFor(us[i].c.Schema).Name(), Err: err}
		}
		chunks = append(chunks, part)
		rows += part.Rows
		bytes += part.Size()
		i = j
	}
	if rows == 0 {
		return nil
	}
	// The copies are in flight until the attempt ends.
	if s.o.Budget != nil {
		s.o.Budget.Add(int64(bytes))
		defer s.o.Budget.Release(int64(bytes))
	}
	return s.attempt(ctx, chunks, rows, bytes)
}

// reject hands the record of u, whose rows the server refused with err, to
// OnRejected.
func (s *Shard) reject(ctx context.Context, u unit, err error) error {
	s.m.rejected.Inc()
	r := Rejected{
		Chunk: u.c, From: u.from, To: u.to, Offset: u.offset,
		Table: s.targetFor(u.c.Schema).Name(), Err: err,
	}
	for _, sp := range u.c.Spans {
		if u.offset < 0 || (u.offset >= sp.First && u.offset < sp.Next) {
			r.Topic, r.Partition = sp.Topic, sp.Partition
			break
		}
	}
	return s.o.OnRejected(ctx, r)
}
