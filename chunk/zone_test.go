package chunk

import (
	"testing"
	"time"
)

// wall is the local time text read as UTC seconds.
func wall(t *testing.T, s string) int64 {
	t.Helper()
	w, err := time.Parse(time.DateTime, s)
	if err != nil {
		t.Fatal(err)
	}
	return w.Unix()
}

func TestZoneInstant(t *testing.T) {
	for _, c := range []struct {
		zone, local string
		want        int64
	}{
		{"Asia/Tokyo", "2021-01-01 00:00:00", 1609426800},
		{"Asia/Kolkata", "2021-01-01 00:00:00", 1609439400},
		{"America/New_York", "2021-01-01 00:00:00", 1609477200},
		{"", "2021-01-01 00:00:00", 1609459200},
		{"Etc/UTC", "2021-01-01 00:00:00", 1609459200},
		// Gaps: the later offset, an instant before the transition
		// (measured: toUnixTimestamp(toDateTime('2021-03-28 02:30:00',
		// 'Europe/Berlin')) = 1616891400 on 18.16).
		{"Europe/Berlin", "2021-03-28 01:59:59", 1616893199},
		{"Europe/Berlin", "2021-03-28 02:00:00", 1616889600},
		{"Europe/Berlin", "2021-03-28 02:30:00", 1616891400},
		{"Europe/Berlin", "2021-03-28 03:00:00", 1616893200},
		{"America/New_York", "2021-03-14 02:30:00", 1615703400},
		{"America/New_York", "2021-03-14 03:00:00", 1615705200},
		// Overlaps: the first instant (summer time), until the clock
		// reading of the transition.
		{"Europe/Berlin", "2021-10-31 02:30:00", 1635640200},
		{"Europe/Berlin", "2021-10-31 02:59:59", 1635641999},
		{"Europe/Berlin", "2021-10-31 03:00:00", 1635645600},
		{"America/New_York", "2021-11-07 01:30:00", 1636263000},
		{"America/New_York", "2021-11-07 02:00:00", 1636268400},
		// Far from any transition, and past the zone's last rule change.
		{"America/New_York", "2106-02-06 18:59:59", 4294943999},
		{"Asia/Tokyo", "2106-02-06 23:59:59", 4294911599},
		{"Asia/Tokyo", "1970-01-01 09:00:00", 0},
	} {
		z, err := LoadZone(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		w := wall(t, c.local)
		if got := z.Instant(w); got != c.want {
			t.Errorf("%s %s: instant %d (%s UTC), want %d (%s UTC)", c.zone, c.local, got,
				time.Unix(got, 0).UTC().Format(time.DateTime), c.want, time.Unix(c.want, 0).UTC().Format(time.DateTime))
		}
		// Every local time outside a gap reads back as written.
		if back := z.Wall(c.want); back != w && c.local != "2021-03-28 02:00:00" && c.local != "2021-03-28 02:30:00" &&
			c.local != "2021-03-14 02:30:00" {
			t.Errorf("%s %s: wall time of the instant is %s", c.zone, c.local, time.Unix(back, 0).UTC().Format(time.DateTime))
		}
	}
}

func TestLoadZone(t *testing.T) {
	for _, name := range []string{"", "UTC", "Etc/UTC"} {
		if z, err := LoadZone(name); err != nil || z != nil {
			t.Errorf("LoadZone(%q) = %v, %v; want the nil zone (UTC)", name, z, err)
		}
	}
	if _, err := LoadZone("Mars/Olympus"); err == nil {
		t.Error("LoadZone(Mars/Olympus): no error")
	}
	if _, err := ParseType("DateTime('Mars/Olympus')"); err == nil {
		t.Error("ParseType(DateTime('Mars/Olympus')): no error")
	}
	if _, err := ParseType("DateTime64(3, 'Mars/Olympus')"); err == nil {
		t.Error("ParseType(DateTime64(3, 'Mars/Olympus')): no error")
	}
	// ClickHouse's name of a fixed offset without a tz database name.
	if z, err := LoadZone("Fixed/UTC+05:30:15"); err != nil || z.Instant(0) != -(5*3600+30*60+15) {
		t.Errorf("LoadZone(Fixed/UTC+05:30:15) = %v, %v", z, err)
	}
	if z, err := LoadZone("Fixed/UTC-01:00:00"); err != nil || z.Wall(0) != -3600 {
		t.Errorf("LoadZone(Fixed/UTC-01:00:00) = %v, %v", z, err)
	}
	z, err := LoadZone("Asia/Tokyo")
	if err != nil || z.Name() != "Asia/Tokyo" || z.Location().String() != "Asia/Tokyo" {
		t.Errorf("LoadZone(Asia/Tokyo) = %v, %v", z, err)
	}
}

// TestDateTimeRangeZones: on a server with the old date tables a column
// reads back only the instants whose local date is in 1970-01-01..
// 2106-02-06 (measured on 18.16); a current server reads back every
// UInt32 second whatever the zone.
func TestDateTimeRangeZones(t *testing.T) {
	narrow := RangesFor("18.16.1")
	wide := RangesFor("24.8.1")
	for _, c := range []struct {
		zone   string
		rg     ServerRanges
		lo, hi int64
	}{
		{"", narrow, 0, NarrowDateTimeMax},
		{"Asia/Tokyo", narrow, 0, NarrowDateTimeMax - 9*3600},
		{"Asia/Kolkata", narrow, 0, NarrowDateTimeMax - 5*3600 - 1800},
		{"America/New_York", narrow, 5 * 3600, NarrowDateTimeMax},
		{"Asia/Tokyo", wide, 0, WideDateTimeMax},
		{"America/New_York", wide, 0, WideDateTimeMax},
	} {
		z, _ := LoadZone(c.zone)
		if lo, hi := c.rg.DateTimeRange(z); lo != c.lo || hi != c.hi {
			t.Errorf("%s on %s: [%d, %d], want [%d, %d]", c.zone, c.rg.Server, lo, hi, c.lo, c.hi)
		}
	}
	// The server's zone is the zone of a column without one.
	ty, _ := ParseType("DateTime")
	ts, _ := TimesOf(ty, ServerRanges{TZ: "Asia/Tokyo"})
	col, _ := NewColumn(ty)
	if err := ts.AppendSeconds(col, NarrowDateTimeMax-9*3600+1); err == nil {
		t.Error("DateTime in a server zone of Asia/Tokyo: 2106-02-07 00:00:00 local accepted")
	} else if want := "DateTime 2106-02-07 00:00:00 (Asia/Tokyo) is past the server's maximum 2106-02-06 23:59:59 (no server version known)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if err := ts.AppendDays(col, 18628); err != nil || col.(*Fixed[int64]).Data[0] != 1609426800 {
		t.Errorf("AppendDays(2021-01-01) in Tokyo: %v %v, want local midnight", err, col.(*Fixed[int64]).Data)
	}
}

// TestZoneRoundTrip: for instants from 1900 to 2110, the local time of an
// instant reads back as that instant, or in an overlap as the earlier
// instant with the same local time; zones with a fixed offset (the fast
// path) and with daylight saving alike.
func TestZoneRoundTrip(t *testing.T) {
	for _, name := range []string{"Asia/Tokyo", "Asia/Kolkata", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Tehran"} {
		z, err := LoadZone(name)
		if err != nil {
			t.Fatal(err)
		}
		const lo, hi = -2208988800, 4417977600
		for x := int64(lo); x < hi; x += 86400*17 + 3607 {
			w := z.Wall(x)
			back := z.Instant(w)
			if back != x && (back > x || z.Wall(back) != w) {
				t.Fatalf("%s: instant %d (local %s) reads back as %d (local %s)", name, x,
					time.Unix(w, 0).UTC().Format(time.DateTime), back, time.Unix(z.Wall(back), 0).UTC().Format(time.DateTime))
			}
			if want := x + int64(offsetOf(z, x)); w != want {
				t.Fatalf("%s: Wall(%d) = %d, want %d", name, x, w, want)
			}
		}
	}
}

func offsetOf(z *Zone, sec int64) int {
	_, off := time.Unix(sec, 0).In(z.Location()).Zone()
	return off
}
