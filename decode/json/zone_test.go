package json

import (
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestServerZone: a DateTime or DateTime64 column without a zone reads a
// text without an offset in the server's zone (Options.Ranges.TZ), on the
// one-pass path and the general one; a column with a zone keeps its own,
// and offsets and numbers are instants.
func TestServerZone(t *testing.T) {
	s := &chunk.Schema{Names: []string{"dt", "tk", "d64"}}
	for _, typ := range []string{"DateTime", "DateTime('Asia/Tokyo')", "DateTime64(3)"} {
		ty, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		s.Types = append(s.Types, ty)
	}
	rg := chunk.RangesFor("24.8.1")
	rg.TZ = "America/New_York"
	for _, c := range []struct {
		dt, tk, d64 string
		want        [3]string
	}{
		{`"2021-01-01 00:00:00"`, `"2021-01-01 00:00:00"`, `"2021-01-01 00:00:00.5"`,
			[3]string{"1609477200", "1609426800", "2021-01-01 05:00:00.5 +0000 UTC"}},
		{`"2021-03-14 02:30:00"`, `"2021-03-14 02:30:00"`, `"2021-11-07 01:30:00"`,
			[3]string{"1615703400", "1615656600", "2021-11-07 05:30:00 +0000 UTC"}},
		{`"2021-01-01T00:00:00Z"`, `"2021-01-01T00:00:00+01:00"`, `1609459200`,
			[3]string{"1609459200", "1609455600", "2021-01-01 00:00:00 +0000 UTC"}},
		{`1609459200`, `"1609459200"`, `"2021-01-01"`,
			[3]string{"1609459200", "1609459200", "2021-01-01 05:00:00 +0000 UTC"}},
	} {
		for _, noFast := range []bool{false, true} {
			d, err := New(s, Options{Ranges: rg})
			if err != nil {
				t.Fatal(err)
			}
			d.noFast = noFast
			ch, _ := chunk.New(s)
			rec := `{"dt":` + c.dt + `,"tk":` + c.tk + `,"d64":` + c.d64 + `}`
			if _, err := d.Decode([]byte(rec), ch); err != nil {
				t.Fatalf("%s: %v", rec, err)
			}
			for i, col := range ch.Cols {
				if got := render(col, 0); got != c.want[i] {
					t.Errorf("%s (noFast %v): %s = %s, want %s", rec, noFast, s.Names[i], got, c.want[i])
				}
			}
		}
	}
}
