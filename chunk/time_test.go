package chunk

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestTimesRanges: each time type takes its first and last instant, and
// refuses the ones just outside: before the type's range (ErrRange), past
// the server's maximum for Date and DateTime (*PastError naming the
// server), appending nothing then.
func TestTimesRanges(t *testing.T) {
	narrow := RangesFor("18.16.1")
	wide := RangesFor("24.8.1")
	dt64lo, dt64hi := DateTime64Range(3)
	for _, tc := range []struct {
		typ    string
		rg     ServerRanges
		unit   string // the unit of lo and hi: days, seconds or ticks
		lo, hi int64
		past   bool // past hi is the server's maximum, not the type's
		want   []string
	}{
		{"Date", narrow, "days", 0, NarrowDateMax, true, []string{"1970-01-01", "2106-02-07"}},
		{"Date", wide, "days", 0, WideDateMax, true, []string{"1970-01-01", "2149-06-06"}},
		{"Date32", narrow, "days", Date32Min, Date32Max, false, []string{"1900-01-01", "2299-12-31"}},
		{"DateTime", narrow, "seconds", 0, NarrowDateTimeMax, true, []string{"1970-01-01 00:00:00", "2106-02-06 23:59:59"}},
		{"DateTime", wide, "seconds", 0, WideDateTimeMax, true, []string{"1970-01-01 00:00:00", "2106-02-07 06:28:15"}},
		{"DateTime64(3)", narrow, "ticks", dt64lo, dt64hi, false, []string{"1900-01-01 00:00:00.000000000", "2262-04-11 23:47:16.854000000"}},
	} {
		t.Run(tc.typ+"/"+tc.rg.Server, func(t *testing.T) {
			typ, err := ParseType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			ts, ok := TimesOf(typ, tc.rg)
			if !ok {
				t.Fatalf("TimesOf(%s) = false", tc.typ)
			}
			col, _ := NewColumn(typ)
			add := ts.AppendTicks
			for i, v := range []int64{tc.lo, tc.hi} {
				if err := add(col, v); err != nil {
					t.Fatalf("%s %d refused: %v", tc.unit, v, err)
				}
				if got := showTime(tc.typ, col.Row(i)); got != tc.want[i] {
					t.Errorf("row %d = %s, want %s", i, got, tc.want[i])
				}
			}
			if err := add(col, tc.lo-1); !errors.Is(err, ErrRange) {
				t.Errorf("%d %s: err %v, want ErrRange", tc.lo-1, tc.unit, err)
			}
			err = add(col, tc.hi+1)
			var past *PastError
			if tc.past {
				if !errors.As(err, &past) || !strings.Contains(err.Error(), tc.rg.Server) {
					t.Errorf("%d %s: err %v, want a PastError naming %s", tc.hi+1, tc.unit, err, tc.rg.Server)
				}
			} else if !errors.Is(err, ErrRange) {
				t.Errorf("%d %s: err %v, want ErrRange", tc.hi+1, tc.unit, err)
			}
			if col.Len() != 2 {
				t.Errorf("%d rows, want 2", col.Len())
			}
		})
	}
}

// TestTimesUnits: days, seconds and nanoseconds land on the same instant,
// rounded down to the type's unit (before the epoch too).
func TestTimesUnits(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		add  func(Times, Column) error
		want string
	}{
		{"Date32", func(ts Times, c Column) error { return ts.AppendSeconds(c, -1) }, "1969-12-31"},
		{"Date32", func(ts Times, c Column) error { return ts.AppendNanos(c, -1) }, "1969-12-31"},
		{"Date", func(ts Times, c Column) error { return ts.AppendSeconds(c, 86400*2-1) }, "1970-01-02"},
		{"DateTime", func(ts Times, c Column) error { return ts.AppendDays(c, 1) }, "1970-01-02 00:00:00"},
		{"DateTime", func(ts Times, c Column) error { return ts.AppendNanos(c, 1_999_999_999) }, "1970-01-01 00:00:01"},
		{"DateTime64(3)", func(ts Times, c Column) error { return ts.AppendNanos(c, -1) }, "1969-12-31 23:59:59.999000000"},
		{"DateTime64(3)", func(ts Times, c Column) error { return ts.AppendSeconds(c, -1) }, "1969-12-31 23:59:59.000000000"},
		{"DateTime64(6)", func(ts Times, c Column) error { return ts.AppendDays(c, -25567) }, "1900-01-01 00:00:00.000000000"},
	} {
		typ, _ := ParseType(tc.typ)
		ts, _ := TimesOf(typ, ServerRanges{})
		col, _ := NewColumn(typ)
		if err := tc.add(ts, col); err != nil {
			t.Errorf("%s: %v", tc.typ, err)
			continue
		}
		if got := showTime(tc.typ, col.Row(0)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.typ, got, tc.want)
		}
	}
	// Far past every range: refused, not wrapped.
	for _, typ := range []string{"Date", "DateTime", "DateTime64(9)"} {
		ty, _ := ParseType(typ)
		ts, _ := TimesOf(ty, ServerRanges{})
		col, _ := NewColumn(ty)
		for _, days := range []int64{math.MaxInt64, math.MinInt64} {
			if err := ts.AppendDays(col, days); err == nil {
				t.Errorf("%s: day %d accepted as %v", typ, days, col.Row(col.Len()-1))
			}
		}
	}
	if _, ok := TimesOf(&Type{Kind: KindString}, ServerRanges{}); ok {
		t.Error("TimesOf(String) = true")
	}
}

// showTime formats a Date, Date32, DateTime or DateTime64 row of type typ.
func showTime(typ string, v any) string {
	switch x := v.(type) {
	case time.Time:
		if strings.HasPrefix(typ, "DateTime64") {
			return x.UTC().Format("2006-01-02 15:04:05.000000000")
		}
		return x.UTC().Format(time.DateOnly)
	case int64:
		return time.Unix(x, 0).UTC().Format(time.DateTime)
	}
	return fmt.Sprint(v)
}
