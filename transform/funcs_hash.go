package transform

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/expr-lang/expr/ast"
)

// Hashing.

func fnXXHash64(c *compiler, call ast.Node, args []ast.Node) (*node, *exprError) {
	if err := arity(call, "xxhash64", args, 1, 1); err != nil {
		return nil, err
	}
	v, err := c.want(args[0], argOf("xxhash64", 0), kString, kInt, kUInt, kFloat, kBool)
	if err != nil {
		return nil, err
	}
	out := &node{t: vtype{k: kUInt}, pos: startPos(call)}
	switch v.t.k {
	case kString:
		f := v.s
		out.u = func(r *rt) uint64 { return xxhash.Sum64String(f(r)) }
	case kInt:
		f := v.i
		out.u = func(r *rt) uint64 { return hash8(uint64(f(r))) }
	case kUInt:
		f := v.u
		out.u = func(r *rt) uint64 { return hash8(f(r)) }
	case kFloat:
		f := v.f
		out.u = func(r *rt) uint64 { return hash8(math.Float64bits(f(r))) }
	case kBool:
		f := v.b
		out.u = func(r *rt) uint64 {
			var b [1]byte
			if f(r) {
				b[0] = 1
			}
			return xxhash.Sum64(b[:])
		}
	}
	return out, nil
}

// hash8 is the xxHash64 of the 8 little-endian bytes of v.
func hash8(v uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return xxhash.Sum64(b[:])
}
