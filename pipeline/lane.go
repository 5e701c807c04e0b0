package pipeline

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// A lane is one assigned partition under one assignment epoch. At most one
// worker owns a lane at a time, so the partition's records are decoded and
// handed to the sink in offset order.
//
// The lane's life is a state machine, every transition of which is a
// method below, made under lane.mu:
//
//	        schedule                start
//	Idle ─────────────▶ Queued ─────────────▶ Running
//	 ▲                    ▲                     │ finish
//	 │                    │ wake / schema ready │
//	 │                    └── Blocked, Waiting ◀┤ (refused by a full queue,
//	 └──────────────────────────────────────────┤  waiting for a schema)
//	                                            └▶ Failed (a bad record under on_error fail;
//	                                               Blocked first while the rows before it
//	                                               wait for queue space)
//
//	close (revoke, loss): Idle, Blocked, Waiting, Failed ──▶ Closed at once;
//	                      Queued, Running ──▶ Closed when the worker starts or finishes it.
//
// A lane holds budget bytes (see held): its fetched records not yet
// decoded, the records of an open exactly-once block, and the sealed chunks
// no shard queue took yet. Every byte a lane holds leaves the budget
// exactly once: decoded records as they are decoded (or when their block
// is sealed), chunks when the sink acknowledges them, and whatever a
// closed lane holds when it enters Closed, through dropLocked, which is
// reached only from the transitions into Closed (close, finish, or start
// for a lane closed while queued); a failed lane's undecoded records leave
// as it enters Failed. The transitions return those bytes and the caller
// releases them.
type lane struct {
	dest  int // the shard its chunks go to (sharding by partition)
	tp    TopicPartition
	epoch uint64
	lag   gaugeSetter // etl_source_fetch_lag_records of its topic (a *fetchLag, lag.go)
	// settle is the pipeline's broadcast, notified when the lane may have
	// become idle or its last chunk was acknowledged (drain and revoke
	// waits).
	settle *broadcast

	mu       sync.Mutex
	state    laneState
	recs     []*kgo.Record // fetched records; recs[head:] are not yet decoded
	head     int
	recBytes int64 // budget bytes of recs[head:]
	// readAhead is the undecoded bytes at which the partition of a lane
	// waiting for a queue is paused (0: none, the partition pauses when a
	// queue refuses the lane's chunk); over is whether it is: set when
	// recBytes reaches readAhead while the lane waits for a queue,
	// cleared when it falls under resumeAt (readAhead / 4), waiting or
	// not.
	readAhead int64
	over      bool
	// decoded is the bytes decoded since the partition was last resumed
	// (or assigned). A queue's refusal pauses the partition at once only
	// when it is at least readAhead: a pause costs up to one fetch read
	// again, which is cheap against a read-ahead of work, and the
	// partition's fetched records then stay few (a smaller working set).
	decoded   int64
	nextFetch int64 // the offset the next fetched record must have; -1 before the first
	// What the worker running the lane, or another goroutine meanwhile,
	// asked for; finish turns them into the next state.
	rerun     bool // scheduled while running: run again
	closed    bool // revoked or lost: drop everything
	failed    bool // a record could not be decoded: process no further
	waiting   bool // the next record waits for its schema to be fetched
	blocked   bool // blockedOn refused a chunk (see blockedOn)
	blockedOn int  // the dest whose queue refused, or blockedOnBlocks
	idleAt    time.Time

	// Owned by the worker running the lane.
	cur    *chunk.Chunk // chunk being built
	parked *chunk.Chunk // sealed chunk the shard queue refused: the resume point
	cursor int64        // the first offset not yet covered by a chunk span
	// unmeasured and unmeasuredBytes are the records (and their value
	// bytes) decoded into cur since it was last measured (the direct
	// path measures it once per measureEvery records or measureBytes
	// value bytes).
	unmeasured, unmeasuredBytes int
	// curCounted is what of the open outputs is in the budget already:
	// they are counted as they grow, at each measurement, and the rest
	// when they are sealed.
	curCounted int64
	// A record of many rows: spill is the output chunks sealed in its
	// middle (the direct path's decode.RowLimits.Seal, the staged path's
	// outputs between staging rows), held, and counted in the budget
	// (spillCounted), until the record ends: then they are sent with its
	// last rows under one ack group (on the direct path the group covers
	// the record's offsets, [spillFirst, spillNext)). If it fails, its
	// rows are taken back (takeBackSpill): spillFrom[i] is spill[i]'s
	// rows before the record. recStart and recOffset are the direct
	// path's open chunk's rows before the record being decoded, and the
	// record's offset.
	spill                 []*chunk.Chunk
	spillFrom             []int
	spillCounted          int64
	recStart              int
	recOffset             int64
	spillFirst, spillNext int64
	// rec is the record being decoded on the direct path when some column
	// takes its metadata (directOutputs.fillMeta), metaErr the filler's
	// refusal of it met while sealing a chunk in its middle.
	rec     *kgo.Record
	metaErr *decode.Error
	// stageCounted is what of the staged path's staging chunk (one
	// record's rows) is in the budget.
	stageCounted int64

	// Owned by the worker running the lane, on the staged path (staged.go).
	binding *stagedShared  // what stage and outs were built for
	stage   *chunk.Chunk   // the record being transformed
	outs    []*chunk.Chunk // open output chunk per destination
	group   *ackGroup      // the records since the outputs were last sealed
	backlog []*chunk.Chunk // sealed output chunks a shard queue refused, in order

	eo eoState // exactly-once (exactly.go)

	outstanding atomic.Int64 // chunks (and dead-letter writes) handed on and not yet acknowledged
	// logStart is the log start offset the partition's last fetch
	// reported (exactly-once: a registered block retention cut).
	logStart atomic.Int64
	end      logEnd // the partition's log end, for its lag (lag.go)
}

type laneState int

const (
	laneIdle    laneState = iota // no worker owns it and it is not queued
	laneQueued                   // waiting in the run queue
	laneRunning                  // a worker owns it
	laneBlocked                  // a queue refused its chunk (or exactly-once: too many open blocks); its partition is paused
	laneWaiting                  // its next record waits for a schema
	laneFailed                   // a record could not be decoded under on_error fail: nothing more is processed
	laneClosed                   // revoked or lost: everything it held was released
)

var laneStates = [...]string{"idle", "queued", "running", "blocked", "waiting", "failed", "closed"}

func (s laneState) String() string { return laneStates[s] }

// blockedOnBlocks is the blockedOn of a lane whose exactly-once block
// waits for the partition's registered blocks to fall under
// checkpoint.max_open_blocks.
const blockedOnBlocks = -1

// gaugeSetter is what a lane needs of its fetch lag gauge.
type gaugeSetter interface{ Set(float64) }

func newLane(tp TopicPartition, epoch uint64, lag gaugeSetter, settle *broadcast) *lane {
	return &lane{tp: tp, epoch: epoch, lag: lag, nextFetch: -1, cursor: -1, settle: settle}
}

// schedule asks for a run: an idle lane is queued (push it on the run
// queue when it returns true), a running one runs again. Blocked, waiting,
// failed and closed lanes wait for what they wait for.
func (l *lane) schedule() (push bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case laneIdle:
		l.state = laneQueued
		return true
	case laneRunning:
		l.rerun = true
	}
	return false
}

// start is a worker taking the lane from the run queue. A lane closed
// while queued is not run: it enters Closed and start returns the bytes it
// held.
func (l *lane) start() (run bool, release int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.state = laneClosed
		release = l.dropLocked()
		l.settle.notify()
		return false, release
	}
	l.state, l.rerun = laneRunning, false
	return true, 0
}

// finish is the worker leaving the lane. The lane goes where what happened
// during the run sends it; push reports it must go back on the run queue.
// A lane closed meanwhile enters Closed and finish returns the bytes it
// held.
func (l *lane) finish() (push bool, release int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rerun := l.rerun
	l.rerun = false
	switch {
	case l.closed:
		l.state = laneClosed
		release = l.dropLocked()
	case l.blocked:
		// Also a failed lane: the rows before its bad record wait in the
		// parked chunk, and go out when the queue has room.
		l.state = laneBlocked
	case l.failed && rerun && (l.parked != nil || len(l.backlog) > 0):
		// A failed lane whose queue had room again while it ran (the
		// wake found it running): the rows before its bad record go out
		// in another run.
		l.state = laneQueued
		return true, 0
	case l.failed:
		// Nothing at or past the bad record is decoded: its records leave
		// the budget.
		l.state = laneFailed
		release = l.recBytes
		clear(l.recs)
		l.recs, l.head, l.recBytes = nil, 0, 0
	case l.waiting:
		l.state = laneWaiting
	case rerun || l.head < len(l.recs):
		l.state = laneQueued
		return true, 0
	default:
		l.state = laneIdle
	}
	l.settle.notify()
	return false, release
}

// close is the revoke or loss of the lane's partition. A lane no worker
// owns enters Closed at once and close returns the bytes it held; a queued
// or running one enters Closed when its worker starts or finishes it.
func (l *lane) close() (release int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	l.closed = true
	switch l.state {
	case laneQueued, laneRunning:
		return 0
	}
	l.state = laneClosed
	release = l.dropLocked()
	l.settle.notify()
	return release
}

// block records, from the worker running the lane, that dest refused its
// chunk (or blockedOnBlocks): the run ends in Blocked unless wake comes
// first.
func (l *lane) block(dest int) {
	l.mu.Lock()
	l.blocked, l.blockedOn = true, dest
	if dest >= 0 {
		l.overLocked()
	}
	l.mu.Unlock()
}

// overLocked marks the lane over its read-ahead if it holds it and was
// not, and reports whether it did. Only a lane waiting for a queue goes
// over: one that is decoding keeps its partition fetched (the budget
// bounds it), since a pause makes the client fetch again what it had
// fetched. Called with mu held.
func (l *lane) overLocked() bool {
	if l.readAhead > 0 && !l.over && l.recBytes >= l.readAhead {
		l.over = true
		return true
	}
	return false
}

// unblock undoes block when a retried send went through.
func (l *lane) unblock() {
	l.mu.Lock()
	l.blocked = false
	l.mu.Unlock()
}

// wake is what the lane was blocked on having room: a blocked lane is
// queued (push it when it returns true); a running one runs again.
func (l *lane) wake() (push bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocked = false
	switch l.state {
	case laneBlocked:
		l.state = laneQueued
		return true
	case laneRunning:
		l.rerun = true
	}
	return false
}

// wait records, from the worker running the lane, that its next record
// waits for a schema: the run ends in Waiting unless ready comes first.
func (l *lane) wait() {
	l.mu.Lock()
	l.waiting = true
	l.mu.Unlock()
}

// ready is the awaited schema having arrived: a waiting lane is queued
// (push it when it returns true); a running one runs again.
func (l *lane) ready() (push bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting = false
	switch l.state {
	case laneWaiting:
		l.state = laneQueued
		return true
	case laneRunning:
		l.rerun = true
	}
	return false
}

// fail records, from the worker running the lane, that a record cannot be
// decoded: the run ends in Failed.
func (l *lane) fail() {
	l.mu.Lock()
	l.failed = true
	l.mu.Unlock()
}

// giveUp records, from the worker running the lane, that the lane can do
// nothing more before the stop (exactly-once: a rebuilt block whose rest
// will not be fetched): the run ends in Closed, dropping what it holds, as
// for a revoke; nothing of it is committed.
func (l *lane) giveUp() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// recordBytes is what a fetched record counts against the byte budget: its
// key, value and headers plus the client's per-record overhead.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value) + 160
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 32
	}
	return int64(n)
}

// pauseState reports whether the lane is over its read-ahead and the
// bytes it decoded since its partition was last resumed. Lock order: the
// pauser's lock, then the lane's.
func (l *lane) pauseState() (over bool, decoded int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over, l.decoded
}

// resumed is the lane's partition being resumed: decoded starts again.
func (l *lane) resumed() {
	l.mu.Lock()
	l.decoded = 0
	l.mu.Unlock()
}

// resumeAt is where a lane over its read-ahead falls back under it.
func (l *lane) resumeAt() int64 { return l.readAhead / 4 }

// push appends fetched records, skipping any the lane already has. It
// returns the budget bytes added, whether the lane should be scheduled,
// and whether it went over its read-ahead (the pauser must pause its
// partition). A closed lane takes nothing.
func (l *lane) push(recs []*kgo.Record) (bytes int64, first int64, schedule, over bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first = -1
	if l.closed {
		return 0, -1, false, false
	}
	for _, r := range recs {
		if r.Offset < l.nextFetch {
			continue // already fetched before a pause
		}
		if first < 0 {
			first = r.Offset
		}
		l.nextFetch = r.Offset + 1
		l.recs = append(l.recs, r)
		b := recordBytes(r)
		l.recBytes += b
		bytes += b
	}
	if l.blocked && l.blockedOn >= 0 && l.overLocked() {
		over = true
	}
	return bytes, first, bytes > 0, over
}

// pending returns up to n undecoded records, and false when the lane must
// stop (closed or failed). The slice stays valid while the caller owns the
// lane.
func (l *lane) pending(n int) ([]*kgo.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.failed {
		return nil, false
	}
	recs := l.recs[l.head:]
	if len(recs) > n {
		recs = recs[:n]
	}
	return recs, true
}

// advance marks n records as decoded; their bytes (the caller's to
// release) leave recBytes. It returns true when the lane fell back under
// its read-ahead (the pauser must resume its partition).
func (l *lane) advance(n int, bytes int64) (under bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.recs[l.head : l.head+n])
	l.head += n
	l.recBytes -= bytes
	l.decoded += bytes
	if l.over && l.recBytes < l.resumeAt() {
		l.over, under = false, true
	}
	switch {
	case l.head == len(l.recs):
		l.recs, l.head = l.recs[:0], 0
	case l.head >= 1024 && l.head*2 >= len(l.recs):
		k := copy(l.recs, l.recs[l.head:])
		clear(l.recs[k:])
		l.recs, l.head = l.recs[:k], 0
	}
	return under
}

// dropRecordBuffer lets go of the record buffer of a lane that holds no
// record: a drain leaves each lane a buffer the size of its largest fetch,
// kilobytes a partition that an idle member has no use for. A worker's
// slice from pending is empty then, and stays valid.
func (l *lane) dropRecordBuffer() {
	l.mu.Lock()
	if len(l.recs) == 0 {
		l.recs, l.head = nil, 0
	}
	l.mu.Unlock()
}

// undecoded is the budget bytes of the lane's records not yet decoded.
func (l *lane) undecoded() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recBytes
}

// held is the budget bytes the lane holds now: undecoded records, the
// records of an open exactly-once block, and sealed chunks no queue took
// yet. The caller owns the lane (or no worker does). The simulation checks
// that the budget equals what the lanes and the sink hold.
func (l *lane) held() int64 {
	l.mu.Lock()
	b := l.recBytes
	l.mu.Unlock()
	return b + l.heldChunks()
}

// heldChunks is held without the undecoded records.
func (l *lane) heldChunks() int64 {
	b := l.eo.held + l.curCounted + l.spillCounted + l.stageCounted
	if l.parked != nil {
		b += int64(l.parked.Size())
	}
	for _, c := range l.backlog {
		b += int64(c.Size())
	}
	return b
}

// dropLocked discards what the lane holds and returns its budget bytes.
// Called with mu held, only on the way into Closed, by whoever owns the
// lane then (the worker in start or finish, or close when none does).
func (l *lane) dropLocked() int64 {
	b := l.recBytes + l.heldChunks()
	// A group with chunks still to send is never acknowledged whole: its
	// count in outstanding goes with the chunks dropped here, so that a
	// revoke waits only for what was handed over.
	var groups []*ackGroup
	for _, c := range l.backlog {
		if g, ok := c.Owner.(*ackGroup); ok && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	l.outstanding.Add(-int64(len(groups)))
	clear(l.recs)
	l.recs, l.head, l.recBytes = nil, 0, 0
	// The open outputs are counted as they grow (curCounted, in
	// heldChunks), and so are the chunks of a record sealed in its middle
	// (spillCounted).
	l.cur, l.parked, l.backlog, l.group, l.spill, l.spillFrom = nil, nil, nil, nil, nil, nil
	l.curCounted, l.spillCounted, l.stageCounted = 0, 0, 0
	l.eo.held = 0
	l.eo.openSince.Store(0)
	clear(l.outs)
	return b
}

// idle reports whether the lane holds no work: nothing undecoded, no chunk
// being built or parked, no worker on it.
func (l *lane) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case laneClosed:
		return true
	case laneIdle, laneFailed:
	default:
		return false
	}
	if !(l.head == len(l.recs) || l.failed) || l.cur != nil || l.parked != nil || len(l.backlog) > 0 || l.group != nil || len(l.spill) > 0 {
		return false
	}
	for _, c := range l.outs {
		if c != nil {
			return false
		}
	}
	return true
}

// Acked is acked for a chunk the lane built (chunk.Owner).
func (l *lane) Acked() { l.acked() }

// Source names the lane's partition (chunk.Owner).
func (l *lane) Source() (string, int32) { return l.tp.Topic, l.tp.Partition }

// acked is one chunk (or dead-letter write) of the lane acknowledged.
func (l *lane) acked() {
	if l.outstanding.Add(-1) == 0 {
		l.settle.notify()
	}
}

// broadcast wakes every waiter each time something may have changed: wait
// returns a channel closed by the next notify. A waiter takes the channel,
// then checks its condition, then waits on it, so no notify is missed.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}
