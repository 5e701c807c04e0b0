// Package chunk holds columnar chunks: the unit of data between the pipeline
// workers that encode records and the sink workers that insert them.
//
// A Chunk is a set of typed column buffers, one per target column, plus the
// source offset spans the rows came from. Columns are built by appending one
// value at a time (decoders) and read back whole (sinks) through their
// exported buffers, so rows are never materialised as []any. The package
// knows ClickHouse's types but no ClickHouse client: the wire encodings
// (the driver's column values, the Native format) and the conversion of a
// DEFAULT value read from the server are the sink's (sink/clickhouse).
package chunk

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Kind is the base kind of a ClickHouse column type.
type Kind int

// Column kinds understood by the encoder.
const (
	KindInvalid Kind = iota
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindUInt8
	KindUInt16
	KindUInt32
	KindUInt64
	KindFloat32
	KindFloat64
	KindString
	KindFixedString
	KindUUID
	KindBool
	KindDate
	KindDateTime
	KindEnum8
	KindEnum16
	KindDecimal
	KindNullable
	KindArray
	KindLowCardinality
	KindDate32
	KindDateTime64
	KindIPv4
	KindIPv6
	KindInt128
	KindInt256
	KindUInt128
	KindUInt256
	KindMap
	KindTuple
)

// kindNames maps a type's name to its kind: the composite types here, the
// scalar ones in their families' files (intNames, floatNames, timeNames,
// textNames, decimalNames).
var kindNames = func() map[string]Kind {
	m := map[string]Kind{
		"Nullable": KindNullable, "Array": KindArray, "LowCardinality": KindLowCardinality,
		"Map": KindMap, "Tuple": KindTuple,
		// Nested(a T, b U) (a table created with flatten_nested = 0) is
		// Array(Tuple(a T, b U)) with its own name.
		"Nested": KindArray,
	}
	for _, family := range []map[string]Kind{intNames, floatNames, timeNames, textNames, decimalNames} {
		maps.Copy(m, family)
	}
	return m
}()

// Type is a parsed ClickHouse column type.
type Type struct {
	Kind Kind
	// Name is the type as the server spells it, e.g. "Nullable(Int64)".
	Name string
	// Elem is the inner type of Nullable, Array and LowCardinality, and V
	// of Map(K, V).
	Elem *Type
	// Key is K of Map(K, V).
	Key *Type
	// Elems are the element types of Tuple(T1, T2, ...).
	Elems []*Type
	// ElemNames are the element names of a named tuple, Tuple(a T1, b T2),
	// and nil for an unnamed one.
	ElemNames []string
	// Len is N of FixedString(N).
	Len int
	// Precision and Scale of Decimal(P, S); Precision is also P of
	// DateTime64(P[, 'TZ']).
	Precision, Scale int
	// TZ is the time zone argument of DateTime('TZ') or
	// DateTime64(P, 'TZ'), if any.
	TZ string
	// Enum maps the names of an Enum8/Enum16 to their values.
	Enum map[string]int16

	// def is the table column's DEFAULT value as a one-row column of this
	// type (SetDefaultColumn), or nil.
	def Column
}

// ParseType parses a ClickHouse type name as DESCRIBE TABLE prints it.
func ParseType(s string) (*Type, error) {
	s = strings.TrimSpace(s)
	name, args, hasArgs := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return nil, fmt.Errorf("type %q: unbalanced parentheses", s)
		}
		name, args, hasArgs = s[:i], s[i+1:len(s)-1], true
	}
	kind, ok := kindNames[name]
	if !ok {
		return nil, fmt.Errorf("type %q is not supported", s)
	}
	t := &Type{Kind: kind, Name: s}
	if name == "Nested" {
		if !hasArgs {
			return nil, fmt.Errorf("type %q: missing elements", s)
		}
		elem, err := parseTuple("Tuple("+args+")", args)
		if err != nil {
			return nil, err
		}
		if elem.ElemNames == nil {
			return nil, fmt.Errorf("type %q: want Nested(name Type, ...)", s)
		}
		t.Elem = elem
		return t, nil
	}
	switch kind {
	case KindMap:
		parts := splitArgs(args)
		if len(parts) != 2 {
			return nil, fmt.Errorf("type %q: want Map(K, V)", s)
		}
		key, err := ParseType(parts[0])
		if err != nil {
			return nil, err
		}
		val, err := ParseType(parts[1])
		if err != nil {
			return nil, err
		}
		t.Key, t.Elem = key, val
	case KindTuple:
		if !hasArgs {
			return nil, fmt.Errorf("type %q: missing elements", s)
		}
		return parseTuple(s, args)
	case KindNullable, KindArray, KindLowCardinality:
		if !hasArgs {
			return nil, fmt.Errorf("type %q: missing inner type", s)
		}
		elem, err := ParseType(args)
		if err != nil {
			return nil, err
		}
		t.Elem = elem
	case KindFixedString:
		n, err := strconv.Atoi(strings.TrimSpace(args))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("type %q: bad length", s)
		}
		t.Len = n
	case KindDateTime:
		if hasArgs {
			t.TZ = strings.Trim(strings.TrimSpace(args), "'")
			if _, err := LoadZone(t.TZ); err != nil {
				return nil, fmt.Errorf("type %q: %w", s, err)
			}
		}
	case KindDateTime64:
		parts := splitArgs(args)
		if len(parts) < 1 || len(parts) > 2 {
			return nil, fmt.Errorf("type %q: want DateTime64(P[, 'TZ'])", s)
		}
		p, err := strconv.Atoi(parts[0])
		if err != nil || p < 0 || p > 9 {
			return nil, fmt.Errorf("type %q: bad precision", s)
		}
		t.Precision = p
		if len(parts) == 2 {
			t.TZ = strings.Trim(parts[1], "'")
			if _, err := LoadZone(t.TZ); err != nil {
				return nil, fmt.Errorf("type %q: %w", s, err)
			}
		}
	case KindDecimal:
		parts := splitArgs(args)
		switch name {
		case "Decimal":
			if len(parts) != 2 {
				return nil, fmt.Errorf("type %q: want Decimal(P, S)", s)
			}
			p, err1 := strconv.Atoi(parts[0])
			sc, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("type %q: bad precision or scale", s)
			}
			t.Precision, t.Scale = p, sc
		default:
			if len(parts) != 1 {
				return nil, fmt.Errorf("type %q: want %s(S)", s, name)
			}
			sc, err := strconv.Atoi(parts[0])
			if err != nil {
				return nil, fmt.Errorf("type %q: bad scale", s)
			}
			t.Precision = map[string]int{"Decimal32": 9, "Decimal64": 18, "Decimal128": 38}[name]
			t.Scale = sc
		}
	case KindEnum8, KindEnum16:
		t.Enum = map[string]int16{}
		for _, p := range splitArgs(args) {
			eq := strings.LastIndexByte(p, '=')
			if eq < 0 {
				return nil, fmt.Errorf("type %q: bad enum item %q", s, p)
			}
			label := strings.TrimSpace(p[:eq])
			v, err := strconv.Atoi(strings.TrimSpace(p[eq+1:]))
			if err != nil || len(label) < 2 || label[0] != '\'' || label[len(label)-1] != '\'' {
				return nil, fmt.Errorf("type %q: bad enum item %q", s, p)
			}
			t.Enum[strings.ReplaceAll(label[1:len(label)-1], `\'`, `'`)] = int16(v)
		}
	}
	return t, nil
}

// parseTuple parses the elements args of the tuple type s: all of them
// "name Type" (a named tuple) or none.
func parseTuple(s, args string) (*Type, error) {
	t := &Type{Kind: KindTuple, Name: s}
	parts := splitArgs(args)
	if len(parts) == 0 {
		return nil, fmt.Errorf("type %q: missing elements", s)
	}
	named := 0
	for _, p := range parts {
		name, typ := splitElemName(p)
		et, err := ParseType(typ)
		if err != nil {
			return nil, err
		}
		if name != "" {
			named++
		}
		t.Elems = append(t.Elems, et)
		t.ElemNames = append(t.ElemNames, name)
	}
	switch named {
	case 0:
		t.ElemNames = nil
	case len(parts):
	default:
		return nil, fmt.Errorf("type %q: either every element is named or none", s)
	}
	return t, nil
}

// splitElemName splits a tuple element "name Type" (name possibly in
// backquotes) into its name and type; an element without a name ("Type",
// "Nullable(Int32)", "Decimal(9, 2)") gives "".
func splitElemName(p string) (name, typ string) {
	if strings.HasPrefix(p, "`") {
		for i := 1; i < len(p); i++ {
			switch p[i] {
			case '\\':
				i++
			case '`':
				n := strings.NewReplacer("\\`", "`", "\\\\", "\\").Replace(p[1:i])
				return n, strings.TrimSpace(p[i+1:])
			}
		}
		return "", p
	}
	sp := strings.IndexByte(p, ' ')
	if par := strings.IndexByte(p, '('); sp > 0 && (par < 0 || sp < par) {
		return p[:sp], strings.TrimSpace(p[sp+1:])
	}
	return "", p
}

// splitArgs splits a type's argument list on top-level commas.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte // the quote character of the quoted text we are in, if any
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quote != 0:
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// Base returns the type with any LowCardinality wrapper removed.
func (t *Type) Base() *Type {
	if t.Kind == KindLowCardinality {
		return t.Elem.Base()
	}
	return t
}

func (t *Type) String() string { return t.Name }
