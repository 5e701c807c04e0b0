package pipeline

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/loglimit"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// The deterministic simulation of the pipeline's concurrent core: lanes,
// workers, the byte budget, the pauser, the shard queues, the tracker and
// the committer, with a fake source (a consumer group that fetches,
// assigns, revokes and loses partitions) and a fake sink (shard queues,
// inserts with random latency, transient failures, freezes, and a table
// that counts rows and, under exactly-once, drops a block it already has).
//
// Everything runs on one goroutine and every choice comes from one seed,
// so a seed replays its run exactly. Where the real code hands control to
// another goroutine it calls Pipeline.hook; there the simulation may run
// what another goroutine could (a revoke, acknowledgements, the budget
// controller, a commit, the sink), so interleavings are explored on
// purpose rather than left to luck. Invariants are checked after every
// step and at quiesce; a violation prints the seed and the step.
//
//	make sim SEEDS=3000
//	go test ./pipeline -run '^TestSim$' -sim.seed=N -v   (replay one seed)

var (
	simSeeds   = flag.Int("sim.seeds", 0, "seeds for TestSim (0: 40, or 10 with -short)")
	simSeed    = flag.Int64("sim.seed", 0, "run only this seed of TestSim")
	simFirst   = flag.Int64("sim.first", 1, "the first seed of TestSim")
	simSteps   = flag.Int("sim.steps", 1500, "random steps per seed before the quiesce")
	simSummary = flag.Bool("sim.summary", false, "print the simulation's summary line after the tests")
	simTrace   = flag.Bool("sim.trace", false, "log every step of TestSim")
	simReplay  = flag.Int("sim.replay", 10, "run every Nth seed of TestSim twice and check both runs agree (0: none)")
)

// simTotals is what TestSim ran, for the summary line.
var simTotals struct {
	seeds, steps, violations int
	replayed                 int    // seeds run twice to check they replay
	hash                     uint64 // of every seed's trace hash, in seed order
	maxMeta                  int    // the longest commit metadata seen
	holds                    int    // lanes held for the budget (etl_backpressure_decode_holds_total)
	fcRetries, fcStops       int    // offset fetches failed in an assignment; stops because every one did
	crashes, alters          int
	schemaWaits              int // records that waited for their schema
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if *simSummary {
		fmt.Printf("sim: longest commit metadata %d bytes, %d lanes held for the budget, %d offset fetches failed, %d stops for it, %d crashes, %d table changes, %d waits for a schema\n",
			simTotals.maxMeta, simTotals.holds, simTotals.fcRetries, simTotals.fcStops, simTotals.crashes, simTotals.alters, simTotals.schemaWaits)
		fmt.Printf("sim: shards:%s\n", simShardSummary())
		fmt.Printf("sim: %d seeds, %d steps, %d violations, %d replayed, trace %016x\n",
			simTotals.seeds, simTotals.steps, simTotals.violations, simTotals.replayed, simTotals.hash)
		if simTotals.violations > 0 && code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// TestSim runs the simulation over many seeds. Each seed draws its own
// configuration (delivery, budget, queue capacity, chunk size) and its own
// schedule of events.
func TestSim(t *testing.T) {
	first, n := *simFirst, *simSeeds
	if n == 0 {
		n = 40
		if testing.Short() {
			n = 10
		}
	}
	if *simSeed != 0 {
		first, n = *simSeed, 1
	}
	sum := fnv.New64a()
	for seed := first; seed < first+int64(n); seed++ {
		// Each seed in a bubble of its own: the shards' goroutines run
		// there, and synctest.Wait is how the simulation knows they have
		// nothing more to do.
		// (A failure is reported outside the bubble: synctest.Test
		// ends the test on one, and the other seeds must still run.)
		var report string
		var steps int
		var h uint64
		synctest.Test(t, func(t *testing.T) {
			w := newSimWorld(t, seed)
			var errs []string
			steps, errs = w.run()
			h = w.trace.Sum64()
			simTotals.seeds++
			simTotals.steps += steps
			simTotals.holds += int(testutil.ToFloat64(w.p.m.budgetHolds))
			w.sink.addTotals()
			if len(errs) > 0 {
				simTotals.violations += len(errs)
				report = fmt.Sprintf("sim seed %d (%s): %d violations, first at step %d: %s\n\treplay: go test ./pipeline -run '^TestSim$' -sim.seed=%d -v",
					seed, w.desc, len(errs), w.firstBad, errs[0], seed)
			}
		})
		fmt.Fprintf(sum, "%d:%d:%x;", seed, steps, h)
		if *simReplay > 0 && seed%int64(*simReplay) == 0 {
			// The same seed again must take the same steps.
			var steps2 int
			var h2 uint64
			synctest.Test(t, func(t *testing.T) {
				w2 := newSimWorld(t, seed)
				steps2, _ = w2.run()
				h2 = w2.trace.Sum64()
			})
			simTotals.replayed++
			if steps2 != steps || h2 != h {
				simTotals.violations++
				t.Errorf("sim seed %d does not replay: %d steps, trace %016x, then %d steps, trace %016x",
					seed, steps, h, steps2, h2)
			}
		}
		if report != "" {
			t.Error(report)
		}
	}
	simTotals.hash = sum.Sum64()
}

// simWorld is one seed's run.
type simWorld struct {
	minPause time.Duration // the budget's minimum pause
	gaps     bool          // the log has offsets that hold no record (compaction, transaction markers)
	t        testing.TB
	seed     int64
	rng      *rand.Rand
	desc     string

	p    *Pipeline
	h    *handler
	src  *simSource
	sink *simSink

	now        time.Time
	step       int
	depth      int // nested hook actions
	parts      []TopicPartition
	log        map[TopicPartition][]simRec
	nextID     uint64
	toMake     int // records still to produce
	lanes      []*lane
	eo         bool
	calm       bool   // quiescing or stopping: no more faults
	stopping   bool   // the source stopped: no fetches, no rebalances
	draining   bool   // ... and the stop's drainLanes began
	inPoll     bool   // inside Fetched: no group callback can run (BlockRebalanceOnPoll)
	inGroup    bool   // inside a group callback (Assigned, the end of a revoke, Lost): the client runs them one at a time
	committing bool   // inside a commit's hook: the commit lock is held
	failMode   bool   // decode.on_error fail: a bad record stops the pipeline
	failed     bool   // ... and it did
	fatal      error  // the error it stopped on
	ndjson     bool   // records of many rows (decode.json.framing ndjson), sealed in their middle
	poison     bool   // some records' rows are refused by the table (bisected out)
	mode       string // direct, two-sinks or by-key

	errs     []string
	firstBad int
	trace    hash.Hash64 // every tracef line, traced or not: a seed's replay must match
	ledger   *simLedger  // the bytes in flight as the simulation counts them
	params   simParams

	// The pipeline's loops on goroutines of their own (simloops_test.go).
	clock       *simClock // the simulation's time, for the shards and the loops
	ctl, cmt    *simLoop  // the controller, the committer
	revLoop     *simLoop  // the revoke in progress (the poll loop in Revoked)
	stp         *simLoop  // Run's stop
	inner       chan *simReq
	serving     atomic.Bool // a loop's goroutine runs: its hooks are handed over
	revokeAt    time.Time
	asgLoop     *simLoop // an assignment under exactly-once (Assigned, on the poll loop), reading the committed blocks
	asgAt       time.Time
	asgParts    []TopicPartition
	asgRead     bool             // ... and a read of the committed blocks succeeded
	fcFaults    bool             // reads of the committed offsets fail at times
	fcDownUntil time.Time        // ... and every read fails until then
	dlq         *simDLQ          // decode.on_error dlq: the dead-letter producer
	crashAt     int              // the step at which the process crashes (0: never)
	killShardAt int              // the step at which a shard's table goes for good (0: never)
	alters      bool             // the tables' columns change now and then (ALTER TABLE)
	registry    *simSchemas      // some records wait for their schema (nil: none do)
	deadShard   int              // ... that shard (-1: none)
	crashing    bool             // the crashed process's goroutines are being ended
	takes       map[uint64]int   // per row id: the lanes that took its record
	landed      []map[uint64]int // per table and row id: inserts that landed and were answered an error
	revokeParts []TopicPartition
	revokeLanes []*lane                       // the revoked partitions' lanes as the revoke began
	registered  map[TopicPartition][][2]int64 // exactly-once blocks in the metadata at each partition's last assignment
	stopAt      time.Time
	stopBy      time.Time     // when the stop must have ended
	working     bool          // the simulation's worker runs a lane
	workerIdle  chan struct{} // closed when it is done (the stop waits for the workers)
}

// simRec is a produced record and what the table must end up with: the
// rows of ids [id, id+rows), or with bad none of them.
type simRec struct {
	rec  *kgo.Record
	id   uint64
	rows int
	bad  bool // not decodable: skipped by on_error skip
	// poison: decodable, but the table refuses its rows: the shard
	// bisects it out and hands it to on_error.
	poison bool
}

const simTopic = "events"

func newSimWorld(t testing.TB, seed int64) *simWorld {
	w := &simWorld{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), now: time.Unix(1_700_000_000, 0),
		log: map[TopicPartition][]simRec{}, registered: map[TopicPartition][][2]int64{}, takes: map[uint64]int{}, trace: fnv.New64a(), ledger: newSimLedger(), inner: make(chan *simReq)}
	w.clock = &simClock{now: w.now}
	r := w.rng
	w.eo = r.Intn(3) == 0
	w.failMode = r.Intn(6) == 0
	nparts := 2 + r.Intn(4)
	for i := 0; i < nparts; i++ {
		w.parts = append(w.parts, TopicPartition{Topic: simTopic, Partition: int32(i)})
	}
	w.toMake = 300 + r.Intn(1500)
	// The direct path (one sink, sharding by partition), or the staged
	// path: two sinks that both take every row, or sharding by key.
	mode := []string{"direct", "two-sinks", "by-key"}[r.Intn(3)]
	w.mode = mode
	nsinks := 1
	if mode == "two-sinks" {
		nsinks = 2
	}
	ndest := 1 + r.Intn(2)
	if mode == "by-key" {
		ndest = 2
	}
	queueCap := 1 + r.Intn(6)
	if r.Intn(4) == 0 {
		queueCap = 50 + r.Intn(150) // many small blocks in flight
	}
	chunkTarget := 512 << r.Intn(4) // 512 B to 4 KiB: a few to a few dozen rows
	budgetBytes := int64(16<<10) << r.Intn(5)
	minPause := time.Duration(r.Intn(200)) * time.Millisecond
	maxInflight := 1 + r.Intn(3)

	schema, err := gen.Schema()
	if err != nil {
		t.Fatal(err)
	}
	w.minPause = minPause
	cfg := &config.Config{Delivery: "at_least_once"}
	if w.eo {
		cfg.Delivery = "exactly_once"
	}
	cfg.Checkpoint.DrainTimeout = config.Duration(2 * time.Second)
	cfg.Checkpoint.MaxOpenBlocks = 100
	if r.Intn(2) == 0 {
		cfg.Checkpoint.MaxOpenBlocks = 1 + r.Intn(8) // the bound, reached often
	}
	maxRows := 20 + r.Intn(200)
	if r.Intn(3) == 0 {
		maxRows = 1 + r.Intn(4) // exactly-once: tiny blocks
	}
	batch := config.Batch{MaxRows: maxRows, MaxBytes: config.ByteSize(chunkTarget * 4),
		Linger: config.Duration(time.Duration(50+r.Intn(500)) * time.Millisecond)}
	// The partitions' read-ahead: none (a refused chunk pauses its
	// partition at once) or a few fetches of these small records.
	if r.Intn(3) != 0 {
		cfg.Backpressure.PartitionReadAhead = config.ByteSize(256 << r.Intn(6))
	}
	// Some seeds frame records as ndjson, some of them of more rows than
	// a chunk holds: their chunks seal in the middle of the record.
	if w.ndjson = r.Intn(3) == 0; w.ndjson {
		cfg.Decode.JSON.Framing = "ndjson"
		cfg.Decode.MaxBytesPerRecord = 1 << 20
	}
	// Faults drawn from a stream of their own, so that adding one leaves
	// the seed's other draws as they were. A third of the seeds leave
	// offsets without a record between records, as compaction and
	// transaction markers do; under exactly-once, half the seeds fail
	// reads of the committed offsets at times.
	x := rand.New(rand.NewSource(^seed))
	w.gaps = x.Intn(3) == 0
	w.fcFaults = x.Intn(2) == 0 && w.eo
	// A quarter of the seeds crash once (a new process starts over the
	// same Kafka and tables).
	if x.Intn(4) == 0 {
		w.crashAt = 200 + x.Intn(1200)
	}
	// A third of the at-least-once seeds change their tables' columns now
	// and then (exactly-once documents an ALTER during a crash window as
	// breaking the identity of its blocks).
	w.alters = x.Intn(3) == 0 && !w.eo
	// A quarter of the seeds have records that wait for their schema.
	if x.Intn(4) == 0 {
		w.registry = newSimSchemas()
	}
	// One seed in eight loses a table for good mid-run.
	w.deadShard = -1
	if x.Intn(8) == 0 {
		w.killShardAt = 100 + x.Intn(1300)
	}
	// A third of the seeds that do not stop on a bad record send bad
	// records, and rows the table refuses, to a dead-letter topic.
	dlqMode := x.Intn(3) == 0 && !w.failMode
	onErr := map[bool]string{false: "skip", true: "fail"}[w.failMode]
	if dlqMode {
		onErr = "dlq"
	}
	w.desc = fmt.Sprintf("registry=%v alters=%v table_gone_at=%d crash_at=%d offset_fetch_faults=%v gaps=%v ndjson=%v %s on_error=%s eo=%v parts=%d records=%d shards=%d queue=%d chunk=%d budget=%d min_pause=%s inflight=%d max_rows=%d max_open_blocks=%d read_ahead=%d",
		w.registry != nil, w.alters, w.killShardAt, w.crashAt, w.fcFaults, w.gaps, w.ndjson, mode, onErr, w.eo, nparts, w.toMake, ndest, queueCap, chunkTarget, budgetBytes, minPause, maxInflight, maxRows, cfg.Checkpoint.MaxOpenBlocks, cfg.Backpressure.PartitionReadAhead)
	w.params = simParams{cfg: cfg, schema: schema, mode: mode, nsinks: nsinks, ndest: ndest, queueCap: queueCap,
		chunkTarget: chunkTarget, budgetBytes: budgetBytes, minPause: minPause, maxInflight: maxInflight, batch: batch, dlq: dlqMode}
	p := w.newPipeline()
	cfg.Sink.ClickHouse = p.sinks[0].cfg
	w.src = &simSource{w: w, paused: map[TopicPartition]bool{}, owned: map[TopicPartition]bool{},
		pos: map[TopicPartition]int64{}, start: map[TopicPartition]int64{}, committed: map[TopicPartition]kafka.Committed{}}
	p.src = w.src
	p.pause = newPauser(w.src, prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_sim_paused"}))
	w.p = p
	w.newSimSink(queueCap, maxInflight, 1+r.Intn(3), batch)
	// Some seeds have records whose rows the table refuses, where
	// on_error lets the shard bisect them out.
	w.poison = p.onRejected() != nil && r.Intn(2) == 0
	// The committer's interval: its periodic commits.
	cfg.Checkpoint.CommitInterval = config.Duration(time.Duration(20+r.Intn(300)) * time.Millisecond)
	w.desc += fmt.Sprintf(" commit_interval=%s", cfg.Checkpoint.CommitInterval.D())
	p.queue = w.sink
	p.hook = w.hook
	w.p, w.h = p, (*handler)(p)
	return w
}

// simParams is what a seed drew for its pipeline: a restart after a crash
// builds the same.
type simParams struct {
	cfg                                               *config.Config
	schema                                            *chunk.Schema
	mode                                              string
	nsinks, ndest, queueCap, chunkTarget, maxInflight int
	budgetBytes                                       int64
	minPause                                          time.Duration
	batch                                             config.Batch
	dlq                                               bool
}

// newPipeline builds the seed's pipeline (without its source, pauser and
// sink).
func (w *simWorld) newPipeline() *Pipeline {
	sp := w.params
	cfg, schema, mode, nsinks, ndest, chunkTarget, batch := sp.cfg, sp.schema, sp.mode, sp.nsinks, sp.ndest, sp.chunkTarget, sp.batch
	budget, err := backpressure.New(backpressure.Options{Bytes: sp.budgetBytes, HighRatio: 0.8, LowRatio: 0.5, MinPause: sp.minPause})
	if err != nil {
		w.t.Fatal(err)
	}
	p := &Pipeline{
		cfg:         cfg,
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		tracker:     checkpoint.NewTracker(),
		runq:        newRunQueue(),
		acks:        newAckQueue(),
		lanes:       map[TopicPartition]*lane{},
		failc:       make(chan error, 1),
		chunkTarget: chunkTarget,
		workers:     1,
		onError:     config.OnErrorSkip,
		rejectLog:   loglimit.New(10, time.Second),
		m:           newMetrics(nil),
		budget:      budget,
		stopWaiters: make(chan struct{}),
	}
	p.exactlyOnce = w.eo
	p.clk = simPClock{w.clock}
	p.commits = newCommitter(p)
	if w.failMode {
		p.onError = config.OnErrorFail
	}
	if sp.dlq {
		w.dlq = newSimDLQ(w, w.dlq)
		p.onError = config.OnErrorDLQ
		p.dlq = w.dlq
		p.dlqLog = loglimit.New(1, time.Second)
		p.dlqs.jitter = w.simJitter
	}
	for si := 0; si < nsinks; si++ {
		chc := &config.ClickHouse{Batch: batch}
		if mode == "by-key" {
			chc.Sharding = config.Sharding{By: "key", Column: "id"}
		}
		sk := &sinkState{name: fmt.Sprintf("s%d", si), cfg: chc, dest0: len(p.dests)}
		for i := 0; i < ndest; i++ {
			sk.weights = append(sk.weights, 1)
		}
		sk.target.Store(&clickhouse.Target{Schema: schema, Fields: schema.Names})
		p.sinks = append(p.sinks, sk)
	}
	return p
}

// newDirectSimWorld is the world of the first seed from seed on that runs
// the direct path (one sink, one shard), for tests of their own.
func newDirectSimWorld(t testing.TB, seed int64) *simWorld {
	for ; ; seed++ {
		if w := newSimWorld(t, seed); w.mode == "direct" && len(w.p.dests) == 1 {
			return w
		}
	}
}

func (w *simWorld) tracef(format string, args ...any) {
	fmt.Fprintf(w.trace, "%d/%d:", w.step, w.depth)
	fmt.Fprintf(w.trace, format, args...)
	if *simTrace {
		w.t.Logf("step %d (depth %d): %s", w.step, w.depth, fmt.Sprintf(format, args...))
	}
}

// violation records a broken invariant.
func (w *simWorld) violation(format string, args ...any) {
	if len(w.errs) == 0 {
		w.firstBad = w.step
	}
	if len(w.errs) < 20 {
		w.errs = append(w.errs, fmt.Sprintf(format, args...))
	}
}

// deadReturned reports whether the shard whose table is gone returned its
// error: Run stops then.
func (w *simWorld) deadReturned() bool {
	return w.deadShard >= 0 && w.sink.shards[w.deadShard].returned
}

// run plays the seed: random steps, then a quiesce, then the final checks.
func (w *simWorld) run() (int, []string) {
	w.sink.start()
	defer func() { w.sink.end() }() // the sink of the last process
	w.startLoops()
	defer w.endLoops()
	// The group's first assignment.
	w.assign(w.parts)
	for w.step = 1; w.step <= *simSteps && len(w.errs) == 0 && !w.failed && !w.deadReturned(); w.step++ {
		w.randomStep()
		w.checkStep()
	}
	if w.failed && len(w.errs) == 0 {
		w.stop(-1, -1) // Run stops on the fatal error
	} else if d := w.deadShard; d >= 0 && len(w.errs) == 0 {
		// A table gone for good mid-run: Run stops once its shard
		// returned the error (or at the end of the steps, with the shard
		// not having written since).
		w.stop(d, -1)
	} else if len(w.errs) == 0 {
		// Most seeds end in a quiesce; some stop the pipeline instead,
		// cleanly, with a shard failed for good, or with a shard that
		// hangs.
		switch k := w.rng.Intn(8); {
		case k == 0:
			w.stop(-1, -1)
		case k == 1:
			w.stop(w.rng.Intn(len(w.sink.shards)), -1)
		case k == 2:
			w.stop(-1, w.rng.Intn(len(w.sink.shards)))
		default:
			w.quiesce()
		}
	}
	return w.step, w.errs
}

// calmRound is one step of every goroutine, without faults: a poll
// (nothing once the source stopped), a worker, the sink twice, then 50 ms
// later every loop that woke (the committer, the controller, a revoke,
// the stop); then the invariants.
func (w *simWorld) calmRound() {
	w.step++
	w.fetch()
	w.runWorker()
	w.sinkStep(true)
	w.sinkStep(true)
	w.dlqStep()
	if w.registry != nil {
		w.registryStep()
	}
	w.runLoop(w.cmt)
	w.advance(50 * time.Millisecond)
	w.runLoops()
	w.checkStep()
}

// laneStates describes the lanes that are not idle.
func (w *simWorld) laneStates() string {
	var b strings.Builder
	for _, l := range w.p.lanesSorted() {
		if l.idle() {
			continue
		}
		l.mu.Lock()
		fmt.Fprintf(&b, "%v %s blocked=%v failed=%v closed=%v pending=%d cur=%v parked=%v backlog=%d eo(open=%v first=%d replayEnd=%d cursor=%d held=%d); ",
			l.tp, l.state, l.blocked, l.failed, l.closed, len(l.recs)-l.head, l.cur != nil, l.parked != nil, len(l.backlog),
			l.eo.openSince.Load() != 0, l.eo.curFirst, l.eo.replayEnd, l.cursor, l.eo.held)
		l.mu.Unlock()
	}
	return b.String()
}

// drained reports whether every lane is idle and the live shards hold
// nothing.
func (w *simWorld) drained() bool {
	return w.lanesIdle() && w.sink.drainedShards() && len(w.p.acks.items) == 0
}

// lanesIdle reports whether every lane is idle.
func (w *simWorld) lanesIdle() bool {
	for _, l := range w.p.lanes {
		if !l.idle() {
			return false
		}
	}
	return true
}

// randomStep runs one event chosen at random, as a goroutine of the real
// pipeline would.
func (w *simWorld) randomStep() {
	r := w.rng
	if w.step == w.crashAt && !w.stopping && !w.failed && w.deadShard < 0 {
		w.crash()
		return
	}
	if w.step == w.killShardAt && !w.stopping && !w.failed {
		// The table of a shard is gone for good: every insert of it is
		// refused with a permanent error from now on.
		w.deadShard = r.Intn(len(w.sink.shards))
		w.sink.shards[w.deadShard].dead = true
		w.tracef("shard %d: its table is gone", w.deadShard)
		return
	}
	if w.dlq != nil && r.Intn(8) == 0 {
		w.dlqStep() // the broker answers dead-letter writes
		return
	}
	if w.alters && r.Intn(150) == 0 {
		w.alterTable()
		return
	}
	if w.registry != nil && r.Intn(40) == 0 {
		w.registryStep()
		return
	}
	switch k := r.Intn(100); {
	case k < 12:
		w.produce(1 + r.Intn(40))
	case k < 27:
		w.fetch()
	case k < 47:
		w.runWorker()
	case k < 62:
		w.sinkStep(false)
	case k < 75:
		w.committer()
	case k < 83:
		w.controller(time.Duration(r.Intn(60)) * time.Millisecond)
	case k < 88:
		w.rebalance()
	case k < 92:
		w.runLoops() // a revoke or the stop that woke goes on
	case k < 93:
		w.lose()
	case k < 96:
		w.sink.freezeToggle()
	default:
		w.advance(time.Duration(r.Intn(300)) * time.Millisecond)
	}
}

// hookBody runs, at a point where the real code may lose control, what
// another goroutine could do at that moment.
func (w *simWorld) hookBody(at hookPoint, l *lane) {
	if w.crashing {
		return // the process is dead: nothing runs beside its goroutines' end
	}
	w.checkHook(at, l)
	if at == hookFollowedBudget {
		return // a check only: nothing else runs here
	}
	if w.depth >= 2 || (at != hookFollowBudget && w.rng.Intn(100) >= 40) {
		return
	}
	w.depth++
	defer func() { w.depth-- }()
	r := w.rng
	if at >= hookFollowBudget {
		w.raceHook(at, l)
		return
	}
	if at == hookCommitted {
		// Inside a commit, under the commit lock: what does not take it.
		w.committing = true
		defer func() { w.committing = false }()
		switch k := r.Intn(100); {
		case k < 30 && !w.calm && !w.inGroup && !w.revoking():
			var owned []TopicPartition
			for _, tp := range w.parts {
				if w.src.owned[tp] {
					owned = append(owned, tp)
				}
			}
			if len(owned) > 0 {
				tp := owned[r.Intn(len(owned))]
				w.tracef("hook %d: revoke %v", at, tp)
				w.startRevoke([]TopicPartition{tp})
			}
		case k < 70:
			w.sinkStep(w.calm)
		default:
			w.controller(time.Duration(r.Intn(100)) * time.Millisecond)
		}
		return
	}
	if w.committing {
		// A hook of a loop run inside a commit's hook: the commit lock is
		// held, so nothing that takes it (a worker registering an
		// exactly-once block, the committer, a revoke) may run here.
		if r.Intn(2) == 0 {
			w.sinkStep(w.calm)
		} else if !w.inPoll {
			w.fetch()
		}
		return
	}
	if w.dlq != nil && r.Intn(10) == 0 {
		w.dlqStep()
		return
	}
	group := !w.calm && !w.inPoll && !w.inGroup // a group callback may run now
	switch k := r.Intn(100); {
	case k < 25 && l != nil && group && !w.revoking() && w.src.owned[l.tp]:
		// The group takes this very lane's partition away.
		w.tracef("hook %d: revoke %v", at, l.tp)
		w.startRevoke([]TopicPartition{l.tp})
	case k < 30 && l != nil && group && !w.revoking() && w.src.owned[l.tp]:
		w.tracef("hook %d: lose %v", at, l.tp)
		w.loseParts([]TopicPartition{l.tp})
	case k < 35 && group:
		// The revoke in progress ends, or the group assigns what is free
		// (perhaps this lane's partition again).
		if w.revoking() {
			w.runLoop(w.revLoop)
		} else {
			w.rebalance()
		}
	case k < 50:
		w.sinkStep(w.calm)
	case k < 60:
		w.committer()
	case k < 80:
		// The controller, after the acknowledgements that came in.
		w.committer()
		w.controller(time.Duration(r.Intn(400)) * time.Millisecond)
	case k < 90:
		w.runLoop(w.stp)
	case k < 95 && !w.inPoll:
		// The poll loop hands records over meanwhile (to this very
		// lane, perhaps).
		w.fetch()
	default:
		w.runWorker()
	}
}

// produce appends n records to a random partition's log.
func (w *simWorld) produce(n int) {
	if w.toMake <= 0 {
		return
	}
	tp := w.parts[w.rng.Intn(len(w.parts))]
	for i := 0; i < n && w.toMake > 0; i++ {
		w.toMake--
		off := w.logEnd(tp)
		if w.gaps && len(w.log[tp]) > 0 && w.rng.Intn(15) == 0 {
			off += 1 + int64(w.rng.Intn(3))
		}
		id := w.nextID
		w.nextID++
		rec := simRec{id: id, rows: 1}
		var v []byte
		switch {
		case w.ndjson && w.rng.Intn(8) == 0:
			// A record of many rows, which may end in a line that
			// cannot be decoded: then none of its rows may be written.
			rec.rows = 64 + w.rng.Intn(120)
			w.nextID += uint64(rec.rows - 1)
			for j := range rec.rows {
				v = append(gen.Make(1, id+uint64(j)).AppendJSON(v), '\n')
			}
			if w.rng.Intn(4) == 0 {
				rec.bad = true
				v = append(v, `{"id":`...)
			}
		case w.rng.Intn(50) == 0:
			rec.bad = true
			v = []byte(`{"id":`)
		default:
			v = gen.Make(1, id).AppendJSON(nil)
		}
		if w.poison && !rec.bad && w.rng.Intn(60) == 0 {
			rec.poison = true
			for j := range rec.rows {
				w.sink.poison[id+uint64(j)] = true
			}
		}
		rec.rec = &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: off, Value: v, Timestamp: w.now}
		if w.registry != nil {
			w.registry.name(w, v)
		}
		if w.dlq != nil {
			w.dlq.produced(rec.rec)
		}
		w.log[tp] = append(w.log[tp], rec)
	}
}

// logEnd is tp's log end offset: the offset of its next record.
func (w *simWorld) logEnd(tp TopicPartition) int64 {
	if l := w.log[tp]; len(l) > 0 {
		return l[len(l)-1].rec.Offset + 1
	}
	return 0
}

// indexOf is the index in tp's log of the first record at or after
// offset (the log's length when there is none).
func (w *simWorld) indexOf(tp TopicPartition, offset int64) int64 {
	l := w.log[tp]
	i, _ := slices.BinarySearchFunc(l, offset, func(sr simRec, off int64) int {
		return cmp.Compare(sr.rec.Offset, off)
	})
	return int64(i)
}

// fetch hands a random fetchable partition's next records to the
// pipeline, as one poll does. Nothing is fetched while a revoke runs: the
// poll loop is blocked in the callback.
func (w *simWorld) fetch() {
	if w.revoking() || w.inGroup || w.stopping {
		return
	}
	var can []TopicPartition
	for _, tp := range w.parts {
		if w.src.owned[tp] && !w.src.paused[tp] && w.src.pos[tp] < int64(len(w.log[tp])) {
			can = append(can, tp)
		}
	}
	if len(can) == 0 {
		return
	}
	tp := can[w.rng.Intn(len(can))]
	from := w.src.pos[tp]
	if from > w.src.start[tp] && w.rng.Intn(10) == 0 {
		// The client fetches again what it buffered before a pause.
		from = max(w.src.start[tp], from-int64(1+w.rng.Intn(5)))
	}
	to := min(int64(len(w.log[tp])), from+int64(1+w.rng.Intn(60)))
	recs := make([]*kgo.Record, 0, to-from)
	for _, sr := range w.log[tp][from:to] {
		recs = append(recs, sr.rec)
	}
	w.src.pos[tp] = max(w.src.pos[tp], to)
	w.tracef("fetch %v [%d, %d)", tp, from, to)
	if l := w.p.lanes[tp]; l != nil {
		offs, bytes := make([]int64, len(recs)), make([]int64, len(recs))
		for i, r := range recs {
			offs[i], bytes[i] = r.Offset, recordBytes(r)
		}
		w.p.pause.mu.Lock()
		exempt := w.p.pause.replaying[tp]
		w.p.pause.mu.Unlock()
		w.noteTakes(l, tp, from, to)
		w.ledger.fetched(l, offs, bytes, exempt)
	}
	w.inPoll = true
	defer func() { w.inPoll = false }()
	w.h.Fetched(&kgo.FetchTopicPartition{Topic: tp.Topic, FetchPartition: kgo.FetchPartition{Partition: tp.Partition, Records: recs}})
}

// runWorker takes a random lane from the run queue and runs it.
func (w *simWorld) runWorker() {
	q := w.p.runq
	q.mu.Lock()
	if len(q.q) == 0 || q.closed || w.working {
		q.mu.Unlock()
		return
	}
	// Lanes woken by goroutines of their own (a schema served) are pushed
	// in no fixed order: pick from the queue ordered by lane.
	slices.SortStableFunc(q.q, func(a, b *lane) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition), cmp.Compare(a.epoch, b.epoch))
	})
	i := w.rng.Intn(len(q.q))
	l := q.q[i]
	q.q = slices.Delete(q.q, i, i+1)
	q.mu.Unlock()
	w.tracef("worker runs %v epoch %d", l.tp, l.epoch)
	w.working = true
	dec := w.bindRegistry()
	w.p.runLane(l, &dec)
	w.working = false
	if ch := w.workerIdle; ch != nil {
		w.workerIdle = nil
		close(ch)
	}
}

// committer runs the committer if it woke (acknowledgements came in, or
// its tick): it applies the acknowledgements and, on a tick, commits.
func (w *simWorld) committer() { w.runLoop(w.cmt) }

// controller moves the clock d on and runs the controller if its ticker
// woke it.
func (w *simWorld) controller(d time.Duration) {
	w.advance(d)
	w.runLoop(w.ctl)
}

// assign gives the member tps (a group callback).
func (w *simWorld) assign(tps []TopicPartition) {
	parts := kafka.Partitions{}
	for _, tp := range tps {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
		w.src.owned[tp] = true
		delete(w.src.paused, tp)
		// The member resumes from the committed offset.
		w.src.pos[tp] = w.indexOf(tp, max(0, w.src.committed[tp].Offset))
		w.src.start[tp] = w.src.pos[tp]
		// The blocks the previous owners registered: rebuilt as they were.
		w.registered[tp], _ = checkpoint.DecodeBlocks(w.src.committed[tp].Metadata)
	}
	w.tracef("assign %v", tps)
	done := w.groupCallback("assign")
	end := func() {
		for _, tp := range tps {
			if l := w.p.lanes[tp]; l != nil && !slices.Contains(w.lanes, l) {
				w.lanes = append(w.lanes, l)
			}
		}
		done()
	}
	if !w.eo {
		w.h.Assigned(context.Background(), parts)
		end()
		return
	}
	// Under exactly-once the callback reads the committed blocks, and
	// waits between reads that fail: the poll loop stays in it, on a
	// goroutine of its own here, until it returns.
	lp := w.newLoop("assign")
	ctx, cancel := context.WithCancel(context.Background())
	lp.cancel = cancel
	w.asgLoop, w.asgAt, w.asgParts, w.asgRead = lp, w.now, tps, false
	w.startLoop(lp, func() { w.h.Assigned(ctx, parts) }, func() {
		w.tracef("assign %v ends", tps)
		if !w.asgRead && ctx.Err() == nil && len(w.p.failc) == 0 {
			// Without the blocks the previous owners registered, a
			// block could be written twice.
			w.violation("the assignment of %v returned with every read of the committed blocks failed, and the pipeline goes on", tps)
		}
		end()
		w.asgLoop, w.asgParts = nil, nil
		cancel()
	})
}

// rebalance starts a revoke of some owned partitions, or assigns the
// partitions nobody owns.
func (w *simWorld) rebalance() {
	if w.revoking() || w.inGroup || w.stopping {
		return
	}
	var owned, free []TopicPartition
	for _, tp := range w.parts {
		if w.src.owned[tp] {
			owned = append(owned, tp)
		} else {
			free = append(free, tp)
		}
	}
	if len(free) > 0 && (len(owned) == 0 || w.rng.Intn(2) == 0) {
		w.assign(free)
		return
	}
	var take []TopicPartition
	for _, tp := range owned {
		if w.rng.Intn(2) == 0 {
			take = append(take, tp)
		}
	}
	if len(take) > 0 {
		w.startRevoke(take)
	}
}

// groupCallback marks a group callback as running until the returned
// function is called. The client runs its group callbacks one at a time,
// so one that starts inside another is a fault of the simulation: the
// source and the pipeline would disagree on what is owned.
func (w *simWorld) groupCallback(what string) (done func()) {
	if w.inGroup {
		w.violation("%s inside another group callback", what)
	}
	prev := w.inGroup
	w.inGroup = true
	return func() { w.inGroup = prev }
}

// lose takes a random owned partition away without a revoke (session
// expired): it is the group's to give again at once.
func (w *simWorld) lose() {
	if w.revoking() || w.inGroup || w.stopping {
		return
	}
	var owned []TopicPartition
	for _, tp := range w.parts {
		if w.src.owned[tp] {
			owned = append(owned, tp)
		}
	}
	if len(owned) > 0 {
		w.loseParts([]TopicPartition{owned[w.rng.Intn(len(owned))]})
	}
}

func (w *simWorld) loseParts(tps []TopicPartition) {
	parts := kafka.Partitions{}
	for _, tp := range tps {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
		delete(w.src.owned, tp) // gone before the callback runs
	}
	w.tracef("lose %v", tps)
	defer w.groupCallback("lose")()
	w.h.Lost(context.Background(), parts)
}

// checkStep checks the invariants that hold between any two steps.
func (w *simWorld) checkStep() {
	p := w.p
	select {
	case err := <-p.failc:
		if w.failMode && strings.Contains(err.Error(), "offset") {
			w.failed = true // a bad record under on_error fail: the pipeline stops
			w.fatal = err
			w.tracef("the pipeline stops: %v", err)
		} else if !w.asgRead && errors.Is(err, errSimFetchCommitted) {
			// Every read of the committed blocks failed within the
			// assignment's limit: without them the pipeline must stop.
			simTotals.fcStops++
			w.failed = true
			w.fatal = err
			w.tracef("the pipeline stops: %v", err)
		} else {
			w.violation("the pipeline stopped: %v", err)
		}
	default:
	}
	// A lane held for the budget is woken by the acknowledgement of a
	// chunk the sink holds: with none held, nothing would wake it.
	p.hold.mu.Lock()
	heldLanes := len(p.hold.lanes)
	p.hold.mu.Unlock()
	if heldLanes > 0 && p.hold.sinkChunks.Load() == 0 {
		w.violation("%d lanes held for the budget while the sink holds no chunk: nothing will wake them", heldLanes)
	}
	// Every byte the budget counts is held by something, and nothing a
	// closed lane held is still counted.
	var held int64
	for _, l := range w.lanes {
		b := l.held()
		l.mu.Lock()
		gone := l.state == laneClosed
		l.mu.Unlock()
		if gone && b != 0 {
			w.violation("lane %v epoch %d was closed but still holds %d budget bytes", l.tp, l.epoch, b)
		}
		held += b
	}
	held += w.sink.held()
	for _, c := range p.acks.items {
		held += int64(c.Size())
	}
	if w.dlq != nil && (w.stopping || w.failed) {
		// The stop gives up the bad records waiting to be written again:
		// what the producer holds is between what it was given and not
		// answered and that plus what failed.
		lo, hi := held+w.dlq.writing(), held+w.dlq.held()
		if got := p.budget.Inflight(); got < lo || got > hi {
			w.violation("budget counts %d bytes in flight, the lanes, queues, inserts, acknowledgements and dead-letter writes hold %d to %d", got, lo, hi)
		}
	} else {
		var dl int64
		if w.dlq != nil {
			dl = w.dlq.held()
		}
		if got := p.budget.Inflight(); got != held+dl {
			w.violation("budget counts %d bytes in flight, the lanes, queues, inserts and acknowledgements hold %d and the dead-letter writes %d", got, held, dl)
		}
	}
	w.checkLedger()
	// The sink's chunks are counted from the hand-over to the
	// acknowledgement, and a lane is held for the budget only while there
	// are some: their acknowledgements wake it.
	if got, want := p.hold.sinkChunks.Load(), int64(w.sink.chunks()+len(p.acks.items)); got != want {
		w.violation("%d chunks counted in the sink, the queues, inserts and acknowledgements hold %d", got, want)
	}
	p.hold.mu.Lock()
	nheld := len(p.hold.lanes)
	p.hold.mu.Unlock()
	if nheld > 0 && p.hold.sinkChunks.Load() == 0 {
		w.violation("%d lanes held for the budget with no chunk in the sink to wake them", nheld)
	}
	// The pauser follows the budget.
	p.pause.mu.Lock()
	pb := p.pause.budget
	p.pause.mu.Unlock()
	if bp := p.budget.Paused(); pb != bp {
		w.violation("the budget is paused=%v but the pauser holds the source paused=%v", bp, pb)
	}
	w.checkPaused()
	w.checkShards()
	w.checkLoops()
	// A lane left idle holds no work: what it waited for woke it (a wake
	// that lands while its worker runs makes it run again).
	for _, l := range w.lanes {
		l.mu.Lock()
		if l.state == laneIdle && !l.closed && !l.failed && (l.parked != nil || len(l.backlog) > 0 || l.head < len(l.recs)) {
			w.violation("lane %v epoch %d is idle with work: parked %v, backlog %d, %d records undecoded", l.tp, l.epoch, l.parked != nil, len(l.backlog), len(l.recs)-l.head)
		}
		l.mu.Unlock()
	}
}

// checkPaused checks each owned partition's pause against what should
// hold it: a lane over its read-ahead is paused (unless it rebuilds
// exactly-once blocks), and a partition that nothing holds (the budget, a
// lane over its read-ahead, a lane waiting for open blocks or, without a
// read-ahead, for a full queue) is fetched.
func (w *simWorld) checkPaused() {
	p := w.p
	for _, tp := range w.parts {
		l := p.lanes[tp]
		if l == nil || !w.src.owned[tp] {
			continue
		}
		l.mu.Lock()
		rb, over, ra, gone, decoded := l.recBytes, l.over, l.readAhead, l.closed || l.failed, l.decoded
		blockedOn, blocked := l.blockedOn, l.blocked
		l.mu.Unlock()
		if gone {
			continue
		}
		p.pause.mu.Lock()
		budget, replaying := p.pause.budget, p.pause.replaying[tp]
		pb, held := p.pause.blocked[tp]
		p.pause.mu.Unlock()
		if held && pb.l != l {
			w.violation("the pauser holds %v blocked for a lane that is not its partition's", tp)
		}
		if ra > 0 {
			if rb >= ra && blocked && blockedOn >= 0 && !over {
				w.violation("lane %v waits for a queue holding %d undecoded bytes, at or over its read-ahead %d, but is not marked over", tp, rb, ra)
			}
			if over && rb < ra/4 {
				w.violation("lane %v holds %d undecoded bytes, under a quarter of its read-ahead %d, but is marked over", tp, rb, ra)
			}
		}
		want := (held && (pb.dest == blockedOnBlocks || ra == 0 || decoded >= ra)) ||
			(!replaying && (budget || over))
		if want != w.src.paused[tp] {
			w.violation("partition %v is paused=%v at the source, want %v (budget %v, over read-ahead %v with %d of %d bytes, %d decoded since the resume, replaying %v, blocked %v on %d, held by the pauser %v)",
				tp, w.src.paused[tp], want, budget, over, rb, ra, decoded, replaying, blocked, blockedOn, held)
		}
	}
}

// quiesce stops the faults, lets every record through and checks the end
// state.
func (w *simWorld) quiesce() {
	w.toMake = 0
	w.calm = true
	for _, ss := range w.sink.shards {
		ss.frozen = false
	}
	assigned := false
	done := false
	for i := 0; i < 20000 && len(w.errs) == 0; i++ {
		if !assigned && !w.revoking() && !w.inGroup {
			// The revoke in progress ended: the group gives what is
			// free.
			assigned = true
			var free []TopicPartition
			for _, tp := range w.parts {
				if !w.src.owned[tp] {
					free = append(free, tp)
				}
			}
			if len(free) > 0 {
				w.assign(free)
			}
		}
		w.calmRound()
		if w.failed {
			w.stop(-1, -1) // a bad record under on_error fail: Run stops
			return
		}
		if w.settled() {
			done = true
			break
		}
	}
	if len(w.errs) > 0 {
		return
	}
	if !done {
		w.violation("did not quiesce: %s; lanes: %s; %d lanes held for the budget, %d chunks counted in the sink (the sink holds %d, %d acknowledgements wait), budget paused %v", w.state(), w.laneStates(), len(w.p.hold.lanes), w.p.hold.sinkChunks.Load(), w.sink.chunks(), len(w.p.acks.items), w.p.budget.Paused())
		return
	}
	if got := w.p.budget.Inflight(); got != 0 {
		w.violation("quiesced with %d budget bytes in flight", got)
	}
	if n := w.p.pause.count(); n != 0 || len(w.src.paused) != 0 {
		w.violation("quiesced with %d partitions paused (source: %v)", n, w.src.paused)
	}
	w.checkTables(true)
}

// checkTables checks every table: no row of a bad record, none of a
// record the table refuses (those are handed to on_error), and under
// exactly-once no row twice; with complete (at quiesce), every other
// record's rows are there.
func (w *simWorld) checkTables(complete bool) {
	for si, rows := range w.sink.rows {
		for _, tp := range w.parts {
			for _, sr := range w.log[tp] {
				for id := sr.id; id < sr.id+uint64(sr.rows); id++ {
					got := rows[id]
					switch {
					case sr.bad && got != 0:
						w.violation("bad record %v@%d (id %d) is in table %d", tp, sr.rec.Offset, id, si)
					case sr.poison && got != 0:
						w.violation("record %v@%d (id %d), whose rows the table refuses, is in table %d %d times", tp, sr.rec.Offset, id, si, got)
					case sr.poison && complete && !w.sink.hasRec(sr):
						w.violation("record %v@%d (id %d), whose rows the table refuses, was not handed to on_error", tp, sr.rec.Offset, id)
					case sr.poison && complete && w.dlq != nil && !w.dlq.copied[id]:
						w.violation("record %v@%d (id %d), whose rows the table refuses, has no acknowledged dead-letter copy of its rows", tp, sr.rec.Offset, id)
					case sr.bad && complete && w.dlq != nil && !w.dlq.has(sr):
						w.violation("bad record %v@%d has no acknowledged dead-letter copy", tp, sr.rec.Offset)
					case sr.poison || sr.bad:
					case complete && got == 0:
						w.violation("record %v@%d (id %d) never reached table %d", tp, sr.rec.Offset, id, si)
					case w.eo && got > 1:
						w.violation("exactly-once: record %v@%d (id %d) is in table %d %d times", tp, sr.rec.Offset, id, si, got)
					case got > w.takes[id]+w.landedOn(si, id):
						w.violation("record %v@%d (id %d) is in table %d %d times: %d lanes took it, %d inserts of it landed and were retried", tp, sr.rec.Offset, id, si, got, w.takes[id], w.landedOn(si, id))
					}
				}
			}
		}
	}
}

// settled reports whether every record was produced, written and
// committed, and nothing is in flight.
func (w *simWorld) settled() bool {
	for _, tp := range w.parts {
		if w.src.committed[tp].Offset != w.logEnd(tp) {
			return false
		}
	}
	// The controller resumes a paused source only after min_pause: wait
	// for it (a source paused for good never settles, and is reported).
	return w.p.budget.Inflight() == 0 && w.sink.held() == 0 && len(w.p.acks.items) == 0 &&
		w.p.pause.count() == 0 && len(w.src.paused) == 0
}

func (w *simWorld) state() string {
	var b strings.Builder
	for _, tp := range w.parts {
		st, _ := w.p.tracker.Status(tp)
		fmt.Fprintf(&b, "%v: log %d fetched %d committed %d watermark %d paused %v; ", tp, len(w.log[tp]), w.src.pos[tp],
			w.src.committed[tp].Offset, st.Watermark, w.src.paused[tp])
	}
	fmt.Fprintf(&b, "inflight %d, sink %d, run queue %d", w.p.budget.Inflight(), w.sink.held(), len(w.p.runq.q))
	return b.String()
}

// simSource is the fake consumer-group member.
type simSource struct {
	w         *simWorld
	paused    map[TopicPartition]bool
	owned     map[TopicPartition]bool
	pos       map[TopicPartition]int64 // next offset to fetch
	start     map[TopicPartition]int64 // where the assignment started
	committed map[TopicPartition]kafka.Committed
	dead      bool // the process crashed: it commits nothing more
}

func (s *simSource) Pause(p kafka.Partitions) {
	for topic, ps := range p {
		for _, part := range ps {
			s.paused[TopicPartition{Topic: topic, Partition: part}] = true
		}
	}
}

func (s *simSource) Resume(p kafka.Partitions) {
	w := s.w
	for topic, ps := range p {
		for _, part := range ps {
			tp := TopicPartition{Topic: topic, Partition: part}
			delete(s.paused, tp)
			// A partition is resumed only when what paused it is gone:
			// not while its lane's chunk still waits for a full queue.
			l := w.p.lanes[tp]
			if l == nil || !s.owned[tp] || w.p.budget.Paused() || l.readAhead > 0 {
				// With a read-ahead, a lane waiting for a queue keeps
				// fetching until it holds its read-ahead.
				continue
			}
			l.mu.Lock()
			blocked := l.blocked && l.blockedOn >= 0
			l.mu.Unlock()
			if !blocked {
				continue // refused but not blocked yet (it blocks next), or waiting for open blocks
			}
			var c *chunk.Chunk
			if l.parked != nil {
				c = l.parked
			} else if len(l.backlog) > 0 {
				c = l.backlog[0]
			}
			if c != nil {
				if ss := w.sink.shards[c.Dest]; ss.sh.QueueLen() >= ss.cap {
					w.violation("partition %v resumed while the queue of shard %d its chunk waits for is still full", tp, c.Dest)
					if *simTrace {
						w.t.Logf("%s", debug.Stack())
					}
				}
			}
		}
	}
}

func (s *simSource) Run(context.Context) error    { return nil }
func (s *simSource) Close()                       {}
func (s *simSource) LastPoll() time.Time          { return s.w.now }
func (s *simSource) Brokers() (time.Time, string) { return s.w.now, "" }

var errSimCommit = errors.New("sim: commit failed")

// Commit checks every commit against what the table holds.
func (s *simSource) Commit(_ context.Context, offs []kafka.Offset) error {
	w := s.w
	if s.dead {
		return errSimCommit // the process crashed
	}
	if !w.calm && w.rng.Intn(20) == 0 {
		return errSimCommit
	}
	for _, o := range offs {
		tp := TopicPartition{Topic: o.Topic, Partition: o.Partition}
		if !s.owned[tp] {
			w.violation("commit of %v offset %d after the partition was revoked or lost", tp, o.Offset)
		}
		simTotals.maxMeta = max(simTotals.maxMeta, len(o.Metadata))
		if blocks, _ := checkpoint.DecodeBlocks(o.Metadata); len(blocks) > w.p.cfg.Checkpoint.MaxOpenBlocks {
			w.violation("commit metadata of %v lists %d blocks, more than checkpoint.max_open_blocks %d", tp, len(blocks), w.p.cfg.Checkpoint.MaxOpenBlocks)
		}
		if len(o.Metadata) > 4096 {
			w.violation("commit metadata of %v is %d bytes: real Kafka refuses more than 4096 (offset.metadata.max.bytes)", tp, len(o.Metadata))
		}
		if end := w.logEnd(tp); o.Offset > end {
			w.violation("commit of %v offset %d past the log's end %d", tp, o.Offset, end)
		}
		for i := w.indexOf(tp, max(0, s.committed[tp].Offset)); i < int64(len(w.log[tp])) && w.log[tp][i].rec.Offset < o.Offset; i++ {
			if sr := w.log[tp][i]; (!sr.bad || w.failMode) && !w.sink.hasRec(sr) {
				w.violation("commit of %v offset %d, but offset %d is not in the table", tp, o.Offset, sr.rec.Offset)
				break
			} else if sr.bad && w.dlq != nil && !w.dlq.has(sr) {
				w.violation("commit of %v offset %d, but the bad record at %d has no acknowledged dead-letter copy", tp, o.Offset, sr.rec.Offset)
				break
			}
		}
		if o.Offset < s.committed[tp].Offset {
			w.violation("commit of %v moved back from %d to %d", tp, s.committed[tp].Offset, o.Offset)
		}
		s.committed[tp] = kafka.Committed{Offset: o.Offset, Metadata: o.Metadata}
	}
	w.tracef("commit %v", offs)
	return nil
}

var errSimFetchCommitted = errors.New("sim: offset fetch failed")

// FetchCommitted reads the committed offsets and their metadata; with
// fcFaults it fails at times, and for a while (the coordinator away),
// beyond the assignment's limit at times.
func (s *simSource) FetchCommitted(ctx context.Context, parts kafka.Partitions) (map[string]map[int32]kafka.Committed, error) {
	w := s.w
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if w.fcFaults && !w.calm {
		if w.now.Before(w.fcDownUntil) {
			simTotals.fcRetries++
			w.tracef("offset fetch fails (down)")
			return nil, errSimFetchCommitted
		}
		switch k := w.rng.Intn(10); {
		case k < 3:
			simTotals.fcRetries++
			w.tracef("offset fetch fails")
			return nil, errSimFetchCommitted
		case k < 4:
			simTotals.fcRetries++
			w.fcDownUntil = w.now.Add(time.Duration(w.rng.Intn(2*int(w.p.callbackLimit()/time.Millisecond))) * time.Millisecond)
			w.tracef("offset fetches fail until %s", w.fcDownUntil.Format("15:04:05.000"))
			return nil, errSimFetchCommitted
		}
	}
	w.asgRead = true
	out := map[string]map[int32]kafka.Committed{}
	for topic, ps := range parts {
		out[topic] = map[int32]kafka.Committed{}
		for _, part := range ps {
			c, ok := s.committed[TopicPartition{Topic: topic, Partition: part}]
			if !ok {
				c = kafka.Committed{Offset: -1}
			}
			out[topic][part] = c
		}
	}
	return out, nil
}
