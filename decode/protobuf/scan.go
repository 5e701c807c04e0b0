package protobuf

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// msgPlan is how one message type's fields are read in one rec: the
// fields the rec's columns need, by number; every other field is skipped
// unread.
type msgPlan struct {
	path   string // the message's path ("" at a rec's top, else "a.b.")
	name   string // its full name, for messages
	dense  []int32
	sparse map[protowire.Number]int32 // numbers past dense (looked up, never written, while decoding)
	fields []fieldPlan
}

// denseMax bounds the field numbers looked up in a slice; larger ones
// (rare: numbers are small in practice) go through a map.
const denseMax = 1024

// field returns the plan of field num, or nil.
func (m *msgPlan) field(num protowire.Number) *fieldPlan {
	if int(num) < len(m.dense) {
		if i := m.dense[num]; i > 0 {
			return &m.fields[i-1]
		}
		return nil
	}
	if m.sparse != nil {
		if i, ok := m.sparse[num]; ok {
			return &m.fields[i-1]
		}
	}
	return nil
}

// index builds the lookup of m's fields.
func (m *msgPlan) index() {
	hi := 0
	for _, f := range m.fields {
		if int(f.num) < denseMax && int(f.num) > hi {
			hi = int(f.num)
		}
	}
	m.dense = make([]int32, hi+1)
	for i, f := range m.fields {
		if int(f.num) < denseMax {
			m.dense[f.num] = int32(i + 1)
			continue
		}
		if m.sparse == nil {
			m.sparse = make(map[protowire.Number]int32)
		}
		m.sparse[f.num] = int32(i + 1)
	}
}

// fieldPlan is one field a rec reads.
type fieldPlan struct {
	path string
	num  protowire.Number
	kind string // the declared type, for messages
	wt   protowire.Type
	// packed: a repeated scalar of a numeric type, which also comes as
	// one length-delimited run of values.
	packed bool
	slot   int32
	list   bool     // every occurrence is chained
	sub    *msgPlan // a message whose fields are flattened into the rec
	utf8   bool     // a string that must be valid UTF-8
	// check: the fast path checks each occurrence's UTF-8 (a utf8
	// field whose column is not checked whole, bulkUTF8).
	check bool
	// clears are the slots a oneof member's occurrence empties: the
	// other members' and those of the messages flattened from them.
	clears []int32
	// For the fast path (fast.go): the emits the field feeds, and
	// whether its occurrences append (a repeated field).
	emits []int32
	rep   bool
	op    fastOp // how a field of one emit appends (fastEmits: through emits)
	set1  setter // the setter of a field of one emit (fastSet, fastDateTime)
	col1  int    // the column of a field of one emit
	dt    *chunk.DateTimes
	nest  *nestedEmit // fastNested's
	tag   uint64      // the field's tag with its wire type (num<<3 | wt)
}

func corruptAt(off int, format string, args ...any) *decode.Error {
	return &decode.Error{Reason: decode.ReasonCorrupt, Err: fmt.Errorf(format+" at byte %d", append(args, off)...)}
}

// scan reads message bytes b (at offset base of the record) into the
// slots of r, with plan m (r's own message or one flattened into it).
func (d *Decoder) scan(r *rec, m *msgPlan, b []byte, base int) *decode.Error {
	i := 0
	for i < len(b) {
		start := i
		var tag uint64
		if c := b[i]; c < 0x80 {
			tag = uint64(c)
			i++
		} else {
			x, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return corruptAt(base+start, "message %s: malformed tag", msgName(m))
			}
			tag = x
			i += n
		}
		num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
		if num < protowire.MinValidNumber || tag>>3 > uint64(protowire.MaxValidNumber) {
			return corruptAt(base+start, "message %s: field number %d out of range", msgName(m), tag>>3)
		}
		v := val{wt: wt, off: base + i}
		switch wt {
		case protowire.VarintType:
			if i < len(b) && b[i] < 0x80 {
				v.u = uint64(b[i])
				i++
				break
			}
			x, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return corruptAt(base+i, "%s: %s varint", fieldName(m, num), varintTrouble(n))
			}
			v.u = x
			i += n
		case protowire.Fixed32Type:
			if len(b)-i < 4 {
				return corruptAt(base+i, "%s: fixed32 truncated (%d bytes left)", fieldName(m, num), len(b)-i)
			}
			v.u = uint64(binary.LittleEndian.Uint32(b[i:]))
			i += 4
		case protowire.Fixed64Type:
			if len(b)-i < 8 {
				return corruptAt(base+i, "%s: fixed64 truncated (%d bytes left)", fieldName(m, num), len(b)-i)
			}
			v.u = binary.LittleEndian.Uint64(b[i:])
			i += 8
		case protowire.BytesType:
			var n uint64
			if i < len(b) && b[i] < 0x80 {
				n = uint64(b[i])
				i++
			} else {
				x, k := protowire.ConsumeVarint(b[i:])
				if k < 0 {
					return corruptAt(base+i, "%s: %s length", fieldName(m, num), varintTrouble(k))
				}
				n = x
				i += k
			}
			if n > uint64(len(b)-i) {
				return corruptAt(base+i, "%s: length %d past the end of the message (%d bytes left)", fieldName(m, num), n, len(b)-i)
			}
			v.b = b[i : i+int(n)]
			v.off = base + i
			i += int(n)
		case protowire.StartGroupType, protowire.EndGroupType:
			return corruptAt(base+start, "%s: group wire type %d (groups are not supported)", fieldName(m, num), wt)
		default:
			return corruptAt(base+start, "%s: invalid wire type %d", fieldName(m, num), wt)
		}
		f := m.field(num)
		if f == nil {
			continue // a field no column reads, or one the schema lacks
		}
		if wt != f.wt && !(f.packed && wt == protowire.BytesType) {
			return corruptAt(base+start, "field %q (%s, number %d): wire type %s, want %s", f.path, f.kind, num, wireName(wt), wireName(f.wt))
		}
		if f.utf8 && !validUTF8(v.b) {
			return corruptAt(v.off, "field %q: string is not valid UTF-8", f.path)
		}
		for _, s := range f.clears {
			r.slots[s].gen = 0
		}
		if f.slot >= 0 {
			s := &r.slots[f.slot]
			if s.gen != r.gen {
				s.gen, s.head, s.tail = r.gen, -1, -1
			}
			if !f.list {
				s.v = v
			} else {
				o := int32(len(r.occ))
				r.occ = append(r.occ, occ{v: v, next: -1})
				if s.tail >= 0 {
					r.occ[s.tail].next = o
				} else {
					s.head = o
				}
				s.tail = o
			}
		}
		if f.sub != nil {
			if e := d.scan(r, f.sub, v.b, v.off); e != nil {
				return e
			}
		}
	}
	return nil
}

func msgName(m *msgPlan) string {
	if m.path == "" {
		return m.name
	}
	return fmt.Sprintf("%s (field %q)", m.name, m.path[:len(m.path)-1])
}

func fieldName(m *msgPlan, num protowire.Number) string {
	if f := m.field(num); f != nil {
		return fmt.Sprintf("field %q (number %d)", f.path, num)
	}
	return fmt.Sprintf("field number %d of %s", num, msgName(m))
}

func varintTrouble(n int) string {
	if n == -1 { // protowire's errCodeTruncated
		return "truncated"
	}
	return "malformed"
}

func wireName(wt protowire.Type) string {
	switch wt {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	}
	return fmt.Sprintf("%d", wt)
}

// packed reads a packed run of scalars (v, length-delimited) whose
// elements have wire type ewt, each through elem into col.
func (d *Decoder) packed(v *val, ewt protowire.Type, elem setter, col chunk.Column) *decode.Error {
	b := v.b
	e := val{wt: ewt}
	for i := 0; i < len(b); {
		e.off = v.off + i
		switch ewt {
		case protowire.VarintType:
			if b[i] < 0x80 {
				e.u = uint64(b[i])
				i++
				break
			}
			x, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return corruptAt(v.off+i, "packed values: %s varint", varintTrouble(n))
			}
			e.u = x
			i += n
		case protowire.Fixed32Type:
			if len(b)-i < 4 {
				return corruptAt(v.off+i, "packed fixed32 values: %d bytes left", len(b)-i)
			}
			e.u = uint64(binary.LittleEndian.Uint32(b[i:]))
			i += 4
		default:
			if len(b)-i < 8 {
				return corruptAt(v.off+i, "packed fixed64 values: %d bytes left", len(b)-i)
			}
			e.u = binary.LittleEndian.Uint64(b[i:])
			i += 8
		}
		if err := elem(d, e, col); err != nil {
			return err
		}
	}
	return nil
}

// mapKey is how a map field's entries are told apart: the key's field
// plan in the entry message.
type mapKey struct {
	str  bool // string keys; else the varint or fixed value
	bits int  // the key's width in bits (32 or 64), for integers
	bool bool // a bool key (any nonzero varint is true)
}

// dedupeSmall is the number of entries compared pairwise; more go
// through the decoder's key map.
const dedupeSmall = 16

// dedupe returns the head of a chain (appended to r.occ) of the map
// entries from head without those a later entry of the same key
// replaces, as Protobuf's parsers keep only the last.
func (d *Decoder) dedupe(r *rec, head int32, k *mapKey) (int32, *decode.Error) {
	if head < 0 || r.occ[head].next < 0 {
		return head, nil // fewer than two entries
	}
	// The keys, in order, after the chain; a key's next is its entry.
	first := len(r.occ)
	for o := head; o >= 0; o = r.occ[o].next {
		key, e := entryKey(k, r.occ[o].v)
		if e != nil {
			return -1, e
		}
		r.occ = append(r.occ, occ{v: key, next: o})
	}
	n := len(r.occ) - first
	// A key is kept (off 1) when no later entry has it.
	keys := r.occ[first:]
	if n <= dedupeSmall {
		for i := range keys {
			keys[i].v.off = 1
			for j := i + 1; j < len(keys); j++ {
				if sameKey(&keys[i].v, &keys[j].v) {
					keys[i].v.off = 0
					break
				}
			}
		}
	} else if k.str {
		if d.keys == nil {
			d.keys = make(map[string]struct{})
		}
		for i := len(keys) - 1; i >= 0; i-- {
			s := unsafe.String(unsafe.SliceData(keys[i].v.b), len(keys[i].v.b))
			if _, ok := d.keys[s]; ok {
				keys[i].v.off = 0
				continue
			}
			d.keys[s] = struct{}{}
			keys[i].v.off = 1
		}
		clear(d.keys) // its strings share the record's bytes
	} else {
		if d.ikeys == nil {
			d.ikeys = make(map[uint64]struct{})
		}
		for i := len(keys) - 1; i >= 0; i-- {
			if _, ok := d.ikeys[keys[i].v.u]; ok {
				keys[i].v.off = 0
				continue
			}
			d.ikeys[keys[i].v.u] = struct{}{}
			keys[i].v.off = 1
		}
		clear(d.ikeys)
	}
	// Chain the kept entries, in their order.
	out, last := int32(-1), int32(-1)
	for i := first; i < first+n; i++ {
		if r.occ[i].v.off == 0 {
			continue
		}
		o := int32(len(r.occ))
		r.occ = append(r.occ, occ{v: r.occ[r.occ[i].next].v, next: -1})
		if last >= 0 {
			r.occ[last].next = o
		} else {
			out = o
		}
		last = o
	}
	return out, nil
}

// entryKey returns the normalized key of a map entry (v, its message
// bytes): in u for integers, in b for strings.
func entryKey(k *mapKey, v val) (val, *decode.Error) {
	var key val
	b := v.b
	for i := 0; i < len(b); {
		tag, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return key, corruptAt(v.off+i, "map entry: malformed tag")
		}
		i += n
		num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
		m := protowire.ConsumeFieldValue(num, wt, b[i:])
		if m < 0 {
			return key, corruptAt(v.off+i, "map entry: malformed field %d", num)
		}
		if num == 1 {
			switch wt {
			case protowire.BytesType:
				x, _ := protowire.ConsumeBytes(b[i:])
				key.b, key.u = x, 0
			case protowire.VarintType:
				x, _ := protowire.ConsumeVarint(b[i:])
				key.u = x
			case protowire.Fixed32Type:
				x, _ := protowire.ConsumeFixed32(b[i:])
				key.u = uint64(x)
			case protowire.Fixed64Type:
				x, _ := protowire.ConsumeFixed64(b[i:])
				key.u = x
			}
		}
		i += m
	}
	switch {
	case k.bool:
		key.u = min(key.u, 1)
	case !k.str && k.bits == 32:
		key.u &= math.MaxUint32
	}
	key.wt = protowire.BytesType
	if !k.str {
		key.wt = protowire.VarintType
	}
	return key, nil
}

func sameKey(a, b *val) bool {
	if a.wt == protowire.BytesType {
		return string(a.b) == string(b.b)
	}
	return a.u == b.u
}

// validUTF8 is utf8.Valid with a fast path for ASCII, which most strings
// are: up to 3 bytes each byte (b[0],
// b[n/2] and b[n-1] are all of them), longer ones 8 bytes at a time (4
// and 4 under 8), the last word overlapping the one before, and
// utf8.Valid for a string with a high bit set. The fast path tests
// strings of 4 to 8 bytes inline first.
func validUTF8(b []byte) bool {
	n := len(b)
	switch {
	case n == 0:
		return true
	case n < 4:
		return b[0]|b[n/2]|b[n-1] < 0x80 || utf8.Valid(b)
	case n < 8:
		return (binary.LittleEndian.Uint32(b)|binary.LittleEndian.Uint32(b[n-4:]))&0x80808080 == 0 || utf8.Valid(b)
	}
	for i := 0; n-i > 8; i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			return utf8.Valid(b)
		}
	}
	if binary.LittleEndian.Uint64(b[n-8:])&0x8080808080808080 != 0 {
		return utf8.Valid(b)
	}
	return true
}

// uvarint reads the varint at b[i:]: its value and the index after it,
// or a negative index (protowire's error code: -1 truncated, else
// malformed). A one-byte varint is read inline; longer ones by
// uvarintLong.
func uvarint(b []byte, i int) (uint64, int) {
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		return uint64(b[i]), i + 1
	}
	return uvarintLong(b, i)
}

// uvarintLong reads a varint at b[i:] as uvarint, two bytes inline.
func uvarintLong(b []byte, i int) (uint64, int) {
	if i >= 0 && i+1 < len(b) && b[i] >= 0x80 && b[i+1] < 0x80 {
		return uint64(b[i]&0x7f) | uint64(b[i+1])<<7, i + 2
	}
	if i > len(b) {
		return 0, -1
	}
	x, n := protowire.ConsumeVarint(b[i:])
	if n < 0 {
		return 0, n
	}
	return x, i + n
}
