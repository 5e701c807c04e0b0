package kafka

import (
	"slices"
	"testing"

	"github.com/etl-project/etl/config"
)

func TestSubscriptionConsumes(t *testing.T) {
	sub, err := NewSubscription(&config.Kafka{TopicsRegex: `.*ev\..*`}, "ev.dlq", "")
	if err != nil {
		t.Fatal(err)
	}
	existing := []string{"ev.b", "ev.a", "ev.dlq", "__ev.hidden", "__consumer_offsets", "other", "ev.a.v2", "xev.a"}
	if got, want := sub.Match(existing), []string{"ev.a", "ev.a.v2", "ev.b", "xev.a"}; !slices.Equal(got, want) {
		t.Errorf("Match = %v, want %v", got, want)
	}
	if !sub.Pattern() || sub.Key() != "source.kafka.topics_regex" || sub.String() != `^(?:.*ev\..*)$` {
		t.Errorf("pattern subscription: %v %q %q", sub.Pattern(), sub.Key(), sub)
	}
	if got := sub.Match([]string{"other"}); got == nil || len(got) != 0 {
		t.Errorf("no match: Match = %#v, want an empty, non-nil slice", got)
	}

	list, err := NewSubscription(&config.Kafka{Topics: []string{"b", "a", "ev.dlq"}}, "ev.dlq")
	if err != nil {
		t.Fatal(err)
	}
	// Listed topics are consumed as listed: the exclusions are for a
	// pattern's matches.
	if got, want := list.Match([]string{"a", "ev.dlq", "c"}), []string{"a", "ev.dlq"}; !slices.Equal(got, want) {
		t.Errorf("list: Match = %v, want %v", got, want)
	}
	if list.Pattern() || list.Key() != "source.kafka.topics" {
		t.Errorf("list subscription: %v %q", list.Pattern(), list.Key())
	}
	if _, err := NewSubscription(&config.Kafka{TopicsRegex: `(`}); err == nil {
		t.Error("an invalid expression: no error")
	}
}
