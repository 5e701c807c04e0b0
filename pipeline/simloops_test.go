package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/clock"
	"github.com/etl-project/etl/source/kafka"
)

// The pipeline's loops under the simulation: the controller, the
// committer, a revoke (the group's Revoked callback, on the poll loop) and
// Run's stop run as they do in production, each on a goroutine of its own
// in the seed's bubble, over the simulation's clock.
//
// Each loop calls a hook right after it wakes from a wait (hookXWoken) and
// before it acts, and a revoke before it takes the commit lock
// (hookRevokeCommit). Those hooks are gates: the loop's goroutine waits
// there until the simulation runs it, so a loop woken by something the
// simulation did (a lane that settled, a tick, an acknowledgement) does
// not run beside it. The simulation runs a waiting loop (release): it
// lets the loop's goroutine go and waits (synctest.Wait) until it blocks
// again. The loop's other hooks, while it runs, are handed to the
// simulation's goroutine, which runs there what another goroutine could
// (the simulation's hook) while the loop waits. So at any moment one
// goroutine runs the pipeline's code or the simulation's, and a seed
// stays one schedule.
//
// A loop that holds the commit lock at a hook (hookCommitted) is never
// left waiting while another that takes it runs: there the simulation
// releases only the controller.

// simLoop is one loop's goroutine.
type simLoop struct {
	name    string
	gate    chan *simReq  // the loop woke and waits at its gate
	pending *simReq       // taken from gate: it waits to be run
	done    chan struct{} // closed once the loop's function returned
	ended   bool
	cancel  context.CancelFunc
}

// simReq is a hook call made on a loop's goroutine, waiting for the
// simulation.
type simReq struct {
	at    hookPoint
	l     *lane
	reply chan struct{}
}

func (w *simWorld) newLoop(name string) *simLoop {
	return &simLoop{name: name, gate: make(chan *simReq), done: make(chan struct{})}
}

// gateOf is the loop whose gate at is, if any.
func (w *simWorld) gateOf(at hookPoint) *simLoop {
	switch at {
	case hookControllerWoken:
		return w.ctl
	case hookCommitterWoken:
		return w.cmt
	case hookRevokeWoken, hookRevokeCommit:
		return w.revLoop
	case hookDrainWoken, hookStopWoken:
		return w.stp
	case hookAssignWoken:
		return w.asgLoop
	}
	return nil
}

// hook is the pipeline's hook: a gate waits for the simulation; a hook on
// a running loop's goroutine is handed to the simulation's; on the
// simulation's own goroutine it runs what another goroutine could.
func (w *simWorld) hook(at hookPoint, l *lane) {
	if lp := w.gateOf(at); lp != nil {
		if at == hookRevokeCommit {
			w.checkRevokeCommit()
		}
		req := &simReq{at: at, l: l, reply: make(chan struct{})}
		lp.gate <- req
		<-req.reply
		return
	}
	if w.serving.Load() {
		req := &simReq{at: at, l: l, reply: make(chan struct{})}
		w.inner <- req
		<-req.reply
		return
	}
	w.hookBody(at, l)
}

// serveWindow lets the released loop (and whatever it wakes that does not
// wait at a gate) run until every goroutine blocks, running the hooks
// they hand over meanwhile.
func (w *simWorld) serveWindow() {
	for {
		w.serving.Store(true)
		synctest.Wait()
		w.serving.Store(false)
		select {
		case req := <-w.inner:
			w.hookBody(req.at, req.l)
			w.serving.Store(true)
			close(req.reply)
		default:
			w.sink.settle()
			return
		}
	}
}

// collectGates takes the loops that woke and wait at their gates.
func (w *simWorld) collectGates() {
	synctest.Wait()
	for _, lp := range w.loops() {
		if lp.pending != nil || lp.ended {
			continue
		}
		select {
		case req := <-lp.gate:
			lp.pending = req
		default:
		}
	}
}

// loops is every live loop, in a fixed order.
func (w *simWorld) loops() []*simLoop {
	var out []*simLoop
	for _, lp := range []*simLoop{w.ctl, w.cmt, w.revLoop, w.asgLoop, w.stp} {
		if lp != nil && !lp.ended {
			out = append(out, lp)
		}
	}
	return out
}

// mayRun reports whether lp may run now: not one that takes the commit
// lock while a commit holds it.
func (w *simWorld) mayRun(lp *simLoop) bool {
	return !w.committing || lp == w.ctl
}

// runLoop runs lp from its gate if it waits there; it reports whether it
// ran.
func (w *simWorld) runLoop(lp *simLoop) bool {
	if lp == nil || lp.ended {
		return false
	}
	w.collectGates()
	if lp.pending == nil || !w.mayRun(lp) {
		return false
	}
	req := lp.pending
	lp.pending = nil
	w.tracef("%s runs from hook %d", lp.name, req.at)
	w.serving.Store(true)
	close(req.reply)
	w.serveWindow()
	return true
}

// runLoops runs every loop that waits at its gate, in a random order.
func (w *simWorld) runLoops() {
	ls := w.loops()
	w.rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	for _, lp := range ls {
		w.runLoop(lp)
	}
}

// startLoop runs fn on a goroutine of its own as loop lp, until fn
// returns; then end, on that goroutine.
func (w *simWorld) startLoop(lp *simLoop, fn func(), end func()) {
	// Serving before the goroutine starts: its first hook may come before
	// serveWindow runs.
	w.serving.Store(true)
	go func() {
		fn()
		if end != nil {
			end()
		}
		lp.ended = true
		close(lp.done)
	}()
	w.serveWindow()
}

// startLoops starts the controller and the committer, as Run does.
func (w *simWorld) startLoops() {
	p := w.p
	w.ctl, w.cmt = w.newLoop("controller"), w.newLoop("committer")
	ctx, cancel := context.WithCancel(context.Background())
	w.ctl.cancel = cancel
	w.startLoop(w.ctl, func() { p.controller(ctx) }, nil)
	ctx2, cancel2 := context.WithCancel(context.Background())
	w.cmt.cancel = cancel2
	w.startLoop(w.cmt, func() { p.committer(ctx2) }, nil)
}

// endLoops ends every loop still running at the end of the seed (after
// its checks): their contexts end, the sink answers everything, and the
// loops run until they return.
func (w *simWorld) endLoops() {
	w.calm = true
	for _, ss := range w.sink.shards {
		ss.frozen, ss.hung = false, false
	}
	for _, lp := range w.loops() {
		if lp.cancel != nil && lp != w.stp {
			lp.cancel()
		}
	}
	for i := 0; i < 100000 && len(w.loops()) > 0; i++ {
		w.step++
		w.runWorker()
		w.sinkStep(true)
		w.advance(50 * time.Millisecond)
		w.runLoops()
		if i == 50000 {
			w.sink.end()
		}
	}
	if ls := w.loops(); len(ls) > 0 {
		panic(fmt.Sprintf("sim seed %d: loop %s did not end", w.seed, ls[0].name))
	}
}

// startRevoke is the group revoking tps: the poll loop runs Revoked, here
// on a goroutine of its own, until it returns; then the partitions are the
// group's to give again.
func (w *simWorld) startRevoke(tps []TopicPartition) {
	parts := kafka.Partitions{}
	for _, tp := range tps {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	w.tracef("revoke %v begins", tps)
	w.groupCallback("revoke")()
	lp := w.newLoop("revoke")
	ctx, cancel := context.WithCancel(context.Background())
	lp.cancel = cancel
	w.revLoop, w.revokeAt, w.revokeParts = lp, w.now, tps
	w.revokeLanes = nil
	for _, tp := range tps {
		if l := w.p.lanes[tp]; l != nil {
			w.revokeLanes = append(w.revokeLanes, l)
		}
	}
	w.startLoop(lp, func() { w.h.Revoked(ctx, parts) }, func() {
		w.tracef("revoke %v ends", tps)
		for _, tp := range tps {
			delete(w.src.owned, tp)
		}
		w.revLoop, w.revokeParts, w.revokeLanes = nil, nil, nil
		cancel()
	})
}

// revoking reports whether a revoke runs (the poll loop is in its
// callback).
func (w *simWorld) revoking() bool { return w.revLoop != nil }

// checkRevokeCommit runs on the revoke's goroutine as it goes to commit:
// every acknowledgement of a revoked partition's chunks the sink delivered
// before this point was applied (processAcks), so that the commit covers
// everything acknowledged.
func (w *simWorld) checkRevokeCommit() {
	p := w.p
	p.acks.mu.Lock()
	defer p.acks.mu.Unlock()
	for _, c := range p.acks.items {
		if w.revokeOwns(c) {
			w.violation("the revoke of %v commits with the acknowledgement of a chunk of its lanes not applied (%d rows)", w.revokeParts, c.Rows)
			return
		}
	}
}

// revokeOwns reports whether c is a chunk of a lane the revoke in
// progress took away: it built it, or the group it built.
func (w *simWorld) revokeOwns(c *chunk.Chunk) bool {
	var l *lane
	switch o := c.Owner.(type) {
	case *lane:
		l = o
	case *ackGroup:
		l = o.lane
	}
	return l != nil && slices.Contains(w.revokeLanes, l)
}

// revokeSettled reports whether, as the simulation sees it, everything
// the revoked lanes handed to the sink was acknowledged and applied: no
// chunk of theirs is in a shard or in the acknowledgement queue, and none
// of them is running or waits to send. The revoke's wait must have woken
// then (its lanes settled), whatever the pipeline's own counts say.
func (w *simWorld) revokeSettled() bool {
	ours := w.revokeOwns
	for _, l := range w.revokeLanes {
		l.mu.Lock()
		busy := l.state != laneIdle && l.state != laneClosed || l.parked != nil || len(l.backlog) > 0
		l.mu.Unlock()
		if busy {
			return false
		}
	}
	if w.dlq != nil && w.dlq.holds(w.revokeParts) {
		return false // a bad record's dead-letter copy not acknowledged
	}
	s := w.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.shards {
		for c := range ss.ledger {
			if ours(c) {
				return false
			}
		}
	}
	w.p.acks.mu.Lock()
	defer w.p.acks.mu.Unlock()
	for _, c := range w.p.acks.items {
		if ours(c) {
			return false
		}
	}
	return true
}

// checkDraining checks, once the stop's drain began, that no lane left
// idle holds anything: drainLanes ran every lane, and a lane run while the
// pipeline closes hands everything over (an exactly-once block is sealed
// at once), so one that holds an open chunk or block would never be
// drained.
func (w *simWorld) checkDraining() {
	if !w.draining {
		return
	}
	for _, l := range w.p.lanesSorted() {
		l.mu.Lock()
		st := l.state
		l.mu.Unlock()
		if st == laneIdle && !l.idle() {
			w.violation("lane %v is idle while the stop drains, but holds work: %s", l.tp, w.laneStates())
			return
		}
	}
}

// checkLoops checks the loops' deadlines: a revoke ends within
// checkpoint.drain_timeout and the commit's bound, a stop within its
// limit, whatever the sink does. A loop that woke and waits for its turn
// (at its gate) is not late: it would run now.
func (w *simWorld) checkLoops() {
	w.collectGates()
	w.checkDraining()
	dt := w.p.cfg.Checkpoint.DrainTimeout.D()
	if lp := w.revLoop; lp != nil && lp.pending == nil && w.now.Sub(w.revokeAt) > dt+revokeCommitTimeout {
		w.violation("the revoke of %v has waited %s: past checkpoint.drain_timeout %s and the commit's bound %s", w.revokeParts, w.now.Sub(w.revokeAt), dt, revokeCommitTimeout)
	}
	if lp := w.revLoop; lp != nil && lp.pending == nil && w.revokeSettled() {
		var outs []string
		for _, l := range w.revokeLanes {
			l.mu.Lock()
			outs = append(outs, fmt.Sprintf("%v epoch %d %s closed=%v outstanding %d", l.tp, l.epoch, l.state, l.closed, l.outstanding.Load()))
			l.mu.Unlock()
		}
		w.violation("the revoke of %v still waits, but no chunk of its lanes is in the sink or waits to be applied (lanes: %s)", w.revokeParts, strings.Join(outs, "; "))
	}
	if lp := w.asgLoop; lp != nil && lp.pending == nil && w.now.Sub(w.asgAt) > w.p.callbackLimit() {
		w.violation("the assignment of %v has read the committed blocks for %s: past the group callback's limit %s", w.asgParts, w.now.Sub(w.asgAt), w.p.callbackLimit())
	}
	if lp := w.stp; lp != nil && !lp.ended && lp.pending == nil && w.now.After(w.stopBy) {
		w.violation("the stop begun at %s has not ended by %s (now %s): past its limit", w.stopAt.Format("15:04:05.000"), w.stopBy.Format("15:04:05.000"), w.now.Format("15:04:05.000"))
	}
}

// simCleanDrain is the drain timeout of a stop whose shards all answer.
const simCleanDrain = 30 * time.Second

// stop ends the seed as Run stops the pipeline, running Run's own stop
// (Pipeline.stop) with what the simulation started: the source (the poll
// loop, perhaps in a revoke), the shards, the worker (the simulation's) and
// the loops. With failed >= 0 that shard fails for good (its inserts are
// refused for a missing table); with hung >= 0 that shard's inserts are
// never answered (a ClickHouse that hangs), so the drain meets its
// deadline. Every commit is checked against the tables as always; after a
// clean stop that drained every fetched record must be committed.
func (w *simWorld) stop(failed, hung int) {
	p := w.p
	w.toMake = 0
	w.calm = true
	for i, ss := range w.sink.shards {
		ss.frozen = false
		ss.dead = i == failed
		ss.hung = i == hung
		ss.closed = true // Run closes them
	}
	revokeDT := p.cfg.Checkpoint.DrainTimeout.D()
	if failed < 0 && hung < 0 {
		// A stop whose sink is live gets a drain timeout long enough
		// for a slow sink: it must drain, so that a lane left stuck
		// shows as a drain timeout.
		p.cfg.Checkpoint.DrainTimeout = config.Duration(simCleanDrain)
	}
	dt := p.cfg.Checkpoint.DrainTimeout.D()
	w.stopAt = w.now
	from := w.now
	if w.revoking() {
		// The source's Run returns once the poll loop is out of the
		// callback.
		from = w.revokeAt.Add(revokeDT + revokeCommitTimeout)
	}
	if w.asgLoop != nil {
		// An assignment's reads of the committed blocks end with the
		// client's context (one more read may be under way).
		from = w.now.Add(eoFetchRetry)
	}
	w.stopBy = from.Add(dt + revokeCommitTimeout)
	w.tracef("stop (failed shard %d, hung shard %d)", failed, hung)
	rt := &running{
		stopSource: func() {
			w.stopping = true
			if lp := w.revLoop; lp != nil {
				<-lp.done
			}
			if lp := w.asgLoop; lp != nil {
				// Closing the client ends the callback's context.
				lp.cancel()
				<-lp.done
			}
			// The stop goes on to drainLanes, with no hook between.
			w.draining = true
		},
		sinkDone:  w.sink.done,
		sinksLeft: len(w.sink.shards),
		hardStop: func() {
			w.sink.hardStopped = true
			for _, ss := range w.sink.shards {
				ss.cancel()
			}
		},
		stopWorkers: func() {
			if w.working {
				ch := make(chan struct{})
				w.workerIdle = ch
				<-ch
				w.hook(hookStopWoken, nil)
			}
		},
		stopLoops: func() {
			for _, lp := range []*simLoop{w.ctl, w.cmt} {
				lp.cancel()
				<-lp.done
			}
		},
	}
	lp := w.newLoop("stop")
	w.stp = lp
	var err error
	w.startLoop(lp, func() { err = p.stop(rt, w.fatal, false) }, func() { w.tracef("the stop returned %v", err) })
	for i := 0; i < 5000 && len(w.errs) == 0 && !lp.ended; i++ {
		w.calmRound()
	}
	if len(w.errs) > 0 {
		return
	}
	if !lp.ended {
		w.violation("the stop did not end: %s; lanes: %s", w.state(), w.laneStates())
		return
	}
	// Every invariant holds at the end of a stop too, whatever it
	// returned: the budget against the ledger, the commits against the
	// tables, and no row of a bad record, and none twice under
	// exactly-once, in any table.
	w.checkStep()
	w.checkTables(false)
	switch {
	case w.failed:
		if err == nil {
			w.violation("the stop on a fatal error returned nil")
		}
	case failed >= 0:
		// The shard failed for good reports it only if it had
		// something to write.
	case hung < 0 && errors.Is(err, ErrDrainTimeout):
		w.violation("the stop met its drain deadline (%s) with every shard live: %s; lanes: %s", dt, w.state(), w.laneStates())
	case err != nil && !errors.Is(err, ErrDrainTimeout) && !errors.Is(err, ErrCommitFailed):
		w.violation("the stop returned %v", err)
	}
	if failed >= 0 || hung >= 0 || err != nil || len(w.errs) > 0 {
		return
	}
	if !w.drained() {
		w.violation("the stop returned nil but did not drain: %s; lanes: %s", w.state(), w.laneStates())
		return
	}
	if got := p.budget.Inflight(); got != 0 {
		w.violation("the stop drained but the budget counts %d bytes in flight", got)
	}
	for _, tp := range w.parts {
		if l := p.lanes[tp]; l != nil && l.closed {
			// It gave up a block rebuilt for a previous owner whose rest
			// was not fetched: that block and what follows are not
			// committed (each commit was checked against the tables).
			continue
		}
		if w.dlq != nil && w.dlq.givenUpAt(w, tp) {
			// The stop gave up a bad record waiting to be written to the
			// dead-letter topic again: it and what follows are not
			// committed (the next run reads them again).
			continue
		}
		if fetched := w.log[tp][:w.src.pos[tp]]; w.src.owned[tp] && w.src.pos[tp] > w.src.start[tp] && w.src.committed[tp].Offset != fetched[len(fetched)-1].rec.Offset+1 {
			w.violation("clean stop: %v fetched up to %d but committed %d", tp, fetched[len(fetched)-1].rec.Offset+1, w.src.committed[tp].Offset)
		}
	}
}

// simPClock is the pipeline's clock over the simulation's: tickers and
// deadlines fire as the simulation moves time.
type simPClock struct{ c *simClock }

func (k simPClock) Now() time.Time                       { return k.c.Now() }
func (k simPClock) NewTimer(d time.Duration) clock.Timer { return k.c.newTimer(d, 0, nil) }
func (k simPClock) NewTicker(d time.Duration) clock.Ticker {
	return simTicker{k.c.newTimer(d, d, nil)}
}

func (k simPClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx := &simDeadline{Context: parent, deadline: k.c.Now().Add(d), done: make(chan struct{})}
	t := k.c.newTimer(d, 0, func() { ctx.end(context.DeadlineExceeded) })
	return ctx, func() {
		t.Stop()
		ctx.end(context.Canceled)
	}
}

type simTicker struct{ t *simTimer }

func (t simTicker) C() <-chan time.Time { return t.t.C() }
func (t simTicker) Stop()               { t.t.Stop() }

// simDeadline is a context that ends at a deadline of the simulation's
// clock (its parent is always context.Background()).
type simDeadline struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	mu       sync.Mutex
	err      error
}

func (c *simDeadline) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *simDeadline) Done() <-chan struct{}       { return c.done }
func (c *simDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *simDeadline) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}
