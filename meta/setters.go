package meta

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
)

// compileSetter returns the setter of source src into a column of type t,
// and false when t does not fit src.
func compileSetter(src string, t *chunk.Type, rg chunk.ServerRanges) (setter, bool) {
	b := t.Base()
	switch src {
	case Topic:
		if b.Kind == chunk.KindString {
			return func(r *kgo.Record, col chunk.Column, from, n int) error {
				col.Truncate(from)
				s := col.(*chunk.Strings)
				for range n {
					s.AppendString(r.Topic)
				}
				return nil
			}, true
		}
	case Partition:
		switch b.Kind {
		case chunk.KindInt32, chunk.KindInt64, chunk.KindUInt32, chunk.KindUInt64:
			return fixedSetter(b, func(r *kgo.Record) int64 { return int64(r.Partition) }), true
		}
	case Offset:
		switch b.Kind {
		case chunk.KindInt64, chunk.KindUInt64:
			return fixedSetter(b, func(r *kgo.Record) int64 { return r.Offset }), true
		}
	case Timestamp:
		switch b.Kind {
		case chunk.KindInt64, chunk.KindUInt64:
			return intSetter(b, func(r *kgo.Record) int64 { return r.Timestamp.UnixMilli() }), true
		case chunk.KindDateTime, chunk.KindDateTime64:
			// Held to the server's range (and zone), as a decoded
			// value is.
			times, _ := chunk.TimesOf(b, rg)
			return func(r *kgo.Record, col chunk.Column, from, n int) error {
				col.Truncate(from)
				ns := r.Timestamp.UnixMilli() * 1e6
				for range n {
					if err := times.AppendNanos(col, ns); err != nil {
						return err
					}
				}
				return nil
			}, true
		}
	case TimestampType:
		switch b.Kind {
		case chunk.KindInt8, chunk.KindInt16, chunk.KindInt32, chunk.KindInt64:
			return intSetter(b, func(r *kgo.Record) int64 { return int64(r.Attrs.TimestampType()) }), true
		case chunk.KindString:
			return func(r *kgo.Record, col chunk.Column, from, n int) error {
				col.Truncate(from)
				s := col.(*chunk.Strings)
				name := TimestampTypeName(r.Attrs.TimestampType())
				for range n {
					s.AppendString(name)
				}
				return nil
			}, true
		}
	case Key:
		return bytesSetter(b, func(r *kgo.Record) []byte { return r.Key })
	case Raw:
		if b.Kind == chunk.KindString {
			return bytesSetter(b, func(r *kgo.Record) []byte { return r.Value })
		}
	case Tombstone:
		return tombstoneSetter(b)
	case HeaderKeys:
		if b.Kind == chunk.KindArray && b.Elem.Base().Kind == chunk.KindString {
			return func(r *kgo.Record, col chunk.Column, from, n int) error {
				col.Truncate(from)
				a := col.(*chunk.Array)
				s := a.Inner.(*chunk.Strings)
				for range n {
					for _, h := range r.Headers {
						s.AppendString(h.Key)
					}
					a.EndRow()
				}
				return nil
			}, true
		}
	case HeaderValues:
		if b.Kind == chunk.KindArray {
			if _, ok := bytesSetter(b.Elem.Base(), nil); ok {
				nullable := b.Elem.Base().Kind == chunk.KindNullable
				return func(r *kgo.Record, col chunk.Column, from, n int) error {
					col.Truncate(from)
					a := col.(*chunk.Array)
					for range n {
						for _, h := range r.Headers {
							appendBytes(a.Inner, h.Value, nullable)
						}
						a.EndRow()
					}
					return nil
				}, true
			}
		}
	case Headers:
		if b.Kind == chunk.KindMap && b.Key.Base().Kind == chunk.KindString && b.Elem.Base().Kind == chunk.KindString {
			return func(r *kgo.Record, col chunk.Column, from, n int) error {
				col.Truncate(from)
				m := col.(*chunk.Map)
				ks, vs := m.Keys.(*chunk.Strings), m.Values.(*chunk.Strings)
				for range n {
					for _, h := range r.Headers {
						ks.AppendString(h.Key)
						vs.Append(h.Value)
					}
					m.EndRow()
				}
				return nil
			}, true
		}
	}
	return nil, false
}

// TimestampTypeName is the String value of source _timestamp_type.
func TimestampTypeName(tt int8) string {
	switch tt {
	case 0:
		return "create"
	case 1:
		return "log_append"
	}
	return "none"
}

// fixedSetter appends v(r), which is never negative, to a column of type
// t: Int32, Int64, UInt32 or UInt64 (a Fixed column, filled without the
// range checks of chunk.Ints).
func fixedSetter(t *chunk.Type, v func(r *kgo.Record) int64) setter {
	switch t.Kind {
	case chunk.KindInt32:
		return fixed[int32](v)
	case chunk.KindUInt32:
		return fixed[uint32](v)
	case chunk.KindUInt64:
		return fixed[uint64](v)
	}
	return fixed[int64](v)
}

func fixed[T int32 | int64 | uint32 | uint64](v func(r *kgo.Record) int64) setter {
	return func(r *kgo.Record, col chunk.Column, from, n int) error {
		c := col.(*chunk.Fixed[T])
		x := T(v(r))
		c.Data = c.Data[:from]
		for range n {
			c.Data = append(c.Data, x)
		}
		return nil
	}
}

// intSetter appends v(r) to an integer column of type t.
func intSetter(t *chunk.Type, v func(r *kgo.Record) int64) setter {
	ints, _ := chunk.IntsOf(t)
	return func(r *kgo.Record, col chunk.Column, from, n int) error {
		col.Truncate(from)
		x := v(r)
		for range n {
			if err := ints.AppendInt(col, x); err != nil {
				return err
			}
		}
		return nil
	}
}

// bytesSetter appends v(r) to a String column, or to a Nullable(String)
// one where a nil value is NULL; it returns false for other types. v may
// be nil when only the check is wanted.
func bytesSetter(t *chunk.Type, v func(r *kgo.Record) []byte) (setter, bool) {
	nullable := false
	if t.Kind == chunk.KindNullable {
		nullable = true
		t = t.Elem.Base()
	}
	if t.Kind != chunk.KindString {
		return nil, false
	}
	return func(r *kgo.Record, col chunk.Column, from, n int) error {
		col.Truncate(from)
		b := v(r)
		for range n {
			appendBytes(col, b, nullable)
		}
		return nil
	}, true
}

// appendBytes appends b to a String column, or to a Nullable(String) one
// (nullable) where nil is NULL.
func appendBytes(col chunk.Column, b []byte, nullable bool) {
	if !nullable {
		col.(*chunk.Strings).Append(b)
		return
	}
	c := col.(*chunk.Nullable)
	if b == nil {
		c.AppendNull()
		return
	}
	c.Inner.(*chunk.Strings).Append(b)
	c.MarkValue()
}
