package native

import (
	"fmt"
	"reflect"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

// The reference the encoder's tests hold it to (TestNativeMatchesDriver,
// TestGolden, FuzzNativeEncoder) is clickhouse-go's own column encoder, an
// implementation of the Native format independent of this package. This
// file hands it a chunk column: each column of each chunk goes whole to
// the driver's column of its type, as a slice in a shape the driver's
// column Append accepts: driverValue. It reads the chunk's column buffers
// (chunk's exported fields and read accessors) and copies no value it can
// point to:
//
//   - Fixed[T]: its Data ([]int64, []float64, []time.Time for Date and
//     Date32, []int64 seconds for DateTime, []uint32 for IPv4, [][16]byte
//     for IPv6, ...);
//   - DateTime64: the ticks ([]int64) for precision 3, which the driver
//     reads as milliseconds whatever the precision, else []time.Time;
//   - BigInt: []big.Int;
//   - Strings: []string sharing the column's arena (Strings.Strings);
//   - Nullable: []*T, nil for NULL;
//   - Array: [][]T;
//   - Tuple: [][]any, each row the []any of its elements' cells;
//   - Map: []*mapRow, each row an ordered map (column.IterableOrderedMap).
//
// The driver's Tuple and Map columns have no whole-column Append: they take
// one row at a time, each element (each key and value) as a Go value its
// element column's AppendRow accepts. Their values are therefore built per
// row from "cells": one value per row of an element column, pointing into
// the element column's own driver slice wherever the driver takes a
// pointer (*int64, *string, *time.Time, *[]T, ...), so that a cell costs no
// allocation.

// driverValue returns the column c as a slice for the driver's Append.
func driverValue(c chunk.Column) any {
	switch c := c.(type) {
	case *chunk.Strings:
		return c.Strings()
	case *chunk.DateTime64:
		if c.Precision == 3 {
			return c.Data
		}
		return c.Times()
	case *chunk.BigInt:
		return c.Bigs()
	case *chunk.Nullable:
		return driverPointers(c.Inner, c.Nulls)
	case *chunk.Array:
		return driverSlices(c.Inner, c.Ends)
	case *chunk.Tuple:
		return tupleRows(c)
	case *chunk.Map:
		return mapRows(c)
	}
	return fixedOf(c).data()
}

// fixedCol is a chunk.Fixed[T] seen through its driver values.
type fixedCol interface {
	data() any
	driverPointers(nulls []uint8) any
	driverSlices(ends []int) any
	driverCells(out []any, stride int)
}

// fixedOf returns c, a *chunk.Fixed[T] of one of the types chunk.NewColumn
// builds, as a fixedCol.
func fixedOf(c chunk.Column) fixedCol {
	switch c := c.(type) {
	case *chunk.Fixed[int8]:
		return fixed[int8]{c}
	case *chunk.Fixed[int16]:
		return fixed[int16]{c}
	case *chunk.Fixed[int32]:
		return fixed[int32]{c}
	case *chunk.Fixed[int64]:
		return fixed[int64]{c}
	case *chunk.Fixed[uint8]:
		return fixed[uint8]{c}
	case *chunk.Fixed[uint16]:
		return fixed[uint16]{c}
	case *chunk.Fixed[uint32]:
		return fixed[uint32]{c}
	case *chunk.Fixed[uint64]:
		return fixed[uint64]{c}
	case *chunk.Fixed[float32]:
		return fixed[float32]{c}
	case *chunk.Fixed[float64]:
		return fixed[float64]{c}
	case *chunk.Fixed[bool]:
		return fixed[bool]{c}
	case *chunk.Fixed[time.Time]:
		return fixed[time.Time]{c}
	case *chunk.Fixed[[16]byte]:
		return fixed[[16]byte]{c}
	}
	panic(fmt.Sprintf("clickhouse: no driver value for a %T column", c))
}

// fixed is a Fixed[T] as a fixedCol (one pointer: no allocation to box).
type fixed[T any] struct{ c *chunk.Fixed[T] }

func (f fixed[T]) data() any { return f.c.Data }

func (f fixed[T]) driverPointers(nulls []uint8) any { return pointerTo(f.c.Data, nulls) }

func (f fixed[T]) driverSlices(ends []int) any { return cut(f.c.Data, ends) }

func (f fixed[T]) driverCells(out []any, stride int) {
	d := f.c.Data
	for i := range d {
		out[i*stride] = &d[i]
	}
}

// pointerTo returns a []*T pointing into s, nil where nulls[i] != 0.
func pointerTo[T any](s []T, nulls []uint8) []*T {
	out := make([]*T, len(s))
	for i := range s {
		if nulls[i] == 0 {
			out[i] = &s[i]
		}
	}
	return out
}

// cut cuts s at ends (the exclusive end of each row).
func cut[T any](s []T, ends []int) [][]T {
	out := make([][]T, len(ends))
	start := 0
	for i, end := range ends {
		out[i] = s[start:end:end]
		start = end
	}
	return out
}

// driverPointers is the driver value of a Nullable column of inner column c and
// null map nulls: a []*T where nulls[i] != 0 gives a nil element.
// chunk.NewColumn builds Nullable columns of scalar columns only.
func driverPointers(c chunk.Column, nulls []uint8) any {
	switch c := c.(type) {
	case *chunk.Strings:
		return pointerTo(c.Strings(), nulls)
	case *chunk.DateTime64:
		return pointerTo(c.Times(), nulls)
	case *chunk.BigInt:
		return pointerTo(c.Bigs(), nulls)
	}
	return fixedOf(c).driverPointers(nulls)
}

// driverSlices is the driver value of an Array column of inner column c and row
// ends ends: a [][]T of c's driver values cut at ends.
func driverSlices(c chunk.Column, ends []int) any {
	switch c := c.(type) {
	case *chunk.Strings:
		return cut(c.Strings(), ends)
	case *chunk.DateTime64:
		return cut(c.Times(), ends)
	case *chunk.BigInt:
		return cut(c.Bigs(), ends)
	case *chunk.Nullable, *chunk.Array:
		return sliceReflect(driverValue(c), ends)
	case *chunk.Tuple:
		return cut(tupleRows(c), ends)
	case *chunk.Map:
		return cut(mapRows(c), ends)
	}
	return fixedOf(c).driverSlices(ends)
}

// sliceReflect cuts a slice of any element type at ends. Used only for nested
// arrays and arrays of nullables, which are rare.
func sliceReflect(v any, ends []int) any {
	rv := reflect.ValueOf(v)
	out := reflect.MakeSlice(reflect.SliceOf(rv.Type()), len(ends), len(ends))
	start := 0
	for i, end := range ends {
		out.Index(i).Set(rv.Slice3(start, end, end))
		start = end
	}
	return out.Interface()
}

// driverCells sets out[i*stride] to row i's value of c, as the driver's
// AppendRow of the column's type takes it.
func driverCells(c chunk.Column, out []any, stride int) {
	switch c := c.(type) {
	case *chunk.Strings:
		s := c.Strings()
		for i := range s {
			out[i*stride] = &s[i]
		}
	case *chunk.DateTime64:
		// The driver's AppendRow reads an *int64 as milliseconds
		// whatever the precision, so the cells are times.
		t := c.Times()
		for i := range t {
			out[i*stride] = &t[i]
		}
	case *chunk.BigInt:
		b := c.Bigs()
		for i := range b {
			out[i*stride] = &b[i]
		}
	case *chunk.Nullable:
		// The []*T of its driver value, nil for NULL.
		p := reflect.ValueOf(driverValue(c))
		for i := 0; i < p.Len(); i++ {
			out[i*stride] = p.Index(i).Interface()
		}
	case *chunk.Array:
		// A *[]T per row.
		s := reflect.ValueOf(driverValue(c))
		for i := 0; i < s.Len(); i++ {
			out[i*stride] = s.Index(i).Addr().Interface()
		}
	case *chunk.Tuple:
		// A *[]any per row.
		rows := tupleRows(c)
		for i := range rows {
			out[i*stride] = &rows[i]
		}
	case *chunk.Map:
		for i, r := range mapRows(c) {
			out[i*stride] = r
		}
	default:
		fixedOf(c).driverCells(out, stride)
	}
}

// cellsOf sets out[i*stride] for every row i of col, a column of type t.
// LowCardinality's AppendRow keys its dictionary by the value it is given,
// so its cells are values, not pointers.
func cellsOf(t *chunk.Type, col chunk.Column, out []any, stride int) {
	if t.Kind != chunk.KindLowCardinality {
		driverCells(col, out, stride)
		return
	}
	if n := col.Len(); n > 0 {
		driverCells(col, out, stride)
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

// tupleRows is the driver value of a Tuple column: a [][]any, each row
// the []any of its elements' cells, which the driver's Tuple column takes
// for named and unnamed tuples alike; all backed by one array, built on
// each call.
func tupleRows(c *chunk.Tuple) [][]any {
	k := len(c.Elems)
	rows := c.Len()
	types := c.ElemTypes()
	flat := make([]any, rows*k)
	for j, e := range c.Elems {
		if rows > 0 {
			cellsOf(types[j], e, flat[j:], k)
		}
	}
	out := make([][]any, rows)
	for i := range out {
		out[i] = flat[i*k : (i+1)*k : (i+1)*k]
	}
	return out
}

// mapRow is one row of a Map column as the driver reads it: an ordered map
// (clickhouse-go's column.IterableOrderedMap) that iterates the row's
// entries in order. It is read-only and its own iterator.
type mapRow struct {
	keys, values []any
	start, end   int
	pos          int
}

var _ column.IterableOrderedMap = (*mapRow)(nil)

// Put implements column.IterableOrderedMap; a mapRow is read-only and
// panics.
func (r *mapRow) Put(key, value any) { panic("clickhouse: mapRow is read-only") }

// Iterator implements column.IterableOrderedMap: the row itself, rewound.
func (r *mapRow) Iterator() column.MapIterator {
	r.pos = r.start - 1
	return r
}

// Next implements column.MapIterator.
func (r *mapRow) Next() bool {
	r.pos++
	return r.pos < r.end
}

// Key implements column.MapIterator.
func (r *mapRow) Key() any { return r.keys[r.pos] }

// Value implements column.MapIterator.
func (r *mapRow) Value() any { return r.values[r.pos] }

// Len is the number of entries of the row.
func (r *mapRow) Len() int { return r.end - r.start }

// mapRows is the driver value of a Map column: a []*mapRow, built on each
// call.
func mapRows(c *chunk.Map) []*mapRow {
	n := c.Keys.Len()
	if c.Values.Len() < n {
		n = c.Values.Len()
	}
	cs := make([]any, 2*n)
	keys, values := cs[:n:n], cs[n:]
	if n > 0 {
		cellsOf(c.KeyType(), c.Keys, keys, 1)
		cellsOf(c.ValueType(), c.Values, values, 1)
	}
	rows := make([]mapRow, len(c.Ends))
	out := make([]*mapRow, len(c.Ends))
	start := 0
	for i, end := range c.Ends {
		rows[i] = mapRow{keys: keys, values: values, start: start, end: end}
		out[i] = &rows[i]
		start = end
	}
	return out
}
