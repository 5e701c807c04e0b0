package pipeline

// checkReplaying checks that a partition is exempt from the budget's pause
// only while its lane still rebuilds blocks a previous owner registered:
// once the rebuilt blocks end (replayEnd is cleared), the budget may pause
// the partition again.
func (w *simWorld) checkReplaying() {
	for _, l := range w.lanes {
		w.p.pause.mu.Lock()
		exempt := w.p.pause.assigned[l.tp] == l && w.p.pause.replaying[l.tp]
		w.p.pause.mu.Unlock()
		if exempt && l.eo.replayEnd == 0 {
			w.violation("partition %v is exempt from the budget's pause, but its lane rebuilds no registered block", l.tp)
		}
	}
}
