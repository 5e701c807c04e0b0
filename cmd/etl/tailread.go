package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tailFrom is where etl tail starts reading each partition (-from).
type tailFrom struct {
	earliest, latest bool
	at               time.Time // by time when not zero
	// otherwise the last -n records of each partition (the log start
	// with -n 0)
}

// parseTailFrom reads -from.
func parseTailFrom(s string) (tailFrom, error) {
	switch s {
	case "":
		return tailFrom{}, nil
	case "earliest":
		return tailFrom{earliest: true}, nil
	case "latest":
		return tailFrom{latest: true}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return tailFrom{}, fmt.Errorf("-from %q: want earliest, latest or an RFC 3339 time (2026-12-01T10:00:00Z)", s)
	}
	return tailFrom{at: t}, nil
}

// tailPart is one partition etl tail reads: from offset from, up to end,
// the log end when it started.
type tailPart struct {
	topic     string
	partition int32
	from, end int64
}

func (p tailPart) String() string { return fmt.Sprintf("%s/%d", p.topic, p.partition) }

// errNoPartition marks a -partitions entry the topics lack: a mistake on
// the command line.
var errNoPartition = errors.New("no such partition")

// planTail asks the brokers for the partitions of topics (those of parts
// when given), their log start and end, and the offsets of from, and
// returns where each partition is read from and where it ends.
func planTail(ctx context.Context, adm *kadm.Client, topics []string, parts []int32, from tailFrom, n int) ([]tailPart, error) {
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var byTime kadm.ListedOffsets
	if !from.at.IsZero() {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, from.at.UnixMilli(), topics...); err != nil {
			return nil, err
		}
	}
	var plan []tailPart
	for _, t := range topics {
		ps, ok := ends[t]
		var terr error
		for _, o := range ps {
			if o.Err != nil && terr == nil {
				terr = o.Err
			}
		}
		switch {
		case !ok || len(ps) == 0 || errors.Is(terr, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("source.kafka.topics: topic %q does not exist", t)
		case terr != nil:
			return nil, fmt.Errorf("topic %s: %w", t, terr)
		}
		have := make([]int32, 0, len(ps))
		for p := range ps {
			have = append(have, p)
		}
		slices.Sort(have)
		for _, want := range parts {
			if _, ok := ps[want]; !ok {
				return nil, fmt.Errorf("-partitions: %w %d: topic %s has %d partitions (%s)", errNoPartition, want, t, len(have), partitionRange(have))
			}
		}
		for _, p := range have {
			if len(parts) > 0 && !slices.Contains(parts, p) {
				continue
			}
			tp := tailPart{topic: t, partition: p, end: ps[p].Offset}
			start := int64(0)
			if s, ok := starts.Lookup(t, p); ok && s.Err == nil {
				start = s.Offset
			}
			switch {
			case from.earliest:
				tp.from = start
			case from.latest:
				tp.from = tp.end
			case !from.at.IsZero():
				tp.from = tp.end // no record at or after the time
				if o, ok := byTime.Lookup(t, p); ok && o.Err == nil && o.Offset >= 0 {
					tp.from = o.Offset
				}
			case n > 0:
				tp.from = max(start, tp.end-int64(n))
			default:
				tp.from = start
			}
			plan = append(plan, tp)
		}
	}
	return plan, nil
}

// partitionRange is "0-5" for partitions 0 to 5, or their list.
func partitionRange(ps []int32) string {
	if len(ps) > 0 && int(ps[len(ps)-1]-ps[0]) == len(ps)-1 {
		return fmt.Sprintf("%d-%d", ps[0], ps[len(ps)-1])
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// consumeFrom is plan as the client's partitions to consume.
func consumeFrom(plan []tailPart) map[string]map[int32]kgo.Offset {
	m := map[string]map[int32]kgo.Offset{}
	for _, p := range plan {
		if m[p.topic] == nil {
			m[p.topic] = map[int32]kgo.Offset{}
		}
		m[p.topic][p.partition] = kgo.NewOffset().At(p.from)
	}
	return m
}
