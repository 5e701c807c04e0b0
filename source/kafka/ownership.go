package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Ownership: which group membership each partition was assigned under.
//
// A member the group has dropped (its session expired while it was frozen,
// paused by the kernel or cut off) can rejoin without franz-go reporting
// its partitions lost: when the first sign is a refused commit, or a
// heartbeat answered "rebalance in progress", the client rejoins with its
// old member id, is told that id is unknown, and joins again as a new
// member still claiming the partitions it had. Meanwhile another member
// owned them and committed past what this one holds. franz-go then either
// revokes them the ordinary way (and the revoke's commit, sent under the
// new membership, is accepted: the old watermark overwrites the new
// owner's) or lets the member keep them, consuming on from its old fetch
// position. Both break "committed only up to what is durable".
//
// The source therefore records the member id each partition was assigned
// under and treats a partition whose member id is no longer the client's
// as lost: a revoke of it is reported as a loss (nothing committed), a
// partition kept across the change is reported lost and assigned again,
// restarting from the group's committed offset, and a commit naming a
// partition under another member id than the one on the request is not
// sent (checked on the request itself, just before it goes out).
type ownership struct {
	mu sync.Mutex
	// by is the member id of each owned partition's assignment ("" for a
	// partition kept across a member change that could not be restarted:
	// it is retried at the next assignment).
	by map[string]map[int32]string
	// seek: offsets the poll loop sets before it hands over more records
	// of those partitions (franz-go wants SetOffsets called from the
	// polling goroutine while no rebalance can run).
	seek map[string]map[int32]kgo.EpochOffset
	// floor: records below it are dropped (they were fetched from the old
	// position before the seek took effect).
	floor map[string]map[int32]int64
}

func newOwnership() *ownership {
	return &ownership{by: map[string]map[int32]string{}, seek: map[string]map[int32]kgo.EpochOffset{}, floor: map[string]map[int32]int64{}}
}

func (o *ownership) set(p Partitions, member string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range p {
		if o.by[t] == nil {
			o.by[t] = map[int32]string{}
		}
		for _, part := range ps {
			o.by[t][part] = member
		}
	}
}

// drop forgets p (revoked or lost): their seeks and floors go too.
func (o *ownership) drop(p Partitions) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range p {
		for _, part := range ps {
			delete(o.by[t], part)
			delete(o.seek[t], part)
			delete(o.floor[t], part)
		}
		// No empty topic maps: the poll loop's fast path looks at the
		// maps' lengths.
		if len(o.seek[t]) == 0 {
			delete(o.seek, t)
		}
		if len(o.floor[t]) == 0 {
			delete(o.floor, t)
		}
	}
}

// split divides p into the partitions assigned under member and those
// assigned under another membership.
func (o *ownership) split(p Partitions, member string) (same, other Partitions) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range p {
		for _, part := range ps {
			if by, ok := o.by[t][part]; ok && by != member {
				other = addPartitions(other, t, []int32{part})
			} else {
				same = addPartitions(same, t, []int32{part})
			}
		}
	}
	return same, other
}

// stale returns the owned partitions assigned under another membership
// than member.
func (o *ownership) stale(member string) Partitions {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out Partitions
	for t, ps := range o.by {
		for part, by := range ps {
			if by != member {
				out = addPartitions(out, t, []int32{part})
			}
		}
	}
	return out
}

// check refuses a commit request that names a partition not owned under
// the request's member id.
func (o *ownership) check(req *kmsg.OffsetCommitRequest) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			by, ok := o.by[t.Topic][p.Partition]
			switch {
			case !ok:
				return fmt.Errorf("commit of %s/%d not sent: the partition is not assigned to this member", t.Topic, p.Partition)
			case by != req.MemberID:
				return fmt.Errorf("commit of %s/%d not sent: the partition was assigned to this client as group member %q, and the client is now member %q "+
					"(the group dropped it in between, and another member may have committed since): the partition is lost", t.Topic, p.Partition, by, req.MemberID)
			}
		}
	}
	return nil
}

// restart records where the poll loop must restart p: each partition's
// offset is set at the next poll and records below it are dropped.
func (o *ownership) restart(at map[string]map[int32]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range at {
		if o.seek[t] == nil {
			o.seek[t] = map[int32]kgo.EpochOffset{}
		}
		if o.floor[t] == nil {
			o.floor[t] = map[int32]int64{}
		}
		for part, off := range ps {
			o.seek[t][part] = kgo.EpochOffset{Epoch: -1, Offset: off}
			o.floor[t][part] = off
		}
	}
}

// takeSeek returns the pending seeks (nil when none) and clears them.
func (o *ownership) takeSeek() map[string]map[int32]kgo.EpochOffset {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seek) == 0 {
		return nil
	}
	s := o.seek
	o.seek = map[string]map[int32]kgo.EpochOffset{}
	return s
}

// filter drops the records of p below its floor; in the poll that applied
// the seek (seeked) it drops them all: they were fetched from the old
// position.
func (o *ownership) filter(p *kgo.FetchTopicPartition, seeked map[string]map[int32]kgo.EpochOffset) {
	if _, ok := seeked[p.Topic][p.Partition]; ok {
		p.Records = nil
		return
	}
	o.mu.Lock()
	floor, ok := o.floor[p.Topic][p.Partition]
	o.mu.Unlock()
	if !ok {
		return
	}
	k := 0
	for _, r := range p.Records {
		if r.Offset >= floor {
			p.Records[k] = r
			k++
		}
	}
	p.Records = p.Records[:k]
}

// hasFloors reports whether any floor is set (the poll loop's fast path).
func (o *ownership) hasFloors() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.floor) > 0
}

// restartOffsets is where partitions kept across a member change restart:
// the group's committed offset (moved into the log when outside it), or,
// where nothing is committed, where the
// start_offset policy starts a partition (its log start for earliest, its
// end for latest).
func (s *Source) restartOffsets(ctx context.Context, p Partitions) (map[string]map[int32]int64, error) {
	committed, err := s.FetchCommitted(ctx, p)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	var none []string
	for t, ps := range p {
		out[t] = map[int32]int64{}
		for _, part := range ps {
			c, ok := committed[t][part]
			if !ok {
				return nil, fmt.Errorf("the broker did not return the committed offset of %s/%d", t, part)
			}
			if c.Offset >= 0 {
				out[t][part] = c.Offset
			} else if !slices.Contains(none, t) {
				none = append(none, t)
			}
		}
	}
	// A committed offset outside the log restarts inside it, with an
	// ERROR (outofrange.go).
	for t, ps := range s.bound(ctx, out) {
		for part, to := range ps {
			out[t][part] = to
		}
	}
	if len(none) == 0 {
		return out, nil
	}
	adm := kadm.NewClient(s.cl)
	var listed kadm.ListedOffsets
	if s.o.Config.StartOffset == "latest" {
		listed, err = adm.ListEndOffsets(ctx, none...)
	} else {
		listed, err = adm.ListStartOffsets(ctx, none...)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	for t, ps := range p {
		for _, part := range ps {
			if _, ok := out[t][part]; ok {
				continue
			}
			l, ok := listed.Lookup(t, part)
			if !ok {
				return nil, fmt.Errorf("the broker did not list the offsets of %s/%d", t, part)
			}
			out[t][part] = l.Offset
		}
	}
	return out, nil
}

// restartLimit bounds the time an assignment spends reading where kept
// partitions restart.
const restartLimit = 30 * time.Second

// assigned is the OnPartitionsAssigned callback's work: partitions kept
// from an assignment under another membership are reported lost and
// assigned again, restarting from the committed offsets; then the handler
// gets the new and restarted partitions.
func (s *Source) assigned(ctx context.Context, cl *kgo.Client, p Partitions) {
	member, _ := cl.GroupMetadata()
	if stale := s.owners.stale(member); len(stale) > 0 {
		s.metrics.lost.Add(float64(count(stale)))
		s.metrics.assigned.Sub(float64(count(stale)))
		s.log.Warn("partitions lost: the group had dropped this member (session expired) and the client rejoined as a new member "+
			"keeping them; another member may have committed them since, so they restart from the group's committed offsets",
			"partitions", stale, "member_id", member)
		s.o.Handler.Lost(ctx, stale)
		s.owners.drop(stale)
		var at map[string]map[int32]int64
		var err error
		deadline := time.Now().Add(restartLimit)
		for {
			rctx, cancel := context.WithDeadline(ctx, deadline)
			at, err = s.restartOffsets(rctx, stale)
			cancel()
			if err == nil || ctx.Err() != nil || time.Now().Add(250*time.Millisecond).After(deadline) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			// Not handed over: their records are dropped until the next
			// assignment tries again.
			s.owners.set(stale, "")
			s.log.Error("partitions not consumed until the next rebalance: where they restart could not be read", "partitions", stale, "err", err)
		} else {
			s.owners.restart(at)
			for t, ps := range stale {
				p = addPartitions(p, t, ps)
			}
		}
	}
	s.owners.set(p, member)
	s.metrics.rebalances.Inc()
	s.metrics.assigned.Add(float64(count(p)))
	s.log.Info("partitions assigned", "partitions", p)
	s.o.Handler.Assigned(ctx, p)
}

// revoked reports a revoke of partitions assigned under another
// membership as a loss: their commit would overwrite the new owner's.
func (s *Source) revoked(ctx context.Context, cl *kgo.Client, p Partitions) {
	member, _ := cl.GroupMetadata()
	same, other := s.owners.split(p, member)
	s.metrics.assigned.Sub(float64(count(p)))
	if len(other) > 0 {
		s.metrics.lost.Add(float64(count(other)))
		s.log.Warn("partitions lost: revoked after the group had dropped this member (session expired) and the client rejoined as a new member; "+
			"nothing is committed for them", "partitions", other, "member_id", member)
		s.o.Handler.Lost(ctx, other)
	}
	if len(same) > 0 {
		s.log.Info("partitions revoked", "partitions", same)
		s.o.Handler.Revoked(ctx, same)
	}
	s.owners.drop(p)
}

func addPartitions(p Partitions, topic string, parts []int32) Partitions {
	if p == nil {
		p = Partitions{}
	}
	p[topic] = append(p[topic], parts...)
	return p
}
