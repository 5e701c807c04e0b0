package chunk

import (
	"fmt"
	"reflect"
	"slices"
)

// Column defaults.
//
// A table column's DEFAULT expression is evaluated once, when the insert is
// planned (by the sink, which converts the value the server computed), and
// set on the column's Type with SetDefaultColumn as a one-row column (the
// template). Every column NewColumn builds for that type copies the
// template in AppendDefault: Fixed, Strings and BigInt columns keep the
// value itself, Nullable, Array, Tuple and Map columns the template, whose
// row they append with appendRows. Nothing is allocated per row beyond the
// column's own growth, and the default survives Truncate and Chunk.Reset:
// it belongs to the column, not to its rows.

// SetDefaultColumn makes the only row of col, a column NewColumn built for
// t, the default of the table column of type t: every column NewColumn
// builds for t afterwards appends it in AppendDefault. col must not change
// afterwards.
//
// SetDefaultColumn is part of setting the type up: call it before columns
// are built for t and never while other goroutines use t.
func (t *Type) SetDefaultColumn(col Column) error {
	if col == nil || col.Len() != 1 {
		n := 0
		if col != nil {
			n = col.Len()
		}
		return fmt.Errorf("default value for %s: %d rows", t.Name, n)
	}
	want, err := newColumn(t)
	if err != nil {
		return err
	}
	if reflect.TypeOf(col) != reflect.TypeOf(want) {
		return fmt.Errorf("default value for %s: a %T, not a column of the type", t.Name, col)
	}
	t.def = col
	return nil
}

// HasDefault reports whether SetDefaultColumn gave t a default.
func (t *Type) HasDefault() bool { return t != nil && t.def != nil }

// Default returns the default SetDefaultColumn set as a one-row column, or
// nil.
// The column is read-only.
func (t *Type) Default() Column { return t.def }

// defaulted is implemented by every column: setDefault makes the only row
// of src, a column of the same type, the column's default.
type defaulted interface {
	setDefault(src Column)
}

// rowCopier is implemented by every column: appendRows appends rows
// [from, to) of src, a column of the same type.
type rowCopier interface {
	appendRows(src Column, from, to int)
}

// AppendFrom implements Column: appendRows of the one row.
func (c *Fixed[T]) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *Strings) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *BigInt) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *Nullable) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *Array) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *Tuple) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// AppendFrom implements Column: appendRows of the one row.
func (c *Map) AppendFrom(src Column, i int) { c.appendRows(src, i, i+1) }

// fixedPart gives the Fixed[T] of a Fixed[T] or of a DateTime64.
type fixedPart[T any] interface {
	fixed() *Fixed[T]
}

func (c *Fixed[T]) fixed() *Fixed[T] { return c }

func (c *Fixed[T]) setDefault(src Column) { c.def = src.(fixedPart[T]).fixed().Data[0] }

func (c *Fixed[T]) appendRows(src Column, from, to int) {
	c.Data = append(c.Data, src.(fixedPart[T]).fixed().Data[from:to]...)
}

func (c *Strings) setDefault(src Column) {
	c.def = []byte(src.(*Strings).Value(0))
}

func (c *Strings) appendRows(src Column, from, to int) {
	s := src.(*Strings)
	if from >= to {
		return
	}
	start := 0
	if from > 0 {
		start = s.Ends[from-1]
	}
	shift := len(c.Buf) - start
	c.Buf = append(c.Buf, s.Buf[start:s.Ends[to-1]]...)
	for _, e := range s.Ends[from:to] {
		c.Ends = append(c.Ends, e+shift)
	}
}

func (c *BigInt) setDefault(src Column) {
	c.def = slices.Clone(src.(*BigInt).Data[:c.Words])
}

func (c *BigInt) appendRows(src Column, from, to int) {
	c.Data = append(c.Data, src.(*BigInt).Data[from*c.Words:to*c.Words]...)
}

func (c *Nullable) setDefault(src Column) { c.tmpl = src.(*Nullable) }

func (c *Nullable) appendRows(src Column, from, to int) {
	s := src.(*Nullable)
	c.Inner.(rowCopier).appendRows(s.Inner, from, to)
	c.Nulls = append(c.Nulls, s.Nulls[from:to]...)
}

func (c *Array) setDefault(src Column) { c.tmpl = src.(*Array) }

func (c *Array) appendRows(src Column, from, to int) {
	s := src.(*Array)
	if from >= to {
		return
	}
	start := 0
	if from > 0 {
		start = s.Ends[from-1]
	}
	shift := c.Inner.Len() - start
	c.Inner.(rowCopier).appendRows(s.Inner, start, s.Ends[to-1])
	for _, e := range s.Ends[from:to] {
		c.Ends = append(c.Ends, e+shift)
	}
}

func (c *Tuple) setDefault(src Column) { c.tmpl = src.(*Tuple) }

func (c *Tuple) appendRows(src Column, from, to int) {
	s := src.(*Tuple)
	for i, e := range c.Elems {
		e.(rowCopier).appendRows(s.Elems[i], from, to)
	}
	c.rows += to - from
}

func (c *Map) setDefault(src Column) { c.tmpl = src.(*Map) }

func (c *Map) appendRows(src Column, from, to int) {
	s := src.(*Map)
	if from >= to {
		return
	}
	start := 0
	if from > 0 {
		start = s.Ends[from-1]
	}
	shift := c.Keys.Len() - start
	c.Keys.(rowCopier).appendRows(s.Keys, start, s.Ends[to-1])
	c.Values.(rowCopier).appendRows(s.Values, start, s.Ends[to-1])
	for _, e := range s.Ends[from:to] {
		c.Ends = append(c.Ends, e+shift)
	}
}

// Compile-time checks: every column takes a default and copies rows.
var (
	_ defaulted = (*Fixed[int64])(nil)
	_ defaulted = (*DateTime64)(nil)
	_ defaulted = (*BigInt)(nil)
	_ defaulted = (*Strings)(nil)
	_ defaulted = (*Nullable)(nil)
	_ defaulted = (*Array)(nil)
	_ defaulted = (*Tuple)(nil)
	_ defaulted = (*Map)(nil)
	_ rowCopier = (*Fixed[int64])(nil)
	_ rowCopier = (*DateTime64)(nil)
	_ rowCopier = (*BigInt)(nil)
	_ rowCopier = (*Strings)(nil)
	_ rowCopier = (*Nullable)(nil)
	_ rowCopier = (*Array)(nil)
	_ rowCopier = (*Tuple)(nil)
	_ rowCopier = (*Map)(nil)
)
