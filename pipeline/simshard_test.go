package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/sink/clickhouse"
)

// The simulation's sink: the real clickhouse.Shard (its queue, batching
// loop, linger, retries, breakers and bisection) over fake replicas and a
// fake clock, inside the seed's synctest bubble.
//
// A fake replica's Insert registers a pending insert and blocks until the
// simulation answers it: durable (the table takes its rows), a transient
// error, or a refusal of the rows of the records it holds that the table
// refuses (poison records), which the shard bisects. A frozen shard's
// inserts are not answered. The clock is the simulation's: its timers fire
// one at a time as the simulation moves time on.
//
// Determinism: every action that may wake a shard goroutine (a hand-over,
// an answer, a timer) is followed by synctest.Wait, so the shard goroutines
// run to their next block before the simulation goes on; the pending
// inserts are ordered by their rows, not by the order their goroutines
// registered them; OnSpace only notes the shard, and the simulation runs
// the wake-up in a step of its own (lane code never runs on a shard
// goroutine); the retry jitter is a function of the seed, the wait and the
// time.

// simSink is the fake ClickHouse: the shards, their replicas, and one table
// per sink.
type simSink struct {
	w      *simWorld
	shards []*simShard
	clock  *simClock
	rows   []map[uint64]int // per sink's table: id → rows
	// done gets each shard's Run's result (the stop's sinkDone);
	// hardStopped: the stop cancelled the shards' Run.
	done        chan error
	hardStopped bool
	blocks      map[string]bool
	poison      map[uint64]bool // ids of the rows the table refuses

	// mu guards what the shard goroutines touch: the ledger, the pending
	// inserts, the wake-ups, the rejected rows and the violations they
	// found.
	mu       sync.Mutex
	seq      int64
	pending  []*simPending
	wakes    []int
	rejected map[uint64]bool // ids of rows handed to OnRejected
	errs     []string
}

// simShard is one shard: the real Shard and what the simulation knows of
// it.
type simShard struct {
	idx, sink int
	sh        *clickhouse.Shard
	cap       int
	maxRows   int
	maxBytes  int
	eo        bool
	inflight  prometheus.Gauge // the shard's etl_sink_inflight_batches
	reg       *simRegistry
	budget    *simBudget
	replicas  []*simReplica

	// ledger: the chunks TryEnqueue took and the shard did not
	// acknowledge yet, with their hand-over order.
	ledger map[*chunk.Chunk]int64
	// untaken: the chunks in the shard's queue, oldest first; takenAt:
	// when the batching loop took each chunk of the ledger from it.
	untaken []*chunk.Chunk
	takenAt map[*chunk.Chunk]time.Time
	linger  time.Duration
	// bisecting: the first chunk of each batch the table refused for
	// some of its rows, until the batch is acknowledged.
	bisecting map[*chunk.Chunk]bool

	frozen bool // its inserts are not answered (unless calm)
	hung   bool // its inserts are not answered, calm or not: a stop meets a ClickHouse that hangs
	dead   bool // failed for good: every insert is refused
	closed bool

	cancel   context.CancelFunc
	res      chan error
	returned bool
	runErr   error
}

// simReplica is a fake replica: an Inserter whose inserts wait for the
// simulation's answer.
type simReplica struct {
	s         *simSink
	shard     int
	idx       int
	downUntil int // the step until which it answers transient errors
}

// simPending is an insert waiting for its answer.
type simPending struct {
	shard, replica int
	chunks         []*chunk.Chunk
	rows, bytes    int
	encoded        int64 // the encoded copy the shard counts in the budget
	copies         int64 // bytes of chunks that are not the pipeline's (bisection's copies)
	original       bool  // every chunk is one the pipeline handed over
	landed         bool  // the insert is durable although its answer is an error (a lost reply)
	key            [4]int64
	reply          chan error
}

// simBudget counts what a shard holds in the budget (encoded copies and
// bisection copies) on top of the chunks.
type simBudget struct {
	b *backpressure.Budget
	n atomic.Int64
}

func (b *simBudget) Add(n int64) int64 { b.n.Add(n); return b.b.Add(n) }
func (b *simBudget) Release(n int64)   { b.n.Add(-n); b.b.Release(n) }

// simRegistry keeps the collectors a shard's metrics register, so the
// simulation reads the shard's in-flight batch count.
type simRegistry struct {
	*prometheus.Registry
	cs []prometheus.Collector
}

func (r *simRegistry) Register(c prometheus.Collector) error {
	r.cs = append(r.cs, c)
	return r.Registry.Register(c)
}

// simShardTotals is what the shards did over every seed, for the summary.
var simShardTotals = map[string]float64{}

// addTotals adds the shards' counters of interest to simShardTotals.
func (s *simSink) addTotals() {
	for _, ss := range s.shards {
		mfs, err := ss.reg.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				name := strings.TrimPrefix(mf.GetName(), "etl_sink_")
				if mf.GetName() == "etl_sink_flushes_total" {
					for _, l := range m.GetLabel() {
						if l.GetName() == "reason" {
							name += "{" + l.GetValue() + "}"
						}
					}
				}
				if c := m.GetCounter(); c != nil && c.GetValue() > 0 {
					simShardTotals[name] += c.GetValue()
				}
			}
		}
	}
}

// simShardSummary is the summary line of simShardTotals.
func simShardSummary() string {
	var names []string
	for n := range simShardTotals {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, int64(simShardTotals[n]))
	}
	return b.String()
}

func (r *simRegistry) gaugeVec(name string) *prometheus.GaugeVec {
	for _, c := range r.cs {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if g, ok := c.(*prometheus.GaugeVec); ok && containsName(d.String(), name) {
				return g
			}
		}
	}
	return nil
}

func containsName(desc, name string) bool { return strings.Contains(desc, `"`+name+`"`) }

var (
	// simTransient is an error the shard retries.
	simTransient = &ch.Exception{Code: 252, Name: "DB::Exception", Message: "sim: Too many parts"}
	// simRefused is the table's refusal of some rows' values.
	simRefused = &ch.Exception{Code: 53, Name: "DB::Exception", Message: "sim: a value of the rows cannot be converted"}
	// simGone is a permanent error of the whole table.
	simGone = &ch.Exception{Code: 60, Name: "DB::Exception", Message: "sim: table does not exist"}
)

// newSimSink builds the shards of the sinks the world's pipeline has: ndest
// per sink, with nreps replicas each.
func (w *simWorld) newSimSink(queueCap, maxInflight, nreps int, batch config.Batch) {
	p := w.p
	r := w.rng
	s := &simSink{w: w, blocks: map[string]bool{}, poison: map[uint64]bool{}, rejected: map[uint64]bool{}}
	s.clock = w.clock
	w.sink = s
	maxRows, maxBytes, linger := batch.MaxRows, int(batch.MaxBytes), batch.Linger.D()
	if w.eo {
		maxRows, maxBytes, linger = 0, 0, 0 // as the pipeline sets them (sinks.go)
	}
	initial := time.Duration(5+r.Intn(100)) * time.Millisecond
	maxBackoff := initial << r.Intn(5)
	br := clickhouse.BreakerOptions{FailureThreshold: 1 + r.Intn(4), OpenFor: time.Duration(100+r.Intn(2000)) * time.Millisecond, HalfOpenProbes: 1 + r.Intn(2)}
	firstAtOnce := r.Intn(4) == 0
	var onRejected func(ctx context.Context, rj clickhouse.Rejected) error
	if base := p.onRejected(); base != nil {
		onRejected = func(ctx context.Context, rj clickhouse.Rejected) error {
			s.noteRejected(rj)
			err := base(ctx, rj)
			if err == nil {
				// Handed to on_error: under dlq, its copy acknowledged.
				s.markRejected(rj)
			}
			return err
		}
	}
	seed := w.seed
	jitter := func(d time.Duration) time.Duration {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%d/%d", seed, d, s.clock.Now().UnixNano())
		return time.Duration(h.Sum64() % uint64(d+1))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for si, sk := range p.sinks {
		sk.dest0 = len(p.dests)
		for i := range sk.weights {
			d := len(p.dests)
			reg := &simRegistry{Registry: prometheus.NewRegistry()}
			metrics := clickhouse.NewMetrics(reg, nil)
			ss := &simShard{idx: d, sink: si, cap: queueCap, maxRows: maxRows, maxBytes: maxBytes, eo: w.eo,
				budget: &simBudget{b: p.budget}, ledger: map[*chunk.Chunk]int64{}, takenAt: map[*chunk.Chunk]time.Time{}, linger: linger, bisecting: map[*chunk.Chunk]bool{},
				res: make(chan error, 1), reg: reg}
			var reps []clickhouse.Inserter
			for k := range nreps {
				rp := &simReplica{s: s, shard: d, idx: k}
				ss.replicas = append(ss.replicas, rp)
				reps = append(reps, rp)
			}
			ss.sh = clickhouse.NewShard(clickhouse.ShardOptions{
				Name: strconv.Itoa(i), Replicas: reps, Target: sk.target.Load(),
				Breaker:       br,
				QueueCapacity: queueCap,
				MaxRows:       maxRows, MaxBytes: maxBytes, Linger: linger, FirstAtOnce: firstAtOnce && !w.eo,
				MaxInflight:    maxInflight,
				InitialBackoff: initial, MaxBackoff: maxBackoff,
				Jitter:     jitter,
				Clock:      s.clock,
				OnDone:     func(chunks []*chunk.Chunk) { s.onDone(d, chunks) },
				OnSpace:    func() { s.onSpace(d) },
				OnRejected: onRejected,
				Budget:     ss.budget,
				Log:        log,
				Metrics:    metrics,
			})
			if g := reg.gaugeVec("etl_sink_inflight_batches"); g != nil {
				ss.inflight = g.WithLabelValues(strconv.Itoa(i))
			}
			s.shards = append(s.shards, ss)
			p.dests = append(p.dests, ss.sh)
		}
		s.rows = append(s.rows, map[uint64]int{})
	}
	s.done = make(chan error, len(s.shards))
	w.desc += fmt.Sprintf(" replicas=%d backoff=%s..%s breaker=%d/%s first_at_once=%v linger=%s", nreps, initial, maxBackoff,
		br.FailureThreshold, br.OpenFor, firstAtOnce && !w.eo, linger)
}

// start runs every shard (in the bubble).
func (s *simSink) start() {
	for _, ss := range s.shards {
		ctx, cancel := context.WithCancel(context.Background())
		ss.cancel = cancel
		go func() {
			err := ss.sh.Run(ctx)
			ss.res <- err
			s.done <- err
		}()
	}
	s.settle()
}

// end stops every shard: Close, then cancel what is left (frozen or dead
// inserts), and waits for Run.
func (s *simSink) end() {
	for _, ss := range s.shards {
		ss.sh.Close()
		if ss.cancel != nil {
			ss.cancel()
		}
	}
	for _, ss := range s.shards {
		if ss.cancel != nil && !ss.returned {
			ss.runErr = <-ss.res
			ss.returned = true
		}
	}
}

// settle lets every shard goroutine run until it blocks, then takes what
// they found.
func (s *simSink) settle() {
	synctest.Wait()
	s.mu.Lock()
	errs := s.errs
	s.errs = nil
	for _, ss := range s.shards {
		for n := ss.sh.QueueLen(); len(ss.untaken) > n; ss.untaken = ss.untaken[1:] {
			ss.takenAt[ss.untaken[0]] = s.w.now
		}
	}
	s.mu.Unlock()
	for _, e := range errs {
		s.w.violation("%s", e)
	}
	for _, ss := range s.shards {
		if ss.returned {
			continue
		}
		select {
		case err := <-ss.res:
			ss.returned, ss.runErr = true, err
			s.w.tracef("shard %d: Run returned %v", ss.idx, err)
			// A shard whose on_error handler gave up a dead-letter write
			// once the stop halted the pipeline returns its error.
			gaveUp := ss.closed && errors.Is(err, errSimDLQ) && simHalted(s.w.p)
			if !ss.dead && !s.hardStopped && !gaveUp && (!ss.closed || err != nil) {
				s.w.violation("shard %d stopped: %v", ss.idx, err)
			}
		default:
		}
	}
}

func (s *simSink) errorf(format string, args ...any) {
	if len(s.errs) < 20 {
		s.errs = append(s.errs, fmt.Sprintf(format, args...))
	}
}

// TryEnqueue hands c to its shard, then lets the shard run.
func (s *simSink) TryEnqueue(c *chunk.Chunk) bool {
	ss := s.shards[c.Dest]
	s.mu.Lock()
	s.seq++
	ss.ledger[c] = s.seq
	s.mu.Unlock()
	ok := ss.sh.TryEnqueue(c)
	s.mu.Lock()
	if ok {
		ss.untaken = append(ss.untaken, c)
	} else {
		delete(ss.ledger, c)
	}
	s.mu.Unlock()
	if ok {
		s.w.ledger.enqueued(c)
	}
	s.settle()
	return ok
}

// onDone is a shard's OnDone: every row of an acknowledged chunk must be
// in the table (or handed to OnRejected), and the chunk the shard's.
func (s *simSink) onDone(d int, chunks []*chunk.Chunk) {
	s.mu.Lock()
	ss := s.shards[d]
	if ss.dead {
		s.errorf("shard %d acknowledged %d chunks after it failed for good", d, len(chunks))
	}
	delete(ss.bisecting, chunks[0])
	for _, c := range chunks {
		if _, ok := ss.ledger[c]; !ok {
			s.errorf("shard %d acknowledged a chunk it does not hold (twice, or never handed over)", d)
			continue
		}
		delete(ss.ledger, c)
		delete(ss.takenAt, c)
		for _, id := range simIDs(c) {
			if s.rows[ss.sink][id] == 0 && !s.rejected[id] {
				s.errorf("shard %d acknowledged a chunk whose row id %d is not in table %d", d, id, ss.sink)
				break
			}
		}
	}
	s.mu.Unlock()
	s.w.p.acks.push(chunks)
}

// onSpace is a shard's OnSpace: the wake-up runs in a step of the
// simulation's (runWakes).
func (s *simSink) onSpace(d int) {
	s.mu.Lock()
	s.wakes = append(s.wakes, d)
	s.mu.Unlock()
}

// runWakes wakes the lanes of the shards that reported space.
func (s *simSink) runWakes() {
	s.mu.Lock()
	wakes := s.wakes
	s.wakes = nil
	s.mu.Unlock()
	slices.Sort(wakes)
	for _, d := range slices.Compact(wakes) {
		s.w.tracef("shard %d: space", d)
		s.w.p.wakeBlocked(d)
	}
}

// noteRejected checks a record handed to OnRejected: its rows are poison
// rows, all of them.
func (s *simSink) noteRejected(rj clickhouse.Rejected) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := simIDs(rj.Chunk)[rj.From:rj.To]
	for _, id := range ids {
		if !s.poison[id] {
			s.errorf("row id %d handed to OnRejected, but the table takes it", id)
		}
	}
}

// markRejected notes the rows of a record on_error took.
func (s *simSink) markRejected(rj clickhouse.Rejected) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range simIDs(rj.Chunk)[rj.From:rj.To] {
		s.rejected[id] = true
	}
}

func simIDs(c *chunk.Chunk) []uint64 { return c.Cols[0].(*chunk.Fixed[uint64]).Data[:c.Rows] }

// Insert registers the insert and waits for the simulation's answer.
func (r *simReplica) Insert(ctx context.Context, t *clickhouse.Target, chunks []*chunk.Chunk) error {
	s := r.s
	pd := &simPending{shard: r.shard, replica: r.idx, chunks: chunks, reply: make(chan error, 1), original: true}
	s.mu.Lock()
	ss := s.shards[r.shard]
	for _, c := range chunks {
		if c.Schema != t.Schema {
			// One insert, one target: each chunk goes with the columns it
			// was built for.
			s.errorf("shard %d inserts a chunk of %d columns with a target of %d columns (%v)", r.shard, len(c.Schema.Names), len(t.Schema.Names), t.Schema.Names)
			break
		}
	}
	for _, c := range chunks {
		pd.rows += c.Rows
		pd.bytes += c.Size()
		if _, ok := ss.ledger[c]; !ok {
			pd.original = false
			pd.copies += int64(c.Size())
		}
	}
	pd.encoded = int64(r.EncodedCopy(pd.rows, pd.bytes))
	ids := simIDs(chunks[0])
	var first int64 = -1
	if len(ids) > 0 {
		first = int64(ids[0])
	}
	pd.key = [4]int64{int64(r.shard), first, int64(pd.rows), ss.ledger[chunks[0]]}
	if pd.original {
		ss.checkBatch(s, chunks)
	}
	s.pending = append(s.pending, pd)
	s.mu.Unlock()
	select {
	case err := <-pd.reply:
		return err
	case <-ctx.Done():
		s.mu.Lock()
		if i := slices.Index(s.pending, pd); i >= 0 {
			s.pending = slices.Delete(s.pending, i, i+1)
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// checkBatch checks a batch of the pipeline's chunks as the shard built it:
// a run of its queue in hand-over order, closed by size at its last chunk
// at the earliest, and under exactly-once one block.
func (ss *simShard) checkBatch(s *simSink, chunks []*chunk.Chunk) {
	if ss.eo && len(chunks) != 1 {
		var what []string
		for _, c := range chunks {
			what = append(what, fmt.Sprintf("%d rows %v", c.Rows, c.Spans))
		}
		s.errorf("shard %d: exactly-once insert of %d chunks: blocks merged: %s", ss.idx, len(chunks), strings.Join(what, "; "))
	}
	rows, bytes := 0, 0
	for i, c := range chunks {
		if i > 0 && ss.ledger[c] <= ss.ledger[chunks[i-1]] {
			s.errorf("shard %d: a batch out of hand-over order", ss.idx)
		}
		if i > 0 && ((ss.maxRows > 0 && rows >= ss.maxRows) || (ss.maxBytes > 0 && bytes >= ss.maxBytes)) {
			s.errorf("shard %d: a batch went on taking chunks after %d rows, %d bytes (max_rows %d, max_bytes %d)", ss.idx, rows, bytes, ss.maxRows, ss.maxBytes)
			break
		}
		rows += c.Rows
		bytes += c.Size()
	}
}

func (r *simReplica) EncodedCopy(rows, bytes int) int { return bytes/2 + 8*rows }
func (r *simReplica) Addr() string                    { return fmt.Sprintf("sim-%d-%d", r.shard, r.idx) }

// pendingSorted is the inserts waiting for an answer, in the order of
// their rows.
func (s *simSink) pendingSorted() []*simPending {
	s.mu.Lock()
	out := slices.Clone(s.pending)
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *simPending) int {
		for i := range a.key {
			if a.key[i] != b.key[i] {
				return compareInt64(a.key[i], b.key[i])
			}
		}
		return 0
	})
	return out
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// answer ends a pending insert with err (nil: the table takes its rows),
// then lets the shard run.
func (s *simSink) answer(pd *simPending, err error) {
	s.mu.Lock()
	i := slices.Index(s.pending, pd)
	if i < 0 {
		s.mu.Unlock()
		return
	}
	s.pending = slices.Delete(s.pending, i, i+1)
	ss := s.shards[pd.shard]
	if err == nil || pd.landed {
		s.insert(pd.chunks, ss.sink)
	} else if err == simRefused && pd.original {
		ss.bisecting[pd.chunks[0]] = true
	}
	s.mu.Unlock()
	pd.reply <- err
	s.settle()
}

// refuses reports whether the table refuses chunks: some row is poison.
func (s *simSink) refuses(chunks []*chunk.Chunk) bool {
	for _, c := range chunks {
		for _, id := range simIDs(c) {
			if s.poison[id] {
				return true
			}
		}
	}
	return false
}

// sinkStep moves the fake sink: wake-ups, then one pending insert is
// answered (durable, refused, or failed and retried by the shard).
func (w *simWorld) sinkStep(calm bool) {
	s := w.sink
	s.runWakes()
	var can []*simPending
	for _, pd := range s.pendingSorted() {
		ss := s.shards[pd.shard]
		if (ss.frozen && !calm || ss.hung) && !ss.dead {
			continue
		}
		can = append(can, pd)
	}
	if len(can) == 0 {
		return
	}
	pd := can[w.rng.Intn(len(can))]
	ss, rp := s.shards[pd.shard], s.shards[pd.shard].replicas[pd.replica]
	var err error
	switch {
	case ss.dead:
		err = simGone
	case !calm && w.rng.Intn(300) == 0:
		// The replica goes down for a while: its breaker opens.
		rp.downUntil = w.step + w.rng.Intn(1500)
		err = simTransient
	case !calm && (w.step < rp.downUntil || w.rng.Intn(6) == 0):
		err = simTransient
	case s.refuses(pd.chunks):
		err = simRefused
	case !calm && w.rng.Intn(40) == 0:
		// The insert landed, but its answer was lost (a connection
		// reset after the server took the block): the shard retries
		// a block the table already has.
		pd.landed, err = true, simTransient
		w.noteLanded(ss.sink, pd.chunks)
	}
	w.tracef("shard %d replica %d: insert of %d chunks (%d rows) answered %v (landed %v)", pd.shard, pd.replica, len(pd.chunks), pd.rows, err, pd.landed)
	s.answer(pd, err)
	s.runWakes()
}

// insert applies a durable insert to table. Under exactly-once a block
// identical to one the table has is dropped, as a ReplicatedMergeTree does.
func (s *simSink) insert(b []*chunk.Chunk, table int) {
	for _, c := range b {
		ids := simIDs(c)
		if s.w.eo {
			h := fnv.New64a()
			for _, id := range ids {
				fmt.Fprintf(h, "%d,", id)
			}
			key := fmt.Sprintf("%d/%x", table, h.Sum64())
			if s.blocks[key] {
				continue // the table drops a block it has
			}
			s.blocks[key] = true
		}
		for _, id := range ids {
			s.rows[table][id]++
		}
	}
}

func (s *simSink) freezeToggle() {
	ss := s.shards[s.w.rng.Intn(len(s.shards))]
	ss.frozen = !ss.frozen
}

// held is the budget bytes the sink holds: the chunks handed over and not
// acknowledged, and what the shards count while their inserts run.
func (s *simSink) held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, ss := range s.shards {
		for c := range ss.ledger {
			n += int64(c.Size())
		}
		n += ss.budget.n.Load()
	}
	return n
}

// chunks is the number of chunks the sink holds.
func (s *simSink) chunks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.shards {
		n += len(ss.ledger)
	}
	return n
}

// checkShards checks what each shard counts against the inserts it has
// waiting: its encoded copies (and bisection's copies) are in the budget
// while an insert runs, and not after; no more batches are in flight than
// max_per_shard allows.
func (w *simWorld) checkShards() {
	s := w.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.shards {
		if ss.returned {
			continue
		}
		var want int64
		n := 0
		for _, pd := range s.pending {
			if pd.shard == ss.idx {
				want += pd.encoded + pd.copies
				n++
			}
		}
		got := ss.budget.n.Load()
		if len(ss.bisecting) == 0 && got != want {
			w.violation("shard %d counts %d bytes in the budget, its %d waiting inserts hold %d", ss.idx, got, n, want)
		}
		if len(ss.bisecting) > 0 && got < want {
			w.violation("shard %d counts %d bytes in the budget while bisecting, its %d waiting inserts hold %d", ss.idx, got, n, want)
		}
		if ss.inflight == nil {
			continue
		}
		f := int(testutil.ToFloat64(ss.inflight))
		if f < n {
			w.violation("shard %d has %d inserts waiting but counts %d batches in flight", ss.idx, n, f)
		}
		// With no batch in flight, the chunks the loop took are its
		// batch: it goes at its linger.
		if f == 0 && ss.linger > 0 && !ss.dead {
			var oldest *chunk.Chunk
			for c := range ss.takenAt {
				if oldest == nil || ss.ledger[c] < ss.ledger[oldest] {
					oldest = c
				}
			}
			if oldest != nil && w.now.Sub(ss.takenAt[oldest]) >= ss.linger {
				w.violation("shard %d holds a batch begun %s ago with every insert slot free: its linger is %s", ss.idx, w.now.Sub(ss.takenAt[oldest]), ss.linger)
			}
		}
	}
}

// drainedShards reports whether every live shard holds nothing.
func (s *simSink) drainedShards() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.shards {
		if !ss.dead && (len(ss.ledger) > 0 || ss.budget.n.Load() != 0) {
			return false
		}
	}
	return true
}

// hasRec reports whether every row of sr is in every table: the record is
// durable; or, for a record the table refuses, that its rows were handed to
// OnRejected. A bad record (under on_error fail, where it stops the
// pipeline) is never durable.
func (s *simSink) hasRec(sr simRec) bool {
	if sr.bad {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := sr.id; id < sr.id+uint64(sr.rows); id++ {
		if sr.poison {
			if !s.rejected[id] {
				return false
			}
			continue
		}
		if !s.has(id) {
			return false
		}
	}
	return true
}

// has reports whether the row of id is in every table.
func (s *simSink) has(id uint64) bool {
	for _, rows := range s.rows {
		if rows[id] == 0 {
			return false
		}
	}
	return true
}

// advance moves the simulation's time d on, firing the shards' timers
// that fall due on the way one at a time, each followed by the shards'
// run.
func (w *simWorld) advance(d time.Duration) {
	to := w.now.Add(d)
	if w.sink != nil {
		for {
			at, ok := w.sink.clock.fireNext(to)
			if !ok {
				break
			}
			w.now = at
			w.sink.settle()
		}
		w.sink.clock.set(to)
	}
	w.now = to
}

// simClock is the shards' clock: the simulation's time, and timers that
// fire when the simulation moves time past them.
type simClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int64
	timers []*simTimer
	// afterFunc: a function of AfterFunc runs (on the simulation's
	// goroutine).
	afterFunc bool
}

type simTimer struct {
	c      *simClock
	ch     chan time.Time
	when   time.Time
	seq    int64
	active bool
	period time.Duration // a ticker's: it fires again period later
	fn     func()        // called (instead of a send) when it fires
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *simClock) NewTimer(d time.Duration) clickhouse.Timer { return c.newTimer(d, 0, nil) }

func (c *simClock) newTimer(d, period time.Duration, fn func()) *simTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &simTimer{c: c, ch: make(chan time.Time, 1), when: c.now.Add(d), seq: c.seq, active: true, period: period, fn: fn}
	c.timers = append(c.timers, t)
	return t
}

// fireNext fires the first active timer due at or before to, and returns
// its time. A ticker whose last tick was not taken yet drops the ticks up
// to to, as time.Ticker does, without waking anyone.
func (c *simClock) fireNext(to time.Time) (time.Time, bool) {
	for {
		at, fn, woke, ok := c.fire(to)
		if !ok {
			return time.Time{}, false
		}
		if fn != nil {
			fn()
		}
		if woke || fn != nil {
			return at, true
		}
	}
}

// fire fires the first active timer due at or before to: it sends on its
// channel (woke: there was room) or returns its fn.
func (c *simClock) fire(to time.Time) (at time.Time, fn func(), woke, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next *simTimer
	old := c.timers
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.active {
			continue
		}
		live = append(live, t)
		if !t.when.After(to) && (next == nil || t.when.Before(next.when) || (t.when.Equal(next.when) && t.seq < next.seq)) {
			next = t
		}
	}
	clear(old[len(live):])
	c.timers = live
	if next == nil {
		return time.Time{}, nil, false, false
	}
	next.active = false
	if next.when.After(c.now) {
		c.now = next.when
	}
	if next.period > 0 {
		c.seq++
		next.when, next.seq, next.active = next.when.Add(next.period), c.seq, true
	}
	if next.fn != nil {
		return c.now, next.fn, false, true
	}
	select {
	case next.ch <- c.now:
		woke = true
	default:
		if next.period > 0 && !next.when.After(to) {
			// Dropped ticks: the next one after to.
			n := to.Sub(next.when)/next.period + 1
			next.when = next.when.Add(n * next.period)
		}
	}
	return c.now, nil, woke, true
}

func (t *simTimer) C() <-chan time.Time { return t.ch }

func (t *simTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.active
	t.active = false
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *simTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.active
	select {
	case <-t.ch:
	default:
	}
	c.seq++
	t.when, t.seq = c.now.Add(d), c.seq
	t.active = true
	if !slices.Contains(c.timers, t) {
		c.timers = append(c.timers, t)
	}
	return was
}

// simHalted reports whether the stop halted the pipeline's retries.
func simHalted(p *Pipeline) bool {
	select {
	case <-p.haltChan():
		return true
	default:
		return false
	}
}

// noteLanded counts, for the at-least-once bound, the rows of an insert
// that landed in table and was answered an error (the shard retries it).
func (w *simWorld) noteLanded(table int, chunks []*chunk.Chunk) {
	for len(w.landed) <= table {
		w.landed = append(w.landed, map[uint64]int{})
	}
	for _, c := range chunks {
		for _, id := range simIDs(c) {
			w.landed[table][id]++
		}
	}
}

// landedOn is the inserts of row id that landed in table and were retried.
func (w *simWorld) landedOn(table int, id uint64) int {
	if table >= len(w.landed) {
		return 0
	}
	return w.landed[table][id]
}

// alterTable changes the columns of a random sink's table, as the
// describer's read installs them (refreshTarget): the same columns again
// (a change the insert does not see, such as a comment) or one more, a
// String column no record has (filled with its default). Chunks built for
// the old columns are still inserted with them.
func (w *simWorld) alterTable() {
	p := w.p
	si := w.rng.Intn(len(p.sinks))
	sk := p.sinks[si]
	cur := sk.target.Load()
	ns := &chunk.Schema{Names: slices.Clone(cur.Schema.Names), Types: slices.Clone(cur.Schema.Types)}
	if len(ns.Names) < len(gen.Columns)+3 && w.rng.Intn(2) == 0 {
		t, err := chunk.ParseType("String")
		if err != nil {
			w.t.Fatal(err)
		}
		ns.Names = append(ns.Names, fmt.Sprintf("extra%d", len(ns.Names)))
		ns.Types = append(ns.Types, t)
	}
	live := &clickhouse.Target{Schema: ns, Fields: ns.Names}
	for _, ss := range w.sink.shards {
		if ss.sink == si {
			ss.sh.AddTarget(live)
		}
	}
	sk.target.Store(live)
	simTotals.alters++
	w.tracef("sink %d: the table's columns are now %v", si, ns.Names)
}
