package json

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// fastArray appends the array at s[i] (its '[') as one row of a, each
// element as setArray would append it, and returns the index past the
// array; false when an element is one its setter would refuse, or the
// syntax is not what fastjson accepts (the caller then truncates the chunk
// back).
func (d *Decoder) fastArray(s []byte, i int, f *fastCol, a *chunk.Array) (int, bool) {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		a.EndRow()
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = d.fastElem(s, i, f, a.Inner); !ok {
			return i, false // (diagErr as setArray returns it)
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return i, false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case ']':
			a.EndRow()
			return i + 1, true
		}
		return i, false
	}
}

// fastElem appends the value at s[i], an element of an array or a map's
// value at depth 3, to col as setArray and the map setter append one
// (null gives the default), and returns the index past it. When diagnosing, a
// refusal leaves the setter's error in diagErr.
func (d *Decoder) fastElem(s []byte, i int, f *fastCol, col chunk.Column) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	if f.elem != nil && s[i] != '[' && s[i] != '{' {
		if t, text, next, ok := d.scalar(s, i); ok {
			if t == tokNull {
				col.AppendDefault()
				return next, true
			}
			if f.elem(d, t, text, col) {
				return next, true
			}
			if !d.diag {
				return i, false
			}
			// Diagnosing: the element's setter says why, below.
		}
	}
	// An element without a fast setter: parsed alone.
	v, end, ok := d.parseAlone(s, i, 3)
	if !ok || f.elemSet == nil {
		return i, false
	}
	if v.Type() == fastjson.TypeNull {
		col.AppendDefault()
	} else if e := f.elemSet(d, v, col); e != nil {
		if d.diag {
			d.diagErr = e
		}
		return i, false
	}
	return end, true
}

// fastMap appends the object at s[i] (its '{') as one row of m, each key
// and value as the map setter appends them, and returns the index past it;
// false as fastArray.
func (d *Decoder) fastMap(s []byte, i int, f *fastCol, m *chunk.Map) (int, bool) {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		m.EndRow()
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		ks := i + 1
		for i = ks; i < len(s) && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= len(s) || s[i] != '"' {
			return i, false // (a key with an escape is left to fastjson)
		}
		key := s[ks:i]
		if i = skipWS(s, i+1); i >= len(s) || s[i] != ':' {
			return i, false
		}
		if e := f.mapKey(d, key, m.Keys); e != nil {
			if d.diag {
				e.Err = fmt.Errorf("map key %s: %w", decode.Quote(key), e.Err)
				d.diagErr = e
			}
			return i, false
		}
		var ok bool
		if i, ok = d.fastElem(s, skipWS(s, i+1), f, m.Values); !ok {
			if d.diagErr != nil {
				d.diagErr.Err = fmt.Errorf("map value of key %s: %w", decode.Quote(key), d.diagErr.Err)
			}
			return i, false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return i, false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case '}':
			m.EndRow()
			return i + 1, true
		}
		return i, false
	}
}

// parseAlone parses the value at s[i], at nesting depth depth, with
// fastjson on its own, and returns it and the index past it. The value is
// valid until the next parse.
func (d *Decoder) parseAlone(s []byte, i, depth int) (*fastjson.Value, int, bool) {
	end, ok := skipValue(s, i, depth)
	if !ok {
		return nil, i, false
	}
	v, err := d.p.ParseBytes(s[i:end])
	if err != nil {
		return nil, i, false
	}
	if end-i > keepParserBytes {
		d.parsedBig = true
	}
	return v, end, true
}
