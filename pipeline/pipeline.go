// Package pipeline wires the Kafka source, the pipeline workers that decode
// records into columnar chunks, the ClickHouse shard workers, the byte
// budget and the acknowledgement tracker that decides what to commit.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/internal/clock"
	"github.com/etl-project/etl/internal/loglimit"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// ErrDrainTimeout is returned by Run when the drain deadline passed before
// everything in flight was written: what was not written was not committed
// and will be read again.
var ErrDrainTimeout = errors.New("drain timeout: records in flight were not written and will be read again")

// ErrCommitFailed is returned by Run when everything was written but the
// final commit failed (Kafka unreachable, say): the records written since
// the last commit will be read again (and, with at_least_once, written
// again).
var ErrCommitFailed = errors.New("the final offset commit failed: records written since the last commit will be read again")

// Options configures a Pipeline.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	// Registerer receives every metric of the pipeline; nil registers none.
	Registerer prometheus.Registerer
	// WrapAck, when set, wraps the function each sink calls with the
	// chunks of an insert ClickHouse acknowledged, before the pipeline
	// processes the acknowledgement. The exactly-once tests use it to kill
	// the process at that instant (cmd/etl's etltest build).
	WrapAck func(next func([]*chunk.Chunk)) func([]*chunk.Chunk)
	// Started is when the process started; the log line of the first
	// rows written gives the time since (since New when zero).
	Started time.Time
}

// source is what the pipeline needs of the Kafka source: *kafka.Source, or
// the simulation's fake (sim_test.go).
type source interface {
	partitionPauser
	Run(ctx context.Context) error
	Close()
	LastPoll() time.Time
	// Brokers is when a broker last answered and the last connection
	// error.
	Brokers() (lastAnswer time.Time, lastErr string)
	Commit(ctx context.Context, offsets []kafka.Offset) error
	FetchCommitted(ctx context.Context, parts kafka.Partitions) (map[string]map[int32]kafka.Committed, error)
}

// Pipeline moves records from Kafka to ClickHouse. Build it with New, run
// it once with Run.
type Pipeline struct {
	cfg     *config.Config
	log     *slog.Logger
	src     source
	sinks   []*sinkState        // every sink, in name order (sinks.go)
	dests   []*clickhouse.Shard // every shard of every sink; chunk.Dest indexes it
	queue   enqueuer            // routes chunks to dests; a test double in unit tests
	budget  *backpressure.Budget
	tracker *checkpoint.Tracker
	commits *checkpoint.Committer // commits the tracker's pending offsets; its lock is the commit lock
	runq    *runQueue
	acks    *ackQueue
	pause   *pauser
	hold    holder // lanes held for the budget (hold.go)
	m       *metrics

	chunkTarget int
	workers     int
	onError     config.OnError                          // decode.on_error
	exactlyOnce bool                                    // delivery: exactly_once (the block policy, exactly.go)
	tombstones  bool                                    // records of a null value go through the chain (config.Tombstones, keys.go)
	component   func(name string) prometheus.Registerer // the registerer of each component (metrics.go)
	schemas     *fields.Schemas                         // the Avro schemas and registry client (empty for JSON)
	lookup      avro.SchemaSource                       // the decoders' writer schemas by id (registrySource), nil without a registry
	proto       *protoSchemas                           // the Protobuf decoders' message or registry (decode.format: protobuf)
	waiters     sync.WaitGroup                          // lanes waiting for a schema
	stopWaiters chan struct{}
	dlq         deadLetters // when on_error is dlq
	dlqs        dlqState
	dlqLog      *loglimit.Limiter
	rejectLog   *loglimit.Limiter
	chunks      chunkPool // emptied chunks, reused to keep their columns' capacity

	mu     sync.RWMutex
	lanes  map[TopicPartition]*lane
	settle broadcast // a lane may have become idle, or its last chunk was acknowledged

	closing atomic.Bool // shutting down: open exactly-once blocks are sealed at once
	given   uncommitted // written records whose commit was given up (uncommitted.go)
	// halt is closed when the stop gives up on what is still in flight
	// (the drain deadline passed): retry loops end (haltChan, haltNow).
	halt latch

	// inCallback is when the group callback running now started (Unix
	// nanoseconds; 0 when none): the poll loop waits for it.
	inCallback atomic.Int64

	failOnce sync.Once
	failc    chan error

	health health // what /healthz and /readyz report between checks (watchdog.go)

	wrapAck func(next func([]*chunk.Chunk)) func([]*chunk.Chunk) // Options.WrapAck

	stagedMu     sync.Mutex
	stagedLayout *stagedShared // the staging layout for the current targets (staged.go)

	desc   *describer   // reads the tables again while running (describer.go)
	tables tableManager // sink.clickhouse.schema: the fields the tables are derived from, read at startup

	state    atomic.Value // string: the base state (starting, running, draining, stopped)
	assigned atomic.Bool  // an assignment was received from the group
	lagw     lagWatch     // the lag watcher (lag.go)
	ctl      ctlWake      // wakes the controller from its idle period (controller.go)
	wd       ctlWake      // wakes the watchdog from its idle wait (watchdog.go)
	wdChecks atomic.Int64 // the watchdog's checks so far (tests)
	// releaseIdle returns the memory the heap no longer uses to the
	// operating system once nothing has been in flight for
	// releaseIdleAfter (controller.go); debug.FreeOSMemory.
	releaseIdle func()
	// heapAllocated is the heap's cumulative allocations, which decide
	// the idle releases after the first (controller.go); nil: the
	// runtime's. Tests set it.
	heapAllocated func() uint64

	prog progress // the progress counters Stats reports

	// hook, when set (by the simulation, sim_test.go), is called where a
	// worker or a callback hands control to the other goroutines, so that
	// the simulation can run their work at exactly that point. nil in
	// production.
	hook func(at hookPoint, l *lane)
	// clk, when set (by the simulation), is the pipeline's clock: the
	// loops' tickers and deadlines (nil: package time's).
	clk clock.Clock
}

// hookPoint names a place where the code may lose control to another
// goroutine (see Pipeline.hook).
type hookPoint int

const (
	hookRefused        hookPoint = iota // a shard queue refused a chunk; the lane is not blocked yet
	hookBlocked                         // the lane is blocked (its partition paused if the pauser says so); the send is not retried yet
	hookDecoded                         // a worker decoded a step's records
	hookRegister                        // exactly-once: a block is about to be committed as registered
	hookBudgetCheck                     // the budget changed state; the pauser does not know yet
	hookCommitted                       // a commit went through; the tracker does not know yet (commit lock held)
	hookReadAhead                       // a lane went over its read-ahead or back under it; the pauser does not know yet
	hookFollowBudget                    // the pauser is about to follow the budget and has not taken its lock
	hookRetryFailed                     // a blocked lane's retried send failed; its worker has not finished it yet
	hookFinished                        // a worker finished a lane; what the lane dropped is not released yet
	hookAcked                           // acknowledgements were applied; the held and blocked lanes are not woken yet
	hookFollowedBudget                  // the pauser followed the budget and released its lock
	hookHoldRegister                    // a lane is held for the budget and not registered yet: a wake now does not see it

	// Where a loop's goroutine woke from a wait and has not acted yet:
	// the simulation runs the goroutine from there when it chooses.
	hookControllerWoken // the controller woke (a tick, or its end)
	hookCommitterWoken  // the committer woke (acknowledgements, a tick, or its end)
	hookRevokeWoken     // a revoke's wait woke (a lane settled, its deadline, the stop's halt)
	hookRevokeCommit    // a revoke processed the acknowledgements and is about to take the commit lock
	hookDrainWoken      // the stop's drain of the lanes woke (a lane settled, or the drain deadline)
	hookStopWoken       // the stop woke while waiting for the shards or the workers
	hookAssignWoken     // an assignment's wait between two reads of the committed blocks woke
)

// yield calls the simulation's hook, if any.
func (p *Pipeline) yield(at hookPoint, l *lane) {
	if p.hook != nil {
		p.hook(at, l)
	}
}

// clock is the current time (the simulation's, under it).
func (p *Pipeline) clock() time.Time {
	return p.timing().Now()
}

// timing is the pipeline's clock: the simulation's, or package time's.
func (p *Pipeline) timing() clock.Clock {
	if p.clk != nil {
		return p.clk
	}
	return clock.System
}

// New connects to ClickHouse, reads the target table and builds the source.
// The consumer joins its group right away, but partitions are taken on only
// once Run starts.
func New(ctx context.Context, o Options) (*Pipeline, error) {
	p, err := newBase(o.Config, o.Log, o.Registerer)
	if err != nil {
		return nil, err
	}
	cfg, log := p.cfg, p.log
	p.wrapAck = o.WrapAck
	p.prog.started = o.Started
	if p.prog.started.IsZero() {
		p.prog.started = time.Now()
	}
	// A failed New closes what it opened (the startup retries call New
	// again).
	built := false
	defer func() {
		if !built {
			p.closeClients()
		}
	}()
	if err := p.openParts(ctx, sinkPlan{}); err != nil {
		return nil, err
	}
	if p.eo() {
		if err := p.eoCheckTables(ctx); err != nil {
			return nil, err
		}
	}
	if err := p.checkBind(); err != nil {
		return nil, err
	}
	// Credentials the brokers refuse, or ACLs that keep this principal
	// from the topics or the group, are mistakes to fix (exit 2). Brokers
	// that cannot be asked now are left to the source's own handling.
	if err := CheckKafkaAccess(ctx, cfg, log); err != nil {
		return nil, err
	}
	if p.onError == config.OnErrorDLQ {
		if err := p.openDeadLetters(); err != nil {
			return nil, err
		}
	}

	sub, err := kafka.SubscriptionOf(cfg)
	if err != nil {
		return nil, &ConfigError{Errs: []error{err}}
	}
	missing, matched, err := checkSourceTopics(ctx, cfg, sub, log) // a missing topic is an error unless waited for
	if err != nil {
		return nil, err
	}
	budgetBytes := p.budget.Bytes()
	ks, err := kafka.New(kafka.Options{
		Config: cfg.Source.Kafka, Pipeline: cfg.Pipeline.Name, Handler: (*handler)(p), Log: log,
		Registerer: p.component("source"), CommitRegisterer: p.component("checkpoint"), Missing: missing,
		Subscription: sub, Matched: matched,
		MaxDecompressedBatchBytes: maxDecompressedBatch(cfg, budgetBytes),
		Room:                      func() int64 { return p.budget.Bytes() - p.budget.Inflight() },
		Resumed:                   p.resumedAt,
		SkipRefused:               p.onError == config.OnErrorSkip || p.onError == config.OnErrorDLQ,
	})
	if err != nil {
		return nil, err
	}
	p.src = ks
	p.pause = newPauser(p.src, p.m.lanesPaused)
	p.registerLag()
	if reg := p.component("decode"); reg != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "etl_decode_rows_total",
			Help: "Rows decoded into chunks (or produced by the transform chain), counted when their chunk is sealed.",
		}, func() float64 { return float64(p.prog.rowsDecoded.Load()) }))
	}
	if reg := p.component("checkpoint"); reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "etl_checkpoint_pending_ranges",
			Help: "Acknowledged offset ranges held above the committable watermarks (gaps left by slow or failed batches).",
		}, func() float64 { return float64(p.tracker.PendingRanges()) }))
	}
	for _, sk := range p.sinks {
		t := sk.target.Load()
		log.Info("sink ready", "sink", sk.name, "table", t.Name(), "columns", t.Schema.Names, "shards", len(sk.shards))
	}
	log.Info("pipeline ready", "workers", p.workers, "budget_bytes", budgetBytes)
	built = true
	return p, nil
}

// maxDecompressedBatch is source.kafka.max_decompressed_batch_bytes, or
// when 0 its default: max(16 × fetch_max_partition_bytes, budget / 4), at
// most 1 GiB.
func maxDecompressedBatch(cfg *config.Config, budget int64) int64 {
	if v := int64(cfg.Source.Kafka.MaxDecompressedBatchBytes); v > 0 {
		return v
	}
	return min(max(16*int64(cfg.Source.Kafka.FetchMaxPartitionBytes), budget/4), 1<<30)
}

// sinkSizing is one sink's quantities in the budget's sizing rule.
type sinkSizing struct {
	name string
	backpressure.Sizing
}

// budgetSizing applies the sizing rule to every sink with that sink's own
// batch, queue and in-flight settings and its shard count, and returns the
// sinks' quantities and the smallest budget that holds them all: the sum
// of each sink's minimum.
func budgetSizing(cfg *config.Config) ([]sinkSizing, int64) {
	var out []sinkSizing
	var total int64
	for _, ns := range cfg.SinkList() {
		chc := ns.ClickHouse
		sz := sinkSizing{name: ns.Name, Sizing: backpressure.Sizing{
			Shards: len(chc.ShardList()), MaxInflightPerShard: chc.Inflight.MaxPerShard, QueueCapacity: chc.QueueCapacity,
			BatchMaxBytes: int64(chc.Batch.MaxBytes), ChunkTargetBytes: int64(cfg.Chunk.TargetBytes),
			LowRatio: cfg.Backpressure.LowRatio,
		}}
		out = append(out, sz)
		total += sz.MinBudget()
	}
	return out, total
}

// Stats is a snapshot of the pipeline's progress.
type Stats struct {
	RowsDecoded, RowsWritten int64
	DecodeErrors             int64  // records that could not be decoded
	Lag                      int64  // records of the assigned partitions not yet committed (lag.go)
	LagUnknown               string // why Lag is not known now ("" when it is)
	InflightBytes            int64
	BudgetBytes              int64
	PausedPartitions         int
}

// progress is what the pipeline counts of the records it moved.
type progress struct {
	started     time.Time // Options.Started
	rowsWritten atomic.Int64
	rowsDecoded atomic.Int64
	decodeErrs  atomic.Int64
	firstLogged atomic.Bool // the first rows written were logged
}

// Stats returns the pipeline's progress counters.
func (p *Pipeline) Stats() Stats {
	s := Stats{
		RowsDecoded: p.prog.rowsDecoded.Load(), RowsWritten: p.prog.rowsWritten.Load(), DecodeErrors: p.prog.decodeErrs.Load(),
		InflightBytes: p.budget.Inflight(), BudgetBytes: p.budget.Bytes(), PausedPartitions: p.pause.count(),
	}
	s.Lag, s.LagUnknown = p.lagNow()
	return s
}

// Run runs the pipeline until ctx is cancelled (a graceful stop: in-flight
// records are written and committed within checkpoint.drain_timeout) or a
// fatal error (a permanent insert error, an undecodable record). It returns
// nil after a complete graceful stop, ErrDrainTimeout when the drain did not
// finish in time, or the fatal error.
func (p *Pipeline) Run(ctx context.Context) error {
	defer p.closeSinks()
	p.setState(stateRunning)
	defer p.setState(stateStopped)

	sinkCtx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	sinkDone := make(chan error, len(p.dests))
	for _, sh := range p.dests {
		go func() { sinkDone <- sh.Run(sinkCtx) }()
	}

	var workers sync.WaitGroup
	for i := 0; i < p.workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			p.worker()
		}()
	}

	stopCommitter := background(p.committer)
	stopController := background(p.controller)
	stopWatchdog := background(p.watchdog)
	stopDescriber := background(p.desc.run)
	defer background(p.statusLoop)()
	stopLag := background(p.lagWatcher)

	srcCtx, stopSource := context.WithCancel(context.Background())
	srcDone := make(chan error, 1)
	go func() { srcDone <- p.src.Run(srcCtx) }()

	rt := &running{
		stopSource:  func() { stopSource(); <-srcDone },
		sinkDone:    sinkDone,
		sinksLeft:   len(p.dests),
		hardStop:    hardStop,
		stopWorkers: workers.Wait,
		stopLoops: func() {
			stopController()
			stopWatchdog()
			stopDescriber()
			stopCommitter()
			stopLag()
		},
	}
	var fatal error
	sinkReturned := false
	select {
	case <-ctx.Done():
		p.log.Info("stopping: writing what is in flight", "drain_timeout", p.cfg.Checkpoint.DrainTimeout.D())
	case fatal = <-p.failc:
		p.log.Error("stopping on error", "err", fatal)
	case fatal = <-sinkDone:
		sinkReturned = true
		rt.sinksLeft--
		if fatal == nil {
			fatal = errors.New("sink stopped unexpectedly")
		}
		p.log.Error("stopping on sink error", "err", fatal)
	}
	return p.stop(rt, fatal, sinkReturned)
}

// running is what Run started and its stop ends.
type running struct {
	// stopSource stops the source and waits for its Run to return (a
	// group callback in progress, such as a revoke, ends first).
	stopSource func()
	sinkDone   <-chan error // each shard's Run's result
	sinksLeft  int          // shards whose Run has not returned
	hardStop   func()       // cancels every shard's Run
	// stopWorkers waits for the workers, once the run queue is closed.
	stopWorkers func()
	// stopLoops stops the controller, the watchdog, the describer, the
	// committer and the lag watcher, and waits for them.
	stopLoops func()
}

// stop is Run's graceful stop, or its stop on the fatal error (with
// sinkReturned when a shard's Run returned it): the source stops, the
// lanes decode what was fetched and hand it to the sinks, the shards
// write it, all within checkpoint.drain_timeout, then the loops stop and
// the final commit is made (bounded by revokeCommitTimeout).
func (p *Pipeline) stop(rt *running, fatal error, sinkReturned bool) error {
	p.closing.Store(true)
	p.setState(stateDraining)
	rt.stopSource()

	drainCtx, cancelDrain := p.timing().WithTimeout(context.Background(), p.cfg.Checkpoint.DrainTimeout.D())
	defer cancelDrain()
	// At the drain deadline every retry loop gives up (an exactly-once
	// block that cannot be registered is dropped, not written).
	defer context.AfterFunc(drainCtx, p.haltNow)()
	drained := true
	if !sinkReturned {
		// Decode what was fetched and hand every chunk to the sinks.
		if !p.drainLanes(drainCtx) {
			drained = false
			p.log.Warn("drain: lanes still busy at the drain timeout")
		}
	}
	for _, sh := range p.dests {
		sh.Close()
	}
	if !p.waitSinks(rt, drainCtx, &fatal) {
		drained = false
	}
	close(p.stopWaiters)
	p.waiters.Wait()
	p.runq.close()
	p.haltNow() // nothing is left to wait for: a worker still retrying gives up
	rt.stopWorkers()
	defer p.schemas.Close()
	rt.stopLoops()

	// Wait for dead-letter writes still in flight (their offsets commit
	// only once acknowledged), then commit what is durable and leave the
	// group.
	if p.dlq != nil {
		// Records waiting to be written again are given up (not
		// committed: the next run reads them again); writes in flight get
		// until the drain deadline.
		p.dlqGiveUp()
		if !p.waitDeadLetters(drainCtx) {
			drained = false
			p.log.Error("dead-letter writes not acknowledged before the drain timeout: their records are not committed", "pending", p.dlqs.pending.Load())
		}
		if err := p.dlq.Flush(drainCtx); err != nil {
			drained = false
			p.log.Error("dead-letter writes not acknowledged before the drain timeout", "err", err)
		}
		defer p.dlq.Close()
	}
	p.processAcks()
	commitCtx2, cancelCommit := p.timing().WithTimeout(context.Background(), revokeCommitTimeout)
	commitErr := p.commits.Commit(commitCtx2, nil)
	if commitErr != nil {
		p.log.Error("final commit failed: records since the last commit will be read again", "err", commitErr)
	}
	cancelCommit()
	p.src.Close()
	commitErr = p.finalCommitErr(commitErr)

	st := p.Stats()
	p.log.Info("stopped", "rows_written", st.RowsWritten)
	switch {
	case fatal != nil:
		return fatal
	case !drained:
		return ErrDrainTimeout
	case commitErr != nil:
		return fmt.Errorf("%w: %v", ErrCommitFailed, commitErr)
	}
	return nil
}

// waitSinks waits for every shard's Run to return, until drainCtx ends;
// then it cancels them (hardStop) and waits for them. It reports whether
// they returned in time, and sets *fatal to the first error one returned
// in time if it is not set. Each pass looks at both cases after the
// wake, whichever of them select picked: a shard that returned is
// counted, and one that returns as the deadline passes counts as late.
func (p *Pipeline) waitSinks(rt *running, drainCtx context.Context, fatal *error) bool {
	for rt.sinksLeft > 0 {
		var sinkErr error
		got := false
		select {
		case sinkErr = <-rt.sinkDone:
			got = true
		case <-drainCtx.Done():
		}
		p.yield(hookStopWoken, nil)
		if !got {
			select {
			case sinkErr = <-rt.sinkDone:
				got = true
			default:
			}
		}
		if got {
			rt.sinksLeft--
		}
		if drainCtx.Err() != nil {
			rt.hardStop()
			for ; rt.sinksLeft > 0; rt.sinksLeft-- {
				<-rt.sinkDone
				p.yield(hookStopWoken, nil)
			}
			return false
		}
		if sinkErr != nil && *fatal == nil {
			*fatal = sinkErr
		}
	}
	return true
}

// background runs fn in a goroutine until the returned stop function is
// called; stop cancels fn's context and waits for fn to return.
func background(fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// haltChan is closed once the stop gives up on what is in flight.
func (p *Pipeline) haltChan() <-chan struct{} { return p.halt.wait() }

// haltNow ends every retry loop: the stop no longer waits for them.
func (p *Pipeline) haltNow() { p.halt.fire() }

// latch is a channel closed at most once, made at its first use (the
// zero latch is ready).
type latch struct {
	make, close sync.Once
	c           chan struct{}
}

// wait returns the channel, closed once fire was called.
func (l *latch) wait() <-chan struct{} {
	l.make.Do(func() { l.c = make(chan struct{}) })
	return l.c
}

// fire closes the channel; later calls do nothing.
func (l *latch) fire() {
	l.wait()
	l.close.Do(func() { close(l.c) })
}

// fail reports a fatal error once; Run stops the pipeline.
func (p *Pipeline) fail(err error) {
	p.failOnce.Do(func() { p.failc <- err })
}

// drainLanes schedules every lane and waits until all of them are idle,
// with everything decoded and handed to the sink.
func (p *Pipeline) drainLanes(ctx context.Context) bool {
	lanes := p.lanesSorted()
	for _, l := range lanes {
		p.schedule(l)
	}
	for {
		changed := p.settle.wait()
		busy := false
		for _, l := range lanes {
			if !l.idle() {
				busy = true
				break
			}
		}
		if !busy {
			return true
		}
		// The deadline is looked at on each pass, whichever case woke
		// the wait: lanes idle at the deadline count as drained.
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-changed:
		}
		p.yield(hookDrainWoken, nil)
	}
}

// schedule queues l for a worker unless it is queued, blocked, waiting,
// failed or closed; a running lane is marked to run again.
func (p *Pipeline) schedule(l *lane) {
	if l.schedule() {
		p.runq.push(l)
	}
}

// closeClients closes what New opened: every replica's connections, the
// schema registry client and the dead-letter producer.
func (p *Pipeline) closeClients() {
	p.closeSinks()
	p.schemas.Close()
	if p.dlq != nil {
		p.dlq.Close()
	}
}

// closeSinks closes every replica's connections.
func (p *Pipeline) closeSinks() {
	for _, s := range p.sinks {
		s.closeClients()
	}
}

// checkBudget runs the budget's hysteresis and makes the pauser follow
// it. The poll loop and the controller both call it: the pauser reads the
// budget's state under its own lock (followBudget) rather than applying
// the transition Check returned, so two calls that interleave cannot leave
// it opposite to the budget.
func (p *Pipeline) checkBudget(now time.Time) {
	a := p.budget.Check(now)
	if a == backpressure.None {
		return
	}
	p.yield(hookBudgetCheck, nil)
	p.log.Debug("in-flight byte budget crossed a watermark", "action", a, "inflight", p.budget.Inflight())
	p.pause.followBudget(p.budget, p.yield)
}

// committer applies acknowledgements and commits periodically.
func (p *Pipeline) committer(ctx context.Context) {
	p.commits.Run(ctx, p.cfg.Checkpoint.CommitInterval.D(), p.acks.notify, p.processAcks)
}

// processAcks moves acknowledged chunks into the tracker and releases their
// budget.
func (p *Pipeline) processAcks() {
	now := p.clock().UnixMilli()
	acked := p.acks.take()
	for _, c := range acked {
		if c.Oldest > 0 && c.Rows > 0 {
			p.m.e2eLatency.Observe(float64(max(now-c.Oldest, 0)) / 1000)
		}
		for _, s := range c.Spans {
			p.tracker.Ack(TopicPartition{Topic: s.Topic, Partition: s.Partition}, s.Epoch, s.First, s.Next)
		}
		if c.Owner != nil {
			c.Owner.Acked()
		}
		p.budget.Release(int64(c.Size()))
		p.hold.sinkChunks.Add(-1)
		p.prog.rowsWritten.Add(int64(c.Rows))
		c.Reset()
		p.chunks.put(c)
	}
	if len(acked) > 0 {
		p.yield(hookAcked, nil)
	}
	p.wakeHeld(false)
	if p.prog.rowsWritten.Load() > 0 && p.prog.firstLogged.CompareAndSwap(false, true) {
		p.log.Info("first rows written", "rows", p.prog.rowsWritten.Load(), "since_start", time.Since(p.prog.started).Round(time.Millisecond))
	}
	if p.eo() {
		p.wakeBlockWaiters()
	}
}
