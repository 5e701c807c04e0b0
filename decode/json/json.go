package json

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Options configures a JSON decoder.
type Options struct {
	// Fields is the source field name for each schema column, in schema
	// order; "" leaves that column at its default. Nil means every column
	// is read from the field of the same name.
	Fields []string
	// MaxRecordBytes rejects longer record values as decode.ReasonTooLarge
	// without parsing them; 0 means unlimited.
	MaxRecordBytes int
	// TimeLayout, when set, is a Go time layout tried first for DateTime,
	// DateTime64 and Date strings (a layout without a zone means UTC);
	// RFC 3339 and epoch numbers are still accepted.
	TimeLayout string
	// Framing is how rows sit in one record value: FramingSingle (one
	// object, the default), FramingNDJSON (one object per line, blank lines
	// ignored) or FramingArray (a JSON array of objects).
	Framing string
	// Ranges are the Date and DateTime ranges of the server the rows go
	// to (chunk.RangesFor its version); the zero value is the narrower
	// range every server reads back (chunk.DefaultRanges).
	Ranges chunk.ServerRanges
}

// Framings of JSON record values.
const (
	FramingSingle = "single"
	FramingNDJSON = "ndjson"
	FramingArray  = "array"
)

// Decoder decodes records holding one JSON object each into one row.
//
// Conversions, by column type (a LowCardinality wrapper is ignored):
//
//   - Every type: a missing field gives the column's default: the table's
//     DEFAULT value when the plan computed one (chunk.Type.SetDefault),
//     else the type's implicit default, as the server would fill it: NULL
//     for Nullable, an empty array for Array, 1970-01-01 for Date, the
//     all-zero UUID, "0" for Decimal, the name with the lowest value for an
//     Enum, zero or "" otherwise. A null gives the same, except into a
//     Nullable column, where it is NULL whatever the DEFAULT (as in the
//     server's own JSON input). A null element of an array gives the
//     element type's implicit default.
//   - Int8..Int64, UInt8..UInt64: a JSON number or a string holding one,
//     parsed exactly from its text (never through float64). Integral forms
//     such as 1e3 and 10.0 are accepted; a nonzero fraction is wrong_type;
//     a value outside the column's range is out_of_range. Int8 and UInt8
//     also take true and false as 1 and 0.
//   - Float32, Float64: a JSON number or a string holding one; a value
//     beyond the type's range is out_of_range.
//   - Bool: true, false, or the numbers 0 and 1.
//   - String: a JSON string, unescaped; any other value is stored as its
//     JSON text (an object or array re-serialised compactly).
//   - FixedString(N): a JSON string of at most N bytes.
//   - UUID: a string in the 36-character 8-4-4-4-12 hex form.
//   - Decimal: a JSON number or a string holding one. Its digits before
//     the point, in any form (1e30 has 31), must fit the precision minus
//     the scale, else out_of_range. Plain text is stored as it is (digits
//     past the scale are truncated toward zero by the insert); a number
//     with an exponent is stored as the plain text of its value, truncated
//     toward zero at the scale (1e3 as 1000, 1e-3 into scale 2 as 0).
//   - Enum8, Enum16: one of the type's names, or a number (or numeric
//     string that is not a name) equal to one of its values, stored as the
//     name.
//   - DateTime: a date-time string (see below) or an epoch number. Numbers
//     are seconds, or by magnitude milliseconds (> 1e11), microseconds
//     (> 1e14) or nanoseconds (> 1e17); fractions of a second are dropped.
//     The result must be within 1970-01-01T00:00:00Z..2106-02-07T06:28:15Z.
//   - Date: as DateTime, then the UTC calendar day, which must be within
//     1970-01-01..2149-06-06.
//   - Date32: as Date, within 1900-01-01..2299-12-31; epoch numbers may
//     be negative.
//   - DateTime64(P): a date-time string, its fractional seconds kept to P
//     digits (the rest dropped), or an epoch number (negative too) in
//     seconds or, by the magnitude heuristic of DateTime, a finer unit,
//     scaled to ticks of 10^-P seconds exactly and rounded down. The result
//     must be within 1900-01-01T00:00:00Z..2262-04-11T23:47:16.854775807Z
//     (the driver sends every value through nanoseconds since the epoch).
//   - IPv4: a string in dotted form, or the address as a number.
//   - IPv6: a string in any IPv6 form, or an IPv4 address (stored
//     IPv4-mapped); zones are wrong_type.
//   - Int128, Int256, UInt128, UInt256: as the narrower integers, exactly,
//     without the booleans.
//   - Array(T): a JSON array, each element converted as T; nested arrays
//     work the same way.
//   - Nullable(T): null, or a value converted as T.
//   - Map(K, V): a JSON object, in its order (a key that appears twice is
//     kept twice, as the server keeps it). Each key is converted as K from
//     a JSON string: String takes it as it is, the integer types parse it
//     (out_of_range outside K's range), Date a date string, and so on.
//     Each value is converted as V (null gives V's default).
//   - Tuple(T1, ..., Tn): a JSON array of exactly n values, converted in
//     order. A named tuple, Tuple(a T1, b T2), also takes an object: each
//     element from the field of its name (a missing field gives the
//     element's default; other fields are ignored).
//   - Nested: a field path "n.a" into an Array column, where n is an array
//     of objects, gives field a of each of its elements (a null element or
//     a missing field gives the element type's default), so the columns
//     n.a, n.b, ... of a Nested structure n fill from one array of objects.
//     The arrays of the columns of one Nested structure (the Array columns
//     named n.x) must have equal lengths in every row, whatever fields
//     fill them; out_of_range otherwise.
//
// Date-time strings are RFC 3339 with or without fractional seconds and
// zone, "T", "t" or " " between date and time (so ClickHouse's
// "2026-11-29 10:00:00" works), or a bare date; a time without a zone is
// UTC whatever the column's time zone.
//
// Records that are flat objects (no field path into nested objects, no
// Nested structure) are decoded in one pass (fast.go), with exactly the
// results described here: scalars and arrays of scalars go straight from
// the text into the columns, other values are parsed by fastjson one field
// (one array element, for an Array column) at a time. Every other record,
// and every error, goes through fastjson whole, except that a record over
// 32 KiB with a bad value is diagnosed by the one-pass path (diagnose).
//
// Parsing uses fastjson, which is lenient in a few places: invalid escape
// sequences in strings are kept as written, control characters inside
// strings are accepted, and when a field appears twice the last one wins.
// Numbers that a column reads are checked against the strict JSON grammar
// (a malformed one such as NaN is corrupt); numbers in fields no column
// reads are not.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema      *chunk.Schema
	cols        []colPlan
	index       map[string]int // field name -> position in fields
	fields      [][]int        // columns reading each field
	names       []string       // name of each field
	next        int            // field expected next while visiting a record
	slots       []*fastjson.Value
	p           fastjson.Parser
	scratch     []byte
	dec         []byte // decimal text rewritten without its exponent
	max         int
	framing     string
	layout      string
	nested      bool                 // some field is a path into nested objects ("a.b")
	rest        [][]string           // per column: the path left below an array of objects (Nested), or nil
	groups      []decode.NestedGroup // Nested structures whose arrays must have equal lengths
	arena       fastjson.Arena       // map keys as string values, for key types other than strings
	visitFn     func(key []byte, v *fastjson.Value)
	lookupByGet bool // benchmarks only: Object.Get per column (first duplicate wins) instead of one Visit

	// The one-pass path (fast.go); fast is nil when records are not flat
	// (a field path into nested objects, or a Nested structure).
	fast      []fastCol
	fastSet   []fastSetter // fast[i].set, for the common case
	fieldFast []bool       // every column reading field i has a fast setter for scalars
	fieldArr  []bool       // every column reading field i is an Array column
	fieldText []bool       // every column reading field i is a String column
	fieldMap  []bool       // every column reading field i is a Map column
	seen      []uint32     // seen[i] == gen: column i has its value in this record
	gen       uint32
	parsedBig bool          // the one-pass path parsed a value larger than keepParserBytes alone
	diag      bool          // the one-pass path is diagnosing a record it gave up (diagnose)
	diagErr   *decode.Error // what it found
	noFast    bool          // tests and benchmarks only: always take the fastjson path

	ranges chunk.ServerRanges // the server's Date and DateTime maximums (setDate, setDateTime)
}

// colPlan is the compiled plan of one column.
type colPlan struct {
	field, name, typ string
	path             []string // the field split at dots, when it has any
	set              setter
	def              decode.Defaulter // a missing field
	null             decode.Defaulter // a null
	// For an Array(T) column with a path: T's setter and default, used
	// when the path meets an array of objects (a Nested structure: column
	// n.a takes field a of every element of n).
	elemSet setter
	elemDef decode.Defaulter
}

// setter appends a non-null value v to col, whose concrete type matches
// the type the setter was compiled for. The *decode.Error it returns has only
// decode.Reason and Err set.
type setter func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error

// nullDefault is what a null appends to a column of type t whose missing
// value appends def: the same, except that a null into a Nullable column
// whose DEFAULT is not NULL stays NULL (the DEFAULT is for missing fields,
// as the server's own input formats have it).
func nullDefault(t *chunk.Type, def decode.Defaulter) decode.Defaulter {
	if t.HasDefault() && t.Base().Kind == chunk.KindNullable {
		return appendNull
	}
	return def
}

func appendNull(col chunk.Column) { col.(*chunk.Nullable).AppendNull() }

var _ decode.Decoder = (*Decoder)(nil)

// New compiles a decoder for schema s.
func New(s *chunk.Schema, o Options) (*Decoder, error) {
	switch o.Framing {
	case "", FramingSingle, FramingNDJSON, FramingArray:
	default:
		return nil, fmt.Errorf("decode: JSON framing %q is not one of single, ndjson, array", o.Framing)
	}
	fields, err := decode.ColumnFields(s, o.Fields, o.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	d := &Decoder{
		schema:  s,
		cols:    make([]colPlan, len(s.Types)),
		index:   make(map[string]int),
		slots:   make([]*fastjson.Value, len(s.Types)),
		max:     o.MaxRecordBytes,
		framing: o.Framing,
		layout:  o.TimeLayout,
		ranges:  o.Ranges.OrDefault(),
	}
	for i, t := range s.Types {
		if _, err := chunk.NewColumn(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		set, def, err := compile(t)
		if err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		d.cols[i] = colPlan{field: fields[i], name: s.Names[i], typ: t.Name, set: set, def: def, null: nullDefault(t, def)}
		if strings.Contains(fields[i], ".") {
			d.cols[i].path = strings.Split(fields[i], ".")
			d.nested = true
			if t.Kind == chunk.KindArray {
				d.cols[i].elemSet, d.cols[i].elemDef, _ = compile(t.Elem) // cannot fail: compile(t) compiled it
			}
		}
		d.fast = append(d.fast, compileFastCol(t))
		if fields[i] == "" {
			continue
		}
		fi, ok := d.index[fields[i]]
		if !ok {
			fi = len(d.fields)
			d.index[fields[i]] = fi
			d.fields = append(d.fields, nil)
			d.names = append(d.names, fields[i])
		}
		d.fields[fi] = append(d.fields[fi], i)
	}
	d.visitFn = d.visit
	d.groups = decode.NestedGroups(s)
	if d.nested {
		d.rest = make([][]string, len(d.cols))
	}
	// The fast path reads flat objects only, and does not check the
	// lengths of a Nested structure's arrays.
	if !d.nested && d.groups == nil {
		d.seen = make([]uint32, len(d.cols))
		for _, f := range d.fast {
			d.fastSet = append(d.fastSet, f.set)
		}
		n := len(d.fields)
		d.fieldFast, d.fieldArr, d.fieldText, d.fieldMap = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
		for fi, cols := range d.fields {
			d.fieldFast[fi], d.fieldArr[fi], d.fieldText[fi], d.fieldMap[fi] = true, true, true, true
			for _, ci := range cols {
				d.fieldMap[fi] = d.fieldMap[fi] && d.fast[ci].mapKey != nil
				d.fieldFast[fi] = d.fieldFast[fi] && d.fast[ci].set != nil
				d.fieldArr[fi] = d.fieldArr[fi] && d.fast[ci].array
				d.fieldText[fi] = d.fieldText[fi] && d.fast[ci].text
			}
		}
	} else {
		d.fast = nil
	}
	return d, nil
}

// Decode implements decode.Decoder. It appends one row per object: exactly one
// with the single framing, one per line or array element otherwise; a
// record is all or nothing.
//
// It panics if c was not built for a schema with the decoder's column
// types, which is a programming error, not a property of the record.
func (d *Decoder) Decode(value []byte, c *chunk.Chunk) (int, error) {
	if c.Schema != d.schema {
		d.checkSchema(c)
	}
	if d.max > 0 && len(value) > d.max {
		return 0, decode.TooLarge(len(value), d.max)
	}
	switch d.framing {
	case FramingNDJSON:
		// An empty value has no lines, hence no rows; a null one (a
		// tombstone) holds no lines either.
		return d.decodeLines(value, c)
	case FramingArray:
		if len(value) == 0 {
			return 0, decode.NullValue(value)
		}
		return d.decodeArray(value, c)
	}
	if len(value) == 0 {
		return 0, decode.NullValue(value)
	}
	if err := d.decodeOne(value, c); err != nil {
		return 0, err
	}
	return 1, nil
}

// decodeLines decodes one object per line. A record is all or nothing: on
// an error the rows of its earlier lines are taken back too.
func (d *Decoder) decodeLines(value []byte, c *chunk.Chunk) (int, error) {
	start := c.Rows
	for line := 1; len(value) > 0; line++ {
		var l []byte
		if i := bytes.IndexByte(value, '\n'); i >= 0 {
			l, value = value[:i], value[i+1:]
		} else {
			l, value = value, nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := d.decodeOne(l, c); err != nil {
			c.Truncate(start)
			err.Err = fmt.Errorf("line %d: %w", line, err.Err)
			return 0, err
		}
	}
	return c.Rows - start, nil
}

// decodeArray decodes a JSON array of objects, all or nothing.
func (d *Decoder) decodeArray(value []byte, c *chunk.Chunk) (int, error) {
	if d.fast != nil && !d.noFast && !d.lookupByGet {
		if n, err, ok := d.arrayElements(value, c); ok {
			return n, err
		}
	}
	defer d.release(len(value))
	v, err := d.p.ParseBytes(value)
	if err != nil {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: parseError(err, value)}
	}
	elems, err := v.Array()
	if err != nil {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("record is %s, want an array of objects", article(v.Type()))}
	}
	start := c.Rows
	for i, ev := range elems {
		o, err := ev.Object()
		if err != nil {
			c.Truncate(start)
			return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("element %d is %s, want an object", i, article(ev.Type()))}
		}
		if e := d.fromObject(o, c); e != nil {
			c.Truncate(start)
			e.Err = fmt.Errorf("element %d: %w", i, e.Err)
			return 0, e
		}
	}
	return c.Rows - start, nil
}

// arrayElements decodes a JSON array of objects one element at a time
// (each as decodeOne decodes a record), so that no parse tree holds more
// than one element, with decodeArray's results and errors. ok is false
// when the array's syntax is not one the one-pass path accepts: the
// fastjson path then parses it whole, and reports the error.
func (d *Decoder) arrayElements(value []byte, c *chunk.Chunk) (n int, err error, ok bool) {
	i := skipWS(value, 0)
	if i >= len(value) || value[i] != '[' {
		return 0, nil, false
	}
	if end, ok := skipValue(value, i, 1); !ok || skipWS(value, end) != len(value) {
		return 0, nil, false
	}
	// The syntax is valid from here on.
	start := c.Rows
	i = skipWS(value, i+1)
	for k := 0; value[i] != ']'; k++ {
		end, _ := skipValue(value, i, 2)
		if value[i] != '{' {
			c.Truncate(start)
			what := "a value"
			if v, err := d.p.ParseBytes(value[i:end]); err == nil {
				what = article(v.Type())
			}
			d.release(end - i)
			return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("element %d is %s, want an object", k, what)}, true
		}
		if e := d.decodeOne(value[i:end], c); e != nil {
			c.Truncate(start)
			e.Err = fmt.Errorf("element %d: %w", k, e.Err)
			return 0, e, true
		}
		if i = skipWS(value, end); value[i] == ',' {
			i = skipWS(value, i+1)
		}
	}
	return c.Rows - start, nil, true
}

// decodeOne decodes one JSON object into one row.
func (d *Decoder) decodeOne(value []byte, c *chunk.Chunk) *decode.Error {
	if d.fast != nil && !d.noFast && !d.lookupByGet {
		if d.decodeFast(value, c) {
			c.Rows++
			return nil
		}
		// A large record: find its bad value without parsing it whole.
		if len(value) > diagnoseBytes {
			if done, e := d.diagnose(value, c); done {
				if e == nil {
					c.Rows++
				}
				return e
			}
		}
	}
	// Outside the fast path's subset (or a value it would reject): the
	// fastjson path decodes the record and reports any error.
	if len(value) > keepParserBytes {
		defer d.release(len(value))
	}
	v, err := d.p.ParseBytes(value)
	if err != nil {
		return &decode.Error{Reason: decode.ReasonCorrupt, Err: parseError(err, value)}
	}
	o, err := v.Object()
	if err != nil {
		return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("record is %s, want an object", article(v.Type()))}
	}
	return d.fromObject(o, c)
}

// keepParserBytes is the largest value whose parse tree the decoder keeps
// for the next record. fastjson's parser keeps a value for every value of
// the largest document it has parsed (80 bytes each, and the arrays they
// point to), so a parser that has seen a 1 MiB array of one-digit numbers
// holds 44 MB until it is dropped; after a value of up to 32 KiB it holds
// about 1.5 MB at most, a fixed cost of each worker. (Parsing costs more
// while it lasts: about 225 bytes per byte of such an array, counting the
// arrays the parser's cache outgrew, which the tree still points into.)
const keepParserBytes = 32 << 10

// release drops the parser, and every value its cache holds, after a
// value of n bytes larger than keepParserBytes: the next record starts
// with a fresh one, and the garbage collector takes the tree back.
func (d *Decoder) release(n int) {
	if n <= keepParserBytes {
		return
	}
	d.p = fastjson.Parser{}
	clear(d.slots)
	if cap(d.scratch) > keepParserBytes {
		d.scratch = nil // a large value re-serialised into a String column
	}
	if cap(d.dec) > keepParserBytes {
		d.dec = nil
	}
}

// fromObject appends one row from a parsed object.
func (d *Decoder) fromObject(o *fastjson.Object, c *chunk.Chunk) *decode.Error {
	clear(d.slots)
	if d.lookupByGet {
		for i := range d.cols {
			if f := d.cols[i].field; f != "" {
				d.slots[i] = o.Get(f)
			}
		}
	} else {
		d.next = 0
		o.Visit(d.visitFn)
	}
	if d.nested {
		// A field "a.b" is the key "a.b" itself when the object has it,
		// else b inside the object a; into an Array column, when a is an
		// array of objects, b of each of its elements.
		clear(d.rest)
		for i := range d.cols {
			if path := d.cols[i].path; path != nil && d.slots[i] == nil {
				d.slots[i] = d.lookup(o, i, path)
			}
		}
	}

	rows := c.Rows
	for i := range d.cols {
		col := c.Cols[i]
		sv := d.slots[i]
		if sv == nil {
			decode.AppendDefault(d.cols[i].def, col)
			continue
		}
		if sv.Type() == fastjson.TypeNull {
			decode.AppendDefault(d.cols[i].null, col)
			continue
		}
		var e *decode.Error
		if d.rest != nil && d.rest[i] != nil {
			e = d.setElems(&d.cols[i], sv, d.rest[i], col)
		} else {
			e = d.cols[i].set(d, sv, col)
		}
		if e != nil {
			c.Truncate(rows)
			p := &d.cols[i]
			e.Field, e.Column, e.Type = p.field, p.name, p.typ
			return e
		}
	}
	if d.groups != nil {
		if ci, e := decode.CheckNested(d.groups, c); e != nil {
			c.Truncate(rows)
			p := &d.cols[ci]
			e.Field, e.Column, e.Type = p.field, p.name, p.typ
			return e
		}
	}
	c.Rows++
	return nil
}

// lookup returns the value of column i's field path in o. For an Array
// column whose path meets an array before its end, it returns that array
// and sets d.rest[i] to the rest of the path.
func (d *Decoder) lookup(o *fastjson.Object, i int, path []string) *fastjson.Value {
	v := o.Get(path[0])
	if d.cols[i].elemSet == nil {
		if v == nil {
			return nil
		}
		return v.Get(path[1:]...)
	}
	for j := 1; v != nil && j < len(path); j++ {
		if v.Type() == fastjson.TypeArray {
			d.rest[i] = path[j:]
			return v
		}
		v = v.Get(path[j])
	}
	return v
}

// setElems appends to an Array column the value at path rest of every
// element of arr, an array of objects (null elements, and elements that
// lack the field, give the element type's default).
func (d *Decoder) setElems(p *colPlan, arr *fastjson.Value, rest []string, col chunk.Column) *decode.Error {
	a := col.(*chunk.Array)
	items, _ := arr.Array()
	for k, it := range items {
		var ev *fastjson.Value
		switch it.Type() {
		case fastjson.TypeObject:
			ev = it.Get(rest...)
		case fastjson.TypeNull:
		default:
			e := wrongType(it, "an object")
			e.Err = fmt.Errorf("element %d of the array: %w", k, e.Err)
			return e
		}
		if ev == nil || ev.Type() == fastjson.TypeNull {
			decode.AppendDefault(p.elemDef, a.Inner)
			continue
		}
		if e := p.elemSet(d, ev, a.Inner); e != nil {
			e.Err = fmt.Errorf("element %d of the array: %w", k, e.Err)
			return e
		}
	}
	a.EndRow()
	return nil
}

func (d *Decoder) visit(key []byte, v *fastjson.Value) {
	fi := d.next
	if fi >= len(d.names) || d.names[fi] != string(key) {
		var ok bool
		if fi, ok = d.index[string(key)]; !ok {
			return
		}
	}
	d.next = fi + 1
	for _, ci := range d.fields[fi] {
		d.slots[ci] = v
	}
}

func (d *Decoder) checkSchema(c *chunk.Chunk) {
	ok := c.Schema != nil && len(c.Cols) == len(d.cols) && len(c.Schema.Types) == len(d.cols)
	for i := 0; ok && i < len(d.cols); i++ {
		ok = c.Schema.Types[i].Name == d.cols[i].typ
	}
	if !ok {
		panic("decode: chunk schema does not match the decoder's schema")
	}
}

// compile returns the setter for type t and its decode.Defaulter (decode.Default:
// nil for a type carrying the table's DEFAULT, whose columns append the
// DEFAULT themselves).
func compile(t *chunk.Type) (setter, decode.Defaulter, error) {
	set, err := compileType(t)
	if err != nil {
		return nil, nil, err
	}
	def, err := decode.Default(t)
	return set, def, err
}

func compileType(t *chunk.Type) (setter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8:
		return setSigned[int8](math.MinInt8, math.MaxInt8, true), nil
	case chunk.KindInt16:
		return setSigned[int16](math.MinInt16, math.MaxInt16, false), nil
	case chunk.KindInt32:
		return setSigned[int32](math.MinInt32, math.MaxInt32, false), nil
	case chunk.KindInt64:
		return setSigned[int64](math.MinInt64, math.MaxInt64, false), nil
	case chunk.KindUInt8:
		return setUnsigned[uint8](math.MaxUint8, true), nil
	case chunk.KindUInt16:
		return setUnsigned[uint16](math.MaxUint16, false), nil
	case chunk.KindUInt32:
		return setUnsigned[uint32](math.MaxUint32, false), nil
	case chunk.KindUInt64:
		return setUnsigned[uint64](math.MaxUint64, false), nil
	case chunk.KindFloat32:
		return setFloat32, nil
	case chunk.KindFloat64:
		return setFloat64, nil
	case chunk.KindBool:
		return setBool, nil
	case chunk.KindString:
		return setString, nil
	case chunk.KindFixedString:
		return setFixedString(t.Len), nil
	case chunk.KindUUID:
		return setUUID, nil
	case chunk.KindDecimal:
		intDigits := -1
		if t.Precision > 0 {
			intDigits = t.Precision - t.Scale
		}
		return setDecimal(intDigits, t.Scale), nil
	case chunk.KindEnum8, chunk.KindEnum16:
		if len(t.Enum) == 0 {
			return nil, fmt.Errorf("type %s has no values", t.Name)
		}
		names := make(map[int16]string, len(t.Enum))
		for name, v := range t.Enum {
			names[v] = name
		}
		return setEnum(t.Enum, names), nil
	case chunk.KindDateTime:
		return setDateTime, nil
	case chunk.KindDate:
		return setDate, nil
	case chunk.KindDate32:
		return setDate32, nil
	case chunk.KindDateTime64:
		return setDateTime64(t.Precision), nil
	case chunk.KindIPv4:
		return setIPv4, nil
	case chunk.KindIPv6:
		return setIPv6, nil
	case chunk.KindInt128, chunk.KindUInt128:
		return setBigInt(2, t.Kind == chunk.KindInt128), nil
	case chunk.KindInt256, chunk.KindUInt256:
		return setBigInt(4, t.Kind == chunk.KindInt256), nil
	case chunk.KindNullable:
		inner, _, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		return setNullable(inner), nil
	case chunk.KindArray:
		elem, elemDef, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		return setArray(elem, elemDef), nil
	case chunk.KindTuple:
		n := len(t.Elems)
		sets, defs := make([]setter, n), make([]decode.Defaulter, n)
		for i, et := range t.Elems {
			var err error
			if sets[i], defs[i], err = compile(et); err != nil {
				return nil, err
			}
		}
		return setTuple(t.ElemNames, sets, defs), nil
	case chunk.KindMap:
		key, err := compileMapKey(t.Key)
		if err != nil {
			return nil, err
		}
		val, valDef, err := compile(t.Elem)
		if err != nil {
			return nil, err
		}
		m := &jsonMap{key: key, val: val, valDef: valDef}
		m.visitFn = m.visit
		return m.set, nil
	}
	return nil, fmt.Errorf("type %s cannot be decoded from JSON", t.Name)
}

// setTuple takes a JSON array of the tuple's elements in order or, for a
// named tuple, an object whose fields are the elements (missing ones get
// their default, others are ignored).
func setTuple(names []string, sets []setter, defs []decode.Defaulter) setter {
	want := "an array"
	if names != nil {
		want = "an array or an object"
	}
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		tc := col.(*chunk.Tuple)
		switch v.Type() {
		case fastjson.TypeArray:
			items, _ := v.Array()
			if len(items) != len(sets) {
				return newError(decode.ReasonWrongType, v, fmt.Sprintf("has %d elements, want %d", len(items), len(sets)))
			}
			for i, it := range items {
				if e := setElem(d, sets[i], defs[i], it, tc.Elems[i]); e != nil {
					e.Err = fmt.Errorf("%s: %w", decode.TupleLabel(names, i), e.Err)
					return e
				}
			}
		case fastjson.TypeObject:
			if names == nil {
				return wrongType(v, want)
			}
			o, _ := v.Object()
			for i, name := range names {
				if e := setElem(d, sets[i], defs[i], o.Get(name), tc.Elems[i]); e != nil {
					e.Err = fmt.Errorf("%s: %w", decode.TupleLabel(names, i), e.Err)
					return e
				}
			}
		default:
			return wrongType(v, want)
		}
		tc.EndRow()
		return nil
	}
}

// setElem appends v (nil when missing) to an element column.
func setElem(d *Decoder, set setter, def decode.Defaulter, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v == nil || v.Type() == fastjson.TypeNull {
		decode.AppendDefault(def, col)
		return nil
	}
	return set(d, v, col)
}

// mapKeySetter appends a JSON object key to a map's key column.
type mapKeySetter func(d *Decoder, key []byte, col chunk.Column) *decode.Error

// compileMapKey returns the setter of object keys into key type t: the
// key itself for String, else the key as a JSON string converted as t
// (a number for the integer types, a date for Date, ...).
func compileMapKey(t *chunk.Type) (mapKeySetter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return func(d *Decoder, key []byte, col chunk.Column) *decode.Error {
			col.(*chunk.Strings).Append(key)
			return nil
		}, nil
	case chunk.KindNullable, chunk.KindArray, chunk.KindMap, chunk.KindTuple:
		return nil, fmt.Errorf("map key type %s is not supported", t.Name)
	}
	set, _, err := compile(t)
	if err != nil {
		return nil, err
	}
	return func(d *Decoder, key []byte, col chunk.Column) *decode.Error {
		d.arena.Reset()
		return set(d, d.arena.NewStringBytes(key), col)
	}, nil
}

// jsonMap decodes a JSON object into a Map column. Object.Visit takes a
// callback, so the state of the visit lives here (a Map's setter is never
// re-entered: a value of a map is never the same map type).
type jsonMap struct {
	key     mapKeySetter
	val     setter
	valDef  decode.Defaulter
	visitFn func(key []byte, v *fastjson.Value)
	// During a visit:
	d   *Decoder
	m   *chunk.Map
	err *decode.Error
}

func (s *jsonMap) set(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	o, err := v.Object()
	if err != nil {
		return wrongType(v, "an object")
	}
	s.d, s.m, s.err = d, col.(*chunk.Map), nil
	o.Visit(s.visitFn)
	m, e := s.m, s.err
	s.d, s.m, s.err = nil, nil, nil
	if e != nil {
		return e
	}
	m.EndRow()
	return nil
}

func (s *jsonMap) visit(key []byte, v *fastjson.Value) {
	if s.err != nil {
		return
	}
	if e := s.key(s.d, key, s.m.Keys); e != nil {
		e.Err = fmt.Errorf("map key %s: %w", decode.Quote(key), e.Err)
		s.err = e
		return
	}
	if e := setElem(s.d, s.val, s.valDef, v, s.m.Values); e != nil {
		e.Err = fmt.Errorf("map value of key %s: %w", decode.Quote(key), e.Err)
		s.err = e
	}
}

// raw returns the text of a number value, copied to the decoder's scratch
// buffer (valid until the next call).
func (d *Decoder) raw(v *fastjson.Value) []byte {
	d.scratch = v.MarshalTo(d.scratch[:0])
	return d.scratch
}

// numberOf returns the number a number value or numeric string holds.
// A string that is not a number is wrong_type; a number value that does not
// follow the JSON grammar (fastjson accepts NaN, Inf and sign soup) is
// corrupt.
func (d *Decoder) numberOf(v *fastjson.Value) (decode.Number, *decode.Error) {
	switch v.Type() {
	case fastjson.TypeNumber:
		n, ok := decode.ParseNumber(d.raw(v))
		if !ok {
			return n, newError(decode.ReasonCorrupt, v, "is not a valid JSON number")
		}
		return n, nil
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		n, ok := decode.ParseNumber(b)
		if !ok {
			return n, newError(decode.ReasonWrongType, v, "is not a number")
		}
		return n, nil
	}
	return decode.Number{}, wrongType(v, "a number")
}

func setSigned[T int8 | int16 | int32 | int64](lo, hi int64, bools bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		var x int64
		switch t := v.Type(); {
		case bools && t == fastjson.TypeTrue:
			x = 1
		case bools && t == fastjson.TypeFalse:
		default:
			n, e := d.numberOf(v)
			if e != nil {
				return e
			}
			var r decode.IntResult
			x, r = n.Signed(lo, hi)
			if e := intError(v, r); e != nil {
				return e
			}
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return nil
	}
}

func setUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64, bools bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		var x uint64
		switch t := v.Type(); {
		case bools && t == fastjson.TypeTrue:
			x = 1
		case bools && t == fastjson.TypeFalse:
		default:
			n, e := d.numberOf(v)
			if e != nil {
				return e
			}
			var r decode.IntResult
			x, r = n.Unsigned(hi)
			if e := intError(v, r); e != nil {
				return e
			}
		}
		col.(*chunk.Fixed[T]).Append(T(x))
		return nil
	}
}

func intError(v *fastjson.Value, r decode.IntResult) *decode.Error {
	switch r {
	case decode.IntFraction:
		return newError(decode.ReasonWrongType, v, "is not an integer")
	case decode.IntRange:
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	return nil
}

func setFloat64(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	n, e := d.numberOf(v)
	if e != nil {
		return e
	}
	f, ok := n.Float(64)
	if !ok {
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	col.(*chunk.Fixed[float64]).Append(f)
	return nil
}

func setFloat32(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	n, e := d.numberOf(v)
	if e != nil {
		return e
	}
	f, ok := n.Float(32)
	if !ok {
		return newError(decode.ReasonOutOfRange, v, "out of range")
	}
	col.(*chunk.Fixed[float32]).Append(float32(f))
	return nil
}

func setBool(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	var x bool
	switch v.Type() {
	case fastjson.TypeTrue:
		x = true
	case fastjson.TypeFalse:
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		u, r := n.Unsigned(1)
		if e := intError(v, r); e != nil {
			return e
		}
		x = u == 1
	default:
		return wrongType(v, "a boolean")
	}
	col.(*chunk.Fixed[bool]).Append(x)
	return nil
}

func setString(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	s := col.(*chunk.Strings)
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		s.Append(b)
		return nil
	}
	s.Append(d.raw(v))
	return nil
}

func setFixedString(size int) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		b, e := stringOf(v)
		if e != nil {
			return e
		}
		if len(b) > size {
			return newError(decode.ReasonOutOfRange, v, fmt.Sprintf("is longer than %d bytes", size))
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setUUID(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	if !decode.IsUUID(b) {
		return newError(decode.ReasonWrongType, v, "is not a UUID")
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

// setDecimal stores decimal text; intDigits is the precision minus the
// scale, or negative when the type's precision is unknown.
//
// The value must have at most intDigits digits before the point, whatever
// its form (1e30 has 31). Digits past the scale are kept in plain text as
// written: the insert truncates them toward zero. A number with an
// exponent is stored as the plain text of its value truncated toward zero
// at the scale (what the insert would make of it), so that a huge negative
// exponent costs no big-number arithmetic later.
func setDecimal(intDigits, scale int) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		if intDigits < 0 {
			col.(*chunk.Strings).Append(n.Text)
			return nil
		}
		lo, hi, exp := n.Significant()
		// hi-lo+exp is the number of digits before the point (<= 0 for
		// |n| < 1); exp is clamped to ±maxExp, so this cannot overflow.
		if lo < hi && hi-lo+exp > intDigits {
			return newError(decode.ReasonOutOfRange, v, "out of range")
		}
		if bytes.IndexAny(n.Text, "eE") < 0 {
			col.(*chunk.Strings).Append(n.Text)
			return nil
		}
		d.dec = appendPlainDecimal(d.dec[:0], &n, lo, hi, exp, scale)
		col.(*chunk.Strings).Append(d.dec)
		return nil
	}
}

// appendPlainDecimal appends the plain text (no exponent) of n, whose
// significant digits are n.Digit(lo..hi-1) with the last one at 10^exp,
// truncated toward zero at scale digits after the point. The caller has
// checked the digits before the point; the work is bounded by them and
// the scale, never by the exponent.
func appendPlainDecimal(dst []byte, n *decode.Number, lo, hi, exp, scale int) []byte {
	top := hi - lo + exp // the highest digit is at 10^(top-1)
	digitAt := func(p int) byte {
		if i := hi - 1 - (p - exp); i >= lo && i < hi {
			return n.Digit(i)
		}
		return '0'
	}
	if lo == hi || top-1 < -scale {
		return append(dst, '0') // zero, or nothing left at the scale
	}
	if n.Neg {
		dst = append(dst, '-')
	}
	if top > 0 {
		for p := top - 1; p >= 0; p-- {
			dst = append(dst, digitAt(p))
		}
	} else {
		dst = append(dst, '0')
	}
	// The lowest nonzero digit is at 10^exp; nothing below 10^-scale.
	if last := max(exp, -scale); last < 0 {
		dst = append(dst, '.')
		for p := -1; p >= last; p-- {
			dst = append(dst, digitAt(p))
		}
	}
	return dst
}

func setEnum(values map[string]int16, names map[int16]string) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		s := col.(*chunk.Strings)
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			if _, ok := values[string(b)]; ok {
				s.Append(b)
				return nil
			}
		}
		n, e := d.numberOf(v)
		if e != nil {
			if e.Reason == decode.ReasonWrongType && v.Type() == fastjson.TypeString {
				return newError(decode.ReasonOutOfRange, v, "is not a value of the enum")
			}
			return e
		}
		x, r := n.Signed(math.MinInt16, math.MaxInt16)
		name, ok := names[int16(x)]
		if r != decode.IntOK || !ok {
			return newError(decode.ReasonOutOfRange, v, "is not a value of the enum")
		}
		s.AppendString(name)
		return nil
	}
}

// timeOf returns the epoch seconds a date-time string or epoch number (or
// numeric string) holds; range checks are the caller's.
func (d *Decoder) timeOf(v *fastjson.Value, what string) (int64, *decode.Error) {
	var sec int64
	var ok bool
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if n, isNum := decode.ParseNumber(b); isNum {
			sec, ok = decode.EpochSeconds(&n)
		} else {
			sec, ok = d.timeText(b)
		}
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return 0, e
		}
		sec, ok = decode.EpochSeconds(&n)
	default:
		return 0, wrongType(v, "a date-time string or epoch number")
	}
	if !ok || sec < 0 {
		return 0, newError(decode.ReasonOutOfRange, v, what)
	}
	return sec, nil
}

// setDateTime appends a DateTime within the server's range (d.ranges).
func setDateTime(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	sec, e := d.timeOf(v, decode.NotDateTime)
	if e != nil {
		return e
	}
	if sec > d.ranges.DateTimeMax {
		return pastRange(v, d.ranges.DateTimeError(sec))
	}
	col.(*chunk.Fixed[int64]).Append(sec)
	return nil
}

// setDate appends a Date within the server's range (d.ranges).
func setDate(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	sec, e := d.timeOf(v, decode.NotDate)
	if e != nil {
		return e
	}
	days := sec / 86400
	if days > d.ranges.DateMax {
		return pastRange(v, d.ranges.DateError(days))
	}
	col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
	return nil
}

// pastRange is the out_of_range error of a date past the server's range:
// `value "2106-02-08": Date 2106-02-08 is past the server's maximum ...`.
func pastRange(v *fastjson.Value, msg string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: errors.New("value " + shown(v) + ": " + msg)}
}

func setNullable(inner setter) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n := col.(*chunk.Nullable)
		if e := inner(d, v, n.Inner); e != nil {
			return e
		}
		n.MarkValue()
		return nil
	}
}

func setArray(elem setter, elemDef decode.Defaulter) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		a := col.(*chunk.Array)
		items, err := v.Array()
		if err != nil {
			return wrongType(v, "an array")
		}
		for _, it := range items {
			if it.Type() == fastjson.TypeNull {
				decode.AppendDefault(elemDef, a.Inner)
				continue
			}
			if e := elem(d, it, a.Inner); e != nil {
				return e
			}
		}
		a.EndRow()
		return nil
	}
}

// stringOf returns the unescaped content of a string value.
func stringOf(v *fastjson.Value) ([]byte, *decode.Error) {
	b, err := v.StringBytes()
	if err != nil {
		return nil, wrongType(v, "a string")
	}
	return b, nil
}

// newError returns an error about value v: "value <v> <what>".
func newError(r decode.Reason, v *fastjson.Value, what string) *decode.Error {
	return &decode.Error{Reason: r, Err: errors.New("value " + shown(v) + " " + what)}
}

func wrongType(v *fastjson.Value, want string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonWrongType,
		Err: fmt.Errorf("value %s is %s, want %s", shown(v), article(v.Type()), want)}
}

func article(t fastjson.Type) string {
	switch t {
	case fastjson.TypeObject, fastjson.TypeArray:
		return "an " + t.String()
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "a boolean"
	}
	return "a " + t.String()
}

// shown is the JSON text of v, cut to decode.MaxShown bytes.
func shown(v *fastjson.Value) string {
	b := v.MarshalTo(nil)
	if len(b) <= decode.MaxShown {
		return string(b)
	}
	n := decode.MaxShown
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "..."
}

// unitDigits is log10 of decode.EpochUnit.
func unitDigits(v float64) int {
	switch decode.EpochUnit(v) {
	case 1e9:
		return 9
	case 1e6:
		return 6
	case 1e3:
		return 3
	}
	return 0
}

// epochTicks converts an epoch number (seconds or, by the magnitude
// heuristic of decode.EpochSeconds, a finer unit; negative numbers too) to ticks of
// 10^-p seconds, rounding down. ok is false when the result overflows int64.
func epochTicks(n *decode.Number, p int) (int64, bool) {
	f, ok := n.Float(64)
	if !ok {
		return 0, false
	}
	e := n.Exp - len(n.Frac) + p - unitDigits(math.Abs(f))
	nd := len(n.Int) + len(n.Frac)
	const limit = 1 << 63
	var mag uint64
	inexact := false
	for i := 0; i < nd; i++ {
		c := uint64(n.Digit(i) - '0')
		if e < 0 && i >= nd+e {
			inexact = inexact || c != 0
			continue
		}
		if mag > (limit-c)/10 {
			return 0, false
		}
		mag = mag*10 + c
	}
	for ; e > 0 && mag != 0; e-- {
		if mag > limit/10 {
			return 0, false
		}
		mag *= 10
	}
	if !n.Neg {
		if mag > math.MaxInt64 {
			return 0, false
		}
		return int64(mag), true
	}
	if inexact {
		mag++
	}
	if mag > limit {
		return 0, false
	}
	return int64(-mag), true
}

// ticksOf returns the ticks of 10^-p seconds since the epoch a date-time
// string (fractional seconds kept to p digits, the rest dropped) or epoch
// number holds, within [lo, hi] ticks; what describes the range in errors.
func (d *Decoder) ticksOf(v *fastjson.Value, p int, lo, hi int64, what string) (int64, *decode.Error) {
	var ticks int64
	ok := false
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		if n, isNum := decode.ParseNumber(b); isNum {
			ticks, ok = epochTicks(&n, p)
			break
		}
		if d.layout != "" {
			if t, err := time.Parse(d.layout, string(b)); err == nil {
				sec := t.Unix()
				if sec < lo/decode.Pow10[p]-1 || sec > hi/decode.Pow10[p]+1 {
					break
				}
				ticks, ok = sec*decode.Pow10[p]+int64(t.Nanosecond())/decode.Pow10[9-p], true
				break
			}
		}
		sec, isTime := decode.ParseTime(b)
		if !isTime {
			break
		}
		// Bound the seconds first so the multiplication cannot overflow.
		if sec < lo/decode.Pow10[p]-1 || sec > hi/decode.Pow10[p]+1 {
			break
		}
		ticks, ok = sec*decode.Pow10[p], true
		if len(b) > 20 && b[19] == '.' {
			// decode.ParseTime checked the form: digits follow up to the zone.
			frac := b[20:]
			for i := 0; i < p; i++ {
				if i < len(frac) && frac[i] >= '0' && frac[i] <= '9' {
					ticks += int64(frac[i]-'0') * decode.Pow10[p-1-i]
				} else {
					break
				}
			}
		}
	case fastjson.TypeNumber:
		n, e := d.numberOf(v)
		if e != nil {
			return 0, e
		}
		ticks, ok = epochTicks(&n, p)
	default:
		return 0, wrongType(v, "a date-time string or epoch number")
	}
	if !ok || ticks < lo || ticks > hi {
		return 0, newError(decode.ReasonOutOfRange, v, what)
	}
	return ticks, nil
}

func setDateTime64(p int) setter {
	lo, hi := decode.DateTime64Range(p)
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		t, e := d.ticksOf(v, p, lo, hi, decode.NotDateTime64)
		if e != nil {
			return e
		}
		col.(*chunk.DateTime64).Append(t)
		return nil
	}
}

func setDate32(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	sec, e := d.ticksOf(v, 0, decode.MinDate32*86400, (decode.MaxDate32+1)*86400-1, decode.NotDate32)
	if e != nil {
		return e
	}
	days := sec / 86400
	if sec%86400 < 0 {
		days--
	}
	if days < decode.MinDate32 || days > decode.MaxDate32 {
		return newError(decode.ReasonOutOfRange, v, decode.NotDate32)
	}
	col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
	return nil
}

// setIPv4 takes the dotted form, or the address as a number.
func setIPv4(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v.Type() == fastjson.TypeNumber {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		x, r := n.Unsigned(math.MaxUint32)
		if e := intError(v, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[uint32]).Append(uint32(x))
		return nil
	}
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || !a.Is4() {
		return newError(decode.ReasonWrongType, v, "is not an IPv4 address")
	}
	col.(*chunk.Fixed[uint32]).Append(decode.IPv4Number(a))
	return nil
}

// setIPv6 takes any IPv6 text form; an IPv4 address gives its IPv4-mapped
// form, as the server does.
func setIPv6(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
	b, e := stringOf(v)
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" {
		return newError(decode.ReasonWrongType, v, "is not an IP address")
	}
	col.(*chunk.Fixed[[16]byte]).Append(a.As16())
	return nil
}

// setBigInt takes a JSON number or a string holding one, exactly.
func setBigInt(words int, signed bool) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		n, e := d.numberOf(v)
		if e != nil {
			return e
		}
		w, r := n.Wide(words, signed)
		if e := intError(v, r); e != nil {
			return e
		}
		col.(*chunk.BigInt).Append(w[:words])
		return nil
	}
}

// timeText reads a date-time string: with the configured layout first,
// then as RFC 3339 or ClickHouse's "YYYY-MM-DD hh:mm:ss".
func (d *Decoder) timeText(b []byte) (int64, bool) {
	if d.layout != "" {
		if t, err := time.Parse(d.layout, string(b)); err == nil {
			return t.Unix(), true
		}
	}
	return decode.ParseTime(b)
}
