package json

import (
	"encoding/binary"
	"math/bits"
)

// token is the JSON type of a scalar value.
type token uint8

const (
	tokString token = iota // text is the unescaped content
	tokNumber              // text is the number as written
	tokTrue
	tokFalse
	tokNull
)

// toQuoteOrBackslash returns the index of the first '"' or '\\' in s from
// i, eight bytes at a time, or the index of the last bytes too few for a
// word (from which a byte loop goes on).
func toQuoteOrBackslash(s []byte, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		q, b := x^(lo*'"'), x^(lo*'\\')
		// A byte of q or b is zero where x has a quote or a backslash;
		// the lowest flagged byte is exact (a borrow only flags bytes
		// above a zero byte).
		if t := ((q-lo)&^q | (b-lo)&^b) & hi; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	return i
}

// isWS reports JSON whitespace, as fastjson skips it.
func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func skipWS(s []byte, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

// isNumberByte reports the bytes fastjson takes as part of a number.
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+'
}

// loneSign reports a number token fastjson rejects: a sign alone (it then
// looks for Inf or NaN).
func loneSign(tok []byte) bool {
	return len(tok) == 1 && (tok[0] == '-' || tok[0] == '+')
}

// scalar reads the scalar value at s[i]. A string's content is unescaped
// into the decoder's scratch buffer when it has escapes. ok is false for
// anything the fast path leaves to fastjson.
func (d *Decoder) scalar(s []byte, i int) (t token, text []byte, next int, ok bool) {
	if i >= len(s) {
		return 0, nil, i, false
	}
	switch c := s[i]; {
	case c == '"':
		i++
		start := i
		i = toQuoteOrBackslash(s, i)
		for i < len(s) {
			switch s[i] {
			case '"':
				return tokString, s[start:i], i + 1, true
			case '\\':
				return d.escaped(s, start, i)
			}
			i++
		}
		return 0, nil, i, false
	case c == 't':
		if len(s)-i >= 4 && string(s[i:i+4]) == "true" {
			return tokTrue, nil, i + 4, true
		}
	case c == 'f':
		if len(s)-i >= 5 && string(s[i:i+5]) == "false" {
			return tokFalse, nil, i + 5, true
		}
	case c == 'n':
		if len(s)-i >= 4 && string(s[i:i+4]) == "null" {
			return tokNull, nil, i + 4, true
		}
	case isNumberByte(c):
		start := i
		for i < len(s) && isNumberByte(s[i]) {
			i++
		}
		return tokNumber, s[start:i], i, !loneSign(s[start:i])
	}
	return 0, nil, i, false
}

// escaped continues a string from its first backslash at s[i]: the content
// so far is s[start:i]. Only the two-character escapes are handled.
func (d *Decoder) escaped(s []byte, start, i int) (token, []byte, int, bool) {
	b := append(d.scratch[:0], s[start:i]...)
	for i < len(s) {
		c := s[i]
		if c == '"' {
			d.scratch = b
			return tokString, b, i + 1, true
		}
		if c != '\\' {
			// A run up to the next quote or backslash, copied at once.
			j := toQuoteOrBackslash(s, i+1)
			for j < len(s) && s[j] != '"' && s[j] != '\\' {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '"':
			c = '"'
		case '\\':
			c = '\\'
		case '/':
			c = '/'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			d.scratch = b
			return 0, nil, i, false
		}
		b = append(b, c)
		i += 2
	}
	d.scratch = b
	return 0, nil, i, false
}

// skipScalar skips a scalar value of a field no column reads, accepting
// what fastjson accepts.
func skipScalar(s []byte, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '"':
		for i++; i < len(s); i++ {
			switch s[i] {
			case '"':
				return i + 1, true
			case '\\':
				i++ // fastjson ends a string at a quote after an even run of backslashes
			}
		}
		return i, false
	case c == 't':
		return i + 4, len(s)-i >= 4 && string(s[i:i+4]) == "true"
	case c == 'f':
		return i + 5, len(s)-i >= 5 && string(s[i:i+5]) == "false"
	case c == 'n':
		return i + 4, len(s)-i >= 4 && string(s[i:i+4]) == "null"
	case isNumberByte(c):
		start := i
		for i < len(s) && isNumberByte(s[i]) {
			i++
		}
		return i, !loneSign(s[start:i])
	}
	return i, false
}

// maxSkipDepth is the deepest nesting the fast path skips (the top-level
// object is depth 1, as fastjson counts); deeper values are left to
// fastjson, which refuses nesting beyond fastjson.MaxDepth.
const maxSkipDepth = 256

// skipValue skips the value at s[i] of a field no column reads, arrays and
// objects too, accepting only what fastjson accepts. depth is the value's
// nesting depth.
func skipValue(s []byte, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch s[i] {
	case '[':
		if depth > maxSkipDepth {
			return i, false
		}
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(s, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case ',':
				i = skipWS(s, i+1)
				continue
			case ']':
				return i + 1, true
			}
			return i, false
		}
	case '{':
		if depth > maxSkipDepth {
			return i, false
		}
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = skipScalar(s, i); !ok { // the key, a string
				return i, false
			}
			i = skipWS(s, i)
			if i >= len(s) || s[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(s, skipWS(s, i+1), depth+1); !ok {
				return i, false
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case ',':
				i = skipWS(s, i+1)
				continue
			case '}':
				return i + 1, true
			}
			return i, false
		}
	}
	return skipScalar(s, i)
}

// appendCompact appends s, a JSON value whose syntax is valid, without the
// whitespace outside its strings: what fastjson's MarshalTo writes for the
// value as parsed (strings, keys and numbers as written).
func appendCompact(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' {
					j++ // a quote after an odd run of backslashes is escaped
				}
			}
			dst = append(dst, s[i:min(j+1, len(s))]...)
			i = j
		case !isWS(c):
			dst = append(dst, c)
		}
	}
	return dst
}
