package json

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

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
	// DateTime64 and Date strings (a layout without a zone reads local
	// time in the column's zone);
	// RFC 3339 and epoch numbers are still accepted.
	TimeLayout string
	// Framing is how rows sit in one record value: FramingSingle (one
	// object, the default), FramingNDJSON (one object per line, blank lines
	// ignored) or FramingArray (a JSON array of objects).
	Framing string
	// Rows bounds the rows one record makes with the ndjson and array
	// framings (a single object makes one row): past either limit the
	// record is decode.ReasonTooLarge, and none of its rows is kept.
	Rows decode.RowLimits
	// Ranges are the Date and DateTime ranges of the server the rows go
	// to (chunk.RangesFor its version); the zero value is the narrower
	// range every server reads back (chunk.DefaultRanges).
	Ranges chunk.ServerRanges
	// Filled are columns no field feeds (Fields[i] is "") that the
	// caller fills after each Decode (a record's metadata): the decoder
	// may leave them short of the chunk's rows, and does not check their
	// arrays as a Nested structure's.
	Filled []int
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
//     DEFAULT value when the plan computed one (sink/clickhouse SetDefault),
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
//   - DateTime: a date-time string (see below) or an epoch number (a JSON
//     number or a string of one). Numbers are seconds, or by magnitude
//     milliseconds (> 1e11), microseconds (> 1e14) or nanoseconds
//     (> 1e17); fractions of a second are dropped. The instant must be
//     within the range the server reads back in the column's zone
//     (chunk.ServerRanges.DateTimeRange; at most
//     1970-01-01T00:00:00Z..2106-02-07T06:28:15Z).
//   - Date: a date string (YYYY-MM-DD, a date-time whose calendar day is
//     taken: the day as written without an offset, the UTC day with one),
//     a compact date string of eight digits (YYYYMMDD, as the server reads
//     it), or a JSON number of epoch seconds (as DateTime) whose UTC day
//     is taken; within 1970-01-01..2149-06-06. Any other string of digits
//     is wrong_type: it is not taken as a number of seconds.
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
// "2026-11-29 10:00:00" works), or a bare date. A text with an offset (Z,
// +01:00) is the instant it names; a text without one is local time in
// the column's zone (DateTime('Asia/Tokyo'), DateTime64(3, 'Europe/Berlin');
// a column without a zone has the server's, chunk.ServerRanges.TZ), a
// local time in a daylight-saving gap or overlap resolved as the server
// resolves it (chunk.Zone.Instant).
//
// Records are decoded in one pass (fast.go; field paths into nested
// objects in fast_nested.go), unless the table has a Nested structure,
// with exactly the results described here: scalars and arrays of scalars
// go straight from the text into the columns, other values are parsed by
// fastjson one field (one array element, for an Array column) at a time.
// Every other record, and every error, goes through fastjson whole, except
// that a record over 32 KiB with a bad value and no field path into nested
// objects is diagnosed by the one-pass path (diagnose).
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
	rowLim      decode.RowLimits
	framing     string
	layout      string
	layoutZoned bool                 // layout writes an offset (decode.LayoutZoned)
	nested      bool                 // some field is a path into nested objects ("a.b")
	rest        [][]string           // per column: the path left below an array of objects (Nested), or nil
	groups      []decode.NestedGroup // Nested structures whose arrays must have equal lengths
	arena       fastjson.Arena       // map keys as string values, for key types other than strings
	visitFn     func(key []byte, v *fastjson.Value)
	lookupByGet bool // benchmarks only: Object.Get per column (first duplicate wins) instead of one Visit

	// The prefixes of the paths, each looked up once per record (parents
	// before their children): pathKeys[k] is the last key of prefix k,
	// pathParent[k] the prefix it is a key of (-1: of the record), and
	// pathVals[k] its value in the record being decoded.
	pathKeys   []string
	pathParent []int
	pathVals   []*fastjson.Value

	// The one-pass path (fast.go); fast is nil for a Nested structure and
	// for paths it does not read (fast_nested.go).
	fast      []fastCol
	fastSet   []fastSetter // fast[i].set, for the common case
	fieldArr  []bool       // every column reading field i is an Array column
	fieldText []bool       // every column reading field i is a String column
	fieldMap  []bool       // every column reading field i is a Map column
	fieldPlan []fieldPlan  // what fastRow reads of field i, in one place
	top       objPlan      // what it reads of the record (fast_nested.go)
	nodeSeen  []uint32     // nodeSeen[k] == gen: the object on the paths k was read in this record
	seen      []uint32     // seen[i] == gen: column i has its value in this record
	gen       uint32
	filled    int           // the columns with their value in this record (seen[i] == gen)
	num       scanNum       // the last number scalar read, when it read it (numOf)
	parsedBig bool          // the one-pass path parsed a value larger than keepParserBytes alone
	diag      bool          // the one-pass path is diagnosing a record it gave up (diagnose)
	diagErr   *decode.Error // what it found
	noFast    bool          // tests and benchmarks only: always take the fastjson path
	skip      []bool        // the columns the caller fills (Options.Filled), when there are some
	skipped   int           // how many

	ranges chunk.ServerRanges // the server's Date and DateTime maximums
	// dates appends to Date columns within ranges (setDate).
	dates chunk.Times
}

// colPlan is the compiled plan of one column.
type colPlan struct {
	field, name, typ string
	path             []string // the field split at dots, when it has any
	set              setter
	// null is what a null appends (nullDefault); a missing field appends
	// the column's default.
	null decode.Defaulter
	// For an Array(T) column with a path: T's setter and default, used
	// when the path meets an array of objects (a Nested structure: column
	// n.a takes field a of every element of n).
	elemSet setter
	// node is the path node (Decoder.pathKeys) of the whole path, for a
	// path that is not read through arrays (elemSet nil); else -1.
	node int
}

// setter appends a non-null value v to col, whose concrete type matches
// the type the setter was compiled for. The *decode.Error it returns has only
// decode.Reason and Err set.
type setter func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error

// nullDefault is what a null appends to a column of type t: the column's
// default (nil), as for a missing value, except that a null into a
// Nullable column whose DEFAULT is not NULL stays NULL (the DEFAULT is for
// missing fields, as the server's own input formats have it).
func nullDefault(t *chunk.Type) decode.Defaulter {
	if t.HasDefault() && t.Base().Kind == chunk.KindNullable {
		return appendNull
	}
	return nil
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
		schema:      s,
		cols:        make([]colPlan, len(s.Types)),
		index:       make(map[string]int),
		slots:       make([]*fastjson.Value, len(s.Types)),
		max:         o.MaxRecordBytes,
		rowLim:      o.Rows,
		framing:     o.Framing,
		layout:      o.TimeLayout,
		layoutZoned: o.TimeLayout != "" && decode.LayoutZoned(o.TimeLayout),
		ranges:      o.Ranges.OrDefault(),
	}
	d.dates, _ = chunk.TimesOf(&chunk.Type{Kind: chunk.KindDate}, d.ranges)
	nodes := map[string]int{}
	for i, t := range s.Types {
		if _, err := chunk.NewColumn(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		set, err := compile(t, d.ranges)
		if err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		d.cols[i] = colPlan{field: fields[i], name: s.Names[i], typ: t.Name, set: set, null: nullDefault(t), node: -1}
		if strings.Contains(fields[i], ".") {
			d.cols[i].path = strings.Split(fields[i], ".")
			d.nested = true
			if t.Kind == chunk.KindArray {
				d.cols[i].elemSet, _ = compile(t.Elem, d.ranges) // cannot fail: compile(t) compiled it
			} else {
				d.cols[i].node = d.pathNode(nodes, d.cols[i].path)
			}
		}
		d.fast = append(d.fast, compileFastCol(t, d.ranges))
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
	if len(o.Filled) > 0 {
		d.skip = make([]bool, len(d.cols))
		for _, ci := range o.Filled {
			if ci < 0 || ci >= len(d.cols) || fields[ci] != "" {
				return nil, fmt.Errorf("decode: column %d is fed by a field, not filled by the caller", ci)
			}
			if !d.skip[ci] {
				d.skip[ci] = true
				d.skipped++
			}
		}
		// A Nested structure the caller fills is its business.
		d.groups = slices.DeleteFunc(d.groups, func(g decode.NestedGroup) bool { return g.All(d.skip) })
		if len(d.groups) == 0 {
			d.groups = nil
		}
	}
	if d.nested {
		d.rest = make([][]string, len(d.cols))
		d.pathVals = make([]*fastjson.Value, len(d.pathKeys))
	}
	// The fast path does not check the lengths of a Nested structure's
	// arrays.
	if d.groups == nil {
		d.seen = make([]uint32, len(d.cols))
		for _, f := range d.fast {
			d.fastSet = append(d.fastSet, f.set)
		}
		n := len(d.fields)
		d.fieldArr, d.fieldText, d.fieldMap = make([]bool, n), make([]bool, n), make([]bool, n)
		d.fieldPlan = make([]fieldPlan, n)
		for fi, cols := range d.fields {
			fp := &d.fieldPlan[fi]
			fp.cols = cols
			if !strings.ContainsAny(d.names[fi], `"\`) {
				fp.setQuoted(d.names[fi] + `"`)
			}
			fp.fast, d.fieldArr[fi], d.fieldText[fi], d.fieldMap[fi] = true, true, true, true
			for _, ci := range cols {
				d.fieldMap[fi] = d.fieldMap[fi] && d.fast[ci].mapKey != nil
				fp.fast = fp.fast && d.fast[ci].set != nil
				d.fieldArr[fi] = d.fieldArr[fi] && d.fast[ci].array
				d.fieldText[fi] = d.fieldText[fi] && d.fast[ci].text
			}
			fp.one = -1
			if len(cols) == 1 && fp.fast {
				fp.one, fp.set = cols[0], d.fast[cols[0]].set
			}
		}
		if !d.planObjects() {
			d.fast = nil
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
	bound := d.rowLim.Start(c, len(value)/2+1)
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
			bound.Undo(c)
			err.Err = fmt.Errorf("line %d: %w", line, err.Err)
			return 0, err
		}
		var err *decode.Error
		if c, err = bound.Check(c); err != nil {
			bound.Undo(c)
			return 0, err
		}
	}
	if err := bound.End(c); err != nil {
		bound.Undo(c)
		return 0, err
	}
	return bound.Rows(c), nil
}

// decodeArray decodes a JSON array of objects, all or nothing.
func (d *Decoder) decodeArray(value []byte, c *chunk.Chunk) (int, error) {
	if d.fast != nil && !d.noFast && !d.lookupByGet {
		if n, err, ok := d.arrayElements(value, c); ok {
			return n, err
		}
	}
	defer d.release(len(value))
	if e := checkEscapes(value); e != nil {
		return 0, e
	}
	v, err := d.p.ParseBytes(value)
	if err != nil {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: parseError(err, value)}
	}
	elems, err := v.Array()
	if err != nil {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("record is %s, want an array of objects", article(v.Type()))}
	}
	if d.rowLim.MaxRows > 0 && len(elems) > d.rowLim.MaxRows {
		return 0, decode.TooManyRows(len(elems), d.rowLim.MaxRows)
	}
	bound := d.rowLim.Start(c, len(elems))
	for i, ev := range elems {
		o, err := ev.Object()
		if err != nil {
			bound.Undo(c)
			return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("element %d is %s, want an object", i, article(ev.Type()))}
		}
		if e := d.fromObject(o, c); e != nil {
			bound.Undo(c)
			e.Err = fmt.Errorf("element %d: %w", i, e.Err)
			return 0, e
		}
		var e *decode.Error
		if c, e = bound.Check(c); e != nil {
			bound.Undo(c)
			return 0, e
		}
	}
	if e := bound.End(c); e != nil {
		bound.Undo(c)
		return 0, e
	}
	return bound.Rows(c), nil
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
	bound := d.rowLim.Start(c, len(value)/2)
	i = skipWS(value, i+1)
	for k := 0; value[i] != ']'; k++ {
		end, _ := skipValue(value, i, 2)
		if value[i] != '{' {
			bound.Undo(c)
			what := "a value"
			if v, err := d.p.ParseBytes(value[i:end]); err == nil {
				what = article(v.Type())
			}
			d.release(end - i)
			return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("element %d is %s, want an object", k, what)}, true
		}
		if e := d.decodeOne(value[i:end], c); e != nil {
			bound.Undo(c)
			e.Err = fmt.Errorf("element %d: %w", k, e.Err)
			return 0, e, true
		}
		var e *decode.Error
		if c, e = bound.Check(c); e != nil {
			bound.Undo(c)
			return 0, e, true
		}
		if i = skipWS(value, end); value[i] == ',' {
			i = skipWS(value, i+1)
		}
	}
	if e := bound.End(c); e != nil {
		bound.Undo(c)
		return 0, e, true
	}
	return bound.Rows(c), nil, true
}

// decodeOne decodes one JSON object into one row.
func (d *Decoder) decodeOne(value []byte, c *chunk.Chunk) *decode.Error {
	onePass := d.fast != nil && !d.noFast && !d.lookupByGet
	if onePass && d.decodeFast(value, c) {
		c.Rows++
		return nil
	}
	// fastjson keeps escapes the server refuses, or alters them.
	if e := checkEscapes(value); e != nil {
		return e
	}
	if onePass && !d.nested {
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

// pathNode returns the path node of path, adding it and its prefixes to
// the nodes (by dotted prefix) as needed.
func (d *Decoder) pathNode(nodes map[string]int, path []string) int {
	parent := -1
	for k := range path {
		prefix := strings.Join(path[:k+1], ".")
		n, ok := nodes[prefix]
		if !ok {
			n = len(d.pathKeys)
			nodes[prefix] = n
			d.pathKeys = append(d.pathKeys, path[k])
			d.pathParent = append(d.pathParent, parent)
		}
		parent = n
	}
	return parent
}
