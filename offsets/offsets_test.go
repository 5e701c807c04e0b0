package offsets

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/testenv"
)

// TestPendingBlocksAndReset against a broker: Describe reads the
// exactly-once blocks in the commit metadata that are not yet below the
// committed offset, lag and log ends; Plan by offset clamps into the log
// and lists the blocks it drops; Execute commits the new offsets with the
// metadata cleared.
func TestPendingBlocksAndReset(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "orders", 2)
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	kb.Produce(t, "orders", recs)
	cl := kb.Client(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 10, LeaderEpoch: -1, Metadata: "etl1:4-10,10-13,13-15"})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 15, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	r, err := Describe(ctx, adm, "g", []string{"orders"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "Empty" || len(r.Members) != 0 || len(r.Partitions) != 2 {
		t.Fatalf("report %+v", r)
	}
	p0, p1 := r.Partitions[0], r.Partitions[1]
	if p0.Committed != 10 || p0.End != 15 || p0.Lag != 5 || fmt.Sprint(p0.Pending) != "[[10 13] [13 15]]" || p0.MetadataBytes != len("etl1:4-10,10-13,13-15") {
		t.Fatalf("partition 0: %+v", p0)
	}
	if p1.Committed != 15 || p1.End != 15 || p1.Lag != 0 || len(p1.Pending) != 0 || p1.MetadataBytes != 0 {
		t.Fatalf("partition 1: %+v", p1)
	}
	if _, err := Describe(ctx, adm, "g", []string{"orders", "missing"}); err == nil {
		t.Fatal("a topic that does not exist was described")
	}

	target, err := ParseTarget("12")
	if err != nil {
		t.Fatal(err)
	}
	moves, err := Plan(ctx, adm, r, []string{"orders"}, []int32{0}, target)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", moves) != "[{Topic:orders Partition:0 From:10 To:12 Clamped:false Cleared:[[10 13] [13 15]]}]" {
		t.Fatalf("plan %+v", moves)
	}
	target, _ = ParseTarget("99")
	if moves, err = Plan(ctx, adm, r, []string{"orders"}, nil, target); err != nil || len(moves) != 2 || moves[1].To != 15 || !moves[1].Clamped {
		t.Fatalf("an offset past the end: %+v, %v", moves, err)
	}
	if _, err := Plan(ctx, adm, r, []string{"orders"}, []int32{7}, target); err == nil {
		t.Fatal("partition 7 was planned")
	}
	target, _ = ParseTarget("earliest")
	moves, _ = Plan(ctx, adm, r, []string{"orders"}, []int32{0}, target)
	if err := Execute(ctx, adm, "g", moves); err != nil {
		t.Fatal(err)
	}
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	o0, _ := fetched.Lookup("orders", 0)
	o1, _ := fetched.Lookup("orders", 1)
	if o0.At != 0 || o0.Metadata != "" || o1.At != 15 {
		t.Fatalf("after the reset: partition 0 at %d metadata %q, partition 1 at %d", o0.At, o0.Metadata, o1.At)
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{"earliest": "earliest", "latest": "latest", "42": "42", "2026-12-01T10:00:00Z": "2026-12-01T10:00:00Z", "2026-12-01T10:00:00.5+01:00": "2026-12-01T10:00:00.5+01:00"} {
		got, err := ParseTarget(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseTarget(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "-1", "yesterday", "2026-12-01"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) took it", bad)
		}
	}
}
