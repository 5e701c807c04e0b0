package clickhouse

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the sink's metrics. They are created once per process (per
// registry) and shared by every shard: each vector carries a "shard" label,
// and each Shard resolves its children once, in NewShard, so nothing looks a
// label value up per chunk, batch or record.
type Metrics struct {
	queueDepth     *prometheus.GaugeVec
	queueCapacity  *prometheus.GaugeVec
	queueFull      *prometheus.CounterVec
	records        *prometheus.CounterVec
	bytes          *prometheus.CounterVec
	batchRows      *prometheus.HistogramVec
	batchBytes     *prometheus.HistogramVec
	flushes        *prometheus.CounterVec
	insertDuration *prometheus.HistogramVec
	retries        *prometheus.CounterVec
	errors         *prometheus.CounterVec
	inflight       *prometheus.GaugeVec
	replicaHealthy *prometheus.GaugeVec
	replicaErrors  *prometheus.CounterVec
	breakerOpens   *prometheus.CounterVec
	bisections     *prometheus.CounterVec
	rejected       *prometheus.CounterVec
	unknownStatus  *prometheus.CounterVec
	orphans        *prometheus.CounterVec
	defaulted      *prometheus.CounterVec
	// defaultedLog limits the warning about a column the data never fills
	// to one per table and column and hour, across the sink's shards.
	defaultedLog *hourly
}

// Flush reasons: why a batch was closed.
const (
	reasonRows   = "rows"
	reasonBytes  = "bytes"
	reasonLinger = "linger"
	reasonIdle   = "idle"
	reasonDrain  = "drain"
	reasonSchema = "schema"
	reasonStart  = "start"
)

// NewMetrics creates the sink's metrics with constLabels on every series and
// registers them with reg (nil: not registered, e.g. in tests). A collector
// reg already holds with the same description is reused, so two calls on one
// registry share the series. Like promauto, it panics when reg rejects a
// collector for any other reason (an invalid or conflicting description):
// that is a programming error, not a runtime condition.
func NewMetrics(reg prometheus.Registerer, constLabels prometheus.Labels) *Metrics {
	shard := []string{"shard"}
	m := &Metrics{
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_queue_depth", Help: "Chunks waiting in the shard's sink queue.", ConstLabels: constLabels,
		}, shard),
		queueCapacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_queue_capacity", Help: "Capacity of the shard's sink queue, in chunks.", ConstLabels: constLabels,
		}, shard),
		queueFull: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_queue_full_events_total", Help: "Chunks rejected because the shard's sink queue was full (backpressure signals).", ConstLabels: constLabels,
		}, shard),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_records_total", Help: "Rows inserted into ClickHouse.", ConstLabels: constLabels,
		}, shard),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_bytes_total", Help: "Bytes of column buffers inserted into ClickHouse.", ConstLabels: constLabels,
		}, shard),
		batchRows: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etl_sink_batch_rows", Help: "Rows per insert batch.", ConstLabels: constLabels,
			Buckets: prometheus.ExponentialBuckets(16, 4, 10), // 16 .. 4Mi
		}, shard),
		batchBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etl_sink_batch_bytes", Help: "Bytes per insert batch.", ConstLabels: constLabels,
			Buckets: prometheus.ExponentialBuckets(4096, 4, 10), // 4 KiB .. 1 GiB
		}, shard),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_flushes_total", Help: "Batches closed, by reason (rows, bytes, linger, idle, drain, schema).", ConstLabels: constLabels,
		}, []string{"shard", "reason"}),
		insertDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etl_sink_insert_duration_seconds", Help: "Duration of one insert attempt, by outcome (ok, error).", ConstLabels: constLabels,
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms .. 41 s
		}, []string{"shard", "replica", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_retries_total", Help: "Insert attempts retried after a transient error.", ConstLabels: constLabels,
		}, shard),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_errors_total", Help: "Failed insert attempts, by kind (transient, permanent).", ConstLabels: constLabels,
		}, []string{"shard", "kind"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_sink_inflight_batches", Help: "Insert batches in flight (including those waiting to retry).", ConstLabels: constLabels,
		}, shard),
		replicaHealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_sink_replica_healthy", Help: "1 while the replica's circuit breaker is closed, 0 while it is open or half-open.", ConstLabels: constLabels,
		}, []string{"shard", "replica"}),
		replicaErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_replica_errors_total", Help: "Insert attempts that failed on the replica (transient errors).", ConstLabels: constLabels,
		}, []string{"shard", "replica"}),
		bisections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_bisections_total", Help: "Batches the server refused for the values of some rows, bisected to find their records.", ConstLabels: constLabels,
		}, shard),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_rejected_records_total", Help: "Records whose rows the server refused, found by bisection and handed to on_error.", ConstLabels: constLabels,
		}, shard),
		breakerOpens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_sink_breaker_opens_total", Help: "Times the replica's circuit breaker opened.", ConstLabels: constLabels,
		}, []string{"shard", "replica"}),
	}
	m.unknownStatus = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_sink_unknown_status_total", Help: "Insert attempts that ended with UNKNOWN_STATUS_OF_INSERT (319): the replica lost ZooKeeper while registering the block.", ConstLabels: constLabels,
	}, shard)
	m.orphans = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_sink_orphan_parts_total", Help: "Parts found on a replica that ZooKeeper never registered (left by an insert whose status was unknown): their rows read twice until the replica restarts.", ConstLabels: constLabels,
	}, shard)
	m.defaulted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etl_sink_defaulted_rows_total", Help: "Rows inserted with a column at its default because no record of the batch had the column's field (the whole batch lacked it: a mapped field no record has).", ConstLabels: constLabels,
	}, []string{"table", "column"})
	m.defaultedLog = newHourly()
	if reg == nil {
		return m
	}
	m.queueDepth = register(reg, m.queueDepth)
	m.queueCapacity = register(reg, m.queueCapacity)
	m.queueFull = register(reg, m.queueFull)
	m.records = register(reg, m.records)
	m.bytes = register(reg, m.bytes)
	m.batchRows = register(reg, m.batchRows)
	m.batchBytes = register(reg, m.batchBytes)
	m.flushes = register(reg, m.flushes)
	m.insertDuration = register(reg, m.insertDuration)
	m.retries = register(reg, m.retries)
	m.errors = register(reg, m.errors)
	m.inflight = register(reg, m.inflight)
	m.replicaHealthy = register(reg, m.replicaHealthy)
	m.replicaErrors = register(reg, m.replicaErrors)
	m.breakerOpens = register(reg, m.breakerOpens)
	m.bisections = register(reg, m.bisections)
	m.rejected = register(reg, m.rejected)
	m.unknownStatus = register(reg, m.unknownStatus)
	m.orphans = register(reg, m.orphans)
	m.defaulted = register(reg, m.defaulted)
	return m
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// shardMetrics are one shard's children, resolved once.
type shardMetrics struct {
	queueDepth, queueCapacity, inflight prometheus.Gauge
	queueFull, records, bytes, retries  prometheus.Counter
	batchRows, batchBytes               prometheus.Observer
	flush                               map[string]prometheus.Counter
	transient, permanent                prometheus.Counter
	bisections, rejected                prometheus.Counter
	unknownStatus                       prometheus.Counter
	orphans                             prometheus.Counter
	sink                                *Metrics // the vectors labelled by table and column
}

func (m *Metrics) forShard(shard string) *shardMetrics {
	return &shardMetrics{
		queueDepth:    m.queueDepth.WithLabelValues(shard),
		queueCapacity: m.queueCapacity.WithLabelValues(shard),
		inflight:      m.inflight.WithLabelValues(shard),
		queueFull:     m.queueFull.WithLabelValues(shard),
		records:       m.records.WithLabelValues(shard),
		bytes:         m.bytes.WithLabelValues(shard),
		retries:       m.retries.WithLabelValues(shard),
		batchRows:     m.batchRows.WithLabelValues(shard),
		batchBytes:    m.batchBytes.WithLabelValues(shard),
		flush: map[string]prometheus.Counter{
			reasonRows:   m.flushes.WithLabelValues(shard, reasonRows),
			reasonBytes:  m.flushes.WithLabelValues(shard, reasonBytes),
			reasonLinger: m.flushes.WithLabelValues(shard, reasonLinger),
			reasonIdle:   m.flushes.WithLabelValues(shard, reasonIdle),
			reasonDrain:  m.flushes.WithLabelValues(shard, reasonDrain),
			reasonSchema: m.flushes.WithLabelValues(shard, reasonSchema),
			reasonStart:  m.flushes.WithLabelValues(shard, reasonStart),
		},
		transient:     m.errors.WithLabelValues(shard, "transient"),
		permanent:     m.errors.WithLabelValues(shard, "permanent"),
		bisections:    m.bisections.WithLabelValues(shard),
		rejected:      m.rejected.WithLabelValues(shard),
		unknownStatus: m.unknownStatus.WithLabelValues(shard),
		orphans:       m.orphans.WithLabelValues(shard),
		sink:          m,
	}
}
