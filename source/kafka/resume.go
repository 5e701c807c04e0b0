package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A resumed partition joins the client's next fetch to its broker, after
// the fetch in flight. When every partition of that fetch is idle the
// broker holds it for up to fetch_max_wait, and the resumed partition's
// records wait as long: at the end of a backlog whose last partition was
// paused by a full queue, or for a busy partition among idle ones each
// time it resumes. So a resume that comes while the polls have returned
// no record for restartIdle (a held fetch, most likely) restarts the
// client's fetches: the poll loop sets the resumed partitions to their
// positions (SetOffsets), which ends the fetches in flight, drops what the
// client buffered (read again from the same offsets) and fetches again at
// once, the resumed partitions included.

// restartIdle: a resume after this long without a record polled restarts
// the fetches. A fetch that brings records is answered within a few
// milliseconds on a local network; one held over idle partitions takes
// fetch_max_wait.
const restartIdle = 50 * time.Millisecond

// restarts holds the partitions whose resume asks for a restart of the
// fetches, until the poll loop takes them, and the cancel of the poll in
// progress, so that a restart does not wait for the poll's bound.
type restarts struct {
	mu     sync.Mutex
	parts  Partitions
	cancel context.CancelFunc // the poll in progress (nil between polls)
}

// add asks for a restart for p and ends the poll in progress.
func (r *restarts) add(p Partitions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, ps := range p {
		r.parts = addPartitions(r.parts, t, ps)
	}
	if r.cancel != nil {
		r.cancel()
	}
}

// polling records the cancel of the poll that starts, and ends it at
// once when a restart is pending; polled forgets it.
func (r *restarts) polling(cancel context.CancelFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel = cancel
	if r.parts != nil {
		cancel()
	}
}

func (r *restarts) polled() {
	r.mu.Lock()
	r.cancel = nil
	r.mu.Unlock()
}

// take returns the pending partitions and forgets them.
func (r *restarts) take() Partitions {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts
	r.parts = nil
	return p
}

// drop forgets the pending restarts of p (revoked, lost or assigned
// again): a position read before a rebalance is not the partition's
// after it.
func (r *restarts) drop(p Partitions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, ps := range p {
		for _, part := range ps {
			if len(r.parts[t]) == 0 {
				break
			}
			kept := r.parts[t][:0]
			for _, x := range r.parts[t] {
				if x != part {
					kept = append(kept, x)
				}
			}
			r.parts[t] = kept
			if len(kept) == 0 {
				delete(r.parts, t)
			}
		}
	}
	if len(r.parts) == 0 {
		r.parts = nil
	}
}

// Resume restarts fetching p; see restartIdle.
func (s *Source) Resume(p Partitions) {
	s.cl.ResumeFetchPartitions(p)
	if time.Since(time.Unix(0, s.lastRecords.Load())) >= restartIdle {
		s.restarts.add(p)
	}
}

// restartResumed is the poll loop's part of a restart, while no rebalance
// runs and after the poll's records were handed over: the resumed
// partitions are set to the positions where their next records start,
// which restarts the client's fetches. A partition whose position is not
// known (nothing handed over since its assignment) or that moved in this
// poll (seeked) is left as it is.
func (s *Source) restartResumed(seeked map[string]map[int32]kgo.EpochOffset) {
	p := s.restarts.take()
	if p == nil {
		return
	}
	var set map[string]map[int32]kgo.EpochOffset
	for t, ps := range p {
		for _, part := range ps {
			if _, moved := seeked[t][part]; moved {
				continue
			}
			off, ok := s.pos.get(t, part)
			if !ok {
				continue
			}
			if set == nil {
				set = map[string]map[int32]kgo.EpochOffset{}
			}
			if set[t] == nil {
				set[t] = map[int32]kgo.EpochOffset{}
			}
			set[t][part] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	if set == nil {
		return
	}
	s.cl.SetOffsets(set)
	s.metrics.restarts.Inc()
}
