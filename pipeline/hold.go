package pipeline

import (
	"sync"
	"sync/atomic"

	"github.com/etl-project/etl/chunk"
)

// Decode expansion. The budget pauses the partitions at its high
// watermark, but what was fetched before is still decoded, and a decoded
// record can take several times its fetched size (an array element of 4
// JSON bytes is 9 bytes held: its byte and an 8-byte offset). So before
// each step of records, a lane whose decoding would take the budget past
// max_inflight_bytes seals what it built and waits, parked like a lane
// waiting for its schema (Waiting), until acknowledgements release budget.
//
// It waits only while the sink holds chunks (sinkChunks > 0: handed to a
// shard queue and not yet acknowledged), so it cannot deadlock: each of
// those acknowledgements, or the stop, wakes the held lanes, and when the
// sink holds nothing — the budget is records not yet decoded and chunks
// being built — the lane decodes. Each decode worker takes the count past
// the budget by at most one step: one chunk of chunk.target_bytes (one
// per destination on the staged path, a batch with exactly-once) plus the
// rows of the record that filled it.

// holder is the lanes held for the budget and the chunks the sink holds.
type holder struct {
	// sinkChunks is the chunks handed to a shard queue and not yet
	// acknowledged (processAcks).
	sinkChunks atomic.Int64
	mu         sync.Mutex
	lanes      []*lane // held for the budget, in the order they were held
}

// enqueue hands c to its shard queue without blocking, counting it as held
// by the sink. It is counted before the hand-over (the sink may
// acknowledge it at once) and uncounted when the queue refuses it.
func (p *Pipeline) enqueue(c *chunk.Chunk) bool {
	p.hold.sinkChunks.Add(1)
	if p.queue.TryEnqueue(c) {
		return true
	}
	if p.hold.sinkChunks.Add(-1) == 0 {
		p.wakeHeld(true)
	}
	return false
}

// overBudget reports whether decoding must wait: the budget is past
// max_inflight_bytes and the sink holds chunks whose acknowledgements
// will release some of it.
func (p *Pipeline) overBudget() bool {
	return p.budget.Inflight() > p.budget.Bytes() && p.hold.sinkChunks.Load() > 0
}

// holdForBudget is the check before each step of the record loop. When
// the lane must wait, it seals its outputs (an exactly-once block stays
// open, as for a schema wait: its bounds are the block policy's) and parks
// the lane until wakeHeld, and returns true: the run ends.
func (p *Pipeline) holdForBudget(l *lane, out outputs) bool {
	if p.budget.Inflight() <= p.budget.Bytes() || !p.overBudget() {
		return false
	}
	if p.eo() && l.eo.replaying() {
		// A lane rebuilding a previous owner's blocks is not held: its
		// partition is exempt from the budget's pause until the blocks
		// are rebuilt, so held it would keep fetching without bound; its
		// decoding is what ends the exemption.
		return false
	}
	if !p.eo() && !out.seal() {
		return true // a queue refused the chunk: the lane is blocked
	}
	p.m.budgetHolds.Inc()
	l.wait()
	p.yield(hookHoldRegister, l)
	p.hold.mu.Lock()
	p.hold.lanes = append(p.hold.lanes, l)
	p.hold.mu.Unlock()
	// An acknowledgement between the check and the registration would
	// not have seen the lane: check again now that it is registered.
	if !p.overBudget() {
		p.wakeHeld(true)
	}
	return true
}

// wakeHeld reschedules the lanes held for the budget when decoding may go
// on (the budget is back under max_inflight_bytes or the sink holds
// nothing), or always when all is set (the stop).
func (p *Pipeline) wakeHeld(all bool) {
	p.hold.mu.Lock()
	if len(p.hold.lanes) == 0 || (!all && p.overBudget()) {
		p.hold.mu.Unlock()
		return
	}
	lanes := p.hold.lanes
	p.hold.lanes = nil
	p.hold.mu.Unlock()
	for _, l := range lanes {
		if l.ready() {
			p.runq.push(l)
		}
	}
}
