package pipeline

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/transform"
)

// metrics are the pipeline's own metrics, built once from the injected
// registerer; label values are resolved when a lane is created, never per
// record.
type metrics struct {
	lanesPaused   prometheus.Gauge
	budgetHolds   prometheus.Counter
	decodeErrors  *prometheus.CounterVec
	commits       prometheus.Counter
	watermarkAge  prometheus.Gauge
	tableChanges  prometheus.Counter
	schemaChanges *prometheus.CounterVec
	state         *prometheus.GaugeVec
	e2eLatency    prometheus.Histogram

	transformIn, transformOut, transformDropped prometheus.Counter
	transformErrors                             *prometheus.CounterVec

	// cdcSkipped counts change events the envelope skipped, by reason
	// (transform.SkipTruncate, ...); cdcTombstones the tombstones dropped.
	cdcSkipped    map[string]prometheus.Counter
	cdcSkippedVec *prometheus.CounterVec
	cdcTombstones prometheus.Counter
	// cdcWarned is when a skipped event of each reason was last logged.
	cdcWarned sync.Map
}

// Pipeline states, the values of etl_pipeline_state's state label.
const (
	stateStarting = "starting"
	stateRunning  = "running"
	stateDraining = "draining"
	stateStalled  = "stalled"
	stateStopped  = "stopped"
)

var states = []string{stateStarting, stateRunning, stateDraining, stateStalled, stateStopped}

// components returns the registerer of each component: reg with the
// pipeline and component labels. With a nil reg every one is nil.
func components(reg prometheus.Registerer, pipeline string) func(component string) prometheus.Registerer {
	return func(component string) prometheus.Registerer {
		if reg == nil {
			return nil
		}
		return prometheus.WrapRegistererWith(prometheus.Labels{"pipeline": pipeline, "component": component}, reg)
	}
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return newComponentMetrics(func(string) prometheus.Registerer { return reg })
}

func newComponentMetrics(component func(string) prometheus.Registerer) *metrics {
	m := &metrics{
		lanesPaused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "etl_backpressure_paused",
			Help: "Partitions paused at the source now: by a full shard queue under the rules of backpressure.partition_read_ahead (at once after a read-ahead decoded since the last resume, or with 0; otherwise once the lane holds its read-ahead undecoded), by the byte budget or, with exactly-once, by the bound of open blocks.",
		}),
		budgetHolds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_backpressure_decode_holds_total",
			Help: "Times a lane stopped decoding because the in-flight bytes were past backpressure.max_inflight_bytes while the sink held chunks; it resumes once acknowledgements release budget.",
		}),
		decodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_decode_errors_total",
			Help: "Records that could not be decoded, by reason.",
		}, []string{"reason"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_checkpoint_commits_total",
			Help: "Offset commits that succeeded.",
		}),
		watermarkAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "etl_checkpoint_watermark_age_seconds",
			Help: "Longest time a partition with records in flight has gone without its committable watermark moving (0 when nothing is in flight).",
		}),
		tableChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_sink_table_changes_total",
			Help: "Times the target table's insertable columns were found changed (ALTER TABLE) and followed.",
		}),
		schemaChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_schema_changes_total",
			Help: "Tables created (change create_table) and columns added (add_column) by sink.clickhouse.schema, by sink.",
		}, []string{"sink", "change"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_pipeline_state",
			Help: "1 for the pipeline's current state (starting, running, draining, stalled, stopped), 0 for the others.",
		}, []string{"state"}),
		e2eLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "etl_e2e_latency_seconds",
			Help:    "Per chunk: from the Kafka timestamp of its oldest record to the insert that made it durable.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 14),
		}),
		transformIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_transform_records_total",
			Help: "Records that went through the transform chain.",
		}),
		transformOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_transform_rows_out_total",
			Help: "Rows the transform chain produced (each counted once per sink it went to).",
		}),
		transformDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "etl_transform_rows_dropped_total",
			Help: "Rows dropped by a filter step or routed to skip.",
		}),
		transformErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_transform_errors_total",
			Help: "Records the transform chain refused, by reason.",
		}, []string{"reason"}),
	}
	m.cdcSkippedVec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_cdc_skipped_total",
		Help: "Change events the debezium envelope made no row of, by reason (truncate, message, unknown_op).",
	}, []string{"reason"})
	m.cdcTombstones = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etl_cdc_tombstones_total",
		Help: "Tombstones (null values) the debezium envelope dropped.",
	})
	m.cdcSkipped = map[string]prometheus.Counter{}
	for _, r := range []string{transform.SkipTruncate, transform.SkipMessage, transform.SkipUnknownOp} {
		m.cdcSkipped[r] = m.cdcSkippedVec.WithLabelValues(r)
	}
	for _, r := range []string{"out_of_range", "wrong_type", "transform", "unroutable"} {
		m.transformErrors.WithLabelValues(r)
	}
	for _, st := range states {
		m.state.WithLabelValues(st)
	}
	m.state.WithLabelValues(stateStarting).Set(1)
	for _, r := range []decode.Reason{decode.ReasonCorrupt, decode.ReasonWrongType, decode.ReasonOutOfRange,
		decode.ReasonTooLarge, decode.ReasonUnknownSchema, decode.ReasonSchemaMismatch} {
		m.decodeErrors.WithLabelValues(string(r))
	}
	register := func(name string, cs ...prometheus.Collector) {
		if reg := component(name); reg != nil {
			reg.MustRegister(cs...)
		}
	}
	register("backpressure", m.lanesPaused, m.budgetHolds)
	register("decode", m.decodeErrors, m.cdcSkippedVec, m.cdcTombstones)
	register("checkpoint", m.commits, m.watermarkAge)
	register("sink", m.tableChanges, m.schemaChanges)
	register("pipeline", m.state, m.e2eLatency)
	register("transform", m.transformIn, m.transformOut, m.transformDropped, m.transformErrors)
	return m
}
