package pipeline

import (
	"fmt"
	"strings"
	"sync"
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

// note records that the records written up to the offsets of pending (and
// the chunks still in flight on inFlight partitions) of the partitions
// given up for what will not be committed.
func (u *uncommitted) note(what string, pending []Commit, inFlight []TopicPartition, cause error) {
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

// lanesPending returns, with commitMu held, the commits pending for the
// partitions of lanes and those of lanes with chunks handed to the sinks
// and not yet acknowledged.
func (p *Pipeline) lanesPending(lanes []*lane) ([]Commit, []TopicPartition) {
	if len(lanes) == 0 {
		return nil, nil
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
	return pending, inFlight
}
