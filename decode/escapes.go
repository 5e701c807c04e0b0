package decode

import "bytes"

// JSONEscapeLen returns the length of the valid escape at s[i] (s[i] is a
// backslash): 2 for the two-character escapes, 6 for \uXXXX outside the
// surrogates, 12 for a surrogate pair; 0 for an escape the server refuses
// or alters: ClickHouse's JSON input refuses \u with fewer than four hex
// digits and a high surrogate not followed by a low one, drops the
// backslash of an unknown escape and stores a lone low surrogate as CESU-8.
func JSONEscapeLen(s []byte, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	r, ok := Hex4(s, i+2)
	switch {
	case !ok:
		return 0
	case r < 0xd800 || r > 0xdfff:
		return 6
	case r >= 0xdc00: // a low surrogate first
		return 0
	}
	if i+7 >= len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
		return 0
	}
	if lo, ok := Hex4(s, i+8); !ok || lo < 0xdc00 || lo > 0xdfff {
		return 0
	}
	return 12
}

// Hex4 reads the four hex digits at s[i:].
func Hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// BadJSONEscape returns the offset of the first escape in b that
// JSONEscapeLen refuses, or -1. A backslash is only valid inside a JSON
// string, where each one starts an escape; one outside a string is the
// parser's syntax error.
// Text without a backslash costs one bytes.IndexByte.
func BadJSONEscape(b []byte) int {
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			return -1
		}
		i += k
		n := JSONEscapeLen(b, i)
		if n == 0 {
			return i
		}
		i += n
	}
}
