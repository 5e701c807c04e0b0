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
// time it resumes. So a resume of a partition whose broker holds a fetch
// restarts the client's fetches: the poll loop sets the resumed partitions
// to their positions (SetOffsets), which ends the fetches in flight, drops
// what the client buffered (read again from the same offsets) and fetches
// again at once, the resumed partitions included.
//
// A fetch is taken as held when it has been out for heldAfter: one that
// brings records comes back within milliseconds on a local network. A
// resume while the broker's fetch is out but younger looks again when it
// is heldAfter old, and restarts the fetches if that same fetch is still
// out and the partition still resumed.

// heldAfter: a fetch out this long is taken as held by the broker.
const heldAfter = 100 * time.Millisecond

// fetchFlights follows each broker's fetches (the client's hooks): whether
// one is out (its request written, its answer not read yet), since when,
// and its number.
type fetchFlights struct {
	mu sync.Mutex
	by map[int32]*fetchFlight
}

type fetchFlight struct {
	out bool
	seq uint64    // the number of the fetch out
	at  time.Time // when the fetch out was written
}

func (f *fetchFlights) get(node int32) *fetchFlight {
	if f.by == nil {
		f.by = map[int32]*fetchFlight{}
	}
	x := f.by[node]
	if x == nil {
		x = &fetchFlight{}
		f.by[node] = x
	}
	return x
}

// written: a fetch request went out to node.
func (f *fetchFlights) written(node int32) {
	f.mu.Lock()
	x := f.get(node)
	x.out, x.at = true, time.Now()
	x.seq++
	f.mu.Unlock()
}

// answered: node's answer was read (or the request failed).
func (f *fetchFlights) answered(node int32) {
	f.mu.Lock()
	f.get(node).out = false
	f.mu.Unlock()
}

// outAt reports the fetch out at node (at any broker when node < 0): the
// broker it is at, how long it has been out and its number; ok is false
// when no fetch is out there.
func (f *fetchFlights) outAt(node int32) (at int32, age time.Duration, seq uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, x := range f.by {
		if (node < 0 || n == node) && x.out {
			return n, time.Since(x.at), x.seq, true
		}
	}
	return 0, 0, 0, false
}

// stillOut reports whether the fetch numbered seq is still out at node.
func (f *fetchFlights) stillOut(node int32, seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.by[node]
	return x != nil && x.out && x.seq == seq
}

// pausedSet is the partitions the source has paused.
type pausedSet struct {
	mu sync.Mutex
	m  map[topicPartition]bool
}

func (ps *pausedSet) set(p Partitions, paused bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[topicPartition]bool{}
	}
	for t, parts := range p {
		for _, part := range parts {
			if paused {
				ps.m[topicPartition{t, part}] = true
			} else {
				delete(ps.m, topicPartition{t, part})
			}
		}
	}
}

// any reports whether a partition of p is paused.
func (ps *pausedSet) any(p Partitions) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for t, parts := range p {
		for _, part := range parts {
			if ps.m[topicPartition{t, part}] {
				return true
			}
		}
	}
	return false
}

// Pause stops fetching p. Records already polled are the caller's; records
// buffered by the client for p are fetched again after Resume.
func (s *Source) Pause(p Partitions) {
	s.paused.set(p, true)
	s.cl.PauseFetchPartitions(p)
}

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

// Resume restarts fetching p, and asks for a restart of the fetches when
// the broker of one of p's partitions holds a fetch (see fetchFlights).
func (s *Source) Resume(p Partitions) {
	s.paused.set(p, false)
	s.cl.ResumeFetchPartitions(p)
	for t, ps := range p {
		for _, part := range ps {
			leader, _, err := s.cl.PartitionLeader(t, part)
			if err != nil {
				leader = -1
			}
			node, age, seq, out := s.flights.outAt(leader)
			if !out {
				continue // the next fetch asks for the partition
			}
			if age >= heldAfter {
				s.restarts.add(p)
				return
			}
			// The fetch out may yet be held: look again once it is
			// heldAfter old.
			time.AfterFunc(heldAfter-age, func() {
				if s.flights.stillOut(node, seq) && !s.paused.any(p) {
					s.restarts.add(p)
				}
			})
			return
		}
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
