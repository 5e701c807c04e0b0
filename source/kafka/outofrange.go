package kafka

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Offsets out of range: a partition is never moved past records still in
// the log without an ERROR and a count.
//
//   - A committed offset below the log start (retention deleted records the
//     group had not read) resumes at the log start; one above the log end
//     (the log was truncated, or the topic recreated) resumes at the log
//     end. start_offset plays no part: it is only for partitions without a
//     committed offset. The group's offsets are checked against the log
//     when they are fetched (adjustOffsets) and when a kept partition
//     restarts from them (ownership.go).
//   - While consuming, a partition whose position fell below the log start
//     is resumed at the log start by the client without a word; the source
//     sees it as the first record after the position being above it with
//     the fetch's log start above the position too (checkGap).
//   - A broker that lost records the client had read is reported by the
//     client as *kgo.ErrDataLoss (dataLoss).

// Reasons of etl_source_records_skipped_total.
const (
	reasonRetention = "retention" // deleted from the log before they were read
	reasonTruncated = "truncated" // offsets the group had consumed that the log no longer has
)

// listLimit bounds reading the log start and end of the partitions whose
// committed offsets were just fetched.
const listLimit = 10 * time.Second

// positions is, per partition, the offset the next fetched record should
// have: where consumption resumed, then the record after the last one
// handed over. A partition without one (started by start_offset) is not
// checked until its first records are handed over.
type positions struct {
	mu   sync.Mutex
	next map[string]map[int32]int64
}

func newPositions() *positions { return &positions{next: map[string]map[int32]int64{}} }

func (ps *positions) set(topic string, part int32, off int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.next[topic] == nil {
		ps.next[topic] = map[int32]int64{}
	}
	ps.next[topic][part] = off
}

func (ps *positions) get(topic string, part int32) (int64, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n, ok := ps.next[topic][part]
	return n, ok
}

// drop forgets p (revoked or lost).
func (ps *positions) drop(p Partitions) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for t, parts := range p {
		for _, part := range parts {
			delete(ps.next[t], part)
		}
		if len(ps.next[t]) == 0 {
			delete(ps.next, t)
		}
	}
}

// newSkipped is etl_source_records_skipped_total, served at 0 for each
// topic and reason from the start.
func newSkipped(topics []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_source_records_skipped_total",
		Help: "Offsets passed over without their records being read, by topic and reason: retention (deleted from the log before they were read) " +
			"or truncated (offsets the group had consumed that the log no longer has). Each is logged at ERROR with the partition and offsets.",
	}, []string{"topic", "reason"})
	for _, t := range topics {
		c.WithLabelValues(t, reasonRetention)
		c.WithLabelValues(t, reasonTruncated)
	}
	return c
}

// adjustOffsets is the client's AdjustFetchOffsetsFn: it runs once the
// group's committed offsets of newly assigned partitions are fetched and
// before they are consumed. Each committed offset outside its log is moved
// into it (bound); partitions without one keep the start offset, except
// those of a topic topics_regex matched only after startup (Options.Matched),
// which start at their first record.
func (s *Source) adjustOffsets(ctx context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	committed := map[string]map[int32]int64{}
	for t, ps := range offs {
		if s.recreated.take(t) {
			// The group's offsets of this topic are the deleted one's: the
			// new topic is read from start_offset, as a topic never read.
			start := kgo.NewOffset().AtStart()
			if s.o.Config.StartOffset == "latest" {
				start = kgo.NewOffset().AtEnd()
			}
			for part := range ps {
				ps[part] = start
			}
			s.log.Info("the topic was created again: its partitions start at source.kafka.start_offset, not at the deleted topic's committed offsets",
				"topic", t, "start_offset", s.o.Config.StartOffset)
			continue
		}
		newTopic := s.sub.Pattern() && s.o.Matched != nil && !slices.Contains(s.o.Matched, t)
		for part, o := range ps {
			if at := o.EpochOffset().Offset; at < 0 && newTopic && s.o.Config.StartOffset == "latest" {
				// A topic created while etl runs holds only records
				// produced since: start_offset latest would skip those
				// written before the group assigned it.
				ps[part] = kgo.NewOffset().AtStart()
			} else if at >= 0 {
				if committed[t] == nil {
					committed[t] = map[int32]int64{}
				}
				committed[t][part] = at
			}
		}
	}
	if len(committed) == 0 {
		return offs, nil
	}
	moved := s.bound(ctx, committed)
	for t, ps := range committed {
		for part, at := range ps {
			if to, ok := moved[t][part]; ok {
				offs[t][part] = kgo.NewOffset().At(to).WithEpoch(-1)
				at = to
			}
			s.pos.set(t, part, at)
		}
	}
	return offs, nil
}

// bound compares committed offsets with their partitions' logs and returns
// where those outside must resume instead: the log start for an offset
// below it, the log end for one above it. Each is logged at ERROR and
// counted. When the logs cannot be listed it warns and returns nothing:
// the client's reset offset (the log start) then decides.
func (s *Source) bound(ctx context.Context, committed map[string]map[int32]int64) map[string]map[int32]int64 {
	cl := s.client.Load()
	if cl == nil {
		return nil
	}
	topics := make([]string, 0, len(committed))
	for t, ps := range committed {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	sort.Strings(topics)
	lctx, cancel := context.WithTimeout(ctx, listLimit)
	defer cancel()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(lctx, topics...)
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(lctx, topics...)
	}
	if err != nil {
		s.log.Warn("could not read the log start and end of the assigned partitions to check their committed offsets: "+
			"a committed offset outside the log resumes at the log start", "topics", topics, "err", err)
		return nil
	}
	moved := map[string]map[int32]int64{}
	for _, t := range topics {
		for part, c := range committed[t] {
			st, ok1 := starts.Lookup(t, part)
			en, ok2 := ends.Lookup(t, part)
			if !ok1 || !ok2 || st.Err != nil || en.Err != nil {
				lerr := errors.Join(st.Err, en.Err)
				if lerr == nil {
					lerr = errors.New("the broker did not list the partition")
				}
				s.log.Warn("could not read the log start and end of a partition to check its committed offset: "+
					"a committed offset outside the log resumes at the log start", "topic", t, "partition", part, "committed", c, "err", lerr)
				continue
			}
			var to int64
			switch {
			case c < st.Offset:
				to = st.Offset
				s.skip(t, reasonRetention, st.Offset-c)
				s.log.Error("records skipped: the committed offset is below the log start (retention deleted records the group had not read); "+
					"resuming at the log start", "topic", t, "partition", part, "committed", c, "log_start", st.Offset, "log_end", en.Offset,
					"skipped", st.Offset-c, "reason", reasonRetention)
			case c > en.Offset:
				to = en.Offset
				s.skip(t, reasonTruncated, c-en.Offset)
				s.log.Error("records skipped: the committed offset is above the log end (the log was truncated or the topic recreated): "+
					"the offsets between them are no longer in the log; resuming at the log end", "topic", t, "partition", part,
					"committed", c, "log_start", st.Offset, "log_end", en.Offset, "skipped", c-en.Offset, "reason", reasonTruncated)
			default:
				continue
			}
			if moved[t] == nil {
				moved[t] = map[int32]int64{}
			}
			moved[t][part] = to
			if s.o.Resumed != nil {
				s.o.Resumed(t, part, to)
			}
		}
	}
	return moved
}

func (s *Source) skip(topic, reason string, n int64) {
	if n > 0 {
		s.metrics.skipped.WithLabelValues(topic, reason).Add(float64(n))
	}
}

// checkGap is called for each partition's records of a poll before they
// are handed over: when the first record is above the partition's position
// and so is the log start the fetch reported, retention deleted the
// records between them before they were read and the client resumed at the
// log start. (A gap with the log start at or below the position is
// compaction or transaction markers: nothing was lost.) The position then
// moves past the last record.
func (s *Source) checkGap(p *kgo.FetchTopicPartition) {
	if len(p.Records) == 0 {
		return
	}
	first := p.Records[0].Offset
	if n, ok := s.pos.get(p.Topic, p.Partition); ok && first > n && p.LogStartOffset > n {
		to := min(first, p.LogStartOffset)
		s.skip(p.Topic, reasonRetention, to-n)
		s.log.Error("records skipped: retention deleted records of a partition before they were read (the consumer fell behind the log start); "+
			"resumed at the log start", "topic", p.Topic, "partition", p.Partition, "consumed_to", n, "reset_to", to,
			"log_start", p.LogStartOffset, "log_end", p.HighWatermark, "skipped", to-n, "reason", reasonRetention)
	}
	s.pos.set(p.Topic, p.Partition, p.Records[len(p.Records)-1].Offset+1)
}

// dataLoss reports a broker that lost records: the client moved the
// partition from ConsumedTo to ResetTo. Forward, the records between were
// never read (retention); backward, the offsets between were consumed and
// the log no longer has them (truncated; the records written there again
// are below the pipeline's position).
func (s *Source) dataLoss(e *kgo.ErrDataLoss) {
	reason, n := reasonTruncated, e.ConsumedTo-e.ResetTo
	msg := "records skipped: the broker lost records of a partition and the client moved its position back from consumed_to to reset_to; " +
		"records the broker holds at the offsets between are not written (the pipeline has already passed them)"
	if e.ResetTo > e.ConsumedTo {
		reason, n = reasonRetention, e.ResetTo-e.ConsumedTo
		msg = "records skipped: the broker lost records of a partition and the client moved its position forward from consumed_to to reset_to; " +
			"the records between were not read"
	}
	s.skip(e.Topic, reason, n)
	s.pos.set(e.Topic, e.Partition, e.ResetTo)
	s.log.Error(msg, "topic", e.Topic, "partition", e.Partition, "consumed_to", e.ConsumedTo, "reset_to", e.ResetTo,
		"skipped", n, "reason", reason, "err", e)
}

// topicSet is a set of topic names safe for concurrent use.
type topicSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (ts *topicSet) mark(topic string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]bool{}
	}
	ts.m[topic] = true
}

// take reports whether topic is in the set and removes it.
func (ts *topicSet) take(topic string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ok := ts.m[topic]
	delete(ts.m, topic)
	return ok
}
