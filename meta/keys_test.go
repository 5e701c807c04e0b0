package meta

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// fakeKeys decodes keys of the form "name=value" into a String column
// whose field is name: a value for the column of that field, the
// default for others; anything else is corrupt.
type fakeKeys struct{ fields []string }

func (d fakeKeys) Decode(b []byte, c *chunk.Chunk) (int, error) {
	name, v, ok := strings.Cut(string(b), "=")
	if !ok {
		return 0, &decode.Error{Reason: decode.ReasonCorrupt, Err: errors.New("no =")}
	}
	for i, f := range d.fields {
		if f == name {
			switch col := c.Cols[i].(type) {
			case *chunk.Strings:
				col.AppendString(v)
			case *chunk.Nullable:
				col.Inner.(*chunk.Strings).AppendString(v)
				col.MarkValue()
			}
		} else {
			c.Cols[i].AppendDefault()
		}
	}
	c.Rows++
	return 1, nil
}

func fakeKeyDecoder(s *chunk.Schema, fields []string) (decode.Decoder, error) {
	return fakeKeys{fields: fields}, nil
}

// TestKeyFields: columns of _key.NAME sources take the decoded key's
// fields for every row of the record, beside the other metadata; a null
// key gives the defaults; a key that cannot be decoded is refused with its
// offset and the decoder's reason; _tombstone is 1 for a null value.
func TestKeyFields(t *testing.T) {
	s := schema(t, "v", "String", "user", "String", "region", "Nullable(String)", "off", "Int64", "dead", "UInt8", "dead_b", "Bool")
	srcs := []string{"v", "_key.user", "_key.region", Offset, Tombstone, Tombstone}
	f, err := CompileWith(s, srcs, Options{KeyFormat: KeyJSON, NewKey: fakeKeyDecoder})
	if err != nil {
		t.Fatal(err)
	}
	if !f.DecodesKey() {
		t.Fatal("DecodesKey = false")
	}
	c, _ := chunk.New(s)
	add := func(r *kgo.Record, rows int) {
		t.Helper()
		if err := f.DecodeKey(r); err != nil {
			t.Fatal(err)
		}
		from := c.Rows
		for range rows {
			c.Cols[0].(*chunk.Strings).AppendString("x")
			for _, col := range c.Cols[1:] {
				col.AppendDefault()
			}
			c.Rows++
		}
		if e := f.Fill(r, c, from); e != nil {
			t.Fatal(e)
		}
	}
	add(&kgo.Record{Offset: 1, Key: []byte("user=ann"), Value: []byte("{}")}, 2)
	add(&kgo.Record{Offset: 2, Key: []byte("region=eu")}, 1)
	add(&kgo.Record{Offset: 3, Value: []byte("{}")}, 1)
	var got []string
	for i := range c.Rows {
		var b strings.Builder
		for _, col := range c.Cols {
			b.WriteString(fmtRow(col.Row(i)) + "|")
		}
		got = append(got, b.String())
	}
	want := []string{"x|ann|<nil>|1|0|false|", "x|ann|<nil>|1|0|false|", "x||eu|2|1|true|", "x||<nil>|3|0|false|"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	err = f.DecodeKey(&kgo.Record{Partition: 4, Offset: 99, Key: []byte("oops")})
	var de *decode.Error
	if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt ||
		!strings.Contains(err.Error(), `key "oops" (partition 4, offset 99) is not a JSON object: record corrupt: no =`) {
		t.Fatalf("DecodeKey of a bad key = %v", err)
	}
}

// TestKeyString: a string key must be UTF-8; the error quotes at most 64
// bytes of it.
func TestKeyString(t *testing.T) {
	s := schema(t, "k", "String")
	f, err := CompileWith(s, []string{Key}, Options{KeyFormat: KeyString})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.DecodeKey(&kgo.Record{Key: []byte("héllo")}); err != nil {
		t.Fatalf("a UTF-8 key: %v", err)
	}
	if err := f.DecodeKey(&kgo.Record{}); err != nil {
		t.Fatalf("a null key: %v", err)
	}
	long := append([]byte(strings.Repeat("a", 100)), 0xff)
	err = f.DecodeKey(&kgo.Record{Offset: 5, Key: long})
	if err == nil || !strings.Contains(err.Error(), `key "`+strings.Repeat("a", 64)+`"… (101 bytes) (partition 0, offset 5) is not a UTF-8 string: not valid UTF-8`) {
		t.Fatalf("DecodeKey of a bad key = %v", err)
	}
	// No column: the filler still checks the key.
	f, err = CompileWith(schema(t, "v", "String"), []string{"v"}, Options{KeyFormat: KeyString})
	if err != nil || !f.DecodesKey() {
		t.Fatalf("CompileWith = %v, %v; want a filler checking keys", f, err)
	}
	// Keys as bytes: no filler without metadata columns.
	if f, err := CompileWith(schema(t, "v", "String"), []string{"v"}, Options{}); f != nil || err != nil {
		t.Fatalf("CompileWith without a key format = %v, %v; want nil, nil", f, err)
	}
}

// TestKeyFieldsRefused: _key.NAME needs a json or avro key format;
// _tombstone fits UInt8 and Bool only.
func TestKeyFieldsRefused(t *testing.T) {
	s := schema(t, "u", "String")
	for _, format := range []string{"", KeyNone, KeyString} {
		_, err := CompileWith(s, []string{"_key.user"}, Options{KeyFormat: format})
		if err == nil || !strings.Contains(err.Error(), "column u reads _key.user, a field of the record's key, but decode.key.format is") {
			t.Errorf("format %q: %v", format, err)
		}
	}
	if _, err := CompileWith(schema(t, "d", "Int32"), []string{Tombstone}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "column d (Int32) cannot hold _tombstone: its type must be one of UInt8, Bool") {
		t.Errorf("_tombstone into Int32: %v", err)
	}
	if !IsSource("_key.a.b") || IsSource("_key.") || IsSource("_keys") || !IsSource(Tombstone) {
		t.Error("IsSource of key fields")
	}
}
