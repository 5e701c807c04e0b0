package pipeline

import "github.com/prometheus/client_golang/prometheus"

// metrics are the pipeline's own metrics, built once from the injected
// registerer; label values are resolved when a lane is created, never per
// record.
type metrics struct {
	lanesPaused  prometheus.Gauge
	decodeErrors *prometheus.CounterVec
	commits      prometheus.Counter
	lag          *prometheus.GaugeVec
	watermarkAge prometheus.Gauge
	tableChanges prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		lanesPaused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "etl_backpressure_paused",
			Help: "Partitions paused at the source now, by a full shard queue or the byte budget.",
		}),
		decodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_decode_errors_total",
			Help: "Records that could not be decoded, by reason.",
		}, []string{"reason"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_checkpoint_commits_total",
			Help: "Offset commits that succeeded.",
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_source_lag_records",
			Help: "Records between the last fetched offset and the partition's high watermark.",
		}, []string{"topic", "partition"}),
		watermarkAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "etl_checkpoint_watermark_age_seconds",
			Help: "Longest time a partition with records in flight has gone without its committable watermark moving (0 when nothing is in flight).",
		}),
		tableChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_sink_table_changes_total",
			Help: "Times the target table's insertable columns were found changed (ALTER TABLE) and followed.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.lanesPaused, m.decodeErrors, m.commits, m.lag, m.watermarkAge, m.tableChanges)
	}
	return m
}
