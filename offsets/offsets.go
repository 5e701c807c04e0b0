// Package offsets shows where a consumer group stands on its topics and
// moves its committed offsets: what `etl offsets` and `etl offsets reset`
// run. It reads the exactly-once blocks a pipeline keeps in its commit
// metadata (checkpoint.DecodeBlocks) and clears them when it moves a
// partition.
package offsets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/etl-project/etl/checkpoint"
)

// Partition is where the group stands on one partition.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset: the next record it
	// reads. -1: nothing committed.
	Committed int64 `json:"committed"`
	// Start and End are the log's first offset and the offset after its
	// last record (the high watermark).
	Start int64 `json:"log_start"`
	End   int64 `json:"log_end"`
	// Lag is End minus Committed, or End minus Start with nothing
	// committed: the records the group has yet to read.
	Lag int64 `json:"lag"`
	// Pending are the exactly-once blocks in the commit metadata that are
	// not yet below the committed offset, as [first, next) offsets:
	// blocks registered for an insert whose outcome the next owner
	// checks before reading on.
	Pending [][2]int64 `json:"pending_blocks"`
	// MetadataBytes is the size of the commit's metadata (the
	// exactly-once blocks; 0 at at-least-once): what each commit of the
	// partition carries besides its offset.
	MetadataBytes int `json:"metadata_bytes"`
}

// Member is one member of the group.
type Member struct {
	ID       string             `json:"member_id"`
	Instance string             `json:"instance_id,omitempty"`
	ClientID string             `json:"client_id"`
	Host     string             `json:"host"`
	Assigned map[string][]int32 `json:"assigned"`
}

// Report is where a group stands on its topics.
type Report struct {
	Group      string      `json:"group"`
	State      string      `json:"state"`
	Members    []Member    `json:"members"`
	Partitions []Partition `json:"partitions"`
}

// Describe reads group's state, members and committed offsets, and the
// log start and end of every partition of topics.
func Describe(ctx context.Context, adm *kadm.Client, group string, topics []string) (*Report, error) {
	r := &Report{Group: group, Members: []Member{}}
	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	g := groups[group]
	if g.Err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, g.Err)
	}
	r.State = g.State
	for _, m := range g.Members {
		mem := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: map[string][]int32{}}
		if m.InstanceID != nil {
			mem.Instance = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				mem.Assigned[t.Topic] = ps
			}
		}
		r.Members = append(r.Members, mem)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetch the committed offsets of group %s: %w", group, err)
	}
	if err := committed.Error(); err != nil {
		return nil, fmt.Errorf("fetch the committed offsets of group %s: %w", group, err)
	}
	starts, err := listed(adm.ListStartOffsets(ctx, topics...))
	if err != nil {
		return nil, fmt.Errorf("list the log start offsets of %v: %w", topics, err)
	}
	ends, err := listed(adm.ListEndOffsets(ctx, topics...))
	if err != nil {
		return nil, fmt.Errorf("list the log end offsets of %v: %w", topics, err)
	}
	for _, t := range topics {
		if _, ok := ends[t]; !ok {
			return nil, fmt.Errorf("topic %s does not exist", t)
		}
	}
	ends.Each(func(e kadm.ListedOffset) {
		p := Partition{Topic: e.Topic, Partition: e.Partition, Committed: -1, End: e.Offset, Pending: [][2]int64{}}
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok {
			p.Start = s.Offset
		}
		p.Lag = p.End - p.Start
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.At >= 0 {
			p.Committed = c.At
			p.Lag = max(0, p.End-c.At)
			p.MetadataBytes = len(c.Metadata)
			blocks, err := checkpoint.DecodeBlocks(c.Metadata)
			if err == nil {
				for _, b := range blocks {
					if b[1] > c.At {
						p.Pending = append(p.Pending, b)
					}
				}
			}
		}
		r.Partitions = append(r.Partitions, p)
	})
	slices.SortFunc(r.Partitions, func(a, b Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return r, nil
}

// listed returns offsets unless the listing or any partition of it failed.
func listed(offs kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err != nil {
		return nil, err
	}
	var first error
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && first == nil {
			if o.Partition < 0 {
				first = fmt.Errorf("topic %s: %w", o.Topic, o.Err)
			} else {
				first = fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err)
			}
		}
	})
	return offs, first
}

// Target is where a reset moves partitions: the log start (Earliest), its
// end (Latest), the first record at or after a time (Time), or an offset.
type Target struct {
	Earliest, Latest bool
	Time             time.Time // non-zero: by time
	Offset           int64     // otherwise
}

// ParseTarget reads -to: earliest, latest, an RFC 3339 time or an offset.
func ParseTarget(s string) (Target, error) {
	switch s {
	case "earliest":
		return Target{Earliest: true}, nil
	case "latest":
		return Target{Latest: true}, nil
	case "":
		return Target{}, errors.New("-to is required: earliest, latest, an RFC 3339 time or an offset")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return Target{}, fmt.Errorf("-to %s: an offset is at least 0", s)
		}
		return Target{Offset: n}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Target{}, fmt.Errorf("-to %q: want earliest, latest, an RFC 3339 time (2026-12-01T10:00:00Z) or an offset", s)
	}
	return Target{Time: t}, nil
}

func (t Target) String() string {
	switch {
	case t.Earliest:
		return "earliest"
	case t.Latest:
		return "latest"
	case !t.Time.IsZero():
		return t.Time.Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(t.Offset, 10)
}

// Move is one partition's planned reset.
type Move struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"` // the committed offset; -1: none
	To        int64  `json:"to"`
	// Clamped: an offset target outside the log was moved to its start
	// or end.
	Clamped bool `json:"clamped,omitempty"`
	// Cleared are the exactly-once blocks pending in the metadata, which
	// the reset drops.
	Cleared [][2]int64 `json:"cleared_blocks,omitempty"`
}

// Plan works out the reset of the partitions of r (a Describe of now)
// selected by topics and parts (empty: all) to target.
func Plan(ctx context.Context, adm *kadm.Client, r *Report, topics []string, parts []int32, target Target) ([]Move, error) {
	var byTime kadm.ListedOffsets
	if !target.Time.IsZero() {
		var err error
		byTime, err = listed(adm.ListOffsetsAfterMilli(ctx, target.Time.UnixMilli(), topics...))
		if err != nil {
			return nil, fmt.Errorf("list the offsets at %s: %w", target, err)
		}
	}
	var moves []Move
	for _, p := range r.Partitions {
		if !slices.Contains(topics, p.Topic) || (len(parts) > 0 && !slices.Contains(parts, p.Partition)) {
			continue
		}
		m := Move{Topic: p.Topic, Partition: p.Partition, From: p.Committed, Cleared: p.Pending}
		switch {
		case target.Earliest:
			m.To = p.Start
		case target.Latest:
			m.To = p.End
		case !target.Time.IsZero():
			o, ok := byTime.Lookup(p.Topic, p.Partition)
			if !ok || o.Offset < 0 {
				m.To = p.End // no record at or after the time
			} else {
				m.To = o.Offset
			}
		default:
			m.To = min(max(target.Offset, p.Start), p.End)
			m.Clamped = m.To != target.Offset
		}
		moves = append(moves, m)
	}
	for _, want := range parts {
		found := false
		for _, m := range moves {
			found = found || m.Partition == want
		}
		if !found {
			return nil, fmt.Errorf("partition %d is not a partition of %v", want, topics)
		}
	}
	return moves, nil
}

// ErrActive is returned by Execute while the group has members.
var ErrActive = errors.New("the group has members")

// Active returns an ErrActive error naming the members while the report
// shows the group with members, nil otherwise: a reset is refused then.
func (r *Report) Active() error {
	if len(r.Members) == 0 {
		return nil
	}
	ids := make([]string, 0, len(r.Members))
	for _, m := range r.Members {
		ids = append(ids, m.Host+" "+m.ID)
	}
	return activeError(r.Group, r.State, ids)
}

func activeError(group, state string, ids []string) error {
	return fmt.Errorf("%w (state %s: %s); stop every etl of group %s first, or its next commit overwrites the reset", ErrActive, state, strings.Join(ids, ", "), group)
}

// Execute commits the moves for group, with empty metadata (so the
// exactly-once blocks of the moved partitions are gone). It refuses, with
// ErrActive, while the group has members: a running pipeline would
// overwrite the offsets with its next commit.
func Execute(ctx context.Context, adm *kadm.Client, group string, moves []Move) error {
	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	if g := groups[group]; len(g.Members) > 0 {
		ids := make([]string, 0, len(g.Members))
		for _, m := range g.Members {
			ids = append(ids, m.ClientHost+" "+m.MemberID)
		}
		return activeError(group, g.State, ids)
	}
	var offs kadm.Offsets
	for _, m := range moves {
		offs.Add(kadm.Offset{Topic: m.Topic, Partition: m.Partition, At: m.To, LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		return fmt.Errorf("commit the new offsets of group %s: %w", group, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("commit the new offsets of group %s: %w", group, err)
	}
	return nil
}
