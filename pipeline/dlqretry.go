package pipeline

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/clock"
	"github.com/etl-project/etl/source/kafka"
)

// A record bound for the dead-letter topic is held until the broker
// acknowledges its copy: a write that fails (the topic missing, the produce
// refused, the brokers down, the producer's buffer full) is retried with
// capped exponential backoff and full jitter, forever, and the record's
// offset is not committed before. Its bytes count in the in-flight budget
// from the first write to the acknowledgement, so records piling up behind
// a failing dead-letter topic pause the source like a slow sink does, and
// memory stays bounded. The stop waits for the retries until its drain
// deadline, then gives them up (not committed: the next run reads the
// records again). /healthz reports writes failing for dlqUnhealthyAfter.

const (
	dlqInitialBackoff = 200 * time.Millisecond
	dlqMaxBackoff     = 10 * time.Second
	dlqUnhealthyAfter = 10 * time.Second
)

// deadLetters is what the pipeline needs of the dead-letter producer:
// *dlq.Writer, or the simulation's fake (sim_test.go).
type deadLetters interface {
	// Write sends r's dead-letter copy and calls done with the broker's
	// answer.
	Write(r *kgo.Record, reason string, cause error, done func(error))
	Flush(ctx context.Context) error
	Close()
	MaxMessageBytes() (int32, string)
}

// dlqRecord is a record on its way to the dead-letter topic.
type dlqRecord struct {
	l       *lane
	r       *kgo.Record
	reason  string
	cause   error
	held    int64 // bytes counted in the budget
	attempt int
}

// dlqState is the pipeline's view of the dead-letter writes.
type dlqState struct {
	pending     atomic.Int64 // records written or waiting to be written again
	failingFrom atomic.Int64 // unix nanoseconds of the first failure since the last success; 0: none
	mu          sync.Mutex
	lastErr     string
	timers      map[*dlqRecord]clock.Timer // records waiting for their next attempt
	// jitter, when set (by the simulation), draws the retries' waits in
	// [0, d]; nil: math/rand/v2's N.
	jitter func(d time.Duration) time.Duration
}

// deadLetter writes d's record to the dead-letter topic, and again after a
// backoff for as long as the write fails and the pipeline is not halted.
func (p *Pipeline) deadLetter(d *dlqRecord) {
	if d.held == 0 {
		d.held = recordBytes(d.r)
		p.budget.Add(d.held)
		p.dlqs.pending.Add(1)
	}
	tp, epoch, off := d.l.tp, d.l.epoch, d.r.Offset
	p.dlq.Write(d.r, d.reason, d.cause, func(werr error) {
		p.dlqAnswered(werr)
		if werr == nil {
			p.tracker.Ack(tp, epoch, off, kafka.RecordEnd(d.r)) // a refused batch: all its offsets
			p.dlqDone(d)
			return
		}
		select {
		case <-p.haltChan():
			p.log.Error("dead-letter write failed and the pipeline is stopping: not committing past the record",
				"topic", tp.Topic, "partition", tp.Partition, "offset", off, "err", werr)
			p.dlqDone(d)
			return
		default:
		}
		d.attempt++
		wait := p.dlqBackoff(d.attempt)
		if p.dlqLog.Allow() {
			p.log.Warn("dead-letter write failed: retrying; not committing past the record",
				"topic", tp.Topic, "partition", tp.Partition, "offset", off, "attempt", d.attempt, "retry_in", wait.Round(time.Millisecond), "err", werr)
		}
		p.dlqs.mu.Lock()
		defer p.dlqs.mu.Unlock()
		if p.dlqs.timers == nil {
			p.dlqs.timers = map[*dlqRecord]clock.Timer{}
		}
		p.dlqs.timers[d] = p.timing().AfterFunc(wait, func() {
			p.dlqs.mu.Lock()
			_, mine := p.dlqs.timers[d]
			delete(p.dlqs.timers, d)
			p.dlqs.mu.Unlock()
			if !mine {
				return // given up by dlqGiveUp
			}
			select {
			case <-p.haltChan():
				p.dlqDone(d)
			default:
				p.deadLetter(d)
			}
		})
	})
}

// dlqAnswered notes the broker's answer to a dead-letter write for
// /healthz: a success ends a run of failures, a failure starts one (or
// goes on with it) and is the last error.
func (p *Pipeline) dlqAnswered(werr error) {
	if werr == nil {
		p.dlqs.failingFrom.Store(0)
		return
	}
	p.dlqs.failingFrom.CompareAndSwap(0, p.clock().UnixNano())
	p.dlqs.mu.Lock()
	p.dlqs.lastErr = werr.Error()
	p.dlqs.mu.Unlock()
}

// dlqGiveUp gives up the records waiting to be written again (the stop,
// after its drain deadline): they are not committed.
func (p *Pipeline) dlqGiveUp() {
	p.dlqs.mu.Lock()
	var given []*dlqRecord
	for d, t := range p.dlqs.timers {
		if t.Stop() {
			given = append(given, d)
		}
		delete(p.dlqs.timers, d)
	}
	p.dlqs.mu.Unlock()
	for _, d := range given {
		p.dlqDone(d)
	}
}

// dlqDone ends d: its bytes leave the budget and the lane's write is over.
func (p *Pipeline) dlqDone(d *dlqRecord) {
	p.budget.Release(d.held)
	p.dlqs.pending.Add(-1)
	d.l.acked()
}

// dlqBackoff is the wait before the attempt-th retry: full jitter over the
// capped exponential.
func (p *Pipeline) dlqBackoff(attempt int) time.Duration {
	d := dlqInitialBackoff
	for i := 1; i < attempt && d < dlqMaxBackoff; i++ {
		d *= 2
	}
	d = min(d, dlqMaxBackoff)
	if p.dlqs.jitter != nil {
		return p.dlqs.jitter(d)
	}
	return rand.N(d + 1)
}

// dlqHealth reports dead-letter writes that have failed, with no success
// since, for longer than dlqUnhealthyAfter.
func (p *Pipeline) dlqHealth() (bool, string) {
	from := p.dlqs.failingFrom.Load()
	since := p.clock().Sub(time.Unix(0, from))
	if from == 0 || since < dlqUnhealthyAfter {
		return true, ""
	}
	p.dlqs.mu.Lock()
	defer p.dlqs.mu.Unlock()
	return false, "dead-letter writes failing for " + since.Round(time.Second).String() +
		" (records held, not committed): " + p.dlqs.lastErr
}

// waitDeadLetters waits until no dead-letter write is pending or ctx ends.
func (p *Pipeline) waitDeadLetters(ctx context.Context) bool {
	t := p.timing().NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for p.dlqs.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			p.yield(hookStopWoken, nil)
			return false
		case <-t.C():
		}
		p.yield(hookStopWoken, nil)
	}
	return true
}
