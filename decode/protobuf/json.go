package protobuf

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// google.protobuf.Struct, Value and ListValue go into String columns as
// the JSON text protojson gives for them, compact: a Struct's keys sorted
// (a later entry of a key replacing an earlier one), numbers in
// encoding/json's form. A Value with no kind set is null (protojson
// refuses it), a NaN or infinite number the string protojson writes for
// double fields (protojson refuses them in a Value).

// maxJSONDepth bounds the nesting of Struct, Value and ListValue in a
// record: a message nested deeper is corrupt.
const maxJSONDepth = 100

// part is one occurrence of a message: its bytes and their offset.
type part struct {
	b   []byte
	off int
}

// jsonEntry is one entry of a Struct: its key and the occurrences of its
// Value (d.parts[lo:hi]).
type jsonEntry struct {
	key    []byte
	lo, hi int
}

type jsonKind uint8

const (
	jsonStruct jsonKind = iota
	jsonValue
	jsonList
)

func jsonSetter(md protoreflect.MessageDescriptor, t *chunk.Type) (*msgSetter, error) {
	if t.Kind != chunk.KindString {
		return nil, fmt.Errorf("message %s cannot go into %s: want String (its JSON text)", md.FullName(), t.Name)
	}
	kind := jsonValue
	switch md.FullName() {
	case "google.protobuf.Struct":
		kind = jsonStruct
	case "google.protobuf.ListValue":
		kind = jsonList
	}
	write := func(d *Decoder, lo int, col chunk.Column) *decode.Error {
		var e *decode.Error
		d.json, e = d.writeJSON(kind, d.json[:0], lo, len(d.parts), 0)
		d.parts = d.parts[:lo]
		if e != nil {
			return e
		}
		chunk.AppendString(col, d.json)
		return nil
	}
	return &msgSetter{
		one: func(d *Decoder, v val, col chunk.Column) *decode.Error {
			lo := len(d.parts)
			d.parts = append(d.parts, part{v.b, v.off})
			return write(d, lo, col)
		},
		merge: func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error {
			lo := len(d.parts)
			for o := head; o >= 0; o = r.occ[o].next {
				d.parts = append(d.parts, part{r.occ[o].v.b, r.occ[o].v.off})
			}
			return write(d, lo, col)
		},
	}, nil
}

// jsonField reads the field at b[i:] of a message at offset off: its
// number, wire type and value, and the index after it.
func jsonField(b []byte, i, off int, what string) (protowire.Number, val, int, *decode.Error) {
	num, wt, n := protowire.ConsumeTag(b[i:])
	if n < 0 {
		return 0, val{}, 0, corruptAt(off+i, "%s: malformed tag", what)
	}
	i += n
	v := val{wt: wt, off: off + i}
	switch wt {
	case protowire.VarintType:
		v.u, n = protowire.ConsumeVarint(b[i:])
	case protowire.Fixed64Type:
		v.u, n = protowire.ConsumeFixed64(b[i:])
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(b[i:])
		v.u = uint64(x)
	case protowire.BytesType:
		v.b, n = protowire.ConsumeBytes(b[i:])
		v.off = off + i + n - len(v.b)
	default:
		return 0, val{}, 0, corruptAt(off+i, "%s: field %d has wire type %d", what, num, wt)
	}
	if n < 0 {
		return 0, val{}, 0, corruptAt(off+i, "%s: field %d truncated or malformed", what, num)
	}
	return num, v, i + n, nil
}

func wantWire(v *val, wt protowire.Type, what string, num protowire.Number) *decode.Error {
	if v.wt != wt {
		return corruptAt(v.off, "%s: field %d has wire type %s, want %s", what, num, wireName(v.wt), wireName(wt))
	}
	return nil
}

func validString(v *val, what string) *decode.Error {
	if !utf8.Valid(v.b) {
		return corruptAt(v.off, "%s: string is not valid UTF-8", what)
	}
	return nil
}

// writeJSON appends the JSON text of the message of kind k whose
// occurrences (merged) are d.parts[lo:hi].
func (d *Decoder) writeJSON(k jsonKind, out []byte, lo, hi, depth int) ([]byte, *decode.Error) {
	if depth > maxJSONDepth {
		return out, corruptAt(d.parts[lo].off, "google.protobuf.Value nested more than %d deep", maxJSONDepth)
	}
	n0 := len(d.parts)
	defer func() { d.parts = d.parts[:n0] }()
	switch k {
	case jsonStruct:
		return d.writeStruct(out, lo, hi, depth)
	case jsonList:
		out = append(out, '[')
		first := true
		for pi := lo; pi < hi; pi++ {
			p := d.parts[pi]
			for i := 0; i < len(p.b); {
				num, v, next, e := jsonField(p.b, i, p.off, "google.protobuf.ListValue")
				if e != nil {
					return out, e
				}
				i = next
				if num != 1 {
					continue
				}
				if e := wantWire(&v, protowire.BytesType, "google.protobuf.ListValue", num); e != nil {
					return out, e
				}
				if !first {
					out = append(out, ',')
				}
				first = false
				at := len(d.parts)
				d.parts = append(d.parts, part{v.b, v.off})
				out, e = d.writeJSON(jsonValue, out, at, at+1, depth+1)
				d.parts = d.parts[:at]
				if e != nil {
					return out, e
				}
			}
		}
		return append(out, ']'), nil
	}
	// A Value: the last kind on the wire; a message kind merges its
	// occurrences since it was last set.
	const what = "google.protobuf.Value"
	var kind protowire.Number
	var last val
	mlo := 0
	for pi := lo; pi < hi; pi++ {
		p := d.parts[pi]
		for i := 0; i < len(p.b); {
			num, v, next, e := jsonField(p.b, i, p.off, what)
			if e != nil {
				return out, e
			}
			i = next
			switch num {
			case 1, 4:
				if e := wantWire(&v, protowire.VarintType, what, num); e != nil {
					return out, e
				}
			case 2:
				if e := wantWire(&v, protowire.Fixed64Type, what, num); e != nil {
					return out, e
				}
			case 3:
				if e := wantWire(&v, protowire.BytesType, what, num); e != nil {
					return out, e
				}
				if e := validString(&v, what); e != nil {
					return out, e
				}
			case 5, 6:
				if e := wantWire(&v, protowire.BytesType, what, num); e != nil {
					return out, e
				}
				if kind != num {
					mlo = len(d.parts)
				}
				d.parts = append(d.parts, part{v.b, v.off})
			default:
				continue
			}
			kind, last = num, v
		}
	}
	switch kind {
	case 2:
		return floatJSON(out, math.Float64frombits(last.u)), nil
	case 3:
		return appendJSONString(out, last.b), nil
	case 4:
		if last.u != 0 {
			return append(out, "true"...), nil
		}
		return append(out, "false"...), nil
	case 5:
		return d.writeJSON(jsonStruct, out, mlo, len(d.parts), depth+1)
	case 6:
		return d.writeJSON(jsonList, out, mlo, len(d.parts), depth+1)
	}
	return append(out, "null"...), nil
}

// writeStruct appends a Struct's JSON object: its entries sorted by key,
// the last of each key.
func (d *Decoder) writeStruct(out []byte, lo, hi, depth int) ([]byte, *decode.Error) {
	const what = "google.protobuf.Struct"
	elo := len(d.ents)
	defer func() { d.ents = d.ents[:elo] }()
	for pi := lo; pi < hi; pi++ {
		p := d.parts[pi]
		for i := 0; i < len(p.b); {
			num, v, next, e := jsonField(p.b, i, p.off, what)
			if e != nil {
				return out, e
			}
			i = next
			if num != 1 {
				continue
			}
			if e := wantWire(&v, protowire.BytesType, what, num); e != nil {
				return out, e
			}
			ent := jsonEntry{lo: len(d.parts)}
			for j := 0; j < len(v.b); {
				en, ev, enext, e := jsonField(v.b, j, v.off, what+" entry")
				if e != nil {
					return out, e
				}
				j = enext
				switch en {
				case 1:
					if e := wantWire(&ev, protowire.BytesType, what+" entry", en); e != nil {
						return out, e
					}
					if e := validString(&ev, what+" key"); e != nil {
						return out, e
					}
					ent.key = ev.b
				case 2:
					if e := wantWire(&ev, protowire.BytesType, what+" entry", en); e != nil {
						return out, e
					}
					d.parts = append(d.parts, part{ev.b, ev.off})
				}
			}
			ent.hi = len(d.parts)
			d.ents = append(d.ents, ent)
		}
	}
	ents := d.ents[elo:]
	slices.SortStableFunc(ents, func(a, b jsonEntry) int { return bytes.Compare(a.key, b.key) })
	ehi := len(d.ents)
	out = append(out, '{')
	first := true
	for i := elo; i < ehi; i++ {
		if i+1 < ehi && bytes.Equal(d.ents[i].key, d.ents[i+1].key) {
			continue // a later entry of the key replaces it
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		ent := d.ents[i]
		out = appendJSONString(out, ent.key)
		out = append(out, ':')
		if ent.lo == ent.hi {
			// An entry without a value: an empty Value.
			out = append(out, "null"...)
			continue
		}
		var e *decode.Error
		if out, e = d.writeJSON(jsonValue, out, ent.lo, ent.hi, depth+1); e != nil {
			return out, e
		}
	}
	return append(out, '}'), nil
}

// appendJSONString appends s (valid UTF-8) as a JSON string, escaped as
// protojson escapes it.
func appendJSONString(out, s []byte) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		out = append(out, '\\')
		switch c {
		case '"', '\\':
			out = append(out, c)
		case '\b':
			out = append(out, 'b')
		case '\f':
			out = append(out, 'f')
		case '\n':
			out = append(out, 'n')
		case '\r':
			out = append(out, 'r')
		case '\t':
			out = append(out, 't')
		default:
			out = append(out, 'u')
			out = append(out, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			out = strconv.AppendUint(out, uint64(c), 16)
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
