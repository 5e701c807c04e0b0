package avro

import (
	"errors"
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	jsondec "github.com/etl-project/etl/decode/json"
)

// TestNullRecordValue: a null value (a Kafka tombstone) and an empty one
// are named as such, with reason corrupt.
func TestNullRecordValue(t *testing.T) {
	s := schemaOf(t, "a Int32")
	check := func(name string, d decode.Decoder, value []byte, want string) {
		t.Helper()
		c := newChunk(t, s)
		rows, err := d.Decode(value, c)
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt || rows != 0 || c.Rows != 0 {
			t.Errorf("%s: Decode(%q) = %d, %v; want reason corrupt", name, value, rows, err)
			return
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Decode(%q) = %q, want it to say %q", name, value, err, want)
		}
	}
	for _, framing := range []string{jsondec.FramingSingle, jsondec.FramingArray} {
		d, err := jsondec.New(s, jsondec.Options{Framing: framing})
		if err != nil {
			t.Fatal(err)
		}
		check("json "+framing, d, nil, "null record value")
		check("json "+framing, d, []byte{}, "empty record value")
	}
	// ndjson: an empty value has no lines, hence no rows.
	nd, err := jsondec.New(s, jsondec.Options{Framing: jsondec.FramingNDJSON})
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := nd.Decode(nil, newChunk(t, s)); rows != 0 || err != nil {
		t.Errorf("ndjson: Decode(nil) = %d, %v", rows, err)
	}

	w := `{"type":"record","name":"E","fields":[{"name":"a","type":"int"}]}`
	raw, err := NewFramed(FramingRaw, w, nil, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("avro raw", raw, nil, "null record value")
	conf, err := NewFramed(FramingConfluent, "", mapSource{schemas: map[int32]string{1: w}}, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("avro confluent", conf, nil, "null record value")
	check("avro confluent", conf, []byte{}, "empty record value")
	so, err := NewFramed(FramingSingleObject, w, nil, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("avro single_object", so, nil, "null record value")
	// A record of no fields is written in zero bytes: an empty raw datum
	// is a row.
	empty := `{"type":"record","name":"N","fields":[]}`
	ns := schemaOf(t, "a Nullable(Int32)")
	d, err := New(empty, ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := d.Decode([]byte{}, newChunk(t, ns)); rows != 1 || err != nil {
		t.Errorf("raw empty datum of an empty record: %d, %v", rows, err)
	}
}

// TestSchemaMismatchOff: a writer schema whose field cannot go into its
// column is schema_mismatch at every validate_schema level, off included.
func TestSchemaMismatchOff(t *testing.T) {
	w := `{"type":"record","name":"E","fields":[{"name":"id","type":{"type":"array","items":"long"}}]}`
	u64, _ := chunk.ParseType("UInt64")
	s := &chunk.Schema{Names: []string{"id"}, Types: []*chunk.Type{u64}}
	for _, level := range []string{"", ValidateOff, ValidateNames, ValidateFull} {
		_, err := New(w, s, Options{Validate: level})
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != decode.ReasonSchemaMismatch {
			t.Errorf("validate %q: avro.New = %v, want reason schema_mismatch", level, err)
		}
		d, err := NewFramed(FramingConfluent, "", mapSource{schemas: map[int32]string{7: w}}, s, Options{Validate: level})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := chunk.New(s)
		_, err = d.Decode(confluent(t, 7, w, map[string]any{"id": []int64{1}}), c)
		if !errors.As(err, &de) || de.Reason != decode.ReasonSchemaMismatch {
			t.Errorf("validate %q: Decode = %v, want reason schema_mismatch", level, err)
		}
		// A registry schema that is not a record is no fit either.
		d, _ = NewFramed(FramingConfluent, "", mapSource{schemas: map[int32]string{8: `"long"`}}, s, Options{Validate: level})
		_, err = d.Decode([]byte{0, 0, 0, 0, 8, 2}, c)
		if !errors.As(err, &de) || de.Reason != decode.ReasonSchemaMismatch {
			t.Errorf("validate %q: non-record schema: %v, want reason schema_mismatch", level, err)
		}
	}
}
