package pipeline

import (
	"context"
	"time"

	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/internal/loglimit"
	"github.com/etl-project/etl/source/kafka"
)

// TopicPartition names one partition of a topic: the checkpoint's, by
// which the pipeline keys its lanes.
type TopicPartition = checkpoint.TopicPartition

// sourceCommits commits through the pipeline's source: the checkpoint's
// Client.
type sourceCommits struct{ p *Pipeline }

func (s sourceCommits) Commit(ctx context.Context, commits []checkpoint.Commit) error {
	offs := make([]kafka.Offset, len(commits))
	for i, c := range commits {
		offs[i] = kafka.Offset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset, Metadata: c.Metadata}
	}
	return s.p.src.Commit(ctx, offs)
}

// newCommitter returns the committer of p's tracker through p's source,
// counted in p's metrics; the simulation's hook runs inside each commit
// (hookCommitted).
func newCommitter(p *Pipeline) *checkpoint.Committer {
	return checkpoint.NewCommitter(p.tracker, sourceCommits{p}, checkpoint.CommitterOptions{
		Log:     p.log,
		Commits: p.m.commits,
		Yield:   func() { p.yield(hookCommitted, nil) },
		FailLog: loglimit.New(1, commitFailLogEvery),
		Clock:   p.timing(),
		Woken:   func() { p.yield(hookCommitterWoken, nil) },
	})
}

// commitFailLogEvery is how often the periodic commit may log that it
// failed (the lines in between are counted in the next).
const commitFailLogEvery = 10 * time.Second
