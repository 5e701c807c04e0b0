package json

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func framingDecoder(t *testing.T, framing string) (*Decoder, *chunk.Chunk) {
	t.Helper()
	typ, err := chunk.ParseType("UInt32")
	if err != nil {
		t.Fatal(err)
	}
	s := &chunk.Schema{Names: []string{"n"}, Types: []*chunk.Type{typ}}
	d, err := New(s, Options{Framing: framing})
	if err != nil {
		t.Fatal(err)
	}
	c, err := chunk.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

func values(c *chunk.Chunk) []uint32 { return c.Cols[0].(*chunk.Fixed[uint32]).Data }

func TestFramingNDJSON(t *testing.T) {
	d, c := framingDecoder(t, FramingNDJSON)
	rows, err := d.Decode([]byte("{\"n\": 1}\n\n{\"n\": 2}\r\n{\"n\": 3}"), c)
	if err != nil || rows != 3 || c.Rows != 3 {
		t.Fatalf("rows %d, chunk rows %d, err %v", rows, c.Rows, err)
	}
	if v := values(c); v[0] != 1 || v[1] != 2 || v[2] != 3 {
		t.Fatalf("values %v", v)
	}
	// A bad line takes back the whole record.
	_, err = d.Decode([]byte("{\"n\": 4}\n{\"n\": -1}\n{\"n\": 5}"), c)
	if err == nil || !strings.Contains(err.Error(), "line 2") || err.(*decode.Error).Reason != decode.ReasonOutOfRange {
		t.Fatalf("err = %v, want out_of_range on line 2", err)
	}
	if c.Rows != 3 || len(values(c)) != 3 {
		t.Fatalf("chunk changed by a failed record: rows %d, values %v", c.Rows, values(c))
	}
}

func TestFramingArray(t *testing.T) {
	d, c := framingDecoder(t, FramingArray)
	rows, err := d.Decode([]byte(`[{"n": 7}, {"n": 8}]`), c)
	if err != nil || rows != 2 || c.Rows != 2 {
		t.Fatalf("rows %d, chunk rows %d, err %v", rows, c.Rows, err)
	}
	if rows, err := d.Decode([]byte(`[]`), c); err != nil || rows != 0 {
		t.Fatalf("empty array: rows %d, err %v", rows, err)
	}
	for _, bad := range []string{`[{"n": 9}, 3]`, `{"n": 9}`, `[{"n": 9}, {"n": "x"}]`, `[{"n": 9}`} {
		if _, err := d.Decode([]byte(bad), c); err == nil {
			t.Errorf("%s: no error", bad)
		}
		if c.Rows != 2 || len(values(c)) != 2 {
			t.Fatalf("%s: chunk changed by a failed record: rows %d", bad, c.Rows)
		}
	}
	if _, err := New(c.Schema, Options{Framing: "csv"}); err == nil {
		t.Fatal("unknown framing accepted")
	}
}

// TestNestedFields: a field "a.b" reads b inside the object a (or a
// literal key "a.b" when the object has one); missing levels give the
// column's default.
func TestNestedFields(t *testing.T) {
	u32, _ := chunk.ParseType("UInt32")
	str, _ := chunk.ParseType("String")
	nul, _ := chunk.ParseType("Nullable(String)")
	s := &chunk.Schema{Names: []string{"id", "city", "zip"}, Types: []*chunk.Type{u32, str, nul}}
	d, err := New(s, Options{Fields: []string{"id", "user.address.city", "user.zip"}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	for _, rec := range []string{
		`{"id": 1, "user": {"address": {"city": "Oslo"}, "zip": "0150"}}`,
		`{"id": 2, "user": {"name": "x"}}`,
		`{"id": 3}`,
		`{"id": 4, "user.address.city": "Bergen", "user": {"zip": null}}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
	}
	cities := c.Cols[1].(*chunk.Strings)
	want := []string{"Oslo", "", "", "Bergen"}
	for i, w := range want {
		if got := cities.Value(i); got != w {
			t.Errorf("row %d city %q, want %q", i, got, w)
		}
	}
	zips := c.Cols[2].(*chunk.Nullable)
	if zips.Nulls[0] != 0 || zips.Inner.(*chunk.Strings).Value(0) != "0150" || zips.Nulls[1] != 1 || zips.Nulls[2] != 1 || zips.Nulls[3] != 1 {
		t.Errorf("zips: nulls %v", zips.Nulls)
	}
	// A non-string value in a String column is kept as its JSON text.
	if _, err := d.Decode([]byte(`{"id": 5, "user": {"address": {"city": 7}}}`), c); err != nil {
		t.Fatal(err)
	}
	if got := cities.Value(4); got != "7" {
		t.Errorf("city from a number: %q, want \"7\"", got)
	}
}

// TestTimeLayout: a configured layout is tried first for DateTime,
// DateTime64 and Date strings; RFC 3339 and epoch numbers still work.
func TestTimeLayout(t *testing.T) {
	dt, _ := chunk.ParseType("DateTime")
	dt64, _ := chunk.ParseType("DateTime64(3)")
	date, _ := chunk.ParseType("Date")
	s := &chunk.Schema{Names: []string{"a", "b", "c"}, Types: []*chunk.Type{dt, dt64, date}}
	d, err := New(s, Options{TimeLayout: "02/01/2006 15:04:05.000"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	for _, rec := range []string{
		`{"a": "29/11/2026 10:30:00.000", "b": "29/11/2026 10:30:00.250", "c": "29/11/2026 23:59:59.999"}`,
		`{"a": "2026-11-29T10:30:00Z", "b": 1795948200250, "c": "2026-11-29"}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
	}
	secs := c.Cols[0].(*chunk.Fixed[int64]).Data
	if secs[0] != 1795948200 || secs[1] != 1795948200 {
		t.Errorf("DateTime seconds %v, want 1795948200 twice", secs)
	}
	if got := c.Cols[1].(*chunk.DateTime64).Data; got[0] != 1795948200250 || got[1] != 1795948200250 {
		t.Errorf("DateTime64 ticks %v, want 1795948200250 twice", got)
	}
	days := c.Cols[2].(*chunk.Fixed[time.Time]).Data
	if !days[0].Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) || !days[1].Equal(days[0]) {
		t.Errorf("dates %v", days)
	}
	if _, err := d.Decode([]byte(`{"a": "29-11-2026"}`), c); err == nil {
		t.Error("a string in neither the layout nor RFC 3339 was accepted")
	}
}

// TestNestedSharedPrefixes: fields under one object (and under a
// wrapper around it) share the prefix's lookup and read what a lookup of
// each path reads: a missing, null or scalar level gives the default, an
// array level is indexed by a number, and a column of the prefix itself
// is read beside the fields under it.
func TestNestedSharedPrefixes(t *testing.T) {
	i64, _ := chunk.ParseType("Int64")
	nul, _ := chunk.ParseType("Nullable(String)")
	str, _ := chunk.ParseType("String")
	s := &chunk.Schema{Names: []string{"a", "b", "c", "d", "e", "f"}, Types: []*chunk.Type{i64, nul, i64, nul, str, i64}}
	d, err := New(s, Options{Fields: []string{"after.id", "after.name", "payload.after.id", "payload.after.name", "after", "items.1.id"}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	for _, rec := range []string{
		`{"after": {"id": 1, "name": "x"}, "items": [{"id": 5}, {"id": 6}]}`,
		`{"payload": {"after": {"id": 2, "name": null}}, "after": null}`,
		`{"payload": {"after": 3}, "after": {"name": "y"}, "items": [{"id": 7}]}`,
		`{"payload": null, "after": {"id": 4}, "items": {"1": {"id": 8}}}`,
	} {
		if _, err := d.Decode([]byte(rec), c); err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
	}
	want := []string{
		`[1 x 0 <nil> {"id":1,"name":"x"} 6]`,
		`[0 <nil> 2 <nil>  0]`,
		`[0 y 0 <nil> {"name":"y"} 0]`,
		`[4 <nil> 0 <nil> {"id":4} 8]`,
	}
	for i, w := range want {
		var row []any
		for _, col := range c.Cols {
			row = append(row, col.Row(i))
		}
		if got := fmt.Sprint(row); got != w {
			t.Errorf("row %d: %s, want %s", i, got, w)
		}
	}
}
