package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/source/kafka"
)

// The lag of an assigned partition is its log end minus the offset this
// member committed for it (before its first commit: the offset it started
// from), the records not yet durable in ClickHouse. The log end comes from
// the high watermark of each fetch that carries records and from a listing
// of the end offsets every lagEvery, which also sees the ends of paused and
// idle partitions: while ClickHouse is down the partitions pause, the
// committed offsets stay, and the lag grows with every record produced.
// While the member is idle (nothing in flight, nothing paused) and the last
// listing moved no end, the listing runs only every lagIdleEvery: a record
// produced to a partition that is not paused is fetched within
// fetch_max_wait, and its fetch moves the end.

// endLister is what the lag watcher needs of the source on top of source:
// *kafka.Source has it. A source without it (the simulation's) has no
// known lag.
type endLister interface {
	ListEnds(ctx context.Context, topics []string) (map[string]map[int32]kafka.Listed, error)
	ListStarts(ctx context.Context, topics []string) (map[string]map[int32]kafka.Listed, error)
}

// listEndsTimeout bounds one listing of the log ends (and of the committed
// and start offsets it needs): a listing that takes longer counts as
// failed, and the lag is unknown until the next one succeeds.
const listEndsTimeout = 5 * time.Second

// noAnswerFor is how long no broker must have answered for the status
// line to add the last connection error to a lag unknown for want of an
// assignment.
const noAnswerFor = 5 * time.Second

// lagEvery is how often the log ends are listed: checkpoint.commit_interval
// (the committed offsets, the lag's other side, move no more often), at
// least 1 s and at most 15 s.
func (p *Pipeline) lagEvery() time.Duration {
	return min(max(p.cfg.Checkpoint.CommitInterval.D(), time.Second), 15*time.Second)
}

// lagIdleEvery is how often the log ends are listed while the member is
// idle and the last listing moved no end.
const lagIdleEvery = time.Minute

// lagWatch is the lag watcher's state in the pipeline.
type lagWatch struct {
	once sync.Once
	kick chan struct{} // a listing is wanted now (a new assignment)
}

func (w *lagWatch) kickChan() chan struct{} {
	w.once.Do(func() { w.kick = make(chan struct{}, 1) })
	return w.kick
}

// kickLag asks the lag watcher for a listing now, without waiting.
func (p *Pipeline) kickLag() {
	select {
	case p.lagw.kickChan() <- struct{}{}:
	default:
	}
}

// logEnd is what a lane knows of its partition's log end, and of where its
// consumption counts from before its first record.
type logEnd struct {
	mu    sync.Mutex
	end   int64
	endOK bool      // end was read
	at    time.Time // when end was last read
	err   string    // the last listing gave no end for the partition: why (cleared by the next end read)
	// base is the offset consumption starts from, for a partition with
	// no record fetched yet (the tracker knows it after the first): the
	// group's committed offset, or where start_offset puts a partition
	// the group never committed.
	base    int64
	baseOK  bool
	baseErr string // reading base failed: why
}

// listed records an end read by a listing: it replaces what was known
// (a log truncated or recreated has a lower end). It reports whether the
// end changed (or was not known).
func (e *logEnd) listed(end int64, at time.Time) bool {
	e.mu.Lock()
	changed := !e.endOK || e.end != end
	e.end, e.endOK, e.at, e.err = end, true, at, ""
	e.mu.Unlock()
	return changed
}

// fetched records the high watermark of a fetch: a fetch answered before
// the last listing may arrive after it, so it never lowers the end.
func (e *logEnd) fetched(hw int64, at time.Time) {
	e.mu.Lock()
	if !e.endOK || hw >= e.end {
		e.end, e.endOK = hw, true
	}
	e.at, e.err = at, ""
	e.mu.Unlock()
}

func (e *logEnd) failed(why string) {
	e.mu.Lock()
	e.err = why
	e.mu.Unlock()
}

func (e *logEnd) setBase(b int64, why string) {
	e.mu.Lock()
	if why != "" {
		e.baseErr = why
	} else {
		e.base, e.baseOK, e.baseErr = b, true, ""
	}
	e.mu.Unlock()
}

func (e *logEnd) view() logEnd {
	e.mu.Lock()
	defer e.mu.Unlock()
	return logEnd{end: e.end, endOK: e.endOK, at: e.at, err: e.err, base: e.base, baseOK: e.baseOK, baseErr: e.baseErr}
}

// partLag is one assigned partition's lag.
type partLag struct {
	tp  TopicPartition
	lag int64     // valid when has
	has bool      // lag was computed: from the end read now, or (why set) from the last end read
	at  time.Time // when the end lag counts from was read
	why string    // non-empty: the lag is not known now, and why
}

// partitionLag computes l's lag from its log end and its committed offset.
func (p *Pipeline) partitionLag(l *lane) partLag {
	v := l.end.view()
	r := partLag{tp: l.tp, at: v.at}
	committed, ok := v.base, v.baseOK
	if st, found := p.tracker.Status(l.tp); found && st.Started {
		committed, ok = st.Committed, true
	}
	if v.endOK && ok {
		r.lag, r.has = max(0, v.end-committed), true
	}
	switch {
	case v.err != "":
		r.why = "listing end offsets failed: " + v.err
	case !v.endOK:
		r.why = "the log end was not read yet"
	case !ok && v.baseErr != "":
		r.why = "reading the committed offset failed: " + v.baseErr
	case !ok:
		r.why = "the committed offset was not read yet"
	}
	return r
}

// lanesSorted returns the assigned lanes in topic and partition order.
func (p *Pipeline) lanesSorted() []*lane {
	p.mu.RLock()
	out := make([]*lane, 0, len(p.lanes))
	for _, l := range p.lanes {
		out = append(out, l)
	}
	p.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out
}

// lagNow is the lag summed over the assigned partitions, and why it is not
// known ("" when it is): before the first assignment, or while a
// partition's end or committed offset cannot be read.
func (p *Pipeline) lagNow() (int64, string) {
	if !p.assigned.Load() {
		why := "waiting for a partition assignment from the group"
		// A member that cannot reach the brokers waits too: the last
		// connection error, with no answer for a while, tells that apart
		// (a join that waits for a dead member's session to expire has
		// no error).
		if p.src != nil {
			if ans, err := p.src.Brokers(); err != "" && time.Since(ans) > noAnswerFor {
				why += "; the last broker connection error: " + err
			}
		}
		return 0, why
	}
	var total int64
	why := ""
	for _, l := range p.lanesSorted() {
		pl := p.partitionLag(l)
		total += pl.lag
		if why == "" {
			why = pl.why
		}
	}
	return total, why
}

// lagWatcher lists the log ends of the assigned partitions every lagEvery,
// at once after an assignment, and every lagIdleEvery while the member is
// idle and the last listing moved nothing.
func (p *Pipeline) lagWatcher(ctx context.Context) {
	src, ok := p.src.(endLister)
	if !ok {
		return
	}
	t := time.NewTicker(p.lagEvery())
	defer t.Stop()
	kick := p.lagw.kickChan()
	var last time.Time // the last listing
	quiet := false     // the last listing moved no end
	for {
		kicked := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			kicked = true
		}
		if !kicked && quiet && p.lagIdle() && time.Since(last) < lagIdleEvery {
			continue
		}
		quiet = !p.readEnds(ctx, src)
		last = time.Now()
	}
}

// lagIdle reports whether nothing is in flight and no partition is
// paused: the ends can move only by records that the fetches will bring.
func (p *Pipeline) lagIdle() bool {
	return p.budget.Inflight() == 0 && (p.pause == nil || p.pause.count() == 0)
}

// readEnds lists the log ends of the assigned partitions, and the base of
// those with no record fetched yet. It reports whether anything moved: an
// end changed or read for the first time, a failure, a base to read.
func (p *Pipeline) readEnds(ctx context.Context, src endLister) bool {
	lanes := p.lanesSorted()
	if len(lanes) == 0 {
		return false
	}
	var topics []string
	for _, l := range lanes {
		if len(topics) == 0 || topics[len(topics)-1] != l.tp.Topic {
			topics = append(topics, l.tp.Topic)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, listEndsTimeout)
	ends, err := src.ListEnds(lctx, topics)
	cancel()
	if ctx.Err() != nil {
		return false // stopping: not a failure of the listing
	}
	now := p.clock()
	var need []*lane
	moved := err != nil
	for _, l := range lanes {
		o, found := ends[l.tp.Topic][l.tp.Partition]
		if !found || o.Err != nil || o.Offset < 0 {
			moved = true
		}
		switch {
		case found && o.Err == nil && o.Offset >= 0:
			if l.end.listed(o.Offset, now) {
				moved = true
			}
		case found && o.Err != nil:
			l.end.failed(fmt.Sprintf("%s/%d: %v", l.tp.Topic, l.tp.Partition, o.Err))
		case err != nil:
			l.end.failed(err.Error())
		default:
			// A topic the brokers do not know is listed as partition -1
			// with the error.
			if te, ok := ends[l.tp.Topic][-1]; ok && te.Err != nil {
				l.end.failed(fmt.Sprintf("%s: %v", l.tp.Topic, te.Err))
			} else {
				l.end.failed(fmt.Sprintf("%s/%d: not in the brokers' answer", l.tp.Topic, l.tp.Partition))
			}
		}
		if st, found := p.tracker.Status(l.tp); (!found || !st.Started) && !l.end.view().baseOK {
			need = append(need, l)
		}
	}
	if len(need) > 0 {
		p.readBases(ctx, src, need)
		moved = true
	}
	return moved
}

// readBases reads where consumption starts for partitions with no record
// fetched yet: the group's committed offset, raised to the log start when
// retention deleted records below it (consumption resumes at the log
// start: the deleted records are not owed, and are counted as skipped);
// for a partition the group never committed, the log start (start_offset:
// earliest) or the log end as just listed (latest: the client starts at
// the end it lists itself, at about the same time).
func (p *Pipeline) readBases(ctx context.Context, src endLister, lanes []*lane) {
	parts := kafka.Partitions{}
	for _, l := range lanes {
		parts[l.tp.Topic] = append(parts[l.tp.Topic], l.tp.Partition)
	}
	cctx, cancel := context.WithTimeout(ctx, listEndsTimeout)
	defer cancel()
	committed, err := p.src.FetchCommitted(cctx, parts)
	if err != nil {
		if ctx.Err() == nil {
			for _, l := range lanes {
				l.end.setBase(0, err.Error())
			}
		}
		return
	}
	latest := p.cfg.Source.Kafka != nil && p.cfg.Source.Kafka.StartOffset == "latest"
	var fromStart []*lane
	for _, l := range lanes {
		c, ok := committed[l.tp.Topic][l.tp.Partition]
		switch {
		case ok && c.Offset >= 0:
			fromStart = append(fromStart, l) // the log start may be above it
		case latest:
			if v := l.end.view(); v.endOK {
				l.end.setBase(v.end, "")
			}
		default:
			fromStart = append(fromStart, l)
		}
	}
	if len(fromStart) == 0 {
		return
	}
	var topics []string
	for _, l := range fromStart {
		if len(topics) == 0 || topics[len(topics)-1] != l.tp.Topic {
			topics = append(topics, l.tp.Topic)
		}
	}
	starts, err := src.ListStarts(cctx, topics)
	if ctx.Err() != nil {
		return
	}
	for _, l := range fromStart {
		c, hasCommitted := committed[l.tp.Topic][l.tp.Partition]
		hasCommitted = hasCommitted && c.Offset >= 0
		switch o, found := starts[l.tp.Topic][l.tp.Partition]; {
		case found && o.Err == nil && o.Offset >= 0:
			if hasCommitted {
				l.end.setBase(max(c.Offset, o.Offset), "")
			} else {
				l.end.setBase(o.Offset, "")
			}
		case hasCommitted:
			// The log start unknown: the committed offset, as the best
			// reading.
			l.end.setBase(c.Offset, "")
		case found && o.Err != nil:
			l.end.setBase(0, fmt.Sprintf("listing the log start: %s/%d: %v", l.tp.Topic, l.tp.Partition, o.Err))
		case err != nil:
			l.end.setBase(0, "listing the log start: "+err.Error())
		}
	}
}

// fetchLag is a lane's fetch lag: the records between its last fetched
// offset and the high watermark of that fetch.
type fetchLag struct{ v atomic.Int64 }

func (f *fetchLag) Set(v float64) { f.v.Store(int64(v)) }

// lagCollector serves, at scrape time, etl_source_lag_records of every
// assigned partition whose lag was computed at least once, and per topic
// etl_source_lag_age_seconds (the oldest end among its partitions) and
// etl_source_fetch_lag_records (the sum over its partitions). While the
// end cannot be read the lag is computed against the last end read, and
// the age grows. The per-topic series keep the series a partition costs
// to one.
type lagCollector struct {
	p                  *Pipeline
	lag, age, fetchLag *prometheus.Desc
}

func newLagCollector(p *Pipeline) lagCollector {
	return lagCollector{p: p,
		lag: prometheus.NewDesc("etl_source_lag_records",
			"Records of the partition not yet committed by this member: the log end minus the committed offset (before the first commit, the offset consumption started from).",
			[]string{"topic", "partition"}, nil),
		age: prometheus.NewDesc("etl_source_lag_age_seconds",
			"Seconds since the oldest log end that etl_source_lag_records of the topic's partitions counts from was read (it grows while the end offsets cannot be listed).",
			[]string{"topic"}, nil),
		fetchLag: prometheus.NewDesc("etl_source_fetch_lag_records",
			"Records between the last fetched offset and the high watermark of the topic's partitions, as of each partition's last fetch that carried records, summed.",
			[]string{"topic"}, nil),
	}
}

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.age
	ch <- c.fetchLag
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	// The lanes come sorted: a topic's partitions are consecutive.
	topic, oldest, hasAge, fetched := "", time.Time{}, false, int64(0)
	flush := func() {
		if topic == "" {
			return
		}
		if hasAge {
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, max(0, now.Sub(oldest).Seconds()), topic)
		}
		ch <- prometheus.MustNewConstMetric(c.fetchLag, prometheus.GaugeValue, float64(fetched), topic)
	}
	for _, l := range c.p.lanesSorted() {
		if l.tp.Topic != topic {
			flush()
			topic, oldest, hasAge, fetched = l.tp.Topic, time.Time{}, false, 0
		}
		if f, ok := l.lag.(*fetchLag); ok {
			fetched += f.v.Load()
		}
		pl := c.p.partitionLag(l)
		if !pl.has {
			continue
		}
		if !hasAge || pl.at.Before(oldest) {
			oldest, hasAge = pl.at, true
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(pl.lag), pl.tp.Topic, strconv.Itoa(int(pl.tp.Partition)))
	}
	flush()
}

// registerLag registers the lag collector with the source's metrics.
func (p *Pipeline) registerLag() {
	if reg := p.component("source"); reg != nil {
		reg.MustRegister(newLagCollector(p))
	}
}
