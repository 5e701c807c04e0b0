package chunk

import (
	"testing"
	"time"
)

func TestRangesFor(t *testing.T) {
	for _, c := range []struct {
		version  string
		wide     bool
		server   string
		fallback bool
	}{
		{"18.16.1", false, "ClickHouse 18.16", false},
		{"20.8.5.45", false, "ClickHouse 20.8", false},
		{"21.7.11", false, "ClickHouse 21.7", false},
		{"21.8.15.7", true, "ClickHouse 21.8", false},
		{"24.8.4.13", true, "ClickHouse 24.8", false},
		{"26.1", true, "ClickHouse 26.1", false},
		{"", false, "", true},
		{"unknown", false, "", true},
		{"x.1", false, "", true},
	} {
		r := RangesFor(c.version)
		if c.fallback {
			if r != DefaultRanges() {
				t.Errorf("RangesFor(%q) = %+v, want the default", c.version, r)
			}
			continue
		}
		wantDate, wantDT := int64(NarrowDateMax), int64(NarrowDateTimeMax)
		if c.wide {
			wantDate, wantDT = WideDateMax, WideDateTimeMax
		}
		if r.DateMax != wantDate || r.DateTimeMax != wantDT || r.Server != c.server {
			t.Errorf("RangesFor(%q) = %+v, want %d %d %q", c.version, r, wantDate, wantDT, c.server)
		}
	}
	// The narrow edges are the ones 18.16 reads back.
	if got := time.Unix(NarrowDateMax*86400, 0).UTC().Format(time.DateOnly); got != "2106-02-07" {
		t.Errorf("NarrowDateMax is %s", got)
	}
	if got := time.Unix(NarrowDateTimeMax, 0).UTC().Format(time.DateTime); got != "2106-02-06 23:59:59" {
		t.Errorf("NarrowDateTimeMax is %s", got)
	}
	if got := time.Unix(WideDateMax*86400, 0).UTC().Format(time.DateOnly); got != "2149-06-06" {
		t.Errorf("WideDateMax is %s", got)
	}
}

func TestNarrowest(t *testing.T) {
	old, cur := RangesFor("18.16.1"), RangesFor("24.8.1")
	if got := Narrowest(cur, old, cur); got != old {
		t.Errorf("Narrowest = %+v, want %+v", got, old)
	}
	if got := Narrowest(cur, cur); got != cur {
		t.Errorf("Narrowest = %+v, want %+v", got, cur)
	}
	if got := Narrowest(); got != DefaultRanges() {
		t.Errorf("Narrowest() = %+v", got)
	}
	if got := (ServerRanges{}).OrDefault(); got != DefaultRanges() {
		t.Errorf("zero OrDefault = %+v", got)
	}
}

func TestRangeMessages(t *testing.T) {
	r := RangesFor("18.16.1")
	if got, want := r.DateTimeError(NarrowDateTimeMax+1),
		"DateTime 2106-02-07 00:00:00 is past the server's maximum 2106-02-06 23:59:59 (ClickHouse 18.16)"; got != want {
		t.Errorf("DateTimeError = %q, want %q", got, want)
	}
	if got, want := r.DateError(NarrowDateMax+1),
		"Date 2106-02-08 is past the server's maximum 2106-02-07 (ClickHouse 18.16)"; got != want {
		t.Errorf("DateError = %q, want %q", got, want)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"18.16.1", false}, {"21.8", true}, {"21.7.9", false}, {"24.3", true}, {"", true}, {"x.y", true}, {"22", true}} {
		if got := VersionAtLeast(c.v, 21, 8); got != c.want {
			t.Errorf("VersionAtLeast(%q, 21, 8) = %v, want %v", c.v, got, c.want)
		}
	}
}
