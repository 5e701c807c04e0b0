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
type MissingTopic struct {
	Topic   string
	Closest string
}

// MissingTopics asks the brokers, with a client configured as the
// source's, which of c.Topics do not exist. It returns the request's error
// when they could not be asked.
func MissingTopics(ctx context.Context, c *config.Kafka) ([]MissingTopic, error) {
	opts, err := clientOpts(c)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Every topic the principal may see: the candidates of a did-you-mean.
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var existing []string
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 && len(t.Partitions) > 0 {
			existing = append(existing, *t.Topic)
		}
	}
	var out []MissingTopic
	for _, topic := range c.Topics {
		if !slices.Contains(existing, topic) {
			out = append(out, MissingTopic{Topic: topic, Closest: names.Closest(topic, existing)})
		}
	}
	return out, nil
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
