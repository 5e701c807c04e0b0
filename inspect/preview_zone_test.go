package inspect

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
		{"DateTime64(3, 'Asia/Tokyo')", "", time.Unix(sec, 5e8), "2021-01-01 09:00:00.500"},
		{"DateTime64(3)", "America/New_York", time.Unix(sec, 0), "2020-12-31 19:00:00.000"},
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

// TestDisplayDecimals: the preview shows a Decimal as the server's
// toString does: exactly its scale's fraction digits, no leading zeros,
// zero without a sign.
func TestDisplayDecimals(t *testing.T) {
	for _, c := range []struct{ typ, v, want string }{
		{"Decimal(12, 2)", "1.5", "1.50"},
		{"Decimal(12, 2)", "19.990", "19.99"},
		{"Decimal(12, 2)", "00019.9", "19.90"},
		{"Decimal(12, 2)", "100", "100.00"},
		{"Decimal(12, 2)", "-0", "0.00"},
		{"Decimal(12, 2)", "-0.10", "-0.10"},
		{"Nullable(Decimal(12, 2))", "7", "7.00"},
		{"Decimal(9, 0)", "42.000", "42"},
		{"Decimal(9, 0)", "-000", "0"},
		{"Decimal(38, 10)", "0.0000000001", "0.0000000001"},
	} {
		ty, err := chunk.ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := display(ty, c.v, ""); got != c.want {
			t.Errorf("display(%s, %q) = %v, want %s", c.typ, c.v, got, c.want)
		}
	}
}
