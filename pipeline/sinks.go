package pipeline

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/sink/clickhouse"
)

// sinkState is one named sink: a client per replica of each shard, the
// table's current target, and one shard worker per shard.
type sinkState struct {
	name    string
	cfg     *config.ClickHouse
	clients [][]*clickhouse.Client // [shard][replica]
	target  atomic.Pointer[clickhouse.Target]
	shards  []*clickhouse.Shard
	weights []int
	dest0   int // index of shards[0] in Pipeline.dests
	// derived: a dry run planned against the derived table, which
	// sink.clickhouse.schema.create would make (the table is missing).
	derived bool
}

// sinkPlan says how openSinks opens the sinks: a run's (zero value), or
// the operator commands' (Parts).
type sinkPlan struct {
	// dryRun changes no table: sink.clickhouse.schema creates and adds
	// nothing, and a missing table it would create is planned as derived.
	dryRun bool
	// offline reaches no server: every sink is planned against the table
	// derived from the data and the chain.
	offline bool
}

// openSinks connects to every replica of every sink (a replica that does
// not answer yet is kept: its breaker deals with it), reads each table from
// the first replica that answers and builds the shard workers.
func (p *Pipeline) openSinks(ctx context.Context, plan sinkPlan) error {
	for _, ns := range p.cfg.SinkList() {
		chc := ns.ClickHouse
		s := &sinkState{name: ns.Name, cfg: chc}
		p.sinks = append(p.sinks, s)
		if plan.offline {
			// etl tail with every type given: the table derived from
			// the data and the chain stands in for the live one.
			t, err := p.derivedTarget(ctx, s)
			if err != nil {
				return err
			}
			for _, sh := range chc.ShardList() {
				s.weights = append(s.weights, sh.Weight)
				s.clients = append(s.clients, nil)
			}
			s.target.Store(t)
			continue
		}
		// A password_file is read here, and again by every new
		// connection (PasswordFunc), so a rotated password is picked up.
		password, err := chc.Secret()
		if err != nil {
			return fmt.Errorf("sink %s: password_file: %w", s.name, err)
		}
		var tlsCfg *tls.Config
		if chc.TLS != nil && chc.TLS.Enabled {
			if tlsCfg, err = chc.TLS.Config(p.cfg.KeyPath(ns) + ".tls"); err != nil {
				return fmt.Errorf("sink %s: %w", s.name, err)
			}
		}
		for i, sh := range chc.ShardList() {
			s.weights = append(s.weights, sh.Weight)
			var cs []*clickhouse.Client
			for _, addr := range sh.Replicas {
				c, err := clickhouse.Connect(ctx, clickhouse.Options{
					Addr: []string{addr}, Database: chc.Database, Table: chc.Table, User: chc.User, Password: password, PasswordFunc: fields.RereadSecret(chc.PasswordFile, chc.Secret), TLS: tlsCfg,
					DialTimeout: chc.DialTimeout.D(), InsertTimeout: chc.InsertTimeout.D(), Settings: chc.Settings,
					Compression: chc.Compression, Columns: chc.Columns, Exclude: chc.ExcludeColumns, Lazy: true,
					MaxOpenConns: chc.Inflight.MaxPerShard + 2, WholeBlocks: p.exactlyOnce,
				}, p.log.With("sink", s.name, "shard", i))
				if err != nil {
					err = fmt.Errorf("sink %s: shard %d: replica %s: %w", s.name, i, addr, err)
					if clickhouse.ConfigProblem(err) {
						return &ConfigError{Errs: []error{err}}
					}
					return err
				}
				cs = append(cs, c)
			}
			s.clients = append(s.clients, cs)
		}
		derived, err := p.prepareTable(ctx, s, plan.dryRun)
		if err != nil {
			return err
		}
		s.derived = derived
		var t *clickhouse.Target
		if derived {
			t, err = p.derivedTarget(ctx, s)
		} else {
			t, err = s.plan(ctx)
		}
		if err != nil {
			err = fmt.Errorf("sink %s: %w", s.name, err)
			if clickhouse.ConfigProblem(err) {
				return &ConfigError{Errs: []error{err}}
			}
			return err
		}
		s.target.Store(t)
		for _, w := range t.Warnings {
			p.log.Warn("column default", "sink", s.name, "table", t.Name(), "warning", w)
		}
		if len(chc.Columns) > 0 {
			var byName []string
			for i, col := range t.Schema.Names {
				if _, mapped := chc.Columns[col]; !mapped && t.Fields[i] == col {
					byName = append(byName, col)
				}
			}
			if len(byName) > 0 {
				// columns once listed every inserted column; a file
				// written for that sees its unlisted columns filled now.
				p.log.Info("sink.clickhouse.columns lists only the columns whose field has another name: the table's other columns are filled from the fields of their own names (exclude_columns leaves a column to the server's DEFAULT)",
					"sink", s.name, "table", t.Name(), "by_name", byName)
			}
		}
		if chc.DistributedCheck != "" {
			if err := s.checkCluster(ctx); err != nil {
				return fmt.Errorf("sink %s: sink.clickhouse.distributed_check: %w", s.name, err)
			}
		}
	}
	for _, s := range p.sinks {
		s.dest0 = len(p.dests)
		metrics := clickhouse.NewMetrics(p.component("sink"), prometheus.Labels{"sink": s.name})
		onDone := p.acks.push
		if p.wrapAck != nil {
			onDone = p.wrapAck(onDone)
		}
		maxRows, maxBytes, linger, idle := s.cfg.Batch.MaxRows, int(s.cfg.Batch.MaxBytes), s.cfg.Batch.Linger.D(), s.cfg.Batch.Idle.D()
		if p.eo() {
			// Each chunk is a whole insert block (the lanes build blocks
			// up to the batch limits): never merge two. With no trigger
			// set every chunk is a batch of its own, one of no rows too.
			maxRows, maxBytes, linger, idle = 0, 0, 0, 0
		}
		for i, cs := range s.clients {
			dest := len(p.dests) // chunk.Dest of this shard's chunks
			sh := clickhouse.NewShard(clickhouse.ShardOptions{
				Name: strconv.Itoa(i), Replicas: clickhouse.Inserters(cs), Target: s.target.Load(),
				ReportOrphans: p.eo(),
				Breaker: clickhouse.BreakerOptions{FailureThreshold: s.cfg.Breaker.FailureThreshold,
					OpenFor: s.cfg.Breaker.OpenFor.D(), HalfOpenProbes: s.cfg.Breaker.HalfOpenProbes},
				Refresh:       func(ctx context.Context) (*clickhouse.Target, error) { return p.refreshShard(ctx, s) },
				QueueCapacity: s.cfg.QueueCapacity,
				MaxRows:       maxRows, MaxBytes: maxBytes, Linger: linger, Idle: idle, FirstAtOnce: s.cfg.Batch.FirstAtOnce && !p.eo(),
				MaxInflight:    s.cfg.Inflight.MaxPerShard,
				InitialBackoff: s.cfg.Retry.InitialBackoff.D(), MaxBackoff: s.cfg.Retry.MaxBackoff.D(), MaxAttempts: s.cfg.Retry.MaxAttempts,
				OnDone:     onDone,
				OnSpace:    func() { p.wakeBlocked(dest) }, // only the lanes this shard refused
				OnRejected: p.onRejected(),
				Reshape:    p.reshape,
				Budget:     p.budget,
				Log:        p.log.With("sink", s.name),
				Metrics:    metrics,
			})
			s.shards = append(s.shards, sh)
			p.dests = append(p.dests, sh)
		}
	}
	p.queue = destRouter(p.dests)
	return nil
}

// plan reads the table from the first replica that answers. A server that
// answers with an error (no such table, a type the encoder lacks) decides;
// when none answers, the error is ErrUnavailable.
func (s *sinkState) plan(ctx context.Context) (*clickhouse.Target, error) {
	var errs []error
	for _, cs := range s.clients {
		for _, c := range cs {
			t, err := c.Plan(ctx)
			if err == nil {
				return t, nil
			}
			if clickhouse.ServerAnswered(err) {
				return nil, err
			}
			errs = append(errs, err)
		}
	}
	return nil, unavailable(fmt.Errorf("no replica answered: %w", errors.Join(errs...)))
}

// closeClients closes every replica's connections.
func (s *sinkState) closeClients() {
	for _, cs := range s.clients {
		for _, c := range cs {
			_ = c.Close()
		}
	}
}

// shardOfPartition is the shard that takes every row of a partition with
// sharding by partition.
func (s *sinkState) shardOfPartition(partition int32) int {
	return clickhouse.ShardOf(uint64(partition), s.weights)
}

// destRouter hands each chunk to the shard queue its Dest names.
type destRouter []*clickhouse.Shard

func (r destRouter) TryEnqueue(c *chunk.Chunk) bool { return r[c.Dest].TryEnqueue(c) }

// checkCluster verifies sink.clickhouse.distributed_check: the cluster's
// shards, in order, have the configured weights and replicas, so a
// Distributed table over it with the same sharding key finds each row on
// the shard the pipeline chose.
func (s *sinkState) checkCluster(ctx context.Context) error {
	name := s.cfg.DistributedCheck
	var shards []clickhouse.ClusterShard
	var err error
	for _, cs := range s.clients {
		for _, c := range cs {
			if shards, err = c.ClusterShards(ctx, name); err == nil || clickhouse.ServerAnswered(err) {
				break
			}
		}
		if err == nil || clickhouse.ServerAnswered(err) {
			break
		}
	}
	if err != nil && !clickhouse.ServerAnswered(err) {
		return unavailable(err)
	}
	if err != nil {
		return err
	}
	want := s.cfg.ShardList()
	if len(shards) != len(want) {
		return fmt.Errorf("cluster %q has %d shards, sink.clickhouse lists %d", name, len(shards), len(want))
	}
	for i, sh := range shards {
		if int(sh.Weight) != want[i].Weight {
			return fmt.Errorf("cluster %q shard %d has weight %d, sink.clickhouse shard %d has %d", name, sh.Num, sh.Weight, i, want[i].Weight)
		}
		for _, r := range want[i].Replicas {
			found := false
			for _, x := range sh.Replicas {
				found = found || x == r
			}
			if !found {
				return fmt.Errorf("cluster %q shard %d (replicas %v) does not hold replica %s of sink.clickhouse shard %d: the shard order differs", name, sh.Num, sh.Replicas, r, i)
			}
		}
	}
	return nil
}

// ask runs f against the first replica that answers (a server that
// answers with an error ends the search: the others would say the same);
// when none answers, the error is ErrUnavailable.
func (s *sinkState) ask(f func(c *clickhouse.Client) error) error {
	var errs []error
	for _, cs := range s.clients {
		for _, c := range cs {
			err := f(c)
			if err == nil || clickhouse.ServerAnswered(err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return unavailable(fmt.Errorf("no replica answered: %w", errors.Join(errs...)))
}
