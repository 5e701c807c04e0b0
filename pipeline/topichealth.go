package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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

// checkSourceTopics asks the brokers whether every source topic exists
// (under source.kafka.topics_regex: whether one matches). A missing one is
// a ConfigError naming it (with the closest existing name, if one is
// close; under a pattern, with topics that exist) unless
// source.kafka.wait_for_topics is set: then it is returned, for the
// source to wait for. It also returns the topics matched now (nil when
// not known). Brokers that cannot be asked within sourceTopicsTimeout are
// left to the source's own handling (logged).
func checkSourceTopics(ctx context.Context, cfg *config.Config, sub *kafka.Subscription, log *slog.Logger) (missing, matched []string, err error) {
	k := cfg.Source.Kafka
	tctx, cancel := context.WithTimeout(ctx, sourceTopicsTimeout)
	absent, matched, existing, err := kafka.MissingTopics(tctx, k, sub)
	cancel()
	if err != nil {
		log.Warn("source topics not checked: the brokers did not answer", "err", err)
		return nil, nil, nil
	}
	if sub.Pattern() && len(matched) > 0 {
		log.Info("source topics matched by source.kafka.topics_regex", "topics_regex", sub.String(), "topics", matched)
	}
	if len(absent) == 0 {
		return nil, matched, nil
	}
	var names []string
	var errs []error
	for _, m := range absent {
		names = append(names, m.String())
		if m.Pattern != "" {
			errs = append(errs, fmt.Errorf("source.kafka.topics_regex: no topic matches %s today (topics: %s): correct the expression, or set source.kafka.wait_for_topics: true to wait for one",
				m.Pattern, someTopics(existing)))
			continue
		}
		hint := ""
		if m.Closest != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", m.Closest)
		}
		errs = append(errs, fmt.Errorf("source.kafka.topics: topic %q does not exist%s: create it or correct the name, or set source.kafka.wait_for_topics: true to wait for it", m.Topic, hint))
	}
	if !k.WaitForTopics {
		return nil, nil, &ConfigError{Errs: errs}
	}
	log.Warn("source topics do not exist: waiting for them (source.kafka.wait_for_topics); not ready meanwhile", "topics", names)
	return names, matched, nil
}

// someTopics names up to 10 of the topics that are not internal, for a
// message.
func someTopics(existing []string) string {
	var out []string
	for _, t := range existing {
		if !strings.HasPrefix(t, "__") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	slices.Sort(out)
	if len(out) > 10 {
		return strings.Join(out[:10], ", ") + fmt.Sprintf(" and %d more", len(out)-10)
	}
	return strings.Join(out, ", ")
}
