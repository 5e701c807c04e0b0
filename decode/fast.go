package decode

import (
	"fmt"
	"math"
	"slices"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
)

// The fast path decodes a flat object in one pass over its bytes, with no
// parse tree of the whole record: scalars go straight from the text into
// the columns; an array into an Array column is streamed element by
// element (a scalar element straight into the column, any other parsed
// alone by fastjson and given to the element type's setter); an object or
// array into a String column is stored as its compacted text; an object
// into a Map column is streamed key by key (values as array elements are);
// any other value a column reads (an object or array into a column of
// another type, a scalar for a type without a fast setter) is parsed alone
// by fastjson and given to the column's setter; the value of a field no column reads is
// skipped whatever its shape. So decoding a record builds at most the parse
// tree of one field's value, or of one array element, never of the whole
// record (docs/DESIGN.md, "Memory per record").
//
// It handles exactly the records it can decode the way the fastjson path
// does and gives up on everything else: a key with an escape, a field that
// appears twice, nesting deeper than maxSkipDepth, any syntax the fastjson
// path would reject or treat leniently, and any value a setter would
// reject. Then the chunk is truncated back and the fastjson path decodes
// the record, so every error is reported by the one path that defines the
// conversions. FuzzFastPath checks that both paths agree.
//
// Scalars have fast setters for integers, floats, String, DateTime, and
// Nullable and LowCardinality of those.

// token is the JSON type of a scalar value.
type token uint8

const (
	tokString token = iota // text is the unescaped content
	tokNumber              // text is the number as written
	tokTrue
	tokFalse
	tokNull
)

// fastSetter appends a non-null scalar to col, as the column's setter
// would, or reports false (having appended nothing to col's row count) when
// it would not accept it.
type fastSetter func(d *JSON, t token, text []byte, col chunk.Column) bool

// fastCol is the fast path's plan of one column.
type fastCol struct {
	// set is the fast setter of a scalar, nil when the type has none (the
	// column's setter then takes the value parsed alone).
	set fastSetter
	// text marks a String column (or Nullable or LowCardinality of one):
	// an object or array goes in as its JSON text, compacted, which set
	// takes as a number's text.
	text bool
	// array marks an Array column, whose arrays are streamed: elem is the
	// element type's fast setter (or nil), elemSet and elemDef its setter
	// and default, as setArray has them.
	array   bool
	elem    fastSetter
	elemSet setter
	elemDef defaulter
	// mapKey marks a Map column, whose objects are streamed: mapKey is the
	// key setter, elem, elemSet and elemDef are the value type's.
	mapKey mapKeySetter
}

// compileFastCol returns the fast path's plan of a column of type t.
func compileFastCol(t *chunk.Type) fastCol {
	if b := t.Base(); b.Kind == chunk.KindArray {
		elemSet, def, err := compile(b.Elem)
		if err != nil {
			return fastCol{} // cannot happen: the column's type compiled
		}
		return fastCol{array: true, elem: compileFast(b.Elem), elemSet: elemSet, elemDef: def}
	}
	if b := t.Base(); b.Kind == chunk.KindMap {
		key, err := compileMapKey(b.Key)
		if err != nil {
			return fastCol{} // cannot happen: the column's type compiled
		}
		val, def, err := compile(b.Elem)
		if err != nil {
			return fastCol{}
		}
		return fastCol{mapKey: key, elem: compileFast(b.Elem), elemSet: val, elemDef: def}
	}
	b := t.Base()
	if b.Kind == chunk.KindNullable {
		b = b.Elem.Base()
	}
	return fastCol{set: compileFast(t), text: b.Kind == chunk.KindString}
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

// compileFast returns the fast setter of scalar type t, or nil.
func compileFast(t *chunk.Type) fastSetter {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8:
		return fastSigned[int8](math.MinInt8, math.MaxInt8, true)
	case chunk.KindInt16:
		return fastSigned[int16](math.MinInt16, math.MaxInt16, false)
	case chunk.KindInt32:
		return fastSigned[int32](math.MinInt32, math.MaxInt32, false)
	case chunk.KindInt64:
		return fastSigned[int64](math.MinInt64, math.MaxInt64, false)
	case chunk.KindUInt8:
		return fastUnsigned[uint8](math.MaxUint8, true)
	case chunk.KindUInt16:
		return fastUnsigned[uint16](math.MaxUint16, false)
	case chunk.KindUInt32:
		return fastUnsigned[uint32](math.MaxUint32, false)
	case chunk.KindUInt64:
		return fastUnsigned[uint64](math.MaxUint64, false)
	case chunk.KindFloat32:
		return fastFloat32
	case chunk.KindFloat64:
		return fastFloat64
	case chunk.KindString:
		return fastString
	case chunk.KindDateTime:
		return fastDateTime
	case chunk.KindNullable:
		inner := compileFast(t.Elem)
		if inner == nil {
			return nil
		}
		return func(d *JSON, t token, text []byte, col chunk.Column) bool {
			n := col.(*chunk.Nullable)
			if !inner(d, t, text, n.Inner) {
				return false
			}
			n.MarkValue()
			return true
		}
	}
	return nil
}

// fastNumber is numberOf for a scalar: a number, or a string holding one.
func fastNumber(t token, text []byte) (number, bool) {
	if t != tokNumber && t != tokString {
		return number{}, false
	}
	return parseNumber(text)
}

// plainUint parses the commonest integer text, 1 to 19 digits without a
// sign or a leading zero, which parseNumber accepts as the same integer.
func plainUint(text []byte) (uint64, bool) {
	if len(text) == 0 || len(text) > 19 || text[0] == '0' && len(text) > 1 {
		return 0, false
	}
	var x uint64
	for _, c := range text {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + uint64(c)
	}
	return x, true
}

func fastSigned[T int8 | int16 | int32 | int64](lo, hi int64, bools bool) fastSetter {
	return func(d *JSON, t token, text []byte, col chunk.Column) bool {
		var x int64
		switch {
		case bools && t == tokTrue:
			x = 1
		case bools && t == tokFalse:
		case t <= tokNumber && len(text) > 0 && text[0] != '-':
			u, ok := plainUint(text)
			if ok && u <= uint64(hi) {
				x = int64(u)
				break
			}
			fallthrough
		default:
			n, ok := fastNumber(t, text)
			if !ok {
				return false
			}
			var r intResult
			if x, r = n.signed(lo, hi); r != intOK {
				return false
			}
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return true
	}
}

func fastUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64, bools bool) fastSetter {
	return func(d *JSON, t token, text []byte, col chunk.Column) bool {
		var x uint64
		switch {
		case bools && t == tokTrue:
			x = 1
		case bools && t == tokFalse:
		case t <= tokNumber:
			u, ok := plainUint(text)
			if ok && u <= hi {
				x = u
				break
			}
			n, ok := fastNumber(t, text)
			if !ok {
				return false
			}
			var r intResult
			if x, r = n.unsigned(hi); r != intOK {
				return false
			}
		default:
			return false
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return true
	}
}

func fastFloat64(d *JSON, t token, text []byte, col chunk.Column) bool {
	n, ok := fastNumber(t, text)
	if !ok {
		return false
	}
	f, ok := n.float(64)
	if !ok {
		return false
	}
	col.(*chunk.Fixed[float64]).Append(f)
	return true
}

func fastFloat32(d *JSON, t token, text []byte, col chunk.Column) bool {
	n, ok := fastNumber(t, text)
	if !ok {
		return false
	}
	f, ok := n.float(32)
	if !ok {
		return false
	}
	col.(*chunk.Fixed[float32]).Append(float32(f))
	return true
}

// fastString stores a string's content, or any other scalar's JSON text.
func fastString(d *JSON, t token, text []byte, col chunk.Column) bool {
	s := col.(*chunk.Strings)
	switch t {
	case tokTrue:
		s.AppendString("true")
	case tokFalse:
		s.AppendString("false")
	default:
		s.Append(text)
	}
	return true
}

func fastDateTime(d *JSON, t token, text []byte, col chunk.Column) bool {
	var sec int64
	var ok bool
	switch t {
	case tokString:
		if n, isNum := parseNumber(text); isNum {
			sec, ok = epochSeconds(&n)
		} else {
			sec, ok = d.timeText(text)
		}
	case tokNumber:
		if u, plain := plainUint(text); plain {
			// epochSeconds of an integer: the unit by its magnitude.
			sec, ok = int64(u/uint64(epochUnit(float64(u)))), true
			break
		}
		n, isNum := parseNumber(text)
		if !isNum {
			return false
		}
		sec, ok = epochSeconds(&n)
	}
	if !ok || sec < 0 || sec > maxDateTime {
		return false
	}
	col.(*chunk.Fixed[int64]).Append(sec)
	return true
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
func (d *JSON) scalar(s []byte, i int) (t token, text []byte, next int, ok bool) {
	if i >= len(s) {
		return 0, nil, i, false
	}
	switch c := s[i]; {
	case c == '"':
		i++
		start := i
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
func (d *JSON) escaped(s []byte, start, i int) (token, []byte, int, bool) {
	b := append(d.scratch[:0], s[start:i]...)
	for i < len(s) {
		c := s[i]
		if c == '"' {
			d.scratch = b
			return tokString, b, i + 1, true
		}
		if c != '\\' {
			b = append(b, c)
			i++
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

// fastArray appends the array at s[i] (its '[') as one row of a, each
// element as setArray would append it, and returns the index past the
// array; false when an element is one its setter would refuse, or the
// syntax is not what fastjson accepts (the caller then truncates the chunk
// back).
func (d *JSON) fastArray(s []byte, i int, f *fastCol, a *chunk.Array) (int, bool) {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		a.EndRow()
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = d.fastElem(s, i, f, a.Inner); !ok {
			return i, false // (diagErr as setArray returns it)
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
			a.EndRow()
			return i + 1, true
		}
		return i, false
	}
}

// fastElem appends the value at s[i], an element of an array or a map's
// value at depth 3, to col as setArray and the map setter append one
// (null gives elemDef), and returns the index past it. When diagnosing, a
// refusal leaves the setter's error in diagErr.
func (d *JSON) fastElem(s []byte, i int, f *fastCol, col chunk.Column) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	if f.elem != nil && s[i] != '[' && s[i] != '{' {
		if t, text, next, ok := d.scalar(s, i); ok {
			if t == tokNull {
				appendDefault(f.elemDef, col)
				return next, true
			}
			if f.elem(d, t, text, col) {
				return next, true
			}
			if !d.diag {
				return i, false
			}
			// Diagnosing: the element's setter says why, below.
		}
	}
	// An element without a fast setter: parsed alone.
	v, end, ok := d.parseAlone(s, i, 3)
	if !ok || f.elemSet == nil {
		return i, false
	}
	if v.Type() == fastjson.TypeNull {
		appendDefault(f.elemDef, col)
	} else if e := f.elemSet(d, v, col); e != nil {
		if d.diag {
			d.diagErr = e
		}
		return i, false
	}
	return end, true
}

// fastMap appends the object at s[i] (its '{') as one row of m, each key
// and value as the map setter appends them, and returns the index past it;
// false as fastArray.
func (d *JSON) fastMap(s []byte, i int, f *fastCol, m *chunk.Map) (int, bool) {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		m.EndRow()
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		ks := i + 1
		for i = ks; i < len(s) && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= len(s) || s[i] != '"' {
			return i, false // (a key with an escape is left to fastjson)
		}
		key := s[ks:i]
		if i = skipWS(s, i+1); i >= len(s) || s[i] != ':' {
			return i, false
		}
		if e := f.mapKey(d, key, m.Keys); e != nil {
			if d.diag {
				e.Err = fmt.Errorf("map key %s: %w", avroShown(key), e.Err)
				d.diagErr = e
			}
			return i, false
		}
		var ok bool
		if i, ok = d.fastElem(s, skipWS(s, i+1), f, m.Values); !ok {
			if d.diagErr != nil {
				d.diagErr.Err = fmt.Errorf("map value of key %s: %w", avroShown(key), d.diagErr.Err)
			}
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
			m.EndRow()
			return i + 1, true
		}
		return i, false
	}
}

// parseAlone parses the value at s[i], at nesting depth depth, with
// fastjson on its own, and returns it and the index past it. The value is
// valid until the next parse.
func (d *JSON) parseAlone(s []byte, i, depth int) (*fastjson.Value, int, bool) {
	end, ok := skipValue(s, i, depth)
	if !ok {
		return nil, i, false
	}
	v, err := d.p.ParseBytes(s[i:end])
	if err != nil {
		return nil, i, false
	}
	if end-i > keepParserBytes {
		d.parsedBig = true
	}
	return v, end, true
}

// diagScalar decides, when diagnosing, the scalar at s[i] that column
// ci's fast setter refused with the column's setter: false when it refuses
// it too (or the value cannot be parsed alone).
func (d *JSON) diagScalar(s []byte, i, ci int, c *chunk.Chunk) bool {
	if !d.diag {
		return false
	}
	v, _, ok := d.parseAlone(s, i, 2)
	if !ok {
		return false
	}
	if e := d.cols[ci].set(d, v, c.Cols[ci]); e != nil {
		d.diagnosed(e, ci)
		return false
	}
	return true
}

// fastField appends the value at s[i] of field fi to every column reading
// it and returns the index past it.
func (d *JSON) fastField(s []byte, i, fi int, c *chunk.Chunk) (int, bool) {
	cols := d.fields[fi]
	for _, ci := range cols {
		if d.seen[ci] == d.gen {
			return i, false // a field twice: the fastjson path keeps the last
		}
		d.seen[ci] = d.gen
	}
	if i >= len(s) {
		return i, false
	}
	switch {
	case s[i] == '[' && d.fieldArr[fi]:
		// An array, streamed into each Array column reading it.
		next := i
		for _, ci := range cols {
			var ok bool
			if next, ok = d.fastArray(s, i, &d.fast[ci], c.Cols[ci].(*chunk.Array)); !ok {
				if d.diagErr != nil {
					d.diagnosed(d.diagErr, ci)
				}
				return i, false
			}
		}
		return next, true
	case s[i] == '{' && d.fieldMap[fi]:
		// An object, streamed into each Map column reading it.
		next := i
		for _, ci := range cols {
			var ok bool
			if next, ok = d.fastMap(s, i, &d.fast[ci], c.Cols[ci].(*chunk.Map)); !ok {
				if d.diagErr != nil {
					d.diagnosed(d.diagErr, ci)
				}
				return i, false
			}
		}
		return next, true
	case s[i] != '[' && s[i] != '{':
		t, text, next, ok := d.scalar(s, i)
		if ok && (t == tokNull || d.fieldFast[fi]) {
			for _, ci := range cols {
				if t == tokNull {
					appendDefault(d.cols[ci].null, c.Cols[ci])
				} else if !d.fast[ci].set(d, t, text, c.Cols[ci]) {
					return i, false
				}
			}
			return next, true
		}
	}
	if (s[i] == '[' || s[i] == '{') && d.fieldText[fi] {
		// An object or array into String columns: its text, compacted.
		end, ok := skipValue(s, i, 2)
		if !ok {
			return i, false
		}
		d.scratch = appendCompact(slices.Grow(d.scratch[:0], end-i), s[i:end])
		if end-i > keepParserBytes {
			d.parsedBig = true // (release drops the large scratch)
		}
		for _, ci := range cols {
			if !d.fastSet[ci](d, tokNumber, d.scratch, c.Cols[ci]) {
				return i, false
			}
		}
		return end, true
	}
	// Any other value is parsed alone, and each column's setter takes it.
	v, end, ok := d.parseAlone(s, i, 2)
	if !ok {
		return i, false
	}
	for _, ci := range cols {
		if v.Type() == fastjson.TypeNull {
			appendDefault(d.cols[ci].null, c.Cols[ci])
		} else if e := d.cols[ci].set(d, v, c.Cols[ci]); e != nil {
			d.diagnosed(e, ci)
			return i, false
		}
	}
	return end, true
}

// diagnosed records e, the error of column ci, when diagnosing.
func (d *JSON) diagnosed(e *Error, ci int) {
	if !d.diag {
		return
	}
	p := &d.cols[ci]
	e.Field, e.Column, e.Type = p.field, p.name, p.typ
	d.diagErr = e
}

// diagnoseBytes is the size from which a record the one-pass path gave up
// is diagnosed by it (diagnose) before the fastjson path parses it whole.
var diagnoseBytes = keepParserBytes

// diagnose runs the one-pass path again on a record it gave up, letting
// each column's setter decide every value a fast setter refused: a large
// record with a bad value is then reported without a parse tree of the
// whole record. done is false when it cannot tell (a syntax the one-pass
// path leaves to fastjson, a field twice): the fastjson path decides. When
// done, the record's row is appended (e nil), or nothing and e is the
// error of the first bad value in the record's order (the fastjson path
// reports the first in the columns' order: the two differ only for a
// record with bad values in several columns). A record whose syntax is
// bad anywhere is left to fastjson.
func (d *JSON) diagnose(s []byte, c *chunk.Chunk) (done bool, e *Error) {
	d.diag, d.diagErr = true, nil
	defer func() { d.diag, d.diagErr = false, nil }()
	rows := c.Rows
	ok := d.fastRow(s, c)
	if d.parsedBig {
		d.parsedBig = false
		defer d.release(len(s))
	}
	if ok {
		return true, nil
	}
	c.Truncate(rows)
	if d.diagErr == nil || d.diagErr.Column == "" {
		return false, nil
	}
	// The rest of the record must be valid too, else fastjson reports its
	// syntax error (corrupt), and the bad value's field must not appear
	// again (fastjson takes the last).
	if !d.readFieldsOnce(s) {
		return false, nil
	}
	return true, d.diagErr
}

// readFieldsOnce reports whether s is a flat object in the syntax the
// one-pass path accepts in which no field a column reads appears twice.
func (d *JSON) readFieldsOnce(s []byte) bool {
	d.gen++
	if d.gen == 0 {
		clear(d.seen)
		d.gen = 1
	}
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return skipWS(s, i+1) == len(s)
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return false
		}
		ks := i + 1
		for i = ks; i < len(s) && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= len(s) || s[i] != '"' {
			return false
		}
		if fi, ok := d.index[string(s[ks:i])]; ok {
			for _, ci := range d.fields[fi] {
				if d.seen[ci] == d.gen {
					return false
				}
				d.seen[ci] = d.gen
			}
		}
		i = skipWS(s, i+1)
		if i >= len(s) || s[i] != ':' {
			return false
		}
		var ok bool
		if i, ok = skipValue(s, skipWS(s, i+1), 2); !ok {
			return false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case '}':
			return skipWS(s, i+1) == len(s)
		}
		return false
	}
}

// decodeFast decodes value into one row of c, or leaves c as it was and
// reports false.
func (d *JSON) decodeFast(s []byte, c *chunk.Chunk) bool {
	rows := c.Rows
	ok := d.fastRow(s, c)
	if !ok {
		c.Truncate(rows)
	}
	if d.parsedBig {
		d.parsedBig = false
		d.release(len(s))
	}
	return ok
}

func (d *JSON) fastRow(s []byte, c *chunk.Chunk) bool {
	d.gen++
	if d.gen == 0 {
		clear(d.seen)
		d.gen = 1
	}
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		d.next = 0
		for {
			// Key.
			if i >= len(s) || s[i] != '"' {
				return false
			}
			i++
			ks := i
			for i < len(s) && s[i] != '"' && s[i] != '\\' {
				i++
			}
			if i >= len(s) || s[i] != '"' {
				return false
			}
			key := s[ks:i]
			i = skipWS(s, i+1)
			if i >= len(s) || s[i] != ':' {
				return false
			}
			i = skipWS(s, i+1)

			// Value.
			fi := d.next
			if fi >= len(d.names) || d.names[fi] != string(key) {
				var found bool
				if fi, found = d.index[string(key)]; !found {
					fi = -1
				}
			}
			if fi < 0 {
				var ok bool
				if i, ok = skipValue(s, i, 2); !ok {
					return false
				}
			} else {
				d.next = fi + 1
				taken := false
				if d.fieldFast[fi] {
					// The common case, inline: a scalar into columns with
					// fast setters.
					if t, text, next, ok := d.scalar(s, i); ok {
						for _, ci := range d.fields[fi] {
							if d.seen[ci] == d.gen {
								return false // a field twice: the fastjson path keeps the last
							}
							d.seen[ci] = d.gen
							if t == tokNull {
								appendDefault(d.cols[ci].null, c.Cols[ci])
							} else if !d.fastSet[ci](d, t, text, c.Cols[ci]) && !d.diagScalar(s, i, ci, c) {
								return false
							}
						}
						i, taken = next, true
					}
				}
				if !taken {
					var ok bool
					if i, ok = d.fastField(s, i, fi, c); !ok {
						return false
					}
				}
			}

			i = skipWS(s, i)
			if i >= len(s) {
				return false
			}
			if s[i] == ',' {
				i = skipWS(s, i+1)
				continue
			}
			if s[i] != '}' {
				return false
			}
			i++
			break
		}
	}
	if skipWS(s, i) != len(s) {
		return false
	}
	for ci := range d.cols {
		if d.seen[ci] != d.gen {
			appendDefault(d.cols[ci].def, c.Cols[ci])
		}
	}
	return true
}
