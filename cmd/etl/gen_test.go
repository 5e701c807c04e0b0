package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestGenExistingTopic: `etl gen` spreads records over all partitions of
// an existing topic, whatever its count, and refuses a -partitions above
// it with a clear message.
func TestGenExistingTopic(t *testing.T) {
	kb := testenv.Kafka(t)
	for _, n := range []int{2, 9} {
		topic := "gen" + string(rune('0'+n))
		kb.CreateTopic(t, topic, n)
		var out, errb bytes.Buffer
		if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", topic, "-count", "90"}, &out, &errb); code != exitOK {
			t.Fatalf("%d partitions: exit %d: %s", n, code, errb.String())
		}
		end := kb.EndOffsets(t, topic)
		total := int64(0)
		for p := int32(0); p < int32(n); p++ {
			if end[p] == 0 {
				t.Errorf("%d partitions: partition %d got nothing (%v)", n, p, end)
			}
			total += end[p]
		}
		if total != 90 {
			t.Errorf("%d partitions: %d records, want 90", n, total)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", "gen2", "-partitions", "6", "-count", "10"}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "topic gen2 has 2 partitions, fewer than -partitions 6") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// TestGenProtobuf: `etl gen -format nested-protobuf` registers the batch's
// schema with a reference to the event's, and produces Confluent-framed
// records that resolve through the registry (the reference included) to
// the batches gen makes.
func TestGenProtobuf(t *testing.T) {
	kb := testenv.Kafka(t)
	srv := registrytest.New(t)
	kb.CreateTopic(t, "pb", 2)
	var out, errb bytes.Buffer
	args := []string{"gen", "-brokers", kb.Addr(), "-topic", "pb", "-format", "nested-protobuf", "-registry", srv.URL(), "-seed", "3", "-count", "6"}
	if code := run(args, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "produced 6 records") || !strings.Contains(out.String(), "rows the benchmark's chain keeps") {
		t.Fatalf("output: %s", out.String())
	}

	c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := protoschema.NewRegistry(c)
	cl := kb.Client(t, kgo.ConsumeTopics("pb"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[uint64]bool{}
	for len(seen) < 6 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 6 records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseUint(string(r.Key), 10, 64)
			if err != nil {
				t.Fatalf("key %q: %v", r.Key, err)
			}
			fr, err := protoschema.ParseFrame(r.Value)
			if err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
			files, err := reg.Fetch(ctx, fr.ID)
			if err != nil {
				t.Fatalf("record %d: schema id %d: %v", n, fr.ID, err)
			}
			md, err := files.MessageAt(fr.Indexes(nil))
			if err != nil || md.FullName() != gen.ProtobufMessage {
				t.Fatalf("record %d: message %v, %v", n, md, err)
			}
			if err := proto.Unmarshal(fr.Payload, dynamicpb.NewMessage(md)); err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
			if want := gen.MakeBatch(3, n).AppendProtobuf(nil); !bytes.Equal(fr.Payload, want) {
				t.Fatalf("record %d is not batch %d of seed 3", n, n)
			}
			seen[n] = true
		})
	}

	// -ddl gives the nested-Avro table.
	out.Reset()
	if code := run([]string{"gen", "-format", "protobuf", "-ddl", "-table", "db.t"}, &out, &errb); code != exitOK || strings.TrimSpace(out.String()) != gen.NestedDDL("db", "t") {
		t.Fatalf("-ddl: exit %d: %s", code, out.String())
	}
	// Without a registry: a usage error.
	errb.Reset()
	if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", "pb", "-format", "nested-protobuf", "-registry", ""}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "-format nested-protobuf needs -registry") {
		t.Fatalf("no registry: exit %d: %s", code, errb.String())
	}
}
