package pipeline

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/transform"
)

// The staged path serves pipelines whose rows cannot be decoded straight
// into one sink's chunks: transform steps, several sinks, or sharding by
// key. Each record is decoded into a one-record staging chunk holding the
// source fields the chain reads; the chain appends its rows to the lane's
// open output chunks, one per destination (sink and shard).
//
// Acknowledgements: every record belongs to exactly one ack group, the
// records decoded since the lane last sealed its outputs. When one output
// chunk is full, or the lane runs out of records, every open output chunk
// is sealed together with the group's source spans: the spans are
// acknowledged once every chunk of the group is durable, so a record's
// offset commits only when all rows made from it are in every sink they
// were routed to. A group whose records made no row is acknowledged at
// once.

// ackGroup is the source spans of a set of records and the number of
// output chunks holding their rows that are not yet durable.
type ackGroup struct {
	lane    *lane
	tracker *checkpoint.Tracker
	spans   []chunk.Span
	pending atomic.Int32
}

// Acked handles the acknowledgement of an output chunk of the group: once
// every chunk of the group is durable, its records' offsets are
// acknowledged and the lane's outstanding count drops.
func (g *ackGroup) Acked() {
	if g.pending.Add(-1) != 0 {
		return
	}
	for _, s := range g.spans {
		g.tracker.Ack(TopicPartition{Topic: s.Topic, Partition: s.Partition}, s.Epoch, s.First, s.Next)
	}
	g.lane.acked()
}

// Source names the partition of the group's records.
func (g *ackGroup) Source() (string, int32) { return g.lane.Source() }

// addRange records that offsets [first, next) of the lane are covered,
// extending the last span when contiguous.
func (g *ackGroup) addRange(l *lane, first, next int64) {
	if n := len(g.spans); n > 0 && g.spans[n-1].Next == first {
		g.spans[n-1].Next = next
		return
	}
	g.spans = append(g.spans, chunk.Span{Topic: l.tp.Topic, Partition: l.tp.Partition, Epoch: l.epoch, First: first, Next: next})
}

// staged reports whether the pipeline runs the staged path.
func (p *Pipeline) staged() bool {
	if len(p.cfg.Transform) > 0 || len(p.sinks) > 1 || p.cfg.CDC() {
		return true
	}
	for _, s := range p.sinks {
		if s.cfg.Sharding.By == "key" {
			return true
		}
	}
	return false
}

// stagedShared is the staging layout for one set of sink targets, shared
// by every worker so a lane's staging and output chunks stay valid when
// another worker runs it.
type stagedShared struct {
	stage   *chunk.Schema
	outs    []transform.Output
	targets []*clickhouse.Target // per sink
	// With decode.envelope: debezium, rows is the chain's input (the
	// rows the envelope makes) and stage the event's fields (env.Stage).
	rows *chunk.Schema
	env  *transform.Envelope
}

// stagedBinding is a worker's chain for a staging layout (a chain keeps
// per-record scratch space, so each worker has its own).
type stagedBinding struct {
	*stagedShared
	chain *transform.Chain
}

// compileStaged returns the worker's chain for the sinks' targets, sharing
// the staging layout with the other workers.
func (p *Pipeline) compileStaged(targets []*clickhouse.Target) (*stagedBinding, []string, error) {
	p.stagedMu.Lock()
	sh := p.stagedLayout
	p.stagedMu.Unlock()
	if sh == nil || !sameTargets(sh.targets, targets) {
		var err error
		if sh, err = p.stagedLayoutFor(targets); err != nil {
			return nil, nil, err
		}
		p.stagedMu.Lock()
		if p.stagedLayout == nil || !sameTargets(p.stagedLayout.targets, targets) {
			p.stagedLayout = sh
		} else {
			sh = p.stagedLayout
		}
		p.stagedMu.Unlock()
	}
	in := sh.stage
	if sh.env != nil {
		in = sh.rows
	}
	chain, err := transform.Compile(p.cfg.Transform, in, sh.outs)
	if err != nil {
		return nil, nil, err
	}
	if sh.env != nil {
		if err := chain.SetEnvelope(sh.env); err != nil {
			return nil, nil, err
		}
	}
	lim := p.rowLimits()
	if !p.eo() {
		// A flatten's rows seal into outputs of chunk.target_bytes
		// (emitter.Seal); an exactly-once block is a range of offsets,
		// and a record's rows stay in one.
		lim.SealBytes = p.chunkTarget
	}
	chain.Limit(lim)
	return &stagedBinding{stagedShared: sh, chain: chain}, sh.stage.Names, nil
}

// stagedLayoutFor computes the staging schema and the outputs for targets.
func (p *Pipeline) stagedLayoutFor(targets []*clickhouse.Target) (*stagedShared, error) {
	outs := make([]transform.Output, len(p.sinks))
	for i, s := range p.sinks {
		t := targets[i]
		o := transform.Output{Name: s.name, Schema: t.Schema, Fields: t.Fields, ShardKey: -1, Weights: s.weights, Ranges: p.serverRanges()}
		if s.cfg.Sharding.By == "key" {
			o.ShardKey = -1
			for j, n := range t.Schema.Names {
				if n == s.cfg.Sharding.Column {
					o.ShardKey = j
				}
			}
			if o.ShardKey < 0 {
				return nil, fmt.Errorf("sink %s: sharding.column %q is not a column %s inserts (%v)", s.name, s.cfg.Sharding.Column, t.Name(), t.Schema.Names)
			}
		}
		outs[i] = o
	}
	if p.cfg.CDC() {
		return cdcLayout(p.cfg, outs, targets, meta.WithTypes(p.schemas.Types(), p.cfg.ExprKeyFields()...))
	}
	stage, err := transform.InputsKnown(p.cfg.Transform, outs, p.cfg.Decode.Fields, meta.WithTypes(p.schemas.Types(), p.cfg.ExprKeyFields()...))
	if err != nil {
		return nil, err
	}
	return &stagedShared{stage: stage, outs: outs, targets: targets}, nil
}

// currentTargets is every sink's current target.
func (p *Pipeline) currentTargets() []*clickhouse.Target {
	out := make([]*clickhouse.Target, len(p.sinks))
	for i, s := range p.sinks {
		out[i] = s.target.Load()
	}
	return out
}

// sameTargets reports whether a and b are the same targets.
func sameTargets(a, b []*clickhouse.Target) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// emitter hands the chain the lane's open output chunk of a destination.
type emitter struct {
	p   *Pipeline
	l   *lane
	b   *stagedBinding
	o   *stagedOut
	err error
}

// Seal implements transform.Sealer: an output that reached
// chunk.target_bytes in the middle of a flatten is sealed and held with
// the record's other chunks (stagedOut.spillOut), and the sink's next
// rows go into a new output.
func (e *emitter) Seal(sink, shard int, c *chunk.Chunk) *chunk.Chunk {
	if e.o == nil || e.p.eo() || e.l.outs[c.Dest] != c {
		return c
	}
	e.o.spillOut(c.Dest)
	return e.Chunk(sink, shard)
}

func (e *emitter) Chunk(sink, shard int) *chunk.Chunk {
	s := e.p.sinks[sink]
	if shard < 0 {
		shard = s.shardOfPartition(e.l.tp.Partition)
	}
	dest := s.dest0 + shard
	if c := e.l.outs[dest]; c != nil {
		return c
	}
	c, err := e.p.newChunk(e.b.targets[sink], e.l)
	if err != nil {
		// Not reachable: the targets' schemas were built once already.
		e.err = err
		c, _ = chunk.New(e.b.targets[sink].Schema)
	}
	c.Dest = dest
	e.l.outs[dest] = c
	return c
}

// stagedOut is the staged path's outputs: the lane's open output chunk
// per destination (lane.outs) and the ack group of the records they hold
// (lane.group).
type stagedOut struct {
	p     *Pipeline
	l     *lane
	dec   *boundDecoder
	em    emitter
	marks []int // each output's rows before the current record
	sizes []int // each output's measured size before the current record, when measured
	lim   decode.RowLimits
	// The current record's rows and bytes in outputs sealed in its
	// middle (lane.spill), and its offset.
	spillRows, spillBytes int
	off                   int64
}

// stagedOutputs returns the staged outputs of l for the binding of b.
func (p *Pipeline) stagedOutputs(l *lane, b *boundDecoder) *stagedOut {
	if l.outs == nil || len(l.outs) != len(p.dests) {
		l.outs = make([]*chunk.Chunk, len(p.dests))
	}
	o := &stagedOut{p: p, l: l, dec: b, marks: make([]int, len(l.outs)), sizes: make([]int, len(l.outs)), lim: p.rowLimits()}
	o.em = emitter{p: p, l: l, b: b.staged, o: o}
	return o
}

func (o *stagedOut) resume() bool {
	p, l := o.p, o.l
	if !p.sendBacklog(l) {
		return false
	}
	if l.eo.sealPending && !p.sealOutputs(l) {
		return false // still no room among the open blocks
	}
	b := o.dec.staged
	if l.binding != b.stagedShared {
		// The tables changed: what was built for the old columns goes out
		// as built.
		if !p.sealOutputs(l) {
			return false
		}
		l.binding = b.stagedShared
		st, err := chunk.New(b.stage)
		if err != nil {
			p.fail(err)
			return false
		}
		l.stage = st
	}
	return true
}

func (o *stagedOut) add(r *kgo.Record) error {
	p, l := o.p, o.l
	defer o.doneStage()
	l.stage.Reset()
	if r.Value == nil && o.dec.staged.env != nil && !p.tombstones {
		// The tombstone after a delete: nothing to write.
		p.m.cdcTombstones.Inc()
		return nil
	}
	var err error
	if o.dec.meta.DecodesKey() {
		err = o.dec.meta.DecodeKey(r)
	}
	if err == nil && (r.Value != nil || !p.appendTombstone(l.stage)) {
		_, err = o.dec.Decode(r.Value, l.stage)
	}
	if err == nil && o.dec.meta != nil {
		// The staging rows are the record's only: its metadata fills
		// them all, for the chain to read like fields.
		// (Fill's *decode.Error: nil must stay a nil error.)
		if e := o.dec.meta.Fill(r, l.stage, 0); e != nil {
			err = e
		}
	}
	if err != nil {
		if schemaPending(err) == nil {
			p.m.transformIn.Inc()
		}
		return err
	}
	p.m.transformIn.Inc()
	// An output the record opens starts empty: on an error it is
	// truncated to 0 rows like any other.
	for i, c := range l.outs {
		o.marks[i] = 0
		if c != nil {
			o.marks[i] = c.Rows
		}
	}
	// A record of several staging rows (ndjson lines, array elements) is
	// bounded as a whole: the chain bounds each row's flatten.
	multi := l.stage.Rows > 1 && (o.lim.MaxRows > 0 || o.lim.MaxBytes > 0)
	o.spillRows, o.spillBytes, o.off = 0, 0, r.Offset
	for i, c := range l.outs {
		o.sizes[i] = 0
		if c != nil && multi && o.lim.MaxBytes > 0 {
			o.sizes[i] = c.Measure()
		}
	}
	o.dec.staged.chain.SetTopic(r.Topic)
	o.dec.staged.chain.SetOffset(r.Offset)
	for row := 0; row < l.stage.Rows && err == nil; row++ {
		var res transform.Result
		res, err = o.dec.staged.chain.Run(l.stage, row, &o.em)
		if res.Skipped != "" {
			p.cdcSkipped(res.Skipped, r)
		}
		p.m.transformOut.Add(float64(res.Out))
		p.m.transformDropped.Add(float64(res.Dropped))
		if multi && err == nil {
			measure := row+1 == l.stage.Rows || (row+1)%decode.RowBytesEvery == 0
			if e := o.bound(measure); e != nil {
				err = e
			} else if measure && o.lim.MaxBytes > 0 && row+1 < l.stage.Rows && !p.eo() {
				o.sealFull()
			}
		}
	}
	if o.em.err != nil {
		return &fatalError{o.em.err}
	}
	if err != nil {
		// Undo the rows of the record's earlier staging rows.
		for i, c := range l.outs {
			if c != nil && c.Rows > o.marks[i] {
				c.Truncate(o.marks[i])
			}
		}
		if len(l.spill) > 0 {
			p.takeBackSpill(l, func(dest int) *chunk.Chunk { return l.outs[dest] }, func(dest int, c *chunk.Chunk) { l.outs[dest] = c })
		}
		var te *transform.Error
		if errors.As(err, &te) {
			p.m.transformErrors.WithLabelValues(te.Reason).Inc()
			err = &decode.Error{Reason: decode.Reason(te.Reason), Err: err}
		}
		return err
	}
	for _, c := range l.outs {
		if c != nil {
			c.MarkRecord(r.Offset)
		}
	}
	return nil
}

// doneStage ends the record's use of the staging chunk: what it counted
// in the budget leaves it, and a staging chunk that a record of many rows
// grew past chunk.target_bytes is let go rather than kept at that size.
func (o *stagedOut) doneStage() {
	p, l := o.p, o.l
	if l.stageCounted == 0 {
		return
	}
	if l.stageCounted > int64(p.chunkTarget) {
		if st, err := chunk.New(l.stage.Schema); err == nil {
			l.stage = st
		}
	}
	p.budget.Release(l.stageCounted)
	l.stageCounted = 0
}

// bound checks the rows the current record made so far, summed over the
// outputs (a row fanned out to two sinks counts twice), against the row
// limits; measure: check their bytes too.
func (o *stagedOut) bound(measure bool) *decode.Error {
	rows := 0
	for i, c := range o.l.outs {
		if c != nil {
			rows += c.Rows - o.marks[i]
		}
	}
	rows += o.spillRows
	if o.lim.MaxRows > 0 && rows > o.lim.MaxRows {
		return decode.TooManyRows(rows, o.lim.MaxRows)
	}
	if !measure || o.lim.MaxBytes <= 0 {
		return nil
	}
	size := o.spillBytes
	for i, c := range o.l.outs {
		if c != nil {
			size += c.Measure() - o.sizes[i]
		}
	}
	if size > o.lim.MaxBytes {
		return decode.RowsTooLarge(rows, size, o.lim.MaxBytes)
	}
	return nil
}

// sealFull seals, in the middle of the record, between its staging rows,
// the outputs that reached chunk.target_bytes (as bound just measured
// them).
func (o *stagedOut) sealFull() {
	for i, c := range o.l.outs {
		if c != nil && c.Size() >= o.p.chunkTarget && c.Rows > o.marks[i] {
			o.spillOut(i)
		}
	}
}

// spillOut seals output dest (just measured) in the middle of the
// record: it is held in lane.spill, counted in the budget, until the
// record ends and it goes out with it (or its rows are taken back), and
// the record's next rows for dest go into a new output.
func (o *stagedOut) spillOut(dest int) {
	p, l := o.p, o.l
	c := l.outs[dest]
	o.spillRows += c.Rows - o.marks[dest]
	o.spillBytes += c.Size() - o.sizes[dest]
	c.MarkRecord(o.off)
	l.spill, l.spillFrom = append(l.spill, c), append(l.spillFrom, o.marks[dest])
	p.budget.Add(int64(c.Size()))
	l.spillCounted += int64(c.Size())
	l.outs[dest] = nil
	o.marks[dest], o.sizes[dest] = 0, 0
}

func (o *stagedOut) cover(first, next, ms int64) {
	l := o.l
	if l.group == nil {
		l.group = &ackGroup{lane: l, tracker: o.p.tracker}
	}
	if next > first {
		l.group.addRange(l, first, next)
	}
	if ms >= 0 {
		for _, c := range l.outs {
			if c != nil {
				c.NoteTime(ms)
			}
		}
		for _, c := range l.spill {
			c.NoteTime(ms)
		}
	}
}

// full measures the outputs, counts them in the budget as they grow, and
// reports whether one reached its size (or a record was sealed in its
// middle: it goes out as it ends).
func (o *stagedOut) full() bool {
	p := o.p
	full := len(o.l.spill) > 0
	size := 0
	for _, c := range o.l.outs {
		if c == nil {
			continue
		}
		if p.eo() {
			full = p.eoFull(c) || full
		} else {
			full = c.Measure() >= p.chunkTarget || full
		}
		size += c.Size()
	}
	p.countOpen(o.l, int64(size))
	return full
}

func (o *stagedOut) seal() bool { return o.p.sealOutputs(o.l) }

// sealOutputs seals the lane's open output chunks with its ack group and
// hands them to their shards. It returns false when a queue refused one:
// the rest wait in the lane's backlog and the lane blocks.
func (p *Pipeline) sealOutputs(l *lane) bool {
	if p.eo() && l.group != nil {
		// Wait for room among the partition's open blocks first: the
		// outputs stay open, their records held, until there is.
		first, next := l.eo.curFirst, l.cursor
		room := func() bool {
			return p.tracker.BlockRoom(l.tp, l.epoch, first, next, p.cfg.Checkpoint.MaxOpenBlocks)
		}
		l.eo.sealPending = true
		if !room() && !p.blockOn(l, blockedOnBlocks, room) {
			return false
		}
		l.eo.sealPending = false
	}
	g := l.group
	l.group = nil
	if p.eo() && g != nil {
		// The group is one insert block per destination: register its
		// range before any of them may reach ClickHouse.
		first, next := l.eo.curFirst, l.cursor
		p.eoClosed(l)
		if !p.eoRegister(l, first, next) {
			for i, c := range l.outs {
				if c != nil {
					l.outs[i] = nil
					c.Reset()
					p.chunks.put(c)
				}
			}
			p.budget.Release(l.curCounted)
			l.curCounted = 0
			return false
		}
	}
	// What was counted of the open outputs and of those sealed in the
	// middle of a record: p.seal counts each sealed chunk whole.
	p.budget.Release(l.curCounted + l.spillCounted)
	l.curCounted, l.spillCounted = 0, 0
	sealed := l.spill
	l.spill, l.spillFrom = nil, l.spillFrom[:0]
	for i, c := range l.outs {
		if c == nil {
			continue
		}
		l.outs[i] = nil
		if c.Rows == 0 {
			c.Reset()
			p.chunks.put(c)
			continue
		}
		sealed = append(sealed, c)
	}
	if g == nil {
		// No record since the last seal (rows cannot exist without one).
		return p.sendBacklog(l)
	}
	if len(sealed) == 0 {
		// Every record was filtered out or rejected: done at once.
		for _, s := range g.spans {
			p.tracker.Ack(TopicPartition{Topic: s.Topic, Partition: s.Partition}, s.Epoch, s.First, s.Next)
		}
		return p.sendBacklog(l)
	}
	g.pending.Store(int32(len(sealed)))
	l.outstanding.Add(1) // the group; released when its last chunk is durable
	for _, c := range sealed {
		c.Owner = g
		p.seal(c)
	}
	l.backlog = append(l.backlog, sealed...)
	return p.sendBacklog(l)
}

// sendBacklog hands the lane's sealed chunks to their shards in order,
// without blocking. When a queue refuses one, the lane blocks and its
// partition pauses; OnSpace wakes it and the next run sends the rest.
func (p *Pipeline) sendBacklog(l *lane) bool {
	sent := func() bool {
		if !p.enqueue(l.backlog[0]) {
			return false
		}
		l.backlog[0] = nil
		l.backlog = l.backlog[1:]
		return true
	}
	for len(l.backlog) > 0 {
		if !sent() && !p.blockOn(l, l.backlog[0].Dest, sent) {
			return false
		}
	}
	l.backlog = nil
	return true
}
