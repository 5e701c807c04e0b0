package kafka

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
)

// Subscription is the set of topics the source consumes: the topics of
// source.kafka.topics, or, under source.kafka.topics_regex, every topic
// whose whole name the expression matches except internal topics (any
// name starting with "__") and the excluded ones (the dead-letter topic),
// which are never consumed even when they match.
type Subscription struct {
	list    []string
	re      *regexp.Regexp
	exclude []string
}

// NewSubscription returns c's subscription, never consuming exclude.
func NewSubscription(c *config.Kafka, exclude ...string) (*Subscription, error) {
	re, err := c.TopicPattern()
	if err != nil {
		return nil, fmt.Errorf("source.kafka.topics_regex: invalid regular expression %q: %w", c.TopicsRegex, err)
	}
	var ex []string
	for _, t := range exclude {
		if t != "" && !slices.Contains(ex, t) {
			ex = append(ex, t)
		}
	}
	return &Subscription{list: slices.Clone(c.Topics), re: re, exclude: ex}, nil
}

// SubscriptionOf is cfg's subscription, which never consumes its
// dead-letter topic (decode.dlq.topic): a record dead-lettered would come
// back as a source record.
func SubscriptionOf(cfg *config.Config) (*Subscription, error) {
	var dlq string
	if d := cfg.Decode.DLQ; d != nil {
		dlq = d.Topic
	}
	return NewSubscription(cfg.Source.Kafka, dlq)
}

// Pattern reports whether the topics are matched by a regular expression
// (source.kafka.topics_regex) rather than named.
func (s *Subscription) Pattern() bool { return s.re != nil }

// Key is the configuration key the subscription comes from.
func (s *Subscription) Key() string {
	if s.re != nil {
		return "source.kafka.topics_regex"
	}
	return "source.kafka.topics"
}

// String is the anchored expression, or the listed topics.
func (s *Subscription) String() string {
	if s.re != nil {
		return s.re.String()
	}
	return strings.Join(s.list, ", ")
}

// Listed are the named topics (nil under a pattern).
func (s *Subscription) Listed() []string { return slices.Clone(s.list) }

// Consumes reports whether topic is one the source consumes.
func (s *Subscription) Consumes(topic string) bool {
	if s.re == nil {
		return slices.Contains(s.list, topic)
	}
	return !strings.HasPrefix(topic, "__") && !slices.Contains(s.exclude, topic) && s.re.MatchString(topic)
}

// Match returns, sorted, the topics of existing the source consumes
// (under a list: the listed topics that exist); never nil.
func (s *Subscription) Match(existing []string) []string {
	out := []string{}
	for _, t := range existing {
		if s.Consumes(t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// Topics returns the topics the source consumes now: the listed ones as
// they are (whether they exist or not), or those existing topics the
// pattern matches (Existing through cl), sorted.
func (s *Subscription) Topics(ctx context.Context, cl *kgo.Client) ([]string, error) {
	if s.re == nil {
		return s.Listed(), nil
	}
	existing, err := Existing(ctx, cl)
	if err != nil {
		return nil, err
	}
	return s.Match(existing), nil
}

// Existing asks the brokers for every topic the client's principal may
// see, and returns the names of those that exist with partitions,
// internal ones included.
func Existing(ctx context.Context, cl *kgo.Client) ([]string, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list the topics: %w", err)
	}
	var out []string
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if t.ErrorCode == 0 && len(t.Partitions) > 0 {
			out = append(out, *t.Topic)
		}
	}
	return out, nil
}

// consumeOpts are the client options that subscribe to s. Under a
// pattern franz-go matches it against every topic of each metadata
// refresh: the expression is anchored (config.AnchorTopicRegex), franz-go
// itself skips the topics the brokers mark internal, and the "__" names
// and the excluded topics are excluded by name.
func (s *Subscription) consumeOpts() []kgo.Opt {
	if s.re == nil {
		return []kgo.Opt{kgo.ConsumeTopics(s.list...)}
	}
	ex := []string{`^__`}
	for _, t := range s.exclude {
		ex = append(ex, "^"+regexp.QuoteMeta(t)+"$")
	}
	return []kgo.Opt{kgo.ConsumeTopics(s.re.String()), kgo.ConsumeRegex(), kgo.ConsumeExcludeTopics(ex...)}
}
