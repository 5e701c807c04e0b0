package transform

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// Output is one sink the chain writes to.
type Output struct {
	// Name is the sink's name, as route steps name it.
	Name string
	// Schema is the sink's columns, in insert order.
	Schema *chunk.Schema
	// Fields[i] is the row field (after renames and sets) feeding Schema
	// column i; "" gives the column its type's zero value.
	Fields []string
	// ShardKey is the index of the column whose value picks the shard, or
	// -1.
	ShardKey int
	// Weights are the shard weights (len = shard count; may be 1).
	Weights []int
	// Ranges are the Date and DateTime ranges of the sink's server
	// (chunk.RangesFor its version); the zero value is the narrower range
	// every server reads back. Computed values into Date and DateTime
	// columns are held to the narrowest of every output's.
	Ranges chunk.ServerRanges
}

// Emitter gives the chunk a row of a sink (and shard) goes into. During
// one Run it must return the same chunk for the same sink and shard: the
// chain truncates the chunks it appended to when the record fails. shard
// is -1 when the output has no ShardKey (the caller decides).
type Emitter interface {
	Chunk(sink, shard int) *chunk.Chunk
}

// Sealer is an Emitter that takes chunks sealed in the middle of a
// flatten: when a measurement of the flatten's rows (every
// decode.RowBytesEvery elements, with a RowLimits.SealBytes set) finds a
// chunk the flatten appended to at SealBytes or more, Seal is given it
// and returns the chunk the sink's (and shard's) next rows go into; the
// rows already made stay in the sealed chunk, which the Sealer holds and
// takes back if the record fails (Run takes back only the rows of the
// chunks it holds then). Returning c means no seal.
type Sealer interface {
	Seal(sink, shard int, c *chunk.Chunk) *chunk.Chunk
}

// Result counts what Run did with one record.
type Result struct {
	// Out is the number of rows appended, summed over sinks (a row fanned
	// out to two sinks counts twice).
	Out int
	// Dropped is the number of rows a filter dropped or a route skipped
	// (a record dropped before its flatten counts as one row).
	Dropped int
	// Skipped is why the envelope step made no row of the record (an
	// operation it does not apply: SkipTruncate, SkipMessage,
	// SkipUnknownOp), or "".
	Skipped string
}

// Chain is a compiled transform chain. It is not safe for concurrent use:
// each worker uses its own Clone.
type Chain struct {
	p *program
	r *rt
}

// program is the immutable compiled chain.
type program struct {
	in       *chunk.Schema
	inCanon  []string
	binds    []binding
	ncols    int
	nslots   int
	pre      []op
	post     []op
	flatten  bool
	flatCols []int
	flatPath string
	outs     []*outPlan
	lim      decode.RowLimits // rows one flatten makes (Limit)
	env      *Envelope        // the envelope step, run first (SetEnvelope)
}

// binding puts a staging column (or its Array's Inner, or its Nullable's
// Inner) at r.cols[slot] for each record.
type binding struct {
	slot, col   int
	elem, inner bool
}

// op is one filter, set assignment or route; false means the row is
// dropped (or failed, when r.err is set).
type op struct {
	path string
	run  func(r *rt) bool
}

type outPlan struct {
	name    string
	cols    []appender
	key     int
	hash    func(chunk.Column, int) uint64
	keyType *chunk.Type
	weights []int
	// src[ci] is the staging column output column ci copies a source
	// field from (-1 for a derived field or an element of the flattened
	// arrays): a record that lacked the field leaves the column at its
	// default, which the output chunk counts (chunk.Chunk.Absent).
	src []int
}

// Limit bounds the rows the flatten step makes of one staging row: more
// elements than lim.MaxRows, or output rows of more than lim.MaxBytes
// (summed over the chunks they go to, measured every
// decode.RowBytesEvery elements and at the end), fail the record as
// ReasonTooLarge. It must be called before the chain is cloned or run;
// clones share it.
func (c *Chain) Limit(lim decode.RowLimits) { c.p.lim = lim }

// SetEnvelope makes the envelope step the chain's first: Run then takes
// staging rows of the envelope's Stage schema, and runs the rest of the
// chain over each row the envelope makes of them. The chain must have
// been compiled for the envelope's row schema. It must be called before
// the chain is cloned or run; clones share it.
func (c *Chain) SetEnvelope(e *Envelope) error {
	if err := c.p.checkSchema(e.rows); err != nil {
		return fmt.Errorf("the envelope's rows: %w", err)
	}
	c.p.env = e
	c.r.env = e.newRT()
	return nil
}

// Clone returns a chain sharing c's compiled program with its own run-time
// state, for another goroutine.
func (c *Chain) Clone() *Chain { return &Chain{p: c.p, r: newRT(c.p)} }

func newRT(p *program) *rt {
	r := &rt{
		cols:  make([]chunk.Column, p.ncols),
		slots: make([]slot, p.nslots),
		sink:  -1,
		keys:  make([]chunk.Column, len(p.outs)),
	}
	for i, o := range p.outs {
		if o.key >= 0 {
			r.keys[i], _ = chunk.NewColumn(o.keyType)
		}
	}
	if p.env != nil {
		r.env = p.env.newRT()
	}
	return r
}

// SetTopic sets the Kafka topic of the record the next Runs are for: the
// topic route rules compare (config.RouteRule.Topic).
func (c *Chain) SetTopic(topic string) { c.r.topic = topic }

// SetOffset sets the Kafka offset of the record the next Runs are for:
// the envelope's ts_ms version breaks ties with it.
func (c *Chain) SetOffset(offset int64) { c.r.offset = offset }

// Run applies the chain to staging row row of in and appends the output
// rows through e. On error (a value out of range for its column, a
// run-time expression error, a row no route rule matched with `unmatched:
// fail`) it truncates every chunk it appended to for this record and
// returns an *Error. in must be a chunk of the staging schema the chain
// was compiled for, or of the envelope's Stage schema.
func (c *Chain) Run(in *chunk.Chunk, row int, e Emitter) (Result, error) {
	c.r.touched = c.r.touched[:0]
	if c.p.env != nil {
		return c.runEnvelope(in, row, e)
	}
	return c.run(in, row, e)
}

// runEnvelope runs the envelope step over staging row row of in, then the
// chain over each row it made. A row that fails takes back every row of
// the record.
func (c *Chain) runEnvelope(in *chunk.Chunk, row int, e Emitter) (Result, error) {
	r := c.r
	skip, err := c.p.env.fill(r.env, in, row, r.offset)
	if err != nil {
		return Result{}, err
	}
	if skip != "" {
		return Result{Skipped: skip}, nil
	}
	var res Result
	rows := r.env.rows
	for k := 0; k < rows.Rows; k++ {
		one, err := c.run(rows, k, e)
		if err != nil {
			return Result{}, err
		}
		res.Out += one.Out
		res.Dropped += one.Dropped
	}
	return res, nil
}

// run applies the chain to staging row row of in; r.touched holds the
// chunks the record appended to so far.
func (c *Chain) run(in *chunk.Chunk, row int, e Emitter) (Result, error) {
	p, r := c.p, c.r
	if in.Schema != p.in && in.Schema != r.schemaOK {
		if err := p.checkSchema(in.Schema); err != nil {
			return Result{}, err
		}
		r.schemaOK = in.Schema
	}
	r.in = in
	r.at = [2]int{row, 0}
	r.scratch = r.scratch[:0]
	r.err = nil
	r.sink = -1
	r.resetJSON()
	r.measure = false
	r.sealed = 0
	for _, b := range p.binds {
		col := in.Cols[b.col]
		if b.elem {
			col = col.(*chunk.Array).Inner
		}
		if b.inner {
			col = col.(*chunk.Nullable).Inner
		}
		r.cols[b.slot] = col
	}
	var res Result
	if !c.ops(p.pre) {
		if r.err != nil {
			return c.abort()
		}
		res.Dropped = 1
		return res, nil
	}
	if !p.flatten {
		if !c.emit(e, &res) {
			return c.abort()
		}
		return res, nil
	}
	start, end, ok := p.bounds(in, row)
	if !ok {
		r.fail(ReasonOutOfRange, p.flatPath, errors.New("the arrays of the flattened field have different lengths"))
		return c.abort()
	}
	if lim := p.lim.MaxRows; lim > 0 && end-start > lim {
		r.fail(ReasonTooLarge, p.flatPath, fmt.Errorf(
			"flattens %d elements into as many rows, over the limit of %d rows per record (decode.max_rows_per_record)", end-start, lim))
		return c.abort()
	}
	sealer, _ := e.(Sealer)
	if p.lim.SealBytes <= 0 {
		sealer = nil
	}
	r.measure = (p.lim.MaxBytes > 0 || sealer != nil) && end-start >= decode.RowBytesEvery
	mark, sink := len(r.scratch), r.sink
	for j := start; j < end; j++ {
		if r.measure && j > start && (j-start)%decode.RowBytesEvery == 0 {
			if !c.rowBytes(j - start) {
				return c.abort()
			}
			if sealer != nil {
				c.seal(sealer)
			}
		}
		r.at[1] = j
		r.scratch = r.scratch[:mark]
		r.sink = sink
		if r.jparsed {
			r.forgetJSONAbove(mark)
		}
		if !c.ops(p.post) {
			if r.err != nil {
				return c.abort()
			}
			res.Dropped++
			continue
		}
		if !c.emit(e, &res) {
			return c.abort()
		}
	}
	if r.measure && !c.rowBytes(end-start) {
		return c.abort()
	}
	return res, nil
}

// rowBytes checks the bytes of the rows the flatten made so far (of n
// elements) against the limit.
func (c *Chain) rowBytes(n int) bool {
	r, lim := c.r, c.p.lim.MaxBytes
	size := r.sealed
	for _, t := range r.touched {
		size += t.ch.Measure() - t.size
	}
	if lim > 0 && size > lim {
		r.fail(ReasonTooLarge, c.p.flatPath, fmt.Errorf(
			"the rows of %d elements take %d bytes, over the limit of %d bytes per record (decode.max_bytes_per_record)", n, size, lim))
		return false
	}
	return true
}

// seal hands the chunks the flatten appended to that reached
// lim.SealBytes (as rowBytes just measured them) to s, and goes on in the
// chunks it returns.
func (c *Chain) seal(s Sealer) {
	r := c.r
	for i := range r.touched {
		t := &r.touched[i]
		if t.ch.Size() < c.p.lim.SealBytes || t.ch.Rows == t.rows {
			continue
		}
		next := s.Seal(t.sink, t.shard, t.ch)
		if next == t.ch {
			continue
		}
		r.sealed += t.ch.Size() - t.size
		t.ch, t.rows, t.size = next, next.Rows, next.Measure()
	}
}

// forgetJSONAbove forgets the cached JSON document when its source string
// lies in the part of the scratch that is about to be reused.
func (r *rt) forgetJSONAbove(mark int) {
	if !r.jparsed || r.jsrc == nil || cap(r.scratch) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.scratch[:1])))
	p := uintptr(unsafe.Pointer(r.jsrc))
	if p >= base+uintptr(mark) && p < base+uintptr(cap(r.scratch)) {
		r.resetJSON()
	}
}

func (c *Chain) ops(ops []op) bool {
	r := c.r
	for i := range ops {
		if !ops[i].run(r) || r.err != nil {
			if r.err != nil && r.err.Step == "" {
				r.err.Step = ops[i].path
			}
			return false
		}
	}
	return true
}

func (c *Chain) emit(e Emitter, res *Result) bool {
	if c.r.sink >= 0 {
		return c.emitTo(c.r.sink, e, res)
	}
	for i := range c.p.outs {
		if !c.emitTo(i, e, res) {
			return false
		}
	}
	return true
}

func (c *Chain) emitTo(oi int, e Emitter, res *Result) bool {
	o, r := c.p.outs[oi], c.r
	shard := -1
	var key chunk.Column
	if o.key >= 0 {
		key = r.keys[oi]
		key.Truncate(0)
		o.cols[o.key](r, key)
		if r.err != nil {
			return false
		}
		shard = ShardOf(o.hash(key, 0), o.weights)
	}
	ch := c.chunkFor(oi, shard, e)
	if ch == nil {
		return false
	}
	cols := ch.Cols[:len(o.cols)]
	if o.key < 0 {
		for ci, app := range o.cols {
			app(r, cols[ci])
		}
	} else {
		for ci, app := range o.cols {
			if ci == o.key {
				cols[ci].AppendFrom(key, 0)
				continue
			}
			app(r, cols[ci])
		}
	}
	if r.err != nil {
		return false
	}
	if a := r.in.Absent; len(a) > 0 {
		// The staging chunk holds one record's rows: a field every one
		// of them lacked is absent from this row too.
		for ci, sc := range o.src {
			if sc >= 0 && int(a[sc]) >= r.in.Rows {
				ch.MarkAbsent(ci)
			}
		}
	}
	ch.Rows++
	res.Out++
	return true
}

func (c *Chain) chunkFor(oi, shard int, e Emitter) *chunk.Chunk {
	r := c.r
	if n := len(r.touched); n > 0 {
		if t := &r.touched[n-1]; t.sink == oi && t.shard == shard {
			return t.ch
		}
	}
	for i := range r.touched {
		if t := &r.touched[i]; t.sink == oi && t.shard == shard {
			return t.ch
		}
	}
	ch := e.Chunk(oi, shard)
	if ch == nil || len(ch.Cols) != len(c.p.outs[oi].cols) {
		r.fail(ReasonTransform, fmt.Sprintf("sink %q", c.p.outs[oi].name),
			errors.New("the emitter gave no chunk or a chunk of another schema"))
		return nil
	}
	t := touched{sink: oi, shard: shard, ch: ch, rows: ch.Rows}
	if r.measure {
		t.size = ch.Measure()
	}
	r.touched = append(r.touched, t)
	return ch
}

func (c *Chain) abort() (Result, error) {
	r := c.r
	for _, t := range r.touched {
		t.ch.Truncate(t.rows)
	}
	r.touched = r.touched[:0]
	err := r.err
	r.err = nil
	return Result{}, err
}

// bounds returns the range of the current record's elements in the Inner
// columns of the flattened arrays.
func (p *program) bounds(in *chunk.Chunk, row int) (start, end int, ok bool) {
	for i, k := range p.flatCols {
		a := in.Cols[k].(*chunk.Array)
		s := 0
		if row > 0 {
			s = a.Ends[row-1]
		}
		if i == 0 {
			start, end = s, a.Ends[row]
		} else if s != start || a.Ends[row] != end {
			return 0, 0, false
		}
	}
	return start, end, true
}

// checkSchema accepts a staging schema spelled like the one compiled for.
func (p *program) checkSchema(s *chunk.Schema) error {
	if s != nil && len(s.Types) == len(p.inCanon) {
		ok := true
		for i, t := range s.Types {
			if canon(t) != p.inCanon[i] || s.Names[i] != p.in.Names[i] {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
	return errors.New("transform: the staging chunk's schema is not the one the chain was compiled for")
}
