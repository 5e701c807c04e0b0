package decode

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// TestParseTimeAgainstTime compares ParseTime with the standard library on
// random instants in the layouts it takes (a date alone, date and time
// with a T or a space, fractions, Z and numeric offsets), and checks that
// a byte that is not a digit in place of any digit is refused.
func TestParseTimeAgainstTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	layouts := []string{"2006-01-02", "2006-01-02T15:04:05Z", "2006-01-02 15:04:05", "2006-01-02T15:04:05.999999999Z07:00",
		"2006-01-02T15:04:05-07:00", "2006-01-02T15:04:05-0700", "2006-01-02t15:04:05.000z"}
	for range 20000 {
		sec := rng.Int64N(253402300800) // years 1970 to 9999
		loc := time.FixedZone("", (rng.IntN(47)-23)*1800)
		tm := time.Unix(sec, rng.Int64N(1e9)).In(loc)
		for _, l := range layouts {
			text := tm.Format(l)
			want, err := time.Parse(l, text)
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			if l == "2006-01-02 15:04:05" || l == "2006-01-02" || l == "2006-01-02t15:04:05.000z" {
				// No zone in the text: ParseTime reads UTC.
				want = time.Date(want.Year(), want.Month(), want.Day(), want.Hour(), want.Minute(), want.Second(), 0, time.UTC)
			}
			got, ok := ParseTime([]byte(text))
			if !ok || got != want.Unix() {
				t.Fatalf("ParseTime(%q) = %d, %v; want %d", text, got, ok, want.Unix())
			}
			for i := range len(text) {
				if text[i] < '0' || text[i] > '9' {
					continue
				}
				for _, c := range []byte{'/', ':', 'a', ' ', 0xff} {
					b := []byte(text)
					b[i] = c
					if _, ok := ParseTime(b); ok {
						t.Fatalf("ParseTime(%q) took byte %d %q", b, i, c)
					}
				}
			}
		}
	}
}

func TestParseTimeZoned(t *testing.T) {
	tokyo, err := chunk.LoadZone("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in     string
		zoned  bool
		sec    int64 // as UTC
		inZone int64 // in Asia/Tokyo
	}{
		{"2021-01-01", false, 1609459200, 1609426800},
		{"2021-01-01 00:00:00", false, 1609459200, 1609426800},
		{"2021-01-01T00:00:00.5", false, 1609459200, 1609426800},
		{"2021-01-01T00:00:00Z", true, 1609459200, 1609459200},
		{"2021-01-01t00:00:00z", true, 1609459200, 1609459200},
		{"2021-01-01T00:00:00+01:00", true, 1609455600, 1609455600},
		{"2021-01-01 09:00:00+0900", true, 1609459200, 1609459200},
		{"2021-01-01T00:00:00-05", true, 1609477200, 1609477200},
	} {
		sec, zoned, ok := ParseTimeZoned([]byte(c.in))
		if !ok || sec != c.sec || zoned != c.zoned {
			t.Errorf("ParseTimeZoned(%q) = %d %v %v, want %d %v", c.in, sec, zoned, ok, c.sec, c.zoned)
		}
		if got, ok := ParseTimeIn([]byte(c.in), tokyo); !ok || got != c.inZone {
			t.Errorf("ParseTimeIn(%q, Asia/Tokyo) = %d %v, want %d", c.in, got, ok, c.inZone)
		}
		if got, ok := ParseTimeIn([]byte(c.in), nil); !ok || got != c.sec {
			t.Errorf("ParseTimeIn(%q, UTC) = %d %v, want %d", c.in, got, ok, c.sec)
		}
	}
}

func TestParseCompactDate(t *testing.T) {
	for in, want := range map[string]int64{"19700101": 0, "20210101": 18628, "21060207": 49710, "20200229": 18321, "19000101": -25567} {
		if got, ok := ParseCompactDate([]byte(in)); !ok || got != want {
			t.Errorf("ParseCompactDate(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"20210230", "20211301", "20210100", "2021010", "202101011", "2021-1-1", "1609459200", "2021010a", ""} {
		if got, ok := ParseCompactDate([]byte(in)); ok {
			t.Errorf("ParseCompactDate(%q) = %d, want refused", in, got)
		}
	}
}

func TestLayoutZoned(t *testing.T) {
	for layout, want := range map[string]bool{
		time.RFC3339: true, "2006-01-02 15:04:05 -0700": true, "02/01/2006 15:04 Z07:00": true,
		"02/01/2006 15:04": false, time.DateTime: false, time.DateOnly: false,
	} {
		if got := LayoutZoned(layout); got != want {
			t.Errorf("LayoutZoned(%q) = %v, want %v", layout, got, want)
		}
	}
}
