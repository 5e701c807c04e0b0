package transform

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/etl-project/etl/chunk"
)

// canon spells a column type for layout comparisons: LowCardinality is
// dropped (it does not change a chunk column), so are time zones (they do
// not change the stored value), and Enum values are listed in order.
func canon(t *chunk.Type) string {
	var b strings.Builder
	writeCanon(&b, t)
	return b.String()
}

func writeCanon(b *strings.Builder, t *chunk.Type) {
	switch t.Kind {
	case chunk.KindLowCardinality:
		writeCanon(b, t.Elem)
	case chunk.KindNullable, chunk.KindArray:
		if t.Kind == chunk.KindNullable {
			b.WriteString("Nullable(")
		} else {
			b.WriteString("Array(")
		}
		writeCanon(b, t.Elem)
		b.WriteByte(')')
	case chunk.KindMap:
		b.WriteString("Map(")
		writeCanon(b, t.Key)
		b.WriteByte(',')
		writeCanon(b, t.Elem)
		b.WriteByte(')')
	case chunk.KindTuple:
		b.WriteString("Tuple(")
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if t.ElemNames != nil {
				b.WriteString(t.ElemNames[i])
				b.WriteByte(' ')
			}
			writeCanon(b, e)
		}
		b.WriteByte(')')
	case chunk.KindDateTime:
		b.WriteString("DateTime")
	case chunk.KindDateTime64:
		fmt.Fprintf(b, "DateTime64(%d)", t.Precision)
	case chunk.KindDecimal:
		fmt.Fprintf(b, "Decimal(%d,%d)", t.Precision, t.Scale)
	case chunk.KindFixedString:
		fmt.Fprintf(b, "FixedString(%d)", t.Len)
	case chunk.KindEnum8, chunk.KindEnum16:
		if t.Kind == chunk.KindEnum8 {
			b.WriteString("Enum8(")
		} else {
			b.WriteString("Enum16(")
		}
		names := make([]string, 0, len(t.Enum))
		for n := range t.Enum {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%q=%d", n, t.Enum[n])
		}
		b.WriteByte(')')
	default:
		name := t.Name
		if i := strings.IndexByte(name, '('); i >= 0 {
			name = name[:i]
		}
		b.WriteString(name)
	}
}

func sameLayout(a, b *chunk.Type) bool { return canon(a) == canon(b) }

// stagingType is t as a staging column: without LowCardinality.
func stagingType(t *chunk.Type) *chunk.Type {
	s := stripLC(t)
	if s == t.Name {
		return t
	}
	st, err := chunk.ParseType(s)
	if err != nil {
		return t
	}
	return st
}

// stripLC spells t without LowCardinality wrappers.
func stripLC(t *chunk.Type) string {
	switch t.Kind {
	case chunk.KindLowCardinality:
		return stripLC(t.Elem)
	case chunk.KindNullable:
		return "Nullable(" + stripLC(t.Elem) + ")"
	case chunk.KindArray:
		if strings.HasPrefix(t.Name, "Nested") {
			return t.Name
		}
		return "Array(" + stripLC(t.Elem) + ")"
	case chunk.KindMap:
		return "Map(" + stripLC(t.Key) + ", " + stripLC(t.Elem) + ")"
	}
	return t.Name
}

// copyAppender returns the appender copying staging values (bound at
// r.cols[s], indexed by r.at[w]) into an output column of the same type t:
// written out for the fixed-width and string columns, the column's own
// AppendFrom for the others.
func copyAppender(t *chunk.Type, s, w int) (appender, error) {
	col, err := chunk.NewColumn(t)
	if err != nil {
		return nil, err
	}
	switch col.(type) {
	case *chunk.Fixed[int64]:
		return fixedAppender[int64](s, w), nil
	case *chunk.Fixed[uint64]:
		return fixedAppender[uint64](s, w), nil
	case *chunk.Fixed[int32]:
		return fixedAppender[int32](s, w), nil
	case *chunk.Fixed[uint32]:
		return fixedAppender[uint32](s, w), nil
	case *chunk.Fixed[float64]:
		return fixedAppender[float64](s, w), nil
	case *chunk.Strings:
		return func(r *rt, dst chunk.Column) {
			src := r.cols[s].(*chunk.Strings)
			i := r.at[w]
			start := 0
			if i > 0 {
				start = src.Ends[i-1]
			}
			d := dst.(*chunk.Strings)
			d.Buf = append(d.Buf, src.Buf[start:src.Ends[i]]...)
			d.Ends = append(d.Ends, len(d.Buf))
		}, nil
	}
	return func(r *rt, dst chunk.Column) { dst.AppendFrom(r.cols[s], r.at[w]) }, nil
}

// fixedAppender is copyAppender for a fixed-width type.
func fixedAppender[T any](s, w int) appender {
	return func(r *rt, dst chunk.Column) {
		d := dst.(*chunk.Fixed[T])
		d.Data = append(d.Data, r.cols[s].(*chunk.Fixed[T]).Data[r.at[w]])
	}
}

// Readers: staging values as expression values.

// readable reports the expression type a staging column of type t reads
// as, and whether it can be read at all.
func readable(t *chunk.Type) (vtype, bool) {
	t = t.Base()
	null := false
	if t.Kind == chunk.KindNullable {
		null = true
		t = t.Elem.Base()
	}
	var k kind
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32:
		k = kInt
	case chunk.KindUInt64:
		k = kUInt
	case chunk.KindFloat32, chunk.KindFloat64, chunk.KindDecimal:
		k = kFloat
	case chunk.KindBool:
		k = kBool
	case chunk.KindString, chunk.KindFixedString, chunk.KindUUID, chunk.KindEnum8, chunk.KindEnum16:
		k = kString
	case chunk.KindDateTime, chunk.KindDateTime64, chunk.KindDate, chunk.KindDate32:
		k = kTime
	default:
		return vtype{}, false
	}
	return vtype{k: k, null: null}, true
}

func readInt[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32](s, w int) func(*rt) int64 {
	return func(r *rt) int64 { return int64(r.cols[s].(*chunk.Fixed[T]).Data[r.at[w]]) }
}

func readFloat[T float32 | float64](s, w int) func(*rt) float64 {
	return func(r *rt) float64 { return float64(r.cols[s].(*chunk.Fixed[T]).Data[r.at[w]]) }
}

// readValue builds the value closure of node n for a non-Nullable column
// of base type t bound at r.cols[s], indexed by r.at[w].
func readValue(n *node, t *chunk.Type, s, w int) {
	switch t.Kind {
	case chunk.KindInt8:
		n.i = readInt[int8](s, w)
	case chunk.KindInt16:
		n.i = readInt[int16](s, w)
	case chunk.KindInt32:
		n.i = readInt[int32](s, w)
	case chunk.KindInt64:
		// Not generic: a generic closure finds its type through a
		// dictionary on every call.
		n.i = func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] }
		n.col, n.colS, n.colW = true, s, w
	case chunk.KindUInt8:
		n.i = readInt[uint8](s, w)
	case chunk.KindUInt16:
		n.i = readInt[uint16](s, w)
	case chunk.KindUInt32:
		n.i = readInt[uint32](s, w)
	case chunk.KindUInt64:
		n.u = func(r *rt) uint64 { return r.cols[s].(*chunk.Fixed[uint64]).Data[r.at[w]] }
	case chunk.KindFloat32:
		n.f = readFloat[float32](s, w)
	case chunk.KindFloat64:
		n.f = readFloat[float64](s, w)
	case chunk.KindDecimal:
		n.f = func(r *rt) float64 {
			v := r.cols[s].(*chunk.Strings).Value(r.at[w])
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				r.failf(ReasonWrongType, "decimal %q is not a number", v)
			}
			return f
		}
	case chunk.KindBool:
		n.b = func(r *rt) bool { return r.cols[s].(*chunk.Fixed[bool]).Data[r.at[w]] }
	case chunk.KindString, chunk.KindFixedString, chunk.KindUUID, chunk.KindEnum8, chunk.KindEnum16:
		n.s = func(r *rt) string { return r.cols[s].(*chunk.Strings).Value(r.at[w]) }
		n.col, n.colS, n.colW = true, s, w
	case chunk.KindDateTime:
		n.i = func(r *rt) int64 { return r.cols[s].(*chunk.Fixed[int64]).Data[r.at[w]] * int64(time.Second) }
	case chunk.KindDateTime64:
		scale := int64(1)
		for range 9 - t.Precision {
			scale *= 10
		}
		n.i = func(r *rt) int64 { return r.cols[s].(*chunk.DateTime64).Data[r.at[w]] * scale }
	case chunk.KindDate, chunk.KindDate32:
		n.i = func(r *rt) int64 { return r.timeNS(r.cols[s].(*chunk.Fixed[time.Time]).Data[r.at[w]]) }
	}
}

// Writers: expression values into output columns.

// appender appends one value to an output column; failures go to r.fail
// (the chain truncates the record's rows afterwards).
type appender func(r *rt, dst chunk.Column)

// convert builds the appender putting n's value into a column of type t;
// where names the column in run-time errors.
func convert(n *node, t *chunk.Type, where string, rg chunk.ServerRanges) (appender, error) {
	t = t.Base()
	if t.Kind == chunk.KindNullable {
		if n.t.k == kNull {
			return func(r *rt, dst chunk.Column) { dst.(*chunk.Nullable).AppendNull() }, nil
		}
		inner, err := convertValue(n, t.Elem.Base(), where, rg)
		if err != nil {
			return nil, err
		}
		if n.t.null {
			isNull := n.isNull
			return func(r *rt, dst chunk.Column) {
				nc := dst.(*chunk.Nullable)
				if isNull(r) {
					nc.AppendNull()
					return
				}
				inner(r, nc.Inner)
				nc.MarkValue()
			}, nil
		}
		return func(r *rt, dst chunk.Column) {
			nc := dst.(*chunk.Nullable)
			inner(r, nc.Inner)
			nc.MarkValue()
		}, nil
	}
	if n.t.null {
		return nil, fmt.Errorf("the value is %s and the column is not Nullable: give it a default with ??", n.t)
	}
	return convertValue(n, t, where, rg)
}

func outOfRange(r *rt, where string, format string, args ...any) {
	r.fail(ReasonOutOfRange, where, fmt.Errorf(format, args...))
}

// intTo converts an integer or boolean expression to an integer column
// within its type's range (a boolean is 1 or 0).
func intTo(n *node, a chunk.Ints, where, tname string) (appender, error) {
	switch n.t.k {
	case kInt:
		f := n.i
		return func(r *rt, dst chunk.Column) {
			if v := f(r); a.AppendInt(dst, v) != nil {
				outOfRange(r, where, "value %d is out of the range of %s", v, tname)
			}
		}, nil
	case kUInt:
		f := n.u
		return func(r *rt, dst chunk.Column) {
			if v := f(r); a.AppendUint(dst, v) != nil {
				outOfRange(r, where, "value %d is out of the range of %s", v, tname)
			}
		}, nil
	case kBool:
		f := n.b
		return func(r *rt, dst chunk.Column) { _ = a.AppendInt(dst, boolInt(f(r))) }, nil
	}
	return nil, cannot(n, tname)
}

func cannot(n *node, tname string) error {
	hint := ""
	switch {
	case n.t.k == kFloat && strings.Contains(tname, "Int"):
		hint = ": convert it with int(x) (truncates) or int(round(x))"
	case n.t.k == kTime && (strings.Contains(tname, "Int") || strings.Contains(tname, "Float")):
		hint = ": convert it with to_unix(t) or to_unix_ms(t)"
	case tname == "String" || strings.HasPrefix(tname, "FixedString"):
		hint = ": convert it with string(x)"
	case (n.t.k == kInt || n.t.k == kUInt) && strings.HasPrefix(tname, "Date"):
		hint = ": convert epoch numbers with from_unix(x) or from_unix_ms(x)"
	case n.t.k == kString && strings.HasPrefix(tname, "Date"):
		hint = ": parse it with parse_time(s, layout)"
		if ct, err := chunk.ParseType(tname); err == nil && ct.TZ != "" {
			// A text without an offset is local time in the column's zone.
			hint = fmt.Sprintf(": parse it with parse_time(s, layout, %q)", ct.TZ)
		}
	case n.t.k == kString && (strings.Contains(tname, "Int") || strings.Contains(tname, "Float")):
		hint = ": convert it with int(s) or float(s)"
	}
	return fmt.Errorf("a %s value cannot go into a %s column%s", n.t, tname, hint)
}

// convertValue builds the appender of a non-Nullable value into a column
// of the non-Nullable base type t.
// rg bounds Date and DateTime values: the range of the servers the rows
// go to.
func convertValue(n *node, t *chunk.Type, where string, rg chunk.ServerRanges) (appender, error) {
	if n.t.k == kNull {
		return nil, fmt.Errorf("nil cannot go into a %s column, which is not Nullable", t.Name)
	}
	tn := t.Name
	if app := fastConvert(n, t, where); app != nil {
		return app, nil
	}
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32, chunk.KindUInt64:
		ints, _ := chunk.IntsOf(t)
		return intTo(n, ints, where, tn)
	case chunk.KindFloat32, chunk.KindFloat64:
		if !n.t.numeric() {
			return nil, cannot(n, tn)
		}
		f := asFloat(n)
		floats, _ := chunk.FloatsOf(t)
		// A finite value beyond Float32 becomes the infinity of its sign.
		if t.Kind == chunk.KindFloat32 {
			return func(r *rt, dst chunk.Column) {
				v := f(r)
				if floats.AppendFloat(dst, v) != nil {
					_ = floats.AppendFloat(dst, math.Copysign(math.Inf(1), v))
				}
			}, nil
		}
		return func(r *rt, dst chunk.Column) { _ = floats.AppendFloat(dst, f(r)) }, nil
	case chunk.KindBool:
		if n.t.k != kBool {
			return nil, cannot(n, tn)
		}
		f := n.b
		return func(r *rt, dst chunk.Column) { chunk.AppendBool(dst, f(r)) }, nil
	case chunk.KindString:
		if n.t.k != kString {
			return nil, cannot(n, tn)
		}
		f := n.s
		return func(r *rt, dst chunk.Column) { chunk.AppendString(dst, f(r)) }, nil
	case chunk.KindEnum8, chunk.KindEnum16:
		return enumTo(n, t, where)
	case chunk.KindDecimal:
		return decimalTo(n, t, where)
	case chunk.KindDateTime:
		return dateTimeTo(n, t, where, rg)
	case chunk.KindDateTime64:
		if n.t.k != kTime {
			return nil, cannot(n, tn)
		}
		ts, _ := chunk.TimesOf(t, rg)
		f := n.i
		return func(r *rt, dst chunk.Column) {
			if v := f(r); ts.AppendNanos(dst, v) != nil {
				outOfRange(r, where, "%s is out of the range of %s", time.Unix(0, v).UTC().Format(time.RFC3339Nano), tn)
			}
		}, nil
	case chunk.KindDate, chunk.KindDate32:
		if n.t.k != kTime {
			return nil, cannot(n, tn)
		}
		ts, _ := chunk.TimesOf(t, rg)
		f := n.i
		return func(r *rt, dst chunk.Column) {
			d := floorDiv(f(r), day)
			if err := ts.AppendDays(dst, d); err != nil {
				timeOutOfRange(r, where, err, "day %s is out of the range of %s", time.Unix(d*86400, 0).UTC().Format(time.DateOnly), tn)
			}
		}, nil
	}
	// The rest of the string family (FixedString, UUID, IPv4, IPv6) from
	// a string: the type's appender checks it.
	if texts, ok := chunk.TextsOf(t); ok {
		if n.t.k != kString {
			return nil, cannot(n, tn)
		}
		f := n.s
		return func(r *rt, dst chunk.Column) {
			s := f(r)
			switch err := texts.AppendString(dst, s); err {
			case nil:
			case chunk.ErrRange:
				outOfRange(r, where, "%q is %s", s, texts.Refusal(err))
			default:
				r.fail(ReasonWrongType, where, fmt.Errorf("%q is %s", s, texts.Refusal(err)))
			}
		}, nil
	}
	return nil, fmt.Errorf("a computed value cannot go into a %s column (only a field copied unchanged from a column of the same type can)", tn)
}

// fastConvert writes out, without generics or a second closure call for
// a derived field, the conversions of the common cases: Int64 into Int64,
// Int64 into Int32 (range-checked) and String into String.
func fastConvert(n *node, t *chunk.Type, where string) appender {
	switch {
	case n.t.k == kInt && t.Kind == chunk.KindInt64:
		if n.slotted {
			s := n.slot
			return func(r *rt, dst chunk.Column) {
				d := dst.(*chunk.Fixed[int64])
				d.Data = append(d.Data, r.slots[s].i)
			}
		}
		f := n.i
		return func(r *rt, dst chunk.Column) {
			d := dst.(*chunk.Fixed[int64])
			d.Data = append(d.Data, f(r))
		}
	case n.t.k == kInt && t.Kind == chunk.KindInt32:
		get := n.i
		if n.slotted {
			s := n.slot
			return func(r *rt, dst chunk.Column) {
				v := r.slots[s].i
				if v < math.MinInt32 || v > math.MaxInt32 {
					outOfRange(r, where, "value %d is out of the range of %s", v, t.Name)
					return
				}
				d := dst.(*chunk.Fixed[int32])
				d.Data = append(d.Data, int32(v))
			}
		}
		return func(r *rt, dst chunk.Column) {
			v := get(r)
			if v < math.MinInt32 || v > math.MaxInt32 {
				outOfRange(r, where, "value %d is out of the range of %s", v, t.Name)
				return
			}
			d := dst.(*chunk.Fixed[int32])
			d.Data = append(d.Data, int32(v))
		}
	case n.t.k == kString && t.Kind == chunk.KindString:
		if n.slotted {
			s := n.slot
			return func(r *rt, dst chunk.Column) { chunk.AppendString(dst, r.slots[s].s) }
		}
		f := n.s
		return func(r *rt, dst chunk.Column) { chunk.AppendString(dst, f(r)) }
	}
	return nil
}

// dateTimeTo converts a Time (an instant) or epoch seconds to a DateTime
// column of type t, within the range the server reads back in the
// column's zone.
func dateTimeTo(n *node, t *chunk.Type, where string, rg chunk.ServerRanges) (appender, error) {
	tn := t.Name
	ts, _ := chunk.TimesOf(t.Base(), rg)
	var sec func(*rt) (int64, bool)
	switch n.t.k {
	case kTime:
		f := n.i
		sec = func(r *rt) (int64, bool) { return floorDiv(f(r), int64(time.Second)), true }
	case kInt:
		f := n.i
		sec = func(r *rt) (int64, bool) { return f(r), true }
	case kUInt:
		f := n.u
		sec = func(r *rt) (int64, bool) {
			v := f(r)
			return int64(v), v <= math.MaxUint32
		}
	default:
		return nil, cannot(n, tn)
	}
	return func(r *rt, dst chunk.Column) {
		s, ok := sec(r)
		if !ok {
			outOfRange(r, where, "%d seconds since the epoch is out of the range of DateTime", s)
			return
		}
		if err := ts.AppendSeconds(dst, s); err != nil {
			timeOutOfRange(r, where, err, "%d seconds since the epoch is out of the range of DateTime", s)
		}
	}, nil
}

// timeOutOfRange fails the record for a value a time column refused: past
// the server's maximum (its message), or outside the type's range (format
// and args).
func timeOutOfRange(r *rt, where string, err error, format string, args ...any) {
	var past *chunk.PastError
	if errors.As(err, &past) {
		outOfRange(r, where, "%s", past.Error())
		return
	}
	outOfRange(r, where, format, args...)
}

// enumTo converts a string (one of the enum's names) or an integer (one of
// its numbers) to an Enum column.
func enumTo(n *node, t *chunk.Type, where string) (appender, error) {
	texts, _ := chunk.TextsOf(t)
	switch n.t.k {
	case kString:
		f := n.s
		return func(r *rt, dst chunk.Column) {
			if s := f(r); texts.AppendString(dst, s) != nil {
				outOfRange(r, where, "%q is not a value of %s", s, t.Name)
			}
		}, nil
	case kInt, kUInt:
		f := asInt(n)
		return func(r *rt, dst chunk.Column) {
			if v := f(r); texts.AppendInt(dst, v) != nil {
				outOfRange(r, where, "%d is not a value of %s", v, t.Name)
			}
		}, nil
	}
	return nil, cannot(n, t.Name)
}

func decimalTo(n *node, t *chunk.Type, where string) (appender, error) {
	dec, _ := chunk.DecimalsOf(t)
	scale := t.Scale
	// put appends the decimal text written at scratch[start:] (NaN and
	// Inf are out of range too). A nonzero digit past the scale is
	// refused, never rounded: round(x, S) in the expression says how to
	// round.
	put := func(r *rt, dst chunk.Column, start int) {
		b := r.scratch[start:]
		switch err := dec.AppendText(dst, b); {
		case errors.Is(err, chunk.ErrScale):
			outOfRange(r, where, "%s has more fraction digits than %s keeps (scale %d): round it in the expression, e.g. round(x, %d)", b, t.Name, scale, scale)
		case err != nil:
			outOfRange(r, where, "%s is out of the range of %s", b, t.Name)
		}
		r.scratch = r.scratch[:start]
	}
	switch n.t.k {
	case kInt:
		f := n.i
		return func(r *rt, dst chunk.Column) {
			v := f(r)
			start := len(r.scratch)
			r.scratch = strconv.AppendInt(r.scratch, v, 10)
			put(r, dst, start)
		}, nil
	case kUInt:
		f := n.u
		return func(r *rt, dst chunk.Column) {
			v := f(r)
			start := len(r.scratch)
			r.scratch = strconv.AppendUint(r.scratch, v, 10)
			put(r, dst, start)
		}, nil
	case kFloat:
		f := n.f
		return func(r *rt, dst chunk.Column) {
			v := f(r)
			start := len(r.scratch)
			// The float's shortest text: the value it holds, digit for
			// digit, as the server's toString prints it.
			r.scratch = strconv.AppendFloat(r.scratch, v, 'f', -1, 64)
			put(r, dst, start)
		}, nil
	}
	return nil, cannot(n, t.Name)
}
