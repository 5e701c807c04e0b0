package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/sink/clickhouse"
)

// The target table's columns are read at startup and again:
//   - every sink.clickhouse.describe_interval (ALTER TABLE under a running
//     pipeline),
//   - the first time an Avro or Protobuf schema id is served (a new writer schema often
//     comes with a new column), before any record of it is decoded,
//   - when an insert is refused because the table changed under it (the
//     shard's followTable calls refreshTarget through ShardOptions.Refresh,
//     refreshShard, then re-targets the batch at the columns left or
//     converts it to the new types).
//
// Each of these only signals; while the pipeline runs, every read goes
// through the describer (describer.go), one at a time. refreshTarget alone
// decides that the table changed (clickhouse.Diff: the live plan does not
// insert what the current one does), checks that records can fill it, and
// installs it. A changed table gets a new Target. Workers rebuild their
// decoders for it before the next lane they run, and seal the lane's open
// chunk first: a chunk is built for exactly one target, and the shard
// never mixes chunks of two targets in one insert. Chunks already built for
// the old target are inserted with it.

// boundDecoder is a worker's decoder with the target it fills chunks for
// (direct path) or the staging binding (staged path).
type boundDecoder struct {
	decode.Decoder
	target *clickhouse.Target
	staged *stagedBinding
	lane   *lane // the lane the direct path decodes for now (outputs)
	// meta fills the direct path's columns whose sources are a record's
	// metadata (_topic, _offset, ...); nil when there are none.
	meta *meta.Filler
}

// newDecoder returns a decoder filling chunks for target t.
func (p *Pipeline) newDecoder(t *clickhouse.Target) (decode.Decoder, error) {
	d, _, err := p.newDecoderMeasured(t, decode.RowLimits{})
	return d, err
}

// newDecoderMeasured is newDecoder whose JSON decoder tells hooks.Measured
// the chunk's size as a record's many rows are made, and seals it in the
// middle of a record through hooks.Seal (decode.RowLimits). The filler,
// nil when no column's source is a record's metadata, fills the columns
// the decoder leaves to it (meta.DecoderFields).
func (p *Pipeline) newDecoderMeasured(t *clickhouse.Target, hooks decode.RowLimits) (decode.Decoder, *meta.Filler, error) {
	filler, err := meta.CompileWith(t.Schema, t.Fields, p.metaOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("columns: %w", err)
	}
	srcs := t.Fields
	if t.Fields != nil {
		t = &clickhouse.Target{Schema: t.Schema, Fields: meta.DecoderFields(t.Fields)}
	}
	var d decode.Decoder
	switch p.cfg.Decode.Format {
	case config.FormatAvro:
		d, err = p.newAvroDecoder(t)
	case config.FormatProtobuf:
		d, err = p.newProtobufDecoder(t)
	case config.FormatRaw:
		d, err = newRawDecoder(t.Schema, srcs, int(p.cfg.Decode.MaxRecordBytes))
	default:
		lim := p.rowLimits()
		lim.Measured, lim.Seal, lim.SealBytes = hooks.Measured, hooks.Seal, hooks.SealBytes
		opts := json.Options{
			Fields: t.Fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes),
			Framing: p.cfg.Decode.JSON.Framing, TimeLayout: p.cfg.Decode.JSON.TimeLayout,
			Ranges: p.serverRanges(), Rows: lim,
		}
		if filler != nil {
			opts.Filled = filler.Columns()
		}
		d, err = json.New(t.Schema, opts)
		if err != nil {
			err = fmt.Errorf("decode: %w", err)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return d, filler, nil
}

// serverVersion is the oldest version among the servers whose version is
// known ("" when none answered yet).
func (p *Pipeline) serverVersion() string {
	oldest := ""
	for _, s := range p.sinks {
		for _, shard := range s.clients {
			for _, c := range shard {
				if v := c.ServerVersion(); v != "" && (oldest == "" || versionBefore(v, oldest)) {
					oldest = v
				}
			}
		}
	}
	return oldest
}

// versionBefore reports whether version a is older than b, comparing
// their dot-separated numbers.
func versionBefore(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// rowLimits bounds the rows one record makes (decode.max_rows_per_record,
// decode.max_bytes_per_record).
func (p *Pipeline) rowLimits() decode.RowLimits {
	return decode.RowLimits{MaxRows: p.cfg.Decode.MaxRowsPerRecord, MaxBytes: int(p.cfg.RowBytesPerRecord())}
}

// bind returns dec if it fills chunks for the current target, else a new
// decoder for it.
func (p *Pipeline) bind(dec *boundDecoder) (*boundDecoder, error) {
	if p.staged() {
		targets := p.currentTargets()
		if dec != nil && dec.staged != nil && sameTargets(dec.staged.targets, targets) {
			return dec, nil
		}
		return p.newStagedDecoder(targets)
	}
	t := p.sinks[0].target.Load()
	if dec != nil && dec.target == t {
		return dec, nil
	}
	b := &boundDecoder{target: t}
	hooks := decode.RowLimits{Measured: func(size int) {
		// The direct path decodes into the open chunk of the lane it runs.
		if l := b.lane; l != nil {
			p.countOpen(l, int64(size))
		}
	}}
	if !p.eo() {
		// An exactly-once block ends only between records (its range of
		// offsets is its identity): a record's rows stay in one.
		hooks.Seal = func(c *chunk.Chunk) *chunk.Chunk {
			if l := b.lane; l != nil {
				return p.sealMidRecord(l, c, b.target, b.meta)
			}
			return c
		}
		hooks.SealBytes = p.chunkTarget
	}
	d, filler, err := p.newDecoderMeasured(t, hooks)
	if err != nil {
		return nil, err
	}
	b.Decoder, b.meta = d, filler
	return b, nil
}

// newStagedDecoder compiles the chain for targets and the decoder that
// fills its staging chunks.
func (p *Pipeline) newStagedDecoder(targets []*clickhouse.Target) (*boundDecoder, error) {
	b, fields, err := p.compileStaged(targets)
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	bd := &boundDecoder{staged: b}
	// The staging chunk holds one record's rows: they count in the
	// budget as they are made, until the chain has run over them.
	d, filler, err := p.newDecoderMeasured(&clickhouse.Target{Schema: b.stage, Fields: fields}, decode.RowLimits{Measured: func(size int) {
		if l := bd.lane; l != nil {
			p.countStage(l, int64(size))
		}
	}})
	if err != nil {
		return nil, err
	}
	bd.Decoder, bd.meta = d, filler
	return bd, nil
}

// refreshTarget reads sink s's table and, when its columns changed,
// installs the new target. It returns the live table's target (even when
// records cannot fill it and the previous target stays in use). It runs
// as the describer's read of the tables (describer.reading): from the
// describer's goroutine (refreshAll) or for a shard (refreshShard).
func (p *Pipeline) refreshTarget(ctx context.Context, s *sinkState) (*clickhouse.Target, error) {
	cur := s.target.Load()
	live, err := s.plan(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: read the columns of %s again: %w", s.name, cur.Name(), err)
	}
	d := clickhouse.Diff(cur, live)
	if d.Same {
		return cur, nil
	}
	added, removed := d.AddedTypes(), d.RemovedTypes()
	if p.staged() {
		targets := p.currentTargets()
		for i := range p.sinks {
			if p.sinks[i] == s {
				targets[i] = live
			}
		}
		if _, err := p.newStagedDecoder(targets); err != nil {
			p.log.Error("the table's columns changed but records cannot fill them: keeping the previous columns",
				"sink", s.name, "table", cur.Name(), "added", added, "removed", removed, "err", err)
			return live, err
		}
	} else if s == p.sinks[0] {
		if _, err := p.newDecoder(live); err != nil {
			p.log.Error("the table's columns changed but records cannot fill them: keeping the previous columns",
				"sink", s.name, "table", cur.Name(), "added", added, "removed", removed, "err", err)
			return live, err
		}
	}
	for _, sh := range s.shards {
		sh.AddTarget(live)
	}
	s.target.Store(live)
	p.m.tableChanges.Inc()
	p.log.Info("the table's columns changed: following them", "sink", s.name, "table", live.Name(),
		"added", added, "removed", removed, "columns", live.Schema.Names)
	for _, w := range live.Warnings {
		p.log.Warn("column default", "sink", s.name, "table", live.Name(), "warning", w)
	}
	return live, nil
}

// refreshAll reads every sink's table; it returns the first error.
func (p *Pipeline) refreshAll(ctx context.Context) error {
	var first error
	for _, s := range p.sinks {
		if _, err := p.refreshTarget(ctx, s); err != nil && first == nil {
			first = err
		}
	}
	return first
}
