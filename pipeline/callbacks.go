// The consumer group's callbacks (assignment, fetched records, revoke,
// loss) and the status line.

package pipeline

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/source/kafka"
)

// enqueuer is the non-blocking hand-over to a shard's queue.
type enqueuer interface {
	// TryEnqueue hands c over, or returns false at once when the queue is
	// full; the queue then calls OnSpace once it has room.
	TryEnqueue(c *chunk.Chunk) bool
}

// handler adapts the pipeline to the source's callbacks.
type handler Pipeline

func (h *handler) Assigned(ctx context.Context, parts kafka.Partitions) {
	p := (*Pipeline)(h)
	defer p.callback()()
	p.assigned.Store(true)
	if !p.closing.Load() {
		p.given.clear()
	}
	var blocks map[TopicPartition][][2]int64
	if p.eo() {
		var ok bool
		if blocks, ok = p.eoAssigned(ctx, parts); !ok {
			// Without the blocks the previous owner registered, records
			// could be written twice: take no lane (their records are
			// not processed) and let the pipeline stop.
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for topic, ps := range parts {
		for _, part := range ps {
			tp := TopicPartition{Topic: topic, Partition: part}
			epoch := p.tracker.Assign(tp)
			l := newLane(tp, epoch, new(fetchLag), &p.settle)
			l.readAhead = int64(p.cfg.Backpressure.PartitionReadAhead)
			if len(p.sinks) > 0 {
				s := p.sinks[0]
				l.dest = s.dest0 + s.shardOfPartition(part)
			}
			if b := blocks[tp]; len(b) > 0 {
				p.eoSetup(l, b)
			}
			p.lanes[tp] = l
			p.pause.assign(l)
			if l.eo.replayEnd > 0 {
				p.pause.setReplaying(l, true)
			}
		}
	}
	p.kickLag()
}

// resumedAt is the source's word that tp resumes at offset, its group's
// committed offset lying outside the log: the position is committed even
// before a record comes, so the skip is reported once.
func (p *Pipeline) resumedAt(topic string, partition int32, offset int64) {
	tp := TopicPartition{Topic: topic, Partition: partition}
	p.mu.RLock()
	l := p.lanes[tp]
	p.mu.RUnlock()
	if l != nil {
		p.tracker.Resume(tp, l.epoch, offset)
	}
}

func (h *handler) Fetched(fp *kgo.FetchTopicPartition) {
	p := (*Pipeline)(h)
	tp := TopicPartition{Topic: fp.Topic, Partition: fp.Partition}
	p.mu.RLock()
	l := p.lanes[tp]
	p.mu.RUnlock()
	if l == nil {
		// Not assigned to us (any more): these records are not ours to
		// commit; the owner reads them.
		return
	}
	recs := fp.Records
	if fp.LogStartOffset > 0 {
		// Before the records are handed over: the worker checks them
		// against the blocks a previous owner registered (eoLost).
		l.logStart.Store(fp.LogStartOffset)
	}
	bytes, first, sched, over := l.push(recs)
	if over {
		p.yield(hookReadAhead, l)
		p.pause.refresh(l)
	}
	if first >= 0 {
		p.tracker.Start(tp, l.epoch, first)
	}
	if hw := fp.HighWatermark; hw > 0 && len(recs) > 0 {
		l.lag.Set(float64(hw - (recs[len(recs)-1].Offset + 1)))
		l.end.fetched(hw, p.clock())
	}
	if bytes > 0 {
		p.budget.Add(bytes)
		p.wakeController()
		if p.budget.Over() {
			p.checkBudget(p.clock())
		}
	}
	if sched {
		p.schedule(l)
	}
}

func (h *handler) Revoked(ctx context.Context, parts kafka.Partitions) {
	p := (*Pipeline)(h)
	defer p.callback()()
	r := p.revokeBegin(parts)
	defer p.revokeEnd(r)
	// Give the chunks already handed to the sink the drain timeout to
	// become durable, then commit what is. Also while stopping: a
	// rebalance during the drain must not commit less than the drain
	// writes (the next owner would write it again); the stop's own
	// deadline (haltChan) ends the wait then.
	deadline := p.timing().NewTimer(p.cfg.Checkpoint.DrainTimeout.D())
	defer deadline.Stop()
	for {
		changed := p.settle.wait()
		if r.settled() {
			return
		}
		// Each pass looks at every end of the wait, whichever of them
		// woke it: what the revoke does does not depend on which ready
		// case select picked.
		select {
		case <-deadline.C():
			return
		case <-p.haltChan():
			return
		case <-ctx.Done():
			return
		default:
		}
		select {
		case <-changed:
		case <-deadline.C():
			// Consumed: deadline.C yields nothing more, so end here.
			p.yield(hookRevokeWoken, nil)
			return
		case <-p.haltChan():
		case <-ctx.Done():
		}
		p.yield(hookRevokeWoken, nil)
	}
}

// revoke is a revoke in progress: the lanes taken away.
type revoke struct {
	parts kafka.Partitions
	lanes []*lane
}

// settled reports whether every chunk of the revoked lanes handed to the
// sink was acknowledged.
func (r *revoke) settled() bool {
	for _, l := range r.lanes {
		if l.outstanding.Load() > 0 {
			return false
		}
	}
	return true
}

// revokeBegin detaches the revoked partitions' lanes.
func (p *Pipeline) revokeBegin(parts kafka.Partitions) *revoke {
	return &revoke{parts: parts, lanes: p.detach(parts)}
}

// revokeEnd commits what of the revoked partitions is durable and forgets
// them: from its return on, nothing is committed for them.
func (p *Pipeline) revokeEnd(r *revoke) {
	only := map[TopicPartition]bool{}
	for _, l := range r.lanes {
		only[l.tp] = true
	}
	p.processAcks()
	p.yield(hookRevokeCommit, nil)
	p.commits.Lock()
	defer p.commits.Unlock()
	cctx, cancel := p.timing().WithTimeout(context.Background(), revokeCommitTimeout)
	defer cancel()
	if err := p.commits.CommitLocked(cctx, only); err != nil {
		p.log.Warn("commit on revoke failed: records since the last commit will be read again by the next owner", "err", err)
		p.given.note("partitions revoked", p.lanesPending(r.lanes), err)
	}
	for _, l := range r.lanes {
		p.tracker.Remove(l.tp, l.epoch)
	}
	// From here on nothing is committed for these partitions.
	p.log.Info("revoked partitions released", "partitions", r.parts)
}

func (h *handler) Lost(_ context.Context, parts kafka.Partitions) {
	p := (*Pipeline)(h)
	defer p.callback()()
	lanes := p.detach(parts)
	p.commits.Lock()
	defer p.commits.Unlock()
	p.given.note("partitions lost", p.lanesPending(lanes), nil)
	for _, l := range lanes {
		p.tracker.Remove(l.tp, l.epoch)
	}
}

// detach removes the lanes of parts from the pipeline and closes them:
// their undecoded records and unsent chunks are dropped (not committed,
// so the next owner reads them) and leave the budget, at once for a lane
// no worker owns, as its worker starts or finishes it otherwise
// (lane.close).
func (p *Pipeline) detach(parts kafka.Partitions) []*lane {
	var out []*lane
	p.mu.Lock()
	for topic, ps := range parts {
		for _, part := range ps {
			tp := TopicPartition{Topic: topic, Partition: part}
			if l := p.lanes[tp]; l != nil {
				delete(p.lanes, tp)
				out = append(out, l)
			}
			p.pause.unassign(tp)
		}
	}
	p.mu.Unlock()
	for _, l := range out {
		// A running or queued lane is dropped by its worker.
		p.budget.Release(l.close())
	}
	return out
}

// statusLoop logs one status line every log.status_interval: rows/s
// decoded and written, lag, in-flight bytes against the budget, paused
// partitions and decode errors since the last line.
func (p *Pipeline) statusLoop(ctx context.Context) {
	every := p.cfg.Log.StatusInterval.D()
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastAt := p.Stats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := p.Stats()
			secs := now.Sub(lastAt).Seconds()
			var lag any = s.Lag
			if s.LagUnknown != "" {
				lag = "unknown (" + s.LagUnknown + ")"
			}
			p.log.Info("status",
				"rows_in_per_s", int64(float64(s.RowsDecoded-last.RowsDecoded)/secs),
				"rows_out_per_s", int64(float64(s.RowsWritten-last.RowsWritten)/secs),
				"rows_written", s.RowsWritten, "lag", lag,
				"inflight_bytes", s.InflightBytes, "budget_bytes", s.BudgetBytes,
				"paused_partitions", s.PausedPartitions,
				"decode_errors", s.DecodeErrors-last.DecodeErrors)
			last, lastAt = s, now
		}
	}
}
