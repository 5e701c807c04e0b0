package clickhouse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	chgo "github.com/ClickHouse/ch-go"
	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// ClickHouse server error codes the sink refers to by name.
const (
	codeUnknownTable    = 60
	codeUnknownDatabase = 81
)

// authCodes are the server's answers to a login it refuses.
var authCodes = map[int32]string{
	192: "UNKNOWN_USER",
	193: "WRONG_PASSWORD",
	194: "REQUIRED_PASSWORD",
	516: "AUTHENTICATION_FAILED", // 20.x and later
}

// ConfigProblem reports whether err, from Connect or Plan, comes from the
// configuration rather than from the server's state, so that starting
// again cannot help: a refused login (user, password) or a TLS
// verification failure (no trusted CA, a certificate for another host, TLS
// to a port that does not speak it), a column mapping that does not fit
// the table (MappingError).
func ConfigProblem(err error) bool {
	if _, ok := errors.AsType[*MappingError](err); ok {
		return true
	}
	if code, ok := exceptionCode(err); ok {
		_, auth := authCodes[code]
		return auth
	}
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &record)
}

// loginRefused is a login the server refused during an insert, with the
// password read from a password_file (Options.PasswordFunc). It is
// transient: the file is read again at each new connection, and a
// rotation may have changed the server's password before the file.
type loginRefused struct {
	user string
	err  error
}

func (e *loginRefused) Error() string {
	return fmt.Sprintf("the server refuses user %q with the password from password_file (retrying: the file is read again for each new connection): %v", e.user, e.err)
}

func (e *loginRefused) Unwrap() error { return e.err }

// permanentCodes are server exception codes meaning the batch, as planned,
// can never go in: the data does not fit the schema, the schema changed
// under the plan, the statement is wrong, or the user may not write. Retrying
// the same batch would fail the same way. Every other code (and every error
// that is not a server exception, such as connection refused, EOF, timeouts)
// is transient: overload, memory, disk, parts, replication, network.
var permanentCodes = map[int32]string{
	6:   "CANNOT_PARSE_TEXT",
	8:   "THERE_IS_NO_COLUMN",
	10:  "NOT_FOUND_COLUMN_IN_BLOCK",
	16:  "NO_SUCH_COLUMN_IN_TABLE",
	20:  "NUMBER_OF_COLUMNS_DOESNT_MATCH",
	26:  "CANNOT_PARSE_QUOTED_STRING",
	27:  "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
	36:  "BAD_ARGUMENTS",
	38:  "CANNOT_PARSE_DATE",
	41:  "CANNOT_PARSE_DATETIME",
	43:  "ILLEGAL_TYPE_OF_ARGUMENT",
	44:  "ILLEGAL_COLUMN",
	47:  "UNKNOWN_IDENTIFIER",
	48:  "NOT_IMPLEMENTED",
	50:  "UNKNOWN_TYPE",
	53:  "TYPE_MISMATCH",
	60:  "UNKNOWN_TABLE",
	62:  "SYNTAX_ERROR",
	69:  "ARGUMENT_OUT_OF_BOUND",
	70:  "CANNOT_CONVERT_TYPE",
	72:  "CANNOT_PARSE_NUMBER",
	73:  "UNKNOWN_FORMAT",
	81:  "UNKNOWN_DATABASE",
	115: "UNKNOWN_SETTING", // a configured setting the server does not know
	117: "INCORRECT_DATA",
	131: "TOO_LARGE_STRING_SIZE",
	158: "TOO_MANY_ROWS", // a batch over the user's max rows limits
	164: "READONLY",      // the user's profile is read-only
	192: "UNKNOWN_USER",
	193: "WRONG_PASSWORD",
	194: "REQUIRED_PASSWORD",
	195: "IP_ADDRESS_NOT_ALLOWED",
	291: "DATABASE_ACCESS_DENIED",
	321: "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
	349: "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN",
	352: "AMBIGUOUS_COLUMN_NAME",
	368: "BAD_TYPE_OF_FIELD",
	369: "BAD_GET",
	386: "NO_COMMON_TYPE",
	395: "FUNCTION_THROW_IF_VALUE_IS_NON_ZERO", // a throwIf in a column's expression
	396: "TOO_MANY_ROWS_OR_BYTES",
	407: "DECIMAL_OVERFLOW",
	469: "VIOLATED_CONSTRAINT",
	497: "ACCESS_DENIED",
	516: "AUTHENTICATION_FAILED",
}

// missingColumn reports whether err says the statement names a column the
// table lacks.
func missingColumn(err error) bool {
	code, ok := exceptionCode(err)
	return ok && (code == 16 || code == 8 || code == 10 || code == 47)
}

// Permanent reports whether err means the batch can never be inserted as it
// is, so retrying is pointless: a server exception whose code is in
// permanentCodes, a value the encoder refuses, a setting the server cannot
// receive, a server too old to serve, a table whose column types changed
// under the plan, or a chunk that does not match the target.
//
// Everything else is transient and worth retrying: connection refused, EOF,
// resets, dial and insert timeouts, and server codes such as 159
// TIMEOUT_EXCEEDED, 202 TOO_MANY_SIMULTANEOUS_QUERIES, 209 SOCKET_TIMEOUT,
// 210 NETWORK_ERROR, 225 NO_ZOOKEEPER, 241 MEMORY_LIMIT_EXCEEDED,
// 242 TABLE_IS_READ_ONLY, 243 NOT_ENOUGH_SPACE, 252 TOO_MANY_PARTS,
// 319 UNKNOWN_STATUS_OF_INSERT and 999 KEEPER_EXCEPTION.
//
// A cancelled context (context.Canceled) is neither: the caller stopped the
// work. Permanent returns false for it, and callers check their context
// before treating an error as transient.
func Permanent(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := errors.AsType[*loginRefused](err); ok {
		return false
	}
	if code, ok := exceptionCode(err); ok {
		_, perm := permanentCodes[code]
		return perm
	}
	if _, ok := errors.AsType[*mismatchError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*chgoTypeDrift](err); ok {
		return true // the batch fits the plan, not the table as it is now
	}
	if _, ok := errors.AsType[*appendError](err); ok {
		// The encoder's Prepare does no I/O: whatever it refuses, it
		// refuses for the values themselves (an unknown enum name, a bad
		// decimal or UUID string, a FixedString too long).
		return true
	}
	if _, ok := errors.AsType[*settingError](err); ok {
		return true
	}
	_, old := errors.AsType[*oldServerError](err)
	return old
}

// exceptionCode returns the code of the server exception in err's chain:
// ch-go's *chgo.Exception (inserts) or clickhouse-go's *ch.Exception
// (queries and DDL).
func exceptionCode(err error) (int32, bool) {
	if ex, ok := errors.AsType[*chgo.Exception](err); ok {
		return int32(ex.Code), true
	}
	if ex, ok := errors.AsType[*ch.Exception](err); ok {
		return ex.Code, true
	}
	return 0, false
}

// InsertError is a failed insert into Table. Column and Type name the column
// when the failure is tied to one (a value the encoder refuses, a type
// changed under the plan);
// server exceptions name the column and value in their own message.
type InsertError struct {
	Table  string // db.table
	Column string // empty when the error is not tied to one column
	Type   string // the column's type, when Column is set
	// Attempts is how many times the batch was tried (set by Shard).
	Attempts int
	Err      error
}

func (e *InsertError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "insert into %s", e.Table)
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %s (%s)", e.Column, e.Type)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *InsertError) Unwrap() error { return e.Err }

// appendError is a value the encoder refuses (native.Encoder's Prepare).
type appendError struct {
	spans string // the source spans of the chunk holding the value
	err   error
}

func (e *appendError) Error() string {
	if e.spans == "" {
		return e.err.Error()
	}
	return fmt.Sprintf("chunk with source %s: %v", e.spans, e.err)
}

func (e *appendError) Unwrap() error { return e.err }

// mismatchError is a chunk that was not built for the target's schema.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string { return e.msg }
