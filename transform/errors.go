package transform

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/names"
)

// Reasons a record fails in the chain. They are stable strings meant for
// metric labels, like decode's reasons.
const (
	// ReasonOutOfRange: a value does not fit its output column (an integer
	// outside the column's range, a string longer than a FixedString, a name
	// that is not one of an Enum's, a time outside DateTime's range), or
	// the arrays of a flattened structure have different lengths.
	ReasonOutOfRange = "out_of_range"
	// ReasonWrongType: a string that must hold a number or a UUID does not
	// (int(s), float(s), a String into a UUID column).
	ReasonWrongType = "wrong_type"
	// ReasonTransform: any other run-time expression error: division or
	// modulo by zero, a time that does not match parse_time's layout, a
	// time outside the representable range.
	ReasonTransform = "transform"
	// ReasonUnroutable: no route rule matched and the route says
	// `unmatched: fail`.
	ReasonUnroutable = "unroutable"
	// ReasonTooLarge: a flatten makes more rows than decode.max_rows_per_record,
	// or rows of more bytes than decode.max_bytes_per_record.
	ReasonTooLarge = "too_large"
)

// Error is the error Run returns for a record it rejects. The pipeline
// maps it onto decode.on_error like a decoding error, with Reason as the
// metric label.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Step names where it failed: "transform[3].set.total",
	// "transform[4].route.rules[1].when", "transform[0].flatten", or an
	// output column: `sink "main" column amount (UInt8)`.
	Step string
	// Err describes the failure.
	Err error
}

// Error formats the error as "STEP: ERR".
func (e *Error) Error() string {
	if e.Step == "" {
		return fmt.Sprintf("transform %s: %v", e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Step, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// CompileError is one problem found when the chain is compiled (or its
// inputs computed): a step and its position in the configuration file.
type CompileError struct {
	// Pos is the position of the expression or step in the file (zero when
	// unknown).
	Pos config.Pos
	// Path is the step's path: transform[2].filter, transform[3].set.total,
	// transform[4].route.rules[1].when.
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error formats e as "FILE:LINE:COL: PATH: MSG", leaving out unknown parts.
func (e *CompileError) Error() string {
	var b strings.Builder
	if e.Pos.Line > 0 {
		if e.Pos.File != "" {
			b.WriteString(e.Pos.File)
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%d:%d: ", e.Pos.Line, e.Pos.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// CompileErrors is every problem found, in step order.
type CompileErrors []*CompileError

// Error returns one line per problem.
func (e CompileErrors) Error() string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual problems.
func (e CompileErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, err := range e {
		out[i] = err
	}
	return out
}

// exprError is an error at a position inside an expression.
type exprError struct {
	pos int // rune offset in the expression; -1 when unknown
	msg string
	// quiet errors follow from an error already reported (a field whose
	// set expression failed to compile) and are not reported again.
	quiet bool
}

func (e *exprError) Error() string { return e.msg }

// exprMsg formats an expression error for a CompileError: the message, the
// position inside the expression and the expression itself.
func exprMsg(text string, e *exprError) string {
	flat := strings.Join(strings.Fields(text), " ")
	if strings.TrimSpace(text) != text || strings.ContainsAny(text, "\n\t\r") {
		flat = strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(text, "\r", " "), "\n", " "), "\t", " ")
	}
	if e.pos < 0 {
		return fmt.Sprintf("%s, in: %s", e.msg, flat)
	}
	line, col := lineCol(text, e.pos)
	if strings.Contains(text, "\n") {
		return fmt.Sprintf("%s, at line %d, column %d of: %s", e.msg, line, col, flat)
	}
	return fmt.Sprintf("%s, at column %d of: %s", e.msg, col, flat)
}

// lineCol converts a rune offset into a 1-based line and column.
func lineCol(text string, pos int) (line, col int) {
	line, col = 1, 1
	n := 0
	for len(text) > 0 && n < pos {
		r, size := utf8.DecodeRuneInString(text)
		text = text[size:]
		n++
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// suggest returns the candidate closest to name within a small edit
// distance, or "".
func suggest(name string, candidates []string) string { return names.Closest(name, candidates) }

// didYouMean is " (did you mean "x"?)" or "".
func didYouMean(name string, candidates []string) string { return names.DidYouMean(name, candidates) }
