package json

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// fromObject appends one row from a parsed object.
func (d *Decoder) fromObject(o *fastjson.Object, c *chunk.Chunk) *decode.Error {
	clear(d.slots)
	if d.lookupByGet {
		for i := range d.cols {
			if f := d.cols[i].field; f != "" {
				d.slots[i] = o.Get(f)
			}
		}
	} else {
		d.next = 0
		o.Visit(d.visitFn)
	}
	if d.nested {
		// A field "a.b" is the key "a.b" itself when the object has it,
		// else b inside the object a; into an Array column, when a is an
		// array of objects, b of each of its elements.
		clear(d.rest)
		// Each prefix of the paths once: the columns under one object
		// (before.id, before.name, ...) share its lookup.
		for k, key := range d.pathKeys {
			var v *fastjson.Value
			if p := d.pathParent[k]; p < 0 {
				v = o.Get(key)
			} else if pv := d.pathVals[p]; pv != nil {
				v = pv.Get(key)
			}
			d.pathVals[k] = v
		}
		for i := range d.cols {
			if path := d.cols[i].path; path != nil && d.slots[i] == nil {
				if n := d.cols[i].node; n >= 0 {
					d.slots[i] = d.pathVals[n]
				} else {
					d.slots[i] = d.lookup(o, i, path)
				}
			}
		}
	}

	rows := c.Rows
	absent := 0
	for i := range d.cols {
		col := c.Cols[i]
		sv := d.slots[i]
		if sv == nil {
			col.AppendDefault()
			absent++
			continue
		}
		if sv.Type() == fastjson.TypeNull {
			decode.AppendDefault(d.cols[i].null, col)
			continue
		}
		var e *decode.Error
		if d.rest != nil && d.rest[i] != nil {
			e = d.setElems(&d.cols[i], sv, d.rest[i], col)
		} else {
			e = d.cols[i].set(d, sv, col)
		}
		if e != nil {
			c.Truncate(rows)
			p := &d.cols[i]
			e.Field, e.Column, e.Type = p.field, p.name, p.typ
			return e
		}
	}
	if d.groups != nil {
		if ci, e := decode.CheckNested(d.groups, c); e != nil {
			c.Truncate(rows)
			p := &d.cols[ci]
			e.Field, e.Column, e.Type = p.field, p.name, p.typ
			return e
		}
	}
	for i := 0; absent > 0 && i < len(d.cols); i++ {
		if d.slots[i] == nil {
			c.MarkAbsent(i)
			absent--
		}
	}
	c.Rows++
	return nil
}

// lookup returns the value of column i's field path in o. For an Array
// column whose path meets an array before its end, it returns that array
// and sets d.rest[i] to the rest of the path.
func (d *Decoder) lookup(o *fastjson.Object, i int, path []string) *fastjson.Value {
	v := o.Get(path[0])
	if d.cols[i].elemSet == nil {
		if v == nil {
			return nil
		}
		return v.Get(path[1:]...)
	}
	for j := 1; v != nil && j < len(path); j++ {
		if v.Type() == fastjson.TypeArray {
			d.rest[i] = path[j:]
			return v
		}
		v = v.Get(path[j])
	}
	return v
}

// setElems appends to an Array column the value at path rest of every
// element of arr, an array of objects (null elements, and elements that
// lack the field, give the element type's default).
func (d *Decoder) setElems(p *colPlan, arr *fastjson.Value, rest []string, col chunk.Column) *decode.Error {
	a := col.(*chunk.Array)
	items, _ := arr.Array()
	for k, it := range items {
		var ev *fastjson.Value
		switch it.Type() {
		case fastjson.TypeObject:
			ev = it.Get(rest...)
		case fastjson.TypeNull:
		default:
			e := wrongType(it, "an object")
			e.Err = fmt.Errorf("element %d of the array: %w", k, e.Err)
			return e
		}
		if ev == nil || ev.Type() == fastjson.TypeNull {
			a.Inner.AppendDefault()
			continue
		}
		if e := p.elemSet(d, ev, a.Inner); e != nil {
			e.Err = fmt.Errorf("element %d of the array: %w", k, e.Err)
			return e
		}
	}
	a.EndRow()
	return nil
}

func (d *Decoder) visit(key []byte, v *fastjson.Value) {
	fi := d.next
	if fi >= len(d.names) || d.names[fi] != string(key) {
		var ok bool
		if fi, ok = d.index[string(key)]; !ok {
			return
		}
	}
	d.next = fi + 1
	for _, ci := range d.fields[fi] {
		d.slots[ci] = v
	}
}

func (d *Decoder) checkSchema(c *chunk.Chunk) {
	ok := c.Schema != nil && len(c.Cols) == len(d.cols) && len(c.Schema.Types) == len(d.cols)
	for i := 0; ok && i < len(d.cols); i++ {
		ok = c.Schema.Types[i].Name == d.cols[i].typ
	}
	if !ok {
		panic("decode: chunk schema does not match the decoder's schema")
	}
}
