package meta

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func schema(t *testing.T, cols ...string) *chunk.Schema {
	t.Helper()
	s := &chunk.Schema{}
	for i := 0; i < len(cols); i += 2 {
		typ, err := chunk.ParseType(cols[i+1])
		if err != nil {
			t.Fatal(err)
		}
		s.Names, s.Types = append(s.Names, cols[i]), append(s.Types, typ)
	}
	return s
}

// TestCompileRefuses: a type that does not fit its source is refused,
// naming the column, the source and the types that fit; a Map before
// 21.8 is refused with the arrays to use instead.
func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct{ src, typ, version, want string }{
		{Partition, "UInt8", "", "column c (UInt8) cannot hold _partition: its type must be one of Int32, Int64, UInt32, UInt64"},
		{Offset, "Int32", "", "must be one of Int64, UInt64"},
		{Offset, "String", "", "must be one of Int64, UInt64"},
		{Timestamp, "Date", "", "must be one of DateTime64(3), DateTime, Int64, UInt64"},
		{Timestamp, "Int32", "", "cannot hold _timestamp"},
		{TimestampType, "UInt8", "", "must be one of Int8, Int16, Int32, Int64, String"},
		{Topic, "FixedString(8)", "", "cannot hold _topic"},
		{Key, "Array(String)", "", "must be one of String, Nullable(String)"},
		{Raw, "Nullable(String)", "", "must be one of String"},
		{HeaderKeys, "String", "", "must be one of Array(String)"},
		{HeaderValues, "Array(UInt8)", "", "cannot hold _headers.value"},
		{Headers, "Array(String)", "", "must be one of Map(String, String)"},
		{Headers, "Map(String, String)", "21.3.1", "ClickHouse 21.3.1 has no Map type (it came in 21.8)"},
	} {
		_, err := Compile(schema(t, "c", c.typ), []string{c.src}, c.version, chunk.ServerRanges{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s into %s: error %v, want one containing %q", c.src, c.typ, err, c.want)
		}
	}
	for _, c := range []struct{ src, typ string }{
		{Topic, "LowCardinality(String)"}, {Partition, "Int32"}, {Partition, "UInt64"}, {Offset, "UInt64"},
		{Timestamp, "DateTime"}, {Timestamp, "DateTime64(3)"}, {Timestamp, "DateTime('UTC')"}, {Timestamp, "UInt64"},
		{TimestampType, "Int8"}, {TimestampType, "String"}, {Key, "Nullable(String)"}, {Key, "LowCardinality(String)"},
		{HeaderKeys, "Array(String)"}, {HeaderValues, "Array(Nullable(String))"}, {Headers, "Map(String, String)"}, {Raw, "String"},
	} {
		f, err := Compile(schema(t, "c", c.typ), []string{c.src}, "24.8.1", chunk.ServerRanges{})
		if err != nil || f == nil {
			t.Errorf("%s into %s: %v", c.src, c.typ, err)
		}
	}
	if f, err := Compile(schema(t, "a", "String"), []string{"a"}, "", chunk.ServerRanges{}); f != nil || err != nil {
		t.Errorf("no metadata column: filler %v, error %v; want nil, nil", f, err)
	}
}

// TestDecoderFields: metadata sources are no field of the value, a
// field: source is the field it quotes, and Quote is the inverse for a
// column named for a source.
func TestDecoderFields(t *testing.T) {
	srcs := []string{"a", Offset, "field:_offset", "field:b", HeaderKeys}
	got := DecoderFields(srcs)
	want := []string{"a", "", "_offset", "b", ""}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("DecoderFields(%q) = %q, want %q", srcs, got, want)
	}
	if srcs[1] != Offset {
		t.Errorf("DecoderFields changed its argument: %q", srcs)
	}
	if plain := []string{"a", "b"}; &DecoderFields(plain)[0] != &plain[0] {
		t.Error("DecoderFields copied sources that need no change")
	}
	if q := Quote(Offset); q != "field:_offset" || DecoderFields([]string{q})[0] != Offset {
		t.Errorf("Quote(_offset) = %q", q)
	}
	if q := Quote("_other"); q != "_other" {
		t.Errorf("Quote(_other) = %q", q)
	}
}

// TestFill: the rows a record made get its values, replacing the
// defaults the decoder appended; earlier rows are left as they were; the
// column no longer counts as absent.
func TestFill(t *testing.T) {
	s := schema(t, "v", "String", "topic", "String", "part", "Int32", "off", "UInt64", "ts", "DateTime64(3)", "ms", "Int64",
		"tt", "String", "key", "Nullable(String)", "hk", "Array(String)", "hv", "Array(Nullable(String))", "h", "Map(String, String)", "raw", "String")
	srcs := []string{"v", Topic, Partition, Offset, Timestamp, Timestamp, TimestampType, Key, HeaderKeys, HeaderValues, Headers, Raw}
	f, err := Compile(s, srcs, "", chunk.ServerRanges{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := chunk.New(s)
	if err != nil {
		t.Fatal(err)
	}
	appendRow := func(v string) {
		for i, col := range c.Cols {
			if i == 0 {
				col.(*chunk.Strings).AppendString(v)
				continue
			}
			c.MarkAbsent(i)
			col.AppendDefault()
		}
		c.Rows++
	}
	r1 := &kgo.Record{Topic: "t1", Partition: 2, Offset: 7, Timestamp: time.UnixMilli(1234567), Value: []byte("one")}
	r2 := &kgo.Record{Topic: "t2", Partition: 5, Offset: 1 << 40, Timestamp: time.UnixMilli(99), Key: []byte{0xff},
		Headers: []kgo.RecordHeader{{Key: "a", Value: nil}, {Key: "", Value: []byte{0}}}, Value: []byte{}}
	appendRow("x")
	if e := f.Fill(r1, c, 0); e != nil {
		t.Fatal(e)
	}
	appendRow("y")
	appendRow("z")
	if e := f.Fill(r2, c, 1); e != nil {
		t.Fatal(e)
	}
	for i := 1; i < len(c.Cols); i++ {
		if c.Cols[i].Len() != 3 {
			t.Fatalf("column %s has %d rows, want 3", s.Names[i], c.Cols[i].Len())
		}
		if c.Absent[i] != 0 {
			t.Errorf("column %s: %d rows absent, want 0", s.Names[i], c.Absent[i])
		}
	}
	row := func(i int) string {
		var b strings.Builder
		for _, col := range c.Cols {
			b.WriteString(fmtRow(col.Row(i)))
			b.WriteString("|")
		}
		return b.String()
	}
	for i, want := range []string{
		"x|t1|2|7|1234567|1234567|create|<nil>|[]|[]|[]|one|",
		"y|t2|5|1099511627776|99|99|create|\xff|[a ]|[<nil> \x00]|[a: :\x00]||",
		"z|t2|5|1099511627776|99|99|create|\xff|[a ]|[<nil> \x00]|[a: :\x00]||",
	} {
		if got := row(i); got != want {
			t.Errorf("row %d = %q, want %q", i, got, want)
		}
	}
}

// TestFillRefuses: a timestamp the column cannot hold refuses the record
// as out_of_range, naming the column and the source.
func TestFillRefuses(t *testing.T) {
	s := schema(t, "ts", "DateTime")
	f, err := Compile(s, []string{Timestamp}, "", chunk.ServerRanges{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	c.Cols[0].AppendDefault()
	c.Rows++
	e := f.Fill(&kgo.Record{Timestamp: time.UnixMilli(-5000)}, c, 0)
	var de *decode.Error
	if !errors.As(e, &de) || de.Reason != decode.ReasonOutOfRange || de.Column != "ts" || de.Field != Timestamp {
		t.Fatalf("Fill = %v, want out_of_range for column ts, field _timestamp", e)
	}
}

// fmtRow prints a column's row: times as Unix milliseconds, arrays
// space-separated in brackets, map entries as key:value, NULL as <nil>.
func fmtRow(v any) string {
	switch x := v.(type) {
	case time.Time:
		return fmt.Sprint(x.UnixMilli())
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtRow(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case [][2]any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtRow(e[0]) + ":" + fmtRow(e[1])
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return "<nil>"
	}
	return fmt.Sprint(v)
}
