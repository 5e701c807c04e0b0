package gen

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// TestNestedAvroDecodes reads generated batches back with hamba/avro
// against NestedSchema and compares every field with MakeBatch's.
func TestNestedAvroDecodes(t *testing.T) {
	sc, err := avro.Parse(NestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	for n := uint64(0); n < 50; n++ {
		b := MakeBatch(7, n)
		if len(b.Events) != BatchEvents {
			t.Fatalf("batch %d has %d events", n, len(b.Events))
		}
		framed := b.AppendAvro(AppendConfluent(nil, 42))
		if framed[0] != 0 || binary.BigEndian.Uint32(framed[1:5]) != 42 {
			t.Fatalf("header % x", framed[:5])
		}
		var got map[string]any
		if err := avro.Unmarshal(sc, framed[5:], &got); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		if got["batch_id"] != int64(b.ID) || got["source"] != b.Source || got["user"] != b.User ||
			!got["sent_at"].(time.Time).Equal(b.SentAt) {
			t.Fatalf("batch %d: header %v, want %+v", n, got, b)
		}
		evs := got["events"].([]any)
		for i, ev := range evs {
			m, e := ev.(map[string]any), b.Events[i]
			if !m["ts"].(time.Time).Equal(e.TS) || m["kind"] != e.Kind || m["value"] != e.Value {
				t.Fatalf("batch %d event %d: %v, want %+v", n, i, m, e)
			}
			switch p := m["page"].(type) {
			case nil:
				if e.Page != nil {
					t.Fatalf("batch %d event %d: page null, want %q", n, i, *e.Page)
				}
			case string:
				if e.Page == nil || p != *e.Page {
					t.Fatalf("batch %d event %d: page %q, want %v", n, i, p, e.Page)
				}
			default:
				t.Fatalf("batch %d event %d: page %T", n, i, p)
			}
			tags := m["tags"].([]any)
			if len(tags) != len(e.Tags) {
				t.Fatalf("batch %d event %d: tags %v, want %v", n, i, tags, e.Tags)
			}
			for j := range tags {
				if tags[j] != e.Tags[j] {
					t.Fatalf("batch %d event %d: tags %v, want %v", n, i, tags, e.Tags)
				}
			}
		}
		if MakeBatch(7, n).AppendAvro(nil) == nil || string(MakeBatch(7, n).AppendAvro(nil)) != string(framed[5:]) {
			t.Fatalf("batch %d is not deterministic", n)
		}
	}
	if k := KeptRows(7, 0, 50); k == 0 || k >= 50*BatchEvents {
		t.Fatalf("KeptRows = %d of %d events", k, 50*BatchEvents)
	}
}
