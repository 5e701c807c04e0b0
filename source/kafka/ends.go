package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Listed is one partition's offset from a listing: the offset, or the
// error the brokers gave for that partition.
type Listed struct {
	Offset int64
	Err    error
}

// ListEnds lists the log end offsets (high watermarks) of every partition
// of topics, on the consumer's own client. The error is for the listing as
// a whole (no broker answered, ctx ended); a partition the brokers could
// not list carries its own Err.
func (s *Source) ListEnds(ctx context.Context, topics []string) (map[string]map[int32]Listed, error) {
	return s.list(ctx, topics, true)
}

// ListStarts lists the log start offsets of every partition of topics, as
// ListEnds does the ends.
func (s *Source) ListStarts(ctx context.Context, topics []string) (map[string]map[int32]Listed, error) {
	return s.list(ctx, topics, false)
}

func (s *Source) list(ctx context.Context, topics []string, end bool) (map[string]map[int32]Listed, error) {
	// The admin client borrows the consumer's connections; it is not
	// closed (closing it would close the consumer).
	adm := kadm.NewClient(s.cl)
	var listed kadm.ListedOffsets
	var err error
	if end {
		listed, err = adm.ListEndOffsets(ctx, topics...)
	} else {
		listed, err = adm.ListStartOffsets(ctx, topics...)
	}
	if err != nil && len(listed) == 0 {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	// Shard errors (some brokers answered) leave the partitions they
	// cover out of listed: the caller treats those as not listed.
	out := map[string]map[int32]Listed{}
	listed.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]Listed{}
		}
		out[o.Topic][o.Partition] = Listed{Offset: o.Offset, Err: o.Err}
	})
	if err != nil {
		return out, fmt.Errorf("list offsets: %w", err)
	}
	return out, nil
}
