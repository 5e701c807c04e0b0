package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
)

type laneState int

const (
	laneIdle    laneState = iota // no worker owns it and it is not queued
	laneQueued                   // waiting in the run queue
	laneRunning                  // a worker owns it
)

// lane is one assigned partition under one assignment epoch. At most one
// worker owns a lane at a time, so the partition's records are decoded and
// handed to the sink in offset order.
type lane struct {
	dest  int // the shard its chunks go to (sharding by partition)
	tp    TopicPartition
	epoch uint64
	lag   prometheus.Gauge

	mu        sync.Mutex
	recs      []*kgo.Record // fetched records; recs[head:] are not yet decoded
	head      int
	recBytes  int64 // budget bytes of recs[head:]
	nextFetch int64 // the offset the next fetched record must have; -1 before the first
	state     laneState
	rerun     bool // scheduled while running: run again
	blocked   bool // its chunk was refused by a full shard queue
	closed    bool // revoked or lost: drop everything
	failed    bool // a record could not be decoded: process no further
	waiting   bool // the next record waits for its schema to be fetched

	// Owned by the worker running the lane.
	cur    *chunk.Chunk // chunk being built
	parked *chunk.Chunk // sealed chunk the shard queue refused: the resume point
	cursor int64        // the first offset not yet covered by a chunk span

	// Owned by the worker running the lane, on the staged path (staged.go).
	binding *stagedShared  // what stage and outs were built for
	stage   *chunk.Chunk   // the record being transformed
	outs    []*chunk.Chunk // open output chunk per destination
	group   *ackGroup      // the records since the outputs were last sealed
	backlog []*chunk.Chunk // sealed output chunks a shard queue refused, in order

	eo eoState // exactly-once (exactly.go)

	outstanding atomic.Int64 // chunks handed to the sink and not yet acknowledged
	lagValue    atomic.Int64 // records between the last fetched one and the high watermark
	idleAt      time.Time    // guarded by mu: when the watchdog last saw nothing in flight
}

func newLane(tp TopicPartition, epoch uint64, lag prometheus.Gauge) *lane {
	return &lane{tp: tp, epoch: epoch, lag: lag, nextFetch: -1, cursor: -1}
}

// recordBytes is what a fetched record counts against the byte budget: its
// key, value and headers plus the client's per-record overhead.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value) + 160
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 32
	}
	return int64(n)
}

// push appends fetched records, skipping any the lane already has. It
// returns the budget bytes added and whether the lane should be scheduled.
func (l *lane) push(recs []*kgo.Record) (bytes int64, first int64, schedule bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first = -1
	if l.closed {
		return 0, -1, false
	}
	for _, r := range recs {
		if r.Offset < l.nextFetch {
			continue // already fetched before a pause
		}
		if first < 0 {
			first = r.Offset
		}
		l.nextFetch = r.Offset + 1
		l.recs = append(l.recs, r)
		b := recordBytes(r)
		l.recBytes += b
		bytes += b
	}
	return bytes, first, bytes > 0
}

// pending returns up to n undecoded records. The slice stays valid while
// the caller owns the lane.
func (l *lane) pending(n int) ([]*kgo.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.failed {
		return nil, false
	}
	recs := l.recs[l.head:]
	if len(recs) > n {
		recs = recs[:n]
	}
	return recs, true
}

// advance marks n records as decoded, releasing bytes of budget.
func (l *lane) advance(n int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.recs[l.head : l.head+n])
	l.head += n
	l.recBytes -= bytes
	switch {
	case l.head == len(l.recs):
		l.recs, l.head = l.recs[:0], 0
	case l.head >= 1024 && l.head*2 >= len(l.recs):
		k := copy(l.recs, l.recs[l.head:])
		clear(l.recs[k:])
		l.recs, l.head = l.recs[:k], 0
	}
}

// drop discards what the lane holds (on revoke, loss or failure) and
// returns the budget bytes it held: undecoded records and the sealed chunk
// that never reached the sink. The caller owns the lane.
func (l *lane) drop() int64 {
	l.mu.Lock()
	b := l.recBytes
	clear(l.recs)
	l.recs, l.head, l.recBytes = nil, 0, 0
	l.mu.Unlock()
	// The chunk being built is not counted until it is sealed.
	if l.parked != nil {
		b += int64(l.parked.Size())
	}
	for _, c := range l.backlog {
		b += int64(c.Size())
	}
	l.cur, l.parked, l.backlog, l.group = nil, nil, nil, nil
	b += l.eo.held
	l.eo.held = 0
	l.eo.openSince.Store(0)
	clear(l.outs)
	return b
}

// idle reports whether the lane holds no work: nothing undecoded, no chunk
// being built or parked, no worker on it.
func (l *lane) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != laneIdle || !(l.head == len(l.recs) || l.closed || l.failed) || l.cur != nil || l.parked != nil ||
		len(l.backlog) > 0 || l.group != nil {
		return false
	}
	for _, c := range l.outs {
		if c != nil {
			return false
		}
	}
	return true
}
