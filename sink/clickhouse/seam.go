package clickhouse

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/etl-project/etl/chunk"
)

// Inserter is a replica as a Shard uses it. *Client is the real one; any
// other (a fake in tests, a simulated server) runs the same batching loop,
// retries, breakers and bisection.
type Inserter interface {
	// Insert writes chunks, all built for target, as one INSERT. It
	// returns nil once the server took them, or an error the shard
	// classifies with Permanent, RowRejected, missingColumn and
	// unknownStatus (a server exception, ch-go's or clickhouse-go's,
	// carries its code: exceptionCode).
	Insert(ctx context.Context, target *Target, chunks []*chunk.Chunk) error
	// EncodedCopy is about the bytes an insert of a batch of rows rows
	// and bytes chunk bytes holds in encoded form while it runs; the
	// shard counts them in its Budget.
	EncodedCopy(rows, bytes int) int
	// Addr names the replica in logs and labels its metrics.
	Addr() string
}

// partsLister is an Inserter that can list the parts its replica keeps
// and ZooKeeper lacks (Client.UnregisteredParts), for ReportOrphans. A
// replica that cannot is not looked at.
type partsLister interface {
	UnregisteredParts(ctx context.Context) ([]Part, error)
}

// Inserters returns clients as the replicas of a shard.
func Inserters(clients []*Client) []Inserter {
	out := make([]Inserter, len(clients))
	for i, c := range clients {
		out[i] = c
	}
	return out
}

// Clock is a shard's source of time: the linger and idle timers, the
// retry backoff, the breakers' open time and the durations it reports.
type Clock interface {
	Now() time.Time
	// NewTimer returns a running timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a timer of a Clock, with time.Timer's semantics (Go 1.23 and
// later): once Stop or Reset returned, its channel yields no time from
// before.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// systemClock is the clock of package time.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// fullJitter is a uniform wait in [0, d].
func fullJitter(d time.Duration) time.Duration { return rand.N(d + 1) }
