package pipeline

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/source/kafka"
)

// partitionPauser is the part of the source the pauser drives.
type partitionPauser interface {
	Pause(kafka.Partitions)
	Resume(kafka.Partitions)
}

// pauser decides which partitions are paused at the source. A partition is
// paused while its lane is over its read-ahead (from the moment the lane,
// waiting for a full shard queue, holds backpressure.partition_read_ahead
// undecoded bytes until it has decoded them down to a quarter, waiting or
// not), while its lane waits for a full queue after decoding at least its
// read-ahead since the partition was last resumed (or with no
// read-ahead), while its lane waits for exactly-once open blocks, or
// while the byte budget holds the whole source paused. Pausing has a
// price: the client drops what it already fetched for a partition it
// pauses and fetches it again after the resume; these rules keep that to
// about one fetch per read-ahead of records decoded, and a lane that is
// decoding is never paused for what it holds (the budget bounds it). A
// lane rebuilding an exactly-once block that a previous owner registered
// is exempt from the budget's and the read-ahead's pause: the block can
// only end at its registered end, and its records must be fetched for the
// block to be sealed and its bytes released.
type pauser struct {
	src   partitionPauser
	gauge prometheus.Gauge

	mu        sync.Mutex
	budget    bool
	assigned  map[TopicPartition]*lane
	blocked   map[TopicPartition]blockedLane
	replaying map[TopicPartition]bool
	paused    map[TopicPartition]bool
}

// blockedLane is a blocked lane and what it waits for (a dest, or
// blockedOnBlocks).
type blockedLane struct {
	l    *lane
	dest int
}

func newPauser(src partitionPauser, gauge prometheus.Gauge) *pauser {
	return &pauser{src: src, gauge: gauge, assigned: map[TopicPartition]*lane{},
		blocked: map[TopicPartition]blockedLane{}, replaying: map[TopicPartition]bool{}, paused: map[TopicPartition]bool{}}
}

// apply pauses or resumes tps to match the wanted state. Called with mu held.
func (ps *pauser) apply(tps ...TopicPartition) {
	var pause, resume kafka.Partitions
	for _, tp := range tps {
		want := false
		if l := ps.assigned[tp]; l != nil {
			b, blocked := ps.blocked[tp]
			over, decoded := l.pauseState()
			want = (blocked && (b.dest == blockedOnBlocks || l.readAhead == 0 || decoded >= l.readAhead)) ||
				(!ps.replaying[tp] && (ps.budget || over))
			if !want && ps.paused[tp] {
				l.resumed()
			}
		}
		if want == ps.paused[tp] {
			continue
		}
		if want {
			ps.paused[tp] = true
			if pause == nil {
				pause = kafka.Partitions{}
			}
			pause[tp.Topic] = append(pause[tp.Topic], tp.Partition)
		} else {
			delete(ps.paused, tp)
			if resume == nil {
				resume = kafka.Partitions{}
			}
			resume[tp.Topic] = append(resume[tp.Topic], tp.Partition)
		}
	}
	if pause != nil {
		ps.src.Pause(pause)
	}
	if resume != nil {
		ps.src.Resume(resume)
	}
	ps.gauge.Set(float64(len(ps.paused)))
}

// assign starts following l's partition.
func (ps *pauser) assign(l *lane) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.assigned[l.tp] = l
	ps.apply(l.tp)
}

func (ps *pauser) unassign(tp TopicPartition) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.assigned, tp)
	delete(ps.blocked, tp)
	delete(ps.replaying, tp)
	if ps.paused[tp] {
		// The client forgets the partition with the assignment; resume so
		// that a later assignment of it starts unpaused.
		delete(ps.paused, tp)
		ps.src.Resume(kafka.Partitions{tp.Topic: {tp.Partition}})
	}
	ps.gauge.Set(float64(len(ps.paused)))
}

// block records that l waits for dest, pausing its partition when the
// rules above say so (open blocks, no read-ahead, a read-ahead decoded
// since the last resume, or the lane over its read-ahead). A lane that is
// no longer its partition's (revoked, perhaps assigned again since) is
// ignored.
func (ps *pauser) block(l *lane, dest int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.assigned[l.tp] != l {
		return
	}
	ps.blocked[l.tp] = blockedLane{l, dest}
	ps.apply(l.tp)
}

// refresh pauses or resumes l's partition after l went over its
// read-ahead or fell back under it. The state is read under the pauser's
// lock: whatever the order in which callers get here, the last one leaves
// the partition as the lane is.
func (ps *pauser) refresh(l *lane) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.assigned[l.tp] == l {
		ps.apply(l.tp)
	}
}

// unblock undoes block.
func (ps *pauser) unblock(l *lane) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.blocked[l.tp].l == l {
		delete(ps.blocked, l.tp)
		ps.apply(l.tp)
	}
}

// takeBlocked unblocks the lanes blocked on dest and returns them.
func (ps *pauser) takeBlocked(dest int) []*lane {
	return ps.takeBlockedIf(dest, func(*lane) bool { return true })
}

// takeBlockedIf unblocks the lanes blocked on dest for which ok holds
// (called with the pauser's lock held) and returns them in topic and
// partition order: the order in which they are woken, and so run, does
// not depend on the map's iteration order (a simulated seed replays).
func (ps *pauser) takeBlockedIf(dest int, ok func(*lane) bool) []*lane {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*lane
	for tp, b := range ps.blocked {
		if b.dest == dest && ok(b.l) {
			out = append(out, b.l)
			delete(ps.blocked, tp)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b *lane) int { return compareTP(a.tp, b.tp) })
	tps := make([]TopicPartition, len(out))
	for i, l := range out {
		tps[i] = l.tp
	}
	ps.apply(tps...)
	return out
}

// compareTP orders partitions by topic, then partition.
func compareTP(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// followBudget pauses or resumes every assigned partition to match the
// budget's state, read under the pauser's lock: whatever the order in
// which callers get here, the last one leaves the pauser as the budget is.
// Lock order: pauser.mu, then the budget's.
func (ps *pauser) followBudget(b *backpressure.Budget, yield func(hookPoint, *lane)) {
	defer yield(hookFollowedBudget, nil) // runs after the deferred unlock below
	yield(hookFollowBudget, nil)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	paused := b.Paused()
	if paused == ps.budget {
		return
	}
	ps.budget = paused
	tps := make([]TopicPartition, 0, len(ps.assigned))
	for tp := range ps.assigned {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	ps.apply(tps...)
}

// setReplaying exempts l's partition from the budget's pause while l
// rebuilds a previous owner's exactly-once blocks (on), or ends that.
func (ps *pauser) setReplaying(l *lane, on bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.assigned[l.tp] != l || ps.replaying[l.tp] == on {
		return
	}
	if on {
		ps.replaying[l.tp] = true
	} else {
		delete(ps.replaying, l.tp)
	}
	ps.apply(l.tp)
}

func (ps *pauser) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.paused)
}
