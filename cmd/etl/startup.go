package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/pipeline"
)

// Startup backoff: the wait after the first failed attempt, doubled after
// each one up to the cap. The cap keeps a member that started during a
// long ClickHouse outage at most 30 s behind the end of it (plus one
// attempt), and its log at one line per 30 s.
const (
	startBackoffMin = time.Second
	startBackoffMax = 30 * time.Second
)

// startup builds the pipeline, trying again while ClickHouse cannot be
// reached, and answers the probes until the pipeline exists. Every other
// error of pipeline.New (the server answered with an error, the
// configuration is refused) ends it at once.
type startup struct {
	opts    pipeline.Options // Registerer is set for each attempt
	log     *slog.Logger
	metrics *metricsView
	// timeout bounds each attempt; backoffMin and backoffMax bound the
	// wait between attempts.
	timeout, backoffMin, backoffMax time.Duration

	p       atomic.Pointer[pipeline.Pipeline]
	mu      sync.Mutex
	failedN int   // attempts that failed
	waiting error // the last attempt's error, nil before the first failure
}

// newStartup returns the startup of the pipeline o describes, with the
// metrics view it serves etl_pipeline_state{state="starting"} on meanwhile.
func newStartup(o pipeline.Options, base *prometheus.Registry) (*startup, error) {
	starting := prometheus.NewRegistry()
	if err := pipeline.RegisterStarting(starting, o.Config.Pipeline.Name); err != nil {
		return nil, err
	}
	return &startup{
		opts: o, log: o.Log, metrics: newMetricsView(base, starting),
		timeout: pipeline.StartTimeout(o.Config), backoffMin: startBackoffMin, backoffMax: startBackoffMax,
	}, nil
}

// run calls pipeline.New until it succeeds, fails with an error that is not
// pipeline.Unavailable, or ctx is cancelled (then it returns ctx's error at
// once; an attempt under way first gives up, which its connection
// handshake may delay by up to sink.clickhouse.dial_timeout). Each attempt
// registers its metrics on a registry of its own, shown on /metrics only
// once the attempt succeeded: a failed attempt leaves nothing registered.
func (s *startup) run(ctx context.Context) (*pipeline.Pipeline, error) {
	began := time.Now()
	b := backoff{min: s.backoffMin, max: s.backoffMax}
	for {
		reg := prometheus.NewRegistry()
		o := s.opts
		o.Registerer = reg
		actx, cancel := context.WithTimeout(ctx, s.timeout)
		p, err := pipeline.New(actx, o)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			s.metrics.show(reg)
			s.p.Store(p)
			if s.failures() > 0 {
				s.log.Info("ClickHouse answered: pipeline built", "attempts", s.failures()+1,
					"waited", time.Since(began).Round(time.Millisecond))
			}
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if timedOut && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: no answer within %v: %w", pipeline.ErrUnavailable, s.timeout, err)
		}
		if !pipeline.Unavailable(err) {
			return nil, err
		}
		wait := b.next()
		n := s.failed(err)
		s.log.Warn("cannot reach ClickHouse: waiting before starting again", "attempt", n,
			"retry_in", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// backoff is the wait between startup attempts: min after the first
// failure, doubled after each one up to max, each wait less up to a quarter
// at random so that members started together do not try together.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // the last wait before its jitter; 0 before the first
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur - rand.N(b.cur/4+1)
}

func (s *startup) failed(err error) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failedN++
	s.waiting = err
	return s.failedN
}

func (s *startup) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failedN
}

// Health answers /healthz: the pipeline's answer once it is built; 200
// before, as waiting for ClickHouse is no reason to restart the process.
func (s *startup) Health() (bool, string) {
	if p := s.p.Load(); p != nil {
		return p.Health()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting != nil {
		return true, fmt.Sprintf("starting: waiting for ClickHouse (failed attempts: %d)", s.failedN)
	}
	return true, "starting"
}

// Ready answers /readyz: the pipeline's answer once it is built; 503 before,
// with the last attempt's error.
func (s *startup) Ready(ctx context.Context) (bool, string) {
	if p := s.p.Load(); p != nil {
		return p.Ready(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting != nil {
		return false, "waiting for ClickHouse: " + s.waiting.Error()
	}
	return false, "pipeline is starting"
}
