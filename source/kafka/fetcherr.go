package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch errors. The client retries most fetch errors by itself and hands
// the poll loop only those it does not: UNKNOWN_TOPIC_ID (the topic was
// deleted, or deleted and created again), authorization failures, corrupt
// batches. Each is counted (etl_source_fetch_errors_total) and logged at
// most every fetchErrLogEvery.
//
// A partition is failing from its first error until records arrive from
// it, or until no error of it has come for fetchErrQuiet (the error stopped
// recurring: an idle partition fetches no records, and the poll loop
// polls at least every fetchBackoffMax plus a poll while errors come).
// FetchFailing reports the partition failing the longest once it has
// failed for unreachable_timeout: /healthz answers 503 with it.
//
// A poll that returns errors and no record is followed by a wait,
// fetchBackoffMin doubling up to fetchBackoffMax, reset by a poll that
// returns records: the client fetches again only once the poll loop has
// taken the last answer, so the wait bounds the fetches as well.
//
// A topic answered with UNKNOWN_TOPIC_ID is looked up in the brokers'
// metadata (at most every fetchRecheckEvery): when it exists under
// another topic ID than the one the client fetches with, it was deleted
// and created again, and the client is made to forget it and subscribe to
// it again (franz-go never moves to the new topic by itself): the group
// rebalances, the old topic's partitions are revoked (their commits are
// refused: the old topic is gone) and the new one's are assigned and read
// from source.kafka.start_offset (the brokers dropped the group's
// committed offsets with the old topic).

const (
	fetchBackoffMin   = 100 * time.Millisecond
	fetchBackoffMax   = 5 * time.Second
	fetchErrLogEvery  = 5 * time.Second
	fetchErrQuiet     = 15 * time.Second
	fetchRecheckEvery = 2 * time.Second
	metadataTimeout   = 5 * time.Second
)

// fetchState is the poll loop's record of fetch errors: the failing
// partitions, the backoff, and the topics to look up.
type fetchState struct {
	mu      sync.Mutex
	failing map[topicPartition]*partFailure
	gone    map[string]string // topic -> what the metadata said, for the health message

	// Used by the poll loop only.
	backoff  time.Duration
	logged   time.Time
	pollErrs int                  // errors of the last poll
	unknown  map[string]bool      // topics answered UNKNOWN_TOPIC_ID in the last poll
	checked  map[string]time.Time // topics looked up in the metadata, and when
}

type topicPartition struct {
	topic     string
	partition int32
}

type partFailure struct {
	first, last time.Time
	err         string
}

// fetchError records one fetch error of a poll. The poll loop calls it
// for each error but those of a cancelled poll.
func (s *Source) fetchError(topic string, partition int32, err error) {
	f := &s.fetch
	s.metrics.fetchErrors.Inc()
	now := time.Now()
	f.pollErrs++
	if errors.Is(err, kerr.UnknownTopicID) {
		if f.unknown == nil {
			f.unknown = map[string]bool{}
		}
		f.unknown[topic] = true
	}
	f.mu.Lock()
	if f.failing == nil {
		f.failing = map[topicPartition]*partFailure{}
	}
	tp := topicPartition{topic, partition}
	pf := f.failing[tp]
	if pf == nil || now.Sub(pf.last) > fetchErrQuiet {
		pf = &partFailure{first: now}
		f.failing[tp] = pf
	}
	pf.last, pf.err = now, err.Error()
	f.mu.Unlock()
	if now.Sub(f.logged) > fetchErrLogEvery {
		f.logged = now
		s.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
	}
}

// afterPoll ends a poll, after AllowRebalance: partitions that brought
// records are healthy again; topics answered UNKNOWN_TOPIC_ID are looked
// up; and a poll that brought errors and no record is followed by the
// backoff. It returns at once when ctx ends.
func (s *Source) afterPoll(ctx context.Context, fs kgo.Fetches) {
	f := &s.fetch
	errs, records := f.pollErrs, false
	f.pollErrs = 0
	ids := map[string][16]byte{}
	now := time.Now()
	f.mu.Lock()
	for _, ft := range fs {
		for _, t := range ft.Topics {
			for _, p := range t.Partitions {
				if p.Err != nil {
					ids[t.Topic] = t.TopicID
					continue
				}
				if len(p.Records) > 0 {
					records = true
					delete(f.failing, topicPartition{t.Topic, p.Partition})
				}
			}
		}
	}
	for tp, pf := range f.failing {
		if now.Sub(pf.last) > fetchErrQuiet {
			delete(f.failing, tp)
		}
	}
	f.mu.Unlock()
	for topic := range f.unknown {
		if now.Sub(f.checked[topic]) >= fetchRecheckEvery {
			if f.checked == nil {
				f.checked = map[string]time.Time{}
			}
			f.checked[topic] = now
			s.checkRecreated(ctx, topic, ids[topic])
		}
	}
	clear(f.unknown)
	s.checkMissing(ctx)
	if records || errs == 0 {
		f.backoff = 0
		return
	}
	f.backoff = min(max(2*f.backoff, fetchBackoffMin), fetchBackoffMax)
	t := time.NewTimer(f.backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// checkRecreated looks topic up in the brokers' metadata after an
// UNKNOWN_TOPIC_ID answer to a fetch made with topic ID oldID: when the
// topic exists under another ID, the client forgets it and subscribes to
// it again.
func (s *Source) checkRecreated(ctx context.Context, topic string, oldID [16]byte) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	mctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	resp, err := req.RequestWith(mctx, s.cl)
	cancel()
	if err != nil || len(resp.Topics) != 1 {
		return // the next error asks again
	}
	t := resp.Topics[0]
	var note string
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		note = "the topic does not exist any more"
	case err != nil:
		note = "the topic's metadata: " + err.Error()
	case t.TopicID == oldID || oldID == [16]byte{}:
		// The same topic (or a broker that does not say): a broker
		// that has not caught up yet.
	default:
		s.log.Warn("source topic was deleted and created again: consuming the new topic from source.kafka.start_offset; the old topic's uncommitted records are gone with it",
			"topic", topic, "old_topic_id", fmt.Sprintf("%x", oldID), "new_topic_id", fmt.Sprintf("%x", t.TopicID),
			"start_offset", s.o.Config.StartOffset)
		s.recreated.mark(topic)
		s.cl.PurgeTopicsFromClient(topic)
		if s.sub.Pattern() {
			// A purged topic is matched again by the next refresh
			// (AddConsumeTopics does nothing under a pattern).
			s.cl.ForceMetadataRefresh()
		} else {
			s.cl.AddConsumeTopics(topic)
		}
		note = "the topic was deleted and created again; subscribed to the new one"
	}
	s.fetch.mu.Lock()
	if s.fetch.gone == nil {
		s.fetch.gone = map[string]string{}
	}
	if note == "" {
		delete(s.fetch.gone, topic)
	} else {
		s.fetch.gone[topic] = note
	}
	s.fetch.mu.Unlock()
}

// FetchFailure is a source partition whose fetches have failed, without a
// record fetched in between, for For.
type FetchFailure struct {
	Topic     string
	Partition int32
	For       time.Duration
	Err       string // the last error, and what the metadata says of the topic
}

func (f FetchFailure) String() string {
	return fmt.Sprintf("%s/%d has not fetched for %s: %s", f.Topic, f.Partition, f.For.Round(time.Second), f.Err)
}

// FetchFailing returns the partitions that have been failing for at least
// limit, the longest first.
func (s *Source) FetchFailing(limit time.Duration) []FetchFailure {
	f := &s.fetch
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FetchFailure
	for tp, pf := range f.failing {
		if now.Sub(pf.last) > fetchErrQuiet || pf.last.Sub(pf.first) < limit {
			continue
		}
		msg := pf.err
		if g := f.gone[tp.topic]; g != "" {
			msg += " (" + g + ")"
		}
		out = append(out, FetchFailure{Topic: tp.topic, Partition: tp.partition, For: now.Sub(pf.first), Err: msg})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].For != out[j].For {
			return out[i].For > out[j].For
		}
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
