package chunk

import (
	"fmt"
	"math"
	"sync"
	"time"
	_ "time/tzdata" // the zones, on a system without a tz database
)

// Zone is the time zone of a DateTime or DateTime64 column: the zone its
// texts without an offset are read in and its values are shown in. The
// nil *Zone is UTC, and so is every zone LoadZone finds to be UTC at all
// times ("UTC", "Etc/UTC"): a hot path tests z == nil and does nothing
// more for them.
type Zone struct {
	name string
	loc  *time.Location
	// fixed marks a zone whose offset has not changed since fixedFrom
	// and never will (Asia/Tokyo since 1951, Asia/Kolkata since 1945):
	// from there on its offset is fixedOff, without a lookup.
	fixed     bool
	fixedFrom int64
	fixedOff  int64
}

// zones caches LoadZone's answers by name.
var zones sync.Map

// LoadZone returns the zone of a tz database name ("" is UTC). An unknown
// name is an error.
func LoadZone(name string) (*Zone, error) {
	if name == "" || name == "UTC" {
		return nil, nil
	}
	if z, ok := zones.Load(name); ok {
		return z.(*Zone), nil
	}
	loc, err := time.LoadLocation(name)
	if off, ok := fixedName(name); ok {
		loc, err = time.FixedZone(name, off), nil
	}
	if err != nil || name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	z := &Zone{name: name, loc: loc}
	if alwaysUTC(loc) {
		z = nil
	} else {
		// The period holding 2106 has no end: the zone has no daylight
		// saving and no rule change after its start.
		t := time.Unix(WideDateTimeMax, 0).In(loc)
		if start, end := t.ZoneBounds(); end.IsZero() {
			_, off := t.Zone()
			z.fixed, z.fixedOff = true, int64(off)
			// A day past the start keeps a local time near it on the
			// general path.
			z.fixedFrom = math.MinInt64 / 2
			if !start.IsZero() {
				z.fixedFrom = start.Unix() + 86400
			}
		}
	}
	zones.Store(name, z)
	return z, nil
}

// fixedName reads the name ClickHouse gives a zone of a fixed offset with
// no tz database name, "Fixed/UTC+05:30:15", and returns the offset.
func fixedName(name string) (int, bool) {
	var sign byte
	var h, m, sec int
	if n, err := fmt.Sscanf(name, "Fixed/UTC%c%02d:%02d:%02d", &sign, &h, &m, &sec); err != nil || n != 4 ||
		len(name) != len("Fixed/UTC+05:30:15") || (sign != '+' && sign != '-') || m > 59 || sec > 59 {
		return 0, false
	}
	off := h*3600 + m*60 + sec
	if sign == '-' {
		off = -off
	}
	return off, true
}

// alwaysUTC reports a zone whose offset is 0 with no transition at all.
func alwaysUTC(loc *time.Location) bool {
	t := time.Unix(0, 0).In(loc)
	start, end := t.ZoneBounds()
	_, off := t.Zone()
	return off == 0 && start.IsZero() && end.IsZero()
}

// ZoneOf returns the zone of a DateTime or DateTime64 type: its own
// argument, else the server's (rg.TZ), else UTC. The type's zone was
// checked when the type was parsed, and the server's when the driver
// connected (it loads the zone of the server's hello, or fails).
func ZoneOf(t *Type, rg ServerRanges) *Zone {
	name := t.TZ
	if name == "" {
		name = rg.TZ
	}
	z, _ := LoadZone(name)
	return z
}

// Name is the zone's name, "UTC" for the nil *Zone.
func (z *Zone) Name() string {
	if z == nil {
		return "UTC"
	}
	return z.name
}

// Location is the zone as a *time.Location.
func (z *Zone) Location() *time.Location {
	if z == nil {
		return time.UTC
	}
	return z.loc
}

// offset is the zone's offset from UTC at the instant sec, in seconds.
func (z *Zone) offset(sec int64) int64 {
	_, off := time.Unix(sec, 0).In(z.loc).Zone()
	return int64(off)
}

// Wall returns the local time of the instant sec in the zone, as seconds
// since 1970-01-01 00:00:00 local time.
func (z *Zone) Wall(sec int64) int64 {
	if z == nil {
		return sec
	}
	if z.fixed && sec >= z.fixedFrom {
		return sec + z.fixedOff
	}
	return sec + z.offset(sec)
}

// Instant returns the instant of the local time wall (seconds since
// 1970-01-01 00:00:00 local time) in the zone, resolved as ClickHouse's
// date tables resolve it: a local time is read with the offset in effect
// before a transition when it is earlier than the clock reading at which
// the transition happens, else with the offset after it. So a time in a
// gap (the clocks jump forward over it) takes the later offset and lands
// before the transition (Europe/Berlin 2021-03-28 02:30:00 is 00:30:00
// UTC, shown as 01:30:00), and a time in an overlap (the clocks go back
// over it) is its first instant (Europe/Berlin 2021-10-31 02:30:00 is
// 00:30:00 UTC, still summer time). Measured on the server with
// toDateTime('2021-03-28 02:30:00', 'Europe/Berlin') and its overlap
// twin.
func (z *Zone) Instant(wall int64) int64 {
	if z == nil {
		return wall
	}
	if z.fixed && wall-z.fixedOff >= z.fixedFrom {
		return wall - z.fixedOff
	}
	// A first guess, within a transition's size of the answer.
	t := time.Unix(wall-z.offset(wall), 0).In(z.loc)
	_, oc := t.Zone()
	start, end := t.ZoneBounds()
	if !start.IsZero() {
		s := start.Unix()
		if op := z.offset(s - 1); wall < s+op {
			return wall - op
		}
	}
	if !end.IsZero() {
		e := end.Unix()
		if wall >= e+int64(oc) {
			return wall - z.offset(e)
		}
	}
	return wall - int64(oc)
}
