package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/source/kafka"
)

// fetchHealth reports source partitions whose fetches have failed, with
// no record fetched in between, for source.kafka.unreachable_timeout
// (kafka.Source.FetchFailing): the topic deleted, or an error the client
// does not retry. A source without that report (the simulation's) is
// healthy.
func (p *Pipeline) fetchHealth() (bool, string) {
	k := p.cfg.Source.Kafka
	src, ok := p.src.(interface {
		FetchFailing(limit time.Duration) []kafka.FetchFailure
	})
	if k == nil || k.UnreachableTimeout <= 0 || !ok {
		return true, ""
	}
	f := src.FetchFailing(k.UnreachableTimeout.D())
	if len(f) == 0 {
		return true, ""
	}
	parts := make([]string, len(f))
	for i, x := range f {
		parts[i] = x.String()
	}
	return false, fmt.Sprintf("source partitions failing to fetch for longer than source.kafka.unreachable_timeout (%s): %s",
		k.UnreachableTimeout.D(), strings.Join(parts, "; "))
}

// topicsReady reports source topics missing at startup that
// source.kafka.wait_for_topics waits for (kafka.Source.MissingTopics).
func (p *Pipeline) topicsReady() (bool, string) {
	src, ok := p.src.(interface{ MissingTopics() []string })
	if !ok {
		return true, ""
	}
	if m := src.MissingTopics(); len(m) > 0 {
		return false, fmt.Sprintf("waiting for source topics to exist (source.kafka.wait_for_topics): %s", strings.Join(m, ", "))
	}
	return true, ""
}

// sourceTopicsTimeout bounds New's question about the source topics.
const sourceTopicsTimeout = 5 * time.Second

// checkSourceTopics asks the brokers whether every source topic exists. A
// missing one is a ConfigError naming it (with the closest existing name,
// if one is close) unless source.kafka.wait_for_topics is set: then it is
// returned, for the source to wait for. Brokers that cannot be asked
// within sourceTopicsTimeout are left to the source's own handling
// (logged).
func checkSourceTopics(ctx context.Context, cfg *config.Config, log *slog.Logger) ([]string, error) {
	k := cfg.Source.Kafka
	tctx, cancel := context.WithTimeout(ctx, sourceTopicsTimeout)
	missing, err := kafka.MissingTopics(tctx, k)
	cancel()
	if err != nil {
		log.Warn("source topics not checked: the brokers did not answer", "err", err)
		return nil, nil
	}
	if len(missing) == 0 {
		return nil, nil
	}
	var names []string
	var errs []error
	for _, m := range missing {
		names = append(names, m.Topic)
		hint := ""
		if m.Closest != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", m.Closest)
		}
		errs = append(errs, fmt.Errorf("source.kafka.topics: topic %q does not exist%s: create it or correct the name, or set source.kafka.wait_for_topics: true to wait for it", m.Topic, hint))
	}
	if !k.WaitForTopics {
		return nil, &ConfigError{Errs: errs}
	}
	log.Warn("source topics do not exist: waiting for them (source.kafka.wait_for_topics); not ready meanwhile", "topics", names)
	return names, nil
}
