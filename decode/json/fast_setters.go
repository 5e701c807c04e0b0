package json

import (
	"math"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// fastSetter appends a non-null scalar to col, as the column's setter
// would, or reports false (having appended nothing to col's row count) when
// it would not accept it.
type fastSetter func(d *Decoder, t token, text []byte, col chunk.Column) bool

// fastCol is the fast path's plan of one column.
type fastCol struct {
	// set is the fast setter of a scalar, nil when the type has none (the
	// column's setter then takes the value parsed alone).
	set fastSetter
	// text marks a String column (or Nullable or LowCardinality of one):
	// an object or array goes in as its JSON text, compacted, which set
	// takes as a number's text.
	text bool
	// array marks an Array column, whose arrays are streamed: elem is the
	// element type's fast setter (or nil) and elemSet its setter, as
	// setArray has them.
	array   bool
	elem    fastSetter
	elemSet setter
	// mapKey marks a Map column, whose objects are streamed: mapKey is the
	// key setter, elem and elemSet are the value type's.
	mapKey mapKeySetter
}

// compileFastCol returns the fast path's plan of a column of type t.
func compileFastCol(t *chunk.Type, rg chunk.ServerRanges) fastCol {
	if b := t.Base(); b.Kind == chunk.KindArray {
		elemSet, err := compile(b.Elem, rg)
		if err != nil {
			return fastCol{} // cannot happen: the column's type compiled
		}
		return fastCol{array: true, elem: compileFast(b.Elem, rg), elemSet: elemSet}
	}
	if b := t.Base(); b.Kind == chunk.KindMap {
		key, err := compileMapKey(b.Key, rg)
		if err != nil {
			return fastCol{} // cannot happen: the column's type compiled
		}
		val, err := compile(b.Elem, rg)
		if err != nil {
			return fastCol{}
		}
		return fastCol{mapKey: key, elem: compileFast(b.Elem, rg), elemSet: val}
	}
	b := t.Base()
	if b.Kind == chunk.KindNullable {
		b = b.Elem.Base()
	}
	return fastCol{set: compileFast(t, rg), text: b.Kind == chunk.KindString}
}

// compileFast returns the fast setter of scalar type t, or nil.
func compileFast(t *chunk.Type, rg chunk.ServerRanges) fastSetter {
	t = t.Base()
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32, chunk.KindUInt64:
		ints, _ := chunk.IntsOf(t)
		return fastInt(ints, t.Kind == chunk.KindInt8 || t.Kind == chunk.KindUInt8)
	case chunk.KindFloat32:
		floats, _ := chunk.FloatsOf(t)
		return fastFloat(floats, 32)
	case chunk.KindFloat64:
		return fastFloat64
	case chunk.KindString:
		return fastString
	case chunk.KindDateTime:
		ts, _ := chunk.TimesOf(t, rg)
		return fastDateTime(ts.(*chunk.DateTimes))
	case chunk.KindNullable:
		inner := compileFast(t.Elem, rg)
		if inner == nil {
			return nil
		}
		return func(d *Decoder, t token, text []byte, col chunk.Column) bool {
			n := col.(*chunk.Nullable)
			if !inner(d, t, text, n.Inner) {
				return false
			}
			n.MarkValue()
			return true
		}
	}
	return nil
}

// fastNumber is numberOf for a scalar: a number, or a string holding one.
func fastNumber(t token, text []byte) (decode.Number, bool) {
	if t != tokNumber && t != tokString {
		return decode.Number{}, false
	}
	return decode.ParseNumber(text)
}

// plainUint parses the commonest integer text, 1 to 19 digits without a
// sign or a leading zero, which decode.ParseNumber accepts as the same integer.
func plainUint(text []byte) (uint64, bool) {
	if len(text) == 0 || len(text) > 19 || text[0] == '0' && len(text) > 1 {
		return 0, false
	}
	var x uint64
	for _, c := range text {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + uint64(c)
	}
	return x, true
}

// fastInt stores a number, or a string holding one, in an integer column
// within its type's range; with bools, true and false as 1 and 0. It
// returns false for anything else, and the general path says why.
func fastInt(a chunk.Ints, bools bool) fastSetter {
	return func(d *Decoder, t token, text []byte, col chunk.Column) bool {
		switch {
		case bools && t == tokTrue:
			return a.AppendInt(col, 1) == nil
		case bools && t == tokFalse:
			return a.AppendInt(col, 0) == nil
		case t == tokNumber:
			if n, ok := d.numOf(text); ok && n.frac == 0 {
				if !n.neg {
					return a.AppendUint(col, n.m) == nil
				}
				// As n.Signed(math.MinInt64, math.MaxInt64) below.
				return n.m <= 1<<63 && a.AppendInt(col, int64(-n.m)) == nil
			}
			if u, ok := plainUint(text); ok {
				return a.AppendUint(col, u) == nil
			}
		case t == tokString:
			if u, ok := plainUint(text); ok {
				return a.AppendUint(col, u) == nil
			}
		}
		n, ok := fastNumber(t, text)
		if !ok {
			return false
		}
		if n.Neg {
			x, r := n.Signed(math.MinInt64, math.MaxInt64)
			return r == decode.IntOK && a.AppendInt(col, x) == nil
		}
		x, r := n.Unsigned(math.MaxUint64)
		return r == decode.IntOK && a.AppendUint(col, x) == nil
	}
}

// fastFloat stores a number, or a string holding one, parsed at the
// column's precision (bits 32 or 64).
func fastFloat(a chunk.Floats, bits int) fastSetter {
	return func(d *Decoder, t token, text []byte, col chunk.Column) bool {
		n, ok := fastNumber(t, text)
		if !ok {
			return false
		}
		f, ok := n.Float(bits)
		return ok && a.AppendFloat(col, f) == nil
	}
}

// fastFloat64 is fastFloat into a Float64 column, which takes every
// float64, without an interface call (chunk.AppendFloat64).
func fastFloat64(d *Decoder, t token, text []byte, col chunk.Column) bool {
	if t == tokNumber {
		if n, ok := d.numOf(text); ok && n.digits <= 15 {
			// decode.Number's exact case: at most 15 digits over at
			// most 10^15.
			f, _ := decode.ExactDecimal(n.m, -n.frac, n.neg)
			chunk.AppendFloat64(col, f)
			return true
		}
	}
	n, ok := fastNumber(t, text)
	if !ok {
		return false
	}
	f, ok := n.Float(64)
	if ok {
		chunk.AppendFloat64(col, f)
	}
	return ok
}

// fastString stores a string's content, or any other scalar's JSON text.
func fastString(d *Decoder, t token, text []byte, col chunk.Column) bool {
	switch t {
	case tokTrue:
		chunk.AppendString(col, "true")
	case tokFalse:
		chunk.AppendString(col, "false")
	default:
		chunk.AppendString(col, text)
	}
	return true
}

// dateFirst reports whether text begins with four digits and a dash, as a
// date does and no JSON number can (after four integer digits a number
// has only '.', 'e', 'E' or its end).
func dateFirst(text []byte) bool {
	return len(text) >= 5 && text[4] == '-' &&
		text[0]-'0' <= 9 && text[1]-'0' <= 9 && text[2]-'0' <= 9 && text[3]-'0' <= 9
}

// fastDateTime stores a date-time string (without an offset, local time
// in the column's zone) or epoch number in a DateTime column within the
// range the server reads back (ts); the general path takes, or refuses,
// anything else.
func fastDateTime(ts *chunk.DateTimes) fastSetter {
	z := ts.Zone()
	return func(d *Decoder, t token, text []byte, col chunk.Column) bool {
		var sec int64
		var ok bool
		switch t {
		case tokString:
			if dateFirst(text) {
				// "2026-09-19...": four digits and a dash cannot begin a
				// number; ParseNumber is not asked.
				sec, ok = d.timeText(text, z)
			} else if n, isNum := decode.ParseNumber(text); isNum {
				sec, ok = decode.EpochSeconds(&n)
			} else {
				sec, ok = d.timeText(text, z)
			}
		case tokNumber:
			if n, scanned := d.numOf(text); scanned && n.frac == 0 && !n.neg {
				// decode.EpochSeconds of an integer: the unit by its
				// magnitude, each a division by a constant.
				switch decode.EpochUnit(float64(n.m)) {
				case 1:
					sec = int64(n.m)
				case 1e3:
					sec = int64(n.m / 1e3)
				case 1e6:
					sec = int64(n.m / 1e6)
				default:
					sec = int64(n.m / 1e9)
				}
				ok = true
				break
			}
			if u, plain := plainUint(text); plain {
				// decode.EpochSeconds of an integer: the unit by its magnitude.
				sec, ok = int64(u/uint64(decode.EpochUnit(float64(u)))), true
				break
			}
			n, isNum := decode.ParseNumber(text)
			if !isNum {
				return false
			}
			sec, ok = decode.EpochSeconds(&n)
		}
		return ok && ts.AppendSeconds(col, sec) == nil
	}
}
