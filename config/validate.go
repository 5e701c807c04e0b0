package config

import (
	"fmt"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rule checks one key path. Exactly one of required and check is set.
type rule struct {
	path string
	// when, if set, limits the rule to configs where it returns true.
	when func(*Config) bool
	// deps are other paths the rule reads; it is skipped if one of them
	// already has a problem, to avoid reporting the same mistake twice.
	deps []string
	// required reports whether the value is set. Parse additionally
	// requires the key to be present in the file.
	required func(*Config) bool
	// check returns a description of the problem, or "".
	check func(*Config) string
	// at, when the file does not set path, is the key whose position the
	// problem is reported at if the file sets it.
	at string
}

const (
	msec   = Duration(time.Millisecond)
	sec    = Duration(time.Second)
	minute = Duration(time.Minute)
	hour   = Duration(time.Hour)
)

func hasKafka(c *Config) bool { return c.Source.Kafka != nil }
func hasTLS(c *Config) bool   { return c.Source.Kafka != nil && c.Source.Kafka.TLS != nil }
func hasClickHouseTLS(c *Config) bool {
	return c.Sink.ClickHouse != nil && c.Sink.ClickHouse.TLS != nil
}
func hasSASL(c *Config) bool       { return c.Source.Kafka != nil && c.Source.Kafka.SASL != nil }
func hasClickHouse(c *Config) bool { return c.Sink.ClickHouse != nil }

var pipelineName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// rules holds every validation, in the order problems are checked. Each
// bound is a sanity bound meant to catch typos and unit mistakes, not to
// tune the system; the comment says why the limit is where it is.
var rules = []rule{
	{path: "pipeline.name", required: func(c *Config) bool { return c.Pipeline.Name != "" }},
	// The name becomes part of the Kafka client ID, whose legal characters
	// are [A-Za-z0-9._-]; 128 characters is plenty for a label.
	{path: "pipeline.name", check: func(c *Config) string {
		n := c.Pipeline.Name
		if !pipelineName.MatchString(n) || len(n) > 128 {
			return fmt.Sprintf("must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit; got %q", n)
		}
		return ""
	}},
	// 0 means GOMAXPROCS; more than 1024 decode workers only adds
	// scheduling overhead on any machine this runs on.
	{path: "pipeline.workers", check: func(c *Config) string { return intRange(c.Pipeline.Workers, 0, 1024) }},

	{path: "source.kafka", required: hasKafka},
	{path: "source.kafka.brokers", when: hasKafka, required: func(c *Config) bool { return len(c.Source.Kafka.Brokers) > 0 }},
	// The topics are named (topics) or matched (topics_regex): one of the
	// two, never both.
	{path: "source.kafka.topics", when: hasKafka, at: "source.kafka.topics_regex", check: func(c *Config) string {
		switch k := c.Source.Kafka; {
		case len(k.Topics) == 0 && k.TopicsRegex == "":
			return "required: set source.kafka.topics (a list of topics) or source.kafka.topics_regex (a pattern of topic names)"
		case len(k.Topics) > 0 && k.TopicsRegex != "":
			return "set source.kafka.topics or source.kafka.topics_regex, not both"
		}
		return ""
	}},
	{path: "source.kafka.topics_regex", when: hasKafka, deps: []string{"source.kafka.topics"}, check: func(c *Config) string {
		if _, err := c.Source.Kafka.TopicPattern(); err != nil {
			return fmt.Sprintf("invalid regular expression %q: %v", c.Source.Kafka.TopicsRegex, err)
		}
		return ""
	}},
	// franz-go asks at most every 5 s unless told otherwise; under 1s the
	// brokers are asked for every topic's metadata needlessly often, over
	// an hour a new topic waits longer than anyone would.
	{path: "source.kafka.metadata_max_age", when: hasKafka, check: func(c *Config) string {
		return durRange(c.Source.Kafka.MetadataMaxAge, sec, hour)
	}},
	{path: "source.kafka.group_id", when: hasKafka, required: func(c *Config) bool { return c.Source.Kafka.GroupID != "" }},
	{path: "source.kafka.start_offset", when: hasKafka, check: func(c *Config) string {
		return oneOf(c.Source.Kafka.StartOffset, "earliest", "latest")
	}},
	// Below 1KiB a single record header would not fit; Kafka caps fetch
	// responses at about 2GiB (int32), 1GiB leaves margin.
	{path: "source.kafka.fetch_max_bytes", when: hasKafka, check: func(c *Config) string {
		return sizeRange(c.Source.Kafka.FetchMaxBytes, KiB, GiB)
	}},
	{path: "source.kafka.fetch_max_partition_bytes", when: hasKafka, check: func(c *Config) string {
		return sizeRange(c.Source.Kafka.FetchMaxPartitionBytes, KiB, GiB)
	}},
	// 0 derives it from the fetch size and the budget; a batch must fit
	// in the budget to be read at all.
	{path: "source.kafka.max_decompressed_batch_bytes", when: hasKafka, check: func(c *Config) string {
		v := c.Source.Kafka.MaxDecompressedBatchBytes
		if v == 0 {
			return ""
		}
		if msg := sizeRange(v, 64*KiB, GiB); msg != "" {
			return msg + " (or 0: derived from fetch_max_partition_bytes and backpressure.max_inflight_bytes)"
		}
		if b := c.Backpressure.MaxInflightBytes; b > 0 && v > b {
			return fmt.Sprintf("must be at most backpressure.max_inflight_bytes (%s), got %s: a batch is decompressed only within the budget", b, v)
		}
		return ""
	}},
	// Brokers reject session timeouts outside group.min/max.session.timeout.ms
	// (6s and 30m by default); 1s..1h catches unit mistakes without
	// second-guessing a tuned broker.
	{path: "source.kafka.session_timeout", when: hasKafka, check: func(c *Config) string {
		return durRange(c.Source.Kafka.SessionTimeout, sec, hour)
	}},
	// Under 10s a broker restart would flap /healthz; over a day nobody
	// would notice.
	{path: "source.kafka.unreachable_timeout", when: hasKafka, check: func(c *Config) string {
		return durRange(c.Source.Kafka.UnreachableTimeout, 10*sec, 24*hour)
	}},
	// A rebalance must leave time to finish in-flight inserts; over an hour
	// the group is effectively stuck.
	{path: "source.kafka.rebalance_timeout", when: hasKafka, check: func(c *Config) string {
		return durRange(c.Source.Kafka.RebalanceTimeout, sec, hour)
	}},
	// The broker holds a fetch up to this long when no data is ready; a
	// partition resumed after a pause is fetched only by the next request,
	// so this bounds how long a resume waits. Over 30s the broker's
	// request timeout would cut it.
	{path: "source.kafka.fetch_max_wait", when: hasKafka, check: func(c *Config) string {
		return durRange(c.Source.Kafka.FetchMaxWait, Duration(10*time.Millisecond), 30*sec)
	}},
	// A client certificate is useless without its key and vice versa.
	{path: "source.kafka.tls.key_file", when: hasTLS, check: func(c *Config) string {
		if t := c.Source.Kafka.TLS; t.CertFile != "" && t.KeyFile == "" {
			return "must be set when cert_file is set"
		}
		return ""
	}},
	{path: "source.kafka.tls.cert_file", when: hasTLS, check: func(c *Config) string {
		if t := c.Source.Kafka.TLS; t.KeyFile != "" && t.CertFile == "" {
			return "must be set when key_file is set"
		}
		return ""
	}},
	{path: "source.kafka.sasl.mechanism", when: hasSASL, required: func(c *Config) bool { return c.Source.Kafka.SASL.Mechanism != "" }},
	{path: "source.kafka.sasl.mechanism", when: hasSASL, check: func(c *Config) string {
		return oneOf(c.Source.Kafka.SASL.Mechanism, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
	}},
	// Every supported mechanism authenticates a user name.
	{path: "source.kafka.sasl.username", when: hasSASL, required: func(c *Config) bool { return c.Source.Kafka.SASL.Username != "" }},
	{path: "source.kafka.sasl.password_file", when: hasSASL, check: func(c *Config) string {
		return secretFileProblem(c.Source.Kafka.SASL.Password, c.Source.Kafka.SASL.PasswordFile)
	}},

	{path: "decode.format", check: func(c *Config) string { return oneOf(c.Decode.Format, FormatJSON, FormatAvro, FormatRaw) }},
	{path: "decode.format", when: func(c *Config) bool { return c.Decode.Format == FormatRaw }, check: func(c *Config) string {
		if len(c.Transform) > 0 {
			return "raw records have no fields for transforms to read: leave transform out, or decode them as json or avro"
		}
		for _, s := range c.SinkList() {
			if s.ClickHouse != nil && !slices.Contains(slices.Collect(maps.Values(s.ClickHouse.Columns)), "_raw") {
				return fmt.Sprintf("raw: %s.columns maps no column to _raw, so the records' values would go nowhere", c.KeyPath(s))
			}
		}
		return ""
	}},
	{path: "decode.validate_schema", check: func(c *Config) string { return oneOf(c.Decode.ValidateSchema, "off", "names", "full") }},
	{path: "decode.avro.framing", check: func(c *Config) string {
		return oneOf(c.Decode.Avro.Framing, "confluent", "raw", "single_object")
	}},
	// Confluent framing names schemas by registry id; the other framings
	// carry no id, so the schema comes from a file.
	{path: "decode.avro.registry.url", when: func(c *Config) bool { return c.Decode.Format == FormatAvro && c.Decode.Avro.Framing == "confluent" },
		required: func(c *Config) bool { return c.Decode.Avro.Registry != nil && c.Decode.Avro.Registry.URL != "" }},
	{path: "decode.avro.registry.password_file", when: func(c *Config) bool { return c.Decode.Avro.Registry != nil }, check: func(c *Config) string {
		return secretFileProblem(c.Decode.Avro.Registry.Password, c.Decode.Avro.Registry.PasswordFile)
	}},
	{path: "decode.avro.schema_file", when: func(c *Config) bool { return c.Decode.Format == FormatAvro && c.Decode.Avro.Framing != "confluent" },
		required: func(c *Config) bool { return c.Decode.Avro.SchemaFile != "" }},
	{path: "decode.avro.negative_cache_ttl", check: func(c *Config) string {
		return durRange(c.Decode.Avro.NegativeCacheTTL, Duration(time.Second), 24*hour)
	}},
	{path: "decode.json.framing", check: func(c *Config) string { return oneOf(c.Decode.JSON.Framing, "single", "ndjson", "array") }},
	// Empty (a config built in code) means derived, as after loading.
	{path: "decode.on_error", when: func(c *Config) bool { return c.Decode.OnError != "" }, check: func(c *Config) string {
		return oneOf(c.Decode.OnError, OnErrorDLQ, OnErrorSkip, OnErrorFail)
	}},
	// Dead-lettering needs somewhere to write.
	{path: "decode.dlq.topic", when: func(c *Config) bool { return c.Decode.OnError == OnErrorDLQ },
		required: func(c *Config) bool { return c.Decode.DLQ != nil && c.Decode.DLQ.Topic != "" }},
	{path: "decode.max_record_bytes", check: func(c *Config) string {
		if c.Decode.MaxRecordBytes < 0 {
			return fmt.Sprintf("must be >= 0, got %d", c.Decode.MaxRecordBytes)
		}
		return ""
	}},
	{path: "decode.max_rows_per_record", check: func(c *Config) string {
		if c.Decode.MaxRowsPerRecord < 0 {
			return fmt.Sprintf("must be >= 0 (0: no limit), got %d", c.Decode.MaxRowsPerRecord)
		}
		return ""
	}},
	{path: "decode.max_bytes_per_record", check: func(c *Config) string {
		if c.Decode.MaxBytesPerRecord < 0 {
			return fmt.Sprintf("must be >= 0 (0: the smallest batch.max_bytes of the sinks), got %d", c.Decode.MaxBytesPerRecord)
		}
		return ""
	}},

	{path: "sink.clickhouse", required: hasClickHouse},
	{path: "sink.clickhouse.addr", when: func(c *Config) bool { return hasClickHouse(c) && len(c.Sink.ClickHouse.Shards) == 0 },
		required: func(c *Config) bool { return len(c.Sink.ClickHouse.Addr) > 0 }},
	{path: "sink.clickhouse.shards", when: func(c *Config) bool { return hasClickHouse(c) && len(c.Sink.ClickHouse.Shards) > 0 }, check: func(c *Config) string {
		ch := c.Sink.ClickHouse
		if len(ch.Addr) > 0 {
			return "set addr (one shard) or shards, not both"
		}
		for i, sh := range ch.Shards {
			if sh.Weight < 1 || sh.Weight > 1000 {
				return fmt.Sprintf("shard %d: weight must be 1..1000, got %d", i, sh.Weight)
			}
			if len(sh.Replicas) == 0 {
				return fmt.Sprintf("shard %d: replicas must list at least one host:port", i)
			}
			for _, r := range sh.Replicas {
				if _, _, err := net.SplitHostPort(r); err != nil {
					return fmt.Sprintf("shard %d: replica %q is not host:port", i, r)
				}
			}
		}
		return ""
	}},
	{path: "sink.clickhouse.insert_path", when: hasClickHouse, check: func(c *Config) string {
		switch p := c.Sink.ClickHouse.InsertPath; p {
		case "chgo":
			return ""
		case "driver":
			return `"driver" was removed: every insert is encoded in the Native format and sent with ch-go; set "chgo" or delete the key`
		default:
			return oneOf(p, "chgo")
		}
	}},
	{path: "sink.clickhouse.sharding.by", when: hasClickHouse, check: func(c *Config) string {
		return oneOf(c.Sink.ClickHouse.Sharding.By, "partition", "key")
	}},
	{path: "sink.clickhouse.sharding.column", when: hasClickHouse, deps: []string{"sink.clickhouse.sharding.by"}, check: func(c *Config) string {
		sh := c.Sink.ClickHouse.Sharding
		switch {
		case sh.By == "key" && sh.Column == "":
			return "required with sharding.by: key"
		case sh.By != "key" && sh.Column != "":
			return "only used with sharding.by: key"
		}
		return ""
	}},
	{path: "sink.clickhouse.breaker.failure_threshold", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.Breaker.FailureThreshold, 1, 1000)
	}},
	// An open breaker shorter than 100ms probes a dead replica in a tight
	// loop; longer than an hour keeps a recovered one out of use.
	{path: "sink.clickhouse.breaker.open_for", when: hasClickHouse, check: func(c *Config) string {
		return durRange(c.Sink.ClickHouse.Breaker.OpenFor, 100*msec, hour)
	}},
	{path: "sink.clickhouse.breaker.half_open_probes", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.Breaker.HalfOpenProbes, 1, 100)
	}},
	{path: "sink.clickhouse.table", when: hasClickHouse, required: func(c *Config) bool { return c.Sink.ClickHouse.Table != "" }},
	{path: "sink.clickhouse.database", when: hasClickHouse, check: func(c *Config) string { return nonEmpty(c.Sink.ClickHouse.Database) }},
	{path: "sink.clickhouse.user", when: hasClickHouse, check: func(c *Config) string { return nonEmpty(c.Sink.ClickHouse.User) }},
	// A client certificate is useless without its key and vice versa.
	{path: "sink.clickhouse.tls.key_file", when: hasClickHouseTLS, check: func(c *Config) string {
		if t := c.Sink.ClickHouse.TLS; t.CertFile != "" && t.KeyFile == "" {
			return "must be set when cert_file is set"
		}
		return ""
	}},
	{path: "sink.clickhouse.tls.cert_file", when: hasClickHouseTLS, check: func(c *Config) string {
		if t := c.Sink.ClickHouse.TLS; t.KeyFile != "" && t.CertFile == "" {
			return "must be set when key_file is set"
		}
		return ""
	}},
	{path: "sink.clickhouse.password_file", when: hasClickHouse, check: func(c *Config) string {
		return secretFileProblem(c.Sink.ClickHouse.Password, c.Sink.ClickHouse.PasswordFile)
	}},
	{path: "sink.clickhouse.columns", when: hasClickHouse, check: func(c *Config) string {
		for _, col := range slices.Sorted(maps.Keys(c.Sink.ClickHouse.Columns)) {
			if col == "" || c.Sink.ClickHouse.Columns[col] == "" {
				return fmt.Sprintf("column %q -> field %q: both must be non-empty", col, c.Sink.ClickHouse.Columns[col])
			}
		}
		return ""
	}},
	{path: "sink.clickhouse.exclude_columns", when: hasClickHouse, check: func(c *Config) string {
		seen := map[string]bool{}
		for _, col := range c.Sink.ClickHouse.ExcludeColumns {
			switch {
			case col == "":
				return "a column name is empty"
			case seen[col]:
				return fmt.Sprintf("column %s is listed twice", col)
			}
			if _, mapped := c.Sink.ClickHouse.Columns[col]; mapped {
				return fmt.Sprintf("column %s is also in columns: a column is either filled from a field or left to the server's DEFAULT", col)
			}
			seen[col] = true
		}
		return ""
	}},
	{path: "sink.clickhouse.schema.order_by", when: hasClickHouse, check: func(c *Config) string {
		seen := map[string]bool{}
		for _, col := range c.Sink.ClickHouse.Schema.OrderBy {
			switch {
			case col == "":
				return "a column name is empty"
			case seen[col]:
				return fmt.Sprintf("column %s is listed twice", col)
			}
			seen[col] = true
		}
		return ""
	}},
	{path: "sink.clickhouse.schema.add_columns", when: hasClickHouse, check: func(c *Config) string {
		if c.Sink.ClickHouse.Schema.AddColumns && c.Decode.Format != FormatAvro && len(c.Decode.Fields) == 0 {
			return "JSON records carry no types: add_columns needs decode.fields (or Avro) to know the columns' types"
		}
		return ""
	}},
	{path: "sink.clickhouse.schema.create", when: hasClickHouse, check: func(c *Config) string {
		if c.Sink.ClickHouse.Schema.Create && c.Decode.Format != FormatAvro && c.Decode.Format != FormatRaw && len(c.Decode.Fields) == 0 {
			return "JSON records carry no types: create needs decode.fields (or Avro) to derive the table's columns"
		}
		return ""
	}},
	// A batch needs at least one row; beyond 10M rows a single INSERT holds
	// gigabytes in memory and a retry repeats too much work.
	{path: "sink.clickhouse.batch.max_rows", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.Batch.MaxRows, 1, 10_000_000)
	}},
	// Smaller than 1KiB means one INSERT per record or so; above 4GiB one
	// batch risks exhausting memory on either side.
	{path: "sink.clickhouse.batch.max_bytes", when: hasClickHouse, check: func(c *Config) string {
		return sizeRange(c.Sink.ClickHouse.Batch.MaxBytes, KiB, 4*GiB)
	}},
	// Zero would flush on every record; ten minutes of unflushed data is
	// more than any checkpoint or drain timeout tolerates.
	{path: "sink.clickhouse.batch.linger", when: hasClickHouse, check: func(c *Config) string {
		return durRange(c.Sink.ClickHouse.Batch.Linger, msec, 10*minute)
	}},
	// 0 turns the idle trigger off; otherwise the same range as linger.
	{path: "sink.clickhouse.batch.idle", when: hasClickHouse, check: func(c *Config) string {
		if c.Sink.ClickHouse.Batch.Idle == 0 {
			return ""
		}
		return durRange(c.Sink.ClickHouse.Batch.Idle, msec, 10*minute)
	}},
	// The queue must hold at least one batch; every slot can hold a full
	// batch in memory, so 1024 bounds memory use.
	{path: "sink.clickhouse.queue_capacity", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.QueueCapacity, 1, 1024)
	}},
	// At least one insert must be allowed; ClickHouse limits concurrent
	// queries (max_concurrent_queries, 100 by default) and more than 64
	// inserts per shard only competes for merges.
	{path: "sink.clickhouse.inflight.max_per_shard", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.Inflight.MaxPerShard, 1, 64)
	}},
	// Below 100ms even a local connection may not complete; above 10m a
	// dead server is not noticed.
	{path: "sink.clickhouse.dial_timeout", when: hasClickHouse, check: func(c *Config) string {
		return durRange(c.Sink.ClickHouse.DialTimeout, 100*msec, 10*minute)
	}},
	// An INSERT of a full batch takes at least a second on a busy server;
	// above an hour a hung insert blocks commits for too long.
	{path: "sink.clickhouse.insert_timeout", when: hasClickHouse, check: func(c *Config) string {
		return durRange(c.Sink.ClickHouse.InsertTimeout, sec, hour)
	}},
	// Reading the columns more than once a second loads the server for
	// nothing; 0 turns the periodic read off.
	{path: "sink.clickhouse.describe_interval", when: hasClickHouse, check: func(c *Config) string {
		if c.Sink.ClickHouse.DescribeInterval == 0 {
			return ""
		}
		return durRange(c.Sink.ClickHouse.DescribeInterval, sec, 24*hour)
	}},
	// Zero backoff would hammer a failing server; the first retry should
	// come within a minute.
	{path: "sink.clickhouse.retry.initial_backoff", when: hasClickHouse, check: func(c *Config) string {
		return durRange(c.Sink.ClickHouse.Retry.InitialBackoff, msec, minute)
	}},
	// The backoff grows from initial_backoff up to max_backoff; waiting
	// more than an hour between attempts hides the outage.
	{path: "sink.clickhouse.retry.max_backoff", when: hasClickHouse, deps: []string{"sink.clickhouse.retry.initial_backoff"}, check: func(c *Config) string {
		r := c.Sink.ClickHouse.Retry
		if r.MaxBackoff < r.InitialBackoff {
			return fmt.Sprintf("must be >= initial_backoff (%s), got %s", r.InitialBackoff, r.MaxBackoff)
		}
		return durRange(r.MaxBackoff, msec, hour)
	}},
	// 0 means retry forever; a negative count has no meaning.
	{path: "sink.clickhouse.retry.max_attempts", when: hasClickHouse, check: func(c *Config) string {
		return intRange(c.Sink.ClickHouse.Retry.MaxAttempts, 0, 1_000_000)
	}},
	{path: "sink.clickhouse.compression", when: hasClickHouse, check: func(c *Config) string {
		return oneOf(c.Sink.ClickHouse.Compression, "auto", "none", "lz4", "zstd")
	}},

	// Chunks under 1KiB cost more in bookkeeping than they carry; above
	// 64MiB a chunk no longer fits comfortably in a batch.
	{path: "chunk.target_bytes", check: func(c *Config) string { return sizeRange(c.Chunk.TargetBytes, KiB, 64*MiB) }},

	// 0 means derive from available memory at runtime; a set limit below
	// 1MiB would pause consumption after every few records.
	{path: "backpressure.max_inflight_bytes", check: func(c *Config) string {
		if b := c.Backpressure.MaxInflightBytes; b != 0 {
			return sizeRange(b, MiB, math.MaxInt64)
		}
		return ""
	}},
	// Ratios of the in-flight limit: 0 or 1 would pause always or never.
	{path: "backpressure.high_ratio", check: func(c *Config) string { return openUnit(c.Backpressure.HighRatio) }},
	{path: "backpressure.low_ratio", check: func(c *Config) string { return openUnit(c.Backpressure.LowRatio) }},
	// Resuming must happen below the pause threshold, or consumption would
	// flap between paused and running.
	{path: "backpressure.low_ratio", deps: []string{"backpressure.high_ratio"}, check: func(c *Config) string {
		if b := c.Backpressure; b.LowRatio >= b.HighRatio {
			return fmt.Sprintf("must be less than high_ratio (%s), got %s", fmtFloat(b.HighRatio), fmtFloat(b.LowRatio))
		}
		return ""
	}},
	// Pauses shorter than 1ms flap; longer than a minute risk the
	// consumer's poll deadline.
	{path: "backpressure.min_pause", check: func(c *Config) string { return durRange(c.Backpressure.MinPause, msec, minute) }},
	// 0 turns the read-ahead off; under 64KiB a partition would pause
	// after every fetch.
	{path: "backpressure.partition_read_ahead", check: func(c *Config) string {
		if b := c.Backpressure.PartitionReadAhead; b != 0 {
			return sizeRange(b, 64*KiB, GiB)
		}
		return ""
	}},

	// Committing more often than every 100ms loads the group coordinator
	// for no gain; beyond an hour a restart replays too much.
	{path: "checkpoint.commit_interval", check: func(c *Config) string {
		return durRange(c.Checkpoint.CommitInterval, 100*msec, hour)
	}},
	// Draining needs at least a second to flush one batch; an hour exceeds
	// any orchestrator's shutdown grace period.
	{path: "checkpoint.drain_timeout", check: func(c *Config) string { return durRange(c.Checkpoint.DrainTimeout, sec, hour) }},
	// A revoke holds the group's rebalance for its drain, then its commit
	// (RevokeCommitTimeout). The client must rejoin within the rebalance
	// timeout: a member still in its revoke then is dropped from the group
	// and its commit refused, so the next owner reads again what it wrote.
	{path: "checkpoint.drain_timeout", when: hasKafka, deps: []string{"source.kafka.rebalance_timeout"}, at: "source.kafka.rebalance_timeout", check: func(c *Config) string {
		return drainFitsRebalance(c.Checkpoint.DrainTimeout, c.Source.Kafka.RebalanceTimeout)
	}},
	// Under 10s ordinary insert retries would look like a stall; a day
	// without progress is never acceptable.
	{path: "checkpoint.stalled_fail_after", check: func(c *Config) string {
		return durRange(c.Checkpoint.StalledFailAfter, 10*sec, 24*hour)
	}},
	// Each block takes at most 40 bytes of commit metadata ("first-next,"
	// with 19-digit offsets) after the 5-byte prefix: the default of 100
	// (4,004 bytes) fits Kafka's default offset.metadata.max.bytes of
	// 4096. More needs that broker setting raised; 10,000 blocks is 400 KB
	// of metadata written with every commit.
	{path: "checkpoint.max_open_blocks", check: func(c *Config) string { return intRange(c.Checkpoint.MaxOpenBlocks, 1, 10000) }},

	{path: "metrics.listen", check: func(c *Config) string {
		l := c.Metrics.Listen
		if l == MetricsOff {
			return ""
		}
		if _, port, err := net.SplitHostPort(l); err == nil {
			if p, err := strconv.Atoi(port); err == nil && p >= 0 && p <= 65535 {
				return ""
			}
		}
		return fmt.Sprintf("must be host:port (e.g. 127.0.0.1:9090) or %q; got %q", MetricsOff, l)
	}},

	{path: "delivery", check: func(c *Config) string { return oneOf(c.Delivery, AtLeastOnce, ExactlyOnce) }},
	{path: "log.level", check: func(c *Config) string { return oneOf(c.Log.Level, "debug", "info", "warn", "error") }},
	{path: "log.format", check: func(c *Config) string { return oneOf(c.Log.Format, "text", "json") }},
	// Status lines more often than every second flood the log; a day
	// apart they are useless.
	{path: "log.status_interval", check: func(c *Config) string { return durRange(c.Log.StatusInterval, sec, 24*hour) }},
}

// Validate checks c against every rule and returns an *Errors, or nil.
// Errors carry no positions; Parse runs the same rules with positions.
func (c *Config) Validate() error {
	return errorsOrNil(validate(c, nil))
}

// validate applies rules to c. d, when not nil, supplies positions and the
// set of keys present in the file.
func validate(c *Config, d *decoder) []*Error {
	var errs []*Error
	reported := map[string]bool{}
	add := func(m mark, path, msg string) {
		e := &Error{Path: path, Msg: msg}
		if d != nil {
			e.File, e.Line, e.Column = d.file, m.line, m.col
		}
		errs = append(errs, e)
		reported[path] = true
	}
	skip := func(path string) bool {
		if d != nil && d.bad[""] {
			return true // the document is not a mapping at all
		}
		for p := path; p != ""; p = parentPath(p) {
			if reported[p] || (d != nil && d.bad[p]) {
				return true
			}
		}
		return false
	}
	// apply runs r on c; rename maps the rule's path to the path the
	// problem is reported at (the same but for named sinks).
	apply := func(r rule, c *Config, rename func(string) string) {
		path := rename(r.path)
		if (r.when != nil && !r.when(c)) || skip(path) {
			return
		}
		for _, dep := range r.deps {
			if skip(rename(dep)) {
				return
			}
		}
		if r.required != nil {
			switch {
			case d != nil && !d.present(path):
				add(d.keyMark(parentPath(path)), path, "required key is missing")
			case !r.required(c):
				msg := "must not be empty"
				if d == nil {
					msg = "is required"
				}
				add(d.valMark(path), path, msg)
			}
			return
		}
		if msg := r.check(c); msg != "" {
			m := d.valMark(path)
			if d != nil && r.at != "" && !d.present(path) && d.present(rename(r.at)) {
				m = d.valMark(rename(r.at))
			}
			add(m, path, msg)
		}
	}
	same := func(p string) string { return p }
	named := len(c.Sinks) > 0
	if named && d != nil && d.present("sink") {
		add(d.keyMark("sink"), "sink", "set sink (one sink) or sinks (named sinks), not both")
	}
	for _, r := range slices.Concat(rules, keyRules, envelopeRules) {
		if strings.HasPrefix(r.path, "sink.clickhouse") && named {
			continue
		}
		apply(r, c, same)
	}
	for _, ns := range c.SinkList() {
		if !named {
			break
		}
		if !sinkName.MatchString(ns.Name) {
			add(d.keyMark("sinks."+ns.Name), "sinks."+ns.Name, "sink names are letters, digits, _ and -")
			continue
		}
		cc := *c
		cc.Sink = Sink{ClickHouse: ns.ClickHouse}
		prefix := "sinks." + ns.Name + ".clickhouse"
		for _, r := range rules {
			if strings.HasPrefix(r.path, "sink.clickhouse") {
				apply(r, &cc, func(p string) string { return prefix + strings.TrimPrefix(p, "sink.clickhouse") })
			}
		}
	}
	for i, st := range c.Transform {
		if !badUnder(d, fmt.Sprintf("transform[%d]", i)) {
			validateStep(c, i, st, d, add)
		}
	}
	return errs
}

// badUnder reports whether a value at path or below failed to decode.
func badUnder(d *decoder, path string) bool {
	if d == nil {
		return false
	}
	for p := range d.bad {
		if p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}

var sinkName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validateStep checks the shape of transform step i: exactly one key, and
// route rules naming sinks that exist. Expressions are checked when the
// chain is compiled, against the fields and the columns.
func validateStep(c *Config, i int, st Step, d *decoder, add func(mark, string, string)) {
	path := fmt.Sprintf("transform[%d]", i)
	var set []string
	if st.Flatten != "" {
		set = append(set, "flatten")
	}
	if st.Filter != nil {
		set = append(set, "filter")
	}
	if len(st.Set) > 0 {
		set = append(set, "set")
	}
	if len(st.Rename) > 0 {
		set = append(set, "rename")
	}
	if len(st.Drop) > 0 {
		set = append(set, "drop")
	}
	if st.Route != nil {
		set = append(set, "route")
	}
	if len(set) != 1 {
		msg := "a step sets exactly one of flatten, filter, set, rename, drop, route"
		if len(set) > 1 {
			msg += "; this one sets " + strings.Join(set, ", ")
		}
		add(d.keyMark(path), path, msg)
		return
	}
	r := st.Route
	if r == nil {
		return
	}
	exists := func(name string) bool {
		for _, ns := range c.SinkList() {
			if ns.Name == name {
				return true
			}
		}
		return false
	}
	names := func() string {
		var out []string
		for _, ns := range c.SinkList() {
			out = append(out, ns.Name)
		}
		return strings.Join(out, ", ")
	}
	if len(r.Rules) == 0 {
		add(d.keyMark(path+".route"), path+".route.rules", "required: at least one rule {when, sink}")
	}
	for j, rr := range r.Rules {
		rp := fmt.Sprintf("%s.route.rules[%d]", path, j)
		switch {
		case rr.When == nil && rr.Topic == "":
			add(d.keyMark(rp), rp+".when", "required key is missing (or topic: a rule needs when, topic or both)")
		case rr.Sink == "":
			add(d.keyMark(rp), rp+".sink", "required key is missing")
		case !exists(rr.Sink):
			add(d.valMark(rp+".sink"), rp+".sink", fmt.Sprintf("no sink named %q; sinks: %s", rr.Sink, names()))
		}
		if msg := routeTopic(c.Source.Kafka, rr.Topic); msg != "" {
			add(d.valMark(rp+".topic"), rp+".topic", msg)
		}
	}
	if u := r.Unmatched; u != "skip" && u != "fail" && !exists(u) {
		add(d.valMark(path+".route.unmatched"), path+".route.unmatched",
			fmt.Sprintf("must be skip, fail or a sink name (%s); got %q", names(), u))
	}
}

// routeTopic checks that a route rule's topic is one the source
// consumes: a rule for any other topic never matches.
func routeTopic(k *Kafka, topic string) string {
	if topic == "" || k == nil {
		return ""
	}
	if len(k.Topics) > 0 && !slices.Contains(k.Topics, topic) {
		return fmt.Sprintf("topic %q is not one of source.kafka.topics (%s): the rule would never match", topic, strings.Join(k.Topics, ", "))
	}
	if re, err := k.TopicPattern(); err == nil && re != nil && !re.MatchString(topic) {
		return fmt.Sprintf("topic %q does not match source.kafka.topics_regex %q: the rule would never match", topic, k.TopicsRegex)
	}
	return ""
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (d *decoder) present(path string) bool {
	_, ok := d.keys[path]
	return ok
}

// keyMark is the position of the key for path or, when it is absent, of
// its nearest present ancestor key (1:1 if none).
func (d *decoder) keyMark(path string) mark {
	if d == nil {
		return mark{}
	}
	for p := path; p != ""; p = parentPath(p) {
		if m, ok := d.keys[p]; ok {
			return m
		}
	}
	return mark{1, 1}
}

// valMark is the position of the value at path; for an absent key, the
// position of the nearest present ancestor key (1:1 if none).
func (d *decoder) valMark(path string) mark {
	if d == nil {
		return mark{}
	}
	if m, ok := d.vals[path]; ok {
		return m
	}
	for p := parentPath(path); p != ""; p = parentPath(p) {
		if m, ok := d.keys[p]; ok {
			return m
		}
	}
	return mark{1, 1}
}
