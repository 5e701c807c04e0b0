package json

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/etl-project/etl/decode"
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

// skipWS returns the index of the first byte from i that is not
// whitespace. The common case, no whitespace at all, is one comparison:
// every whitespace byte is at most ' ', and so are only control bytes
// besides, which no JSON text has outside strings.
func skipWS(s []byte, i int) int {
	if i < len(s) && s[i] > ' ' {
		return i
	}
	return skipWSLoop(s, i)
}

func skipWSLoop(s []byte, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

// isNumberByte reports the bytes fastjson takes as part of a number.
func isNumberByte(c byte) bool { return numberBytes[c] }

// numberBytes marks the bytes isNumberByte reports: a table, one load per
// byte of a number.
var numberBytes = func() (t [256]bool) {
	for _, c := range []byte("0123456789.-eE+") {
		t[c] = true
	}
	return t
}()

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
	case c-'0' <= 9 || c == '-':
		// The commonest numbers, -?(0|[1-9][0-9]*)(\.[0-9]+)? with at
		// most 19 digits, are read into d.num in the same pass.
		start := i
		j := i
		if c == '-' {
			j++
		}
		ds := j
		var m uint64
		for j < len(s) && s[j]-'0' <= 9 {
			m = m*10 + uint64(s[j]-'0')
			j++
		}
		nd := j - ds
		plain := nd > 0 && (nd == 1 || s[ds] != '0')
		frac := 0
		if plain && j < len(s) && s[j] == '.' {
			fs := j + 1
			for j = fs; j < len(s) && s[j]-'0' <= 9; j++ {
				m = m*10 + uint64(s[j]-'0')
			}
			frac = j - fs
			nd += frac
			plain = frac > 0
		}
		if plain && nd <= 19 && (j == len(s) || !numberBytes[s[j]]) {
			// Field by field: a composite literal is built on the stack
			// and copied with wider loads than its stores, which stalls
			// (store forwarding fails; 7% of a run's CPU).
			n := &d.num
			n.m, n.digits, n.frac, n.neg = m, nd, frac, c == '-'
			n.p, n.n = uintptr(unsafe.Pointer(&s[start])), j-start
			return tokNumber, s[start:j], j, true
		}
		d.num.p = 0
		for i = j; i < len(s) && isNumberByte(s[i]); i++ {
		}
		return tokNumber, s[start:i], i, !loneSign(s[start:i])
	case isNumberByte(c):
		start := i
		for i < len(s) && isNumberByte(s[i]) {
			i++
		}
		d.num.p = 0
		return tokNumber, s[start:i], i, !loneSign(s[start:i])
	}
	return 0, nil, i, false
}

// scanNum is a number scalar read in the same pass as its text: the
// syntax -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most 19 digits, which
// decode.ParseNumber reads as the same parts.
type scanNum struct {
	m      uint64 // the digits of the integer part and the fraction, as one integer
	digits int    // how many: the integer part's and the fraction's
	frac   int    // the fraction's
	neg    bool
	// p and n are the number's text (its first byte's address and its
	// length): d.num is the number of a token only when they are the
	// token's text. An address, not a pointer, so that storing d.num
	// costs no write barrier while the garbage collector runs: scalar
	// sets or clears d.num for every number token, so a stale address is
	// never compared with a token's text.
	p uintptr
	n int
}

// numOf returns d.num when it is the number whose text is text, as scalar
// last read it.
func (d *Decoder) numOf(text []byte) (*scanNum, bool) {
	return &d.num, d.num.p != 0 && len(text) == d.num.n && uintptr(unsafe.Pointer(unsafe.SliceData(text))) == d.num.p
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
				// An escape the server refuses is left to the fastjson
				// path, which refuses the record (checkEscapes).
				n := decode.JSONEscapeLen(s, i)
				if n == 0 {
					return i, false
				}
				i += n - 1
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
