package checkpoint

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/internal/clock"
	"github.com/etl-project/etl/internal/loglimit"
)

// Client commits offsets, each with its metadata, to the consumer group:
// the Kafka client.
type Client interface {
	Commit(ctx context.Context, commits []Commit) error
}

// CommitterOptions configures a Committer.
type CommitterOptions struct {
	Log *slog.Logger
	// Commits counts the commits that went through (nil: not counted).
	Commits prometheus.Counter
	// Yield, when set, is called after the client committed and before
	// the tracker records it, with the commit lock held: the simulation
	// runs other goroutines' work there. nil in production.
	Yield func()
	// FailLog bounds the "commit failed; will retry" lines of the
	// periodic commit (nil: one every 10 s).
	FailLog *loglimit.Limiter
	// Clock is Run's time: its ticker (nil: package time's).
	Clock clock.Clock
	// Woken, when set, is called each time Run wakes (an acknowledgement,
	// a tick, the end), before it acts: the simulation schedules the
	// committer's goroutine there. nil in production.
	Woken func()
}

// periodicTimeout bounds each periodic commit.
const periodicTimeout = 30 * time.Second

// Committer commits, through its Client, the offsets the tracker has
// pending: periodically (Run), when asked (Commit), and the registration
// of exactly-once blocks (Register). One commit runs at a time, under the
// commit lock; callers that must keep the tracker and the group's
// committed offsets in step across several calls hold it (Lock).
//
// Lock order: the commit lock, then the tracker's.
type Committer struct {
	mu      sync.Mutex
	tracker *Tracker
	client  Client
	log     *slog.Logger
	commits prometheus.Counter
	yield   func()
	failLog *loglimit.Limiter
	clock   clock.Clock
	woken   func()
}

// NewCommitter returns a committer of t's pending offsets through c.
func NewCommitter(t *Tracker, c Client, o CommitterOptions) *Committer {
	cm := &Committer{tracker: t, client: c, log: o.Log, commits: o.Commits, yield: o.Yield, failLog: o.FailLog,
		clock: o.Clock, woken: o.Woken}
	if cm.clock == nil {
		cm.clock = clock.System
	}
	if cm.log == nil {
		cm.log = slog.Default()
	}
	if cm.failLog == nil {
		cm.failLog = loglimit.New(1, 10*time.Second)
	}
	return cm
}

// Lock takes the commit lock: no commit runs until Unlock.
func (c *Committer) Lock() { c.mu.Lock() }

// Unlock releases the commit lock.
func (c *Committer) Unlock() { c.mu.Unlock() }

// Run commits what is pending every interval until ctx ends. apply moves
// acknowledgements into the tracker: Run calls it whenever acks signals
// and before each commit. A failed commit is retried at the next
// interval; its warning is rate-limited (FailLog) and counts the lines it
// suppressed.
func (c *Committer) Run(ctx context.Context, interval time.Duration, acks <-chan struct{}, apply func()) {
	t := c.clock.NewTicker(interval)
	defer t.Stop()
	for {
		tick := false
		select {
		case <-ctx.Done():
		case <-acks:
		case <-t.C():
			tick = true
		}
		if c.woken != nil {
			c.woken()
		}
		// Every case is looked at after the wake, in a fixed order,
		// whichever of them select picked: the end first, then the
		// acknowledgements (apply takes them all) and a tick due.
		if ctx.Err() != nil {
			return
		}
		select {
		case <-acks:
		default:
		}
		select {
		case <-t.C():
			tick = true
		default:
		}
		apply()
		if tick {
			c.periodic(ctx)
		}
	}
}

// periodic is Run's commit at each interval.
func (c *Committer) periodic(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, periodicTimeout)
	defer cancel()
	if err := c.Commit(cctx, nil); err != nil {
		if ok, suppressed := c.failLog.AllowCount(); ok {
			c.log.Warn("commit failed; will retry", "err", err, "suppressed", suppressed)
		}
	}
}

// Commit commits the watermark of every partition that moved (or only of
// the partitions in only), with its metadata.
func (c *Committer) Commit(ctx context.Context, only map[TopicPartition]bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.CommitLocked(ctx, only)
}

// CommitLocked is Commit with the commit lock held by the caller.
func (c *Committer) CommitLocked(ctx context.Context, only map[TopicPartition]bool) error {
	pending := c.tracker.Pending(only)
	if len(pending) == 0 {
		return nil
	}
	// The metadata goes with the offset: with exactly-once it names the
	// blocks above the watermark that may be in ClickHouse, and a commit
	// without it would make the next owner forget them.
	if err := c.client.Commit(ctx, pending); err != nil {
		return err
	}
	if c.yield != nil {
		c.yield()
	}
	for _, cm := range pending {
		c.tracker.Committed(cm)
	}
	if c.commits != nil {
		c.commits.Inc()
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.log.Debug("committed", "offsets", logged(pending))
	}
	return nil
}

// Register registers the insert block [first, next) of tp in the tracker
// and commits it: the partition's watermark, unchanged, with the block in
// its metadata (Tracker.RegisterBlock). ok is false when tp is not
// assigned under epoch; err is the commit's error, the commit bounded by
// timeout. A registration that went through is logged at DEBUG ("exactly_once:
// block registered") before the lock is released.
func (c *Committer) Register(tp TopicPartition, epoch uint64, first, next int64, timeout time.Duration) (ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.tracker.RegisterBlock(tp, epoch, first, next)
	if !ok {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err = c.client.Commit(ctx, []Commit{cm})
	cancel()
	if err == nil {
		c.tracker.Committed(cm)
		// Under the commit lock, as "committed" is: a revoke that
		// releases the partition next logs after it.
		c.log.Debug("exactly_once: block registered", "topic", tp.Topic, "partition", tp.Partition,
			"block", fmt.Sprintf("%d-%d", first, next))
	}
	return true, err
}

// loggedOffset is how a commit shows in the log: the partition, the
// offset and its metadata.
type loggedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

func logged(cs []Commit) []loggedOffset {
	out := make([]loggedOffset, len(cs))
	for i, c := range cs {
		out[i] = loggedOffset{c.Topic, c.Partition, c.Offset, c.Metadata}
	}
	return out
}
