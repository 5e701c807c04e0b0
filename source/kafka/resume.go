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
// records wait as long: for a busy partition among idle ones each time a
// full queue pauses and resumes it, or at the end of a backlog whose last
// partition was paused. So a resume of a partition whose broker holds a fetch
// restarts the client's fetches: the poll loop sets the resumed partitions
// to their positions (SetOffsets), which ends the fetches in flight, drops
// what the client buffered (read again from the same offsets) and fetches
// again at once, the resumed partitions included.
//
// A fetch is taken as held when it has been out for heldAfter and every
// partition that had records in the broker's previous answer was paused
// when its request was written (the client leaves those out, so the
// request asks for partitions that had none). A fetch asked after an
// answer with records for a partition it includes is not held (that
// partition has records to send), and one that brings records comes back
// within milliseconds on a local network; those are left to come back.
// This misses the end of a backlog: the answer before the held fetch
// carries the other partitions' last records (docs/DESIGN.md,
// "Backpressure").

// heldAfter: a fetch out this long, asked after an answer with no records
// for its partitions, is taken as held by the broker.
const heldAfter = 100 * time.Millisecond

// fetchFlights follows each broker's fetches (the client's hooks): whether
// one is out (its request written, its answer not read yet) and whether it
// asks only for partitions that had no record in the broker's last answer.
type fetchFlights struct {
	mu sync.Mutex
	by map[int32]*fetchFlight
}

type fetchFlight struct {
	out, idle bool
	at        time.Time        // when the fetch out was written
	records   []topicPartition // the last answer's partitions with records
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

// written: a fetch request went out to node; paused reports whether a
// partition is paused now.
func (f *fetchFlights) written(node int32, paused func(topicPartition) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.get(node)
	x.out, x.idle, x.at = true, true, time.Now()
	for _, tp := range x.records {
		if !paused(tp) {
			x.idle = false
			break
		}
	}
}

// answered: node's answer was read (or the request failed); its batches
// are read next.
func (f *fetchFlights) answered(node int32) {
	f.mu.Lock()
	x := f.get(node)
	x.out, x.idle, x.records = false, false, x.records[:0]
	f.mu.Unlock()
}

// batch: the answer being read holds records of tp.
func (f *fetchFlights) batch(node int32, tp topicPartition) {
	f.mu.Lock()
	x := f.get(node)
	if n := len(x.records); n == 0 || x.records[n-1] != tp {
		x.records = append(x.records, tp)
	}
	f.mu.Unlock()
}

// held reports whether node (any broker when node < 0) holds a fetch (see
// heldAfter).
func (f *fetchFlights) held(node int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, x := range f.by {
		if (node < 0 || n == node) && x.out && x.idle && time.Since(x.at) >= heldAfter {
			return true
		}
	}
	return false
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

// lockedHas reports whether tp is paused; the caller holds mu.
func (ps *pausedSet) lockedHas(tp topicPartition) bool { return ps.m[tp] }

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
			if s.flights.held(leader) {
				s.restarts.add(p)
				return
			}
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
