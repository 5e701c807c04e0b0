package pipeline

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// The pipeline workers. A worker takes a lane from the run queue and runs
// the record loop (process) over its fetched records: each record is
// decoded into the lane's open outputs, which are sealed into chunks and
// handed to the shard queues without blocking. What the outputs are is the
// lane's path, chosen with the worker's decoder (boundDecoder.outputs):
//
//   - direct: one sink sharded by partition, no transform step; a record
//     is decoded straight into the lane's one open chunk, whose spans are
//     its source offsets;
//   - staged (staged.go): transform steps, several sinks or sharding by
//     key; a record is decoded into a one-record staging chunk and the
//     chain appends its rows to one open chunk per destination, sealed
//     together with the ack group of their source offsets.
//
// The loop itself (schema waits, bad records, exactly-once block edges and
// lingers, the chunk size, the resume point after a refused send) is the
// same for both.

// worker runs lanes from the run queue until it is closed.
func (p *Pipeline) worker() {
	var dec *boundDecoder
	for {
		l := p.runq.pop()
		if l == nil {
			return
		}
		if !p.runLane(l, &dec) {
			return
		}
	}
}

// runLane runs l, taken from the run queue, with the worker's decoder
// (rebuilt when the table changed). It returns false when the worker must
// stop.
func (p *Pipeline) runLane(l *lane, dec **boundDecoder) bool {
	run, release := l.start()
	p.budget.Release(release)
	if !run {
		return true
	}
	d, err := p.bind(*dec)
	if err != nil {
		p.fail(err)
		l.fail()
		_, release := l.finish()
		p.budget.Release(release)
		return false
	}
	*dec = d
	p.process(l, d)
	push, release := l.finish()
	p.yield(hookFinished, l)
	p.budget.Release(release)
	if push {
		p.runq.push(l)
	}
	return true
}

// recordsPerStep bounds the records a worker takes from a lane at once.
const recordsPerStep = 512

// outputs is what the record loop builds for the lane it runs: the direct
// path's one open chunk, or the staged path's open output chunks. Its
// methods are called by the worker that owns the lane.
type outputs interface {
	// resume hands over what a refused send left (the resume point) and
	// seals what was built for columns the table no longer has. false:
	// the lane stays blocked.
	resume() bool
	// add decodes (and transforms) r into the open outputs.
	add(r *kgo.Record) error
	// cover records that the open outputs cover source offsets
	// [first, next), and, when ms >= 0, a record of that timestamp
	// (Unix milliseconds) that made rows. An empty range only opens the
	// outputs' acknowledgement.
	cover(first, next, ms int64)
	// full reports whether an open output reached its size:
	// chunk.target_bytes, or with exactly-once the batch limits.
	full() bool
	// seal seals the open outputs, recycling those that hold nothing, and
	// hands them to their shards. false: a queue refused one (or, with
	// exactly-once, the partition has no room for another open block);
	// the lane blocks.
	seal() bool
}

// fatalError is an error of add that stops the pipeline rather than
// rejecting the record.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// process is the record loop: it decodes the lane's pending records into
// its outputs and seals them when full, when the lane runs out of records
// (or, with exactly-once, at a block's edge or linger). When a queue
// refuses a chunk, the lane blocks with its resume point kept: records
// already decoded are never decoded again.
func (p *Pipeline) process(l *lane, dec *boundDecoder) {
	out := dec.outputs(p, l)
	if !out.resume() {
		return
	}
	for {
		recs, ok := l.pending(recordsPerStep)
		if !ok {
			return // closed or failed: finish releases what it holds
		}
		if len(recs) == 0 {
			// Nothing more fetched: hand over the partial outputs. With
			// exactly-once an open block waits for the batch linger (or
			// the stop) to fill up, unless it is a replayed block, which
			// ends only at its registered end.
			if p.eo() && l.eo.openSince.Load() != 0 && l.eo.replaying() && p.closing.Load() {
				// Stopping: the rest of a block rebuilt for a previous
				// owner will not be fetched, and it may end only at its
				// registered end. The lane gives up what it holds (not
				// committed; the block stays registered, so the next
				// owner rebuilds it) instead of holding the drain until
				// its deadline.
				l.giveUp()
				return
			}
			if p.eo() && l.eo.openSince.Load() != 0 && (l.eo.replaying() || (!l.eo.flushDue.Load() && !p.closing.Load())) {
				return
			}
			out.seal()
			return
		}
		if p.holdForBudget(l, out) {
			return
		}
		var bytes int64
		n := 0
		full := false
		for _, r := range recs {
			if p.eo() {
				if l.eo.openSince.Load() != 0 && l.eo.eoCut(r.Offset) {
					full = true // a registered block ends before r
					break
				}
				if l.eo.openSince.Load() == 0 {
					l.eo.open(r.Offset, l.cursor, p.clock())
				}
			}
			var err error
			if b := kafka.RefusedOf(r); b != nil {
				err = b.Err() // a batch not read: too large
			} else if p.eo() && r.Offset < l.eo.replayEnd {
				if err = p.eoLost(l, r); err == nil {
					err = out.add(r)
				}
			} else {
				err = out.add(r)
			}
			if err != nil {
				if fe, ok := err.(*fatalError); ok {
					p.fail(fe.err)
					return
				}
				if pending := schemaPending(err); pending != nil {
					// The record waits for its schema: hand over what is
					// decoded and park the lane until it is fetched. An
					// exactly-once block stays open: its bounds are not
					// the registry's business.
					p.advance(l, n, bytes)
					p.releaseDecoded(l, bytes)
					if !p.eo() {
						out.seal()
					}
					p.waitSchema(l, pending.SchemaReady())
					return
				}
			}
			first := l.cursor
			if first < 0 || first > r.Offset {
				first = r.Offset
			}
			if err != nil {
				if p.onError != config.OnErrorSkip && p.onError != config.OnErrorDLQ {
					// The rows before it go to the sink; nothing at or
					// past it is committed, and the pipeline stops.
					p.advance(l, n, bytes)
					p.releaseDecoded(l, bytes)
					out.seal()
					p.stopAt(l, r, err)
					return
				}
				// The record is acknowledged on its own (at once when
				// skipped, once the dead-letter write is acknowledged);
				// the outputs cover the offsets before it.
				out.cover(first, r.Offset, -1)
				p.reject(l, r, err)
			} else {
				out.cover(first, r.Offset+1, r.Timestamp.UnixMilli())
			}
			l.cursor = kafka.RecordEnd(r)
			n++
			bytes += recordBytes(r)
			if p.eo() && l.eo.eoCut(l.cursor) {
				full = true // a registered block ends after r
				break
			}
			if (!p.eo() || !l.eo.replaying()) && out.full() {
				full = true
				break
			}
		}
		// advance may move the lane's records: the slice taken from
		// pending is not used past this point.
		p.advance(l, n, bytes)
		p.releaseDecoded(l, bytes)
		p.yield(hookDecoded, l)
		if full && !out.seal() {
			return
		}
	}
}

// outputs returns the lane's outputs for the path the decoder is bound to.
func (b *boundDecoder) outputs(p *Pipeline, l *lane) outputs {
	b.lane = l
	if b.staged != nil {
		return p.stagedOutputs(l, b)
	}
	return &directOutputs{p: p, l: l, dec: b}
}

// directOutputs is the direct path: the lane's one open chunk (lane.cur),
// for the sink's shard of the partition.
type directOutputs struct {
	p   *Pipeline
	l   *lane
	dec *boundDecoder
}

// The open chunk of the direct path is measured at least once per
// measureEvery records and per measureBytes bytes of record values: a
// chunk can outgrow chunk.target_bytes by what fewer than measureEvery
// records made of fewer than measureBytes value bytes (plus the last
// record, as before) add to its columns.
const (
	measureEvery = 8
	measureBytes = 4 << 10
)

func (o *directOutputs) resume() bool {
	p, l := o.p, o.l
	if c := l.parked; c != nil {
		if l.eo.unregistered {
			// A block waiting for room among the open blocks.
			l.parked, l.eo.unregistered = nil, false
			if !p.eoSend(l, c, l.eo.parkedFirst, l.eo.parkedNext) {
				return false
			}
		} else if !p.send(l, c) {
			return false
		}
		l.parked = nil
	}
	if len(l.backlog) > 0 && !p.sendBacklog(l) {
		// The chunks of a record of many rows not all taken yet.
		return false
	}
	if c := l.cur; c != nil && c.Schema != o.dec.target.Schema {
		// The table's columns changed: the open chunk goes out as built.
		return o.seal()
	}
	return true
}

func (o *directOutputs) add(r *kgo.Record) error {
	l := o.l
	if l.cur == nil {
		c, err := o.p.newChunk(o.dec.target, l)
		if err != nil {
			return &fatalError{err}
		}
		c.Dest = l.dest
		l.cur = c
		l.unmeasured, l.unmeasuredBytes = 0, 0
	}
	l.recStart, l.recOffset = l.cur.Rows, r.Offset
	var err error
	if o.dec.meta != nil {
		l.rec = r
		err = o.dec.meta.DecodeKey(r)
	}
	if err == nil {
		_, err = o.dec.Decode(r.Value, l.cur)
	}
	if o.dec.meta != nil {
		err = o.fillMeta(r, err)
	}
	if len(l.spill) > 0 && err != nil {
		o.p.takeBackSpill(l, func(int) *chunk.Chunk { return l.cur }, func(_ int, c *chunk.Chunk) { l.cur = c })
		o.p.countOpen(l, int64(l.cur.Measure()))
	}
	if err == nil {
		l.cur.MarkRecord(r.Offset)
	}
	l.unmeasured++
	l.unmeasuredBytes += len(r.Value)
	return err
}

// fillMeta fills the metadata columns of the rows record r just made in
// the open chunk (those of chunks sealed in its middle were filled as they
// were sealed: sealMidRecord), and returns the record's error: err, or the
// filler's. A record the filler refuses leaves no row.
func (o *directOutputs) fillMeta(r *kgo.Record, err error) error {
	l := o.l
	ferr := l.metaErr
	l.rec, l.metaErr = nil, nil
	if err != nil {
		return err
	}
	from := l.recStart
	if len(l.spill) > 0 {
		from = 0 // the open chunk holds the record's last rows only
	}
	if ferr == nil {
		ferr = o.dec.meta.Fill(r, l.cur, from)
	}
	if ferr != nil {
		if len(l.spill) == 0 {
			l.cur.Truncate(l.recStart)
		}
		return ferr
	}
	return nil
}

func (o *directOutputs) cover(first, next, ms int64) {
	l := o.l
	if len(l.spill) > 0 {
		// The record of many rows just decoded: its offsets are its
		// chunks' ack group's.
		l.spillFirst, l.spillNext = first, next
		if ms >= 0 {
			for _, c := range l.spill {
				c.NoteTime(ms)
			}
			l.cur.NoteTime(ms)
		}
		return
	}
	if next > first {
		if l.cur == nil {
			// Offsets before a record not decoded (a refused batch, a
			// record of a block that cannot be rebuilt): no record opened
			// the chunk that covers them.
			c, err := o.p.newChunk(o.dec.target, l)
			if err != nil {
				c, _ = chunk.New(o.dec.target.Schema) // made before: cannot fail
			}
			c.Dest = l.dest
			l.cur = c
		}
		l.cur.AddRange(l.tp.Topic, l.tp.Partition, l.epoch, first, next)
	}
	if ms >= 0 {
		l.cur.NoteTime(ms)
	}
}

func (o *directOutputs) full() bool {
	l := o.l
	if len(l.spill) > 0 {
		return true // a record sealed in its middle goes out as it ends
	}
	if o.p.eo() {
		full := o.p.eoFull(l.cur)
		o.p.countOpen(l, int64(l.cur.Size()))
		return full
	}
	if l.unmeasured < measureEvery && l.unmeasuredBytes < measureBytes {
		return false
	}
	l.unmeasured, l.unmeasuredBytes = 0, 0
	size := l.cur.Measure()
	o.p.countOpen(l, int64(size))
	return size >= o.p.chunkTarget
}

// sealMidRecord is the direct path's decode.RowLimits.Seal: the open
// chunk c reached chunk.target_bytes in the middle of a record. It is held
// (counted in the budget as measured) until the record ends, and the
// record's rows go on in a new open chunk.
func (p *Pipeline) sealMidRecord(l *lane, c *chunk.Chunk, t *clickhouse.Target, filler *meta.Filler) *chunk.Chunk {
	if c != l.cur {
		return c
	}
	next, err := p.newChunk(t, l)
	if err != nil {
		return c // the schema's chunk was made before: cannot happen
	}
	from := 0
	if len(l.spill) == 0 {
		from = l.recStart
	}
	if filler != nil && l.rec != nil && l.metaErr == nil {
		// The record's metadata goes into the rows it leaves here; a
		// refusal is the record's (fillMeta returns it, and the rows
		// are taken back).
		if e := filler.Fill(l.rec, c, from); e != nil {
			l.metaErr = e
		}
	}
	c.MarkRecord(l.recOffset)
	l.spill, l.spillFrom = append(l.spill, c), append(l.spillFrom, from)
	l.spillCounted += l.curCounted
	l.curCounted = 0
	next.Dest = l.dest
	l.cur = next
	return next
}

// takeBackSpill takes back the rows of a record of many rows that failed
// after chunks were sealed in its middle: open(dest) is the open chunk of
// a destination (which holds rows of the record only, or is nil) and
// setOpen replaces it. The first chunk sealed for each destination,
// truncated to its rows before the record, is that destination's open
// chunk again; the others go back to the free list. The open chunks are
// counted again at their next measurement.
func (p *Pipeline) takeBackSpill(l *lane, open func(dest int) *chunk.Chunk, setOpen func(dest int, c *chunk.Chunk)) {
	for i, c := range l.spill {
		first := true
		for _, e := range l.spill[:i] {
			if e.Dest == c.Dest {
				first = false
				break
			}
		}
		if !first {
			c.Reset()
			p.chunks.put(c)
			continue
		}
		if cur := open(c.Dest); cur != nil {
			cur.Reset()
			p.chunks.put(cur)
		}
		c.Truncate(l.spillFrom[i])
		setOpen(c.Dest, c)
	}
	clear(l.spill)
	l.spill, l.spillFrom = l.spill[:0], l.spillFrom[:0]
	p.budget.Release(l.spillCounted)
	l.spillCounted = 0
}

// sealSpill seals a record of many rows sealed in its middle: its chunks
// and its last rows (the open chunk) go to the shard in order under one
// ack group, which covers the record's offsets once every one of them is
// durable. The first chunk also carries the spans of the records before
// it, acknowledged with it.
func (p *Pipeline) sealSpill(l *lane) bool {
	sealed := append(l.spill, l.cur)
	if l.cur.Rows == 0 {
		sealed = sealed[:len(sealed)-1]
		l.cur.Reset()
		p.chunks.put(l.cur)
	}
	l.cur, l.spill, l.spillFrom = nil, nil, l.spillFrom[:0]
	p.budget.Release(l.curCounted + l.spillCounted)
	l.curCounted, l.spillCounted = 0, 0
	g := &ackGroup{lane: l, tracker: p.tracker}
	g.addRange(l, l.spillFirst, l.spillNext)
	g.pending.Store(int32(len(sealed)))
	l.outstanding.Add(1) // the group; released when its last chunk is durable
	for _, c := range sealed {
		c.Owner = g
		p.seal(c)
	}
	l.backlog = append(l.backlog, sealed...)
	return p.sendBacklog(l)
}

// countOpen counts l's open chunk, of size bytes as just measured, in the
// budget: it counts as it grows (and shrinks, after a refused record), at
// each measurement, the decoder's within a record of many rows included,
// so a record's rows are in the budget as they are made, not from the
// seal.
func (p *Pipeline) countOpen(l *lane, size int64) {
	if d := size - l.curCounted; d > 0 {
		p.budget.Add(d)
	} else if d < 0 {
		p.budget.Release(-d)
	}
	l.curCounted = size
}

// countStage counts l's staging chunk, of size bytes as just measured, in
// the budget, as countOpen counts the open chunk.
func (p *Pipeline) countStage(l *lane, size int64) {
	if d := size - l.stageCounted; d > 0 {
		p.budget.Add(d)
	} else if d < 0 {
		p.budget.Release(-d)
	}
	l.stageCounted = size
}

// seal seals the open chunk; one that covers nothing (its only records
// were rejected, each acknowledged on its own) goes back to the free list,
// so the lane can be idle.
func (o *directOutputs) seal() bool {
	p, l := o.p, o.l
	if len(l.spill) > 0 {
		return p.sealSpill(l)
	}
	c := l.cur
	l.cur = nil
	// What was counted of the open chunk: sealSend counts all of it.
	p.budget.Release(l.curCounted)
	l.curCounted = 0
	if c == nil || len(c.Spans) == 0 {
		if c != nil {
			c.Reset()
			p.chunks.put(c)
		}
		p.eoClosed(l)
		return true
	}
	return p.sealSend(l, c)
}

// schemaPending is the error's wait for a schema, if it is one. Kept out
// of the record loop: the variable errors.As fills escapes, and would cost
// an allocation per record.
func schemaPending(err error) decode.SchemaPending {
	if err == nil {
		return nil
	}
	var pending decode.SchemaPending
	if errors.As(err, &pending) {
		return pending
	}
	return nil
}

// sealSend seals c and hands it to its shard. With exactly-once, c is an
// insert block: the records it holds leave the budget as the block enters
// it, and its range is registered before it is sent (eoSend).
func (p *Pipeline) sealSend(l *lane, c *chunk.Chunk) bool {
	if p.eo() {
		first, next := l.eo.curFirst, l.cursor
		p.eoClosed(l)
		p.seal(c)
		return p.eoSend(l, c, first, next)
	}
	p.seal(c)
	return p.send(l, c)
}

// reject handles a record that cannot be decoded under on_error skip or
// dlq: it is counted and logged, then acknowledged at once (skip) or once
// its dead-letter copy is acknowledged by the broker (dlq), so its offset
// commits only then. A dead-letter write that fails is retried with
// backoff (dlqretry.go) until it succeeds or the stop gives up on it; the
// record is never skipped and its offset never committed before.
func (p *Pipeline) reject(l *lane, r *kgo.Record, err error) {
	reason := p.countRejected(err)
	if p.rejectLog.Allow() {
		p.log.Warn("record cannot be decoded", "on_error", p.onError,
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", reason, "err", err)
	}
	tp, epoch, off := l.tp, l.epoch, r.Offset
	if p.onError == config.OnErrorSkip {
		p.tracker.Ack(tp, epoch, off, kafka.RecordEnd(r))
		return
	}
	l.outstanding.Add(1)
	p.deadLetter(&dlqRecord{l: l, r: r, reason: reason, cause: err})
}

// countRejected counts a record that cannot be decoded or transformed and
// returns its reason label.
func (p *Pipeline) countRejected(err error) string {
	reason := string(decode.ReasonCorrupt)
	var de *decode.Error
	if errors.As(err, &de) {
		reason = string(de.Reason)
	}
	p.m.decodeErrors.WithLabelValues(reason).Inc()
	p.prog.decodeErrs.Add(1)
	return reason
}

// stopAt stops the lane at r, a record that cannot be decoded or
// transformed under on_error fail, and the pipeline with it: nothing at or
// past r is committed.
func (p *Pipeline) stopAt(l *lane, r *kgo.Record, err error) {
	reason := p.countRejected(err)
	l.fail()
	p.log.Error("record cannot be decoded or transformed; not committing past it",
		"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", reason, "err", err)
	p.fail(fmt.Errorf("decode %s/%d offset %d: %w", r.Topic, r.Partition, r.Offset, err))
}

// newChunk returns an empty chunk for lane l, reusing an acknowledged one
// when it can. A chunk made new is given the capacity of the last full
// chunk of its schema when l holds a chunk's worth of undecoded records,
// and will fill it: a lane with a few records (of a thousand partitions,
// each with a trickle) keeps its chunk small.
func (p *Pipeline) newChunk(t *clickhouse.Target, l *lane) (*chunk.Chunk, error) {
	if c := p.chunks.get(t.Schema); c != nil {
		return c, nil
	}
	c, err := chunk.New(t.Schema)
	if err == nil && l != nil && p.chunkTarget > 0 && l.undecoded() >= int64(p.chunkTarget) {
		p.chunks.reserve(c)
	}
	return c, err
}

// seal counts a finished chunk against the budget and its rows as
// decoded (once per chunk, off the per-record path).
func (p *Pipeline) seal(c *chunk.Chunk) {
	size := c.Measure()
	if p.chunkTarget > 0 && size >= p.chunkTarget/2 && !p.eo() {
		// An exactly-once block, up to batch.max_bytes, is no model for
		// a new chunk.
		p.chunks.noteFull(c)
	}
	p.budget.Add(int64(size))
	p.prog.rowsDecoded.Add(int64(c.Rows))
}

// send hands a sealed chunk to the shard queue without blocking. When the
// queue is full, the chunk is parked, the lane blocks and its partition is
// paused; the shard's OnSpace wakes it.
func (p *Pipeline) send(l *lane, c *chunk.Chunk) bool {
	c.Owner = l
	// Counted before the hand-over: the sink may acknowledge at once.
	l.outstanding.Add(1)
	if p.enqueue(c) {
		return true
	}
	l.acked() // not handed over after all
	l.parked = c
	return p.blockOn(l, c.Dest, func() bool {
		l.outstanding.Add(1)
		if p.enqueue(c) {
			l.parked = nil
			return true
		}
		l.acked()
		return false
	})
}

// advance marks n of l's records as decoded, resuming its partition when
// the lane falls back under its read-ahead.
func (p *Pipeline) advance(l *lane, n int, bytes int64) {
	if l.advance(n, bytes) {
		p.yield(hookReadAhead, l)
		p.pause.refresh(l)
	}
}

// blockOn blocks l on dest (a shard whose queue refused a chunk, or
// blockedOnBlocks), pausing its partition if the pauser says so (waiting
// for open blocks, or no read-ahead), then calls retry once: the
// obstacle may have gone between the refusal and the block, and its
// wake-up would then be missed. When retry succeeds the block is undone and
// blockOn returns true.
func (p *Pipeline) blockOn(l *lane, dest int, retry func() bool) bool {
	p.yield(hookRefused, l)
	l.block(dest)
	p.pause.block(l, dest)
	p.yield(hookBlocked, l)
	if !retry() {
		p.yield(hookRetryFailed, l)
		return false
	}
	l.unblock()
	p.pause.unblock(l)
	return true
}

// wakeBlocked is the OnSpace of shard dest: the lanes its queue refused
// are rescheduled and their partitions resumed (unless the budget holds
// them). Lanes waiting for open blocks are woken by wakeBlockWaiters.
func (p *Pipeline) wakeBlocked(dest int) {
	for _, l := range p.pause.takeBlocked(dest) {
		if l.wake() {
			p.runq.push(l)
		}
	}
}
