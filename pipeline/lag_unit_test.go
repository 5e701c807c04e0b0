package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/source/kafka"
)

// listerSource answers the lag watcher's questions from its fields; the
// rest of the source is not used.
type listerSource struct {
	source
	ends      map[string]map[int32]kafka.Listed
	starts    map[string]map[int32]kafka.Listed
	committed map[string]map[int32]kafka.Committed
	err       error // of every listing
	brokerErr string
}

func (s *listerSource) ListEnds(context.Context, []string) (map[string]map[int32]kafka.Listed, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.ends, nil
}

func (s *listerSource) ListStarts(context.Context, []string) (map[string]map[int32]kafka.Listed, error) {
	return s.starts, s.err
}

func (s *listerSource) FetchCommitted(context.Context, kafka.Partitions) (map[string]map[int32]kafka.Committed, error) {
	return s.committed, s.err
}

func (s *listerSource) Brokers() (lastAnswer time.Time, lastErr string) {
	return time.Time{}, s.brokerErr
}

// TestLagReasons: the lag is unknown, with the reason, before an
// assignment, before the first listing and while listings fail; it is the
// listed end minus the group's committed offset before the first record,
// minus this member's position after; the gauge keeps the last value while
// the end cannot be read.
func TestLagReasons(t *testing.T) {
	p, _ := newBarePipeline(t, &nopSource{}, 1024)
	src := &listerSource{}
	p.src = src
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newLagCollector(p))
	ctx := context.Background()
	why := func(want string) {
		t.Helper()
		if _, got := p.lagNow(); got != want {
			t.Fatalf("lag unknown because %q, want %q", got, want)
		}
	}
	lag := func(want int64) {
		t.Helper()
		n, w := p.lagNow()
		if w != "" || n != want {
			t.Fatalf("lag %d (unknown: %q), want %d", n, w, want)
		}
		if got := testutil.ToFloat64(gaugeOf(t, reg)); got != float64(want) {
			t.Fatalf("etl_source_lag_records %v, want %d", got, want)
		}
	}

	why("waiting for a partition assignment from the group")
	src.brokerErr = "127.0.0.1:9092: dial tcp: connection refused"
	why("waiting for a partition assignment from the group; the last broker connection error: 127.0.0.1:9092: dial tcp: connection refused")

	p.assigned.Store(true)
	tp := TopicPartition{Topic: "events", Partition: 0}
	epoch := p.tracker.Assign(tp)
	p.lanes[tp] = newLane(tp, epoch, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
	why("the log end was not read yet")
	if n, _ := testutil.GatherAndCount(reg, "etl_source_lag_records"); n != 0 {
		t.Fatalf("%d etl_source_lag_records series before anything was read", n)
	}

	src.err = errors.New("list offsets: context deadline exceeded")
	p.readEnds(ctx, src)
	why("listing end offsets failed: list offsets: context deadline exceeded")

	// The group committed 100; the log ends at 120.
	src.err = nil
	src.ends = map[string]map[int32]kafka.Listed{"events": {0: {Offset: 120}}}
	src.committed = map[string]map[int32]kafka.Committed{"events": {0: {Offset: 100}}}
	p.readEnds(ctx, src)
	lag(20)

	// Records from 100 on are fetched (the end is 150 now); 100-130 are
	// written and committed.
	p.tracker.Start(tp, epoch, 100)
	p.lanes[tp].end.fetched(150, p.clock())
	lag(50)
	p.tracker.Ack(tp, epoch, 100, 130)
	for _, c := range p.tracker.Pending(nil) {
		p.tracker.Committed(c)
	}
	lag(20)

	// The next listing fails: unknown now, and the gauge keeps the lag
	// against the last end read.
	src.err = errors.New("list offsets: unable to dial")
	p.readEnds(ctx, src)
	why("listing end offsets failed: list offsets: unable to dial")
	if got := testutil.ToFloat64(gaugeOf(t, reg)); got != 20 {
		t.Fatalf("etl_source_lag_records %v while the listing fails, want the last value 20", got)
	}

	// A partition the brokers answer for with an error.
	src.err = nil
	src.ends = map[string]map[int32]kafka.Listed{"events": {0: {Offset: -1, Err: errors.New("NOT_LEADER_FOR_PARTITION")}}}
	p.readEnds(ctx, src)
	why("listing end offsets failed: events/0: NOT_LEADER_FOR_PARTITION")

	// A partition the group never committed counts from the log start
	// (start_offset: earliest).
	tp1 := TopicPartition{Topic: "events", Partition: 1}
	p.lanes[tp1] = newLane(tp1, p.tracker.Assign(tp1), prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
	src.ends = map[string]map[int32]kafka.Listed{"events": {0: {Offset: 160}, 1: {Offset: 70}}}
	src.committed = map[string]map[int32]kafka.Committed{"events": {1: {Offset: -1}}}
	src.starts = map[string]map[int32]kafka.Listed{"events": {1: {Offset: 40}}}
	p.readEnds(ctx, src)
	if n, w := p.lagNow(); w != "" || n != 30+30 {
		t.Fatalf("lag %d (unknown: %q), want 60 (30 on each partition)", n, w)
	}
	if n, _ := testutil.GatherAndCount(reg, "etl_source_lag_records"); n != 2 {
		t.Fatalf("%d etl_source_lag_records series, want 2 (one a partition)", n)
	}
	if n, _ := testutil.GatherAndCount(reg, "etl_source_lag_age_seconds"); n != 1 {
		t.Fatalf("%d etl_source_lag_age_seconds series, want 1 (one a topic)", n)
	}
}

// TestLagSeriesPerTopic: the fetch lag is summed over a topic's
// partitions and the lag's age is its oldest end's; the lag stays per
// partition.
func TestLagSeriesPerTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newBarePipeline(t, &nopSource{}, 1024)
		p.assigned.Store(true)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(newLagCollector(p))
		lanes := map[TopicPartition]*lane{}
		for _, tp := range []TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}} {
			l := newLane(tp, p.tracker.Assign(tp), new(fetchLag), &p.settle)
			p.lanes[tp], lanes[tp] = l, l
			l.end.setBase(0, "")
		}
		now := time.Now()
		lanes[TopicPartition{Topic: "a", Partition: 0}].end.listed(10, now.Add(-7*time.Second))
		lanes[TopicPartition{Topic: "a", Partition: 1}].end.listed(20, now.Add(-3*time.Second))
		lanes[TopicPartition{Topic: "b", Partition: 0}].end.listed(5, now.Add(-1*time.Second))
		lanes[TopicPartition{Topic: "a", Partition: 0}].lag.Set(4)
		lanes[TopicPartition{Topic: "a", Partition: 1}].lag.Set(6)
		lanes[TopicPartition{Topic: "b", Partition: 0}].lag.Set(1)
		want := `
# HELP etl_source_fetch_lag_records Records between the last fetched offset and the high watermark of the topic's partitions, as of each partition's last fetch that carried records, summed.
# TYPE etl_source_fetch_lag_records gauge
etl_source_fetch_lag_records{topic="a"} 10
etl_source_fetch_lag_records{topic="b"} 1
# HELP etl_source_lag_age_seconds Seconds since the oldest log end that etl_source_lag_records of the topic's partitions counts from was read (it grows while the end offsets cannot be listed).
# TYPE etl_source_lag_age_seconds gauge
etl_source_lag_age_seconds{topic="a"} 7
etl_source_lag_age_seconds{topic="b"} 1
# HELP etl_source_lag_records Records of the partition not yet committed by this member: the log end minus the committed offset (before the first commit, the offset consumption started from).
# TYPE etl_source_lag_records gauge
etl_source_lag_records{partition="0",topic="a"} 10
etl_source_lag_records{partition="1",topic="a"} 20
etl_source_lag_records{partition="0",topic="b"} 5
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Fatal(err)
		}
	})
}

// gaugeOf is etl_source_lag_records of events/0 in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "etl_source_lag_records" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			if strings.Contains(labels, "partition=0,") {
				g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "v"})
				g.Set(m.GetGauge().GetValue())
				return g
			}
		}
	}
	t.Fatal("no etl_source_lag_records series for events/0")
	return nil
}

// TestLagBaseAtLogStart: before the first record, a committed offset that
// retention left below the log start counts from the log start (where
// consumption resumes; the deleted records are skipped, not owed), and one
// within the log from itself.
func TestLagBaseAtLogStart(t *testing.T) {
	p, _ := newBarePipeline(t, &nopSource{}, 1024)
	src := &listerSource{}
	p.src = src
	p.assigned.Store(true)
	tp := TopicPartition{Topic: "events", Partition: 0}
	epoch := p.tracker.Assign(tp)
	p.lanes[tp] = newLane(tp, epoch, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
	src.ends = map[string]map[int32]kafka.Listed{"events": {0: {Offset: 10_000}}}
	src.starts = map[string]map[int32]kafka.Listed{"events": {0: {Offset: 2_000}}}
	src.committed = map[string]map[int32]kafka.Committed{"events": {0: {Offset: 1_000}}}
	p.readEnds(context.Background(), src)
	if n, why := p.lagNow(); why != "" || n != 8_000 {
		t.Fatalf("lag %d (unknown: %q), want 8,000: the records from the log start 2,000 to the end 10,000", n, why)
	}

	tp1 := TopicPartition{Topic: "events", Partition: 1}
	epoch1 := p.tracker.Assign(tp1)
	p.lanes[tp1] = newLane(tp1, epoch1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "y"}), &p.settle)
	src.ends["events"][1] = kafka.Listed{Offset: 500}
	src.starts["events"][1] = kafka.Listed{Offset: 0}
	src.committed["events"][1] = kafka.Committed{Offset: 400}
	p.readEnds(context.Background(), src)
	if l := p.partitionLag(p.lanes[tp1]); !l.has || l.lag != 100 {
		t.Fatalf("partition 1: lag %d (known %v, why %q), want 100 from its committed offset 400", l.lag, l.has, l.why)
	}
}

// countingLister counts the listings of the log ends.
type countingLister struct {
	listerSource
	listings atomic.Int64
	mu       sync.Mutex // guards listerSource.ends, which the test changes while the watcher lists
}

func (s *countingLister) ListEnds(ctx context.Context, topics []string) (map[string]map[int32]kafka.Listed, error) {
	s.listings.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listerSource.ListEnds(ctx, topics)
}

// setEnds replaces the ends the next listings return.
func (s *countingLister) setEnds(ends map[string]map[int32]kafka.Listed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends = ends
}

// TestLagListingWhileIdle: an idle member whose ends do not move lists
// them every lagIdleEvery instead of every lagEvery; an end that moved,
// or bytes in flight, bring the listing back to every lagEvery.
func TestLagListingWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newBarePipeline(t, &nopSource{}, 1024)
		src := &countingLister{listerSource: listerSource{
			ends:      map[string]map[int32]kafka.Listed{"events": {0: {Offset: 120}}},
			committed: map[string]map[int32]kafka.Committed{"events": {0: {Offset: 120}}},
			starts:    map[string]map[int32]kafka.Listed{"events": {0: {Offset: 0}}},
		}}
		p.src = src
		p.assigned.Store(true)
		tp := TopicPartition{Topic: "events", Partition: 0}
		p.lanes[tp] = newLane(tp, p.tracker.Assign(tp), prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
		every := p.lagEvery()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.lagWatcher(ctx)
		}()
		listingsIn := func(d time.Duration) int64 {
			n0 := src.listings.Load()
			time.Sleep(d)
			synctest.Wait()
			return src.listings.Load() - n0
		}
		// The first listing reads the end (it moved from unknown); the
		// second finds it unchanged; then one a lagIdleEvery.
		if n := listingsIn(2*every + every/2); n != 2 {
			t.Fatalf("first %s: %d listings, want 2", 2*every+every/2, n)
		}
		if n := listingsIn(3 * lagIdleEvery); n < 2 || n > 3 {
			t.Fatalf("idle for %s: %d listings, want 3 (one a %s)", 3*lagIdleEvery, n, lagIdleEvery)
		}
		if n, why := p.lagNow(); why != "" || n != 0 {
			t.Fatalf("idle: lag %d (unknown: %q), want 0", n, why)
		}
		// Bytes in flight: every lagEvery.
		p.budget.Add(10)
		if n := listingsIn(10 * every); n < 9 {
			t.Fatalf("busy for %s: %d listings, want 10", 10*every, n)
		}
		p.budget.Release(10)
		// An end that moves keeps the listing at every lagEvery while
		// it moves, and the lag follows it.
		listingsIn(lagIdleEvery) // idle again after the last listing
		src.setEnds(map[string]map[int32]kafka.Listed{"events": {0: {Offset: 130}}})
		time.Sleep(lagIdleEvery)
		synctest.Wait()
		if n, why := p.lagNow(); why != "" || n != 10 {
			t.Fatalf("after %s: lag %d (unknown: %q), want 10", lagIdleEvery, n, why)
		}
		src.setEnds(map[string]map[int32]kafka.Listed{"events": {0: {Offset: 140}}})
		time.Sleep(every)
		synctest.Wait()
		if n, why := p.lagNow(); why != "" || n != 20 {
			t.Fatalf("%s after the end moved: lag %d (unknown: %q), want 20", every, n, why)
		}
		cancel()
		<-done
	})
}
