package pipeline

import (
	"context"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// The controller's period: controllerTick while bytes are in flight or the
// budget holds the source paused (a resume waits for it, and so does an
// exactly-once block whose linger has passed), controllerIdleTick while
// nothing is in flight. With nothing in flight and nothing paused there is
// nothing to check but the idle release (releaseIdleAfter), so an idle
// member's controller wakes once every releaseIdleAfter instead of fifty
// times a second, whatever the number of partitions; the first bytes
// fetched wake the controller at once (wakeController), so a pause that
// follows them is resumed as promptly as from the busy period.
const (
	controllerTick     = 20 * time.Millisecond
	controllerIdleTick = releaseIdleAfter
)

// releaseIdleAfter is how long nothing must have been in flight before the
// controller drops the free chunks and hands the memory the heap no longer
// uses back to the operating system (releaseMemory): after a drain the
// free list would keep the drain's chunks, and the runtime the drain's
// peak, resident while the member waits for records. It is also how often
// the controller looks at the heap again while the idle period lasts.
//
// An idle member still allocates (franz-go builds each fetch request, every
// fetch_max_wait, and reads its answer over every assigned partition:
// about 0.2 MiB/s over 1,000 partitions), and without a later release
// that garbage would grow the heap to the collector's goal (twice the live
// heap) and stay resident. So every releaseIdleAfter in which the heap
// has allocated at least releaseIdleGarbage since the last release, the
// controller releases again; a member whose partitions allocate less (a
// few partitions) releases only when its allocations since the last
// release add up to that, not every period: each release is a forced
// collection and a return of the free pages, which the next fetches fault
// back in.
const (
	releaseIdleAfter   = 10 * time.Second
	releaseIdleGarbage = 1 << 20
)

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

// wake wakes the loop waiting on w if it waits in its idle period; a
// no-op (one atomic load) otherwise.
func (w *ctlWake) wake() {
	if w.idle.Load() && w.idle.CompareAndSwap(true, false) {
		select {
		case w.chanOf() <- struct{}{}:
		default:
		}
	}
}

// wakeController wakes the controller if it is in its idle period, and the
// watchdog if it waits for records (watchdog.go): bytes were handed over.
// Two atomic loads when neither waits.
func (p *Pipeline) wakeController() {
	p.ctl.wake()
	p.wd.wake()
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
	// since is the idle period's start, then when the controller last
	// looked at the heap (zero: not idle); released: the idle period's
	// first release is done; allocs: the heap's allocations at the last
	// release.
	var (
		since    time.Time
		released bool
		allocs   uint64
	)
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
			since, released = time.Time{}, false
		case since.IsZero():
			since = now
		case now.Sub(since) >= releaseIdleAfter:
			since = now
			if !released || p.heapAllocs()-allocs >= releaseIdleGarbage {
				released = true
				p.releaseMemory()
				allocs = p.heapAllocs()
			}
		}
		t.Reset(d)
	}
}

// heapAllocs is the heap's allocations so far, in bytes (heapAllocated,
// or the runtime's count).
func (p *Pipeline) heapAllocs() uint64 {
	if p.heapAllocated != nil {
		return p.heapAllocated()
	}
	return runtimeHeapAllocs()
}

// runtimeHeapAllocs is the bytes the heap has allocated since the
// process started (runtime/metrics' /gc/heap/allocs:bytes): reading it
// stops nothing, unlike runtime.ReadMemStats.
func runtimeHeapAllocs() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	rtmetrics.Read(s)
	if v := s[0].Value; v.Kind() == rtmetrics.KindUint64 {
		return v.Uint64()
	}
	return 0
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
