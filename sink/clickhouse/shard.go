package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/chunk"
)

// ShardOptions configures a Shard.
type ShardOptions struct {
	// Name is the shard's label in metrics and logs, e.g. "0".
	Name string
	// Replicas are the shard's replicas, tried in order: a batch goes to
	// the first replica whose breaker is closed (or half-open), and a
	// batch that fails there is retried on the next one. Client is
	// shorthand for a single replica. *Client is the real replica
	// (Inserters converts a list of them).
	Replicas []Inserter
	Client   Inserter
	Breaker  BreakerOptions
	Target   *Target
	// QueueCapacity bounds the queue of chunks between the producers and
	// the batching loop (default 1).
	QueueCapacity int
	// A batch is closed when it holds MaxRows rows or MaxBytes bytes
	// (chunk.Size, as measured by the producer), or when Linger has passed
	// since its first chunk. A zero trigger is off; with all three off
	// every chunk is a batch of its own.
	MaxRows  int
	MaxBytes int
	Linger   time.Duration
	// Idle closes a batch that holds at least a quarter of MaxRows or of
	// MaxBytes once no chunk has arrived for this long (0: off). The
	// input goes quiet when the source has caught up (the end of a burst
	// or of a backlog) or is paused: a batch already large enough to be a
	// good insert is not held back for the rest of its linger. So is the
	// remainder of a burst, whatever its size: a batch begun within Linger
	// of the close of one that MaxRows or MaxBytes closed (the last rows
	// of a backlog do not wait for the linger, even when they come in
	// several pieces, as partitions resumed late deliver theirs). Quiet
	// traffic, whose batches close by linger, keeps its large inserts:
	// after a burst at most Linger / Idle small batches go early.
	Idle time.Duration
	// FirstAtOnce closes the shard's first batch with its first chunk, so
	// that the first rows of a start reach the table without waiting for
	// a full batch or the linger.
	FirstAtOnce bool
	// MaxInflight is how many inserts of this shard may run at once
	// (default 1). While that many run, the batching loop goes on taking
	// chunks into the next batch until it is complete (MaxRows or
	// MaxBytes), then takes nothing more, so the queue fills and producers
	// see backpressure. With neither size trigger it takes nothing while
	// every slot is busy.
	MaxInflight int
	// Transient errors are retried with capped exponential backoff and full
	// jitter: the n-th wait is uniform in [0, min(MaxBackoff,
	// InitialBackoff*2^(n-1))]. Defaults 100 ms and 30 s.
	InitialBackoff, MaxBackoff time.Duration
	// MaxAttempts bounds the attempts per batch; 0 retries transient errors
	// forever.
	MaxAttempts int
	// Jitter returns the wait in [0, d] before a retry whose capped
	// backoff is d (nil: uniform, the full jitter above).
	Jitter func(d time.Duration) time.Duration
	// Clock is the shard's time (nil: package time's).
	Clock Clock
	// OnDone is called once per successful insert with the batch's chunks,
	// from one of the shard's goroutines. It must not block (push to an
	// unbounded channel). Never called for a batch that failed, nor for any
	// batch once a batch has failed for good.
	OnDone func(chunks []*chunk.Chunk)
	// Reshape, when set with Refresh, converts chunks built for columns
	// whose types the table has changed since into chunks of the live
	// target (Refresh's), so that a refused insert after an ALTER TABLE
	// ... MODIFY COLUMN is retried converted instead of failing.
	Reshape func(chunks []*chunk.Chunk, live *Target) ([]*chunk.Chunk, error)
	// OnRejected, when set, makes a batch the server refuses for the
	// values of some rows (RowRejected) be bisected down to the records
	// behind them (bisect.go): each is handed to OnRejected, from an
	// insert goroutine, and the rest of the batch is written. The batch is
	// acknowledged only after OnRejected returned nil for each; an error
	// ends the shard. Nil: such a batch ends the shard.
	OnRejected func(ctx context.Context, r Rejected) error
	// OnSpace, when set, is called once the queue, after a TryEnqueue was
	// refused, has drained to half its capacity or less, so paused
	// producers can be rescheduled. It is called from the batching loop and
	// must not block.
	OnSpace func()
	Log     *slog.Logger
	// Metrics are shared by all shards (NewMetrics); nil: unregistered.
	Metrics *Metrics
	// Budget, when set, counts the bytes an insert attempt holds while it
	// runs (its encoded copy of the batch) as in flight.
	Budget Budget
	// Refresh, when set, reads the table's columns again and returns the
	// current target. The shard calls it when an insert names a column the
	// table no longer has (ALTER TABLE ... DROP COLUMN under a running
	// pipeline) and retries the batch with the columns the table still
	// has.
	Refresh func(ctx context.Context) (*Target, error)
	// ReportOrphans makes the shard look, before its first insert and
	// after a batch whose insert ended with UNKNOWN_STATUS_OF_INSERT (319)
	// went in, for parts a replica keeps that ZooKeeper never registered,
	// and report them (reportOrphans, unknown.go). Set under exactly_once,
	// where such a part makes a block read twice.
	ReportOrphans bool
}

// Budget is the in-flight byte counter the shard reports the inserts'
// encoded copies to.
type Budget interface {
	Add(n int64) int64
	Release(n int64)
}

// Shard is the sink worker of one shard: a bounded queue of chunks, a
// batching loop, and up to MaxInflight insert goroutines, all owned by Run.
//
// Producers hand chunks over with TryEnqueue, which never blocks: a full
// queue is the backpressure signal, answered upstream by pausing the source,
// never by blocking the poll loop.
type Shard struct {
	o     ShardOptions
	alone bool // no batch trigger was set: every chunk is a batch of its own
	log   *slog.Logger
	m     *shardMetrics
	clock Clock
	// defaultedSeries is the target whose columns' defaulted-rows series
	// were last made (noteDefaulted).
	defaultedSeries atomic.Pointer[Target]

	queue chan *chunk.Chunk
	// mu guards closed and the queue's closing against TryEnqueue's send.
	// TryEnqueue holds it shared for one non-blocking send only.
	mu     sync.RWMutex
	closed bool
	// full is set when TryEnqueue refused a chunk and cleared (calling
	// OnSpace) when the loop next takes one.
	full    atomic.Bool
	running atomic.Bool

	// ackMu orders acknowledgements against a permanent failure: once
	// failed is set, OnDone is never called again.
	ackMu  sync.Mutex
	failed bool

	// targets maps a chunk schema to the target that inserts its chunks:
	// the initial one, those added by AddTarget when the table changed,
	// and projections of older ones.
	tmu     sync.Mutex
	targets map[*chunk.Schema]*Target

	replicas []*replica
	cur      atomic.Int64 // index of the replica inserts go to first

	// parts lists a replica's parts that ZooKeeper lacks; nil:
	// Client.UnregisteredParts (tests set it).
	parts func(r *replica) partLister
	// firstMu holds the shard's inserts until checkFirst is done.
	firstMu   sync.Mutex
	firstDone bool
	// orphanMu guards orphansSeen, the orphans reported (replica and part
	// names).
	orphanMu    sync.Mutex
	orphansSeen map[string]bool
}

// replica is one replica of the shard with its breaker and metrics.
type replica struct {
	name          string
	c             Inserter
	br            *breaker
	errs          prometheus.Counter
	durOK, durErr prometheus.Observer
}

// NewShard returns a shard; call Run to start it.
func NewShard(o ShardOptions) *Shard {
	if o.QueueCapacity < 1 {
		o.QueueCapacity = 1
	}
	if o.MaxInflight < 1 {
		o.MaxInflight = 1
	}
	alone := o.MaxRows <= 0 && o.MaxBytes <= 0 && o.Linger <= 0
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxBackoff < o.InitialBackoff {
		o.MaxBackoff = o.InitialBackoff
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil, nil)
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.Jitter == nil {
		o.Jitter = fullJitter
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	attrs := []any{slog.String("shard", o.Name)}
	if o.Target != nil {
		attrs = append(attrs, slog.String("table", o.Target.Name()))
	}
	s := &Shard{
		o:       o,
		alone:   alone,
		clock:   o.Clock,
		log:     log.With(attrs...),
		m:       o.Metrics.forShard(o.Name),
		queue:   make(chan *chunk.Chunk, o.QueueCapacity),
		targets: map[*chunk.Schema]*Target{},
	}
	if o.Target != nil {
		s.targets[o.Target.Schema] = o.Target
	}
	clients := o.Replicas
	if len(clients) == 0 && o.Client != nil {
		clients = []Inserter{o.Client}
	}
	for _, c := range clients {
		name := c.Addr()
		s.replicas = append(s.replicas, &replica{
			name: name, c: c,
			br:    newBreaker(o.Breaker, o.Clock.Now, o.Metrics.replicaHealthy.WithLabelValues(o.Name, name), o.Metrics.breakerOpens.WithLabelValues(o.Name, name)),
			errs:  o.Metrics.replicaErrors.WithLabelValues(o.Name, name),
			durOK: o.Metrics.insertDuration.WithLabelValues(o.Name, name, "ok"), durErr: o.Metrics.insertDuration.WithLabelValues(o.Name, name, "error"),
		})
	}
	s.m.queueCapacity.Set(float64(o.QueueCapacity))
	s.m.queueDepth.Set(0)
	s.m.inflight.Set(0)
	return s
}

// TryEnqueue hands c to the shard without blocking. It returns false when
// the queue is full (counted in etl_queue_full_events_total; OnSpace is
// called once there is room again) and after Close. c must be Measured and
// not written again.
func (s *Shard) TryEnqueue(c *chunk.Chunk) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	select {
	case s.queue <- c:
		s.m.queueDepth.Inc()
		return true
	default:
	}
	// Mark the queue full, then try once more: if the loop took the last
	// chunk between the two sends, it may have checked the flag before it
	// was set, and no later take would report the room.
	s.full.Store(true)
	select {
	case s.queue <- c:
		s.m.queueDepth.Inc()
		return true
	default:
	}
	s.m.queueFull.Inc()
	return false
}

// AddTarget registers t as the target of chunks built for t.Schema, after
// the table's columns changed. Chunks built for an earlier target are still
// inserted with it (or its projection, see Refresh).
func (s *Shard) AddTarget(t *Target) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	s.targets[t.Schema] = t
}

// targetFor returns the target of chunks built for schema.
func (s *Shard) targetFor(schema *chunk.Schema) *Target {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if t := s.targets[schema]; t != nil {
		return t
	}
	return s.o.Target
}

// followTable is the shard's one answer to a refused insert that may mean
// the table changed under the batch: it reads the table once through
// Options.Refresh (which installs the live target for the whole sink, see
// pipeline's refreshTarget) and makes b fit it, each way at most once per
// batch:
//   - a column the insert named is gone (missingColumn): the chunks of
//     target's schema are re-targeted at the columns the table still has
//     (Project);
//   - another permanent error after some columns changed type: the batch is
//     converted to the live types with Options.Reshape.
//
// It reports recoverAgain when b was made to fit, recoverNever when the
// conversion failed (ie then says why), and ok=false when the table did not
// change in a way the batch can follow.
func (s *Shard) followTable(ctx context.Context, b *batchSend, target *Target, err error, ie *InsertError) (rec recovery, ok bool) {
	if s.o.Refresh == nil {
		return 0, false
	}
	project := missingColumn(err) && !b.reprojected
	convert := Permanent(err) && !b.retyped && s.o.Reshape != nil
	if !project && !convert {
		return 0, false
	}
	live, rerr := s.o.Refresh(ctx)
	if rerr != nil {
		s.log.Warn("could not read the table's columns again", slog.Any("error", rerr))
		return 0, false
	}
	d := Diff(target, live)
	if project && len(d.Gone) > 0 {
		if t, dropped := Project(target, live); t != nil {
			s.log.Warn("the table no longer has some columns the batch was built for: inserting it without them",
				slog.Any("dropped", dropped))
			s.tmu.Lock()
			s.targets[t.From] = t
			s.tmu.Unlock()
			b.reprojected = true
			return recoverAgain, true
		}
	}
	if !convert {
		return 0, false
	}
	if len(d.Retyped) == 0 {
		return 0, false
	}
	changed := d.RetypedList()
	b.retyped = true
	conv, cerr := s.o.Reshape(b.chunks, live)
	if cerr != nil {
		ie.Err = fmt.Errorf("the types of columns %v changed under the running pipeline, and the batch built for the old ones cannot be converted: %w (the insert was refused with: %w)", changed, cerr, ie.Err)
		return recoverNever, true
	}
	s.log.Warn("the types of some columns changed under the running pipeline: converting the batch built for the old ones",
		slog.Any("columns", changed), slog.Int("rows", b.rows))
	s.AddTarget(live)
	b.chunks, b.bytes = conv, 0
	for _, c := range conv {
		b.bytes += c.Size()
	}
	return recoverAgain, true
}

// QueueLen is the number of chunks waiting in the queue.
func (s *Shard) QueueLen() int { return len(s.queue) }

// Close is the soft stop: no more chunks will be enqueued (TryEnqueue
// returns false from now on). Run inserts everything queued and batched,
// waits for the inserts in flight, and returns nil. Close may be called more
// than once, and before Run.
func (s *Shard) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
}

// batch is a set of chunks inserted together; it is never split or merged
// once closed, and a retry inserts it unchanged.
type batch struct {
	chunks []*chunk.Chunk
	rows   int
	bytes  int
	reason string // why it was closed (a flush reason)
}

// Run owns the batching loop and the insert goroutines. It returns nil once
// Close was called and everything was inserted, ctx.Err() when ctx ends
// first (the hard stop: in-flight inserts are abandoned and not
// acknowledged), or the *InsertError of a batch that failed for good (a
// permanent error, or MaxAttempts transient ones). Every goroutine it starts
// has ended when it returns. Run may be called once.
func (s *Shard) Run(ctx context.Context) error {
	if len(s.replicas) == 0 || s.o.Target == nil {
		return fmt.Errorf("clickhouse shard %s: a replica and Target are required", s.o.Name)
	}
	if !s.running.CompareAndSwap(false, true) {
		return fmt.Errorf("clickhouse shard %s: Run called twice", s.o.Name)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		s.m.inflight.Set(0)
	}()

	var (
		done     = make(chan error, s.o.MaxInflight) // never blocks a sender
		cur      batch
		inflight int
		queue    = s.queue // nil once closed and drained
		linger   Timer
		lingerC  <-chan time.Time
		lingered bool // the linger of cur has passed
		idle     Timer
		idleC    <-chan time.Time
		idled    bool // cur is large and its input went quiet
		// burst: cur was begun within Linger of the close of a full
		// batch (rows or bytes), so it is what follows a burst and goes
		// at the idle time however small; burstUntil is when that window
		// ends.
		burst      bool
		burstUntil time.Time
		// first: no batch was closed yet (with FirstAtOnce).
		first = s.o.FirstAtOnce
		// full: why cur is complete (rows, bytes); it goes as soon as an
		// insert slot is free, and nothing more is taken meanwhile.
		full string
		// held: a chunk of another schema than cur's, taken from the
		// queue while every insert slot was busy; it begins the next
		// batch once cur has gone, that batch's linger counting from
		// heldAt, when it was taken.
		held   *chunk.Chunk
		heldAt time.Time
	)
	defer func() {
		if linger != nil {
			linger.Stop()
		}
		if idle != nil {
			idle.Stop()
		}
	}()

	dispatch := func(reason string) {
		b := cur
		b.reason = reason
		cur, full = batch{}, ""
		lingerC, lingered = nil, false
		if linger != nil {
			linger.Stop()
		}
		idleC, idled = nil, false
		if idle != nil {
			idle.Stop()
		}
		if reason == reasonRows || reason == reasonBytes {
			burstUntil = s.clock.Now().Add(max(s.o.Linger, s.o.Idle))
		}
		s.m.flush[reason].Inc()
		s.m.batchRows.Observe(float64(b.rows))
		s.m.batchBytes.Observe(float64(b.bytes))
		inflight++
		s.m.inflight.Set(float64(inflight))
		wg.Add(1)
		go func() {
			defer wg.Done()
			done <- s.insert(ctx, &b)
		}()
	}

	// take adds c, taken from the queue at at, to cur and decides
	// whether cur is complete.
	take := func(c *chunk.Chunk, at time.Time) {
		if len(cur.chunks) == 0 {
			if d := s.o.Linger - s.clock.Now().Sub(at); s.o.Linger > 0 && d > 0 {
				lingerC = s.restart(&linger, d)
			} else if s.o.Linger > 0 {
				lingered = true // its linger ran out while it was held
			}
			burst = s.o.Idle > 0 && s.clock.Now().Before(burstUntil)
		}
		cur.chunks = append(cur.chunks, c)
		cur.rows += c.Rows
		cur.bytes += c.Size()
		switch {
		case first:
			first = false
			dispatch(reasonStart) // (nothing is in flight before the first batch)
		case s.alone:
			// Counted as the rows trigger: a chunk of no rows (its
			// records all refused) closes its batch too, as nothing
			// else would.
			full = reasonRows
		case s.o.MaxRows > 0 && cur.rows >= s.o.MaxRows:
			full = reasonRows
		case s.o.MaxBytes > 0 && cur.bytes >= s.o.MaxBytes:
			full = reasonBytes
		case s.o.Idle > 0 && (burst || s.idleSize(cur.rows, cur.bytes)):
			// (Re)start the quiet period: it ends with no chunk
			// arriving for Idle.
			idleC, idled = s.restart(&idle, s.o.Idle), false
		}
	}

	for {
		if inflight < s.o.MaxInflight && len(cur.chunks) > 0 {
			switch {
			case full != "":
				dispatch(full)
				continue
			case held != nil:
				dispatch(reasonSchema)
				continue
			case queue == nil:
				dispatch(reasonDrain)
				continue
			case lingered:
				dispatch(reasonLinger)
				continue
			case idled && len(s.queue) == 0:
				// A chunk that arrived as the quiet period ended goes
				// into the batch first (and starts a new quiet period).
				dispatch(reasonIdle)
				continue
			}
		}
		if held != nil && len(cur.chunks) == 0 {
			c := held
			held = nil
			take(c, heldAt)
			continue
		}
		if queue == nil && len(cur.chunks) == 0 && inflight == 0 {
			return nil
		}
		// The next batch is built while inserts run: chunks are taken
		// until it is complete, so the queue stays a short hand-over and
		// the producers are held back only by a complete batch waiting
		// for a slot (or by the byte budget). With no size trigger a
		// batch could only grow, so then nothing is taken while every
		// slot is busy.
		var in <-chan *chunk.Chunk
		if full == "" && held == nil && (inflight < s.o.MaxInflight || s.alone || s.o.MaxRows > 0 || s.o.MaxBytes > 0) {
			in = queue
			if in != nil {
				s.spaceIfFull()
			}
		}
		select {
		case <-ctx.Done():
			return parent.Err()
		case c, ok := <-in:
			if !ok {
				queue = nil
				continue
			}
			// Counted by sends and takes, not read from len(s.queue): a
			// read here could overwrite a later send's count.
			s.m.queueDepth.Dec()
			s.spaceIfFull()
			if len(cur.chunks) > 0 && cur.chunks[0].Schema != c.Schema {
				// The table changed: one insert names one set of
				// columns, so cur goes first (when a slot is free).
				held, heldAt = c, s.clock.Now()
				continue
			}
			take(c, s.clock.Now())
		case <-lingerC:
			lingerC, lingered = nil, true
		case <-idleC:
			idleC, idled = nil, true
		case err := <-done:
			inflight--
			s.m.inflight.Set(float64(inflight))
			if err != nil {
				if perr := parent.Err(); perr != nil {
					return perr
				}
				return err
			}
		}
	}
}

// restart starts *t to fire after d, making it on first use, and returns
// its channel.
func (s *Shard) restart(t *Timer, d time.Duration) <-chan time.Time {
	if *t == nil {
		*t = s.clock.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C()
}

// idleSize reports whether a batch of rows and bytes is large enough for
// the idle trigger: a quarter of MaxRows or of MaxBytes. With neither set
// every chunk is its own batch and the trigger has nothing to do.
func (s *Shard) idleSize(rows, bytes int) bool {
	return (s.o.MaxRows > 0 && rows >= (s.o.MaxRows+3)/4) || (s.o.MaxBytes > 0 && bytes >= (s.o.MaxBytes+3)/4)
}

// spaceIfFull calls OnSpace if a TryEnqueue was refused since the last call
// and the queue has drained to half its capacity or less. Waking the
// refused producers only at half capacity (hysteresis) lets each wake-up
// move a batch of chunks instead of pausing and resuming the producers'
// partitions for every free slot.
func (s *Shard) spaceIfFull() {
	if len(s.queue) > s.o.QueueCapacity/2 {
		return
	}
	if s.full.Load() && s.full.CompareAndSwap(true, false) && s.o.OnSpace != nil {
		s.o.OnSpace()
	}
}
