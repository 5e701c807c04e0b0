// Package decode turns source record values into rows of a chunk.Chunk.
//
// A Decoder appends the rows one record value produces straight into the
// chunk's typed column buffers; rows are never materialised as maps or
// []any. A record that cannot be decoded leaves the chunk as it was and is
// reported as an *Error whose Reason is a stable metric label.
package decode

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/etl-project/etl/chunk"
)

// Reason classifies why a record could not be decoded. The values are
// stable strings meant for metric labels.
type Reason string

// Reasons a record is rejected.
const (
	// ReasonCorrupt: the record is not valid JSON or not a JSON object, not
	// a valid Avro datum, or has no value at all (a null value, a Kafka
	// tombstone, or an empty one).
	ReasonCorrupt Reason = "corrupt"
	// ReasonWrongType: a value has the wrong JSON type for its column, or a
	// string that must hold a number or a UUID does not.
	ReasonWrongType Reason = "wrong_type"
	// ReasonOutOfRange: a number outside the column's range, a date or time
	// that is malformed or outside the column's range, a string longer than
	// a FixedString, a name or number that is not one of an Enum's, arrays
	// of one Nested structure with different lengths.
	ReasonOutOfRange Reason = "out_of_range"
	// ReasonTooLarge: the record is larger than the configured maximum.
	ReasonTooLarge Reason = "too_large"
	// ReasonInsertRejected: ClickHouse refused the insert of the record's
	// rows (found by bisecting a refused batch; the error is the server's).
	ReasonInsertRejected Reason = "insert_rejected"
	// ReasonUnknownSchema: the record names a writer schema that cannot be
	// had (a schema id the registry does not know, a single-object
	// fingerprint that is not the configured schema's). Avro only.
	ReasonUnknownSchema Reason = "unknown_schema"
	// ReasonSchemaMismatch: the record's writer schema does not match the
	// table as strictly as validate_schema asks. Avro only.
	ReasonSchemaMismatch Reason = "schema_mismatch"
	// ReasonUnrebuildableBlock: under exactly-once delivery, the record
	// belongs to an insert block a previous owner of its partition
	// registered (so it may already be in ClickHouse) whose first records
	// retention deleted: the block cannot be rebuilt identically for the
	// table to drop it as a duplicate.
	ReasonUnrebuildableBlock Reason = "unrebuildable_block"
)

// Error is the error a Decoder returns for a record it rejects.
type Error struct {
	Reason Reason
	// Field is the source field name; empty for errors about the whole
	// record (corrupt, too large).
	Field string
	// Column is the target column name; empty for whole-record errors.
	Column string
	// Type is the target column's type as the server spells it.
	Type string
	// Err describes the offending value.
	Err error
}

// Error formats the error as
//
//	field "amount" -> column amount (UInt32): value 5000000000 out of range
//
// The text is at most MaxErrorBytes long (see TruncateMessage): it goes
// into logs and into the dead-letter record's etl.error header, and a
// record's own bytes quoted in it must not make it as large as the record.
func (e *Error) Error() string {
	if e.Column == "" {
		return TruncateMessage(fmt.Sprintf("record %s: %v", e.Reason, e.Err))
	}
	return TruncateMessage(fmt.Sprintf("field %q -> column %s (%s): %v", e.Field, e.Column, e.Type, e.Err))
}

// MaxErrorBytes bounds the text of a decode error.
const MaxErrorBytes = 1024

// TruncateMessage returns s cut to at most MaxErrorBytes bytes: when it is
// longer, its head up to a rune boundary followed by "… (N bytes more)",
// N being the number of bytes cut off.
func TruncateMessage(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	// The marker's length depends on N, which depends on where the cut
	// is; a cut that leaves room for the longest marker is near enough.
	marker := fmt.Sprintf("… (%d bytes more)", len(s))
	cut := MaxErrorBytes - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes more)", len(s)-cut)
}

// NullValue is the error for a record value that holds no row: nil (a
// Kafka tombstone, told apart from an empty value) or of zero bytes.
func NullValue(value []byte) *Error {
	if value == nil {
		return &Error{Reason: ReasonCorrupt, Err: errors.New("null record value (a Kafka tombstone)")}
	}
	return &Error{Reason: ReasonCorrupt, Err: errors.New("empty record value")}
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Decoder decodes record values into a chunk.
type Decoder interface {
	// Decode appends the rows produced by one record value to c and returns
	// how many. On error nothing is left appended (the chunk is truncated
	// back to its row count before the call) and err is *Error.
	Decode(value []byte, c *chunk.Chunk) (rows int, err error)
}

// ColumnFields checks the options both decoders share and returns the
// source field of each column: fields, or the column names when nil.
func ColumnFields(s *chunk.Schema, fields []string, maxRecordBytes int) ([]string, error) {
	if len(s.Names) != len(s.Types) {
		return nil, fmt.Errorf("decode: schema has %d names and %d types", len(s.Names), len(s.Types))
	}
	if fields == nil {
		fields = s.Names
	}
	if len(fields) != len(s.Types) {
		return nil, fmt.Errorf("decode: %d fields for %d columns", len(fields), len(s.Types))
	}
	if maxRecordBytes < 0 {
		return nil, fmt.Errorf("decode: negative MaxRecordBytes %d", maxRecordBytes)
	}
	return fields, nil
}

// TooLarge is the error for a record value over the configured limit.
func TooLarge(n, limit int) *Error {
	return &Error{Reason: ReasonTooLarge, Err: fmt.Errorf("%d bytes exceed the limit of %d", n, limit)}
}

// RowLimits bound what one record makes: a record that yields rows (lines
// or elements of a framing, a flatten) is too_large when it makes more
// than MaxRows rows, or rows of more than MaxBytes bytes as the chunk
// measures them (chunk.Chunk.Measure). 0 means no limit.
type RowLimits struct {
	MaxRows  int
	MaxBytes int
	// Measured, when set, is told the chunk's whole measured size at each
	// measurement of a record's rows (every RowBytesEvery rows and at the
	// record's end), so that the caller can count the rows as they are
	// made.
	Measured func(size int)
	// Seal, when set, seals a chunk in the middle of a record: when a
	// measurement finds the chunk at SealBytes or more, Seal is given it
	// (just measured, its Measured call made) and returns the chunk the
	// record's rows go on in. The rows already made stay in the sealed
	// chunk: the caller holds them, and takes them back if the record
	// fails (the decoder takes back only the rows of the chunk it holds
	// then). Seal returning its argument means no seal.
	Seal      func(c *chunk.Chunk) *chunk.Chunk
	SealBytes int
}

// RowBytesEvery is how many rows of one record are made between two
// measurements of their bytes against RowLimits.MaxBytes (and once more
// at the record's end): the rows can pass the limit by what fewer than
// RowBytesEvery rows add before the record is refused.
const RowBytesEvery = 64

// TooManyRows is the error for a record that makes more than limit rows;
// n is how many it had made when it was stopped (at least limit+1).
func TooManyRows(n, limit int) *Error {
	return &Error{Reason: ReasonTooLarge, Err: fmt.Errorf(
		"record makes at least %d rows, over the limit of %d rows per record (decode.max_rows_per_record)", n, limit)}
}

// RowsTooLarge is the error for a record whose rows take more than limit
// bytes: rows rows of size bytes when it was stopped.
func RowsTooLarge(rows, size, limit int) *Error {
	return &Error{Reason: ReasonTooLarge, Err: fmt.Errorf(
		"record's rows take at least %d bytes (%d rows), over the limit of %d bytes per record (decode.max_bytes_per_record)", size, rows, limit)}
}

// RowBound checks the rows one record appends to a chunk against
// RowLimits as they are made, and seals the chunk mid-record when
// RowLimits.Seal asks for it. The zero value checks nothing.
type RowBound struct {
	lim   RowLimits
	start int // the current chunk's rows before the record
	base  int // the current chunk's measured size before the record; -1: not measured
	rows  int // the record's rows in chunks sealed before the current one
	bytes int // and their bytes
}

// Start begins a record that appends to c. rowsMayReach is an upper bound
// of the rows the record can make (from its length: a line or an element
// takes at least two bytes); a record that cannot reach RowBytesEvery rows
// is not measured at all, so small records cost nothing.
func (l RowLimits) Start(c *chunk.Chunk, rowsMayReach int) RowBound {
	b := RowBound{lim: l, start: c.Rows, base: -1}
	if (l.MaxBytes > 0 || l.Seal != nil) && rowsMayReach >= RowBytesEvery {
		b.base = c.Measure()
	}
	return b
}

// Check is called after each row the record appended to c. It returns
// the chunk the record's rows go on in: c, or a new one when c was sealed.
func (b *RowBound) Check(c *chunk.Chunk) (*chunk.Chunk, *Error) {
	n := b.Rows(c)
	if b.lim.MaxRows > 0 && n > b.lim.MaxRows {
		return c, TooManyRows(n, b.lim.MaxRows)
	}
	if b.base < 0 || n%RowBytesEvery != 0 {
		return c, nil
	}
	total, err := b.measure(c, n)
	if err != nil || b.lim.Seal == nil || total < b.lim.SealBytes {
		return c, err
	}
	next := b.lim.Seal(c)
	if next != c {
		b.rows += c.Rows - b.start
		b.bytes += total - b.base
		b.start, b.base = next.Rows, next.Measure()
	}
	return next, nil
}

// End is called once the record made all its rows in c.
func (b *RowBound) End(c *chunk.Chunk) *Error {
	if b.base >= 0 {
		_, err := b.measure(c, b.Rows(c))
		return err
	}
	return nil
}

// Rows is the rows the record made, c being the chunk it appends to.
func (b *RowBound) Rows(c *chunk.Chunk) int { return b.rows + c.Rows - b.start }

// Undo takes the record's rows in c back (those of chunks sealed before c
// are the caller's).
func (b *RowBound) Undo(c *chunk.Chunk) { c.Truncate(b.start) }

// measure measures c, tells Measured, and checks the record's n rows
// against MaxBytes; it returns c's measured size.
func (b *RowBound) measure(c *chunk.Chunk, n int) (int, *Error) {
	total := c.Measure()
	if b.lim.Measured != nil {
		b.lim.Measured(total)
	}
	if size := b.bytes + total - b.base; b.lim.MaxBytes > 0 && size > b.lim.MaxBytes {
		return total, RowsTooLarge(n, size, b.lim.MaxBytes)
	}
	return total, nil
}

// NestedGroup is the columns of one Nested structure n as the table
// describes it: Array columns named n.a, n.b, ... The server refuses a
// block whose arrays of one row have different lengths, so every decoder
// checks them after a row.
type NestedGroup struct {
	name string
	cols []int
}

// NestedGroups returns the Nested structures of s that have more than one
// column, grouped as ClickHouse groups them: by the name before the first
// dot, among the Array columns.
func NestedGroups(s *chunk.Schema) []NestedGroup {
	var out []NestedGroup
	at := map[string]int{}
	for i, name := range s.Names {
		dot := strings.IndexByte(name, '.')
		if dot <= 0 || s.Types[i].Kind != chunk.KindArray {
			continue
		}
		n := name[:dot]
		g, ok := at[n]
		if !ok {
			g = len(out)
			at[n] = g
			out = append(out, NestedGroup{name: n})
		}
		out[g].cols = append(out[g].cols, i)
	}
	kept := out[:0]
	for _, g := range out {
		if len(g.cols) > 1 {
			kept = append(kept, g)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// All reports whether every column of g is one of those set in cols.
func (g NestedGroup) All(cols []bool) bool {
	for _, ci := range g.cols {
		if !cols[ci] {
			return false
		}
	}
	return true
}

// lastRowLen is the number of elements in the last row of an Array column.
func lastRowLen(a *chunk.Array) int {
	n := len(a.Ends)
	if n == 0 {
		return 0
	}
	if n == 1 {
		return a.Ends[0]
	}
	return a.Ends[n-1] - a.Ends[n-2]
}

// CheckNested checks that the row just appended to c has arrays of equal
// length in every Nested group. It returns the offending column and the
// out_of_range error (with Reason and Err set), or -1 and nil.
func CheckNested(groups []NestedGroup, c *chunk.Chunk) (int, *Error) {
	for gi := range groups {
		g := &groups[gi]
		first := c.Cols[g.cols[0]].(*chunk.Array)
		want := lastRowLen(first)
		for _, ci := range g.cols[1:] {
			if got := lastRowLen(c.Cols[ci].(*chunk.Array)); got != want {
				return ci, &Error{Reason: ReasonOutOfRange, Err: fmt.Errorf(
					"array of %d elements, but column %s has %d: the arrays of Nested %s must have equal lengths",
					got, c.Schema.Names[g.cols[0]], want, g.name)}
			}
		}
	}
	return -1, nil
}

// SchemaPending is the error a Decoder returns for a record whose schema
// is not available yet (a registry fetch under way, or the tables being
// read again before the first record of a new schema id): the record was
// not decoded and left nothing in the chunk; decode it again once
// SchemaReady is closed. It is not a reason to dead-letter the record.
// Each format's pending error implements it (avro.SchemaPendingError,
// protoschema.PendingError), so the pipeline waits for either the same
// way.
type SchemaPending interface {
	error
	// SchemaReady is closed when the wait for the schema ends (fetched,
	// failed, or the tables read again).
	SchemaReady() <-chan struct{}
}
