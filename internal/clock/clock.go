// Package clock is the source of time of the pipeline's loops: the
// controller's and the committer's tickers, the revoke's and the stop's
// drain deadlines, the exactly-once assignment's and the dead-letter
// writes' retries. Production uses System, package time's clock; the
// simulation (pipeline/sim_test.go) its own, whose timers fire as it moves
// time on.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers and tickers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a running timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that fires every d (d > 0), dropping
	// ticks for a slow receiver as time.Ticker does.
	NewTicker(d time.Duration) Ticker
	// WithTimeout is context.WithTimeout on this clock: the context ends
	// with context.DeadlineExceeded d from now.
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// AfterFunc calls f, on a goroutine of the clock's choosing, d from
	// now, as time.AfterFunc does; the timer's channel is not used.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer of a Clock, with time.Timer's semantics (Go 1.23 and
// later): once Stop or Reset returned, its channel yields no time from
// before.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is a ticker of a Clock, with time.Ticker's semantics.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// System is package time's clock.
var System Clock = system{}

type system struct{}

func (system) Now() time.Time                            { return time.Now() }
func (system) NewTimer(d time.Duration) Timer            { return sysTimer{time.NewTimer(d)} }
func (system) NewTicker(d time.Duration) Ticker          { return sysTicker{time.NewTicker(d)} }
func (system) AfterFunc(d time.Duration, f func()) Timer { return sysTimer{time.AfterFunc(d, f)} }
func (system) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }
