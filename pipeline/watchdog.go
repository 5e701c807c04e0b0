package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/etl-project/etl/config"
)

// Stalled is a partition whose records are in flight while its watermark
// has not moved for longer than checkpoint.stalled_fail_after.
type Stalled struct {
	TopicPartition
	Watermark int64
	For       time.Duration
}

func (s Stalled) String() string {
	return fmt.Sprintf("%s/%d stuck at offset %d for %s", s.Topic, s.Partition, s.Watermark, s.For.Round(time.Second))
}

// watchdog checks every second how long each partition with records in
// flight has gone without its watermark moving. It keeps the worst age for
// etl_checkpoint_watermark_age_seconds and the stalled partitions for
// Health; with checkpoint.exit_on_stall a stall stops the pipeline.
//
// A check that finds no partition with records in flight, while the budget
// holds nothing, is the last until records are fetched again: the watchdog
// waits for the first bytes handed over (wakeController) instead of waking
// every second, so an idle member's watchdog costs nothing however many
// partitions it holds. Nothing can stall meanwhile (nothing is in flight),
// and the age gauge stays at the 0 of that last check. On waking it stamps
// every lane idle at that moment: a partition's age counts from the wake,
// not from the check before the wait.
func (p *Pipeline) watchdog(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	wake := p.wd.chanOf()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if !p.checkStalls(now) {
				continue
			}
			// Idle is set before the budget is read: bytes added after
			// the read wake the watchdog, bytes added before it keep it
			// ticking.
			p.wd.idle.Store(true)
			if p.budget.Inflight() > 0 {
				p.wd.idle.Store(false)
				continue
			}
			t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			p.stampIdle(time.Now())
			t.Reset(time.Second)
		}
	}
}

// stampIdle records at on every lane as the moment it was last seen with
// nothing in flight.
func (p *Pipeline) stampIdle(at time.Time) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.lanes {
		l.mu.Lock()
		l.idleAt = at
		l.mu.Unlock()
	}
}

// checkStalls looks at every lane at now and reports whether none has
// records in flight (nor is stalled).
func (p *Pipeline) checkStalls(now time.Time) (idle bool) {
	p.wdChecks.Add(1)
	limit := p.cfg.Checkpoint.StalledFailAfter.D()
	// The slice is the watchdog's own, kept between ticks: an idle
	// member allocates nothing per tick.
	p.mu.RLock()
	lanes := p.health.lanes[:0]
	for _, l := range p.lanes {
		lanes = append(lanes, l)
	}
	p.mu.RUnlock()
	defer func() {
		clear(lanes)
		p.health.lanes = lanes[:0]
	}()
	idle = true
	var worst time.Duration
	var stalled []Stalled
	for _, l := range lanes {
		st, ok := p.tracker.Status(l.tp)
		if !ok || st.Epoch != l.epoch || !st.Started {
			continue
		}
		l.mu.Lock()
		inFlight := l.nextFetch > st.Watermark
		if !inFlight {
			l.idleAt = now
		}
		since := st.Moved
		if l.idleAt.After(since) {
			since = l.idleAt
		}
		l.mu.Unlock()
		if !inFlight {
			continue
		}
		idle = false
		age := now.Sub(since)
		worst = max(worst, age)
		if limit > 0 && age > limit {
			stalled = append(stalled, Stalled{TopicPartition: l.tp, Watermark: st.Watermark, For: age})
		}
	}
	sort.Slice(stalled, func(i, j int) bool { return stalled[i].For > stalled[j].For })
	p.m.watermarkAge.Set(worst.Seconds())
	p.health.mu.Lock()
	was := len(p.health.stalled)
	p.health.stalled = stalled
	p.health.mu.Unlock()
	p.updateState()
	if len(stalled) > 0 && was == 0 {
		p.log.Error("partitions stalled: records in flight but nothing became durable",
			"stalled_fail_after", limit, "partitions", stallString(stalled))
		if p.cfg.Checkpoint.ExitOnStall {
			p.fail(fmt.Errorf("stalled for longer than checkpoint.stalled_fail_after (%s): %s", limit, stallString(stalled)))
		}
	}
	return idle
}

func stallString(s []Stalled) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = x.String()
	}
	return strings.Join(parts, ", ")
}

// health is what the watchdog and the readiness check found last.
type health struct {
	lanes []*lane // checkStalls' copy of the lanes, reused (the watchdog's only)

	mu      sync.Mutex
	stalled []Stalled // the partitions the watchdog found stalled

	readyMu  sync.Mutex
	readyAt  time.Time // when ready and readyMsg were last checked
	ready    bool
	readyMsg string
}

// Health reports whether the pipeline is healthy: the poll loop is alive
// and no partition is stalled. The message says what is wrong.
func (p *Pipeline) Health() (bool, string) {
	if last := p.src.LastPoll(); !last.IsZero() {
		limit, what := pollStaleAfter, ""
		if since := p.inCallback.Load(); since != 0 {
			// The poll loop is blocked in a group callback (a revoke
			// waits for the sink up to drain_timeout, then commits): that
			// is the callback's time, not a dead loop.
			limit += p.callbackLimit()
			what = fmt.Sprintf(" (in a rebalance callback for %s)", time.Since(time.Unix(0, since)).Round(time.Second))
		}
		if age := time.Since(last); age > limit {
			return false, fmt.Sprintf("poll loop has not returned for %s%s", age.Round(time.Second), what)
		}
	}
	if k := p.cfg.Source.Kafka; k != nil && k.UnreachableTimeout > 0 {
		last, lastErr := p.src.Brokers()
		if age := time.Since(last); !last.IsZero() && age > k.UnreachableTimeout.D() {
			if lastErr == "" {
				lastErr = "no answer"
			}
			return false, fmt.Sprintf("no Kafka broker has answered for %s (source.kafka.unreachable_timeout): %s", age.Round(time.Second), lastErr)
		}
	}
	if ok, msg := p.fetchHealth(); !ok {
		return false, msg
	}
	if ok, msg := p.dlqHealth(); !ok {
		return false, msg
	}
	p.health.mu.Lock()
	defer p.health.mu.Unlock()
	if len(p.health.stalled) > 0 {
		return false, "stalled: " + stallString(p.health.stalled)
	}
	return true, "ok"
}

// pollStaleAfter is how long the poll loop may go without returning before
// Health reports it; the loop returns from every poll within a second.
// A group callback adds callbackLimit.
const pollStaleAfter = 30 * time.Second

// revokeCommitTimeout bounds the commit a revoke makes after its drain;
// config checks that the drain and this fit the group's rebalance timeout.
const revokeCommitTimeout = config.RevokeCommitTimeout

// callbackLimit is the longest a group callback blocks the poll loop: a
// revoke waits up to checkpoint.drain_timeout for the sink, then commits
// within revokeCommitTimeout; an exactly-once assignment reads the
// committed blocks within the same time.
func (p *Pipeline) callbackLimit() time.Duration {
	return p.cfg.Checkpoint.DrainTimeout.D() + revokeCommitTimeout
}

// callback marks the poll loop as blocked in a group callback until the
// returned function is called (Health allows it callbackLimit more).
func (p *Pipeline) callback() (done func()) {
	p.inCallback.Store(time.Now().UnixNano())
	return func() { p.inCallback.Store(0) }
}

// setState sets the pipeline's base state (starting, running, draining,
// stopped) and updates etl_pipeline_state.
func (p *Pipeline) setState(st string) {
	p.state.Store(st)
	p.updateState()
}

// updateState sets etl_pipeline_state to the current state: stalled while
// running with a stalled partition, else the base state.
func (p *Pipeline) updateState() {
	st, _ := p.state.Load().(string)
	if st == "" {
		st = stateStarting
	}
	p.health.mu.Lock()
	if st == stateRunning && len(p.health.stalled) > 0 {
		st = stateStalled
	}
	p.health.mu.Unlock()
	for _, s := range states {
		v := 0.0
		if s == st {
			v = 1
		}
		p.m.state.WithLabelValues(s).Set(v)
	}
}

// readyEvery bounds how often Ready asks ClickHouse: probes may come more
// often.
const readyEvery = 2 * time.Second

// Ready reports whether the pipeline can take traffic: it received a
// partition assignment from the consumer group (possibly empty, when the
// group has more members than partitions) and ClickHouse answers. The
// message says what is missing.
func (p *Pipeline) Ready(ctx context.Context) (bool, string) {
	if st, _ := p.state.Load().(string); st != stateRunning {
		if st == "" {
			st = stateStarting
		}
		return false, "pipeline is " + st
	}
	if ok, msg := p.topicsReady(); !ok {
		return false, msg
	}
	if !p.assigned.Load() {
		return false, "no partition assignment received from the consumer group yet"
	}
	p.health.readyMu.Lock()
	defer p.health.readyMu.Unlock()
	if time.Since(p.health.readyAt) < readyEvery {
		return p.health.ready, p.health.readyMsg
	}
	pctx, cancel := context.WithTimeout(ctx, readyEvery)
	defer cancel()
	p.health.ready, p.health.readyMsg = true, "ok"
	var down []string
	for _, s := range p.sinks {
		for _, cs := range s.clients {
			for _, c := range cs {
				if err := c.Ping(pctx); err != nil {
					down = append(down, err.Error())
				}
			}
		}
	}
	if len(down) > 0 {
		p.health.ready, p.health.readyMsg = false, "clickhouse does not answer: "+strings.Join(down, "; ")
	}
	p.health.readyAt = time.Now()
	return p.health.ready, p.health.readyMsg
}
