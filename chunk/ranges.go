package chunk

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ServerRanges are the largest Date and DateTime values a ClickHouse server
// reads back as they were written. Both types are unsigned (UInt16 days,
// UInt32 seconds), but servers before the extended date tables could
// convert only up to 2106-02-06 23:59:59: a larger value is stored and
// reads back wrapped to 1970 without an error (measured on 18.16). The
// decoders and the transforms' output conversions refuse a value past the
// connected server's range as out_of_range instead.
//
// The zero value means no server is known (tests, etl validate offline):
// the narrower range every server reads back (see DefaultRanges).
type ServerRanges struct {
	// Server names the server in messages, "ClickHouse 18.16".
	Server string
	// DateMax is the largest Date, in days since 1970-01-01.
	DateMax int64
	// DateTimeMax is the largest DateTime, in seconds since the epoch.
	DateTimeMax int64
	// TZ is the server's time zone (its timezone()), the zone of a
	// DateTime or DateTime64 column without one of its own; "" is UTC.
	TZ string
}

// The ranges of the two generations of servers.
const (
	// NarrowDateMax is 2106-02-07, the last day of the old date tables.
	NarrowDateMax = 49710
	// NarrowDateTimeMax is 2106-02-06 23:59:59: from 2106-02-07 00:00:00
	// on, an 18.16 server reads a DateTime back as 1970.
	NarrowDateTimeMax = 49710*86400 - 1
	// WideDateMax is 2149-06-06, the largest UInt16 day.
	WideDateMax = 1<<16 - 1
	// WideDateTimeMax is 2106-02-07 06:28:15, the largest UInt32 second.
	WideDateTimeMax = 1<<32 - 1
)

// Servers from this version on have the extended date tables (1925..2283
// and later 1900..2299), which cover the whole of Date and DateTime. The
// tables were extended in the 21.x line (the DateTime64 "extended range"
// of 1925..2283, spring 2021, about 21.3 or 21.4; the exact release could
// not be checked here); 21.8, the first LTS release that certainly has
// them, is the threshold chosen to be safe: a server between the
// extension and 21.8 is only held to the narrower range, which it reads
// back correctly too.
const (
	wideFromMajor = 21
	wideFromMinor = 8
)

// DefaultRanges is the range of a server whose version is not known: the
// narrower one, which every supported server reads back.
func DefaultRanges() ServerRanges {
	return ServerRanges{Server: "no server version known", DateMax: NarrowDateMax, DateTimeMax: NarrowDateTimeMax}
}

// RangesFor returns the ranges of a server of version v ("18.16.1",
// "24.8.4.13"). A version that cannot be read gives DefaultRanges.
func RangesFor(v string) ServerRanges {
	major, minor, ok := parseVersion(v)
	if !ok {
		return DefaultRanges()
	}
	r := ServerRanges{Server: fmt.Sprintf("ClickHouse %d.%d", major, minor), DateMax: NarrowDateMax, DateTimeMax: NarrowDateTimeMax}
	if major > wideFromMajor || major == wideFromMajor && minor >= wideFromMinor {
		r.DateMax, r.DateTimeMax = WideDateMax, WideDateTimeMax
	}
	return r
}

// parseVersion reads the major and minor numbers of a version string.
func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}

// OrDefault returns r, or DefaultRanges when r is the zero value.
func (r ServerRanges) OrDefault() ServerRanges {
	if r.DateMax == 0 && r.DateTimeMax == 0 {
		d := DefaultRanges()
		d.TZ = r.TZ
		return d
	}
	return r
}

// DateTimeRange returns the smallest and largest instants (seconds since
// the epoch) a DateTime column of zone z reads back as written. A server
// with the extended date tables (DateTimeMax past NarrowDateTimeMax) reads
// back every UInt32 second, whatever the zone. An older one (measured on
// 18.16) reads back only instants whose local date in the column's zone is
// between 1970-01-01 and 2106-02-06, and none past NarrowDateTimeMax: for
// Asia/Tokyo, 1970-01-01 09:00:00 to 2106-02-06 23:59:59 local; for
// America/New_York, 1970-01-01 00:00:00 to 2106-02-06 18:59:59 local.
func (r ServerRanges) DateTimeRange(z *Zone) (lo, hi int64) {
	r = r.OrDefault()
	if r.DateTimeMax > NarrowDateTimeMax {
		return 0, r.DateTimeMax
	}
	return max(0, z.Instant(0)), min(r.DateTimeMax, z.Instant(NarrowDateTimeMax))
}

// Narrowest returns the ranges that hold on every server of rs: the
// smallest maximums, naming the server that set each (the first when they
// tie), and the first server time zone known (the servers of one
// deployment run in one zone). With no ranges it returns DefaultRanges.
func Narrowest(rs ...ServerRanges) ServerRanges {
	if len(rs) == 0 {
		return DefaultRanges()
	}
	out := rs[0].OrDefault()
	for _, r := range rs[1:] {
		r = r.OrDefault()
		if r.DateMax < out.DateMax || r.DateTimeMax < out.DateTimeMax {
			out.Server = r.Server
		}
		out.DateMax = min(out.DateMax, r.DateMax)
		out.DateTimeMax = min(out.DateTimeMax, r.DateTimeMax)
		if out.TZ == "" {
			out.TZ = r.TZ
		}
	}
	return out
}

// DateTimeError describes a DateTime of sec seconds past the range:
// "DateTime 2106-02-07 00:00:00 is past the server's maximum 2106-02-06
// 23:59:59 (ClickHouse 18.16)".
func (r ServerRanges) DateTimeError(sec int64) string {
	r = r.OrDefault()
	return fmt.Sprintf("DateTime %s is past the server's maximum %s (%s)",
		formatSeconds(sec), formatSeconds(r.DateTimeMax), r.Server)
}

// DateError describes a Date of days past the range: "Date 2106-02-08 is
// past the server's maximum 2106-02-07 (ClickHouse 18.16)".
func (r ServerRanges) DateError(days int64) string {
	r = r.OrDefault()
	return fmt.Sprintf("Date %s is past the server's maximum %s (%s)",
		formatDay(days), formatDay(r.DateMax), r.Server)
}

func formatSeconds(sec int64) string {
	return time.Unix(sec, 0).UTC().Format(time.DateTime)
}

// DateTimeErrorIn describes a DateTime of sec seconds outside [lo, hi],
// the range of a column of zone z on the server, in the zone's local
// time: "DateTime 2106-02-07 00:00:00 (Asia/Tokyo) is past the server's
// maximum 2106-02-06 23:59:59 (ClickHouse 18.16)".
func (r ServerRanges) DateTimeErrorIn(sec, lo, hi int64, z *Zone) string {
	r = r.OrDefault()
	f := func(s int64) string { return time.Unix(s, 0).In(z.Location()).Format(time.DateTime) }
	if sec < lo {
		return fmt.Sprintf("DateTime %s (%s) is before the server's minimum %s (%s)", f(sec), z.Name(), f(lo), r.Server)
	}
	return fmt.Sprintf("DateTime %s (%s) is past the server's maximum %s (%s)", f(sec), z.Name(), f(hi), r.Server)
}

func formatDay(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format(time.DateOnly)
}

// VersionAtLeast reports whether server version v is major.minor or
// later; a version that cannot be read (or "", unknown) counts as later.
func VersionAtLeast(v string, major, minor int) bool {
	ma, mi, ok := parseVersion(v)
	if !ok {
		return true
	}
	return ma > major || ma == major && mi >= minor
}
