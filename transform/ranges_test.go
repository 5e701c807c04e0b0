package transform

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
)

// TestOutputDateRangesFollowServer: computed values into Date and DateTime
// columns are held to the output server's range (the narrowest of every
// output's), the narrower range when none is known.
func TestOutputDateRangesFollowServer(t *testing.T) {
	in := mkSchema(t, "i Int64", "ts DateTime")
	for _, c := range []struct {
		name   string
		ranges []chunk.ServerRanges
		dtMax  int64
		dMax   int64
		server string
	}{
		{"none", []chunk.ServerRanges{{}}, chunk.NarrowDateTimeMax, chunk.NarrowDateMax, "no server version known"},
		{"18.16", []chunk.ServerRanges{chunk.RangesFor("18.16.1")}, chunk.NarrowDateTimeMax, chunk.NarrowDateMax, "ClickHouse 18.16"},
		{"24.8", []chunk.ServerRanges{chunk.RangesFor("24.8.1")}, chunk.WideDateTimeMax, chunk.WideDateMax, "ClickHouse 24.8"},
		{"mixed", []chunk.ServerRanges{chunk.RangesFor("24.8.1"), chunk.RangesFor("18.16.1")}, chunk.NarrowDateTimeMax, chunk.NarrowDateMax, "ClickHouse 18.16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outs []Output
			for i, r := range c.ranges {
				o := output(t, string(rune('a'+i)), "dti DateTime <- i", "d Date <- ts")
				o.Ranges = r
				outs = append(outs, o)
			}
			ch, err := Compile(nil, in, outs)
			if err != nil {
				t.Fatal(err)
			}
			lastDay := time.Unix(c.dMax*86400+86399, 0).UTC()
			for _, x := range []struct {
				row map[string]any
				msg string // "" accepted
			}{
				{map[string]any{"i": c.dtMax, "ts": lastDay}, ""},
				{map[string]any{"i": c.dtMax + 1, "ts": lastDay}, "DateTime " + time.Unix(c.dtMax+1, 0).UTC().Format(time.DateTime) + " is past the server's maximum"},
				{map[string]any{"i": 0, "ts": lastDay.Add(time.Second)}, "Date " + lastDay.Add(time.Second).Format(time.DateOnly) + " is past the server's maximum"},
			} {
				st := mkChunk(t, in)
				addRow(t, st, x.row)
				_, err := ch.Run(st, 0, newEmitter(t, outs))
				if x.msg == "" {
					if err != nil {
						t.Errorf("%v: %v", x.row, err)
					}
					continue
				}
				var te *Error
				if !errors.As(err, &te) || te.Reason != ReasonOutOfRange || !strings.Contains(err.Error(), x.msg) || !strings.Contains(err.Error(), "("+c.server+")") {
					t.Errorf("%v: got %v, want out_of_range %q (%s)", x.row, err, x.msg, c.server)
				}
			}
		})
	}
}

// TestOutputDateTimeZones: a DateTime column with a zone holds computed
// values to the range the server reads back in that zone.
func TestOutputDateTimeZones(t *testing.T) {
	in := mkSchema(t, "i Int64", "s String")
	o := output(t, "a", "tk DateTime('Asia/Tokyo') <- i")
	o.Ranges = chunk.RangesFor("18.16.1")
	outs := []Output{o}
	ch, err := Compile(nil, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(chunk.NarrowDateTimeMax - 9*3600) // 2106-02-06 23:59:59 in Tokyo
	for _, x := range []struct {
		row map[string]any
		msg string // "" accepted
	}{
		{map[string]any{"i": last, "s": ""}, ""},
		{map[string]any{"i": 0, "s": ""}, ""},
		{map[string]any{"i": last + 1, "s": ""}, "DateTime 2106-02-07 00:00:00 (Asia/Tokyo) is past the server's maximum 2106-02-06 23:59:59 (ClickHouse 18.16)"},
		{map[string]any{"i": -1, "s": ""}, "out of the range of DateTime"},
	} {
		st := mkChunk(t, in)
		addRow(t, st, x.row)
		_, err := ch.Run(st, 0, newEmitter(t, outs))
		if x.msg == "" {
			if err != nil {
				t.Errorf("%v: %v", x.row, err)
			}
			continue
		}
		var te *Error
		if !errors.As(err, &te) || te.Reason != ReasonOutOfRange || !strings.Contains(err.Error(), x.msg) {
			t.Errorf("%v: got %v, want out_of_range %q", x.row, err, x.msg)
		}
	}
}
