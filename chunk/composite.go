package chunk

import (
	"reflect"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
)

// The driver's Tuple and Map columns have no whole-column Append: they take
// one row at a time, each element (each key and value) as a Go value its
// element column's AppendRow accepts. Their Driver values are therefore
// built per row from "cells": one value per row of an element column,
// pointing into the element column's own driver slice wherever the driver
// takes a pointer (*int64, *string, *time.Time, *[]T, ...), so that a cell
// costs no allocation.

// celler is implemented by every column that can be a tuple element or a
// map key or value.
type celler interface {
	// cells sets out[i*stride] to row i's value, as the driver's AppendRow
	// of the column's type takes it.
	cells(out []any, stride int)
}

func (c *Fixed[T]) cells(out []any, stride int) {
	for i := range c.Data {
		out[i*stride] = &c.Data[i]
	}
}

// cells of a DateTime64: the driver's AppendRow reads an *int64 as
// milliseconds whatever the precision, so the cells are times.
func (c *DateTime64) cells(out []any, stride int) {
	t := c.times()
	for i := range t {
		out[i*stride] = &t[i]
	}
}

func (c *BigInt) cells(out []any, stride int) {
	b := c.bigs()
	for i := range b {
		out[i*stride] = &b[i]
	}
}

func (c *Strings) cells(out []any, stride int) {
	s := c.strings()
	for i := range s {
		out[i*stride] = &s[i]
	}
}

// cells of a Nullable: the []*T of Driver, nil for NULL.
func (c *Nullable) cells(out []any, stride int) {
	p := reflect.ValueOf(c.Driver())
	for i := 0; i < p.Len(); i++ {
		out[i*stride] = p.Index(i).Interface()
	}
}

// cells of an Array: a *[]T per row.
func (c *Array) cells(out []any, stride int) {
	s := reflect.ValueOf(c.Driver())
	for i := 0; i < s.Len(); i++ {
		out[i*stride] = s.Index(i).Addr().Interface()
	}
}

// cellsOf sets out[i*stride] for every row i of col, a column of type t.
// LowCardinality's AppendRow keys its dictionary by the value it is given,
// so its cells are values, not pointers.
func cellsOf(t *Type, col Column, out []any, stride int) {
	if t.Kind != KindLowCardinality {
		col.(celler).cells(out, stride)
		return
	}
	if n := col.Len(); n > 0 {
		col.(celler).cells(out, stride)
		for i := 0; i < n; i++ {
			v := reflect.ValueOf(out[i*stride])
			if v.Kind() == reflect.Pointer && v.IsNil() {
				out[i*stride] = nil
				continue
			}
			out[i*stride] = v.Elem().Interface()
		}
	}
}

// Tuple is a Tuple(T1, ..., Tn) column: one column per element. A decoder
// appends one value to every element column, then calls EndRow.
type Tuple struct {
	Elems []Column
	types []*Type
	rows  int
	tmpl  *Tuple // the one-row default, nil for each element's default
}

// EndRow counts the row whose elements were just appended.
func (c *Tuple) EndRow() { c.rows++ }

// Len implements Column.
func (c *Tuple) Len() int { return c.rows }

// Size implements Column.
func (c *Tuple) Size() int {
	n := 0
	for _, e := range c.Elems {
		n += e.Size()
	}
	return n
}

// AppendDefault implements Column: each element's AppendDefault, unless
// the table's DEFAULT gives the tuple.
func (c *Tuple) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	for _, e := range c.Elems {
		e.AppendDefault()
	}
	c.rows++
}

// Truncate implements Column; it also drops the elements of a partly
// appended row.
func (c *Tuple) Truncate(n int) {
	for _, e := range c.Elems {
		e.Truncate(n)
	}
	c.rows = n
}

// rowSlices returns each row as a []any of its elements' cells, all backed
// by one array.
func (c *Tuple) rowSlices() [][]any {
	k := len(c.Elems)
	flat := make([]any, c.rows*k)
	for j, e := range c.Elems {
		if c.rows > 0 {
			cellsOf(c.types[j], e, flat[j:], k)
		}
	}
	out := make([][]any, c.rows)
	for i := range out {
		out[i] = flat[i*k : (i+1)*k : (i+1)*k]
	}
	return out
}

// Driver implements Column: a [][]any, each row the []any of its
// elements, which the driver's Tuple column takes for named and unnamed
// tuples alike. Built on each call.
func (c *Tuple) Driver() any { return c.rowSlices() }

func (c *Tuple) slices(ends []int) any {
	rows := c.rowSlices()
	out := make([][][]any, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = rows[start:end:end]
		start = end
	}
	return out
}

// cells of a Tuple: a *[]any per row.
func (c *Tuple) cells(out []any, stride int) {
	rows := c.rowSlices()
	for i := range rows {
		out[i*stride] = &rows[i]
	}
}

// Map is a Map(K, V) column: key and value columns plus the end of each
// row, as the server stores it. Entries keep their order (and duplicate
// keys, which the server keeps too).
type Map struct {
	Keys, Values Column
	Ends         []int
	keyType      *Type
	valueType    *Type
	tmpl         *Map // the one-row default, nil for an empty map
}

// EndRow closes the current row after its keys and values were appended.
func (c *Map) EndRow() { c.Ends = append(c.Ends, c.Keys.Len()) }

// Len implements Column.
func (c *Map) Len() int { return len(c.Ends) }

// Size implements Column.
func (c *Map) Size() int { return c.Keys.Size() + c.Values.Size() + 8*len(c.Ends) }

// AppendDefault implements Column: an empty map, unless the table's
// DEFAULT gives entries.
func (c *Map) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	c.EndRow()
}

// Truncate implements Column; it also drops the entries of a partly
// appended row.
func (c *Map) Truncate(n int) {
	end := 0
	if n > 0 {
		end = c.Ends[n-1]
	}
	c.Keys.Truncate(end)
	c.Values.Truncate(end)
	c.Ends = c.Ends[:n]
}

// MapRow is one row of a Map column as the driver reads it: an ordered map
// (clickhouse-go's column.IterableOrderedMap) that iterates the row's
// entries in order. It is read-only and its own iterator.
type MapRow struct {
	keys, values []any
	start, end   int
	pos          int
}

var _ column.IterableOrderedMap = (*MapRow)(nil)

// Put implements column.IterableOrderedMap; a MapRow is read-only and
// panics.
func (r *MapRow) Put(key, value any) { panic("chunk: MapRow is read-only") }

// Iterator implements column.IterableOrderedMap: the row itself, rewound.
func (r *MapRow) Iterator() column.MapIterator {
	r.pos = r.start - 1
	return r
}

// Next implements column.MapIterator.
func (r *MapRow) Next() bool {
	r.pos++
	return r.pos < r.end
}

// Key implements column.MapIterator.
func (r *MapRow) Key() any { return r.keys[r.pos] }

// Value implements column.MapIterator.
func (r *MapRow) Value() any { return r.values[r.pos] }

// Len is the number of entries of the row.
func (r *MapRow) Len() int { return r.end - r.start }

func (c *Map) rows() []*MapRow {
	n := c.Keys.Len()
	if c.Values.Len() < n {
		n = c.Values.Len()
	}
	cells := make([]any, 2*n)
	keys, values := cells[:n:n], cells[n:]
	if n > 0 {
		cellsOf(c.keyType, c.Keys, keys, 1)
		cellsOf(c.valueType, c.Values, values, 1)
	}
	rows := make([]MapRow, len(c.Ends))
	out := make([]*MapRow, len(c.Ends))
	start := 0
	for i, end := range c.Ends {
		rows[i] = MapRow{keys: keys, values: values, start: start, end: end}
		out[i] = &rows[i]
		start = end
	}
	return out
}

// Driver implements Column: a []*MapRow. Built on each call.
func (c *Map) Driver() any { return c.rows() }

func (c *Map) slices(ends []int) any {
	rows := c.rows()
	out := make([][]*MapRow, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = rows[start:end:end]
		start = end
	}
	return out
}

func (c *Map) cells(out []any, stride int) {
	for i, r := range c.rows() {
		out[i*stride] = r
	}
}

// newComposite returns an empty Tuple or Map column for t.
func newComposite(t *Type) (Column, error) {
	switch t.Kind {
	case KindTuple:
		c := &Tuple{types: t.Elems}
		for _, et := range t.Elems {
			e, err := NewColumn(et)
			if err != nil {
				return nil, err
			}
			c.Elems = append(c.Elems, e)
		}
		return c, nil
	case KindMap:
		k, err := NewColumn(t.Key)
		if err != nil {
			return nil, err
		}
		v, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		return &Map{Keys: k, Values: v, keyType: t.Key, valueType: t.Elem}, nil
	}
	return nil, nil
}

// Compile-time checks: every column can be an element.
var (
	_ celler = (*Fixed[int64])(nil)
	_ celler = (*DateTime64)(nil)
	_ celler = (*BigInt)(nil)
	_ celler = (*Strings)(nil)
	_ celler = (*Nullable)(nil)
	_ celler = (*Array)(nil)
	_ celler = (*Tuple)(nil)
	_ celler = (*Map)(nil)
	_ slicer = (*Tuple)(nil)
	_ slicer = (*Map)(nil)
)
