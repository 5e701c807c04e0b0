package avro

import (
	"fmt"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/decode"
)

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
