// Package inspect holds the operator commands that look at a pipeline
// without running it: Check (etl validate -connect) reaches the servers
// and builds what a run builds before it consumes; Preview (etl tail)
// decodes records and runs them through the chain into the tables' rows;
// SchemaSource and CheckMapped (etl schema) read the fields the tables are
// derived from. They build the run's own parts (pipeline.OpenParts,
// package fields, schema.DeriveSinks), so what they report is what a run
// would do; they join no consumer group, insert nothing, commit nothing
// and change no table. The runtime does not import this package.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/internal/names"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// Check reaches the servers a run needs and builds what a run builds
// before it consumes, without joining the consumer group: the brokers and
// every topic (the dead-letter topic too); then every sink (`sinks:`
// included) with its tables read, the Avro schemas and registry (or the
// Protobuf message, of the local schema or the registry's), the
// exactly-once requirements, the decoders and the transform chain against
// the tables, and the dead-letter producer. Each part has its own timeout,
// so a slow broker does not fail a healthy ClickHouse. It returns a report
// line per finding and an error listing every problem.
func Check(cfg *config.Config, timeout time.Duration) ([]string, error) {
	if err := pipeline.Preflight(cfg); err != nil {
		return nil, err
	}
	var report []string
	var problems []error
	var dlqMissing error
	// joined lists the problems, the missing dead-letter topic once.
	joined := func() error {
		err := errors.Join(problems...)
		if dlqMissing != nil && (err == nil || !strings.Contains(err.Error(), dlqMissing.Error())) {
			err = errors.Join(append(problems, dlqMissing)...)
		}
		return err
	}

	// Kafka.
	brokers := strings.Join(cfg.Source.Kafka.Brokers, ",")
	opts, err := kafka.ClientOpts(cfg.Source.Kafka)
	if err != nil {
		return nil, err
	}
	watch, lastErr := kafka.WatchConnections(cfg.Source.Kafka)
	// A refused SASL login ends the request at once and is named first
	// (a broker that closes the connection on reading the credentials
	// looks like a network error the client would retry to the timeout).
	login := kafka.NewLoginWatch(cfg.Source.Kafka)
	// A dial, TLS handshake included, that hangs (TLS to a plaintext
	// listener that waits for more bytes) must fail within the budget, so
	// its error and the hint it gives are reported rather than a bare
	// timeout.
	dial := kgo.DialTimeout(max(timeout/2, 100*time.Millisecond))
	cl, err := kgo.NewClient(append(opts, watch, login.Opt(), dial)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	topics := append([]string(nil), cfg.Source.Kafka.Topics...)
	dlqTopic := ""
	if cfg.Decode.OnError == config.OnErrorDLQ && cfg.Decode.DLQ != nil && len(cfg.Decode.DLQ.Brokers) == 0 {
		dlqTopic = cfg.Decode.DLQ.Topic
		topics = append(topics, dlqTopic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	// Every topic, for the did-you-mean of a missing one.
	lctx, lcancel := login.Bind(ctx)
	listed, err := kadm.NewClient(cl).ListTopics(lctx)
	lcancel()
	cancel()
	cl.Close()
	loginRefused := false
	if lerr := login.Err(err); err != nil && lerr != err {
		// Nothing else can be asked of the brokers without a login.
		loginRefused = true
		problems = append(problems, &pipeline.ConfigError{Errs: []error{lerr}})
	} else if err != nil {
		if last := lastErr(); last != "" {
			err = fmt.Errorf("%w; last connection error: %s", err, last)
		}
		problems = append(problems, fmt.Errorf("source.kafka.brokers %s: no answer within %v: %w", brokers, timeout, err))
	} else {
		report = append(report, fmt.Sprintf("kafka: brokers %s reachable", brokers))
		if sub, err := kafka.SubscriptionOf(cfg); err == nil && sub.Pattern() {
			// The topics matched today stand for the listed ones.
			matched := sub.Match(listed.Names())
			if len(matched) == 0 {
				problems = append(problems, fmt.Errorf("source.kafka.topics_regex: no topic matches %s today", sub))
			} else {
				report = append(report, fmt.Sprintf("kafka: source.kafka.topics_regex %s matches %d topics today: %s", sub, len(matched), strings.Join(matched, ", ")))
			}
			topics = append(matched, topics...)
		}
		for _, t := range topics {
			key := "source.kafka.topics"
			if cfg.Source.Kafka.TopicsRegex != "" {
				key = "source.kafka.topics_regex"
			}
			if t == dlqTopic {
				key = "decode.dlq.topic"
			}
			d, ok := listed[t]
			switch {
			case t == dlqTopic && (!ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || d.Err == nil && len(d.Partitions) == 0):
				// Building the dead-letter producer below says so, with
				// what to do; reported here only when that is not reached.
				dlqMissing = fmt.Errorf("%s: topic %q does not exist", key, t)
			case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || d.Err == nil && len(d.Partitions) == 0:
				problems = append(problems, fmt.Errorf("%s: topic %q does not exist%s", key, t, names.DidYouMean(t, listed.Names())))
			case d.Err != nil:
				problems = append(problems, fmt.Errorf("%s: topic %q: %w", key, t, d.Err))
			default:
				report = append(report, fmt.Sprintf("kafka: topic %s has %d partitions", t, len(d.Partitions)))
			}
		}
	}

	// An address that answers HTTP as ClickHouse's HTTP interface does is
	// named at once, rather than after the native handshake's timeout.
	if err := httpPorts(cfg); err != nil {
		problems = append(problems, err)
		return report, joined()
	}

	// ClickHouse, the registry, the decoders and the chain: what a run
	// builds before it would join the group.
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	parts, err := openChecked(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		problems = append(problems, err)
		return report, joined()
	}
	defer parts.Close()
	for _, s := range parts.Sinks() {
		t := s.Target
		var addrs []string
		for _, r := range s.Replicas {
			addrs = append(addrs, r.Addr+" ("+r.Version+")")
		}
		if s.Derived {
			report = append(report, fmt.Sprintf("clickhouse: sink %s: %s reachable; table %s is missing: sink.clickhouse.schema.create makes it at startup with %d insertable columns (etl schema prints it)",
				s.Name, strings.Join(addrs, ", "), t.Name(), len(t.Schema.Names)))
		} else {
			report = append(report, fmt.Sprintf("clickhouse: sink %s: %s reachable; table %s has %d insertable columns",
				s.Name, strings.Join(addrs, ", "), t.Name(), len(t.Schema.Names)))
		}
		for i, name := range t.Schema.Names {
			field := "field " + meta.Field(t.Fields[i])
			switch {
			case t.Fields[i] == "":
				field = "field (none: column default)"
			case meta.IsSource(t.Fields[i]):
				field = "the record's " + t.Fields[i]
			}
			how := ""
			if _, mapped := s.Config.Columns[name]; mapped {
				how = " (sink.clickhouse.columns)"
			}
			report = append(report, fmt.Sprintf("  column %s %s <- %s%s", name, t.Schema.Types[i].Name, field, how))
		}
		for _, name := range s.Config.ExcludeColumns {
			report = append(report, fmt.Sprintf("  column %s: not inserted, the server fills its DEFAULT (sink.clickhouse.exclude_columns)", name))
		}
	}
	if cfg.Decode.Format == config.FormatAvro {
		switch {
		case parts.Schemas().Writer != "":
			report = append(report, fmt.Sprintf("avro: schema %s fills the tables' columns", cfg.Decode.Avro.SchemaFile))
		case parts.Schemas().Registry != nil:
			r, probs := checkRegistry(ctx, cfg, parts)
			report = append(report, r...)
			problems = append(problems, probs...)
		}
	}
	if cfg.Decode.Format == config.FormatProtobuf {
		r, probs := checkProtobufParts(ctx, cfg, parts)
		report = append(report, r...)
		problems = append(problems, probs...)
	}
	if len(cfg.Transform) > 0 {
		report = append(report, fmt.Sprintf("transform: %d steps compiled against the tables", len(cfg.Transform)))
	}
	if !loginRefused {
		if err := pipeline.CheckKafkaAccess(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			problems = append(problems, err)
		}
	}

	if limit, source, ok := parts.DeadLetterLimit(); ok {
		report = append(report, fmt.Sprintf("dlq: topic %s, records up to %d bytes (%s)", cfg.Decode.DLQ.Topic, limit, source))
	}
	return report, joined()
}

// openChecked opens what a run builds before it would join the group, in
// the run's order: the Avro schemas and the sinks, the exactly-once
// requirements, the decoders and the chain against the tables, the
// dead-letter producer.
func openChecked(ctx context.Context, cfg *config.Config) (*pipeline.Parts, error) {
	parts, err := pipeline.OpenParts(ctx, pipeline.PartsOptions{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{
		func() error { return parts.CheckExactlyOnce(ctx) },
		parts.Bind,
		parts.OpenDeadLetters,
	} {
		if err := step(); err != nil {
			parts.Close()
			return nil, err
		}
	}
	return parts, nil
}

// httpPorts returns an error naming every sink address that answers HTTP
// as ClickHouse's HTTP interface does (the hint the run logs when it
// cannot connect), nil when none does. Each probe takes at most a second;
// a native port refuses it in milliseconds.
func httpPorts(cfg *config.Config) error {
	var errs []error
	for _, ns := range cfg.SinkList() {
		for _, sh := range ns.ClickHouse.ShardList() {
			for _, addr := range sh.Replicas {
				if clickhouse.AnswersHTTP(addr) {
					errs = append(errs, fmt.Errorf("sink %s: %s answers HTTP like ClickHouse's HTTP interface: %s.addr takes the native protocol port, 9000 by default, not the HTTP port", ns.Name, addr, cfg.KeyPath(ns)))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkRegistry fetches the latest schema of every prewarm subject (or,
// without any, of each topic's "<topic>-value" subject, the default naming)
// and checks that it fills the tables as the run's decoders would, under
// decode.validate_schema and the reader schema. A prewarm subject the
// registry does not know is a problem; a default-named one is only
// reported (the producers may name subjects otherwise).
func checkRegistry(ctx context.Context, cfg *config.Config, parts *pipeline.Parts) (report []string, problems []error) {
	a := cfg.Decode.Avro
	configured := len(a.PrewarmSubjects) > 0
	schemas := parts.Schemas()
	schema, names := parts.DecoderInput()
	// The fields of the latest schemas, for the columns mapping (without a
	// reader schema, which Preflight checked it against already).
	var fieldsOf *fields.Set
	from := ""
	for _, subject := range fields.Subjects(cfg) {
		s, err := schemas.Registry.Latest(ctx, subject)
		switch {
		case errors.Is(err, schemaregistry.ErrSubjectNotFound) && !configured:
			report = append(report, fmt.Sprintf("avro: the registry has no subject %s (records will be checked as they name their schemas)", subject))
			continue
		case errors.Is(err, schemaregistry.ErrSubjectNotFound):
			problems = append(problems, &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.avro.prewarm_subjects: %w", err)}})
			continue
		case err != nil:
			problems = append(problems, fmt.Errorf("decode.avro.registry %s: %w", a.Registry.URL, err))
			continue
		}
		text := s.Text
		if cfg.CDC() {
			row, perr := debeziumRow(cfg, subject, s.ID, s.Text)
			if perr != nil {
				problems = append(problems, perr)
				continue
			}
			text = row
		}
		if schemas.Reader == "" {
			if r, err := fields.FromAvro(text, ""); err == nil {
				if fieldsOf == nil {
					fieldsOf = fields.NewSet("")
				}
				fieldsOf.AddAll(r)
				from += fmt.Sprintf(", %s (id %d)", subject, s.ID)
			}
		}
		_, err = avro.New(s.Text, schema, avro.Options{Fields: names, ReaderSchema: schemas.Reader,
			Validate: cfg.Decode.ValidateSchema, Ranges: parts.ServerRanges()})
		if err != nil {
			problems = append(problems, &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.avro: the latest schema of subject %s (id %d) cannot be decoded into the tables (validate_schema %s): %w",
				subject, s.ID, cfg.Decode.ValidateSchema, err)}})
			continue
		}
		report = append(report, fmt.Sprintf("avro: subject %s, latest schema id %d, fills the tables' columns", subject, s.ID))
	}
	if fieldsOf != nil {
		fieldsOf.From = "the latest schema of the registry's subjects " + strings.TrimPrefix(from, ", ")
		if errs := fields.CheckMapped(cfg, fieldsOf); len(errs) > 0 {
			problems = append(problems, &pipeline.ConfigError{Errs: errs})
		}
	}
	return report, problems
}

// debeziumRow is the row record of subject's change event schema text
// (avro.DebeziumValue), checked to hold every decode.debezium.key field.
func debeziumRow(cfg *config.Config, subject string, id int32, text string) (string, error) {
	row, err := avro.DebeziumValue(text)
	if err != nil {
		return "", &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.envelope: debezium: the latest schema of subject %s (id %d): %w", subject, id, err)}}
	}
	types, err := avro.FieldTypes(row)
	if err != nil {
		return "", &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.envelope: debezium: the row record of subject %s (id %d): %w", subject, id, err)}}
	}
	var errs []error
	for _, k := range cfg.Decode.Debezium.Key {
		if _, ok := types[k]; !ok {
			have := slices.Sorted(maps.Keys(types))
			errs = append(errs, fmt.Errorf("decode.debezium.key: %q is not a field of the row record (after's Value) of subject %s (id %d): it has %s%s",
				k, subject, id, strings.Join(have, ", "), names.DidYouMean(k, have)))
		}
	}
	if len(errs) > 0 {
		return "", &pipeline.ConfigError{Errs: errs}
	}
	return row, nil
}
