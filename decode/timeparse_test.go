package decode

import (
	"math/rand/v2"
	"testing"
	"time"
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
