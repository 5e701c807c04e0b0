package kafka

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/names"
)

// MissingTopic is a source topic the brokers do not know, with the
// existing topic its name is closest to, if any is close ("" otherwise).
// Under source.kafka.topics_regex, it stands for no topic matching:
// Pattern is the anchored expression and Topic is empty.
type MissingTopic struct {
	Topic   string
	Closest string
	Pattern string
}

// String is the topic, or under a pattern "a topic matching" it.
func (m MissingTopic) String() string {
	if m.Pattern != "" {
		return "a topic matching " + m.Pattern
	}
	return m.Topic
}

// MissingTopics asks the brokers, with a client configured as the
// source's, which of sub's topics do not exist (under a pattern: whether
// none matches), and which exist: the topics consumed now. It also
// returns the topics that exist, for messages. It returns the request's
// error when they could not be asked.
func MissingTopics(ctx context.Context, c *config.Kafka, sub *Subscription) (missing []MissingTopic, matched, existing []string, err error) {
	opts, err := clientOpts(c)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1))...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cl.Close()
	// Every topic the principal may see: the candidates of a did-you-mean.
	existing, err = Existing(ctx, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	matched = sub.Match(existing)
	if sub.Pattern() {
		if len(matched) == 0 {
			missing = append(missing, MissingTopic{Pattern: sub.String()})
		}
		return missing, matched, existing, nil
	}
	for _, topic := range sub.Listed() {
		if !slices.Contains(existing, topic) {
			missing = append(missing, MissingTopic{Topic: topic, Closest: names.Closest(topic, existing)})
		}
	}
	return missing, matched, existing, nil
}

// missingTopics are the source topics missing at startup that
// source.kafka.wait_for_topics waits for (Options.Missing). The poll loop
// looks them up every missingCheckEvery, warns every missingWarnEvery
// while any is missing, and makes the client refresh its metadata once
// one exists, so that the group assigns it at once.
type missingTopics struct {
	mu     sync.Mutex
	topics []string
	// Used by the poll loop only.
	checked, warned time.Time
}

const (
	missingCheckEvery = 2 * time.Second
	missingWarnEvery  = 30 * time.Second
)

// MissingTopics returns the source topics missing at startup that do not
// exist yet.
func (s *Source) MissingTopics() []string {
	s.missing.mu.Lock()
	defer s.missing.mu.Unlock()
	return slices.Clone(s.missing.topics)
}

// checkMissing looks up the missing topics, from the poll loop.
func (s *Source) checkMissing(ctx context.Context) {
	m := &s.missing
	topics := s.MissingTopics()
	now := time.Now()
	if len(topics) == 0 || now.Sub(m.checked) < missingCheckEvery {
		return
	}
	m.checked = now
	if s.sub.Pattern() {
		s.checkMatching(ctx, now)
		return
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	mctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	resp, err := req.RequestWith(mctx, s.cl)
	cancel()
	if err != nil {
		return
	}
	var still, found []string
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err == nil && len(t.Partitions) > 0 {
			found = append(found, *t.Topic)
		} else if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(err) {
			still = append(still, *t.Topic)
		}
	}
	m.mu.Lock()
	m.topics = still
	m.mu.Unlock()
	if len(found) > 0 {
		s.log.Info("source topics exist now: consuming them", "topics", found)
		s.cl.ForceMetadataRefresh()
	}
	if len(still) > 0 && now.Sub(m.warned) >= missingWarnEvery {
		m.warned = now
		s.log.Warn("source topics do not exist: waiting for them (source.kafka.wait_for_topics); not ready meanwhile", "topics", still)
	}
}

// checkMatching is checkMissing under source.kafka.topics_regex: it waits
// for a first topic the pattern matches.
func (s *Source) checkMatching(ctx context.Context, now time.Time) {
	m := &s.missing
	mctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	existing, err := Existing(mctx, s.cl)
	cancel()
	if err != nil {
		return
	}
	if found := s.sub.Match(existing); len(found) > 0 {
		m.mu.Lock()
		m.topics = nil
		m.mu.Unlock()
		s.log.Info("source topics matching source.kafka.topics_regex exist now: consuming them", "topics", found)
		s.cl.ForceMetadataRefresh()
		return
	}
	if now.Sub(m.warned) >= missingWarnEvery {
		m.warned = now
		s.log.Warn("no topic matches source.kafka.topics_regex: waiting for one (source.kafka.wait_for_topics); not ready meanwhile", "topics_regex", s.sub.String())
	}
}
