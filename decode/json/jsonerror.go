package json

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// fastjson reports a syntax error as a chain of messages, one per level of
// nesting, with the cause last: "cannot parse JSON: cannot parse object:
// cannot parse object value: cannot parse array: ... <cause>; unparsed
// tail: "...". A record nested 300 levels deep gives 15 KB of prefixes
// before the cause. parseError turns that into the cause first.

// parseWrappers are the prefixes fastjson puts before an inner error.
var parseWrappers = [...]string{
	"cannot parse JSON: ",
	"cannot parse object: ",
	"cannot parse object value: ",
	"cannot parse object key: ",
	"cannot parse array: ",
	"cannot parse array value: ",
}

const (
	tailMarker       = `; unparsed tail: `
	unexpectedTail   = `unexpected tail: `
	unexpectedValue  = `unexpected value found: `
	maxShownJSONText = 40
)

// parseError rewrites the error fastjson returned for value: the innermost
// cause first, the nesting depth after it when there is any to speak of,
// then the unparsed tail. Infinity and NaN literals, which fastjson takes
// for a number followed by garbage, are named as what they are.
func parseError(err error, value []byte) error {
	msg := err.Error()
	tail, hasTail := "", false
	if i := strings.LastIndex(msg, tailMarker+`"`); i >= 0 {
		if t, uerr := strconv.Unquote(msg[i+len(tailMarker):]); uerr == nil {
			tail, hasTail = t, true
			msg = msg[:i]
		}
	}
	depth := 0
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range parseWrappers {
			if strings.HasPrefix(msg, p) {
				msg = msg[len(p):]
				trimmed = true
				if p == "cannot parse object: " || p == "cannot parse array: " {
					depth++
				}
			}
		}
	}
	// "unexpected tail" and "unexpected value found" quote the rest of the
	// record, however long.
	for _, p := range [...]string{unexpectedTail, unexpectedValue} {
		if !strings.HasPrefix(msg, p) {
			continue
		}
		if t, uerr := strconv.Unquote(msg[len(p):]); uerr == nil {
			if p == unexpectedTail {
				tail, hasTail = t, true
			}
			msg = p + strconv.Quote(shortText(t))
		}
	}
	if hasTail && len(tail) >= 5 && strings.EqualFold(tail[:5], "inity") &&
		(strings.HasPrefix(msg, "missing ','") || strings.HasPrefix(msg, unexpectedTail)) {
		// fastjson read "Inf" as a number and stopped at "inity".
		lit, at := nonJSONLiteral(value)
		if lit == "" {
			lit = "Infinity"
		}
		if at >= 0 {
			return fmt.Errorf("%s is not a JSON number (at byte %d)", lit, at)
		}
		return fmt.Errorf("%s is not a JSON number", lit)
	}
	var b strings.Builder
	b.WriteString(msg)
	if depth > 1 {
		fmt.Fprintf(&b, " (at nesting depth %d)", depth)
	}
	if hasTail && !strings.HasPrefix(msg, unexpectedTail) {
		b.WriteString(tailMarker)
		b.WriteString(strconv.Quote(shortText(tail)))
	}
	return errors.New(b.String())
}

// shortText is s, or its first and last maxShownJSONText bytes around
// "...".
func shortText(s string) string {
	if len(s) <= 2*maxShownJSONText+3 {
		return s
	}
	return s[:maxShownJSONText] + "..." + s[len(s)-maxShownJSONText:]
}

// nonJSONLiteral finds the first word outside strings that is Infinity,
// Inf or NaN (in any case, with its sign), and returns it and its byte
// offset; "" and -1 when there is none.
func nonJSONLiteral(b []byte) (string, int) {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if !isLetter(c) {
			continue
		}
		j := i
		for j < len(b) && isLetter(b[j]) {
			j++
		}
		w := string(b[i:j])
		if strings.EqualFold(w, "infinity") || strings.EqualFold(w, "inf") || strings.EqualFold(w, "nan") {
			start := i
			if i > 0 && (b[i-1] == '-' || b[i-1] == '+') {
				start = i - 1
			}
			return string(b[start:j]), start
		}
		i = j - 1
	}
	return "", -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
