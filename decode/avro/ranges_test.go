package avro

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	jsondec "github.com/etl-project/etl/decode/json"
)

// TestDateRangesFollowServer: the largest Date and DateTime the decoders
// accept are the connected server's (chunk.ServerRanges), the narrower
// range when none is known; one past is out_of_range with a message that
// names the server's maximum.
func TestDateRangesFollowServer(t *testing.T) {
	old, cur := chunk.RangesFor("18.16.1"), chunk.RangesFor("24.8.4.13")
	type edge struct {
		typ        string
		last, next string // JSON values
		lastWant   string
		msg        string // in the error for next
	}
	for _, c := range []struct {
		name   string
		ranges chunk.ServerRanges
		edges  []edge
	}{
		{"18.16", old, []edge{
			{"DateTime", `"2106-02-06 23:59:59"`, `"2106-02-07 00:00:00"`, "4294943999",
				"DateTime 2106-02-07 00:00:00 is past the server's maximum 2106-02-06 23:59:59 (ClickHouse 18.16)"},
			{"DateTime", `4294943999`, `4294944000`, "4294943999", "(ClickHouse 18.16)"},
			{"Date", `"2106-02-07"`, `"2106-02-08"`, "2106-02-07",
				"Date 2106-02-08 is past the server's maximum 2106-02-07 (ClickHouse 18.16)"},
		}},
		{"none", chunk.ServerRanges{}, []edge{
			{"DateTime", `"2106-02-06T23:59:59Z"`, `"2106-02-07T00:00:00Z"`, "4294943999", "(no server version known)"},
			{"Date", `"2106-02-07"`, `"2106-02-08"`, "2106-02-07", "(no server version known)"},
		}},
		{"24.8", cur, []edge{
			{"DateTime", `"2106-02-07T06:28:15Z"`, `"2106-02-07T06:28:16Z"`, "4294967295",
				"DateTime 2106-02-07 06:28:16 is past the server's maximum 2106-02-07 06:28:15 (ClickHouse 24.8)"},
			{"DateTime", `4294967295`, `4294967296`, "4294967295", "(ClickHouse 24.8)"},
			{"Date", `"2149-06-06"`, `"2149-06-07"`, "2149-06-06",
				"Date 2149-06-07 is past the server's maximum 2149-06-06 (ClickHouse 24.8)"},
			{"Nullable(Date)", `"2149-06-06"`, `"2149-06-07"`, "2149-06-06", "(ClickHouse 24.8)"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range c.edges {
				s := schemaOf(t, "v "+e.typ)
				d, err := jsondec.New(s, jsondec.Options{Ranges: c.ranges})
				if err != nil {
					t.Fatal(err)
				}
				ch := newChunk(t, s)
				if _, err := d.Decode([]byte(`{"v":`+e.last+`}`), ch); err != nil {
					t.Errorf("%s %s: %v", e.typ, e.last, err)
				} else if got := render(ch.Cols[0], 0); got != e.lastWant {
					t.Errorf("%s %s = %s, want %s", e.typ, e.last, got, e.lastWant)
				}
				_, err = d.Decode([]byte(`{"v":`+e.next+`}`), ch)
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange || !strings.Contains(err.Error(), e.msg) {
					t.Errorf("%s %s: got %v, want out_of_range naming %q", e.typ, e.next, err, e.msg)
				}
			}
		})
	}
}

// TestAvroDateRangesFollowServer: the same for the Avro decoder, from date
// and timestamp-millis logical types.
func TestAvroDateRangesFollowServer(t *testing.T) {
	const dateType = `{"type":"int","logicalType":"date"}`
	const millisType = `{"type":"long","logicalType":"timestamp-millis"}`
	for _, c := range []struct {
		ranges         chunk.ServerRanges
		dateMax, dtMax int64
		server         string
	}{
		{chunk.RangesFor("18.16.1"), chunk.NarrowDateMax, chunk.NarrowDateTimeMax, "ClickHouse 18.16"},
		{chunk.ServerRanges{}, chunk.NarrowDateMax, chunk.NarrowDateTimeMax, "no server version known"},
		{chunk.RangesFor("25.3.2"), chunk.WideDateMax, chunk.WideDateTimeMax, "ClickHouse 25.3"},
	} {
		for _, x := range []struct {
			wtype, col string
			last       any
			want       string
			next       any
		}{
			{dateType, "Date", int32(c.dateMax), time.Unix(c.dateMax*86400, 0).UTC().Format(time.DateOnly), int32(c.dateMax + 1)},
			{millisType, "Date", (c.dateMax*86400+86399)*1000 + 999, time.Unix(c.dateMax*86400, 0).UTC().Format(time.DateOnly), (c.dateMax + 1) * 86400 * 1000},
			{millisType, "DateTime", c.dtMax*1000 + 999, strconv.FormatInt(c.dtMax, 10), (c.dtMax + 1) * 1000},
			{dateType, "DateTime", int32(c.dtMax / 86400), "", int32(c.dtMax/86400 + 1)},
		} {
			schema := avroRecord("v:" + x.wtype)
			s := schemaOf(t, "v "+x.col)
			a := avroNew(t, schema, s, Options{Ranges: c.ranges})
			ch := newChunk(t, s)
			if _, err := a.Decode(avroMarshal(t, schema, map[string]any{"v": x.last}), ch); err != nil {
				t.Errorf("%s: %s %v: %v", c.server, x.col, x.last, err)
			} else if got := render(ch.Cols[0], 0); x.want != "" && got != x.want {
				t.Errorf("%s: %s %v = %s, want %s", c.server, x.col, x.last, got, x.want)
			}
			_, err := a.Decode(avroMarshal(t, schema, map[string]any{"v": x.next}), ch)
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange || !strings.Contains(err.Error(), "("+c.server+")") {
				t.Errorf("%s: %s %v: got %v, want out_of_range naming the server", c.server, x.col, x.next, err)
			}
		}
	}
}
