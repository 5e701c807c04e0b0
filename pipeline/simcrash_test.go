package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A crash under the simulation: the process dies at a random step of a
// quarter of the seeds and a new one starts over the same Kafka (the log,
// the committed offsets and their metadata, the dead-letter topic's
// acknowledged copies) and the same tables (their rows and, under
// exactly-once, the blocks they have). Everything the old process held in
// memory is gone: its lanes, queues, budget, tracker and the inserts and
// dead-letter writes it had not heard back from. An insert in flight at
// the crash lands or not, at random. The dead process commits nothing
// more; its goroutines are ended without acting on the world.
//
// What must hold across it: under exactly-once no row twice in any table;
// under at-least-once no row more often than the lanes that took its
// record (each process's re-read from the committed offset, and each
// rebalance's) plus the inserts of it that landed and were retried; at
// quiesce every record in every table.

// crash kills the running process and starts a new one.
func (w *simWorld) crash() {
	w.tracef("crash")
	simTotals.crashes++
	w.crashing = true
	old, s := w.p, w.sink
	w.src.dead = true
	// Each insert in flight landed or not.
	for _, pd := range s.pendingSorted() {
		if w.rng.Intn(2) == 0 && !s.refuses(pd.chunks) && !s.shards[pd.shard].dead {
			w.tracef("crash: the insert of %d rows on shard %d landed", pd.rows, pd.shard)
			s.mu.Lock()
			s.insert(pd.chunks, s.shards[pd.shard].sink)
			s.mu.Unlock()
		}
	}
	// The old process's goroutines end: its shards, its retries, its
	// loops (a revoke or an assignment in progress too).
	old.haltNow()
	s.end()
	for _, lp := range w.loops() {
		lp.cancel()
	}
	for i := 0; i < 10000 && len(w.loops()) > 0; i++ {
		w.advance(50 * time.Millisecond)
		w.runLoops()
	}
	if ls := w.loops(); len(ls) > 0 {
		panic(fmt.Sprintf("sim seed %d: loop %s of the crashed process did not end", w.seed, ls[0].name))
	}
	w.restart()
}

// restart starts a new process: a new pipeline over the seed's parameters,
// new shards over the same tables, and the group's assignment of every
// partition from its committed offset.
func (w *simWorld) restart() {
	oldSink := w.sink
	w.crashing, w.src.dead = false, false
	w.inGroup, w.revLoop, w.asgLoop, w.revokeParts, w.revokeLanes, w.asgParts = false, nil, nil, nil, nil, nil
	w.src.owned, w.src.paused = map[TopicPartition]bool{}, map[TopicPartition]bool{}
	w.lanes, w.ledger, w.registered = nil, newSimLedger(), map[TopicPartition][][2]int64{}
	p := w.newPipeline()
	p.src = w.src
	p.pause = newPauser(w.src, prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_sim_paused"}))
	w.p, w.h = p, (*handler)(p)
	desc := w.desc
	w.newSimSink(w.params.queueCap, w.params.maxInflight, len(oldSink.shards[0].replicas), w.params.batch)
	w.desc = desc
	s := w.sink
	s.rows, s.blocks, s.poison, s.rejected = oldSink.rows, oldSink.blocks, oldSink.poison, oldSink.rejected
	p.queue = s
	p.hook = w.hook
	s.start()
	w.startLoops()
	w.tracef("restart")
	w.assign(w.parts)
}

// noteTakes counts, for the at-least-once bound, the records a lane takes
// from a fetch: each offset once per lane, none for a closed lane.
func (w *simWorld) noteTakes(l *lane, tp TopicPartition, from, to int64) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return
	}
	ll := w.ledger.lane(l)
	next := ll.next
	for _, sr := range w.log[tp][from:to] {
		if sr.rec.Offset < next {
			continue
		}
		next = sr.rec.Offset + 1
		for id := sr.id; id < sr.id+uint64(sr.rows); id++ {
			w.takes[id]++
		}
	}
}

var _ = context.Background
