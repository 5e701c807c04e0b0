package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// Exactly-once delivery (delivery: exactly_once), see docs/DESIGN.md.
//
// Every insert is one block: the rows of one partition's contiguous offset
// range [first, next), built by one lane. Before a block is handed to its
// shard, its range is committed to the consumer group as metadata of the
// partition's committed offset (the watermark stays where it is), so that
// whoever owns the partition next knows which blocks may already be in
// ClickHouse. After an assignment the lane rebuilds exactly those blocks
// first, from the same records, into the same rows in the same order; the
// table (a ReplicatedMergeTree) drops a block identical to one it already
// has. Blocks are sealed at the registered boundaries and nowhere else
// while they are replayed.

// eo reports exactly-once delivery: the block policy, chosen once in New
// (and by the tests that build pipelines by hand).
func (p *Pipeline) eo() bool { return p.exactlyOnce }

// eoState is a lane's exactly-once state, owned by the worker running it.
type eoState struct {
	// bounds are the offsets where a block must start or end: the edges of
	// the blocks registered by the partition's previous owner that are not
	// yet durable, in order.
	bounds []int64
	// replayEnd is the end of the last replayed block: a chunk starting
	// below it is a replayed block and is cut only at bounds.
	replayEnd int64
	// curFirst is the first offset the open chunk covers.
	curFirst int64
	// openSince is when the open chunk got its first record (Unix nanos,
	// 0 when none); the controller reads it to flush after the linger.
	openSince atomic.Int64
	// flushDue is set by the controller when the open chunk lingered.
	flushDue atomic.Bool
	// unregistered: the parked chunk is a block waiting for room among the
	// partition's open blocks (checkpoint.max_open_blocks), not yet
	// registered. parkedFirst and parkedNext are its offsets.
	unregistered            bool
	parkedFirst, parkedNext int64
	// sealPending: the staged path's outputs wait for that room before
	// they are sealed as one block.
	sealPending bool
	// held is the budget bytes of the records in the open chunk: with
	// exactly-once a block grows to a whole batch, so its records stay
	// counted until it is sealed.
	held int64
	// blocks are the blocks a previous owner registered, as eoSetup got
	// them; lostLogged marks those found cut by retention and logged.
	blocks     [][2]int64
	lostLogged []bool
}

// eoLost returns the error of r when it belongs to a block a previous
// owner registered whose first records retention deleted (the log start
// the fetch reported is above the block's start): the block may be in
// ClickHouse already and cannot be rebuilt identically, so the table
// would not drop it as a duplicate. Such a record is not written; it goes
// to on_error as unrebuildable_block, and the first of each block is
// logged at ERROR. Only records below the last registered end are looked
// at, so the check costs nothing once the blocks are rebuilt.
func (p *Pipeline) eoLost(l *lane, r *kgo.Record) error {
	if r.Offset >= l.eo.replayEnd {
		return nil
	}
	start := l.logStart.Load()
	for i, b := range l.eo.blocks {
		if b[0] >= start || r.Offset < b[0] || r.Offset >= b[1] {
			continue
		}
		if !l.eo.lostLogged[i] {
			l.eo.lostLogged[i] = true
			p.log.Error("exactly_once: a block a previous owner registered lost its first records to retention: its other records are not written",
				"topic", l.tp.Topic, "partition", l.tp.Partition, "block_first", b[0], "block_next", b[1], "log_start", start,
				"records", b[1]-max(start, b[0]), "on_error", p.onError)
		}
		return &decode.Error{Reason: decode.ReasonUnrebuildableBlock, Err: fmt.Errorf(
			"exactly_once: the block [%d, %d) registered by the partition's previous owner may already be in ClickHouse and cannot be rebuilt identically, "+
				"retention having deleted its records below the log start %d: its record is not written (decode.on_error dlq or skip goes past it; "+
				"etl offsets reset past offset %d moves the group past the block)", b[0], b[1], start, b[1])}
	}
	return nil
}

// eoCut reports whether the open chunk must be sealed before the record at
// offset: a block boundary lies after the chunk's first offset and at or
// below offset.
func (e *eoState) eoCut(offset int64) bool {
	for _, b := range e.bounds {
		if b > e.curFirst && b <= offset {
			return true
		}
	}
	return false
}

// open starts a block at the record at offset, the lane having covered
// the offsets below cursor (-1: none yet). The block covers the offsets
// from cursor on, so gaps (compaction, a record acknowledged on its own)
// belong to it; a block rebuilt for a previous owner starts where that
// owner's started, even when its first offsets are below the committed
// offset the assignment resumed from (a rejected record acknowledged on
// its own let the watermark pass them): the block registered again must be
// the one in the metadata, not a second one.
func (e *eoState) open(offset, cursor int64, now time.Time) {
	e.curFirst = offset
	if cursor >= 0 && cursor < offset {
		e.curFirst = cursor
	}
	if e.curFirst < e.replayEnd {
		// The last registered edge below the first offset.
		start := e.curFirst
		for _, b := range e.bounds {
			if b < start && (cursor < 0 || b >= cursor) {
				e.curFirst = b
			}
		}
	}
	e.openSince.Store(now.UnixNano())
}

// replaying reports whether the open chunk is a block being rebuilt.
func (e *eoState) replaying() bool { return e.curFirst < e.replayEnd }

// pruneBounds drops the bounds at or below offset.
func (e *eoState) pruneBounds(offset int64) {
	k := 0
	for _, b := range e.bounds {
		if b > offset {
			e.bounds[k] = b
			k++
		}
	}
	e.bounds = e.bounds[:k]
}

// eoFetchRetry is the wait between two reads of the committed blocks.
const eoFetchRetry = 250 * time.Millisecond

// eoAssigned reads the committed metadata of newly assigned partitions:
// the blocks their previous owner registered and that are not durable yet.
// It retries for a while: without it, blocks already in ClickHouse could
// be written again.
func (p *Pipeline) eoAssigned(ctx context.Context, parts kafka.Partitions) (map[TopicPartition][][2]int64, bool) {
	if count(parts) == 0 {
		// Nothing new (a cooperative rebalance that only took partitions
		// away): an offset fetch naming no topic would read the whole
		// group's offsets.
		return nil, true
	}
	var committed map[string]map[int32]kafka.Committed
	var err error
	// Within the time Health allows a group callback.
	clk := p.timing()
	deadline := clk.Now().Add(p.callbackLimit())
	for {
		fctx, cancel := clk.WithTimeout(ctx, deadline.Sub(clk.Now()))
		committed, err = p.src.FetchCommitted(fctx, parts)
		cancel()
		if err == nil || ctx.Err() != nil || clk.Now().Add(eoFetchRetry).After(deadline) {
			break
		}
		t := clk.NewTimer(eoFetchRetry)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
		p.yield(hookAssignWoken, nil)
		if ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			// The client is closing (the stop): no lane is taken, and
			// there is nothing to stop for.
			return nil, false
		}
		p.fail(fmt.Errorf("exactly_once: read the committed blocks of %v: %w", parts, err))
		return nil, false
	}
	out := map[TopicPartition][][2]int64{}
	for topic, ps := range parts {
		for _, part := range ps {
			if _, ok := committed[topic][part]; !ok {
				p.fail(fmt.Errorf("exactly_once: the broker did not return the committed offset of %s/%d", topic, part))
				return nil, false
			}
		}
	}
	for topic, ps := range parts {
		for _, part := range ps {
			c := committed[topic][part]
			blocks, err := checkpoint.DecodeBlocks(c.Metadata)
			if err != nil {
				p.fail(fmt.Errorf("exactly_once: %s/%d: %w", topic, part, err))
				return nil, false
			}
			var keep [][2]int64
			for _, b := range blocks {
				if b[1] > c.Offset {
					keep = append(keep, b)
				}
			}
			if len(keep) > 0 {
				out[TopicPartition{Topic: topic, Partition: part}] = keep
				p.log.Info("exactly_once: rebuilding the blocks a previous owner registered",
					"topic", topic, "partition", part, "committed", c.Offset, "blocks", keep)
			}
		}
	}
	return out, true
}

// eoSetup gives a new lane the blocks to rebuild and registers them again
// under the new assignment, so they stay in the metadata until durable.
func (p *Pipeline) eoSetup(l *lane, blocks [][2]int64) {
	l.eo.blocks, l.eo.lostLogged = blocks, make([]bool, len(blocks))
	for _, b := range blocks {
		l.eo.bounds = append(l.eo.bounds, b[0], b[1])
		l.eo.replayEnd = max(l.eo.replayEnd, b[1])
		p.tracker.RegisterBlock(l.tp, l.epoch, b[0], b[1])
	}
	slices.Sort(l.eo.bounds)
	l.eo.bounds = slices.Compact(l.eo.bounds)
}

// releaseDecoded hands the budget bytes of decoded records back, or, with
// exactly-once, holds them until the open block is sealed (eoClosed).
func (p *Pipeline) releaseDecoded(l *lane, bytes int64) {
	if p.eo() {
		l.eo.held += bytes
		return
	}
	p.budget.Release(bytes)
}

// eoRegister commits the block range [first, next) before a chunk of it
// may reach ClickHouse.
// It retries until the commit succeeds, and gives up (false) when the
// lane is closed (revoked or lost) or the stop gives up waiting (the drain
// deadline passed: haltChan): the chunk is then dropped, never inserted,
// and its records are read again by the next owner.
func (p *Pipeline) eoRegister(l *lane, first, next int64) bool {
	for attempt := 1; ; attempt++ {
		p.yield(hookRegister, l)
		ok, err := p.commits.Register(l.tp, l.epoch, first, next, 10*time.Second)
		if !ok {
			return false
		}
		if err == nil {
			return true // logged by Register
		}
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return false
		}
		p.log.Warn("exactly_once: could not register an insert block; retrying", "topic", l.tp.Topic,
			"partition", l.tp.Partition, "block", fmt.Sprintf("%d-%d", first, next), "attempt", attempt, "err", err)
		backoff := time.NewTimer(min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second))
		select {
		case <-backoff.C:
		case <-p.haltChan():
			// The stop gave up waiting: the block is not written, its
			// records are read again by the next owner.
			backoff.Stop()
			p.log.Warn("exactly_once: stopping with an insert block not registered: it is not written", "topic", l.tp.Topic,
				"partition", l.tp.Partition, "block", fmt.Sprintf("%d-%d", first, next))
			return false
		}
	}
}

// eoFlushLingered asks the lanes whose open block has waited for the
// batch linger to seal it (called by the controller).
func (p *Pipeline) eoFlushLingered(now time.Time) {
	linger := p.sinks[0].cfg.Batch.Linger.D()
	p.mu.RLock()
	var due []*lane
	for _, l := range p.lanes {
		if since := l.eo.openSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= linger && !l.eo.flushDue.Load() {
			l.eo.flushDue.Store(true)
			due = append(due, l)
		}
	}
	p.mu.RUnlock()
	// Scheduled in partition order, not the map's.
	slices.SortFunc(due, func(a, b *lane) int { return compareTP(a.tp, b.tp) })
	for _, l := range due {
		p.schedule(l)
	}
}

// eoWindowWarn is the replicated_deduplication_window below which
// exactly_once starts with a warning (docs/DESIGN.md § Exactly-once,
// the window).
const eoWindowWarn = 1000

// eoCheckTables refuses exactly_once when a sink's table cannot drop a
// block it already has: an engine that does not deduplicate, a
// deduplication window of 0, insert_deduplicate turned off in the
// sink's settings, or a column whose value the server (or etl) computes
// differently when a block is inserted again (eoCheckColumns). A small
// window is a warning. New calls it for a run and for validate -connect
// (Check) alike, before any record is read.
func (p *Pipeline) eoCheckTables(ctx context.Context) error {
	for _, s := range p.sinks {
		t := s.target.Load()
		if v, ok := s.cfg.Settings["insert_deduplicate"]; ok && fmt.Sprint(v) != "1" && fmt.Sprint(v) != "true" {
			return &ConfigError{Errs: []error{fmt.Errorf("delivery: exactly_once relies on ClickHouse dropping a re-inserted block, and sink %s sets insert_deduplicate: %v: "+
				"remove it from the sink's settings, or set delivery: at_least_once", s.name, v)}}
		}
		var engine string
		var window int64
		var cols []clickhouse.ColumnInfo
		err := s.ask(func(c *clickhouse.Client) error {
			var err error
			if engine, err = c.Engine(ctx); err != nil {
				return err
			}
			if window, err = c.DedupWindow(ctx); err != nil {
				return err
			}
			cols, err = c.Describe(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("sink %s: %w", s.name, err)
		}
		if !strings.HasPrefix(engine, "Replicated") || !strings.HasSuffix(engine, "MergeTree") {
			return &ConfigError{Errs: []error{fmt.Errorf("delivery: exactly_once needs a table that drops a block it already has, and %s (sink %s) is %s: "+
				"use a Replicated*MergeTree table (ClickHouse deduplicates re-inserted identical blocks there; "+
				"18.16 has no insert_deduplication_token nor non_replicated_deduplication_window for other engines), "+
				"or set delivery: at_least_once", t.Name(), s.name, engine)}}
		}
		if window <= 0 {
			return &ConfigError{Errs: []error{fmt.Errorf("delivery: exactly_once needs a table that drops a block it already has, and %s (sink %s) has "+
				"replicated_deduplication_window = %d, which turns that off: set it in the table's SETTINGS "+
				"(or the server's <merge_tree> config) to %d or more, or set delivery: at_least_once",
				t.Name(), s.name, window, eoWindowWarn)}}
		}
		if err := p.eoCheckColumns(s, t, cols); err != nil {
			return err
		}
		if window < eoWindowWarn {
			p.log.Warn("exactly_once: the table remembers few blocks; a block replayed after more newer blocks than that "+
				"were inserted into it (by every writer, in the time a crashed member's partitions take to move: "+
				"session_timeout plus rebalance_timeout) is written twice. Set replicated_deduplication_window in the table's "+
				"SETTINGS (or the server's <merge_tree>) to cover that time",
				"sink", s.name, "table", t.Name(), "replicated_deduplication_window", window, "recommended_at_least", eoWindowWarn)
		} else {
			p.log.Info("exactly_once: table checked", "sink", s.name, "table", t.Name(), "engine", engine,
				"replicated_deduplication_window", window)
		}
	}
	return nil
}

// eoCheckColumns refuses exactly_once when a stored column of sink s's
// table t (described as cols) is computed by a function whose value is
// not the same when a block is inserted again (now(), rand(), ...; see
// clickhouse.NondeterministicFuncs): the replayed block would differ from
// the first and the server would keep both. A column that reads a
// dictionary or a Join table is a warning.
func (p *Pipeline) eoCheckColumns(s *sinkState, t *clickhouse.Target, cols []clickhouse.ColumnInfo) error {
	var refused []string
	for _, c := range t.Nondeterministic(cols) {
		if c.External {
			p.log.Warn("exactly_once: a column's value reads a dictionary or a Join table; a block replayed after its content changed "+
				"differs from the first insert and is written twice",
				"sink", s.name, "table", t.Name(), "column", c.Name, "kind", c.Kind, "expression", c.Expr)
			continue
		}
		refused = append(refused, c.String())
	}
	if len(refused) == 0 {
		return nil
	}
	return &ConfigError{Errs: []error{fmt.Errorf("delivery: exactly_once relies on a replayed block being identical to the first insert, "+
		"and table %s (sink %s) computes stored columns whose value may differ when a block is inserted again: %s. "+
		"A block inserted again after a crash would differ from the first and ClickHouse would keep both (every replayed row twice). "+
		"Fill such a column from the record instead: a field of the record, mapped to the column by name or by sink.clickhouse.columns, "+
		"or computed from the record's fields by a transform set: step, or Kafka's own record timestamp "+
		"(a column mapped to _timestamp in sink.clickhouse.columns). For that, a MATERIALIZED column becomes a plain one "+
		"(ALTER TABLE ... MODIFY COLUMN; REMOVE MATERIALIZED on current servers) and an excluded one leaves sink.clickhouse.exclude_columns. "+
		"Or set delivery: at_least_once", t.Name(), s.name, strings.Join(refused, "; "))}}
}

// count is the number of partitions in parts.
func count(parts kafka.Partitions) int {
	n := 0
	for _, ps := range parts {
		n += len(ps)
	}
	return n
}

// eoSend registers the sealed block c, offsets [first, next) of l's
// partition, and hands it to its shard. When the
// partition already has checkpoint.max_open_blocks blocks registered and
// not durable, c is parked unregistered, the lane blocks on
// blockedOnBlocks and its partition pauses, until acknowledgements move
// the watermark past some of them (wakeBlockWaiters). A block that cannot
// be registered (the lane was closed, or the stop gave up) is dropped:
// never written, its records read again by the next owner.
func (p *Pipeline) eoSend(l *lane, c *chunk.Chunk, first, next int64) bool {
	room := func() bool {
		return p.tracker.BlockRoom(l.tp, l.epoch, first, next, p.cfg.Checkpoint.MaxOpenBlocks)
	}
	if !room() {
		l.parked, l.eo.unregistered = c, true
		l.eo.parkedFirst, l.eo.parkedNext = first, next
		if !p.blockOn(l, blockedOnBlocks, room) {
			return false
		}
		l.parked, l.eo.unregistered = nil, false
	}
	if !p.eoRegister(l, first, next) {
		p.budget.Release(int64(c.Size()))
		c.Reset()
		p.chunks.put(c)
		return false
	}
	return p.send(l, c)
}

// wakeBlockWaiters wakes the exactly-once lanes waiting for room among
// their partition's open blocks once they have it (after
// acknowledgements moved watermarks).
func (p *Pipeline) wakeBlockWaiters() {
	max := p.cfg.Checkpoint.MaxOpenBlocks
	for _, l := range p.pause.takeBlockedIf(blockedOnBlocks, func(l *lane) bool { return p.tracker.BlockRoom(l.tp, l.epoch, -1, -1, max) }) {
		if l.wake() {
			p.runq.push(l)
		}
	}
}

// eoClosed ends the lane's open block: its records leave the budget and
// the bounds behind it are dropped.
func (p *Pipeline) eoClosed(l *lane) {
	if !p.eo() {
		return
	}
	p.budget.Release(l.eo.held)
	l.eo.held = 0
	l.eo.openSince.Store(0)
	l.eo.flushDue.Store(false)
	if l.cursor >= 0 {
		l.eo.pruneBounds(l.cursor)
	}
	if l.eo.replayEnd > 0 && l.cursor >= l.eo.replayEnd {
		// The previous owner's blocks are rebuilt: the budget may pause
		// the partition again.
		l.eo.replayEnd = 0
		p.pause.setReplaying(l, false)
	}
}

// eoFull reports whether an exactly-once block reached the batch limits.
func (p *Pipeline) eoFull(c *chunk.Chunk) bool {
	b := p.sinks[0].cfg.Batch
	return c.Rows >= b.MaxRows || int64(c.Measure()) >= int64(b.MaxBytes)
}
