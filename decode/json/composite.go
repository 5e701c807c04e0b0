package json

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// setTuple takes a JSON array of the tuple's elements in order or, for a
// named tuple, an object whose fields are the elements (missing ones get
// their default, others are ignored).
func setTuple(names []string, sets []setter) setter {
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
				if e := setElem(d, sets[i], it, tc.Elems[i]); e != nil {
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
				if e := setElem(d, sets[i], o.Get(name), tc.Elems[i]); e != nil {
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
func setElem(d *Decoder, set setter, v *fastjson.Value, col chunk.Column) *decode.Error {
	if v == nil || v.Type() == fastjson.TypeNull {
		col.AppendDefault()
		return nil
	}
	return set(d, v, col)
}

// mapKeySetter appends a JSON object key to a map's key column.
type mapKeySetter func(d *Decoder, key []byte, col chunk.Column) *decode.Error

// compileMapKey returns the setter of object keys into key type t: the
// key itself for String, else the key as a JSON string converted as t
// (a number for the integer types, a date for Date, ...).
func compileMapKey(t *chunk.Type, rg chunk.ServerRanges) (mapKeySetter, error) {
	t = t.Base()
	switch t.Kind {
	case chunk.KindString:
		return func(d *Decoder, key []byte, col chunk.Column) *decode.Error {
			chunk.AppendString(col, key)
			return nil
		}, nil
	case chunk.KindNullable, chunk.KindArray, chunk.KindMap, chunk.KindTuple:
		return nil, fmt.Errorf("map key type %s is not supported", t.Name)
	}
	set, err := compile(t, rg)
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
	if e := setElem(s.d, s.val, v, s.m.Values); e != nil {
		e.Err = fmt.Errorf("map value of key %s: %w", decode.Quote(key), e.Err)
		s.err = e
	}
}

func setArray(elem setter) setter {
	return func(d *Decoder, v *fastjson.Value, col chunk.Column) *decode.Error {
		a := col.(*chunk.Array)
		items, err := v.Array()
		if err != nil {
			return wrongType(v, "an array")
		}
		for _, it := range items {
			if it.Type() == fastjson.TypeNull {
				a.Inner.AppendDefault()
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
