package protobuf

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Options configures a Protobuf decoder.
type Options struct {
	// Fields is the source field path for each schema column, in schema
	// order: a field of the message, or "a.b" for field b of the message
	// field a (n.x, where n is a repeated message or a map, makes the
	// Array column n.x of a Nested structure). "" leaves that column at
	// its default. Nil means every column is read from the top-level
	// field of the same name.
	Fields []string
	// MaxRecordBytes rejects longer messages as decode.ReasonTooLarge
	// without decoding them; 0 means unlimited.
	MaxRecordBytes int
	// Validate is how strictly the message must match the table:
	// ValidateOff (or ""): fields with no column are skipped and columns
	// no field fills get their defaults; ValidateNames: every top-level
	// field must feed a column; ValidateFull: also every column must be
	// filled by a field, unless it is Nullable. A field whose type cannot
	// go into its column is refused at every level. A refused message
	// fails New, listing every mismatch at once.
	Validate string
	// Version is the oldest ClickHouse server version the table is on
	// ("" when unknown): a Map column is refused for servers before 21.8,
	// which have no Map type (a map field goes into the two Array columns
	// n.key and n.value of a Nested structure n there).
	Version string
	// Ranges are the Date and DateTime ranges of the server the rows go
	// to (chunk.RangesFor its version); the zero value is the narrower
	// range every server reads back (chunk.DefaultRanges).
	Ranges chunk.ServerRanges
}

// Levels of Options.Validate.
const (
	ValidateOff   = "off"
	ValidateNames = "names"
	ValidateFull  = "full"
)

// Decoder decodes the wire bytes of one Protobuf message type, one
// message into one row. Framing (the Confluent header and message
// indexes) is removed before Decode. See the package documentation for
// the conversions.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema  *chunk.Schema
	names   []string // column names
	types   []string // column types as the server spells them
	fields  []string // the field path of each column
	top     *rec
	missing []int                // columns no field feeds
	groups  []decode.NestedGroup // Nested structures whose arrays must have equal lengths
	max     int

	// utf8 are the columns whose UTF-8 the fast path checks at the end
	// of each record (bulkUTF8); marks, two per column, where the
	// record's strings start in each (markUTF8).
	utf8  []utf8Col
	marks []int

	// Scratch, reused from record to record.
	inner []chunk.Column // the element columns of Nested groups' Arrays
	recs  uint64         // the records' count, which tells when inner is set
	keys  map[string]struct{}
	ikeys map[uint64]struct{}
	json  []byte
	parts []part
	ents  []jsonEntry
}

var _ decode.Decoder = (*Decoder)(nil)

// val is one occurrence of a field on the wire.
type val struct {
	u   uint64 // a varint, fixed32 or fixed64 value
	b   []byte // the content of a length-delimited value
	off int    // the value's byte offset in the record
	wt  protowire.Type
}

// slot holds what one record (or one element, one tuple's message) had
// of a field: its last occurrence and, for a field kept whole (repeated,
// map, a message that goes into one column), the chain of all of them.
type slot struct {
	gen        uint32 // the slot is set when gen is its rec's
	v          val
	head, tail int32 // into rec.occ; -1: none
}

// occ is one link of a slot's chain of occurrences.
type occ struct {
	v    val
	next int32
}

// rec is one compiled level of decoding: the message read (with the
// messages flattened into it), the per-field slots its scan fills, and
// the emits that then append to the columns. The top-level record, each
// Nested structure's elements, each Tuple's message and each map's entries
// have one. A rec is never active twice at once: the column types bound
// the nesting.
type rec struct {
	msg   *msgPlan
	slots []slot
	occ   []occ
	gen   uint32
	emits []emit
	// fastOK: the plan takes the fast path (fast.go), which walks seq,
	// msg's fields by number.
	fastOK bool
	seq    []*fieldPlan
	// labels name the columns of a Tuple's rec (its elements) or of a
	// map entry's (key and value) in errors, which the caller puts under
	// its column; nil for a rec whose emits write the chunk's columns.
	labels []string
}

func (r *rec) reset() {
	r.gen++
	if r.gen == 0 {
		for i := range r.slots {
			r.slots[i].gen = 0
		}
		r.gen = 1
	}
	r.occ = r.occ[:0]
}

// set reports whether slot i was filled by the current scan.
func (r *rec) set(i int32) bool { return i >= 0 && r.slots[i].gen == r.gen }

// emit appends one column's value (or a Nested group's arrays) from the
// slots of a rec.
type emit struct {
	path string
	col  int // index into the columns the rec's emits are given
	// slot is the field's; parent is the innermost message the field is
	// flattened from (-1 at the rec's own level).
	slot, parent int32
	// nullable: the column is Nullable and the field's absence is NULL
	// when the field has presence or its parent message is absent.
	nullable, presence bool
	set                setter     // from the last occurrence (or zero when absent)
	list               listSetter // from every occurrence
	zero               val        // the field's default value, as an occurrence
	// zeroDefault: an absent field gives the column's default (an
	// empty string or bytes into a column other than String and
	// FixedString).
	zeroDefault bool
	nested      *nestedEmit
	// For the fast path (fast.go): the element setter of a repeated
	// field into an Array (ewt: the element's wire type), the setter of
	// one occurrence of a message into its column.
	elem setter
	ewt  protowire.Type
	one  setter
	// fop is how the fast path appends one occurrence (an element, for
	// elem) without calling a setter (fastCall: it calls one); dt is
	// the column's appender for fastDateTime.
	fop fastOp
	dt  *chunk.DateTimes
}

// setter converts one occurrence of a field and appends it to col. The
// *decode.Error has only Reason and Err set.
type setter func(d *Decoder, v val, col chunk.Column) *decode.Error

// listSetter converts the chain of occurrences from head (-1: none) of
// rec r into one value of col.
type listSetter func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error

// nestedEmit fills the Array columns of a Nested structure from a
// repeated message (or a map: its entries): one element per message in
// every column, the element default where no field feeds a column.
type nestedEmit struct {
	elem  *rec
	cols  []int
	unfed []int
	dedup *mapKey // a map field's entries: a later entry replaces an earlier one of the same key
	at    uint64  // the record d.inner was set for (the fast path)
}

// New compiles a decoder of messages of type md into chunks of schema s.
// Every field whose type cannot go into its column is reported, in one
// error.
func New(md protoreflect.MessageDescriptor, s *chunk.Schema, o Options) (*Decoder, error) {
	if md == nil {
		return nil, errors.New("decode: protobuf: no message descriptor")
	}
	fields, err := decode.ColumnFields(s, o.Fields, o.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	d := &Decoder{
		schema: s,
		names:  s.Names,
		types:  make([]string, len(s.Types)),
		fields: fields,
		groups: decode.NestedGroups(s),
		max:    o.MaxRecordBytes,
		inner:  make([]chunk.Column, len(s.Types)),
	}
	b := newBuilder(s, o)
	for i, t := range s.Types {
		d.types[i] = t.Name
		if _, err := chunk.NewColumn(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		if err := decode.Check(t); err != nil {
			return nil, fmt.Errorf("decode: column %s: %w", s.Names[i], err)
		}
		b.addPath(fields[i], i)
	}
	d.top = b.record(md)
	d.utf8 = bulkUTF8(d.top)
	d.marks = make([]int, 2*len(d.utf8))
	if len(b.errs) > 0 {
		return nil, planError{&decode.Error{Reason: decode.ReasonSchemaMismatch, Err: fmt.Errorf("decode: protobuf message %s does not fit the table:\n%w", md.FullName(), errors.Join(b.errs...))}}
	}
	if mismatches := b.validate(o.Validate, md, fields); len(mismatches) > 0 {
		return nil, planError{&decode.Error{Reason: decode.ReasonSchemaMismatch, Err: fmt.Errorf("decode: protobuf message %s does not match the table (validate_schema %s):\n%w", md.FullName(), o.Validate, errors.Join(mismatches...))}}
	}
	for i := range s.Types {
		if !b.used[i] {
			d.missing = append(d.missing, i)
		}
	}
	return d, nil
}

// planError is the error of a message type refused for the table: an
// *decode.Error (errors.As finds it, with reason schema_mismatch) whose
// text is the whole list of mismatches.
type planError struct{ e *decode.Error }

func (p planError) Error() string { return p.e.Err.Error() }
func (p planError) Unwrap() error { return p.e }

// Decode implements decode.Decoder. It appends exactly one row; an empty
// payload is a message whose fields all have their defaults.
//
// It panics if c was not built for a schema with the decoder's column
// types, which is a programming error, not a property of the record.
func (d *Decoder) Decode(payload []byte, c *chunk.Chunk) (int, error) {
	if c.Schema != d.schema {
		d.checkSchema(c)
	}
	if payload == nil {
		return 0, decode.NullValue(payload)
	}
	if d.max > 0 && len(payload) > d.max {
		return 0, decode.TooLarge(len(payload), d.max)
	}
	rows := c.Rows
	r := d.top
	d.recs++
	if r.fastOK {
		d.markUTF8(c)
		if d.fast(r, payload, 0, c.Cols, c) && d.checkUTF8(c) {
			return d.end(c, rows)
		}
		c.Truncate(rows)
	}
	r.reset()
	if e := d.scan(r, r.msg, payload, 0); e != nil {
		return 0, e
	}
	if e := d.emit(r, c.Cols, c); e != nil {
		c.Truncate(rows)
		return 0, e
	}
	return d.end(c, rows)
}

// end completes the row of a record whose fields were appended to c
// (which had rows rows before it).
func (d *Decoder) end(c *chunk.Chunk, rows int) (int, error) {
	for _, ci := range d.missing {
		c.Cols[ci].AppendDefault()
	}
	if d.groups != nil {
		if ci, e := decode.CheckNested(d.groups, c); e != nil {
			c.Truncate(rows)
			return 0, d.fieldError(e, d.fields[ci], ci)
		}
	}
	for _, ci := range d.missing {
		c.MarkAbsent(ci)
	}
	c.Rows++
	return 1, nil
}

// emit appends the values of r's slots to cols; c is the chunk (for the
// Arrays of Nested groups), nil below the top level.
func (d *Decoder) emit(r *rec, cols []chunk.Column, c *chunk.Chunk) *decode.Error {
	for i := range r.emits {
		em := &r.emits[i]
		var e *decode.Error
		switch {
		case em.set != nil:
			col := cols[em.col]
			if r.set(em.slot) {
				e = em.set(d, r.slots[em.slot].v, col)
			} else if em.nullable && (em.presence || em.parent >= 0 && !r.set(em.parent)) {
				col.(*chunk.Nullable).AppendNull()
			} else if em.zeroDefault {
				col.AppendDefault()
			} else {
				e = em.set(d, em.zero, col)
			}
		case em.list != nil:
			col := cols[em.col]
			head := int32(-1)
			if r.set(em.slot) {
				head = r.slots[em.slot].head
			} else if em.nullable && (em.presence || em.parent >= 0 && !r.set(em.parent)) {
				col.(*chunk.Nullable).AppendNull()
				continue
			}
			e = em.list(d, r, head, col)
		case em.nested != nil:
			head := int32(-1)
			if r.set(em.slot) {
				head = r.slots[em.slot].head
			}
			e = d.nested(em, r, head, c)
		}
		if e != nil {
			if r.labels != nil {
				e.Err = fmt.Errorf("%s: %w", r.labels[em.col], e.Err)
				return e
			}
			if e.Column == "" {
				d.fieldError(e, em.path, em.col)
			}
			return e
		}
	}
	return nil
}

// nested fills the Array columns of a Nested group from the chain of
// element messages from head in r.
func (d *Decoder) nested(em *emit, r *rec, head int32, c *chunk.Chunk) *decode.Error {
	n := em.nested
	for _, ci := range n.cols {
		d.inner[ci] = c.Cols[ci].(*chunk.Array).Inner
	}
	if n.dedup != nil {
		var e *decode.Error
		if head, e = d.dedupe(r, head, n.dedup); e != nil {
			return e
		}
	}
	for o := head; o >= 0; o = r.occ[o].next {
		v := r.occ[o].v
		n.elem.reset()
		if e := d.scan(n.elem, n.elem.msg, v.b, v.off); e != nil {
			return e
		}
		if e := d.emit(n.elem, d.inner, nil); e != nil {
			return e
		}
		for _, ci := range n.unfed {
			d.inner[ci].AppendDefault()
		}
	}
	for _, ci := range n.cols {
		c.Cols[ci].(*chunk.Array).EndRow()
	}
	return nil
}

func (d *Decoder) fieldError(e *decode.Error, path string, col int) *decode.Error {
	e.Field, e.Column, e.Type = path, d.names[col], d.types[col]
	return e
}

func (d *Decoder) checkSchema(c *chunk.Chunk) {
	ok := c.Schema != nil && len(c.Cols) == len(d.types) && len(c.Schema.Types) == len(d.types)
	for i := 0; ok && i < len(d.types); i++ {
		ok = c.Schema.Types[i].Name == d.types[i]
	}
	if !ok {
		panic("decode: chunk schema does not match the decoder's schema")
	}
}
