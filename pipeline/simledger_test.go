package pipeline

import (
	"github.com/etl-project/etl/chunk"
)

// simLedger is the simulation's own count of the bytes in flight, kept
// from what it sees rather than from the pipeline's counters: every record
// it hands to a lane (recordBytes, from the fetch until a chunk handed to
// the sink covers its offset) and every chunk a shard queue took (its
// size at the hand-over, until its acknowledgement is processed).
//
// What it cannot see is the pipeline's own: the records a lane decoded
// into outputs not handed over yet (the open chunk, a parked chunk, the
// staged path's backlog, chunks sealed in the middle of a record, an
// exactly-once open block). Those are bounded by what the lane reports
// holding besides its undecoded records (lane.heldChunks), and the
// records they came from are still in the ledger. So at every step
//
//	sink ≤ budget ≤ sink + records + Σ heldChunks(lanes not closed)
//
// where sink and records are the ledger's: the budget never counts less
// than the sink holds (a chunk released before its acknowledgement) and
// never more than what someone holds (a byte not released).
type simLedger struct {
	lanes  []*simLaneLedger
	chunks map[*chunk.Chunk]int64 // taken by a shard queue, not yet released
	sink   int64
	// maxPoll is the most record bytes one fetch handed over.
	maxPoll int64
}

// simLaneLedger is one lane's fetched records not yet covered by a chunk
// handed to the sink, in offset order.
type simLaneLedger struct {
	l       *lane
	next    int64 // the next offset the lane takes (it skips what it has)
	covered int64 // offsets below are in a chunk the sink took
	offs    []int64
	bytes   []int64
	exempt  []bool // fetched while exempt from the budget's pause (rebuilding exactly-once blocks)
	held    int64  // sum of bytes
	held0   int64  // sum of bytes exempt
}

func newSimLedger() *simLedger { return &simLedger{chunks: map[*chunk.Chunk]int64{}} }

func (g *simLedger) lane(l *lane) *simLaneLedger {
	for _, ll := range g.lanes {
		if ll.l == l {
			return ll
		}
	}
	ll := &simLaneLedger{l: l, next: -1, covered: -1}
	g.lanes = append(g.lanes, ll)
	return ll
}

// fetched notes the records handed to lane l, as the lane takes them: not
// at all when it is closed, and each offset once.
func (g *simLedger) fetched(l *lane, offs []int64, bytes []int64, exempt bool) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return
	}
	ll := g.lane(l)
	var poll int64
	for _, b := range bytes {
		poll += b
	}
	g.maxPoll = max(g.maxPoll, poll)
	for i, off := range offs {
		if off < ll.next {
			continue
		}
		ll.next = off + 1
		if off < ll.covered {
			continue
		}
		ll.offs = append(ll.offs, off)
		ll.bytes = append(ll.bytes, bytes[i])
		ll.exempt = append(ll.exempt, exempt)
		ll.held += bytes[i]
		if exempt {
			ll.held0 += bytes[i]
		}
	}
}

// enqueued notes a chunk a shard queue took: its bytes are the sink's, and
// the records its spans cover leave the ledger's records.
func (g *simLedger) enqueued(c *chunk.Chunk) {
	n := int64(c.Size())
	// A chunk taken again was acknowledged and reused since (the pool).
	g.sink -= g.chunks[c]
	g.chunks[c] = n
	g.sink += n
	spans := c.Spans
	if g, ok := c.Owner.(*ackGroup); ok {
		// The staged path's chunks, and those of a record of many rows,
		// are acknowledged as a group: its spans are the records'.
		spans = g.spans
	}
	for _, s := range spans {
		for _, ll := range g.lanes {
			if ll.l.tp.Topic != s.Topic || ll.l.tp.Partition != s.Partition || ll.l.epoch != s.Epoch {
				continue
			}
			ll.covered = max(ll.covered, s.Next)
			k := 0
			for k < len(ll.offs) && ll.offs[k] < ll.covered {
				ll.held -= ll.bytes[k]
				if ll.exempt[k] {
					ll.held0 -= ll.bytes[k]
				}
				k++
			}
			ll.offs, ll.bytes, ll.exempt = ll.offs[k:], ll.bytes[k:], ll.exempt[k:]
		}
	}
}

// settle drops what left the pipeline: the chunks whose acknowledgement
// was processed (in no queue, insert or acknowledgement any more) and the
// lanes that entered Closed (they dropped what they held).
func (g *simLedger) settle(inSink func(*chunk.Chunk) bool) {
	for c, n := range g.chunks {
		if !inSink(c) {
			delete(g.chunks, c)
			g.sink -= n
		}
	}
	k := 0
	for _, ll := range g.lanes {
		ll.l.mu.Lock()
		closed := ll.l.state == laneClosed
		ll.l.mu.Unlock()
		if !closed {
			g.lanes[k] = ll
			k++
		}
	}
	clear(g.lanes[k:])
	g.lanes = g.lanes[:k]
}

// records is the ledger's record bytes of the lanes not closed.
func (g *simLedger) records() int64 {
	var n int64
	for _, ll := range g.lanes {
		n += ll.held
	}
	return n
}

// checkLedger compares the budget with the ledger (see simLedger), and the
// memory held with the budget: the sink's chunks, the records fetched and
// not handed over, and the lanes' outputs never pass max_inflight_bytes
// by more than its allowance (below).
func (w *simWorld) checkLedger() {
	w.checkReplaying()
	g := w.ledger
	in := map[*chunk.Chunk]bool{}
	var copies int64 // what the shards count while their inserts run
	w.sink.mu.Lock()
	for _, ss := range w.sink.shards {
		for c := range ss.ledger {
			in[c] = true
		}
		copies += ss.budget.n.Load()
	}
	w.sink.mu.Unlock()
	for _, c := range w.p.acks.items {
		in[c] = true
	}
	g.settle(func(c *chunk.Chunk) bool { return in[c] })
	var outs int64
	for _, l := range w.lanes {
		l.mu.Lock()
		closed := l.state == laneClosed
		l.mu.Unlock()
		if !closed {
			outs += l.heldChunks()
		}
	}
	recs := g.records()
	var dl int64 // the bad records' bytes the dead-letter producer holds
	if w.dlq != nil {
		dl = w.dlq.held()
	}
	w.checkOpenBlocks()
	b := w.p.budget.Inflight()
	if b < g.sink {
		w.violation("budget counts %d bytes in flight, less than the %d of the chunks the sink took and did not acknowledge", b, g.sink)
	}
	if hi := g.sink + copies + recs + outs + dl; b > hi {
		w.violation("budget counts %d bytes in flight, more than anything holds: sink %d and its inserts' copies %d, records fetched and not handed over %d, the lanes' outputs %d, dead-letter writes %d",
			b, g.sink, copies, recs, outs, dl)
	}
	// The allowance: two polls' records (the budget pauses the source
	// after the poll that crossed its high watermark, from the next
	// poll, and another poll may run while the controller's check has
	// not made the pauser follow yet: hookBudgetCheck), the records fetched for partitions rebuilding a previous
	// owner's exactly-once blocks (exempt from the budget's pause: a
	// block ends only at its registered end), and the lanes' open outputs
	// (the decoding overshoot of a chunk per lane).
	var replay int64
	for _, ll := range g.lanes {
		replay += ll.held0
	}
	allow := 2*g.maxPoll + replay + outs
	held := g.sink + copies + recs + outs + dl
	if over := held - w.p.budget.Bytes(); over > allow {
		w.violation("memory held %d (sink %d, records %d, outputs %d, dead-letter writes %d) passes the budget %d by %d, more than its allowance %d (a poll %d, exactly-once rebuilds %d, outputs %d)",
			held, g.sink, recs, outs, dl, w.p.budget.Bytes(), over, allow, 2*g.maxPoll, replay, outs)
	}
}

// checkOpenBlocks checks, under exactly-once, that each lane's open block
// keeps its decoded records counted until it is sealed: the budget bytes
// the lane holds for them are at least the ledger's bytes of the good
// records the block took so far (offsets from its first to the lane's
// cursor), which the lane decoded but handed to no shard yet.
func (w *simWorld) checkOpenBlocks() {
	if !w.eo {
		return
	}
	for _, ll := range w.ledger.lanes {
		l := ll.l
		l.mu.Lock()
		closed := l.state == laneClosed
		l.mu.Unlock()
		if closed || l.eo.openSince.Load() == 0 || l.cursor < 0 {
			continue
		}
		var want int64
		for i, off := range ll.offs {
			if off < l.eo.curFirst || off >= l.cursor {
				continue
			}
			if j := w.indexOf(l.tp, off); j < int64(len(w.log[l.tp])) && w.log[l.tp][j].rec.Offset == off && !w.log[l.tp][j].bad {
				want += ll.bytes[i]
			}
		}
		if l.eo.held < want {
			w.violation("lane %v's open exactly-once block [%d, %d) counts %d budget bytes for its records, the ledger has %d of them decoded and not handed over",
				l.tp, l.eo.curFirst, l.cursor, l.eo.held, want)
		}
	}
}
