package pipeline

import (
	"fmt"
	"strings"
	"sync"

	"github.com/etl-project/etl/checkpoint"
)

// uncommitted remembers written records whose commit was given up: their
// partitions were lost, or the commit on their revoke failed. Until the
// group assigns partitions to this member again, a stop cannot commit
// them, so Run returns ErrCommitFailed rather than a clean stop: the
// final commit did not cover everything written.
type uncommitted struct {
	mu  sync.Mutex
	err error
}

// note records that the written records of the partitions given up (for
// what) will not be committed: up to the offsets of l.pending, and the
// chunks still in flight on l.inFlight.
func (u *uncommitted) note(what string, l unsettled, cause error) {
	pending, inFlight := l.pending, l.inFlight
	if len(pending) == 0 && len(inFlight) == 0 {
		return
	}
	var parts []string
	for _, c := range pending {
		parts = append(parts, fmt.Sprintf("%s/%d written up to offset %d", c.Topic, c.Partition, c.Offset))
	}
	for _, tp := range inFlight {
		parts = append(parts, fmt.Sprintf("%s/%d with inserts in flight", tp.Topic, tp.Partition))
	}
	msg := fmt.Sprintf("%s before their written records were committed: %s", what, strings.Join(parts, ", "))
	if cause != nil {
		msg += ": " + cause.Error()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = fmt.Errorf("%s", msg)
	}
}

// clear forgets what was given up: the group assigned partitions again,
// and their new owner reads on from the committed offsets.
func (u *uncommitted) clear() {
	u.mu.Lock()
	u.err = nil
	u.mu.Unlock()
}

func (u *uncommitted) get() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// unsettled is what of some lanes is written and not committed.
type unsettled struct {
	pending  []checkpoint.Commit // the commits pending
	inFlight []TopicPartition    // lanes with chunks not yet acknowledged
}

// finalCommitErr is the final commit's error, or, when it succeeded, the
// records given up since the last assignment: partitions lost (or revoked
// with a failed commit) whose written records the final commit could not
// cover.
func (p *Pipeline) finalCommitErr(commitErr error) error {
	if commitErr != nil {
		return commitErr
	}
	err := p.given.get()
	if err != nil {
		p.log.Error("final commit incomplete: records since the last commit will be read again", "err", err)
	}
	return err
}

// lanesPending returns, with the commit lock held, the commits pending for the
// partitions of lanes and those of lanes with chunks handed to the sinks
// and not yet acknowledged.
func (p *Pipeline) lanesPending(lanes []*lane) unsettled {
	if len(lanes) == 0 {
		return unsettled{}
	}
	only := map[TopicPartition]bool{}
	var inFlight []TopicPartition
	for _, l := range lanes {
		only[l.tp] = true
	}
	pending := p.tracker.Pending(only)
	for _, l := range lanes {
		if l.outstanding.Load() == 0 {
			continue
		}
		found := false
		for _, c := range pending {
			found = found || c.TopicPartition == l.tp
		}
		if !found {
			inFlight = append(inFlight, l.tp)
		}
	}
	return unsettled{pending, inFlight}
}
