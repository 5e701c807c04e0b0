package avro

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Options configures an Avro decoder.
type Options struct {
	// Fields is the source field path for each schema column, in schema
	// order: a field of the writer's record, or "a.b" for field b of the
	// nested record a. "" leaves that column at its default. Nil means
	// every column is read from the top-level field of the same name.
	Fields []string
	// MaxRecordBytes rejects longer datums as decode.ReasonTooLarge without
	// decoding them; 0 means unlimited.
	MaxRecordBytes int
	// Validate is how strictly a writer schema must match the table:
	// ValidateOff (or ""): writer fields with no column are skipped and
	// columns no field fills get their defaults; ValidateNames: every
	// writer field must have a column; ValidateFull: also every column must
	// be filled by a writer field (or the reader schema's default), unless
	// it is Nullable. A field whose type cannot go into its column is
	// refused at every level. A refused schema fails New, listing every
	// mismatch at once.
	Validate string
	// ReaderSchema, when set, is the schema writers' records are resolved
	// to, at every level of nesting (see avroreader.go): Fields name the
	// reader's fields; a writer field that is a reader field or one of its
	// aliases fills it; writer fields the reader lacks are ignored; reader
	// fields the writer lacks take the reader's default (the column's own
	// default when it has none).
	ReaderSchema string
	// Ranges are the Date and DateTime ranges of the server the rows go
	// to (chunk.RangesFor its version); the zero value is the narrower
	// range every server reads back (chunk.DefaultRanges).
	Ranges chunk.ServerRanges
}

// Decoder decodes Avro binary datums of one writer schema (a record), one
// datum into one row. Framing (a schema registry header, an object
// container file) is handled before Decode.
//
// The schema is parsed with hamba/avro; the datum is decoded by Avro
// itself, straight into the column buffers: New compiles a flat list of
// steps in writer-field order (the fields of nested records inlined), each
// of which decodes one field into its columns with a setter chosen for the
// writer type and column type, or skips it. Decoding allocates nothing
// but column growth.
//
// Conversions, by column type (a LowCardinality wrapper is ignored):
//
//   - Int8..Int64, UInt8..UInt64: int or long, whatever its logical type
//     (a time, date or timestamp gives its raw number); a value outside
//     the column's range is out_of_range. Int8 and UInt8 also take a
//     boolean as 0 or 1.
//   - Float32, Float64: float, double, int or long. A double beyond
//     Float32's range is out_of_range (infinities and NaN pass).
//   - Bool: boolean.
//   - DateTime: an int or long with logical type timestamp-millis,
//     timestamp-micros, local-timestamp-millis or local-timestamp-micros
//     (seconds, rounded down) or date (midnight UTC). The result must be
//     within 1970-01-01T00:00:00Z..2106-02-07T06:28:15Z.
//   - Date: an int with logical type date (days), or a timestamp as above
//     (its UTC day); within 1970-01-01..2149-06-06.
//   - Date32: as Date, within 1900-01-01..2299-12-31.
//   - DateTime64(P): an int or long with logical type timestamp-millis,
//     timestamp-micros, local-timestamp-millis, local-timestamp-micros or
//     date, scaled to ticks of 10^-P seconds (rounded down); within
//     1900-01-01T00:00:00Z..2262-04-11T23:47:16.854775807Z.
//   - IPv4, IPv6: a string in the address's text form (an IPv4 address
//     into IPv6 is stored IPv4-mapped); anything else is wrong_type.
//   - Int128, Int256, UInt128, UInt256: int or long; a negative value into
//     an unsigned type is out_of_range.
//   - String: string, bytes, fixed (raw bytes), enum (the symbol); a bytes
//     or fixed decimal gives its decimal text at the writer's scale.
//   - FixedString(N): string, bytes, or fixed of at most N bytes; a longer
//     value is out_of_range.
//   - UUID: a string in the 36-character 8-4-4-4-12 hex form (wrong_type
//     otherwise).
//   - Enum8, Enum16: string or enum whose name is one of the column's
//     (out_of_range otherwise).
//   - Decimal(P, S): a bytes or fixed decimal (big-endian two's
//     complement), or an int or long (scale 0), stored as decimal text at
//     scale S: digits beyond S are dropped (truncating toward zero), and a
//     value of more than P significant digits is out_of_range.
//   - Array(T): an array, each item converted as T.
//   - Nullable(T): a union of null and branches that convert as T; null
//     gives NULL. A value that is not a union converts as T.
//
// A union of null and other types into a column that is not Nullable gives
// the column's default for null: the same defaults as the JSON decoder's
// (see JSON), the table's DEFAULT when the plan computed one. The same
// holds for a column whose field the writer schema lacks (and the reader
// schema, if any, gives no default), for a column with no field, and for
// the columns read from the fields of a nested record in a [null, record]
// union that is null. A null into a Nullable column is NULL whatever the
// DEFAULT.
//
//   - Map(K, V): a map, each value converted as V, in the writer's order.
//     K is String (or LowCardinality(String)) or an integer type, whose
//     keys are parsed from their text like the JSON decoder's numeric
//     strings: a key that is not a number is wrong_type, one outside K's
//     range out_of_range.
//   - Tuple(T1, ..., Tn): a record, its fields in order into the elements
//     (the counts must agree); into a named tuple, fields by name (fields
//     the tuple lacks are skipped, elements the record lacks get their
//     default).
//   - Nested: the Array columns n.a, n.b, ... of a Nested structure n take,
//     from an array of records n (or a [null, array] union, null giving
//     empty arrays), field a, b, ... of each record: one element per record
//     in every column, the element type's default where a record lacks the
//     field. Arrays of records inside those records cannot feed columns.
//     The arrays of one Nested structure must end up of equal lengths
//     (out_of_range otherwise), whatever fields fill them.
//
// Maps, records and any field no column reads are skipped. A whole record
// goes only into a Tuple column (or its fields into columns of their own);
// a map only into a Map column.
//
// A datum that ends early, holds a malformed varint, a negative or too
// long length, a union branch or enum index out of range, a boolean other
// than 0 or 1, an int beyond 32 bits, or bytes after the record is corrupt.
// An array or map block claiming more items than the bytes left can hold
// is corrupt too.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema  *chunk.Schema
	names   []string // column names
	types   []string // column types as the server spells them
	steps   []avroStep
	missing []avroDefault        // columns no writer field feeds
	fields  []string             // the field path of each column
	groups  []decode.NestedGroup // Nested structures whose arrays must have equal lengths
	max     int
	r       avroReader
}

var _ decode.Decoder = (*Decoder)(nil)

// avroStep is one writer field of the record (or of a nested record,
// inlined) in writer order, or the default of a reader field the writer
// lacks. Exactly one of skip, targets, opt, nest, peek and fill is set.
type avroStep struct {
	path    string
	skip    *avroSkip
	targets []avroTarget
	opt     *avroOptional
	nest    *avroNested
	fill    *avroFill
	// peek decodes the field into its columns and goes back to its start:
	// the next steps read the same field again (a record that goes into
	// Tuple columns and whose fields feed columns of their own).
	peek []avroTarget
}

// avroNested is an array of records whose fields feed the Array columns
// of a Nested structure (field x of the records of array n into column
// n.x): per record, its steps, which append to the columns' elements, and
// the element default of every column the records lack; at the end of the
// array, a row for every column.
type avroNested struct {
	null, arr int64 // union branches of a [null, array] union; null is -1 for an array
	itemMin   int
	steps     []avroStep
	fill      []avroDefault
	cols      []int
}

// avroTarget is one column a field is decoded into.
type avroTarget struct {
	col int
	set avroSetter
}

// avroOptional is a [null, record] union some of whose fields feed
// columns: the branch index, then the record's steps or, for null, the
// defaults of every column the record feeds.
type avroOptional struct {
	null, rec int64
	steps     []avroStep
	cols      []avroDefault
}

// avroDefault is a column (or tuple element) that gets its default: the
// reader schema's (konst), when there is one, else the column's.
type avroDefault struct {
	col   int
	def   decode.Defaulter
	konst *avroConst
}

// avroSetter reads one value of the writer type it was compiled for and
// appends it to col, whose concrete type matches the column type it was
// compiled for. The *decode.Error has only Reason and Err set.
type avroSetter func(r *avroReader, col chunk.Column) *decode.Error

// New compiles a decoder of datums written with writerSchema (Avro
// schema JSON text, a record) into chunks of schema s. Every field whose
// type cannot go into its column is reported, in one error.
func New(writerSchema string, s *chunk.Schema, o Options) (*Decoder, error) {
	fields, err := decode.ColumnFields(s, o.Fields, o.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	var reader *havro.RecordSchema
	if o.ReaderSchema != "" {
		rs, err := havro.ParseWithCache(o.ReaderSchema, "", &havro.SchemaCache{})
		if err != nil {
			return nil, fmt.Errorf("decode: avro reader schema: %w", err)
		}
		var ok bool
		if reader, ok = avroDeref(rs).(*havro.RecordSchema); !ok {
			return nil, fmt.Errorf("decode: avro reader schema is %s, want a record", typeName(rs))
		}
	}
	// A cache of its own: named types of other schemas (other versions of
	// the same record) must neither leak in nor be overwritten.
	ws, err := havro.ParseWithCache(writerSchema, "", &havro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("decode: avro writer schema: %w", err)
	}
	rec, ok := avroDeref(ws).(*havro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("decode: avro writer schema is %s, want a record", typeName(ws))
	}
	a := &Decoder{
		schema: s,
		names:  s.Names,
		types:  make([]string, len(s.Types)),
		fields: fields,
		groups: decode.NestedGroups(s),
		max:    o.MaxRecordBytes,
	}
	a.r.rg = o.Ranges.OrDefault()
	b := &avroBuilder{
		s:        s,
		byPath:   make(map[string][]int),
		prefixes: make(map[string]bool),
		defs:     make([]decode.Defaulter, len(s.Types)),
		used:     make([]bool, len(s.Types)),
		skips:    make(map[havro.Schema]*avroSkip),
	}
	for i, t := range s.Types {
		a.types[i] = t.Name
		if _, err := chunk.NewColumn(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		// decode.Default gives the column's default.
		def, err := decode.Default(t)
		if err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		b.defs[i] = def
		p := fields[i]
		if p == "" {
			continue
		}
		b.byPath[p] = append(b.byPath[p], i)
		for j := 0; j < len(p); j++ {
			if p[j] == '.' {
				b.prefixes[p[:j]] = true
			}
		}
	}
	a.steps = b.record(rec, reader, "")
	if len(b.errs) > 0 {
		// Refused at every validate_schema level, off included: the
		// records of such a schema are schema_mismatch.
		return nil, planError{&decode.Error{Reason: decode.ReasonSchemaMismatch, Err: fmt.Errorf("decode: avro writer schema does not fit the table:\n%w", errors.Join(b.errs...))}}
	}
	if mismatches := b.validate(o.Validate, rec, reader, fields); len(mismatches) > 0 {
		return nil, planError{&decode.Error{Reason: decode.ReasonSchemaMismatch, Err: fmt.Errorf("decode: avro writer schema does not match the table (validate_schema %s):\n%w", o.Validate, errors.Join(mismatches...))}}
	}
	for i := range s.Types {
		if !b.used[i] {
			a.missing = append(a.missing, avroDefault{col: i, def: b.defs[i]})
		}
	}
	return a, nil
}

// planError is the error of a writer schema refused for the table: an
// *decode.Error (errors.As finds it, with reason schema_mismatch) whose text is
// the whole list of mismatches, however long, for the startup error. A
// record's error quoting it is cut to decode.MaxErrorBytes like every other.
type planError struct{ e *decode.Error }

func (p planError) Error() string { return p.e.Err.Error() }
func (p planError) Unwrap() error { return p.e }

// Decode implements decode.Decoder. It appends exactly one row.
//
// It panics if c was not built for a schema with the decoder's column
// types, which is a programming error, not a property of the record.
func (a *Decoder) Decode(payload []byte, c *chunk.Chunk) (int, error) {
	if c.Schema != a.schema {
		a.checkSchema(c)
	}
	if payload == nil {
		// A tombstone; an empty payload is the datum of a record of no
		// fields (or of only nulls).
		return 0, decode.NullValue(payload)
	}
	if a.max > 0 && len(payload) > a.max {
		return 0, decode.TooLarge(len(payload), a.max)
	}
	rows := c.Rows
	a.r.buf, a.r.pos, a.r.emptyLeft = payload, 0, maxEmptyItems
	if e := a.run(a.steps, c); e != nil {
		a.r.buf = nil
		c.Truncate(rows)
		return 0, e
	}
	if n := len(payload) - a.r.pos; n > 0 {
		a.r.buf = nil
		c.Truncate(rows)
		return 0, &decode.Error{Reason: decode.ReasonCorrupt,
			Err: fmt.Errorf("%d bytes after the end of the record at byte %d", n, a.r.pos)}
	}
	a.r.buf = nil
	for _, m := range a.missing {
		decode.AppendDefault(m.def, c.Cols[m.col])
	}
	if a.groups != nil {
		if ci, e := decode.CheckNested(a.groups, c); e != nil {
			c.Truncate(rows)
			return 0, a.fieldError(e, a.fields[ci], ci)
		}
	}
	c.Rows++
	return 1, nil
}

// run executes steps on the datum in a.r.
func (a *Decoder) run(steps []avroStep, c *chunk.Chunk) *decode.Error {
	r := &a.r
	for i := range steps {
		st := &steps[i]
		switch {
		case len(st.targets) == 1:
			t := &st.targets[0]
			if e := t.set(r, c.Cols[t.col]); e != nil {
				return a.fieldError(e, st.path, t.col)
			}
		case st.skip != nil:
			if e := r.skip(st.skip, 0); e != nil {
				e.Err = fmt.Errorf("field %q: %w", st.path, e.Err)
				return e
			}
		case st.opt != nil:
			if e := a.optional(st, c); e != nil {
				return e
			}
		case st.nest != nil:
			if e := a.nested(st, c); e != nil {
				return e
			}
		case st.peek != nil:
			start := r.pos
			for j := range st.peek {
				r.pos = start
				t := &st.peek[j]
				if e := t.set(r, c.Cols[t.col]); e != nil {
					return a.fieldError(e, st.path, t.col)
				}
			}
			r.pos = start
		case st.fill != nil:
			// A reader default: decode its encoding, then go back to the
			// datum.
			buf, pos, left := r.buf, r.pos, r.emptyLeft
			r.buf, r.pos, r.emptyLeft = st.fill.data, 0, maxEmptyItems
			e := a.run(st.fill.steps, c)
			r.buf, r.pos, r.emptyLeft = buf, pos, left
			if e != nil {
				return e
			}
		default:
			// One field into several columns: decode it once per column.
			start := r.pos
			for j := range st.targets {
				r.pos = start
				t := &st.targets[j]
				if e := t.set(r, c.Cols[t.col]); e != nil {
					return a.fieldError(e, st.path, t.col)
				}
			}
		}
	}
	return nil
}

func (a *Decoder) optional(st *avroStep, c *chunk.Chunk) *decode.Error {
	o := st.opt
	i, e := a.r.long()
	if e != nil {
		e.Err = fmt.Errorf("field %q: %w", st.path, e.Err)
		return e
	}
	switch i {
	case o.rec:
		return a.run(o.steps, c)
	case o.null:
		for _, d := range o.cols {
			decode.AppendDefault(d.def, c.Cols[d.col])
		}
		return nil
	}
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("field %q: union branch %d of 2 at byte %d", st.path, i, a.r.pos)}
}

// nested reads an array of records into the Array columns of a Nested
// structure.
func (a *Decoder) nested(st *avroStep, c *chunk.Chunk) *decode.Error {
	o := st.nest
	r := &a.r
	if o.null >= 0 {
		i, e := r.long()
		if e != nil {
			e.Err = fmt.Errorf("field %q: %w", st.path, e.Err)
			return e
		}
		switch i {
		case o.null:
			for _, ci := range o.cols {
				c.Cols[ci].(*chunk.Array).EndRow()
			}
			return nil
		case o.arr:
		default:
			return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("field %q: union branch %d of 2 at byte %d", st.path, i, r.pos)}
		}
	}
	for {
		n, size, e := r.block(o.itemMin)
		if e != nil {
			e.Err = fmt.Errorf("field %q: %w", st.path, e.Err)
			return e
		}
		if n == 0 {
			break
		}
		start := r.pos
		for ; n > 0; n-- {
			if e := a.run(o.steps, c); e != nil {
				return e
			}
			for _, f := range o.fill {
				decode.AppendDefault(f.def, c.Cols[f.col])
			}
		}
		if size >= 0 && int64(r.pos-start) != size {
			e := r.corrupt(fmt.Sprintf("array block of %d bytes holds %d", size, r.pos-start))
			e.Err = fmt.Errorf("field %q: %w", st.path, e.Err)
			return e
		}
	}
	for _, ci := range o.cols {
		c.Cols[ci].(*chunk.Array).EndRow()
	}
	return nil
}

func (a *Decoder) fieldError(e *decode.Error, path string, col int) *decode.Error {
	e.Field, e.Column, e.Type = path, a.names[col], a.types[col]
	return e
}

func (a *Decoder) checkSchema(c *chunk.Chunk) {
	ok := c.Schema != nil && len(c.Cols) == len(a.types) && len(c.Schema.Types) == len(a.types)
	for i := 0; ok && i < len(a.types); i++ {
		ok = c.Schema.Types[i].Name == a.types[i]
	}
	if !ok {
		panic("decode: chunk schema does not match the decoder's schema")
	}
}

// avroBuilder compiles the steps of a writer schema.
type avroBuilder struct {
	s        *chunk.Schema
	byPath   map[string][]int // field path -> columns reading it
	prefixes map[string]bool  // every proper prefix of a field path
	defs     []decode.Defaulter
	used     []bool // column fed by a writer field
	skips    map[havro.Schema]*avroSkip
	errs     []error
	// elem > 0 while compiling the records of an array that feeds a
	// Nested structure.
	elem int
	// unfed are columns of Nested structures that no field of the
	// records feeds (validate_schema full lists them).
	unfed []avroUnfed
}

// avroUnfed is a column of a Nested structure fed by array, whose
// records have no field for it.
type avroUnfed struct {
	col   int
	array string
}

// record returns the steps of the fields of rec, whose path is prefix
// ("" or "a.b."), resolved to reader record rr when it is not nil.
func (b *avroBuilder) record(rec, rr *havro.RecordSchema, prefix string) []avroStep {
	var steps []avroStep
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
	}
	for fi, f := range rec.Fields() {
		name, ft := f.Name(), avroDeref(f.Type())
		var rt havro.Schema // the reader's type of the field
		if rr != nil {
			rf := resolved[fi]
			if rf == nil {
				// The reader lacks it: ignored, even where a column has
				// its name.
				steps = append(steps, avroStep{path: prefix + name, skip: b.skip(ft)})
				continue
			}
			name, rt = rf.Name(), rf.Type()
		}
		path := prefix + name
		cols := b.byPath[path]
		under := b.prefixes[path]
		sub, null, recIdx := recordOf(ft)
		for _, ci := range cols {
			b.used[ci] = true
		}
		if sub != nil {
			// A record goes into Tuple columns, or its fields feed columns
			// of their own ("a.b"), or both.
			var tuples []int
			for _, ci := range cols {
				switch t := b.target(ci); {
				case t == nil:
					// Not an Array, inside the records of an array:
					// nested reported it.
				case t.Base().Kind == chunk.KindTuple:
					tuples = append(tuples, ci)
				default:
					b.fail(path, ft, ci, errors.New("a whole record cannot go into a column other than a Tuple; address its fields as "+strconv.Quote(path+".name")))
				}
			}
			if len(tuples) > 0 {
				st := b.fieldStep(path, ft, rt, tuples)
				if !under {
					steps = append(steps, st)
					continue
				}
				steps = append(steps, avroStep{path: path, peek: st.targets})
			}
			switch {
			case !under:
				steps = append(steps, avroStep{path: path, skip: b.skip(ft)})
			default:
				inner := b.record(sub, readerRecord(sub, rt), path+".")
				if null < 0 {
					steps = append(steps, inner...)
					break
				}
				o := &avroOptional{null: null, rec: recIdx, steps: inner}
				collectCols(inner, func(ci int) { o.cols = append(o.cols, avroDefault{col: ci, def: b.def(ci)}) })
				steps = append(steps, avroStep{path: path, opt: o})
			}
			continue
		}
		if under {
			if arr, an, ai := arrayOfRecords(ft); arr != nil {
				// A Nested structure: columns path.x take field x of
				// every record of the array (and columns named path
				// take the array itself).
				if len(cols) > 0 {
					steps = append(steps, avroStep{path: path, peek: b.fieldStep(path, ft, rt, cols).targets})
				}
				steps = append(steps, b.nested(path, ft, rt, arr, an, ai))
				continue
			}
			for ci, p := range b.fieldPaths() {
				if strings.HasPrefix(p, path+".") {
					b.used[ci] = true
					b.fail(p, ft, ci, fmt.Errorf("field %q is %s, not a record or an array of records", path, typeName(ft)))
				}
			}
		}
		if len(cols) == 0 {
			steps = append(steps, avroStep{path: path, skip: b.skip(ft)})
			continue
		}
		steps = append(steps, b.fieldStep(path, ft, rt, cols))
	}
	if rr != nil {
		// Reader fields the writer lacks take the reader's default.
		have := make(map[*havro.Field]bool, len(resolved))
		for _, rf := range resolved {
			have[rf] = true
		}
		for _, rf := range rr.Fields() {
			if have[rf] || !rf.HasDefault() {
				continue
			}
			if st, ok := b.readerDefault(prefix, rf); ok {
				steps = append(steps, st)
			}
		}
	}
	return steps
}

// fieldStep compiles the step of a field of writer type ft (and reader
// type rt, nil without a reader schema) that goes into columns cols.
func (b *avroBuilder) fieldStep(path string, ft, rt havro.Schema, cols []int) avroStep {
	st := avroStep{path: path}
	for _, ci := range cols {
		t := b.target(ci)
		if t == nil {
			continue // not an Array, inside the records of an array: nested reported it
		}
		set, err := avroCompile(ft, rt, t)
		if err != nil {
			b.fail(path, ft, ci, err)
			continue
		}
		if b.elem > 0 {
			elem := set
			set = func(r *avroReader, col chunk.Column) *decode.Error { return elem(r, col.(*chunk.Array).Inner) }
		}
		st.targets = append(st.targets, avroTarget{col: ci, set: set})
	}
	return st
}

// target is the type a field's values go into for column ci: the column's
// type or, inside the records of an array that feeds a Nested structure,
// the column's element type (nil when the column is not an Array).
func (b *avroBuilder) target(ci int) *chunk.Type {
	t := b.s.Types[ci]
	if b.elem == 0 {
		return t
	}
	if t.Kind != chunk.KindArray {
		return nil
	}
	return t.Elem
}

// def is the default for column ci where a value is missing: the column's
// or, inside the records of an array, one element of the column's type
// (appended to the Array's elements).
func (b *avroBuilder) def(ci int) decode.Defaulter {
	if b.elem == 0 {
		return b.defs[ci]
	}
	return b.elemDef(ci)
}

func (b *avroBuilder) elemDef(ci int) decode.Defaulter {
	t := b.s.Types[ci]
	if t.Kind != chunk.KindArray {
		return func(chunk.Column) {} // refused when compiled
	}
	def, _ := decode.Default(t.Elem) // compiled with the column before
	return func(col chunk.Column) { decode.AppendDefault(def, col.(*chunk.Array).Inner) }
}

// nested compiles the step of field path, an array of records rec (or a
// [null, array] union: null and arr are the branches, null -1 without),
// whose records' fields feed the Array columns path.x; rt is the reader's
// type of the field (nil without a reader schema).
func (b *avroBuilder) nested(path string, ft, rt havro.Schema, rec *havro.RecordSchema, null, arr int64) avroStep {
	var group []int
	for ci, p := range b.fieldPaths() {
		if !strings.HasPrefix(p, path+".") {
			continue
		}
		b.used[ci] = true
		switch {
		case b.elem > 0:
			b.fail(p, ft, ci, fmt.Errorf("field %q is an array of records inside the records of an array: their fields cannot feed columns", path))
		case b.s.Types[ci].Kind != chunk.KindArray:
			b.fail(p, ft, ci, fmt.Errorf("field %q is %s: the columns its records' fields feed must be Arrays", path, typeName(ft)))
		default:
			group = append(group, ci)
		}
	}
	if b.elem > 0 {
		return avroStep{path: path, skip: b.skip(ft)}
	}
	var rr *havro.RecordSchema
	if rt != nil {
		wt := ft
		if null >= 0 {
			wt = ft.(*havro.UnionSchema).Types()[arr]
		}
		if wa, ok := avroDeref(wt).(*havro.ArraySchema); ok {
			rr = readerRecord(rec, readerItems(wa, rt))
		}
	}
	b.elem++
	inner := b.record(rec, rr, path+".")
	b.elem--
	fed := make(map[int]bool)
	collectCols(inner, func(ci int) { fed[ci] = true })
	o := &avroNested{null: null, arr: arr, itemMin: minSize(rec, nil), steps: inner, cols: group}
	for _, ci := range group {
		if !fed[ci] {
			o.fill = append(o.fill, avroDefault{col: ci, def: b.elemDef(ci)})
			b.unfed = append(b.unfed, avroUnfed{col: ci, array: path})
		}
	}
	return avroStep{path: path, nest: o}
}

// arrayOfRecords returns the record of the items of s, an array of
// records or a [null, array of records] union, with the union's branch
// indices of null and the array (null is -1 for a plain array); rec is
// nil when s is neither.
func arrayOfRecords(s havro.Schema) (rec *havro.RecordSchema, null, idx int64) {
	items := func(s havro.Schema) *havro.RecordSchema {
		if a, ok := avroDeref(s).(*havro.ArraySchema); ok {
			r, _ := avroDeref(a.Items()).(*havro.RecordSchema)
			return r
		}
		return nil
	}
	if r := items(s); r != nil {
		return r, -1, 0
	}
	u, ok := s.(*havro.UnionSchema)
	if !ok || !u.Nullable() {
		return nil, -1, 0
	}
	n, t := u.Indices()
	if r := items(u.Types()[t]); r != nil {
		return r, int64(n), int64(t)
	}
	return nil, -1, 0
}

// fieldPaths returns the field path of each column ("" for none).
func (b *avroBuilder) fieldPaths() []string {
	out := make([]string, len(b.s.Types))
	for p, cols := range b.byPath {
		for _, ci := range cols {
			out[ci] = p
		}
	}
	return out
}

func (b *avroBuilder) fail(path string, ft havro.Schema, col int, err error) {
	b.errs = append(b.errs, fmt.Errorf("field %q (%s) -> column %s (%s): %w",
		path, typeName(ft), b.s.Names[col], b.s.Types[col].Name, err))
}

// collectCols calls f for every column the steps feed.
func collectCols(steps []avroStep, f func(int)) {
	for _, st := range steps {
		for _, t := range st.targets {
			f(t.col)
		}
		for _, t := range st.peek {
			f(t.col)
		}
		if st.opt != nil {
			collectCols(st.opt.steps, f)
		}
		if st.nest != nil {
			for _, ci := range st.nest.cols {
				f(ci)
			}
		}
		if st.fill != nil {
			collectCols(st.fill.steps, f)
		}
	}
}

// recordOf returns the record s is, or the record of a [null, record]
// union with the branch indices of null and the record; null is -1 for a
// plain record and rec is nil when s is neither.
func recordOf(s havro.Schema) (rec *havro.RecordSchema, null, idx int64) {
	if r, ok := s.(*havro.RecordSchema); ok {
		return r, -1, 0
	}
	u, ok := s.(*havro.UnionSchema)
	if !ok || !u.Nullable() {
		return nil, -1, 0
	}
	n, t := u.Indices()
	if r, ok := avroDeref(u.Types()[t]).(*havro.RecordSchema); ok {
		return r, int64(n), int64(t)
	}
	return nil, -1, 0
}

func avroDeref(s havro.Schema) havro.Schema {
	if r, ok := s.(*havro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func avroLogical(s havro.Schema) havro.LogicalSchema {
	if l, ok := s.(havro.LogicalTypeSchema); ok {
		if ls := l.Logical(); ls != nil {
			return ls
		}
	}
	return nil
}

func avroLogicalType(s havro.Schema) havro.LogicalType {
	if l := avroLogical(s); l != nil {
		return l.Type()
	}
	return ""
}

// typeName names a writer type for messages: long (timestamp-millis),
// array<string>, [null, string], record a.B, ...
func typeName(s havro.Schema) string {
	s = avroDeref(s)
	switch t := s.(type) {
	case *havro.RecordSchema:
		return "record " + t.FullName()
	case *havro.EnumSchema:
		return "enum " + t.FullName()
	case *havro.FixedSchema:
		n := "fixed " + t.FullName() + "(" + strconv.Itoa(t.Size()) + ")"
		if l := avroLogicalType(t); l != "" {
			n += " (" + string(l) + ")"
		}
		return n
	case *havro.ArraySchema:
		return "array<" + typeName(t.Items()) + ">"
	case *havro.MapSchema:
		return "map<" + typeName(t.Values()) + ">"
	case *havro.UnionSchema:
		parts := make([]string, len(t.Types()))
		for i, b := range t.Types() {
			parts[i] = typeName(b)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if l := avroLogicalType(s); l != "" {
		return string(s.Type()) + " (" + string(l) + ")"
	}
	return string(s.Type())
}

// avroCompile returns the setter of writer type w into column type t; r
// is the reader's type paired with w (nil without a reader schema), which
// records (into Tuples) at any depth are resolved to.
func avroCompile(w, r havro.Schema, t *chunk.Type) (avroSetter, error) {
	w = avroDeref(w)
	r = pair(w, r)
	hasDef := t.HasDefault()
	t = t.Base()
	if u, ok := w.(*havro.UnionSchema); ok {
		return compileUnion(u, r, t, hasDef)
	}
	if w.Type() == havro.Null {
		// Nothing to read: NULL for Nullable, else the default.
		if t.Kind == chunk.KindNullable {
			return func(r *avroReader, col chunk.Column) *decode.Error {
				col.(*chunk.Nullable).AppendNull()
				return nil
			}, nil
		}
		def, err := decode.Default(t)
		if err != nil {
			return nil, err
		}
		if hasDef {
			def = nil
		}
		return func(r *avroReader, col chunk.Column) *decode.Error {
			decode.AppendDefault(def, col)
			return nil
		}, nil
	}
	switch t.Kind {
	case chunk.KindNullable:
		inner, err := avroCompile(w, r, t.Elem)
		if err != nil {
			return nil, err
		}
		return func(r *avroReader, col chunk.Column) *decode.Error {
			n := col.(*chunk.Nullable)
			if e := inner(r, n.Inner); e != nil {
				return e
			}
			n.MarkValue()
			return nil
		}, nil
	case chunk.KindArray:
		aw, ok := w.(*havro.ArraySchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		elem, err := avroCompile(aw.Items(), readerItems(aw, r), t.Elem)
		if err != nil {
			return nil, err
		}
		return setArray(elem, minSize(aw.Items(), nil)), nil
	case chunk.KindTuple:
		rec, ok := w.(*havro.RecordSchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		return compileTuple(rec, readerRecord(rec, r), t)
	case chunk.KindMap:
		mw, ok := w.(*havro.MapSchema)
		if !ok {
			return nil, avroCannot(w, t)
		}
		key, err := mapKey(t.Key)
		if err != nil {
			return nil, fmt.Errorf("%s cannot go into %s: %w", typeName(w), t.Name, err)
		}
		val, err := avroCompile(mw.Values(), readerValues(mw, r), t.Elem)
		if err != nil {
			return nil, err
		}
		return setMap(key, val, 1+minSize(mw.Values(), nil)), nil
	}
	switch w.(type) {
	case *havro.RecordSchema, *havro.MapSchema, *havro.ArraySchema:
		return nil, avroCannot(w, t)
	}
	return compileScalar(w, t)
}

func avroCannot(w havro.Schema, t *chunk.Type) error {
	return fmt.Errorf("%s cannot go into %s", typeName(w), t.Name)
}

// compileUnion compiles each branch of u (paired with reader type r)
// against t (its inner type when t is Nullable); null branches give NULL
// or t's default: the table's DEFAULT when hasDef.
func compileUnion(u *havro.UnionSchema, r havro.Schema, t *chunk.Type, hasDef bool) (avroSetter, error) {
	nullable := t.Kind == chunk.KindNullable
	inner := t
	if nullable {
		inner = t.Elem
	}
	def, err := decode.Default(t)
	if err != nil {
		return nil, err
	}
	if hasDef {
		def = nil
	}
	branches := make([]avroSetter, len(u.Types()))
	var errs []error
	for i, b := range u.Types() {
		if b.Type() == havro.Null {
			continue
		}
		set, err := avroCompile(b, r, inner)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		branches[i] = set
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	n := int64(len(branches))
	return func(r *avroReader, col chunk.Column) *decode.Error {
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= n {
			return r.corrupt(fmt.Sprintf("union branch %d of %d", i, n))
		}
		set := branches[i]
		if nullable {
			nc := col.(*chunk.Nullable)
			if set == nil {
				nc.AppendNull()
				return nil
			}
			if e := set(r, nc.Inner); e != nil {
				return e
			}
			nc.MarkValue()
			return nil
		}
		if set == nil {
			decode.AppendDefault(def, col)
			return nil
		}
		return set(r, col)
	}, nil
}

// Units of the timestamp logical types, per second.
func timeUnit(l havro.LogicalType) int64 {
	switch l {
	case havro.TimestampMillis, havro.LocalTimestampMillis:
		return 1e3
	case havro.TimestampMicros, havro.LocalTimestampMicros:
		return 1e6
	}
	return 0
}

// compileScalar compiles a primitive, enum or fixed writer type into a
// scalar column type.
func compileScalar(w havro.Schema, t *chunk.Type) (avroSetter, error) {
	wt := w.Type()
	isInt := wt == havro.Int
	integer := wt == havro.Int || wt == havro.Long
	logical := avroLogicalType(w)
	switch t.Kind {
	case chunk.KindInt8:
		if wt == havro.Boolean {
			return setBoolInt[int8], nil
		}
		if integer {
			return setSigned[int8](math.MinInt8, math.MaxInt8, isInt), nil
		}
	case chunk.KindInt16:
		if integer {
			return setSigned[int16](math.MinInt16, math.MaxInt16, isInt), nil
		}
	case chunk.KindInt32:
		if integer {
			return setSigned[int32](math.MinInt32, math.MaxInt32, isInt), nil
		}
	case chunk.KindInt64:
		if integer {
			return setSigned[int64](math.MinInt64, math.MaxInt64, isInt), nil
		}
	case chunk.KindUInt8:
		if wt == havro.Boolean {
			return setBoolInt[uint8], nil
		}
		if integer {
			return setUnsigned[uint8](math.MaxUint8, isInt), nil
		}
	case chunk.KindUInt16:
		if integer {
			return setUnsigned[uint16](math.MaxUint16, isInt), nil
		}
	case chunk.KindUInt32:
		if integer {
			return setUnsigned[uint32](math.MaxUint32, isInt), nil
		}
	case chunk.KindUInt64:
		if integer {
			return setUnsigned[uint64](math.MaxUint64, isInt), nil
		}
	case chunk.KindFloat32:
		switch wt {
		case havro.Float:
			return setFloatFloat32, nil
		case havro.Double:
			return setDoubleFloat32, nil
		case havro.Int, havro.Long:
			return setIntFloat[float32](isInt), nil
		}
	case chunk.KindFloat64:
		switch wt {
		case havro.Float:
			return setFloatFloat64, nil
		case havro.Double:
			return setDoubleFloat64, nil
		case havro.Int, havro.Long:
			return setIntFloat[float64](isInt), nil
		}
	case chunk.KindBool:
		if wt == havro.Boolean {
			return setBool, nil
		}
	case chunk.KindDateTime:
		if !integer {
			break
		}
		if logical == havro.Date {
			return setDateTime(isInt, -86400, logical), nil
		}
		if u := timeUnit(logical); u != 0 {
			return setDateTime(isInt, u, logical), nil
		}
		return nil, fmt.Errorf("%s cannot go into %s: want a timestamp or date logical type", typeName(w), t.Name)
	case chunk.KindDate:
		if !integer {
			break
		}
		if logical == havro.Date {
			return setDate(isInt, 0, logical), nil
		}
		if u := timeUnit(logical); u != 0 {
			return setDate(isInt, u, logical), nil
		}
		return nil, fmt.Errorf("%s cannot go into %s: want a date or timestamp logical type", typeName(w), t.Name)
	case chunk.KindDateTime64:
		if !integer {
			break
		}
		if logical == havro.Date {
			return setDateTime64(isInt, -86400, t.Precision, logical), nil
		}
		if u := timeUnit(logical); u != 0 {
			return setDateTime64(isInt, u, t.Precision, logical), nil
		}
		return nil, fmt.Errorf("%s cannot go into %s: want a timestamp or date logical type", typeName(w), t.Name)
	case chunk.KindDate32:
		if !integer {
			break
		}
		if logical == havro.Date {
			return setDate32(isInt, 0, logical), nil
		}
		if u := timeUnit(logical); u != 0 {
			return setDate32(isInt, u, logical), nil
		}
		return nil, fmt.Errorf("%s cannot go into %s: want a date or timestamp logical type", typeName(w), t.Name)
	case chunk.KindIPv4:
		if wt == havro.String {
			return setIPv4, nil
		}
	case chunk.KindIPv6:
		if wt == havro.String {
			return setIPv6, nil
		}
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		if integer {
			signed := t.Kind == chunk.KindInt128 || t.Kind == chunk.KindInt256
			return setBigInt(isInt, signed), nil
		}
	case chunk.KindString:
		switch wt {
		case havro.String:
			return setString, nil
		case havro.Bytes, havro.Fixed:
			if d, ok := avroLogical(w).(*havro.DecimalLogicalSchema); ok {
				return setDecimal(fixedSize(w), d.Scale(), d.Scale(), 0), nil
			}
			if wt == havro.Fixed {
				return setFixed(fixedSize(w)), nil
			}
			return setString, nil
		case havro.Enum:
			return setEnum(w.(*havro.EnumSchema).Symbols(), nil), nil
		}
	case chunk.KindFixedString:
		switch wt {
		case havro.String, havro.Bytes:
			return setFixedString(t.Len), nil
		case havro.Fixed:
			if n := fixedSize(w); n > t.Len {
				return nil, fmt.Errorf("%s is longer than %s", typeName(w), t.Name)
			}
			return setFixed(fixedSize(w)), nil
		}
	case chunk.KindUUID:
		if wt == havro.String {
			return setUUID, nil
		}
	case chunk.KindEnum8, chunk.KindEnum16:
		switch wt {
		case havro.String:
			return setStringEnum(t.Enum), nil
		case havro.Enum:
			syms := w.(*havro.EnumSchema).Symbols()
			ok := make([]bool, len(syms))
			for i, s := range syms {
				_, ok[i] = t.Enum[s]
			}
			return setEnum(syms, ok), nil
		}
	case chunk.KindDecimal:
		switch wt {
		case havro.Bytes, havro.Fixed:
			d, ok := avroLogical(w).(*havro.DecimalLogicalSchema)
			if !ok {
				return nil, fmt.Errorf("%s cannot go into %s: want a decimal logical type", typeName(w), t.Name)
			}
			return setDecimal(fixedSize(w), d.Scale(), t.Scale, t.Precision), nil
		case havro.Int, havro.Long:
			return setIntDecimal(isInt, t.Scale, t.Precision), nil
		}
	}
	return nil, avroCannot(w, t)
}

// fixedSize is the size of a fixed type, or -1 for bytes.
func fixedSize(w havro.Schema) int {
	if f, ok := w.(*havro.FixedSchema); ok {
		return f.Size()
	}
	return -1
}

// avroInteger reads an int (32 bits) or a long.
func (r *avroReader) integer(isInt bool) (int64, *decode.Error) {
	v, e := r.long()
	if e == nil && isInt && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, r.corrupt(fmt.Sprintf("int %d beyond 32 bits", v))
	}
	return v, e
}

func outOfRange(v int64) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d out of range", v)}
}

func setSigned[T int8 | int16 | int32 | int64](lo, hi int64, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if v < lo || v > hi {
			return outOfRange(v)
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64, isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if v < 0 || uint64(v) > hi {
			return outOfRange(v)
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setBoolInt[T int8 | uint8](r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.boolean()
	if e != nil {
		return e
	}
	var x T
	if v {
		x = 1
	}
	col.(*chunk.Fixed[T]).Append(x)
	return nil
}

func setBool(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.boolean()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[bool]).Append(v)
	return nil
}

func setIntFloat[T float32 | float64](isInt bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func setFloatFloat32(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.float()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float32]).Append(v)
	return nil
}

func setFloatFloat64(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.float()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float64]).Append(float64(v))
	return nil
}

func setDoubleFloat64(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.double()
	if e != nil {
		return e
	}
	col.(*chunk.Fixed[float64]).Append(v)
	return nil
}

func setDoubleFloat32(r *avroReader, col chunk.Column) *decode.Error {
	v, e := r.double()
	if e != nil {
		return e
	}
	if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
		return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %g out of range", v)}
	}
	col.(*chunk.Fixed[float32]).Append(float32(v))
	return nil
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(v, d int64) int64 {
	q := v / d
	if v%d != 0 && v < 0 {
		q--
	}
	return q
}

// setDateTime converts a timestamp of unit per second, or for unit
// -86400 a date in days, to DateTime seconds within the server's range.
func setDateTime(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var sec int64
		if unit < 0 {
			if v < 0 {
				return timeRange(v, l, decode.NotDateTime)
			}
			if v > chunk.WideDateTimeMax/86400+1 {
				return pastRange(v, l, r.ranges().DateTimeError(chunk.WideDateTimeMax+1))
			}
			sec = v * 86400
		} else {
			sec = floorDiv(v, unit)
		}
		if sec < 0 {
			return timeRange(v, l, decode.NotDateTime)
		}
		if rg := r.ranges(); sec > rg.DateTimeMax {
			return pastRange(v, l, rg.DateTimeError(sec))
		}
		col.(*chunk.Fixed[int64]).Append(sec)
		return nil
	}
}

// setDate converts a date (unit 0) or a timestamp of unit per second
// to a Date within the server's range.
func setDate(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		days := v
		if unit != 0 {
			days = floorDiv(floorDiv(v, unit), 86400)
		}
		if days < 0 {
			return timeRange(v, l, decode.NotDate)
		}
		if rg := r.ranges(); days > rg.DateMax {
			return pastRange(v, l, rg.DateError(days))
		}
		col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
		return nil
	}
}

// pastRange is the out_of_range error of a date past the server's
// range.
func pastRange(v int64, l havro.LogicalType, msg string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d (%s): %s", v, l, msg)}
}

func timeRange(v int64, l havro.LogicalType, what string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d (%s) %s", v, l, what)}
}

func setString(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

func setFixed(n int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.fixed(n)
		if e != nil {
			return e
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setFixedString(size int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.bytes()
		if e != nil {
			return e
		}
		if len(b) > size {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is longer than %d bytes", decode.Quote(b), size)}
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

func setUUID(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	if !decode.IsUUID(b) {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not a UUID", decode.Quote(b))}
	}
	col.(*chunk.Strings).Append(b)
	return nil
}

// setEnum appends the symbol of an enum index; ok, when not nil,
// says which symbols the column's Enum has.
func setEnum(syms []string, ok []bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= int64(len(syms)) {
			return r.corrupt(fmt.Sprintf("enum index %d of %d", i, len(syms)))
		}
		if ok != nil && !ok[i] {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", strconv.Quote(syms[i]))}
		}
		col.(*chunk.Strings).AppendString(syms[i])
		return nil
	}
}

func setStringEnum(values map[string]int16) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		b, e := r.bytes()
		if e != nil {
			return e
		}
		if _, ok := values[string(b)]; !ok {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", decode.Quote(b))}
		}
		col.(*chunk.Strings).Append(b)
		return nil
	}
}

// setArray reads an array's blocks into an Array column.
func setArray(elem avroSetter, elemMin int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		a := col.(*chunk.Array)
		for {
			n, size, e := r.block(elemMin)
			if e != nil {
				return e
			}
			if n == 0 {
				break
			}
			start := r.pos
			for ; n > 0; n-- {
				if e := elem(r, a.Inner); e != nil {
					return e
				}
			}
			if size >= 0 && int64(r.pos-start) != size {
				return r.corrupt(fmt.Sprintf("array block of %d bytes holds %d", size, r.pos-start))
			}
		}
		a.EndRow()
		return nil
	}
}

// setDecimal converts a bytes (size < 0) or fixed decimal of scale
// ws to decimal text of scale cs with at most prec digits (0: any).
func setDecimal(size, ws, cs, prec int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		var b []byte
		var e *decode.Error
		if size < 0 {
			b, e = r.bytes()
		} else {
			b, e = r.fixed(size)
		}
		if e != nil {
			return e
		}
		neg, ok := r.decimalDigits(b)
		if ok {
			r.text, ok = decimalText(r.text[:0], neg, r.digits, ws, cs, prec)
		}
		if !ok {
			return decimalRange(r, b, ws, prec, cs)
		}
		col.(*chunk.Strings).Append(r.text)
		return nil
	}
}

func setIntDecimal(isInt bool, cs, prec int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		mag := uint64(v)
		if v < 0 {
			mag = -mag
		}
		r.digits = strconv.AppendUint(r.digits[:0], mag, 10)
		var ok bool
		r.text, ok = decimalText(r.text[:0], v < 0, r.digits, 0, cs, prec)
		if !ok {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %d has more digits than Decimal(%d, %d) holds", v, prec, cs)}
		}
		col.(*chunk.Strings).Append(r.text)
		return nil
	}
}

func decimalRange(r *avroReader, b []byte, ws, prec, cs int) *decode.Error {
	neg, ok := r.decimalDigits(b)
	if !ok {
		return &decode.Error{Reason: decode.ReasonOutOfRange,
			Err: fmt.Errorf("decimal value of %d bytes is longer than %d bytes", len(b), maxDecimalBytes)}
	}
	t, _ := decimalText(nil, neg, r.digits, ws, ws, 0)
	return &decode.Error{Reason: decode.ReasonOutOfRange,
		Err: fmt.Errorf("value %s has more digits than Decimal(%d, %d) holds", t, prec, cs)}
}

// maxDecimalBytes bounds the unscaled value of a decimal (after
// dropping redundant sign bytes): 64 bytes hold 154 digits, beyond any
// ClickHouse Decimal.
const maxDecimalBytes = 64

// decimalDigits puts the decimal digits of the magnitude of the
// big-endian two's complement integer b in r.digits and returns its sign;
// ok is false when b is longer than maxDecimalBytes.
func (r *avroReader) decimalDigits(b []byte) (neg, ok bool) {
	if len(b) == 0 {
		r.digits = append(r.digits[:0], '0')
		return false, true
	}
	neg = b[0]&0x80 != 0
	// Drop sign-extension bytes.
	for len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
		b = b[1:]
	}
	if len(b) <= 8 {
		var v uint64
		if neg {
			v = math.MaxUint64 // sign extension
		}
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
		if neg {
			v = -v
		}
		r.digits = strconv.AppendUint(r.digits[:0], v, 10)
		return neg, true
	}
	if len(b) > maxDecimalBytes {
		return neg, false
	}
	// The magnitude as big-endian 32-bit limbs, then repeated division by
	// 1e9 for 9 digits at a time.
	nl := (len(b) + 3) / 4
	limbs := r.limbs[:0]
	for i := 0; i < nl; i++ {
		limbs = append(limbs, 0)
	}
	pad := nl*4 - len(b)
	for i, c := range b {
		j := pad + i
		if neg {
			c = ^c
		}
		limbs[j/4] |= uint32(c) << (8 * (3 - j%4))
	}
	if neg { // two's complement: the magnitude is ^b + 1 (fits: ^b < 2^(8*len(b)-1))
		for i := nl - 1; i >= 0; i-- {
			limbs[i]++
			if limbs[i] != 0 {
				break
			}
		}
	}
	chunks := r.chunks[:0]
	for start := 0; start < nl; {
		var rem uint64
		for i := start; i < nl; i++ {
			cur := rem<<32 | uint64(limbs[i])
			limbs[i] = uint32(cur / 1e9)
			rem = cur % 1e9
		}
		chunks = append(chunks, uint32(rem))
		for start < nl && limbs[start] == 0 {
			start++
		}
	}
	d := r.digits[:0]
	d = strconv.AppendUint(d, uint64(chunks[len(chunks)-1]), 10)
	for i := len(chunks) - 2; i >= 0; i-- {
		var nine [9]byte
		v := chunks[i]
		for k := 8; k >= 0; k-- {
			nine[k] = byte('0' + v%10)
			v /= 10
		}
		d = append(d, nine[:]...)
	}
	r.digits, r.limbs, r.chunks = d, limbs, chunks
	return neg, true
}

// decimalText appends to dst the decimal text of the unscaled value
// whose magnitude has the decimal digits d (no leading zeros) and scale ws,
// at scale cs: digits beyond cs are dropped. ok is false when the result
// has more than prec significant digits (prec 0: unchecked).
func decimalText(dst []byte, neg bool, d []byte, ws, cs, prec int) ([]byte, bool) {
	var zeros int // zeros appended to d
	if cs < ws {
		drop := ws - cs
		if drop >= len(d) {
			d = d[:0]
		} else {
			d = d[:len(d)-drop]
		}
	} else {
		zeros = cs - ws
	}
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	if len(d) == 0 {
		zeros, neg = 0, false
	}
	n := len(d) + zeros // significant digits
	if prec > 0 && n > prec {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	if n <= cs {
		dst = append(dst, '0')
		if cs > 0 {
			dst = append(dst, '.')
			for i := n; i < cs; i++ {
				dst = append(dst, '0')
			}
		}
		dst = append(dst, d...)
		for i := 0; i < zeros; i++ {
			dst = append(dst, '0')
		}
		return dst, true
	}
	intDigits := n - cs
	for i := 0; i < n; i++ {
		if i == intDigits {
			dst = append(dst, '.')
		}
		if i < len(d) {
			dst = append(dst, d[i])
		} else {
			dst = append(dst, '0')
		}
	}
	return dst, true
}

// avroReader reads Avro binary encoding from buf.
type avroReader struct {
	buf []byte
	pos int
	// emptyLeft is how many more items that take no bytes the datum may
	// hold (see maxEmptyItems).
	emptyLeft int64
	// Scratch buffers of the decimal conversion.
	digits, text []byte
	limbs        []uint32
	chunks       []uint32
	// rg is the server's Date and DateTime ranges (Options.Ranges);
	// zero in the reader that checks reader defaults, which then get the
	// default ranges.
	rg chunk.ServerRanges
}

// ranges returns the server's Date and DateTime ranges.
func (r *avroReader) ranges() chunk.ServerRanges {
	if r.rg.DateMax == 0 {
		return chunk.DefaultRanges()
	}
	return r.rg
}

func (r *avroReader) corrupt(what string) *decode.Error {
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("%s at byte %d", what, r.pos)}
}

func (r *avroReader) truncated() *decode.Error {
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf("datum truncated at byte %d of %d", r.pos, len(r.buf))}
}

// long reads a zig-zag varint.
func (r *avroReader) long() (int64, *decode.Error) {
	if i := r.pos; i < len(r.buf) && r.buf[i] < 0x80 {
		u := uint64(r.buf[i])
		r.pos = i + 1
		return int64(u>>1) ^ -int64(u&1), nil
	}
	return r.longSlow()
}

func (r *avroReader) longSlow() (int64, *decode.Error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.buf) {
			return 0, r.truncated()
		}
		c := r.buf[r.pos]
		r.pos++
		if shift == 63 && c > 1 {
			return 0, r.corrupt("varint beyond 64 bits")
		}
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
}

func (r *avroReader) boolean() (bool, *decode.Error) {
	if r.pos >= len(r.buf) {
		return false, r.truncated()
	}
	c := r.buf[r.pos]
	if c > 1 {
		return false, r.corrupt(fmt.Sprintf("boolean byte %d", c))
	}
	r.pos++
	return c == 1, nil
}

func (r *avroReader) float() (float32, *decode.Error) {
	if len(r.buf)-r.pos < 4 {
		return 0, r.truncated()
	}
	b := r.buf[r.pos : r.pos+4]
	r.pos += 4
	return math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24), nil
}

func (r *avroReader) double() (float64, *decode.Error) {
	if len(r.buf)-r.pos < 8 {
		return 0, r.truncated()
	}
	b := r.buf[r.pos : r.pos+8]
	r.pos += 8
	return math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56), nil
}

// bytes reads a length-prefixed bytes or string; the slice shares buf.
func (r *avroReader) bytes() ([]byte, *decode.Error) {
	n, e := r.long()
	if e != nil {
		return nil, e
	}
	if n < 0 {
		return nil, r.corrupt(fmt.Sprintf("negative length %d", n))
	}
	if n > int64(len(r.buf)-r.pos) {
		return nil, r.truncated()
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader) fixed(n int) ([]byte, *decode.Error) {
	if len(r.buf)-r.pos < n {
		return nil, r.truncated()
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// maxEmptyItems bounds the array and map items of a datum that take no
// bytes (null, empty records), which the datum's length cannot bound.
const maxEmptyItems = 1 << 16

// block reads an array or map block header: the item count (0 ends the
// array or map) and, for a negative count, the block's byte size (-1
// otherwise). A count larger than the bytes left can hold, at itemMin
// bytes per item, is corrupt.
func (r *avroReader) block(itemMin int) (n, size int64, e *decode.Error) {
	if n, e = r.long(); e != nil {
		return 0, 0, e
	}
	size = -1
	if n < 0 {
		if n == math.MinInt64 {
			return 0, 0, r.corrupt("block count out of range")
		}
		n = -n
		if size, e = r.long(); e != nil {
			return 0, 0, e
		}
		if size < 0 {
			return 0, 0, r.corrupt(fmt.Sprintf("negative block size %d", size))
		}
		if size > int64(len(r.buf)-r.pos) {
			return 0, 0, r.truncated()
		}
	}
	left := int64(len(r.buf) - r.pos)
	if itemMin > 0 && n > left/int64(itemMin) {
		return 0, 0, r.corrupt(fmt.Sprintf("block of %d items in %d bytes", n, left))
	}
	if itemMin == 0 {
		if n > r.emptyLeft {
			return 0, 0, r.corrupt(fmt.Sprintf("more than %d items that take no bytes", maxEmptyItems))
		}
		r.emptyLeft -= n
	}
	return n, size, nil
}

// avroSkip is the compiled form of a writer type for skipping its values.
type avroSkip struct {
	kind   avroKind
	size   int         // fixed: its size; enum: its symbol count
	min    int         // the fewest bytes a value takes
	elem   *avroSkip   // array items, map values
	fields []*avroSkip // record fields, union branches
}

type avroKind uint8

const (
	kindNull avroKind = iota
	kindBoolean
	kindVarint // int, long
	kindEnum
	kindFloat
	kindDouble
	kindBytes // bytes, string
	kindFixed
	kindArray
	kindMap
	kindRecord
	kindUnion
)

// skip compiles the skipping of writer type w.
func (b *avroBuilder) skip(w havro.Schema) *avroSkip {
	w = avroDeref(w)
	if s, ok := b.skips[w]; ok {
		return s
	}
	s := &avroSkip{}
	b.skips[w] = s // before the fields: records may refer to themselves
	switch t := w.(type) {
	case *havro.RecordSchema:
		s.kind = kindRecord
		for _, f := range t.Fields() {
			s.fields = append(s.fields, b.skip(f.Type()))
		}
	case *havro.UnionSchema:
		s.kind = kindUnion
		for _, br := range t.Types() {
			s.fields = append(s.fields, b.skip(br))
		}
	case *havro.ArraySchema:
		s.kind, s.elem = kindArray, b.skip(t.Items())
	case *havro.MapSchema:
		s.kind, s.elem = kindMap, b.skip(t.Values())
	case *havro.EnumSchema:
		s.kind, s.size = kindEnum, len(t.Symbols())
	case *havro.FixedSchema:
		s.kind, s.size = kindFixed, t.Size()
	default:
		switch w.Type() {
		case havro.Null:
			s.kind = kindNull
		case havro.Boolean:
			s.kind = kindBoolean
		case havro.Int, havro.Long:
			s.kind = kindVarint
		case havro.Float:
			s.kind = kindFloat
		case havro.Double:
			s.kind = kindDouble
		default:
			s.kind = kindBytes
		}
	}
	s.min = minSize(w, nil)
	return s
}

// minSize returns the fewest bytes a value of w takes. A record met
// again while its size is computed counts 0 (a lower bound).
func minSize(w havro.Schema, seen map[havro.Schema]bool) int {
	w = avroDeref(w)
	switch t := w.(type) {
	case *havro.RecordSchema:
		if seen[w] {
			return 0
		}
		if seen == nil {
			seen = make(map[havro.Schema]bool)
		}
		seen[w] = true
		n := 0
		for _, f := range t.Fields() {
			n += minSize(f.Type(), seen)
		}
		delete(seen, w)
		return n
	case *havro.FixedSchema:
		return t.Size()
	}
	switch w.Type() {
	case havro.Null:
		return 0
	case havro.Float:
		return 4
	case havro.Double:
		return 8
	}
	return 1
}

// maxDepth bounds the nesting of skipped values (recursive types).
const maxDepth = 1000

// skip skips one value of s.
func (r *avroReader) skip(s *avroSkip, depth int) *decode.Error {
	switch s.kind {
	case kindNull:
		return nil
	case kindBoolean:
		_, e := r.boolean()
		return e
	case kindVarint:
		_, e := r.long()
		return e
	case kindEnum:
		i, e := r.long()
		if e == nil && (i < 0 || i >= int64(s.size)) {
			return r.corrupt(fmt.Sprintf("enum index %d of %d", i, s.size))
		}
		return e
	case kindFloat:
		_, e := r.fixed(4)
		return e
	case kindDouble:
		_, e := r.fixed(8)
		return e
	case kindBytes:
		_, e := r.bytes()
		return e
	case kindFixed:
		_, e := r.fixed(s.size)
		return e
	}
	if depth >= maxDepth {
		return &decode.Error{Reason: decode.ReasonTooLarge, Err: fmt.Errorf("values nested deeper than %d at byte %d", maxDepth, r.pos)}
	}
	switch s.kind {
	case kindArray, kindMap:
		itemMin := s.elem.min
		if s.kind == kindMap {
			itemMin++ // the key
		}
		for {
			n, size, e := r.block(itemMin)
			if e != nil {
				return e
			}
			if n == 0 {
				return nil
			}
			if size >= 0 {
				r.pos += int(size)
				continue
			}
			for ; n > 0; n-- {
				if s.kind == kindMap {
					if _, e := r.bytes(); e != nil {
						return e
					}
				}
				if e := r.skip(s.elem, depth+1); e != nil {
					return e
				}
			}
		}
	case kindRecord:
		for _, f := range s.fields {
			if e := r.skip(f, depth+1); e != nil {
				return e
			}
		}
		return nil
	case kindUnion:
		i, e := r.long()
		if e != nil {
			return e
		}
		if i < 0 || i >= int64(len(s.fields)) {
			return r.corrupt(fmt.Sprintf("union branch %d of %d", i, len(s.fields)))
		}
		return r.skip(s.fields[i], depth+1)
	}
	return nil
}

// setDateTime64 converts a timestamp of unit per second, or for unit
// -86400 a date in days, to ticks of DateTime64(p), rounding down.
func setDateTime64(isInt bool, unit int64, p int, l havro.LogicalType) avroSetter {
	lo, hi := decode.DateTime64Range(p)
	scale := decode.Pow10[p]
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		var ticks int64
		switch {
		case unit < 0:
			if v < lo/scale/86400 || v > hi/scale/86400 {
				return timeRange(v, l, decode.NotDateTime64)
			}
			ticks = v * 86400 * scale
		case scale >= unit:
			m := scale / unit
			if v < lo/m || v > hi/m {
				return timeRange(v, l, decode.NotDateTime64)
			}
			ticks = v * m
		default:
			ticks = floorDiv(v, unit/scale)
		}
		if ticks < lo || ticks > hi {
			return timeRange(v, l, decode.NotDateTime64)
		}
		col.(*chunk.DateTime64).Append(ticks)
		return nil
	}
}

// setDate32 converts a date (unit 0) or a timestamp of unit per second
// to a Date32.
func setDate32(isInt bool, unit int64, l havro.LogicalType) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		days := v
		if unit != 0 {
			days = floorDiv(floorDiv(v, unit), 86400)
		}
		if days < decode.MinDate32 || days > decode.MaxDate32 {
			return timeRange(v, l, decode.NotDate32)
		}
		col.(*chunk.Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
		return nil
	}
}

func setIPv4(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || !a.Is4() {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not an IPv4 address", decode.Quote(b))}
	}
	col.(*chunk.Fixed[uint32]).Append(decode.IPv4Number(a))
	return nil
}

func setIPv6(r *avroReader, col chunk.Column) *decode.Error {
	b, e := r.bytes()
	if e != nil {
		return e
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Zone() != "" {
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not an IP address", decode.Quote(b))}
	}
	col.(*chunk.Fixed[[16]byte]).Append(a.As16())
	return nil
}

// setBigInt stores an int or long in a 128- or 256-bit column; a
// negative value is out_of_range for the unsigned ones.
func setBigInt(isInt, signed bool) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		v, e := r.integer(isInt)
		if e != nil {
			return e
		}
		if !signed && v < 0 {
			return outOfRange(v)
		}
		var ext uint64
		if v < 0 {
			ext = math.MaxUint64
		}
		w := [4]uint64{uint64(v), ext, ext, ext}
		c := col.(*chunk.BigInt)
		c.Append(w[:c.Words])
		return nil
	}
}

// Levels of Options.Validate.
const (
	ValidateOff   = "off"
	ValidateNames = "names"
	ValidateFull  = "full"
)

// validate lists the mismatches between the writer's top-level fields
// (resolved to reader record rr, when not nil) and the table's columns
// that level does not allow.
func (b *avroBuilder) validate(level string, rec, rr *havro.RecordSchema, fields []string) []error {
	if level != ValidateNames && level != ValidateFull {
		return nil
	}
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
	}
	var out []error
	for i, f := range rec.Fields() {
		name := f.Name()
		if rr != nil {
			if resolved[i] == nil {
				continue // not in the reader schema: ignored on purpose
			}
			name = resolved[i].Name()
		}
		if len(b.byPath[name]) == 0 && !b.prefixes[name] {
			out = append(out, fmt.Errorf("field %q has no column", name))
		}
	}
	if level == ValidateFull {
		for i, t := range b.s.Types {
			// A column a reader default fills is used.
			if b.used[i] || t.Kind == chunk.KindNullable || fields[i] == "" {
				continue
			}
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field", b.s.Names[i], t.Name))
		}
		for _, u := range b.unfed {
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field of the records of %q", b.s.Names[u.col], b.s.Types[u.col].Name, u.array))
		}
	}
	return out
}

// tupleOp is one field of a record read into a tuple: into element
// elem with set, or skipped.
type tupleOp struct {
	elem int
	set  avroSetter
	skip *avroSkip
}

// compileTuple compiles a record into a Tuple: its fields in order
// into the elements of an unnamed tuple (the counts must agree), or by
// name into a named tuple's (fields the tuple lacks are skipped, elements
// the record lacks get their default). With reader record rr, the record
// is the reader's: its fields, in its order and by its names; writer
// fields it lacks are skipped, and its fields the writer lacks take their
// reader default (else the element's default).
func compileTuple(rec, rr *havro.RecordSchema, t *chunk.Type) (avroSetter, error) {
	fields := rec.Fields()
	names := t.ElemNames
	var resolved []*havro.Field
	if rr != nil {
		resolved = resolve(rec, rr)
		if names == nil && len(rr.Fields()) != len(t.Elems) {
			return nil, fmt.Errorf("reader %s has %d fields, %s has %d elements", typeName(rr), len(rr.Fields()), t.Name, len(t.Elems))
		}
	} else if names == nil && len(fields) != len(t.Elems) {
		return nil, fmt.Errorf("%s has %d fields, %s has %d elements", typeName(rec), len(fields), t.Name, len(t.Elems))
	}
	var (
		ops    []tupleOp
		errs   []error
		filled = make([]bool, len(t.Elems))
		skips  *avroBuilder
	)
	skip := func(f *havro.Field) {
		if skips == nil {
			skips = &avroBuilder{skips: make(map[havro.Schema]*avroSkip)}
		}
		ops = append(ops, tupleOp{skip: skips.skip(f.Type())})
	}
	for i, f := range fields {
		name, j := f.Name(), i
		var rt havro.Schema
		if rr != nil {
			rf := resolved[i]
			if rf == nil {
				skip(f)
				continue
			}
			name, j, rt = rf.Name(), readerIndex(rr, rf), rf.Type()
		}
		if names != nil {
			if j = slices.Index(names, name); j < 0 {
				skip(f)
				continue
			}
		}
		set, err := avroCompile(f.Type(), rt, t.Elems[j])
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q -> %s: %w", name, decode.TupleLabel(names, j), err))
			continue
		}
		ops = append(ops, tupleOp{elem: j, set: set})
		filled[j] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var missing []avroDefault
	for j, ok := range filled {
		if ok {
			continue
		}
		m := avroDefault{col: j}
		if rr != nil {
			var rf *havro.Field
			if names != nil {
				rf = readerNamed(rr, names[j])
			} else {
				rf = rr.Fields()[j]
			}
			if rf != nil && rf.HasDefault() {
				k, err := newAvroConst(rf, t.Elems[j])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", decode.TupleLabel(names, j), err)
				}
				m.konst = k
			}
		}
		if m.konst == nil {
			var err error
			if m.def, err = decode.Default(t.Elems[j]); err != nil {
				return nil, err
			}
		}
		missing = append(missing, m)
	}
	return func(r *avroReader, col chunk.Column) *decode.Error {
		tc := col.(*chunk.Tuple)
		for i := range ops {
			op := &ops[i]
			if op.skip != nil {
				if e := r.skip(op.skip, 0); e != nil {
					return e
				}
				continue
			}
			if e := op.set(r, tc.Elems[op.elem]); e != nil {
				e.Err = fmt.Errorf("%s: %w", decode.TupleLabel(names, op.elem), e.Err)
				return e
			}
		}
		for _, m := range missing {
			if m.konst != nil {
				// Checked when compiled: the default fits the element.
				if e := m.konst.apply(r, tc.Elems[m.col]); e != nil {
					return e
				}
				continue
			}
			decode.AppendDefault(m.def, tc.Elems[m.col])
		}
		tc.EndRow()
		return nil
	}, nil
}

// keySetter appends an Avro map key (a string) to a map's key column.
type keySetter func(key []byte, col chunk.Column) *decode.Error

// mapKey returns the setter of map keys into key type t: String (or
// LowCardinality(String)), or an integer type parsed from the key's text.
func mapKey(t *chunk.Type) (keySetter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return func(key []byte, col chunk.Column) *decode.Error {
			col.(*chunk.Strings).Append(key)
			return nil
		}, nil
	case chunk.KindInt8:
		return keySigned[int8](math.MinInt8, math.MaxInt8), nil
	case chunk.KindInt16:
		return keySigned[int16](math.MinInt16, math.MaxInt16), nil
	case chunk.KindInt32:
		return keySigned[int32](math.MinInt32, math.MaxInt32), nil
	case chunk.KindInt64:
		return keySigned[int64](math.MinInt64, math.MaxInt64), nil
	case chunk.KindUInt8:
		return keyUnsigned[uint8](math.MaxUint8), nil
	case chunk.KindUInt16:
		return keyUnsigned[uint16](math.MaxUint16), nil
	case chunk.KindUInt32:
		return keyUnsigned[uint32](math.MaxUint32), nil
	case chunk.KindUInt64:
		return keyUnsigned[uint64](math.MaxUint64), nil
	}
	return nil, fmt.Errorf("map keys are strings: the key type must be String or an integer type, not %s", t.Name)
}

// keyNumber parses a map key as a number (as the JSON decoder parses
// numeric strings); a key that is not one is wrong_type.
func keyNumber(key []byte) (decode.Number, *decode.Error) {
	n, ok := decode.ParseNumber(key)
	if !ok {
		return n, &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("map key %s is not a number", decode.Quote(key))}
	}
	return n, nil
}

func keyError(key []byte, r decode.IntResult) *decode.Error {
	switch r {
	case decode.IntFraction:
		return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("map key %s is not an integer", decode.Quote(key))}
	case decode.IntRange:
		return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("map key %s out of range", decode.Quote(key))}
	}
	return nil
}

func keySigned[T int8 | int16 | int32 | int64](lo, hi int64) keySetter {
	return func(key []byte, col chunk.Column) *decode.Error {
		n, e := keyNumber(key)
		if e != nil {
			return e
		}
		v, r := n.Signed(lo, hi)
		if e := keyError(key, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

func keyUnsigned[T uint8 | uint16 | uint32 | uint64](hi uint64) keySetter {
	return func(key []byte, col chunk.Column) *decode.Error {
		n, e := keyNumber(key)
		if e != nil {
			return e
		}
		v, r := n.Unsigned(hi)
		if e := keyError(key, r); e != nil {
			return e
		}
		col.(*chunk.Fixed[T]).Append(T(v))
		return nil
	}
}

// setMap reads a map's blocks into a Map column, entries in order.
func setMap(key keySetter, val avroSetter, itemMin int) avroSetter {
	return func(r *avroReader, col chunk.Column) *decode.Error {
		m := col.(*chunk.Map)
		for {
			n, size, e := r.block(itemMin)
			if e != nil {
				return e
			}
			if n == 0 {
				break
			}
			start := r.pos
			for ; n > 0; n-- {
				k, e := r.bytes()
				if e != nil {
					return e
				}
				if e := key(k, m.Keys); e != nil {
					return e
				}
				if e := val(r, m.Values); e != nil {
					e.Err = fmt.Errorf("map value of key %s: %w", decode.Quote(k), e.Err)
					return e
				}
			}
			if size >= 0 && int64(r.pos-start) != size {
				return r.corrupt(fmt.Sprintf("map block of %d bytes holds %d", size, r.pos-start))
			}
		}
		m.EndRow()
		return nil
	}
}
