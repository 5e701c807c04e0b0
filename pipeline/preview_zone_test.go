package pipeline

import (
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// TestDisplayTimeZones: the preview shows a DateTime or DateTime64 in its
// column's zone, the server's for a column without one, as the server's
// toString does.
func TestDisplayTimeZones(t *testing.T) {
	const sec = 1609459200 // 2021-01-01 00:00:00 UTC
	for _, c := range []struct {
		typ, tz string
		v       any
		want    string
	}{
		{"DateTime", "", int64(sec), "2021-01-01 00:00:00"},
		{"DateTime", "Etc/UTC", int64(sec), "2021-01-01 00:00:00"},
		{"DateTime", "Asia/Tokyo", int64(sec), "2021-01-01 09:00:00"},
		{"DateTime('America/New_York')", "Asia/Tokyo", int64(sec), "2020-12-31 19:00:00"},
		{"Nullable(DateTime('Asia/Kolkata'))", "", int64(sec), "2021-01-01 05:30:00"},
		{"DateTime64(3, 'Asia/Tokyo')", "", time.Unix(sec, 5e8), "2021-01-01 09:00:00.5"},
		{"DateTime64(3)", "America/New_York", time.Unix(sec, 0), "2020-12-31 19:00:00"},
		{"Date", "Asia/Tokyo", time.Unix(sec, 0).UTC(), "2021-01-01"},
	} {
		ty, err := chunk.ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := display(ty, c.v, c.tz); got != c.want {
			t.Errorf("display(%s, %v) with server zone %q = %v, want %s", c.typ, c.v, c.tz, got, c.want)
		}
	}
}
