package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/internal/loglimit"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// The parts of a run that are built before it consumes: the Avro schemas,
// the sinks (their replicas' clients, their tables read and planned, the
// shard workers), the decoders and the transform chain bound to the
// tables, the dead-letter producer. New builds a Pipeline on them; the
// operator commands (package inspect) build them alone, with OpenParts,
// through the same functions.

// newBase checks cfg (Preflight) and returns a Pipeline with its
// configuration, log, metrics, checkpoint tracker and byte budget, and
// nothing connected.
func newBase(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (*Pipeline, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := Preflight(cfg); err != nil {
		return nil, err
	}
	p := &Pipeline{
		cfg:         cfg,
		log:         log,
		tracker:     checkpoint.NewTracker(),
		runq:        newRunQueue(),
		acks:        newAckQueue(),
		lanes:       map[TopicPartition]*lane{},
		failc:       make(chan error, 1),
		chunkTarget: int(cfg.Chunk.TargetBytes),
		workers:     cfg.Pipeline.Workers,
		onError:     cfg.Decode.OnError,
		exactlyOnce: cfg.Delivery == config.ExactlyOnce,
		tombstones:  cfg.Tombstones(),
		stopWaiters: make(chan struct{}),
		rejectLog:   loglimit.New(10, 10*time.Second),
		dlqLog:      loglimit.New(1, 10*time.Second),
		m:           newComponentMetrics(components(reg, cfg.Pipeline.Name)),
		component:   components(reg, cfg.Pipeline.Name),
		schemas:     &fields.Schemas{},
		releaseIdle: debug.FreeOSMemory,
	}
	p.commits = newCommitter(p)
	var describeEvery, describeTimeout time.Duration
	if ch := cfg.Sink.ClickHouse; ch != nil {
		describeEvery, describeTimeout = ch.DescribeInterval.D(), ch.DialTimeout.D()+10*time.Second
	}
	p.desc = newDescriber(describeEvery, describeTimeout, log, p.readTables, p.addsColumns)
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	budgetBytes := int64(cfg.Backpressure.MaxInflightBytes)
	sizings, minimum := budgetSizing(cfg)
	if budgetBytes == 0 {
		budgetBytes = minimum
		log.Info("in-flight byte budget derived from the sizing rule", "max_inflight_bytes", budgetBytes)
	} else if budgetBytes < minimum {
		args := []any{"max_inflight_bytes", budgetBytes, "minimum", minimum, "low_ratio", cfg.Backpressure.LowRatio}
		for _, sz := range sizings {
			args = append(args, slog.Group("sink."+sz.name, "shards", sz.Shards, "inflight.max_per_shard", sz.MaxInflightPerShard,
				"batch.max_bytes", sz.BatchMaxBytes, "queue_capacity", sz.QueueCapacity, "minimum", sz.MinBudget()))
		}
		log.Warn("backpressure.max_inflight_bytes is below the sizing rule: a saturated pipeline will spend its time paused", args...)
	}
	var err error
	p.budget, err = backpressure.New(backpressure.Options{
		Bytes: budgetBytes, HighRatio: cfg.Backpressure.HighRatio, LowRatio: cfg.Backpressure.LowRatio,
		MinPause: cfg.Backpressure.MinPause.D(), Registerer: p.component("backpressure"),
	})
	if err != nil {
		return nil, fmt.Errorf("backpressure: %w", err)
	}
	p.chunks.max = freeChunks(budgetBytes, int64(cfg.Chunk.TargetBytes))
	return p, nil
}

// openParts loads the Avro schemas (sink.clickhouse.schema derives the
// tables from them) and opens every sink as plan says.
func (p *Pipeline) openParts(ctx context.Context, plan sinkPlan) error {
	switch p.cfg.Decode.Format {
	case config.FormatAvro:
		if err := p.setupAvro(ctx); err != nil {
			return err
		}
	case config.FormatProtobuf:
		if err := p.setupProtobuf(ctx); err != nil {
			return err
		}
	}
	return p.openSinks(ctx, plan)
}

// checkBind checks once that the decoder (and the chain) can fill every
// column.
func (p *Pipeline) checkBind() error {
	if _, err := p.bind(nil); err != nil {
		// The configuration does not fit the tables: a mistake to fix,
		// not an outage to wait out.
		return &ConfigError{Errs: []error{err}}
	}
	return nil
}

// openDeadLetters builds the dead-letter producer (decode.on_error: dlq)
// and checks that its topic exists and takes this principal's writes.
func (p *Pipeline) openDeadLetters() error {
	cfg := p.cfg
	kopts, err := kafka.ClientOpts(cfg.Source.Kafka)
	if err != nil {
		return err
	}
	if b := cfg.Decode.DLQ.Brokers; len(b) > 0 {
		kopts = append(kopts, kgo.SeedBrokers(b...))
	}
	w, err := dlq.New(dlq.Options{Topic: cfg.Decode.DLQ.Topic, Pipeline: cfg.Pipeline.Name, Opts: kopts, Registerer: p.component("dlq"), Log: p.log})
	if err != nil {
		return err
	}
	p.dlq = w
	if w.TopicMissing() {
		return &ConfigError{Errs: []error{fmt.Errorf("decode.dlq.topic: topic %q does not exist: create it (etl does not rely on the brokers creating topics)", cfg.Decode.DLQ.Topic)}}
	}
	if err := w.WriteDenied(); err != nil {
		return &ConfigError{Errs: []error{fmt.Errorf("decode.dlq.topic: %w: grant the principal etl connects as WRITE on it (records bound for it would otherwise hold the commits)", err)}}
	}
	return nil
}

// kafkaAccessTimeout bounds the question to the brokers about the
// source's credentials and ACLs (kafka.CheckAccess).
const kafkaAccessTimeout = 5 * time.Second

// CheckKafkaAccess asks the brokers whether the source may consume
// (kafka.CheckAccess): a *ConfigError when they say no, nil when they say
// yes or cannot be asked within 5 s (logged).
func CheckKafkaAccess(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	actx, cancel := context.WithTimeout(ctx, kafkaAccessTimeout)
	var dlq string
	if d := cfg.Decode.DLQ; d != nil {
		dlq = d.Topic
	}
	err := kafka.CheckAccess(actx, cfg.Source.Kafka, dlq)
	cancel()
	switch {
	case errors.Is(err, kafka.ErrAccess):
		return &ConfigError{Errs: []error{err}}
	case err != nil:
		log.Warn("kafka access not checked: the brokers did not answer", "err", err)
	}
	return nil
}

// Parts are the parts of a run built without the run: nothing joins the
// consumer group, nothing is inserted or committed, and the tables are
// read once and never changed (sink.clickhouse.schema creates and adds
// nothing: a missing table it would create is planned as derived). The
// operator commands (package inspect) check and preview with them. Parts
// are not safe for concurrent use.
type Parts struct {
	p     *Pipeline
	dec   *boundDecoder
	lanes map[TopicPartition]*lane
	taken []*chunk.Chunk // the chunks the last Decode handed out, emptied by the next
}

// PartsOptions configures OpenParts.
type PartsOptions struct {
	Config *config.Config
	Log    *slog.Logger
	// Offline plans each sink against the table derived from the data and
	// the chain (see Derivable) instead of reading it from ClickHouse: no
	// server is reached.
	Offline bool
}

// OpenParts checks o.Config (Preflight), loads the Avro schemas and opens
// every sink: its replicas connected and its table read and planned, or
// with Offline its derived table planned. Close closes what it opened.
func OpenParts(ctx context.Context, o PartsOptions) (*Parts, error) {
	p, err := newBase(o.Config, o.Log, nil)
	if err != nil {
		return nil, err
	}
	if err := p.openParts(ctx, sinkPlan{dryRun: true, offline: o.Offline}); err != nil {
		p.closeClients()
		return nil, err
	}
	if r := p.schemas.Registry; r != nil {
		// The tables were read once, now: a new writer schema does not
		// wait for another read.
		p.lookup = registrySource{c: r}
		if p.proto != nil && p.proto.registry != nil {
			p.proto.src = p.proto.registry
		}
	}
	return &Parts{p: p, lanes: map[TopicPartition]*lane{}}, nil
}

// Close closes the connections the parts opened.
func (x *Parts) Close() { x.p.closeClients() }

// CheckExactlyOnce checks what delivery: exactly_once requires of the
// tables (as a run does at startup); nil for another delivery.
func (x *Parts) CheckExactlyOnce(ctx context.Context) error {
	if !x.p.eo() {
		return nil
	}
	return x.p.eoCheckTables(ctx)
}

// Bind builds the decoders and the transform chain against the tables: a
// *ConfigError when they cannot fill them. Decode and DecoderInput need
// it.
func (x *Parts) Bind() error {
	dec, err := x.p.bind(nil)
	if err != nil {
		return &ConfigError{Errs: []error{err}}
	}
	x.dec = dec
	return nil
}

// OpenDeadLetters builds the dead-letter producer when decode.on_error is
// dlq, as a run does: a *ConfigError when its topic is missing or refuses
// this principal's writes.
func (x *Parts) OpenDeadLetters() error {
	if x.p.onError != config.OnErrorDLQ {
		return nil
	}
	return x.p.openDeadLetters()
}

// DeadLetterLimit is the largest dead letter the topic takes and where
// that limit comes from; ok is false without a dead-letter producer.
func (x *Parts) DeadLetterLimit() (limit int32, source string, ok bool) {
	if x.p.dlq == nil {
		return 0, "", false
	}
	limit, source = x.p.dlq.MaxMessageBytes()
	return limit, source, true
}

// Schemas are the Avro schemas and registry client the decoders use.
func (x *Parts) Schemas() *fields.Schemas { return x.p.schemas }

// Sink is one opened sink.
type Sink struct {
	Name   string
	Config *config.ClickHouse
	// Target is the insert planned into the table.
	Target *clickhouse.Target
	// Replicas are every shard's replicas, in order (none offline).
	Replicas []Replica
	// Derived: the table is missing and Target is planned into the table
	// sink.clickhouse.schema.create would make.
	Derived bool
}

// Replica is one replica's address and its server's version.
type Replica struct{ Addr, Version string }

// Sinks are the opened sinks, in name order.
func (x *Parts) Sinks() []Sink {
	var out []Sink
	for _, s := range x.p.sinks {
		k := Sink{Name: s.name, Config: s.cfg, Target: s.target.Load(), Derived: s.derived}
		for _, cs := range s.clients {
			for _, c := range cs {
				k.Replicas = append(k.Replicas, Replica{Addr: c.Addr(), Version: c.ServerVersion()})
			}
		}
		out = append(out, k)
	}
	return out
}

// DecoderInput is what the decoders fill after Bind: the staging schema
// and its fields when a chain runs (or several sinks are written), else
// the first sink's columns and the fields that fill them.
func (x *Parts) DecoderInput() (*chunk.Schema, []string) {
	if b := x.dec; b.staged != nil {
		return b.staged.stage, b.staged.stage.Names
	}
	return x.dec.target.Schema, x.dec.target.Fields
}

// ServerRanges are the Date and DateTime ranges the decoders hold values
// to, with the servers' time zone.
func (x *Parts) ServerRanges() chunk.ServerRanges { return x.p.serverRanges() }

// Decoded is what one record gave.
type Decoded struct {
	// Rows are the rows it would insert, per sink (none when the chain
	// drops it or it is rejected).
	Rows []Rows
	// Raw is the record as decoded, before the chain; without a chain,
	// its rows. Empty when it is rejected.
	Raw []Rows
	// Reason is the etl_decode_errors_total reason of a rejected record,
	// Err why it was rejected; both empty otherwise.
	Reason string
	Err    error
}

// Rows are rows of one sink's table (Sink and Table empty for a record
// as decoded before the chain). Chunk is the parts' own: read it before
// the next Decode, which empties it.
type Rows struct {
	Sink, Table string
	Chunk       *chunk.Chunk
}

// Decode decodes r and runs it through the transform chain exactly as a
// run's worker does, into the sinks' tables, and hands back the rows
// instead of sending them. A record whose Avro schema is being fetched
// waits for it (until ctx ends). The error is one that would stop a run
// (a rejected record is reported in Decoded).
func (x *Parts) Decode(ctx context.Context, r *kgo.Record) (*Decoded, error) {
	for _, c := range x.taken {
		c.Reset()
	}
	x.taken = x.taken[:0]
	p := x.p
	tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
	l := x.lanes[tp]
	if l == nil {
		l = newLane(tp, 1, nil, &p.settle)
		if len(p.sinks) > 0 {
			s := p.sinks[0]
			l.dest = s.dest0 + s.shardOfPartition(r.Partition)
		}
		x.lanes[tp] = l
	}
	out := x.dec.outputs(p, l)
	if so, ok := out.(*stagedOut); ok && l.stage == nil {
		st, err := chunk.New(so.dec.staged.stage)
		if err != nil {
			return nil, err
		}
		l.stage, l.binding = st, so.dec.staged.stagedShared
	}
	var err error
	for {
		err = out.add(r)
		pending := schemaPending(err)
		if pending == nil {
			break
		}
		select {
		case <-pending.SchemaReady():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d := &Decoded{}
	if err != nil {
		if fe, ok := err.(*fatalError); ok {
			return nil, fe.err
		}
		d.Reason = p.countRejected(err)
		d.Err = err
	}
	rowsOf := func(c *chunk.Chunk, sink int) Rows {
		s := p.sinks[sink]
		x.taken = append(x.taken, c)
		return Rows{Sink: s.name, Table: s.target.Load().Name(), Chunk: c}
	}
	if l.cur != nil {
		rows := rowsOf(l.cur, 0)
		d.Rows = append(d.Rows, rows)
		if err == nil {
			d.Raw = append(d.Raw, rows)
		}
	}
	for dest, c := range l.outs {
		if c != nil {
			d.Rows = append(d.Rows, rowsOf(c, x.sinkOf(dest)))
		}
	}
	if l.stage != nil && err == nil {
		d.Raw = append(d.Raw, Rows{Chunk: l.stage})
	}
	l.group = nil
	return d, nil
}

// sinkOf returns the sink of destination dest.
func (x *Parts) sinkOf(dest int) int {
	for i, s := range x.p.sinks {
		if dest >= s.dest0 && dest < s.dest0+len(s.shards) {
			return i
		}
	}
	return 0
}
