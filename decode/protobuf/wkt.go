package protobuf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// The ranges of the well-known types' values that protojson accepts.
const (
	minTimestamp   = -62135596800 // 0001-01-01T00:00:00Z
	maxTimestamp   = 253402300799 // 9999-12-31T23:59:59Z
	maxDuration    = 315576000000 // 10,000 years
	nanosPerSecond = 1_000_000_000
)

// secNanos is the msgSetter of a Timestamp or Duration (name): its
// seconds (field 1) and nanos (field 2), the last of each, go to finish.
func secNanos(name string, finish func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error) *msgSetter {
	return &msgSetter{
		one: func(d *Decoder, v val, col chunk.Column) *decode.Error {
			sec, ns, e := readSecNanos(v.b, v.off, name, 0, 0)
			if e != nil {
				return e
			}
			return finish(d, int64(sec), int64(int32(ns)), col)
		},
		merge: func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error {
			var sec, ns uint64
			for o := head; o >= 0; o = r.occ[o].next {
				var e *decode.Error
				if sec, ns, e = readSecNanos(r.occ[o].v.b, r.occ[o].v.off, name, sec, ns); e != nil {
					return e
				}
			}
			return finish(d, int64(sec), int64(int32(ns)), col)
		},
	}
}

// readSecNanos reads the fields of one occurrence b (at offset off) of a
// Timestamp or Duration over sec and ns.
func readSecNanos(b []byte, off int, name string, sec, ns uint64) (uint64, uint64, *decode.Error) {
	for i := 0; i < len(b); {
		if c := b[i]; c == 0x08 || c == 0x10 { // field 1 or 2, a varint
			x, n := protowire.ConsumeVarint(b[i+1:])
			if n < 0 {
				return 0, 0, corruptAt(off+i+1, "%s: field %d: %s varint", name, c>>3, varintTrouble(n))
			}
			if c == 0x08 {
				sec = x
			} else {
				ns = x
			}
			i += 1 + n
			continue
		}
		num, v, next, e := jsonField(b, i, off, name)
		if e != nil {
			return 0, 0, e
		}
		if num == 1 || num == 2 {
			return 0, 0, corruptAt(off+i, "%s: field %d has wire type %s, want varint", name, num, wireName(v.wt))
		}
		i = next
	}
	return sec, ns, nil
}

// timestampSetter compiles google.protobuf.Timestamp into t: DateTime
// (seconds), Date and Date32 (the UTC day), DateTime64(P) (rounded down
// to 10^-P s), or String (RFC 3339, as protojson writes it).
func timestampSetter(md protoreflect.MessageDescriptor, t *chunk.Type, rg chunk.ServerRanges) (*msgSetter, error) {
	name := string(md.FullName())
	check := func(sec, ns int64) *decode.Error {
		if sec < minTimestamp || sec > maxTimestamp || ns < 0 || ns >= nanosPerSecond {
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("timestamp of seconds %d and nanos %d is not a valid google.protobuf.Timestamp", sec, ns)}
		}
		return nil
	}
	switch t.Kind {
	case chunk.KindString:
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			if e := check(sec, ns); e != nil {
				return e
			}
			d.json = appendTimestamp(d.json[:0], sec, ns)
			chunk.AppendString(col, d.json)
			return nil
		}), nil
	case chunk.KindDateTime, chunk.KindDate, chunk.KindDate32:
		ts, _ := chunk.TimesOf(t, rg)
		what := decode.NotDateTime
		switch t.Kind {
		case chunk.KindDate:
			what = decode.NotDate
		case chunk.KindDate32:
			what = decode.NotDate32
		}
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			if e := check(sec, ns); e != nil {
				return e
			}
			if err := ts.AppendSeconds(col, sec); err != nil {
				return timeError(err, sec, ns, what)
			}
			return nil
		}), nil
	case chunk.KindDateTime64:
		ts, _ := chunk.TimesOf(t, rg)
		p := t.Precision
		lo, hi := chunk.DateTime64Range(p)
		scale := decode.Pow10[p]
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			if e := check(sec, ns); e != nil {
				return e
			}
			// Bound the seconds first so the multiplication cannot
			// overflow.
			if sec < lo/scale-1 || sec > hi/scale+1 {
				return timeError(chunk.ErrRange, sec, ns, decode.NotDateTime64)
			}
			if err := ts.AppendTicks(col, sec*scale+ns/(nanosPerSecond/scale)); err != nil {
				return timeError(err, sec, ns, decode.NotDateTime64)
			}
			return nil
		}), nil
	}
	return nil, fmt.Errorf("message %s cannot go into %s: want DateTime, DateTime64, Date, Date32 or String", md.FullName(), t.Name)
}

func timeError(err error, sec, ns int64, what string) *decode.Error {
	var past *chunk.PastError
	if errors.As(err, &past) {
		return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("timestamp %s: %s", appendTimestamp(nil, sec, ns), past.Error())}
	}
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("timestamp %s %s", appendTimestamp(nil, sec, ns), what)}
}

// appendTimestamp appends protojson's text of a Timestamp: RFC 3339 in
// UTC with 0, 3, 6 or 9 fraction digits.
func appendTimestamp(b []byte, sec, ns int64) []byte {
	b = time.Unix(sec, 0).UTC().AppendFormat(b, "2006-01-02T15:04:05")
	b = appendFraction(b, ns)
	return append(b, 'Z')
}

// appendFraction appends nanoseconds ns (0 <= ns < 1e9) as protojson
// does: nothing for 0, else a point and 3, 6 or 9 digits.
func appendFraction(b []byte, ns int64) []byte {
	if ns == 0 {
		return b
	}
	var digits [9]byte
	for i := 8; i >= 0; i-- {
		digits[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 9
	for n > 3 && string(digits[n-3:n]) == "000" {
		n -= 3
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// durationSetter compiles google.protobuf.Duration into t: an integer
// column (whole seconds, the fraction dropped toward zero, as the
// Duration's own seconds field), Float32 or Float64 (seconds with their
// fraction), Decimal(P, S) (exact seconds; a nonzero digit past S is
// out_of_range) or String (protojson's "1.5s").
func durationSetter(md protoreflect.MessageDescriptor, t *chunk.Type) (*msgSetter, error) {
	name := string(md.FullName())
	read := func(sec, ns int64) (int64, int64, *decode.Error) {
		if sec < -maxDuration || sec > maxDuration || ns <= -nanosPerSecond || ns >= nanosPerSecond ||
			sec > 0 && ns < 0 || sec < 0 && ns > 0 {
			return 0, 0, &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("duration of seconds %d and nanos %d is not a valid google.protobuf.Duration", sec, ns)}
		}
		return sec, ns, nil
	}
	if ints, ok := chunk.IntsOf(t); ok && t.Kind != chunk.KindBool {
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			sec, _, e := read(sec, ns)
			if e != nil {
				return e
			}
			if ints.AppendInt(col, sec) != nil {
				return outOfRange(sec)
			}
			return nil
		}), nil
	}
	if floats, ok := chunk.FloatsOf(t); ok {
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			sec, ns, e := read(sec, ns)
			if e != nil {
				return e
			}
			_ = floats.AppendFloat(col, float64(sec)+float64(ns)/nanosPerSecond) // within Float32's range
			return nil
		}), nil
	}
	if dec, ok := chunk.DecimalsOf(t); ok {
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			sec, ns, e := read(sec, ns)
			if e != nil {
				return e
			}
			neg := sec < 0 || ns < 0
			d.json = appendDurationDigits(d.json[:0], sec, ns)
			if err := dec.AppendUnscaled(col, neg, d.json, 9); err != nil {
				return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("duration %s does not fit %s", appendDuration(nil, sec, ns), t.Name)}
			}
			return nil
		}), nil
	}
	if t.Kind == chunk.KindString {
		return secNanos(name, func(d *Decoder, sec, ns int64, col chunk.Column) *decode.Error {
			sec, ns, e := read(sec, ns)
			if e != nil {
				return e
			}
			d.json = appendDuration(d.json[:0], sec, ns)
			chunk.AppendString(col, d.json)
			return nil
		}), nil
	}
	return nil, fmt.Errorf("message %s cannot go into %s: want an integer (seconds), float, Decimal or String column", md.FullName(), t.Name)
}

// appendDurationDigits appends the digits of |sec| * 10^9 + |ns|.
func appendDurationDigits(b []byte, sec, ns int64) []byte {
	if sec < 0 {
		sec = -sec
	}
	if ns < 0 {
		ns = -ns
	}
	if sec == 0 {
		return strconv.AppendInt(b, ns, 10)
	}
	b = strconv.AppendInt(b, sec, 10)
	s := strconv.AppendInt(nil, ns+nanosPerSecond, 10)
	return append(b, s[1:]...)
}

// appendDuration appends protojson's text of a Duration: seconds with 0,
// 3, 6 or 9 fraction digits and the suffix s.
func appendDuration(b []byte, sec, ns int64) []byte {
	if sec < 0 || ns < 0 {
		b = append(b, '-')
		sec, ns = -sec, -ns
	}
	b = strconv.AppendInt(b, sec, 10)
	b = appendFraction(b, ns)
	return append(b, 's')
}

// floatJSON appends a double as protojson writes it (encoding/json's
// form; NaN and the infinities as the strings protojson writes for
// double fields).
func floatJSON(out []byte, n float64) []byte {
	switch {
	case math.IsNaN(n):
		return append(out, `"NaN"`...)
	case math.IsInf(n, 1):
		return append(out, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(out, `"-Infinity"`...)
	}
	f := byte('f')
	if abs := math.Abs(n); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		f = 'e'
	}
	out = strconv.AppendFloat(out, n, f, -1, 64)
	if f == 'e' {
		if k := len(out); k >= 4 && out[k-4] == 'e' && out[k-3] == '-' && out[k-2] == '0' {
			out[k-2] = out[k-1]
			out = out[:k-1]
		}
	}
	return out
}
