package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/etl-project/etl/sink/clickhouse"
)

// describer reads the sinks' tables again while the pipeline runs: every
// sink.clickhouse.describe_interval, and on request (the first time an
// Avro schema id is served). Its goroutine is run; the read itself (add
// the columns new writer schemas need, then refreshTarget for every sink)
// is the Pipeline's, given to newDescriber. Every read of the tables at
// run time goes through it, one at a time (reading): its own, and the one
// a shard asks for when an insert is refused (refreshShard).
type describer struct {
	// turn holds a value while a read of the tables runs (reading).
	turn chan struct{}

	every   time.Duration // describe_interval (0: on request only)
	timeout time.Duration // bounds one read
	log     *slog.Logger
	// read reads every sink's table and installs what changed.
	read func(ctx context.Context) error
	// addsColumns reports whether a new writer schema's fields get
	// columns before the read (sink.clickhouse.schema.add_columns).
	addsColumns func() bool

	req chan struct{} // a read is asked for (capacity 1)

	reqMu sync.Mutex // guards next, schemaIDs and pending
	// next is closed once the next read that starts has finished; nil
	// until one is asked for.
	next chan struct{}
	// schemaIDs maps each Avro schema id served so far to the channel
	// closed once the table was read for it.
	schemaIDs map[int32]chan struct{}
	// pending are the writer schema ids first seen since the last read:
	// their fields get columns before their records decode (add_columns).
	pending []int32
}

// newDescriber returns a describer that reads the tables with read every
// every (0: only on request), each read bounded by timeout.
func newDescriber(every, timeout time.Duration, log *slog.Logger, read func(ctx context.Context) error, addsColumns func() bool) *describer {
	return &describer{
		every: every, timeout: timeout, log: log, read: read, addsColumns: addsColumns,
		req:       make(chan struct{}, 1),
		turn:      make(chan struct{}, 1),
		schemaIDs: map[int32]chan struct{}{},
	}
}

// request asks for a read of the tables that starts after this call; the
// channel closes when it has finished.
func (d *describer) request() chan struct{} {
	d.reqMu.Lock()
	if d.next == nil {
		d.next = make(chan struct{})
	}
	ch := d.next
	d.reqMu.Unlock()
	select {
	case d.req <- struct{}{}:
	default:
	}
	return ch
}

// run reads the tables every d.every and on request until ctx ends. A
// read that was requested is retried each second until it succeeds
// (records wait for it); a periodic one that fails keeps the current
// columns until the next.
func (d *describer) run(ctx context.Context) {
	var tick <-chan time.Time
	if d.every > 0 {
		t := time.NewTicker(d.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-d.req:
		}
		d.reqMu.Lock()
		done := d.next
		d.next = nil
		d.reqMu.Unlock()
		for {
			dctx, cancel := context.WithTimeout(ctx, d.timeout)
			err := d.reading(dctx, func() error { return d.read(dctx) })
			cancel()
			if err == nil || done == nil || ctx.Err() != nil {
				if err != nil && ctx.Err() == nil {
					d.log.Warn("could not read the table's columns again; keeping the current ones", "err", err)
				}
				break
			}
			// Records wait for this read: retry until it succeeds.
			d.log.Warn("could not read the table's columns again; records of a new schema wait for them", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		if done != nil {
			close(done)
		}
	}
}

// reading runs fn as the one read of the tables running: it waits for
// the read that runs now to finish, or returns ctx's error if ctx ends
// first.
func (d *describer) reading(ctx context.Context, fn func() error) error {
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.turn }()
	return fn()
}

// schemaSeen reports whether the tables were read since schema id was
// first served. The first call for an id requests that read (and, with
// add_columns, the columns of its fields before it).
func (d *describer) schemaSeen(id int32) bool {
	d.reqMu.Lock()
	ch, ok := d.schemaIDs[id]
	d.reqMu.Unlock()
	if !ok {
		if d.addsColumns() {
			d.addPending(id)
		}
		ch = d.request()
		d.reqMu.Lock()
		if prev, ok := d.schemaIDs[id]; ok {
			ch = prev
		} else {
			d.schemaIDs[id] = ch
		}
		d.reqMu.Unlock()
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// schemaDescribed returns the channel that closes once the tables have
// been read for schema id, or nil when that read is done or was never
// asked for.
func (d *describer) schemaDescribed(id int32) <-chan struct{} {
	d.reqMu.Lock()
	ch, ok := d.schemaIDs[id]
	d.reqMu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-ch:
		return nil
	default:
		return ch
	}
}

// addPending records writer schema id, whose fields get columns at the
// next read (takePending).
func (d *describer) addPending(id int32) {
	d.reqMu.Lock()
	d.pending = append(d.pending, id)
	d.reqMu.Unlock()
}

// takePending returns the writer schema ids recorded since the last call.
func (d *describer) takePending() []int32 {
	d.reqMu.Lock()
	defer d.reqMu.Unlock()
	ids := d.pending
	d.pending = nil
	return ids
}

// keepPending puts ids back before those recorded since, for the next
// read.
func (d *describer) keepPending(ids []int32) {
	d.reqMu.Lock()
	d.pending = append(ids, d.pending...)
	d.reqMu.Unlock()
}

// refreshShard is the shards' ShardOptions.Refresh: refreshTarget for
// sink s, as the describer's one read of the tables at a time.
func (p *Pipeline) refreshShard(ctx context.Context, s *sinkState) (*clickhouse.Target, error) {
	var live *clickhouse.Target
	err := p.desc.reading(ctx, func() error {
		var err error
		live, err = p.refreshTarget(ctx, s)
		return err
	})
	return live, err
}

// readTables is the describer's read: the columns new writer schemas
// need are added (add_columns), then every sink's table is read.
func (p *Pipeline) readTables(ctx context.Context) error {
	var err error
	if p.addsColumns() {
		err = p.addColumnsForNew(ctx)
	}
	if err == nil {
		err = p.refreshAll(ctx)
	}
	return err
}
