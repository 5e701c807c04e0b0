package gen

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/etl-project/etl/protoschema"
)

// protobufFiles compiles the nested set's two files as a registry would
// serve them: the batch's file, importing the event's by its path.
func protobufFiles(t testing.TB) *protoschema.Files {
	t.Helper()
	files, err := protoschema.CompileSources(context.Background(), "", map[string]string{
		"batch.proto":       ProtobufBatchSchema,
		ProtobufEventImport: ProtobufEventSchema,
	}, "batch.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// timestampOf reads a google.protobuf.Timestamp message.
func timestampOf(m protoreflect.Message) time.Time {
	fs := m.Descriptor().Fields()
	return time.Unix(m.Get(fs.ByName("seconds")).Int(), m.Get(fs.ByName("nanos")).Int()).UTC()
}

// TestNestedProtobufDecodes reads generated batches back with
// google.golang.org/protobuf (proto.Unmarshal into a dynamicpb message of
// the compiled schema) and compares every field with MakeBatch's; the
// bytes are also those proto.Marshal writes for that message.
func TestNestedProtobufDecodes(t *testing.T) {
	files := protobufFiles(t)
	md, err := files.Message(ProtobufMessage)
	if err != nil {
		t.Fatal(err)
	}
	fields := md.Fields()
	evFields := fields.ByName("events").Message().Fields()
	emptyTags, absentPages := 0, 0
	for n := uint64(0); n < 50; n++ {
		b := MakeBatch(7, n)
		framed := b.AppendProtobufConfluent(nil, 42)
		fr, err := protoschema.ParseFrame(framed)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		if fr.ID != 42 || !bytes.Equal(fr.Path, []byte{0}) {
			t.Fatalf("batch %d: frame id %d, indexes % x", n, fr.ID, fr.Path)
		}
		if at, err := files.MessageAt(fr.Indexes(nil)); err != nil || at != md {
			t.Fatalf("batch %d: the frame names %v, %v; want %s", n, at, err, md.FullName())
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(fr.Payload, m); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		if len(m.GetUnknown()) != 0 {
			t.Fatalf("batch %d: unknown fields % x", n, m.GetUnknown())
		}
		if got := m.Get(fields.ByName("batch_id")).Uint(); got != b.ID {
			t.Fatalf("batch %d: batch_id %d", n, got)
		}
		if got := m.Get(fields.ByName("source")).String(); got != b.Source {
			t.Fatalf("batch %d: source %q, want %q", n, got, b.Source)
		}
		if got := m.Get(fields.ByName("user")).String(); got != b.User {
			t.Fatalf("batch %d: user %q, want %q", n, got, b.User)
		}
		if got := timestampOf(m.Get(fields.ByName("sent_at")).Message()); !got.Equal(b.SentAt) {
			t.Fatalf("batch %d: sent_at %v, want %v", n, got, b.SentAt)
		}
		evs := m.Get(fields.ByName("events")).List()
		if evs.Len() != len(b.Events) {
			t.Fatalf("batch %d: %d events, want %d", n, evs.Len(), len(b.Events))
		}
		for i := range evs.Len() {
			ev, e := evs.Get(i).Message(), b.Events[i]
			if got := timestampOf(ev.Get(evFields.ByName("ts")).Message()); !got.Equal(e.TS) {
				t.Fatalf("batch %d event %d: ts %v, want %v", n, i, got, e.TS)
			}
			if ev.Get(evFields.ByName("kind")).String() != e.Kind || ev.Get(evFields.ByName("value")).Int() != e.Value {
				t.Fatalf("batch %d event %d: %v, want %+v", n, i, ev, e)
			}
			page := evFields.ByName("page")
			switch {
			case e.Page == nil && ev.Has(page):
				t.Fatalf("batch %d event %d: page %q, want absent", n, i, ev.Get(page).String())
			case e.Page != nil && (!ev.Has(page) || ev.Get(page).String() != *e.Page):
				t.Fatalf("batch %d event %d: page %v, want %q", n, i, ev.Get(page), *e.Page)
			case e.Page == nil:
				absentPages++
			}
			tags := ev.Get(evFields.ByName("tags")).List()
			var got []string
			for j := range tags.Len() {
				got = append(got, tags.Get(j).String())
			}
			if !slices.Equal(got, e.Tags) {
				t.Fatalf("batch %d event %d: tags %v, want %v", n, i, got, e.Tags)
			}
			if len(e.Tags) == 0 {
				emptyTags++
			}
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fr.Payload, want) {
			t.Fatalf("batch %d: encoding differs from proto.Marshal's:\n got % x\nwant % x", n, fr.Payload, want)
		}
	}
	// The data set holds the cases the encoder leaves out: batch 0's
	// zero batch_id, absent pages, events without tags.
	if emptyTags == 0 || absentPages == 0 {
		t.Fatalf("%d events without tags, %d without a page: the set misses a case", emptyTags, absentPages)
	}
}

func TestProtobufEncodingAllocatesOnlyTheRecord(t *testing.T) {
	b := MakeBatch(1, 3)
	buf := b.AppendProtobufConfluent(nil, 1)
	if n := testing.AllocsPerRun(20, func() { buf = b.AppendProtobufConfluent(buf[:0], 1) }); n != 0 {
		t.Fatalf("appending into a buffer large enough allocates %v times", n)
	}
}

// BenchmarkAppendProtobuf: the cost of one record (a batch of 100
// events): its encoding alone, next to the Avro encoding of the same
// batch, and with its making, as etl gen pays it.
func BenchmarkAppendProtobuf(b *testing.B) {
	batch := MakeBatch(1, 3)
	var buf []byte
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			buf = batch.AppendProtobufConfluent(buf[:0], 1)
		}
		b.ReportMetric(float64(len(buf)), "bytes/record")
	})
	b.Run("encode-avro", func(b *testing.B) {
		for b.Loop() {
			buf = batch.AppendAvro(AppendConfluent(buf[:0], 1))
		}
		b.ReportMetric(float64(len(buf)), "bytes/record")
	})
	b.Run("make+encode", func(b *testing.B) {
		n := uint64(0)
		for b.Loop() {
			buf = MakeBatch(1, n).AppendProtobufConfluent(buf[:0], 1)
			n++
		}
	})
}
