// Package config loads the pipeline's YAML configuration file.
//
// Loading is strict: unknown keys, wrong types, out-of-range values and
// missing required keys are all reported together, each with file, line,
// column and the full key path. Environment variables are interpolated
// into the raw text before parsing (see interpolate.go), and every default
// lives in Defaults.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Delivery is the delivery guarantee (the key delivery).
type Delivery string

// The values of delivery.
const (
	// AtLeastOnce writes every record, some twice after a crash.
	AtLeastOnce Delivery = "at_least_once"
	// ExactlyOnce writes every record once, on a deduplicating table.
	ExactlyOnce Delivery = "exactly_once"
)

// Format is the record format (the key decode.format).
type Format string

// The values of decode.format.
const (
	FormatJSON Format = "json"
	FormatAvro Format = "avro"
	// FormatRaw parses nothing: each record's value goes whole into the
	// String column mapped from _raw, its metadata beside it.
	FormatRaw Format = "raw"
)

// OnError is what happens to a record that cannot be decoded, transformed
// or inserted (the key decode.on_error).
type OnError string

// The values of decode.on_error.
const (
	// OnErrorDLQ writes the record to the dead-letter topic with its reason.
	OnErrorDLQ OnError = "dlq"
	// OnErrorSkip counts the record and goes on.
	OnErrorSkip OnError = "skip"
	// OnErrorFail stops the pipeline.
	OnErrorFail OnError = "fail"
)

// Config is the whole configuration file.
type Config struct {
	Pipeline Pipeline `yaml:"pipeline"`
	// Delivery is the delivery guarantee.
	Delivery  Delivery `yaml:"delivery"`
	Source    Source   `yaml:"source"`
	Decode    Decode   `yaml:"decode"`
	Transform []Step   `yaml:"transform,omitempty"`
	Sink      Sink     `yaml:"sink"`
	// Sinks are named sinks, instead of Sink; route steps name them. The
	// single sink form
	// appears as the sink named "default" (see SinkList).
	Sinks        map[string]*Sink `yaml:"sinks,omitempty"`
	Chunk        Chunk            `yaml:"chunk"`
	Backpressure Backpressure     `yaml:"backpressure"`
	Checkpoint   Checkpoint       `yaml:"checkpoint"`
	Metrics      Metrics          `yaml:"metrics"`
	Log          Log              `yaml:"log"`
}

// Pipeline names the pipeline and sizes its worker pool.
type Pipeline struct {
	// Name is required; it is used in the Kafka client ID and in metrics.
	Name string `yaml:"name"`
	// Workers is the number of decode workers; 0 means derive from
	// GOMAXPROCS at runtime.
	Workers int `yaml:"workers"`
}

// Source selects where records come from. Kafka is the only source.
type Source struct {
	Kafka *Kafka `yaml:"kafka"`
}

// Kafka configures the Kafka consumer.
type Kafka struct {
	// Brokers are host:port seed addresses. After loading, every entry is
	// split on commas and trimmed, so a single "${KAFKA_BROKERS}" entry may
	// hold a comma-separated list.
	Brokers []string `yaml:"brokers"`
	// Topics are the topics consumed; TopicsRegex, instead, is a pattern
	// (RE2) every topic whose whole name it matches is consumed by
	// (TopicPattern), internal ones ("__" names) and the dead-letter
	// topic excepted. Exactly one of them is set.
	Topics      []string `yaml:"topics"`
	TopicsRegex string   `yaml:"topics_regex"`
	GroupID     string   `yaml:"group_id"`
	StartOffset string   `yaml:"start_offset"` // earliest | latest
	// ClientID defaults to "etl-" followed by the pipeline name.
	ClientID               string   `yaml:"client_id"`
	TLS                    *TLS     `yaml:"tls,omitempty"`
	SASL                   *SASL    `yaml:"sasl,omitempty"`
	FetchMaxBytes          ByteSize `yaml:"fetch_max_bytes"`
	FetchMaxPartitionBytes ByteSize `yaml:"fetch_max_partition_bytes"`
	SessionTimeout         Duration `yaml:"session_timeout"`
	RebalanceTimeout       Duration `yaml:"rebalance_timeout"`
	FetchMaxWait           Duration `yaml:"fetch_max_wait"`
	// MaxDecompressedBatchBytes bounds what one record batch may
	// decompress to; a batch past it goes to on_error as too_large.
	// 0 (the default): max(16 × fetch_max_partition_bytes,
	// max_inflight_bytes / 4), at most 1 GiB.
	MaxDecompressedBatchBytes ByteSize `yaml:"max_decompressed_batch_bytes"`
	// UnreachableTimeout is how long the brokers may go without answering
	// before /healthz reports it.
	UnreachableTimeout Duration `yaml:"unreachable_timeout"`
	// WaitForTopics makes a source topic missing at startup (under
	// TopicsRegex: no topic matching) a wait (not ready until it exists)
	// instead of an error.
	WaitForTopics bool `yaml:"wait_for_topics"`
	// MetadataMaxAge is how old the client's topic metadata may get
	// before it is asked again: a topic created while running that
	// TopicsRegex matches is consumed within it (plus a rebalance).
	MetadataMaxAge Duration `yaml:"metadata_max_age"`
}

// TopicPattern returns TopicsRegex compiled to match whole topic names
// (^(?:TopicsRegex)$), or nil when it is not set.
func (k *Kafka) TopicPattern() (*regexp.Regexp, error) {
	if k.TopicsRegex == "" {
		return nil, nil
	}
	return regexp.Compile(AnchorTopicRegex(k.TopicsRegex))
}

// AnchorTopicRegex makes re match whole topic names only.
func AnchorTopicRegex(re string) string { return "^(?:" + re + ")$" }

// TLS configures TLS for the Kafka connection.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	ServerName         string `yaml:"server_name"`
}

// SASL configures SASL authentication for Kafka.
type SASL struct {
	Mechanism string `yaml:"mechanism"` // PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
	Username  string `yaml:"username"`
	Password  Secret `yaml:"password"`
	// PasswordFile, instead of Password, names a file holding the
	// password (a mounted Kubernetes Secret), read at each connection.
	PasswordFile string `yaml:"password_file"`
}

// Secret returns the password: Password, or the content of PasswordFile
// read now (see ReadSecretFile).
func (s *SASL) Secret() (string, error) { return secretOf(s.Password, s.PasswordFile) }

// Decode selects the record format and what happens to records that
// cannot be decoded.
type Decode struct {
	Format Format `yaml:"format"`
	// ValidateSchema is off, names or full: how strictly an Avro writer
	// schema must match the table.
	ValidateSchema string   `yaml:"validate_schema"`
	JSON           JSON     `yaml:"json"`
	Avro           Avro     `yaml:"avro"`
	Protobuf       Protobuf `yaml:"protobuf"`
	// Key is how record keys are decoded (decode.key, key.go).
	Key Key `yaml:"key"`
	// Envelope is none or debezium: what wraps the row in each record
	// (decode.envelope, envelope.go).
	Envelope string `yaml:"envelope"`
	// Debezium configures the debezium envelope (decode.debezium).
	Debezium Debezium `yaml:"debezium"`
	// OnError is what happens to a record that cannot be written; empty
	// means dlq when DLQ.Topic is set, else fail.
	OnError OnError `yaml:"on_error"`
	DLQ     *DLQ    `yaml:"dlq,omitempty"`
	// MaxRecordBytes rejects larger record values (reason too_large); 1 MiB
	// by default, 0 means no limit.
	MaxRecordBytes ByteSize `yaml:"max_record_bytes"`
	// MaxRowsPerRecord bounds the rows one record makes (ndjson lines,
	// array elements, a flatten's elements); past it the record is
	// too_large. 100,000 by default, 0 means no limit.
	MaxRowsPerRecord int `yaml:"max_rows_per_record"`
	// MaxBytesPerRecord bounds the bytes of the rows one record makes, as
	// a chunk counts them; past it the record is too_large. 0 means the
	// smallest batch.max_bytes of the sinks.
	MaxBytesPerRecord ByteSize `yaml:"max_bytes_per_record"`
	// Fields declares the ClickHouse type of source fields that no target
	// column gives a type to (fields only transform expressions read).
	Fields map[string]string `yaml:"fields,omitempty"`
	// FieldOrder is Fields' names in the file's order (the derived
	// table's column order).
	FieldOrder []string `yaml:"-"`
}

// Pos is a position in the configuration file, for errors about a value
// that only a later stage can check (an expression, a column type).
type Pos struct {
	File         string
	Line, Column int
}

// String is file:line:col.
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column) }

// Expr is an expression of a transform step with its position in the file.
type Expr struct {
	Text string
	Pos  Pos
}

// Assignment is one field of a set step.
type Assignment struct {
	Field string
	Expr  Expr
}

// Step is one transform step; exactly one of its keys is set.
type Step struct {
	// Flatten names an array field: each element becomes a row, with the
	// element's fields addressable as <field>.<name> beside the parent's.
	Flatten string `yaml:"flatten"`
	// Filter keeps the row when the expression is true.
	Filter *Expr `yaml:"filter"`
	// Set derives or overwrites fields, in order.
	Set []Assignment `yaml:"set"`
	// Rename renames fields (old: new).
	Rename map[string]string `yaml:"rename"`
	// Drop removes fields.
	Drop []string `yaml:"drop"`
	// Route sends the row to one named sink.
	Route *Route `yaml:"route"`
	// Pos is where the step starts.
	Pos Pos `yaml:"-"`
}

// Route sends each row to the sink of the first rule whose expression is
// true; rows no rule matches follow Unmatched.
type Route struct {
	Rules []RouteRule `yaml:"rules"`
	// Unmatched is skip, fail or a sink name.
	Unmatched string `yaml:"unmatched"`
}

// RouteRule is one rule of a route step.
type RouteRule struct {
	When *Expr `yaml:"when"`
	// Topic, when set, limits the rule to the records of that topic (its
	// exact name); with When, both must hold.
	Topic string `yaml:"topic"`
	Sink  string `yaml:"sink"`
	Pos   Pos    `yaml:"-"`
}

// JSON configures the JSON decoder.
type JSON struct {
	// Framing is single (one object per record), ndjson (one object per
	// line) or array (an array of objects).
	Framing string `yaml:"framing"`
	// TimeLayout is a Go time layout tried first for date-time strings.
	TimeLayout string `yaml:"time_layout"`
}

// Avro configures the Avro decoder.
type Avro struct {
	// Framing is confluent (magic byte and registry schema id), raw (the
	// datum alone, written with SchemaFile) or single_object (C3 01 and the
	// schema's fingerprint).
	Framing    string `yaml:"framing"`
	SchemaFile string `yaml:"schema_file"`
	// ReaderSchema is a file holding the reader schema (or the schema's
	// JSON itself, when it starts with "{"): records of every writer schema
	// are resolved to it.
	ReaderSchema string    `yaml:"reader_schema"`
	Registry     *Registry `yaml:"registry,omitempty"`
	// PrewarmSubjects are fetched from the registry at startup.
	PrewarmSubjects  []string `yaml:"prewarm_subjects,omitempty"`
	NegativeCacheTTL Duration `yaml:"negative_cache_ttl"`
}

// Registry is a Confluent schema registry.
type Registry struct {
	// URL is shown masked (URL.Masked): a password in its userinfo is
	// never printed or logged.
	URL      URL    `yaml:"url"`
	Username string `yaml:"username"`
	Password Secret `yaml:"password"`
	// PasswordFile, instead of Password, names a file holding it.
	PasswordFile string `yaml:"password_file"`
	// TLS configures HTTPS to the registry (an https URL with no tls
	// section uses the system's roots).
	TLS *TLS `yaml:"tls,omitempty"`
}

// DLQ is the dead-letter destination: a Kafka topic, on the source's
// brokers unless Brokers is set.
type DLQ struct {
	Topic   string   `yaml:"topic"`
	Brokers []string `yaml:"brokers"`
}

// Secret returns the ClickHouse password: Password, or the content of
// PasswordFile read now (see ReadSecretFile).
func (c *ClickHouse) Secret() (string, error) { return secretOf(c.Password, c.PasswordFile) }

// Secret returns the registry's password: Password, or the content of
// PasswordFile read now (see ReadSecretFile).
func (r *Registry) Secret() (string, error) { return secretOf(r.Password, r.PasswordFile) }

// Sink selects where rows go. ClickHouse is the only sink.
type Sink struct {
	ClickHouse *ClickHouse `yaml:"clickhouse"`
}

// ClickHouse configures the ClickHouse writer.
type ClickHouse struct {
	// Addr lists host:port native-protocol addresses; entries are split on
	// commas and trimmed like Kafka.Brokers.
	Addr     []string `yaml:"addr"`
	Database string   `yaml:"database"`
	Table    string   `yaml:"table"`
	User     string   `yaml:"user"`
	Password Secret   `yaml:"password"`
	// PasswordFile, instead of Password, names a file holding it.
	PasswordFile string `yaml:"password_file"`
	// TLS, when enabled, connects to every shard and replica over TLS
	// (the server's tcp_port_secure, 9440 by default), with the same keys
	// and meaning as source.kafka.tls.
	TLS *TLS `yaml:"tls,omitempty"`
	// Columns maps column name to source field name, for the columns
	// whose field has another name: every other column of the live table
	// takes the field of its own name.
	Columns map[string]string `yaml:"columns"`
	// ExcludeColumns are columns left out of the INSERT, so that the
	// server fills them with their DEFAULT.
	ExcludeColumns []string `yaml:"exclude_columns,omitempty"`
	Batch          Batch    `yaml:"batch"`
	// Settings are ClickHouse query settings; values are int64, float64,
	// bool or string.
	Settings      map[string]any `yaml:"settings"`
	QueueCapacity int            `yaml:"queue_capacity"`
	Inflight      Inflight       `yaml:"inflight"`
	DialTimeout   Duration       `yaml:"dial_timeout"`
	InsertTimeout Duration       `yaml:"insert_timeout"`
	// DescribeInterval is how often the table's columns are read again to
	// follow ALTER TABLE; 0 reads them only at startup, on a new writer
	// schema and after an insert names a column the table lacks.
	DescribeInterval Duration `yaml:"describe_interval"`
	Retry            Retry    `yaml:"retry"`
	Compression      string   `yaml:"compression"` // auto | none | lz4 | zstd
	// InsertPath names the insert path; chgo (INSERT blocks encoded
	// straight from the chunks, sent with ch-go) is the only one, and the
	// key is kept so that configurations naming it still load.
	InsertPath string `yaml:"insert_path"`
	// Shards lists the cluster's shards, each with its replicas; Addr is
	// shorthand for one shard whose replicas are the addresses.
	Shards   []Shard  `yaml:"shards,omitempty"`
	Sharding Sharding `yaml:"sharding"`
	// DistributedCheck names a cluster of system.clusters whose shard
	// order and weights must match Shards at startup.
	DistributedCheck string  `yaml:"distributed_check"`
	Breaker          Breaker `yaml:"breaker"`
	// Schema manages the table from what the pipeline writes.
	Schema TableSchema `yaml:"schema"`
}

// TableSchema is sink.clickhouse.schema: the table created at startup
// when it is missing, and the columns a new Avro writer schema brings
// added before its records are written.
type TableSchema struct {
	// Create creates the table (on every shard) when it is missing, with
	// the columns etl schema derives.
	Create bool `yaml:"create"`
	// AddColumns adds a column (ALTER TABLE ... ADD COLUMN, on every
	// shard) for each field of a new writer schema that has none.
	AddColumns bool `yaml:"add_columns"`
	// OrderBy is the created table's sorting key; empty gives tuple().
	OrderBy []string `yaml:"order_by,omitempty"`
	// Engine is the created table's engine, MergeTree by default.
	Engine string `yaml:"engine,omitempty"`
	// LowCardinality makes the String columns it creates or adds
	// LowCardinality(String).
	LowCardinality bool `yaml:"low_cardinality"`
}

// ShardList is the sink's shards: Shards, or one shard of weight 1 whose
// replicas are Addr.
func (ch *ClickHouse) ShardList() []Shard {
	if len(ch.Shards) > 0 {
		return ch.Shards
	}
	return []Shard{{Weight: 1, Replicas: ch.Addr}}
}

// NamedSink is a sink with its name.
type NamedSink struct {
	Name       string
	ClickHouse *ClickHouse
}

// SinkList returns every sink in name order: the sinks of Sinks, or the
// single sink of Sink named "default".
func (c *Config) SinkList() []NamedSink {
	if len(c.Sinks) == 0 {
		return []NamedSink{{Name: DefaultSink, ClickHouse: c.Sink.ClickHouse}}
	}
	out := make([]NamedSink, 0, len(c.Sinks))
	for name, s := range c.Sinks {
		out = append(out, NamedSink{Name: name, ClickHouse: s.ClickHouse})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RowBytesPerRecord is the byte bound of the rows one record makes:
// decode.max_bytes_per_record, or when 0 the smallest batch.max_bytes of
// the sinks (no record makes more than one batch holds).
func (c *Config) RowBytesPerRecord() int64 {
	if c.Decode.MaxBytesPerRecord > 0 {
		return int64(c.Decode.MaxBytesPerRecord)
	}
	var least int64
	for _, ns := range c.SinkList() {
		if ns.ClickHouse == nil {
			continue
		}
		if b := int64(ns.ClickHouse.Batch.MaxBytes); b > 0 && (least == 0 || b < least) {
			least = b
		}
	}
	return least
}

// KeyPath returns the configuration path of sink ns's ClickHouse
// section: "sink.clickhouse" in the single sink form, else
// "sinks.NAME.clickhouse".
func (c *Config) KeyPath(ns NamedSink) string {
	if len(c.Sinks) == 0 {
		return "sink.clickhouse"
	}
	return "sinks." + ns.Name + ".clickhouse"
}

// DefaultSink is the name of the sink of the single sink form.
const DefaultSink = "default"

func (s *Sink) setDefaults() { s.ClickHouse = Defaults().Sink.ClickHouse }

// Shard is one ClickHouse shard.
type Shard struct {
	Weight   int      `yaml:"weight"`
	Replicas []string `yaml:"replicas"`
}

func (s *Shard) setDefaults() { s.Weight = 1 }

// Sharding chooses the shard of each row.
type Sharding struct {
	// By is partition (a Kafka partition's rows all go to one shard) or
	// key (xxHash64 of Column, modulo the sum of weights).
	By     string `yaml:"by"`
	Column string `yaml:"column"`
}

// Breaker is each replica's circuit breaker.
type Breaker struct {
	// FailureThreshold consecutive failed inserts open the breaker.
	FailureThreshold int `yaml:"failure_threshold"`
	// OpenFor is how long an open breaker refuses inserts.
	OpenFor Duration `yaml:"open_for"`
	// HalfOpenProbes successful inserts close a half-open breaker.
	HalfOpenProbes int `yaml:"half_open_probes"`
}

// Batch bounds one INSERT.
type Batch struct {
	MaxRows  int      `yaml:"max_rows"`
	MaxBytes ByteSize `yaml:"max_bytes"`
	Linger   Duration `yaml:"linger"`
	// Idle flushes a batch that holds at least a quarter of MaxRows or
	// MaxBytes once no chunk has arrived for this long (0: off).
	Idle Duration `yaml:"idle"`
	// FirstAtOnce closes each shard's first batch with its first chunk.
	FirstAtOnce bool `yaml:"first_at_once"`
}

// Retry configures retries of failed inserts with exponential backoff.
type Retry struct {
	InitialBackoff Duration `yaml:"initial_backoff"`
	MaxBackoff     Duration `yaml:"max_backoff"`
	MaxAttempts    int      `yaml:"max_attempts"` // 0 = retry forever
}

// Inflight limits concurrent inserts.
type Inflight struct {
	MaxPerShard int `yaml:"max_per_shard"`
}

// Chunk sizes the units of work handed between stages.
type Chunk struct {
	TargetBytes ByteSize `yaml:"target_bytes"`
}

// Backpressure pauses consumption when too much data is in flight.
type Backpressure struct {
	// MaxInflightBytes of 0 means derive at runtime.
	MaxInflightBytes ByteSize `yaml:"max_inflight_bytes"`
	HighRatio        float64  `yaml:"high_ratio"`
	LowRatio         float64  `yaml:"low_ratio"`
	MinPause         Duration `yaml:"min_pause"`
	// PartitionReadAhead: a shard queue's refusal pauses the partition at
	// once only when its lane decoded this much since the partition's
	// last resume; otherwise the partition is paused when the waiting
	// lane holds this many undecoded bytes, and resumed under a quarter
	// of it. 0 pauses a partition as soon as a shard queue refuses its
	// lane's chunk.
	PartitionReadAhead ByteSize `yaml:"partition_read_ahead"`
}

// Checkpoint configures offset commits.
type Checkpoint struct {
	CommitInterval   Duration `yaml:"commit_interval"`
	DrainTimeout     Duration `yaml:"drain_timeout"`
	StalledFailAfter Duration `yaml:"stalled_fail_after"`
	ExitOnStall      bool     `yaml:"exit_on_stall"`
	// MaxOpenBlocks bounds, with delivery exactly_once, the insert blocks
	// of one partition registered in the commit metadata and not yet
	// below the committed offset.
	MaxOpenBlocks int `yaml:"max_open_blocks"`
}

// RevokeCommitTimeout bounds the offset commit a revoke makes after its
// drain (checkpoint.drain_timeout): the two together are how long a revoke
// may hold the group's rebalance, which source.kafka.rebalance_timeout
// must cover.
const RevokeCommitTimeout = 10 * time.Second

// MetricsOff is the value of Metrics.Listen that disables the metrics server.
const MetricsOff = "off"

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Listen string `yaml:"listen"` // host:port, or "off"
	// Pprof serves /debug/pprof on the same listener.
	Pprof bool `yaml:"pprof"`
}

// Log configures logging.
type Log struct {
	Level          string   `yaml:"level"`  // debug | info | warn | error
	Format         string   `yaml:"format"` // text | json
	StatusInterval Duration `yaml:"status_interval"`
}

// Defaults returns a Config holding every default value. Parse starts from
// it, so a key left out of the file keeps the value set here. Source.Kafka
// and Sink.ClickHouse are non-nil so that their defaults apply too; the
// presence of those sections is still required by Parse.
func Defaults() *Config {
	return &Config{
		Delivery: AtLeastOnce,
		Source: Source{Kafka: &Kafka{
			StartOffset:            "earliest",
			FetchMaxBytes:          16 * MiB,
			FetchMaxPartitionBytes: 1 * MiB,
			SessionTimeout:         Duration(45 * time.Second),
			UnreachableTimeout:     Duration(2 * time.Minute),
			RebalanceTimeout:       Duration(60 * time.Second),
			FetchMaxWait:           Duration(time.Second),
			WaitForTopics:          false,
			MetadataMaxAge:         Duration(time.Minute),
		}},
		Decode: Decode{Format: "json", ValidateSchema: "off", JSON: JSON{Framing: "single"},
			Avro:           Avro{Framing: "confluent", NegativeCacheTTL: Duration(time.Minute)},
			Protobuf:       Protobuf{Framing: ProtobufConfluent, NegativeCacheTTL: Duration(time.Minute)},
			Key:            Key{Format: KeyNone},
			Envelope:       EnvelopeNone,
			Debezium:       Debezium{Mode: DebeziumReplacing, Wrapper: WrapperAuto, Version: VersionAuto},
			MaxRecordBytes: 1 * MiB, MaxRowsPerRecord: 100_000},
		Sink: Sink{ClickHouse: &ClickHouse{
			Database: "default",
			User:     "default",
			Batch: Batch{
				MaxRows:     1_000_000,
				MaxBytes:    16 * MiB, // derived budget 144 MiB (docs/DESIGN.md, sizing rule)
				Linger:      Duration(time.Second),
				Idle:        Duration(100 * time.Millisecond),
				FirstAtOnce: true,
			},
			QueueCapacity:    64,
			Inflight:         Inflight{MaxPerShard: 2},
			DialTimeout:      Duration(5 * time.Second),
			InsertTimeout:    Duration(60 * time.Second),
			DescribeInterval: Duration(time.Minute),
			Retry: Retry{
				InitialBackoff: Duration(100 * time.Millisecond),
				MaxBackoff:     Duration(30 * time.Second),
			},
			Compression: "auto",
			InsertPath:  "chgo",
			Sharding:    Sharding{By: "partition"},
			Breaker:     Breaker{FailureThreshold: 3, OpenFor: Duration(30 * time.Second), HalfOpenProbes: 1},
		}},
		Chunk: Chunk{TargetBytes: 64 * KiB},
		Backpressure: Backpressure{
			HighRatio: 0.8,
			LowRatio:  0.5,
			MinPause:  Duration(500 * time.Millisecond),
			// A few fetches of a partition (fetch_max_partition_bytes,
			// 1MiB): a pause costs one refetch (docs/DESIGN.md).
			PartitionReadAhead: 4 * MiB,
		},
		Checkpoint: Checkpoint{
			CommitInterval:   Duration(5 * time.Second),
			DrainTimeout:     Duration(25 * time.Second),
			StalledFailAfter: Duration(120 * time.Second),
			MaxOpenBlocks:    100,
		},
		Metrics: Metrics{Listen: "127.0.0.1:9090"},
		Log: Log{
			Level:          "info",
			Format:         "text",
			StatusInterval: Duration(30 * time.Second),
		},
	}
}

// finish applies the defaults that depend on other values and normalises
// address lists. It runs after decoding and before validation.
func finish(c *Config) {
	if k := c.Source.Kafka; k != nil {
		k.Brokers = splitList(k.Brokers)
		if k.ClientID == "" && c.Pipeline.Name != "" {
			k.ClientID = "etl-" + c.Pipeline.Name
		}
	}
	if ch := c.Sink.ClickHouse; ch != nil {
		ch.Addr = splitList(ch.Addr)
	}
	for _, s := range c.Sinks {
		if s != nil && s.ClickHouse != nil {
			s.ClickHouse.Addr = splitList(s.ClickHouse.Addr)
		}
	}
	for i := range c.Transform {
		if r := c.Transform[i].Route; r != nil && r.Unmatched == "" {
			r.Unmatched = "fail"
		}
	}
	if d := c.Decode.DLQ; d != nil {
		d.Brokers = splitList(d.Brokers)
	}
	if c.Decode.OnError == "" {
		c.Decode.OnError = OnErrorFail
		if c.Decode.DLQ != nil && c.Decode.DLQ.Topic != "" {
			c.Decode.OnError = OnErrorDLQ
		}
	}
}

// splitList splits every entry on commas, trims spaces and drops empty
// parts, so ["a:1, b:2", "c:3"] becomes ["a:1", "b:2", "c:3"].
func splitList(in []string) []string {
	if in == nil {
		return nil
	}
	out := []string{}
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Load reads the file at path and parses it with environment variables
// taken from the process environment.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path, os.LookupEnv)
}

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse interpolates environment variables into data, decodes it strictly
// over Defaults, and validates the result. filename is used in error
// messages only. lookup resolves variables (os.LookupEnv in Load); a nil
// lookup treats every variable as unset. On failure the error is an
// *Errors listing every problem found.
func Parse(data []byte, filename string, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	text, errs := interpolate(data, filename, lookup)
	if len(errs) > 0 {
		return nil, errorsOrNil(errs)
	}

	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, errorsOrNil([]*Error{syntaxError(filename, err)})
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		e := &Error{File: filename, Line: extra.Line, Column: extra.Column,
			Msg: "the file holds more than one YAML document; only one is allowed"}
		if err != nil {
			e = syntaxError(filename, err)
		}
		return nil, errorsOrNil([]*Error{e})
	}

	c := Defaults()
	d := newDecoder(filename)
	if len(root.Content) > 0 {
		d.decode(root.Content[0], reflect.ValueOf(c).Elem(), "")
	}
	finish(c)
	c.Decode.FieldOrder = fieldOrder(c.Decode.Fields, d)
	d.errs = append(d.errs, validate(c, d)...)
	if err := errorsOrNil(d.errs); err != nil {
		return nil, err
	}
	return c, nil
}

func syntaxError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Msg: "invalid YAML: " + msg}
	if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = "invalid YAML: " + m[2]
	}
	return e
}

// Redacted returns the effective configuration as YAML with every secret
// replaced by "******". It is safe to log.
func (c *Config) Redacted() string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return fmt.Sprintf("# cannot render config: %v\n", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Sprintf("# cannot render config: %v\n", err)
	}
	return b.String()
}

// fieldOrder is the names of decode.fields in the file's order.
func fieldOrder(fields map[string]string, d *decoder) []string {
	if len(fields) == 0 {
		return nil
	}
	out := make([]string, 0, len(fields))
	for n := range fields {
		out = append(out, n)
	}
	at := func(n string) mark { return d.keys[joinPath("decode.fields", n)] }
	sort.SliceStable(out, func(i, j int) bool {
		a, b := at(out[i]), at(out[j])
		if a.line != b.line {
			return a.line < b.line
		}
		if a.col != b.col {
			return a.col < b.col
		}
		return out[i] < out[j]
	})
	return out
}
