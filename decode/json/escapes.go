package json

import (
	"fmt"

	"github.com/etl-project/etl/decode"
)

// JSON string escapes are held to what ClickHouse's JSON input takes,
// never to fastjson's leniency, which keeps an unknown escape as written
// and turns a high surrogate followed by any \u escape into U+FFFD,
// dropping the character that escape holds ("\ud800\u0041" lost its A).
// A record with any of these is refused as corrupt, naming the escape and
// its byte offset:
//
//   - an escape other than \" \\ \/ \b \f \n \r \t \uXXXX (the server drops
//     the backslash of \x: etl does not guess);
//   - \u with fewer than four hex digits (the server refuses it);
//   - a high surrogate (\ud800-\udbff) not followed by a \u escape of a low
//     one (\udc00-\udfff) (the server refuses it);
//   - a low surrogate not preceded by a high one (the server stores it as
//     three bytes of CESU-8, which is not UTF-8: etl refuses it).
//
// The one-pass path leaves every string with a \u escape, and every
// escape it does not know, to the fastjson path; it checks the escapes of
// the strings it skips (escapeLen), so a record is refused or taken
// whichever path reads it.

// checkEscapes returns the corrupt error of the first escape in value
// that decode.JSONEscapeLen refuses, or nil.
func checkEscapes(value []byte) *decode.Error {
	if i := decode.BadJSONEscape(value); i >= 0 {
		return escapeError(value, i)
	}
	return nil
}

// escapeError names the escape at value[i] and why it is refused.
func escapeError(value []byte, i int) *decode.Error {
	end := min(i+6, len(value))
	esc := value[i:end]
	why := "is not a JSON escape"
	if i+1 < len(value) && value[i+1] == 'u' {
		r, ok := decode.Hex4(value, i+2)
		switch {
		case !ok:
			why = "needs four hex digits"
			j := i + 2
			for j < end && isHex(value[j]) {
				j++
			}
			esc = value[i:j]
		case r >= 0xdc00 && r <= 0xdfff:
			why = "is a low surrogate without a high one before it"
		default:
			why = `is a high surrogate not followed by a low one (\udc00-\udfff)`
		}
	} else if i+2 <= len(value) {
		esc = value[i : i+2]
	}
	return &decode.Error{Reason: decode.ReasonCorrupt,
		Err: fmt.Errorf("invalid string escape %q at byte %d: it %s", esc, i, why)}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
