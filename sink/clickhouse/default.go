package clickhouse

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

// DEFAULT values: the plan has the server compute a column's DEFAULT
// expression (computeDefaults) and reads the value through the driver;
// SetDefault converts it into the one-row column chunk keeps as the type's
// default (chunk.Type.SetDefaultColumn), which every column built for the
// type appends for a missing field.

// SetDefault makes v the default of the table column of type t: every
// column chunk.NewColumn builds for t afterwards appends it in
// AppendDefault.
//
// v is a value as the ClickHouse driver scans one of type t: an integer,
// float or bool; a string or []byte (String, FixedString, Enum names,
// UUID, Decimal, IPv4, IPv6); a fmt.Stringer (uuid.UUID, decimal.Decimal);
// a time.Time (Date, Date32: its calendar day; DateTime, DateTime64: its
// instant); a net.IP or netip.Addr; a big.Int or *big.Int; a pointer, nil
// for NULL (Nullable); a slice or array (Array, and Tuple elements in
// order); a map (Map, or a named Tuple's elements by name) or a
// column.IterableOrderedMap (Map, in its order); a struct (Tuple, fields in
// order).
//
// SetDefault is part of setting the type up: call it before columns are
// built for t and never while other goroutines use t.
func SetDefault(t *chunk.Type, v any) error {
	col, err := chunk.NewColumn(t)
	if err != nil {
		return err
	}
	if err := appendScanned(col, t, v); err != nil {
		return fmt.Errorf("default value %v for %s: %w", v, t.Name, err)
	}
	if col.Len() != 1 {
		return fmt.Errorf("default value %v for %s: %d rows", v, t.Name, col.Len())
	}
	return t.SetDefaultColumn(col)
}

// appendScanned appends v, a value as the driver scans one of type t (see
// SetDefault), to col, a column chunk.NewColumn built for t.
func appendScanned(col chunk.Column, t *chunk.Type, v any) error {
	t = t.Base()
	rv := indirect(reflect.ValueOf(v))
	if t.Kind == chunk.KindNullable {
		n := col.(*chunk.Nullable)
		if !rv.IsValid() {
			n.AppendNull()
			return nil
		}
		if err := appendScanned(n.Inner, t.Elem, rv.Interface()); err != nil {
			return err
		}
		n.MarkValue()
		return nil
	}
	if !rv.IsValid() {
		return errors.New("NULL for a type that is not Nullable")
	}
	switch t.Kind {
	case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64,
		chunk.KindUInt8, chunk.KindUInt16, chunk.KindUInt32, chunk.KindUInt64:
		ints, _ := chunk.IntsOf(t)
		return appendInt(col, ints, rv)
	case chunk.KindFloat32, chunk.KindFloat64:
		floats, _ := chunk.FloatsOf(t)
		var f float64
		switch {
		case rv.CanFloat():
			f = rv.Float()
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		default:
			return wrongGo(rv)
		}
		if floats.AppendFloat(col, f) != nil {
			return fmt.Errorf("%v is out of range", f)
		}
		return nil
	case chunk.KindBool:
		ints, _ := chunk.IntsOf(t)
		var err error
		switch {
		case rv.Kind() == reflect.Bool:
			chunk.AppendBool(col, rv.Bool())
		case rv.CanUint():
			err = ints.AppendUint(col, rv.Uint())
		case rv.CanInt():
			err = ints.AppendInt(col, rv.Int())
		default:
			return wrongGo(rv)
		}
		if err != nil {
			return wrongGo(rv)
		}
		return nil
	case chunk.KindDecimal:
		return appendText(col, t, rv)
	case chunk.KindDate, chunk.KindDate32, chunk.KindDateTime, chunk.KindDateTime64:
		// The server evaluated the DEFAULT: its value is within what it
		// stores, whatever the server's Date and DateTime range.
		ts, _ := chunk.TimesOf(t, chunk.ServerRanges{Server: "the server", DateMax: chunk.WideDateMax, DateTimeMax: chunk.WideDateTimeMax})
		var err error
		switch x := rv.Interface().(type) {
		case time.Time:
			switch t.Kind {
			case chunk.KindDate, chunk.KindDate32:
				y, m, d := x.Date()
				err = ts.AppendDays(col, time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()/86400)
			case chunk.KindDateTime:
				err = ts.AppendSeconds(col, x.Unix())
			default:
				p := int64(1)
				for range 9 - t.Precision {
					p *= 10
				}
				err = ts.AppendTicks(col, x.Unix()*(1e9/p)+int64(x.Nanosecond())/p)
			}
		default:
			if t.Kind != chunk.KindDateTime || !rv.CanInt() {
				return wrongGo(rv)
			}
			err = ts.AppendSeconds(col, rv.Int())
		}
		if err != nil {
			return fmt.Errorf("%v is outside %s's range: %w", rv.Interface(), t.Name, err)
		}
		return nil
	case chunk.KindInt128, chunk.KindUInt128, chunk.KindInt256, chunk.KindUInt256:
		return appendBig(col.(*chunk.BigInt), rv)
	case chunk.KindArray:
		a := col.(*chunk.Array)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return wrongGo(rv)
		}
		for i := 0; i < rv.Len(); i++ {
			if err := appendScanned(a.Inner, t.Elem, rv.Index(i).Interface()); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		a.EndRow()
		return nil
	case chunk.KindTuple:
		return appendTuple(col.(*chunk.Tuple), t, rv)
	case chunk.KindMap:
		return appendMap(col.(*chunk.Map), t, v, rv)
	}
	if _, ok := chunk.TextsOf(t); ok {
		return appendText(col, t, rv)
	}
	return fmt.Errorf("type %s is not supported", t.Name)
}

// indirect follows pointers and interfaces; the result is invalid for nil.
func indirect(rv reflect.Value) reflect.Value {
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return reflect.Value{}
		}
		if _, ok := rv.Interface().(*big.Int); ok {
			return rv // appendBig reads it as it is
		}
		rv = rv.Elem()
	}
	return rv
}

func wrongGo(rv reflect.Value) error {
	return fmt.Errorf("a Go %s cannot be a value of this type", rv.Type())
}

// appendInt appends an integer (or a bool as 1 or 0) read from the server
// to an integer column, within its type's range.
func appendInt(col chunk.Column, a chunk.Ints, rv reflect.Value) error {
	var err error
	switch {
	case rv.CanInt():
		err = a.AppendInt(col, rv.Int())
	case rv.CanUint():
		err = a.AppendUint(col, rv.Uint())
	case rv.Kind() == reflect.Bool:
		var x int64
		if rv.Bool() {
			x = 1
		}
		err = a.AppendInt(col, x)
	default:
		return wrongGo(rv)
	}
	if err != nil {
		return fmt.Errorf("%v is out of range", rv.Interface())
	}
	return nil
}

// appendText appends the text of a String, FixedString, UUID, Decimal or
// Enum value (or an Enum's number).
func appendText(col chunk.Column, t *chunk.Type, rv reflect.Value) error {
	texts, _ := chunk.TextsOf(t)  // nil for Decimal
	dec, _ := chunk.DecimalsOf(t) // nil for the others
	var s string
	switch {
	case rv.Kind() == reflect.String:
		s = rv.String()
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 && (t.Kind == chunk.KindString || t.Kind == chunk.KindFixedString):
		s = string(rv.Bytes())
	default:
		if st, ok := rv.Interface().(fmt.Stringer); ok {
			s = st.String()
			break
		}
		switch {
		case texts != nil && texts.Numbers() && (rv.CanInt() || rv.CanUint()):
			// An Enum's number, an IPv4 address as a number.
			n := int64(-1)
			if rv.CanInt() {
				n = rv.Int()
			} else if rv.Uint() <= math.MaxInt64 {
				n = int64(rv.Uint())
			}
			if texts.AppendInt(col, n) != nil {
				return fmt.Errorf("%v is not a value of %s", rv.Interface(), t.Name)
			}
			return nil
		case dec != nil && rv.CanInt():
			s = strconv.FormatInt(rv.Int(), 10)
		case dec != nil && rv.CanUint():
			s = strconv.FormatUint(rv.Uint(), 10)
		case dec != nil && rv.CanFloat():
			// Plain text (no exponent), as the decimal text takes it.
			s = strconv.FormatFloat(rv.Float(), 'f', -1, rv.Type().Bits())
		default:
			return wrongGo(rv)
		}
	}
	if dec != nil {
		// Decimal: its text as the server wrote it, checked.
		if err := dec.AppendText(col, []byte(s)); err != nil {
			if errors.Is(err, chunk.ErrRange) {
				return fmt.Errorf("%s is out of the range of %s", s, t.Name)
			}
			return fmt.Errorf("%q is not a %s", s, t.Name)
		}
		return nil
	}
	if err := texts.AppendString(col, s); err != nil {
		switch t.Kind {
		case chunk.KindFixedString:
			return fmt.Errorf("%d bytes do not fit %s", len(s), t.Name)
		case chunk.KindEnum8, chunk.KindEnum16:
			return fmt.Errorf("%q is not a name of %s", s, t.Name)
		}
		return fmt.Errorf("%q is %s", s, texts.Refusal(err))
	}
	return nil
}

// appendBig appends an integer of up to 256 bits as c's two's complement
// words.
func appendBig(c *chunk.BigInt, rv reflect.Value) error {
	var v *big.Int
	switch x := rv.Interface().(type) {
	case *big.Int:
		v = x
	case big.Int:
		v = &x
	default:
		switch {
		case rv.CanInt():
			v = big.NewInt(rv.Int())
		case rv.CanUint():
			v = new(big.Int).SetUint64(rv.Uint())
		default:
			return wrongGo(rv)
		}
	}
	bits := 64 * c.Words
	lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), uint(bits))
	if c.Signed {
		hi.Rsh(hi, 1)
		lo.Neg(hi)
	}
	if v.Cmp(lo) < 0 || v.Cmp(hi) >= 0 {
		return fmt.Errorf("%s is out of range", v)
	}
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
	}
	mask := new(big.Int).SetUint64(math.MaxUint64)
	words := make([]uint64, c.Words)
	for i := range words {
		words[i] = new(big.Int).And(u, mask).Uint64()
		u.Rsh(u, 64)
	}
	c.Append(words)
	return nil
}

// appendTuple appends a tuple from a slice or array (elements in order), a
// struct (fields in order) or, for a named tuple, a map keyed by element
// name (a missing element gets its default).
func appendTuple(c *chunk.Tuple, t *chunk.Type, rv reflect.Value) error {
	n := len(t.Elems)
	elem := func(i int) (any, bool, error) {
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			if rv.Len() != n {
				return nil, false, fmt.Errorf("%d elements for %s", rv.Len(), t.Name)
			}
			return rv.Index(i).Interface(), true, nil
		case reflect.Struct:
			if rv.NumField() != n {
				return nil, false, fmt.Errorf("%d fields for %s", rv.NumField(), t.Name)
			}
			return rv.Field(i).Interface(), true, nil
		case reflect.Map:
			if t.ElemNames == nil || rv.Type().Key().Kind() != reflect.String {
				return nil, false, wrongGo(rv)
			}
			e := rv.MapIndex(reflect.ValueOf(t.ElemNames[i]).Convert(rv.Type().Key()))
			if !e.IsValid() {
				return nil, false, nil
			}
			return e.Interface(), true, nil
		}
		return nil, false, wrongGo(rv)
	}
	for i := range n {
		v, ok, err := elem(i)
		if err == nil && !ok {
			c.Elems[i].AppendDefault()
			continue
		}
		if err == nil {
			err = appendScanned(c.Elems[i], t.Elems[i], v)
		}
		if err != nil {
			return fmt.Errorf("tuple element %d: %w", i+1, err)
		}
	}
	c.EndRow()
	return nil
}

// appendMap appends a map row from an ordered map (in its order) or a Go
// map (ordered by the keys' text, as a Go map has no order).
func appendMap(c *chunk.Map, t *chunk.Type, v any, rv reflect.Value) error {
	put := func(k, v any) error {
		if err := appendScanned(c.Keys, t.Key, k); err != nil {
			return fmt.Errorf("map key %v: %w", k, err)
		}
		if err := appendScanned(c.Values, t.Elem, v); err != nil {
			return fmt.Errorf("map value of key %v: %w", k, err)
		}
		return nil
	}
	if om, ok := v.(column.IterableOrderedMap); ok {
		for it := om.Iterator(); it.Next(); {
			if err := put(it.Key(), it.Value()); err != nil {
				return err
			}
		}
		c.EndRow()
		return nil
	}
	if rv.Kind() != reflect.Map {
		return wrongGo(rv)
	}
	keys := rv.MapKeys()
	text := make([]string, len(keys))
	for i, k := range keys {
		text[i] = fmt.Sprint(k.Interface())
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return text[order[a]] < text[order[b]] })
	for _, i := range order {
		if err := put(keys[i].Interface(), rv.MapIndex(keys[i]).Interface()); err != nil {
			return err
		}
	}
	c.EndRow()
	return nil
}
