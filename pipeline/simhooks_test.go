package pipeline

import "time"

// checkHook checks what holds at a hook point itself, before anything
// else runs there.
func (w *simWorld) checkHook(at hookPoint, l *lane) {
	if at == hookFollowedBudget {
		// Nothing ran since the pauser released its lock: it must
		// have left itself as the budget is, whatever another caller
		// of followBudget did while this one waited at its hook.
		ps := w.p.pause
		ps.mu.Lock()
		followed := ps.budget
		ps.mu.Unlock()
		if paused := w.p.budget.Paused(); followed != paused {
			w.violation("the pauser followed the budget and holds paused=%v while the budget says paused=%v (a lost update)", followed, paused)
		}
		return
	}
	if at == hookRegister && l != nil {
		// A block registered over one a previous owner registered is
		// that block again: it starts where that one started.
		l.mu.Lock()
		first := l.eo.curFirst
		l.mu.Unlock()
		for _, b := range w.registered[l.tp] {
			if b[0] < first && first < b[1] {
				w.violation("lane %v registers a block from %d, inside the block [%d, %d) a previous owner registered", l.tp, first, b[0], b[1])
			}
		}
		return
	}
	if at != hookReadAhead || l == nil {
		return
	}
	// The read-ahead's hysteresis: a lane falls back under its
	// read-ahead only under a quarter of it (advance just cleared over).
	l.mu.Lock()
	over, rb, ra := l.over, l.recBytes, l.readAhead
	l.mu.Unlock()
	if !over && ra > 0 && rb >= ra/4 {
		w.violation("lane %v fell back under its read-ahead %d holding %d undecoded bytes, not under a quarter of it", l.tp, ra, rb)
	}
	if over && rb < ra {
		w.violation("lane %v went over its read-ahead %d holding %d undecoded bytes", l.tp, ra, rb)
	}
}

// raceHook runs, at the hook points inside the races between goroutines,
// the other goroutine that could run there, and reports whether it ran
// one (otherwise hook chooses among them all).
//
//   - followBudget, before the pauser's lock: the other callers of
//     checkBudget (the poll loop after a fetch, the controller), after
//     acknowledgements that move the budget back.
//   - a failed retry before finish: what wakes the lane (a shard's space,
//     acknowledgements that free open blocks or the budget, a fetch that
//     schedules it).
//   - finish before the release: the controller and the poll loop, which
//     read the budget the release will change.
//   - processAcks before the wakes: a fetch, the controller, a worker.
func (w *simWorld) raceHook(at hookPoint, l *lane) bool {
	r := w.rng
	switch at {
	case hookFollowBudget:
		switch k := r.Intn(100); {
		case k < 30:
			// What turns the budget over: acknowledgements past
			// the minimum pause when it is paused, fetches when it
			// is not.
			if w.p.budget.Paused() {
				w.sinkStep(w.calm)
				w.sinkStep(w.calm)
				w.committer()
				w.controller(w.minPause + time.Duration(r.Intn(100))*time.Millisecond)
			} else if !w.inPoll {
				w.fetch()
				w.fetch()
			} else {
				return false
			}
		case k < 50:
			w.committer()
			w.controller(time.Duration(r.Intn(400)) * time.Millisecond)
		case k < 70 && !w.inPoll:
			w.committer()
			w.fetch()
		case k < 85:
			w.controller(time.Duration(r.Intn(400)) * time.Millisecond)
		default:
			return false
		}
	case hookRetryFailed:
		switch k := r.Intn(100); {
		case k < 40:
			w.sinkStep(w.calm)
			w.sinkStep(w.calm)
		case k < 65:
			w.committer()
		case k < 85 && !w.inPoll:
			w.fetch()
		default:
			return false
		}
	case hookFinished:
		switch k := r.Intn(100); {
		case k < 35:
			w.controller(time.Duration(r.Intn(400)) * time.Millisecond)
		case k < 60 && !w.inPoll:
			w.fetch()
		case k < 75:
			w.committer()
		default:
			return false
		}
	case hookHoldRegister:
		// The acknowledgements that free the budget, before the lane
		// is registered: as many as the sink gives in a few rounds.
		if r.Intn(100) >= 60 {
			return false
		}
		for range 1 + r.Intn(8) {
			w.sinkStep(true)
			w.committer()
		}
	case hookAcked:
		switch k := r.Intn(100); {
		case k < 30 && !w.inPoll:
			w.fetch()
		case k < 60:
			w.controller(time.Duration(r.Intn(400)) * time.Millisecond)
		case k < 80 && !w.committing:
			// A worker (not under the commit lock: exactly-once
			// registration takes it).
			w.runWorker()
		default:
			return false
		}
	default:
		return false
	}
	w.tracef("hook %d ran", at)
	return true
}
