package protobuf

import (
	"cmp"
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
)

// The fast path. Most messages are written by a Protobuf library in field
// number order, each field once (a repeated field's occurrences next to
// each other): such a message is decoded in one pass, each field's
// value appended to its columns as it is read, with no slots. A rec
// whose plan has no oneof, no flattened message and no map takes it; the
// first field out of order, a repeat, a malformed byte or a value its
// column refuses sends the record (or the Nested element) back to the
// slow path, which reads it again from its start, after its rows are
// taken back: what the record makes, and the error a bad one gets, do
// not depend on the path.

// fastOK reports whether r's plan can take the fast path, notes on each
// field the emits it feeds and how it appends, and lists the fields by
// number in r.seq.
func fastOK(r *rec) bool {
	for i := range r.msg.fields {
		f := &r.msg.fields[i]
		if f.sub != nil || len(f.clears) > 0 {
			return false
		}
		f.emits, f.rep = f.emits[:0], false
		f.op, f.set1, f.col1, f.dt, f.nest = fastEmits, nil, 0, nil, nil
	}
	for ei := range r.emits {
		em := &r.emits[ei]
		switch {
		case em.set != nil, em.one != nil, em.elem != nil:
		case em.nested != nil && em.nested.dedup == nil && em.slot >= 0:
		default:
			return false // a map, a message merged into a column
		}
		if em.slot < 0 {
			return false
		}
		for i := range r.msg.fields {
			if f := &r.msg.fields[i]; f.slot == em.slot {
				f.emits = append(f.emits, int32(ei))
				f.rep = f.rep || em.elem != nil || em.nested != nil
			}
		}
	}
	r.seq = r.seq[:0]
	for i := range r.msg.fields {
		f := &r.msg.fields[i]
		r.seq = append(r.seq, f)
		if len(f.emits) != 1 {
			continue
		}
		em := &r.emits[f.emits[0]]
		f.col1 = em.col
		switch {
		case em.set != nil:
			f.op, f.set1 = fastSet, em.set
			if em.fop == fastString || em.fop == fastNullString || em.fop == fastInt64 {
				f.op = em.fop
			}
		case em.one != nil && em.fop == fastDateTime:
			f.op, f.set1, f.dt = fastDateTime, em.one, em.dt
		case em.elem != nil && em.fop == fastString && em.ewt == protowire.BytesType:
			f.op = fastElemString
		case em.nested != nil:
			f.op, f.nest = fastNested, em.nested
		}
	}
	slices.SortFunc(r.seq, func(a, b *fieldPlan) int { return cmp.Compare(a.num, b.num) })
	for _, f := range r.seq {
		f.tag = uint64(f.num)<<3 | uint64(f.wt)
		f.check = f.utf8
	}
	r.seq = append(r.seq, &endOfSeq)
	return true
}

// endOfSeq ends every rec's seq: its number is past every field's, and
// its tag one no field's can be (a wire tag with it is out of range: the
// fast path gives the record to the slow path, which refuses it).
var endOfSeq = fieldPlan{num: protowire.MaxValidNumber + 1, tag: uint64(protowire.MaxValidNumber+1) << 3, op: fastEnd}

// fastOp is how the fast path appends one occurrence of a field of one
// emit: the common conversions inline, the others through the field's
// setter or its emits.
type fastOp uint8

const (
	fastEmits      fastOp = iota // each of the field's emits, through its setter
	fastCall                     // an emit's: through its setter
	fastSet                      // a field's: through set1
	fastString                   // a string or bytes into String
	fastNullString               // a string or bytes into Nullable(String)
	fastInt64                    // an int64 into Int64
	fastElemString               // a repeated string or bytes into Array(String)
	fastDateTime                 // a Timestamp into DateTime (appendDateTime, else set1)
	fastNested                   // a repeated message into a Nested structure
	fastEnd                      // endOfSeq's: the record goes to the slow path
)

// fastOf returns the fastOp (fastString, fastNullString, fastInt64,
// fastDateTime; fastCall for any other) of one value of field fd (an
// element, for a repeated field) into column type t, which the setter
// compiled for them does the same as; and for fastDateTime, the
// column's appender.
func (b *builder) fastOf(fd protoreflect.FieldDescriptor, t *chunk.Type) (fastOp, *chunk.DateTimes) {
	t = t.Base()
	switch k := fd.Kind(); {
	case k == protoreflect.StringKind || k == protoreflect.BytesKind:
		if t.Kind == chunk.KindString {
			return fastString, nil
		}
		if t.Kind == chunk.KindNullable && t.Elem.Base().Kind == chunk.KindString {
			return fastNullString, nil
		}
	case k == protoreflect.Int64Kind:
		if t.Kind == chunk.KindInt64 {
			return fastInt64, nil
		}
	case k == protoreflect.MessageKind:
		if fd.Message().FullName() != "google.protobuf.Timestamp" || t.Kind != chunk.KindDateTime {
			break
		}
		if ts, ok := chunk.TimesOf(t, b.rg); ok {
			if dt, ok := ts.(*chunk.DateTimes); ok {
				return fastDateTime, dt
			}
		}
	}
	return fastCall, nil
}

// appendDateTime appends the google.protobuf.Timestamp of bytes b to
// DateTime column col (dt its appender) when b is as Protobuf's
// serializers write it (seconds, then nanos, each once if at all) and
// the Timestamp is valid and within the column's range; otherwise it
// appends nothing and returns false, and the Timestamp's setter reads it
// (other layouts) or refuses it.
func appendDateTime(dt *chunk.DateTimes, b []byte, col chunk.Column) bool {
	// Inline, the layout of the times of these centuries: seconds of five
	// bytes (1978 to 3058, all in range), then nanos, if not zero, to the
	// message's end.
	if len(b) >= 6 && b[0] == 0x08 {
		if sec, ok := varintIn(b[1:6]); ok {
			if len(b) == 6 {
				return dt.AppendSeconds(col, int64(sec)) == nil
			}
			if ns, ok := varintIn(b[7:]); ok && b[6] == 0x10 && ns < nanosPerSecond {
				return dt.AppendSeconds(col, int64(sec)) == nil
			}
		}
	}
	return appendDateTimeAny(dt, b, col)
}

// varintIn reads b as one varint of at most 5 bytes, all of them,
// unrolled by length: no branch per byte.
func varintIn(b []byte) (uint64, bool) {
	switch len(b) {
	case 5:
		if b[0]&b[1]&b[2]&b[3] >= 0x80 && b[4] < 0x80 {
			return uint64(b[0]&0x7f) | uint64(b[1]&0x7f)<<7 | uint64(b[2]&0x7f)<<14 | uint64(b[3]&0x7f)<<21 | uint64(b[4])<<28, true
		}
	case 4:
		if b[0]&b[1]&b[2] >= 0x80 && b[3] < 0x80 {
			return uint64(b[0]&0x7f) | uint64(b[1]&0x7f)<<7 | uint64(b[2]&0x7f)<<14 | uint64(b[3])<<21, true
		}
	case 3:
		if b[0]&b[1] >= 0x80 && b[2] < 0x80 {
			return uint64(b[0]&0x7f) | uint64(b[1]&0x7f)<<7 | uint64(b[2])<<14, true
		}
	case 2:
		if b[0] >= 0x80 && b[1] < 0x80 {
			return uint64(b[0]&0x7f) | uint64(b[1])<<7, true
		}
	case 1:
		return uint64(b[0]), b[0] < 0x80
	}
	return 0, false
}

// appendDateTimeAny is appendDateTime for any layout.
func appendDateTimeAny(dt *chunk.DateTimes, b []byte, col chunk.Column) bool {
	var sec, ns uint64
	i := 0
	if len(b) > 0 && b[0] == 0x08 { // seconds, a varint
		if sec, i = uvarintLong(b, 1); i < 0 {
			return false
		}
	}
	if i < len(b) && b[i] == 0x10 { // nanos, a varint
		if ns, i = uvarintLong(b, i+1); i < 0 {
			return false
		}
	}
	s, nanos := int64(sec), int64(int32(ns))
	if i != len(b) || s < minTimestamp || s > maxTimestamp || nanos < 0 || nanos >= nanosPerSecond {
		return false
	}
	return dt.AppendSeconds(col, s) == nil
}

// readField reads the field at b[i:]: its number and value, and the
// index after it; ok is false for anything malformed. The fast path
// calls it for the rare field it skips.
func readField(b []byte, i, base int) (num protowire.Number, v val, next int, ok bool) {
	tag, i := uvarint(b, i)
	if i < 0 {
		return 0, v, 0, false
	}
	num, v.wt = protowire.Number(tag>>3), protowire.Type(tag&7)
	if num < protowire.MinValidNumber || tag>>3 > uint64(protowire.MaxValidNumber) {
		return 0, v, 0, false
	}
	v.off = base + i
	switch v.wt {
	case protowire.VarintType:
		if v.u, next = uvarint(b, i); next < 0 {
			return 0, v, 0, false
		}
		return num, v, next, true
	case protowire.Fixed32Type:
		if len(b)-i < 4 {
			return 0, v, 0, false
		}
		v.u = uint64(binary.LittleEndian.Uint32(b[i:]))
		return num, v, i + 4, true
	case protowire.Fixed64Type:
		if len(b)-i < 8 {
			return 0, v, 0, false
		}
		v.u = binary.LittleEndian.Uint64(b[i:])
		return num, v, i + 8, true
	case protowire.BytesType:
		n, i := uvarint(b, i)
		if i < 0 || n > uint64(len(b)-i) {
			return 0, v, 0, false
		}
		v.b = b[i : i+int(n)]
		v.off = base + i
		return num, v, i + int(n), true
	}
	return 0, v, 0, false
}

// fast decodes message b (at offset base) of rec r into cols (c: the
// chunk, for Nested groups; nil below the top level) in one pass; false
// sends it to the slow path, the columns holding partial values the
// caller takes back.
//
// It walks r.seq, the plan's fields by number, along the wire: a tag
// that is the next field's (its wire type, or a packed run) is read and
// appended, the fields the walk passes over are absent (or, for the
// repeated field whose occurrences were being read, ended), and a tag of
// a field the plan lacks is skipped. Anything else (a field of the plan
// out of order or repeated, a wire type not the field's, a malformed
// byte) goes to the slow path. The value of a field is held in u (a
// number) or b[lo:hi] (a length-delimited value); a val is made only
// for a setter.
func (d *Decoder) fast(r *rec, b []byte, base int, cols []chunk.Column, c *chunk.Chunk) bool {
	seq := r.seq        // ends with endOfSeq
	k := 0              // the next field of seq the wire may hold
	var open *fieldPlan // seq[k], a repeated field whose occurrences are being read
	for i := 0; i < len(b); {
		start := i
		var tag uint64
		if x := b[i]; x < 0x80 {
			tag = uint64(x)
			i++
		} else if tag, i = uvarintLong(b, i); i < 0 {
			return false
		}
		f := seq[k]
		wt := protowire.Type(tag & 7)
		if tag != f.tag {
			for uint64(f.num) < tag>>3 && k < len(seq)-1 {
				if f.op == fastElemString {
					cols[f.col1].(*chunk.Array).EndRow() // its row ends, empty or not
				} else if !d.pass(r, f, open, cols, c) {
					return false
				}
				open = nil
				k++
				f = seq[k]
			}
			if uint64(f.num) != tag>>3 {
				// A field the plan lacks is skipped; one it has is out
				// of order or repeated.
				num, _, next, ok := readField(b, start, base)
				if !ok || r.msg.field(num) != nil {
					return false
				}
				i = next
				continue
			}
			if tag != f.tag && !(f.packed && wt == protowire.BytesType) {
				return false
			}
		}
		var u uint64
		lo, hi := i, i
		switch wt {
		case protowire.VarintType:
			if i < len(b) && b[i] < 0x80 {
				u = uint64(b[i])
				i++
				break
			}
			if u, i = uvarintLong(b, i); i < 0 {
				return false
			}
		case protowire.BytesType:
			var n uint64
			if i < len(b) && b[i] < 0x80 {
				n = uint64(b[i])
				i++
			} else if n, i = uvarintLong(b, i); i < 0 {
				return false
			}
			if n > uint64(len(b)-i) {
				return false
			}
			lo, hi = i, i+int(n)
			i = hi
			// The UTF-8 check, its most common case inline: 4 to 8
			// ASCII bytes.
			if f.check && (uint(n-4) > 4 || (binary.LittleEndian.Uint32(b[lo:])|binary.LittleEndian.Uint32(b[hi-4:]))&0x80808080 != 0) && !validUTF8(b[lo:hi]) {
				return false
			}
		case protowire.Fixed32Type:
			if len(b)-i < 4 {
				return false
			}
			u = uint64(binary.LittleEndian.Uint32(b[i:]))
			i += 4
		case protowire.Fixed64Type:
			if len(b)-i < 8 {
				return false
			}
			u = binary.LittleEndian.Uint64(b[i:])
			i += 8
		default:
			return false
		}
		if f.rep {
			open = f
		} else {
			k++ // a second occurrence is out of order
		}
		switch f.op {
		// A field of one emit: most fields.
		case fastString:
			chunk.AppendString(cols[f.col1], b[lo:hi])
			continue
		case fastNullString:
			n := cols[f.col1].(*chunk.Nullable)
			chunk.AppendString(n.Inner, b[lo:hi])
			n.MarkValue()
			continue
		case fastInt64:
			cols[f.col1].(*chunk.Fixed[int64]).Append(int64(u))
			continue
		case fastElemString:
			chunk.AppendString(cols[f.col1].(*chunk.Array).Inner, b[lo:hi])
			continue
		case fastDateTime:
			if !appendDateTime(f.dt, b[lo:hi], cols[f.col1]) && f.set1(d, val{b: b[lo:hi], off: base + lo, wt: wt}, cols[f.col1]) != nil {
				return false
			}
			continue
		case fastNested:
			if !d.element(f.nest, b[lo:hi], base+lo, c) {
				return false
			}
			continue
		case fastSet:
			if f.set1(d, val{u: u, b: b[lo:hi], off: base + lo, wt: wt}, cols[f.col1]) != nil {
				return false
			}
			continue
		case fastEnd:
			return false
		}
		if !d.emitsFast(r, f, val{u: u, b: b[lo:hi], off: base + lo, wt: wt}, cols, c) {
			return false
		}
	}
	for ; k < len(seq)-1; k++ {
		if f := seq[k]; f.op == fastElemString {
			cols[f.col1].(*chunk.Array).EndRow()
		} else if !d.pass(r, f, open, cols, c) {
			return false
		}
		open = nil
	}
	return true
}

// emitsFast appends occurrence v of field f through each of its emits.
func (d *Decoder) emitsFast(r *rec, f *fieldPlan, v val, cols []chunk.Column, c *chunk.Chunk) bool {
	for _, ei := range f.emits {
		em := &r.emits[ei]
		switch {
		case em.set != nil:
			if em.set(d, v, cols[em.col]) != nil {
				return false
			}
		case em.one != nil:
			if em.one(d, v, cols[em.col]) != nil {
				return false
			}
		case em.elem != nil:
			inner := cols[em.col].(*chunk.Array).Inner
			if v.wt == protowire.BytesType && em.ewt != protowire.BytesType {
				if d.packed(&v, em.ewt, em.elem, inner) != nil {
					return false
				}
			} else if em.elem(d, v, inner) != nil {
				return false
			}
		default:
			if !d.element(em.nested, v.b, v.off, c) {
				return false
			}
		}
	}
	return true
}

// pass ends field f, which the fast path's walk leaves: the rows of the
// Arrays its occurrences were appended to, when it is open (a repeated
// field that was on the wire), else what it gives absent (for a
// repeated string into Array(String), the empty array: the row ended).
func (d *Decoder) pass(r *rec, f, open *fieldPlan, cols []chunk.Column, c *chunk.Chunk) bool {
	if f == open || f.op == fastElemString {
		d.closeFast(r, f, cols, c)
		return true
	}
	return d.absentFast(r, f, cols, c)
}

// absentFast appends what field f, absent, gives its columns.
func (d *Decoder) absentFast(r *rec, f *fieldPlan, cols []chunk.Column, c *chunk.Chunk) bool {
	for _, ei := range f.emits {
		em := &r.emits[ei]
		var ok bool
		switch {
		case em.set != nil:
			col := cols[em.col]
			switch {
			case em.nullable && em.presence:
				col.(*chunk.Nullable).AppendNull()
				ok = true
			case em.zeroDefault:
				col.AppendDefault()
				ok = true
			default:
				ok = em.set(d, em.zero, col) == nil
			}
		case em.nested != nil:
			for _, ci := range em.nested.cols {
				c.Cols[ci].(*chunk.Array).EndRow()
			}
			ok = true
		case em.nullable && em.presence:
			cols[em.col].(*chunk.Nullable).AppendNull()
			ok = true
		default:
			ok = em.list(d, r, -1, cols[em.col]) == nil
		}
		if !ok {
			return false
		}
	}
	return true
}

// closeFast ends the rows of the Arrays a repeated field's occurrences
// were appended to.
func (d *Decoder) closeFast(r *rec, f *fieldPlan, cols []chunk.Column, c *chunk.Chunk) {
	for _, ei := range f.emits {
		em := &r.emits[ei]
		if em.nested != nil {
			for _, ci := range em.nested.cols {
				c.Cols[ci].(*chunk.Array).EndRow()
			}
			continue
		}
		cols[em.col].(*chunk.Array).EndRow()
	}
}

// element appends one element of a Nested group (b: its message, at
// offset off) to the group's Arrays' inner columns (the unfed ones their
// default); false sends the whole record to the slow path.
func (d *Decoder) element(n *nestedEmit, b []byte, off int, c *chunk.Chunk) bool {
	if n.at != d.recs {
		n.at = d.recs
		for _, ci := range n.cols {
			d.inner[ci] = c.Cols[ci].(*chunk.Array).Inner
		}
	}
	e := n.elem
	if e.fastOK {
		if !d.fast(e, b, off, d.inner, nil) {
			return false // the whole record goes to the slow path
		}
	} else {
		e.reset()
		if d.scan(e, e.msg, b, off) != nil || d.emit(e, d.inner, nil) != nil {
			return false
		}
	}
	for _, ci := range n.unfed {
		d.inner[ci].AppendDefault()
	}
	return true
}

// utf8Col is a String column the fast path appends a UTF-8 field's
// strings to unchecked: the strings a record added are checked at its
// end, all at once (Decoder.checkUTF8).
type utf8Col struct {
	col    int    // the chunk's column
	nested bool   // col is an Array of a Nested group: the element's column is its inner one
	op     fastOp // fastString, fastNullString or fastElemString: where the Strings are
}

// bulkUTF8 lists the String columns of r's fields (and of the fields of
// the elements of its Nested groups) that the fast path appends UTF-8
// strings to, and clears their fields' check: a record's strings are
// checked at once at its end, which costs less than a check per string.
func bulkUTF8(r *rec) []utf8Col {
	if !r.fastOK {
		return nil
	}
	var out []utf8Col
	add := func(f *fieldPlan, nested bool) {
		if f.utf8 && (f.op == fastString || f.op == fastNullString || f.op == fastElemString) {
			out = append(out, utf8Col{col: f.col1, nested: nested, op: f.op})
			f.check = false
		}
	}
	for i := range r.msg.fields {
		add(&r.msg.fields[i], false)
	}
	for ei := range r.emits {
		if n := r.emits[ei].nested; n != nil && n.elem.fastOK {
			for i := range n.elem.msg.fields {
				add(&n.elem.msg.fields[i], true)
			}
		}
	}
	return out
}

// stringsOf returns the Strings of c that u's strings are appended to.
func (u *utf8Col) stringsOf(c *chunk.Chunk) *chunk.Strings {
	col := c.Cols[u.col]
	if u.nested {
		col = col.(*chunk.Array).Inner
	}
	switch u.op {
	case fastNullString:
		col = col.(*chunk.Nullable).Inner
	case fastElemString:
		col = col.(*chunk.Array).Inner
	}
	return col.(*chunk.Strings)
}

// markUTF8 notes where the strings of the record about to be decoded
// into c start in each of d.utf8's columns.
func (d *Decoder) markUTF8(c *chunk.Chunk) {
	for j := range d.utf8 {
		s := d.utf8[j].stringsOf(c)
		d.marks[2*j], d.marks[2*j+1] = len(s.Buf), len(s.Ends)
	}
}

// checkUTF8 reports whether every string the record added to d.utf8's
// columns since markUTF8 is valid UTF-8: their bytes at once when they
// are ASCII (as most are), else each string alone (two strings can
// make a valid sequence that neither is).
func (d *Decoder) checkUTF8(c *chunk.Chunk) bool {
	for j := range d.utf8 {
		s := d.utf8[j].stringsOf(c)
		start := d.marks[2*j]
		if ascii(s.Buf[start:]) {
			continue
		}
		for _, end := range s.Ends[d.marks[2*j+1]:] {
			if !utf8.Valid(s.Buf[start:end]) {
				return false
			}
			start = end
		}
	}
	return true
}

// ascii reports whether b has no byte with its high bit set, 16 bytes
// at a time.
func ascii(b []byte) bool {
	var or uint64
	for len(b) >= 16 {
		or |= binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:])
		b = b[16:]
	}
	for _, c := range b {
		or |= uint64(c)
	}
	return or&0x8080808080808080 == 0
}
