package decode

import (
	"time"

	"github.com/etl-project/etl/chunk"
)

// Thresholds of the epoch-number unit heuristic: a number above 1e11 is
// taken as milliseconds, above 1e14 as microseconds, above 1e17 as
// nanoseconds, otherwise as seconds. 1e11 seconds is in the year 5138, far
// beyond the DateTime range, so a seconds value is never misread; a
// milliseconds value before 1973-03-03 (below 1e11) is read as seconds and
// then, unless it is within the first 50 days of 1970, rejected as out of
// range.
const (
	epochMillis = 1e11
	epochMicros = 1e14
	epochNanos  = 1e17
)

// EpochUnit returns the divisor that turns an epoch number into seconds.
func EpochUnit(v float64) float64 {
	switch {
	case v > epochNanos:
		return 1e9
	case v > epochMicros:
		return 1e6
	case v > epochMillis:
		return 1e3
	}
	return 1
}

// EpochSeconds converts an epoch number (seconds or, by the heuristic
// above, a finer unit) to seconds, flooring fractions. ok is false for a
// negative number or one beyond 2^62 seconds.
func EpochSeconds(n *Number) (sec int64, ok bool) {
	mag, integral, overflow := n.magnitude()
	if n.Neg && (mag != 0 || !integral) {
		return 0, false
	}
	if integral {
		if overflow {
			return 0, false
		}
		return int64(mag / uint64(EpochUnit(float64(mag)))), true
	}
	f, fok := n.Float(64)
	if !fok {
		return 0, false
	}
	s := f / EpochUnit(f)
	if s >= 1<<62 {
		return 0, false
	}
	return int64(s), true
}

// ParseTime parses a date or date-time and returns seconds since the
// epoch. Accepted forms:
//
//	2026-11-29
//	2026-11-29T10:00:00           (also with ' ' or 't' as the separator)
//	2026-11-29T10:00:00.123456789 (any number of fraction digits, dropped)
//	followed optionally by Z, z, +hh:mm, -hh:mm, +hhmm or +hh.
//
// A time without a zone is UTC. ok is false for any other text, or for a
// month, day, hour, minute or second out of its range.
func ParseTime(b []byte) (sec int64, ok bool) {
	sec, _, ok = ParseTimeZoned(b)
	return sec, ok
}

// ParseTimeIn is ParseTime for a column of zone z: a text without an
// offset is local time in z (chunk.Zone.Instant), a text with one is the
// instant it names.
func ParseTimeIn(b []byte, z *chunk.Zone) (sec int64, ok bool) {
	sec, zoned, ok := ParseTimeZoned(b)
	if ok && !zoned && z != nil {
		sec = z.Instant(sec)
	}
	return sec, ok
}

// ParseCompactDate parses a date written YYYYMMDD (exactly eight digits,
// as ClickHouse reads a Date string of eight digits) and returns its days
// since 1970-01-01.
func ParseCompactDate(b []byte) (days int64, ok bool) {
	if len(b) != 8 {
		return 0, false
	}
	y, ok1 := digits4(b[0], b[1], b[2], b[3])
	mo, ok2 := digits2(b[4], b[5])
	d, ok3 := digits2(b[6], b[7])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, false
	}
	return daysFromCivil(y, mo, d), true
}

// ParseTimeZoned is ParseTime, and reports whether the text carried its
// own offset (Z or +hh:mm): without one, sec is the local time read as
// UTC, which the column's zone turns into an instant.
func ParseTimeZoned(b []byte) (sec int64, zoned, ok bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false, false
	}
	y, ok1 := digits4(b[0], b[1], b[2], b[3])
	mo, ok2 := digits2(b[5], b[6])
	d, ok3 := digits2(b[8], b[9])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, false, false
	}
	sec = daysFromCivil(y, mo, d) * 86400
	b = b[10:]
	if len(b) == 0 {
		return sec, false, true
	}
	if len(b) < 9 || (b[0] != 'T' && b[0] != 't' && b[0] != ' ') || b[3] != ':' || b[6] != ':' {
		return 0, false, false
	}
	h, ok1 := digits2(b[1], b[2])
	mi, ok2 := digits2(b[4], b[5])
	s, ok3 := digits2(b[7], b[8])
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || s > 59 {
		return 0, false, false
	}
	sec += int64(h*3600 + mi*60 + s)
	b = b[9:]
	if len(b) > 0 && b[0] == '.' {
		i := 1
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == 1 {
			return 0, false, false
		}
		b = b[i:]
	}
	switch {
	case len(b) == 0:
		return sec, false, true
	case len(b) == 1 && (b[0] == 'Z' || b[0] == 'z'):
		return sec, true, true
	case b[0] == '+' || b[0] == '-':
		var oh, om int
		var okh, okm bool
		switch len(b) {
		case 3: // +hh
			oh, okh = digits2(b[1], b[2])
			okm = true
		case 5: // +hhmm
			oh, okh = digits2(b[1], b[2])
			om, okm = digits2(b[3], b[4])
		case 6: // +hh:mm
			if b[3] != ':' {
				return 0, false, false
			}
			oh, okh = digits2(b[1], b[2])
			om, okm = digits2(b[4], b[5])
		}
		if !okh || !okm || oh > 23 || om > 59 {
			return 0, false, false
		}
		off := int64(oh*3600 + om*60)
		if b[0] == '+' {
			off = -off
		}
		return sec + off, true, true
	}
	return 0, false, false
}

// digits2 and digits4 parse two and four ASCII digits, without a loop.
func digits2(b0, b1 byte) (int, bool) {
	d0, d1 := b0-'0', b1-'0'
	return int(d0)*10 + int(d1), d0 <= 9 && d1 <= 9
}

func digits4(b0, b1, b2, b3 byte) (int, bool) {
	h, ok1 := digits2(b0, b1)
	l, ok2 := digits2(b2, b3)
	return h*100 + l, ok1 && ok2
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (H. Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// LayoutZoned reports whether the Go time layout writes an offset or a
// zone: a text it parses is then an instant, else a local time that the
// column's zone turns into one.
func LayoutZoned(layout string) bool {
	ref := time.Date(2001, 2, 3, 4, 5, 6, 0, time.FixedZone("", 4980))
	t, err := time.Parse(layout, ref.Format(layout))
	if err != nil {
		return false
	}
	_, off := t.Zone()
	return off == 4980
}
