package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitRequest(member string, parts map[string][]int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.MemberID = member
	for t, ps := range parts {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestOwnershipCheck: a commit request goes out only when every partition
// on it was assigned under the member id the request carries: the check
// that catches a commit built after the client rejoined under a new member
// id but before the assignment callbacks ran (a window too narrow to stage
// against a broker).
func TestOwnershipCheck(t *testing.T) {
	o := newOwnership()
	o.set(Partitions{"t": {0, 1}}, "m1")
	if err := o.check(commitRequest("m1", map[string][]int32{"t": {0, 1}})); err != nil {
		t.Fatalf("commit of owned partitions under their member id refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		member string
		parts  map[string][]int32
		want   string
	}{
		{"new member id", "m2", map[string][]int32{"t": {0}}, `assigned to this client as group member "m1", and the client is now member "m2"`},
		{"no member id", "", map[string][]int32{"t": {1}}, `and the client is now member ""`},
		{"not assigned", "m1", map[string][]int32{"t": {0, 2}}, "t/2 not sent: the partition is not assigned"},
		{"other topic", "m1", map[string][]int32{"u": {0}}, "u/0 not sent"},
	} {
		err := o.check(commitRequest(c.member, c.parts))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Reassigned under the new member id, the partition may be committed
	// again; dropped, it may not.
	o.set(Partitions{"t": {0}}, "m2")
	if err := o.check(commitRequest("m2", map[string][]int32{"t": {0}})); err != nil {
		t.Errorf("after reassignment: %v", err)
	}
	o.drop(Partitions{"t": {0}})
	if err := o.check(commitRequest("m2", map[string][]int32{"t": {0}})); err == nil {
		t.Errorf("a dropped partition's commit was allowed")
	}
	// split and stale name the partitions of another membership.
	same, other := o.split(Partitions{"t": {0, 1}}, "m2")
	if len(other["t"]) != 1 || other["t"][0] != 1 || len(same["t"]) != 1 || same["t"][0] != 0 {
		t.Errorf("split = %v, %v; want t/0 same (not owned), t/1 other", same, other)
	}
	if st := o.stale("m2"); len(st["t"]) != 1 || st["t"][0] != 1 {
		t.Errorf("stale = %v, want t/1", st)
	}
}

// TestOwnershipRestart: restarts of partitions of one topic at different
// assignments keep every floor, and the seek is handed over once.
func TestOwnershipRestart(t *testing.T) {
	o := newOwnership()
	o.restart(map[string]map[int32]int64{"t": {0: 10}})
	if s := o.takeSeek(); s["t"][0].Offset != 10 {
		t.Fatalf("seek = %v, want t/0 at 10", s)
	}
	if s := o.takeSeek(); s != nil {
		t.Fatalf("second takeSeek = %v, want nil", s)
	}
	o.restart(map[string]map[int32]int64{"t": {1: 20}})
	if o.floor["t"][0] != 10 || o.floor["t"][1] != 20 {
		t.Fatalf("floors = %v, want t/0 10 and t/1 20", o.floor)
	}
}

// TestOwnershipDropClears: once every restarted partition is dropped, the
// poll loop's fast path sees no floor and no seek.
func TestOwnershipDropClears(t *testing.T) {
	o := newOwnership()
	o.restart(map[string]map[int32]int64{"t": {0: 10, 1: 20}})
	o.drop(Partitions{"t": {0, 1}})
	if o.hasFloors() {
		t.Errorf("floors left after the drop: %v", o.floor)
	}
	if s := o.takeSeek(); s != nil {
		t.Errorf("seek left after the drop: %v", s)
	}
}
