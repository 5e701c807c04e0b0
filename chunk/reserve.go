package chunk

import "slices"

// A chunk's shape is the lengths of its buffers: its record marks, then
// column by column, depth first: a Fixed's or a BigInt's values; a
// Strings' ends, then its bytes; a Nullable's null map, then its inner
// column; an Array's or a Map's ends, then its inner columns; a Tuple's
// element columns. Shape records
// the shape of a full chunk, and Reserve gives an empty chunk of the same
// schema that capacity at once: a chunk filled from empty otherwise grows
// each buffer by doubling, a dozen allocations and copies per column,
// which is most of what the first chunks of a run cost to fill.

// Shape appends c's shape to dst.
func (c *Chunk) Shape(dst []int) []int {
	dst = append(dst, len(c.Marks))
	for _, col := range c.Cols {
		dst = shapeOf(col, dst)
	}
	return dst
}

// Reserve gives c's empty buffers the capacity of shape and an eighth
// more (the next chunk may hold a little more than the last), a shape
// that Shape took of a chunk of c's schema. It changes no value, and
// stops at the end of a shape of another schema (too short).
func (c *Chunk) Reserve(shape []int) {
	if len(shape) == 0 {
		return
	}
	c.Marks = grow(c.Marks, shape[0])
	shape = shape[1:]
	for _, col := range c.Cols {
		var ok bool
		if shape, ok = reserve(col, shape); !ok {
			return
		}
	}
}

func shapeOf(col Column, dst []int) []int {
	switch c := col.(type) {
	case *Strings:
		return append(dst, len(c.Ends), len(c.Buf))
	case *Nullable:
		return shapeOf(c.Inner, append(dst, len(c.Nulls)))
	case *Array:
		return shapeOf(c.Inner, append(dst, len(c.Ends)))
	case *Map:
		return shapeOf(c.Values, shapeOf(c.Keys, append(dst, len(c.Ends))))
	case *Tuple:
		for _, e := range c.Elems {
			dst = shapeOf(e, dst)
		}
		return dst
	case *BigInt:
		return append(dst, len(c.Data))
	case fixedShape:
		return append(dst, c.dataLen())
	}
	return dst
}

// reserve grows col's capacity to the head of shape and returns the rest
// of it; false when shape is too short.
func reserve(col Column, shape []int) ([]int, bool) {
	switch c := col.(type) {
	case *Strings:
		if len(shape) < 2 {
			return nil, false
		}
		c.Ends = grow(c.Ends, shape[0])
		c.Buf = grow(c.Buf, shape[1])
		return shape[2:], true
	case *Nullable:
		if len(shape) < 1 {
			return nil, false
		}
		c.Nulls = grow(c.Nulls, shape[0])
		return reserve(c.Inner, shape[1:])
	case *Array:
		if len(shape) < 1 {
			return nil, false
		}
		c.Ends = grow(c.Ends, shape[0])
		return reserve(c.Inner, shape[1:])
	case *Map:
		if len(shape) < 1 {
			return nil, false
		}
		c.Ends = grow(c.Ends, shape[0])
		shape, ok := reserve(c.Keys, shape[1:])
		if !ok {
			return nil, false
		}
		return reserve(c.Values, shape)
	case *Tuple:
		for _, e := range c.Elems {
			var ok bool
			if shape, ok = reserve(e, shape); !ok {
				return nil, false
			}
		}
		return shape, true
	case *BigInt:
		if len(shape) < 1 {
			return nil, false
		}
		c.Data = grow(c.Data, shape[0])
		return shape[1:], true
	case fixedShape:
		if len(shape) < 1 {
			return nil, false
		}
		c.grow(shape[0])
		return shape[1:], true
	}
	return shape, true
}

// fixedShape is a Fixed[T] of any T.
type fixedShape interface {
	dataLen() int
	grow(n int)
}

func (c *Fixed[T]) dataLen() int { return len(c.Data) }

// grow gives Data room for n values in all.
func (c *Fixed[T]) grow(n int) { c.Data = grow(c.Data, n) }

// grow returns s with room for n elements and an eighth more in all.
func grow[S ~[]E, E any](s S, n int) S {
	n += n / 8
	if n <= len(s) {
		return s
	}
	return slices.Grow(s, n-len(s))
}
