package schemaregistry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome label values of etl_schema_fetches_total.
const (
	outcomeOK       = "ok"
	outcomeNotFound = "not_found"
	outcomeError    = "error"
)

// metrics are the client's metrics; every label value is resolved here, at
// construction, never per request.
type metrics struct {
	fetchOK, fetchNotFound, fetchError prometheus.Counter
	cacheEntries                       prometheus.Gauge
	fetchDuration                      prometheus.Observer
}

// newMetrics builds the metrics and registers them with reg (nil: not
// registered). A collector reg already holds with the same description is
// reused, so two clients on one registry share the series; any other
// registration failure is returned.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	fetches := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_schema_fetches_total",
		Help: "Schema registry requests, by outcome (ok, not_found, error).",
	}, []string{"outcome"})
	entries := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etl_schema_cache_entries",
		Help: "Schemas held in the schema registry client's cache.",
	})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "etl_schema_fetch_duration_seconds",
		Help:    "Duration of one schema registry request, whatever its outcome.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms .. 16 s
	})
	if reg != nil {
		var err error
		if fetches, err = register(reg, fetches); err != nil {
			return nil, err
		}
		if entries, err = register(reg, entries); err != nil {
			return nil, err
		}
		if duration, err = register(reg, duration); err != nil {
			return nil, err
		}
	}
	return &metrics{
		fetchOK:       fetches.WithLabelValues(outcomeOK),
		fetchNotFound: fetches.WithLabelValues(outcomeNotFound),
		fetchError:    fetches.WithLabelValues(outcomeError),
		cacheEntries:  entries,
		fetchDuration: duration,
	}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("schemaregistry: registering metrics: %w", err)
	}
	return c, nil
}
