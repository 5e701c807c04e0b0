// Package backpressure holds the global in-flight byte budget and its pause
// controller: above the high watermark the pipeline pauses the Kafka
// partitions that feed it; it resumes them only when the budget is back below
// the low watermark and the minimum pause has passed (hysteresis), so the
// controller does not flap at the boundary.
package backpressure

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configures a Budget.
type Options struct {
	// Bytes is the budget: every byte between fetch and durable write.
	Bytes int64
	// HighRatio and LowRatio place the watermarks as fractions of Bytes.
	HighRatio, LowRatio float64
	// MinPause is the least time a pause lasts.
	MinPause time.Duration
	// Registerer receives the budget's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Action is what the caller must do after a Check.
type Action int

// Actions returned by Check.
const (
	None   Action = iota // nothing changes
	Pause                // the budget crossed the high watermark: pause
	Resume               // below the low watermark for long enough: resume
)

func (a Action) String() string {
	return [...]string{"none", "pause", "resume"}[a]
}

// Budget counts in-flight bytes and decides when to pause and resume.
//
// Add and Release are safe for concurrent use and never block; Check is
// safe for concurrent use and reports each state change exactly once.
type Budget struct {
	inflight  atomic.Int64
	budget    int64
	high, low int64
	minPause  time.Duration

	mu       sync.Mutex
	paused   bool
	pausedAt time.Time

	pauseEvents  prometheus.Counter
	pausedTotal  prometheus.Counter
	inflightPeak atomic.Int64
}

// New returns a budget. It fails when the options are inconsistent.
func New(o Options) (*Budget, error) {
	switch {
	case o.Bytes <= 0:
		return nil, fmt.Errorf("budget must be > 0, got %d", o.Bytes)
	case !(o.LowRatio > 0 && o.LowRatio < o.HighRatio && o.HighRatio <= 1):
		return nil, fmt.Errorf("watermarks must satisfy 0 < low_ratio < high_ratio <= 1, got low %v high %v", o.LowRatio, o.HighRatio)
	case o.MinPause < 0:
		return nil, fmt.Errorf("min_pause must be >= 0, got %v", o.MinPause)
	}
	b := &Budget{
		budget:   o.Bytes,
		high:     int64(float64(o.Bytes) * o.HighRatio),
		low:      int64(float64(o.Bytes) * o.LowRatio),
		minPause: o.MinPause,
		pauseEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_backpressure_pause_events_total",
			Help: "Times the in-flight byte budget crossed its high watermark and paused the source.",
		}),
		pausedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_backpressure_paused_seconds_total",
			Help: "Seconds the source spent paused by the in-flight byte budget.",
		}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(b.pauseEvents, b.pausedTotal,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "etl_backpressure_inflight_bytes",
				Help: "Bytes between fetch and durable write: fetched records, chunks, batches and inserts in flight.",
			}, func() float64 { return float64(b.inflight.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "etl_backpressure_budget_bytes",
				Help: "The in-flight byte budget (backpressure.max_inflight_bytes).",
			}, func() float64 { return float64(b.budget) }),
		)
	}
	return b, nil
}

// Add counts n more bytes in flight and returns the new total.
func (b *Budget) Add(n int64) int64 {
	v := b.inflight.Add(n)
	for {
		peak := b.inflightPeak.Load()
		if v <= peak || b.inflightPeak.CompareAndSwap(peak, v) {
			return v
		}
	}
}

// Release counts n bytes as no longer in flight.
func (b *Budget) Release(n int64) { b.inflight.Add(-n) }

// Inflight is the number of bytes in flight now.
func (b *Budget) Inflight() int64 { return b.inflight.Load() }

// Peak is the most bytes ever in flight at once.
func (b *Budget) Peak() int64 { return b.inflightPeak.Load() }

// Bytes is the budget.
func (b *Budget) Bytes() int64 { return b.budget }

// Over reports whether the in-flight bytes are at or above the high watermark.
func (b *Budget) Over() bool { return b.inflight.Load() >= b.high }

// Paused reports whether the budget holds the source paused.
func (b *Budget) Paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused
}

// Check compares the in-flight bytes with the watermarks at time now and
// returns the transition the caller must carry out, if any.
func (b *Budget) Check(now time.Time) Action {
	v := b.inflight.Load()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.paused && v >= b.high:
		b.paused, b.pausedAt = true, now
		b.pauseEvents.Inc()
		return Pause
	case b.paused && v <= b.low && now.Sub(b.pausedAt) >= b.minPause:
		b.paused = false
		b.pausedTotal.Add(now.Sub(b.pausedAt).Seconds())
		return Resume
	}
	return None
}

// Sizing holds the quantities of the budget's sizing rule.
type Sizing struct {
	Shards, MaxInflightPerShard, QueueCapacity int
	BatchMaxBytes, ChunkTargetBytes            int64
	LowRatio                                   float64
}

// Steady is what the sink legitimately keeps in flight in steady state:
// every shard's in-flight batches plus its full queue of chunks.
func (s Sizing) Steady() int64 {
	return int64(s.Shards)*int64(s.MaxInflightPerShard)*s.BatchMaxBytes +
		int64(s.Shards)*int64(s.QueueCapacity)*s.ChunkTargetBytes
}

// MinBudget is the smallest budget whose low watermark holds twice the
// steady-state in-flight bytes: max_inflight_bytes × low_ratio ≥ 2 × Steady.
func (s Sizing) MinBudget() int64 {
	return int64(float64(2*s.Steady())/s.LowRatio + 0.5)
}
