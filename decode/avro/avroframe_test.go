package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// mapSource serves schemas from a map; ids in pending are not there yet.
type mapSource struct {
	schemas map[int32]string
	pending map[int32]chan struct{}
}

func (m mapSource) Lookup(id int32) (string, error) {
	if s, ok := m.schemas[id]; ok {
		return s, nil
	}
	if _, ok := m.pending[id]; ok {
		return "", fmt.Errorf("%w: fetching", ErrSchemaPending)
	}
	return "", fmt.Errorf("%w: %d", ErrSchemaUnknown, id)
}

func (m mapSource) Wait(id int32) <-chan struct{} { return m.pending[id] }

func confluent(t *testing.T, id int32, schema string, v any) []byte {
	t.Helper()
	b, err := havro.Marshal(havro.MustParse(schema), v)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, b...)
}

// TestAvroFramedEvolution: records from a v1 and a v2 writer schema,
// interleaved in one stream, each decode with their own writer schema into
// the same columns; a field v1 lacks takes the column default.
func TestAvroFramedEvolution(t *testing.T) {
	v1 := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	v2 := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"score","type":["null","double"],"default":null},{"name":"name","type":"string"},{"name":"extra","type":{"type":"map","values":"string"}}]}`
	u64, _ := chunk.ParseType("UInt64")
	str, _ := chunk.ParseType("String")
	f64, _ := chunk.ParseType("Nullable(Float64)")
	s := &chunk.Schema{Names: []string{"id", "name", "score"}, Types: []*chunk.Type{u64, str, f64}}
	src := mapSource{schemas: map[int32]string{1: v1, 2: v2}, pending: map[int32]chan struct{}{3: make(chan struct{})}}
	d, err := NewFramed(FramingConfluent, "", src, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	score := 2.5
	recs := [][]byte{
		confluent(t, 1, v1, map[string]any{"id": int64(1), "name": "a"}),
		confluent(t, 2, v2, map[string]any{"id": int64(2), "score": &score, "name": "b", "extra": map[string]any{"k": "v"}}),
		confluent(t, 1, v1, map[string]any{"id": int64(3), "name": "c"}),
		confluent(t, 2, v2, map[string]any{"id": int64(4), "score": nil, "name": "d", "extra": map[string]any{}}),
	}
	for i, r := range recs {
		if _, err := d.Decode(r, c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	ids := c.Cols[0].(*chunk.Fixed[uint64]).Data
	names := c.Cols[1].(*chunk.Strings)
	scores := c.Cols[2].(*chunk.Nullable)
	for i, want := range []struct {
		id    uint64
		name  string
		null  uint8
		score float64
	}{{1, "a", 1, 0}, {2, "b", 0, 2.5}, {3, "c", 1, 0}, {4, "d", 1, 0}} {
		got := scores.Inner.(*chunk.Fixed[float64]).Data[i]
		if ids[i] != want.id || names.Value(i) != want.name || scores.Nulls[i] != want.null || (want.null == 0 && got != want.score) {
			t.Errorf("row %d: id %d name %q null %d score %v; want %+v", i, ids[i], names.Value(i), scores.Nulls[i], got, want)
		}
	}

	// A pending schema id: the record is not decoded, and the error says
	// when to retry.
	var pe *SchemaPendingError
	if _, err := d.Decode(confluent(t, 3, v1, map[string]any{"id": int64(5), "name": "e"}), c); !errors.As(err, &pe) || pe.ID != 3 || pe.Wait == nil {
		t.Fatalf("pending schema: err = %v", err)
	}
	// An unknown id and a bad frame are decode errors with their reasons.
	var de *decode.Error
	if _, err := d.Decode(confluent(t, 7, v1, map[string]any{"id": int64(6), "name": "f"}), c); !errors.As(err, &de) || de.Reason != decode.ReasonUnknownSchema {
		t.Fatalf("unknown id: err = %v", err)
	}
	for _, bad := range [][]byte{{0, 0, 0}, {5, 0, 0, 0, 1, 2}} {
		if _, err := d.Decode(bad, c); !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt {
			t.Fatalf("bad frame %v: err = %v", bad, err)
		}
	}
	if c.Rows != 4 {
		t.Fatalf("%d rows after failed records, want 4", c.Rows)
	}
}

// TestAvroSingleObject: the single-object header must carry the configured
// schema's fingerprint.
func TestAvroSingleObject(t *testing.T) {
	v1 := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"}]}`
	other := `{"type":"record","name":"F","fields":[{"name":"id","type":"long"}]}`
	u64, _ := chunk.ParseType("UInt64")
	s := &chunk.Schema{Names: []string{"id"}, Types: []*chunk.Type{u64}}
	d, err := NewFramed(FramingSingleObject, v1, nil, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(schema string, id int64) []byte {
		sc := havro.MustParse(schema)
		fp, err := sc.FingerprintUsing(havro.CRC64AvroLE)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := havro.Marshal(sc, map[string]any{"id": id})
		return append(append([]byte{0xC3, 0x01}, fp...), b...)
	}
	c, _ := chunk.New(s)
	if _, err := d.Decode(frame(v1, 42), c); err != nil {
		t.Fatal(err)
	}
	if got := c.Cols[0].(*chunk.Fixed[uint64]).Data[0]; got != 42 {
		t.Fatalf("id %d", got)
	}
	var de *decode.Error
	if _, err := d.Decode(frame(other, 1), c); !errors.As(err, &de) || de.Reason != decode.ReasonUnknownSchema {
		t.Fatalf("other schema's fingerprint: err = %v", err)
	}
	if _, err := d.Decode([]byte{0xC3, 0x02, 1}, c); !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt {
		t.Fatalf("bad header: err = %v", err)
	}
}

// TestAvroReaderSchema: v1 and v2 writers resolved to a reader schema:
// fields the writer lacks take the reader's defaults, a writer field found
// by a reader alias fills the reader's field, and writer fields the reader
// lacks are ignored even when a column has their name.
func TestAvroReaderSchema(t *testing.T) {
	v1 := `{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`
	v2 := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"score","type":"double"},{"name":"legacy","type":"string"}]}`
	reader := `{"type":"record","name":"E","fields":[
	  {"name":"id","type":"long"},
	  {"name":"title","type":"string","aliases":["name"]},
	  {"name":"score","type":"double","default":1.5},
	  {"name":"country","type":"string","default":"NO"},
	  {"name":"note","type":["null","string"],"default":null}]}`
	u64, _ := chunk.ParseType("UInt64")
	str, _ := chunk.ParseType("String")
	f64, _ := chunk.ParseType("Float64")
	ns, _ := chunk.ParseType("Nullable(String)")
	s := &chunk.Schema{Names: []string{"id", "title", "score", "country", "note", "legacy"}, Types: []*chunk.Type{u64, str, f64, str, ns, str}}
	src := mapSource{schemas: map[int32]string{1: v1, 2: v2}}
	d, err := NewFramed(FramingConfluent, "", src, s, Options{ReaderSchema: reader})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	for i, r := range [][]byte{
		confluent(t, 1, v1, map[string]any{"id": 1, "name": "a"}),
		confluent(t, 2, v2, map[string]any{"id": int64(2), "name": "b", "score": 9.0, "legacy": "x"}),
	} {
		if _, err := d.Decode(r, c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	ids := c.Cols[0].(*chunk.Fixed[uint64]).Data
	titles, countries, legacy := c.Cols[1].(*chunk.Strings), c.Cols[3].(*chunk.Strings), c.Cols[5].(*chunk.Strings)
	scores := c.Cols[2].(*chunk.Fixed[float64]).Data
	notes := c.Cols[4].(*chunk.Nullable)
	for i, want := range []struct {
		id           uint64
		title        string
		score        float64
		country, leg string
	}{{1, "a", 1.5, "NO", ""}, {2, "b", 9, "NO", ""}} {
		if ids[i] != want.id || titles.Value(i) != want.title || scores[i] != want.score || countries.Value(i) != want.country || legacy.Value(i) != want.leg || notes.Nulls[i] != 1 {
			t.Errorf("row %d: id %d title %q score %v country %q legacy %q note null %d; want %+v",
				i, ids[i], titles.Value(i), scores[i], countries.Value(i), legacy.Value(i), notes.Nulls[i], want)
		}
	}
	// A reader default that cannot go into its column is refused when the
	// plan is built.
	bad := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"country","type":"string","default":"NO"}]}`
	u8, _ := chunk.ParseType("UInt8")
	s2 := &chunk.Schema{Names: []string{"id", "country"}, Types: []*chunk.Type{u64, u8}}
	if _, err := New(v1, s2, Options{ReaderSchema: bad}); err == nil {
		t.Fatal("a string default for a UInt8 column was accepted")
	}
}

// TestAvroValidateSchema: names refuses a writer field without a column,
// full also a non-Nullable column no field fills; every mismatch is listed
// at once, and at run time the schema's records fail with reason
// schema_mismatch.
func TestAvroValidateSchema(t *testing.T) {
	w := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"extra1","type":"string"},{"name":"extra2","type":"int"}]}`
	u64, _ := chunk.ParseType("UInt64")
	str, _ := chunk.ParseType("String")
	ns, _ := chunk.ParseType("Nullable(String)")
	s := &chunk.Schema{Names: []string{"id", "city", "note"}, Types: []*chunk.Type{u64, str, ns}}
	if _, err := New(w, s, Options{Validate: ValidateOff}); err != nil {
		t.Fatalf("off: %v", err)
	}
	_, err := New(w, s, Options{Validate: ValidateNames})
	if err == nil || !strings.Contains(err.Error(), `field "extra1" has no column`) || !strings.Contains(err.Error(), `field "extra2" has no column`) || strings.Contains(err.Error(), "city") {
		t.Fatalf("names: %v", err)
	}
	_, err = New(w, s, Options{Validate: ValidateFull})
	if err == nil || !strings.Contains(err.Error(), "column city (String) is filled by no field") || strings.Contains(err.Error(), "column note") {
		t.Fatalf("full: %v", err)
	}
	// At run time: the records of a refused schema id fail with the reason.
	d, err := NewFramed(FramingConfluent, "", mapSource{schemas: map[int32]string{1: w}}, s, Options{Validate: ValidateNames})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := chunk.New(s)
	var de *decode.Error
	if _, err := d.Decode(confluent(t, 1, w, map[string]any{"id": int64(1), "extra1": "x", "extra2": 2}), c); !errors.As(err, &de) || de.Reason != decode.ReasonSchemaMismatch {
		t.Fatalf("run time: %v", err)
	}
}
