package avro

import (
	"errors"
	"fmt"

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
	// absent: a null marks the columns the record feeds absent for the
	// row (chunk.Chunk.MarkAbsent), as the JSON decoder does for a null
	// object; not inside the records of an array, whose columns hold
	// one element per record.
	absent bool
}

// avroDefault is a column (or tuple element) that gets its default: the
// reader schema's (konst), when there is one, else def, else the
// column's own (chunk.Column.AppendDefault).
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
		rg:       a.r.rg,
		byPath:   make(map[string][]int),
		prefixes: make(map[string]bool),
		used:     make([]bool, len(s.Types)),
		skips:    make(map[havro.Schema]*avroSkip),
	}
	for i, t := range s.Types {
		a.types[i] = t.Name
		if _, err := chunk.NewColumn(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		if err := decode.Check(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
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
			a.missing = append(a.missing, avroDefault{col: i})
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
	for _, m := range a.missing {
		c.MarkAbsent(m.col)
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
			if o.absent {
				c.MarkAbsent(d.col)
			}
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
