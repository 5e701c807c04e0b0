package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// interpolate replaces environment references in the raw file text:
//
//	${VAR}            value of VAR; an error if VAR is unset
//	${VAR:-default}   default when VAR is unset or empty
//	${VAR:?message}   an error carrying message when VAR is unset or empty
//	$$                a literal $
//
// A $ followed by anything else is kept as is. Comments are left alone.
//
// Substitution is textual but aware of YAML quoting, so that a value cannot
// change the structure of the document: inside "..." the value is escaped
// for a double-quoted string, inside '...' for a single-quoted one. In an
// unquoted value, a value made only of characters that are safe in a plain
// YAML scalar is inserted as is (so numbers and booleans keep their type);
// anything else is inserted as a double-quoted string when the reference is
// the whole value, and rejected otherwise. Line breaks in values are
// escaped, so line numbers of the file are preserved.
func interpolate(src []byte, file string, lookup func(string) (string, bool)) ([]byte, []*Error) {
	in := &interpolator{file: file, lookup: lookup}
	var b strings.Builder
	b.Grow(len(src))
	for i, line := range strings.SplitAfter(string(src), "\n") {
		in.line(&b, line, i+1)
	}
	return []byte(b.String()), in.errs
}

type interpolator struct {
	file   string
	lookup func(string) (string, bool)
	errs   []*Error
}

func (in *interpolator) fail(line int, text string, at int, path, msg string) {
	col := utf8.RuneCountInString(text[:at]) + 1
	in.errs = append(in.errs, &Error{File: in.file, Line: line, Column: col, Path: path, Msg: msg})
}

// line interpolates one line of text (including its newline) into b.
func (in *interpolator) line(b *strings.Builder, text string, lineNo int) {
	var quote byte // '"' or '\'' while inside a quoted scalar
	var last byte  // last non-blank byte outside quotes; 0 at line start
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote == '"' && c == '\\' && i+1 < len(text):
			b.WriteByte(c)
			b.WriteByte(text[i+1])
			i++
			continue
		case quote == '\'' && c == '\'' && i+1 < len(text) && text[i+1] == '\'':
			b.WriteString("''")
			i++
			continue
		case quote != 0 && c == quote:
			quote, last = 0, c
			b.WriteByte(c)
			continue
		case quote == 0 && c == '#' && (i == 0 || isBlank(text[i-1])):
			b.WriteString(text[i:]) // comment: copied verbatim
			return
		case quote == 0 && (c == '"' || c == '\'') && scalarStart(text, i, last):
			quote = c
			b.WriteByte(c)
			continue
		case c == '$' && i+1 < len(text) && text[i+1] == '$':
			b.WriteByte('$')
			i++
			last = '$'
			continue
		case c == '$' && i+1 < len(text) && text[i+1] == '{':
			end := strings.IndexByte(text[i+2:], '}')
			if end < 0 {
				in.fail(lineNo, text, i, "", `unterminated "${"; write "$$" for a literal "$"`)
				b.WriteString(text[i:])
				return
			}
			expr := text[i+2 : i+2+end]
			after := text[i+3+end:]
			if v, name, ok := in.eval(expr, lineNo, text, i); ok {
				in.insert(b, v, name, quote, scalarStart(text, i, last) && wholeValue(after), lineNo, text, i)
			}
			i += 2 + end
			last = '$'
			continue
		}
		b.WriteByte(c)
		if quote == 0 && !isBlank(c) && c != '\n' && c != '\r' {
			last = c
		}
	}
}

// eval resolves one ${...} expression.
func (in *interpolator) eval(expr string, lineNo int, text string, at int) (value, name string, ok bool) {
	n := 0
	for n < len(expr) && (expr[n] == '_' || isAlpha(expr[n]) || (n > 0 && expr[n] >= '0' && expr[n] <= '9')) {
		n++
	}
	name, rest := expr[:n], expr[n:]
	path := "${" + name + "}"
	if name == "" || !(rest == "" || strings.HasPrefix(rest, ":-") || strings.HasPrefix(rest, ":?")) {
		in.fail(lineNo, text, at, "${"+expr+"}", "invalid reference: use ${NAME}, ${NAME:-default} or ${NAME:?message}, where NAME is letters, digits and _")
		return "", "", false
	}
	v, set := in.lookup(name)
	switch {
	case rest == "":
		if !set {
			in.fail(lineNo, text, at, path, fmt.Sprintf("environment variable %s is not set", name))
			return "", "", false
		}
	case strings.HasPrefix(rest, ":-"):
		if v == "" {
			v = rest[2:]
		}
	default: // ":?"
		if v == "" {
			msg := name + " is required"
			if m := strings.TrimSpace(rest[2:]); m != "" {
				msg += ": " + m
			}
			in.fail(lineNo, text, at, path, msg)
			return "", "", false
		}
	}
	return v, name, true
}

// insert writes value v of variable name in the given quoting context.
func (in *interpolator) insert(b *strings.Builder, v, name string, quote byte, whole bool, lineNo int, text string, at int) {
	switch {
	case quote == '"':
		b.WriteString(escapeDouble(v))
	case quote == '\'':
		if strings.ContainsAny(v, "\r\n") {
			in.fail(lineNo, text, at, "${"+name+"}", "the value contains a line break, which a single-quoted string cannot hold; use double quotes")
			return
		}
		b.WriteString(strings.ReplaceAll(v, "'", "''"))
	case plainSafe(v):
		b.WriteString(v)
	case whole:
		b.WriteString(`"` + escapeDouble(v) + `"`)
	default:
		in.fail(lineNo, text, at, "${"+name+"}", "the value contains characters that are special in YAML; put the whole value in double quotes")
	}
}

// scalarStart reports whether position i of text starts a YAML value: at
// the start of the line, after "[", "{" or ",", or after ":", "-" or "?"
// followed by a blank.
func scalarStart(text string, i int, last byte) bool {
	switch last {
	case 0, '[', '{', ',':
		return true
	case ':', '-', '?':
		return i > 0 && isBlank(text[i-1])
	}
	return false
}

// wholeValue reports whether the text after a reference ends the value.
func wholeValue(after string) bool {
	rest := strings.TrimLeft(after, " \t")
	switch {
	case rest == "" || rest[0] == '\n' || rest[0] == '\r':
		return true
	case rest[0] == '#':
		return len(rest) < len(after)
	case rest[0] == ',' || rest[0] == ']' || rest[0] == '}':
		return true
	}
	return false
}

// plainSafe reports whether v reads back as the same plain YAML scalar
// wherever it is inserted: letters, digits, inner spaces and ._/+=~:-
// with no ": ", no trailing ":" and no leading "- " or "? ". Spellings of
// null are excluded so that such a value is not lost.
func plainSafe(v string) bool {
	switch v {
	case "":
		return true
	case "~", "null", "Null", "NULL":
		return false
	}
	if v == "-" || strings.HasPrefix(v, "- ") || strings.HasPrefix(v, "? ") || strings.Contains(v, ": ") || strings.HasSuffix(v, ":") ||
		strings.TrimSpace(v) != v {
		return false
	}
	for _, r := range v {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._/+=~:- ", r) {
			return false
		}
	}
	return true
}

func escapeDouble(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
