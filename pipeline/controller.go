package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The controller's period: controllerTick while bytes are in flight or the
// budget holds the source paused (a resume waits for it, and so does an
// exactly-once block whose linger has passed), controllerIdleTick while
// nothing is in flight. An idle member wakes once a second instead of
// fifty times, whatever the number of partitions; the first bytes fetched
// wake the controller at once (wakeController), so a pause that follows
// them is resumed as promptly as from the busy period.
const (
	controllerTick     = 20 * time.Millisecond
	controllerIdleTick = time.Second
)

// releaseIdleAfter is how long nothing must have been in flight before the
// controller drops the free chunks and hands the memory the heap no longer
// uses back to the operating system (releaseMemory), and then how often it
// does so again while the idle period lasts: after a drain the free list
// would keep the drain's chunks, and the runtime the drain's peak,
// resident while the member waits for records; and an idle member still
// allocates (each fetch request names every assigned partition, each
// commit and lag listing too), so without the later releases its heap
// would grow back, by what it allocates per partition, to the collector's
// goal (twice the live heap) and stay resident there.
const releaseIdleAfter = 10 * time.Second

// ctlWake lets the poll loop wake the controller from its idle period.
type ctlWake struct {
	once sync.Once
	c    chan struct{}
	idle atomic.Bool // the controller waits for controllerIdleTick
}

func (w *ctlWake) chanOf() chan struct{} {
	w.once.Do(func() { w.c = make(chan struct{}, 1) })
	return w.c
}

// wakeController wakes the controller if it is in its idle period; a
// no-op (one atomic load) otherwise.
func (p *Pipeline) wakeController() {
	if p.ctl.idle.Load() && p.ctl.idle.CompareAndSwap(true, false) {
		select {
		case p.ctl.chanOf() <- struct{}{}:
		default:
		}
	}
}

// controllerEvery is the controller's next period.
func (p *Pipeline) controllerEvery() time.Duration {
	if p.budget.Inflight() > 0 || p.budget.Paused() {
		return controllerTick
	}
	return controllerIdleTick
}

// controller checks the byte budget and pauses or resumes the source, and
// under exactly_once flushes the blocks whose linger has passed.
func (p *Pipeline) controller(ctx context.Context) {
	t := p.timing().NewTimer(controllerTick)
	defer t.Stop()
	wake := p.ctl.chanOf()
	// since is the idle period's start, then its last release (zero: not
	// idle).
	var since time.Time
	for {
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-wake:
		}
		p.yield(hookControllerWoken, nil)
		// Its end first, whichever case select picked: a tick that is
		// due as the controller stops is not acted on.
		if ctx.Err() != nil {
			return
		}
		now := p.clock()
		p.checkBudget(now)
		if p.eo() {
			p.eoFlushLingered(now)
		}
		// Idle is set before the period is read: bytes added after the
		// read wake the controller, bytes added before it make the
		// period short.
		p.ctl.idle.Store(true)
		d := p.controllerEvery()
		switch {
		case d == controllerTick:
			p.ctl.idle.Store(false)
			since = time.Time{}
		case since.IsZero():
			since = now
		case now.Sub(since) >= releaseIdleAfter:
			since = now
			p.releaseMemory()
		}
		t.Reset(d)
	}
}

// releaseMemory drops the free chunks and the record buffers of the
// lanes with no record, and returns the heap's free memory to the
// operating system (releaseIdle).
func (p *Pipeline) releaseMemory() {
	p.chunks.clear()
	p.mu.RLock()
	lanes := make([]*lane, 0, len(p.lanes))
	for _, l := range p.lanes {
		lanes = append(lanes, l)
	}
	p.mu.RUnlock()
	for _, l := range lanes {
		l.dropRecordBuffer()
	}
	if p.releaseIdle != nil {
		p.releaseIdle()
	}
}
