package chunk

import (
	"math"
	"time"
)

// The time family: Date and Date32 (Fixed[time.Time], midnight UTC of the
// day), DateTime (Fixed[int64], seconds since the epoch) and DateTime64(p)
// (DateTime64, ticks of 10^-p seconds). Decoders and the transform turn
// their source's dates and times into days, seconds, ticks or nanoseconds
// since the epoch and append them only through a Times, which holds each
// type's range and the connected server's (ServerRanges).

// The ranges of Date32 and DateTime64, whatever the server. DateTime64
// ends where the driver, which carries every value through nanoseconds
// since the epoch, can go no further.
const (
	// Date32Min is 1900-01-01, in days since 1970-01-01.
	Date32Min = -25567
	// Date32Max is 2299-12-31.
	Date32Max = 120529
	// DateTime64MinSeconds is 1900-01-01 00:00:00.
	DateTime64MinSeconds = -2208988800
)

// pow10 holds 10^0..10^9 (DateTime64 ticks per second by precision).
var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// DateTime64Range returns the smallest and largest ticks of DateTime64(p):
// 1900-01-01 00:00:00 and 2262-04-11 23:47:16.854775807 at precision p.
func DateTime64Range(p int) (lo, hi int64) {
	return DateTime64MinSeconds * pow10[p], math.MaxInt64 / pow10[9-p]
}

// PastError is a Date or DateTime within its type but past the connected
// server's maximum (see ServerRanges). Its message names the value, the
// maximum and the server.
type PastError struct{ msg string }

func (e *PastError) Error() string { return e.msg }

// Times appends instants to the columns of one time type. A value before
// the type's range, or past the range of Date32 or DateTime64, returns
// ErrRange; a Date or DateTime past the server's maximum returns a
// *PastError. Nothing is appended then.
//
// A Times is safe for concurrent use; the column passed in must be one
// NewColumn made for the type (for a Nullable, its Inner).
type Times interface {
	// AppendDays appends midnight of the day days after 1970-01-01: UTC
	// for a date, in the column's zone for DateTime.
	AppendDays(col Column, days int64) error
	// AppendSeconds appends the instant sec seconds after the epoch: a
	// Date or Date32 takes its day.
	AppendSeconds(col Column, sec int64) error
	// AppendNanos appends the instant ns nanoseconds after the epoch,
	// rounded down to the type's unit.
	AppendNanos(col Column, ns int64) error
	// AppendTicks appends v in the type's own unit: days for Date and
	// Date32, seconds for DateTime, 10^-p seconds for DateTime64(p).
	AppendTicks(col Column, v int64) error
}

// TimesOf returns the appender of the time type t for a server of ranges
// rg (the zero ServerRanges: the range every server reads back), and false
// when t is not a time type.
func TimesOf(t *Type, rg ServerRanges) (Times, bool) {
	rg = rg.OrDefault()
	switch t.Kind {
	case KindDate:
		return &dates{lo: 0, hi: rg.DateMax, rg: rg}, true
	case KindDate32:
		return &dates{lo: Date32Min, hi: Date32Max, wide: true}, true
	case KindDateTime:
		return newDateTimes(rg, ZoneOf(t, rg)), true
	case KindDateTime64:
		lo, hi := DateTime64Range(t.Precision)
		return &dateTime64s{p: t.Precision, lo: lo, hi: hi, z: ZoneOf(t, rg)}, true
	}
	return nil, false
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(v, d int64) int64 {
	q := v / d
	if v%d != 0 && (v < 0) != (d < 0) {
		q--
	}
	return q
}

// dates appends to Date (days [0, the server's maximum]) and Date32 (wide:
// days [Date32Min, Date32Max], past which it is ErrRange).
type dates struct {
	lo, hi int64
	wide   bool
	rg     ServerRanges
}

func (a *dates) AppendDays(col Column, days int64) error {
	if days < a.lo {
		return ErrRange
	}
	if days > a.hi {
		if a.wide {
			return ErrRange
		}
		return &PastError{a.rg.DateError(days)}
	}
	col.(*Fixed[time.Time]).Append(time.Unix(days*86400, 0).UTC())
	return nil
}

func (a *dates) AppendSeconds(col Column, sec int64) error {
	return a.AppendDays(col, floorDiv(sec, 86400))
}

func (a *dates) AppendNanos(col Column, ns int64) error {
	return a.AppendDays(col, floorDiv(ns, 86400*int64(time.Second)))
}

func (a *dates) AppendTicks(col Column, v int64) error { return a.AppendDays(col, v) }

// DateTimes is the Times of DateTime (seconds [lo, hi], the instants a
// column of its zone reads back on the server: ServerRanges.DateTimeRange),
// exported so that a hot path can call it without an interface call:
// TimesOf(DateTime) returns a *DateTimes.
type DateTimes struct {
	lo, hi int64
	rg     ServerRanges
	z      *Zone
}

// newDateTimes returns the appender of DateTime columns of zone z.
func newDateTimes(rg ServerRanges, z *Zone) *DateTimes {
	lo, hi := rg.DateTimeRange(z)
	return &DateTimes{lo: lo, hi: hi, rg: rg, z: z}
}

// Zone is the zone of the column (nil for UTC): a text without an offset
// is local time there.
func (a *DateTimes) Zone() *Zone { return a.z }

func (a *DateTimes) AppendDays(col Column, days int64) error {
	if days < 0 {
		return ErrRange
	}
	if days > WideDateTimeMax/86400+1 {
		// Past every server's range, and beyond what the message's
		// arithmetic should carry.
		return &PastError{a.rg.DateTimeError(WideDateTimeMax + 1)}
	}
	return a.AppendSeconds(col, a.z.Instant(days*86400))
}

// AppendSeconds is small enough to inline: the refusals are out of line.
func (a *DateTimes) AppendSeconds(col Column, sec int64) error {
	if uint64(sec-a.lo) <= uint64(a.hi-a.lo) { // lo >= 0: a negative sec is refused
		c := col.(*Fixed[int64])
		c.Data = append(c.Data, sec)
		return nil
	}
	return a.refuse(sec)
}

//go:noinline
func (a *DateTimes) refuse(sec int64) error {
	if sec < 0 {
		return ErrRange
	}
	if a.z == nil && sec > a.hi {
		return &PastError{a.rg.DateTimeError(sec)}
	}
	return &PastError{a.rg.DateTimeErrorIn(sec, a.lo, a.hi, a.z)}
}

func (a *DateTimes) AppendNanos(col Column, ns int64) error {
	return a.AppendSeconds(col, floorDiv(ns, int64(time.Second)))
}

func (a *DateTimes) AppendTicks(col Column, v int64) error { return a.AppendSeconds(col, v) }

// dateTime64s appends to DateTime64(p): ticks [lo, hi].
type dateTime64s struct {
	p      int
	lo, hi int64
	z      *Zone
}

func (a *dateTime64s) AppendDays(col Column, days int64) error {
	if days < a.lo/pow10[a.p]/86400 || days > a.hi/pow10[a.p]/86400 {
		return ErrRange
	}
	return a.AppendTicks(col, a.z.Instant(days*86400)*pow10[a.p])
}

func (a *dateTime64s) AppendSeconds(col Column, sec int64) error {
	if sec < a.lo/pow10[a.p] || sec > a.hi/pow10[a.p] {
		return ErrRange
	}
	return a.AppendTicks(col, sec*pow10[a.p])
}

func (a *dateTime64s) AppendNanos(col Column, ns int64) error {
	return a.AppendTicks(col, floorDiv(ns, pow10[9-a.p]))
}

func (a *dateTime64s) AppendTicks(col Column, v int64) error {
	if v < a.lo || v > a.hi {
		return ErrRange
	}
	col.(*DateTime64).Append(v)
	return nil
}

// timeKey is the Key of the time types: Date as UInt16 days, Date32 as
// Int32 days, DateTime as UInt32 seconds, DateTime64 as Int64 ticks.
func timeKey(t *Type) (Key, bool) {
	days := func(col Column, i int) uint64 {
		return uint64(floorDiv(col.(*Fixed[time.Time]).Data[i].Unix(), 86400))
	}
	switch t.Kind {
	case KindDate:
		return Key{Width: 2, Bits: days}, true
	case KindDate32:
		return Key{Width: 4, Bits: days}, true
	case KindDateTime:
		return Key{Width: 4, Bits: func(col Column, i int) uint64 { return uint64(col.(*Fixed[int64]).Data[i]) }}, true
	case KindDateTime64:
		return Key{Width: 8, Bits: func(col Column, i int) uint64 { return uint64(col.(*DateTime64).Data[i]) }}, true
	}
	return Key{}, false
}

// timeNames are the time types' names.
var timeNames = map[string]Kind{"Date": KindDate, "Date32": KindDate32, "DateTime": KindDateTime, "DateTime64": KindDateTime64}

// zeroDate is 1970-01-01, the default of Date and Date32.
var zeroDate = time.Unix(0, 0).UTC()

// timeColumn is the column of a time type: Date and Date32 hold midnight
// UTC of the day (the driver takes []time.Time), DateTime seconds since
// the epoch (the driver converts []int64 for DateTime), DateTime64 ticks.
func timeColumn(t *Type) (Column, bool) {
	switch t.Kind {
	case KindDate, KindDate32:
		return &Fixed[time.Time]{def: zeroDate}, true
	case KindDateTime:
		return &Fixed[int64]{}, true
	case KindDateTime64:
		return &DateTime64{Precision: t.Precision}, true
	}
	return nil, false
}
