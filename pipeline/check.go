package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/internal/names"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// Check reaches the servers a run needs and builds what a run builds
// before it consumes, without joining the consumer group: the brokers and
// every topic (the dead-letter topic too); then every sink (`sinks:`
// included) with its tables read, the Avro schemas and registry, the
// exactly-once requirements, the decoders and the transform chain against
// the tables, and the dead-letter producer. Each part has its own timeout,
// so a slow broker does not fail a healthy ClickHouse. It returns a report
// line per finding and an error listing every problem.
func Check(cfg *config.Config, timeout time.Duration) ([]string, error) {
	if err := Preflight(cfg); err != nil {
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
		problems = append(problems, &ConfigError{Errs: []error{lerr}})
	} else if err != nil {
		if last := lastErr(); last != "" {
			err = fmt.Errorf("%w; last connection error: %s", err, last)
		}
		problems = append(problems, fmt.Errorf("source.kafka.brokers %s: no answer within %v: %w", brokers, timeout, err))
	} else {
		report = append(report, fmt.Sprintf("kafka: brokers %s reachable", brokers))
		for _, t := range topics {
			key := "source.kafka.topics"
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

	// ClickHouse, the registry, the decoders and the chain: what New
	// builds before it would join the group.
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := New(ctx, Options{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), checkOnly: true})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		problems = append(problems, err)
		return report, joined()
	}
	defer p.closeClients()
	for _, s := range p.sinks {
		t := s.target.Load()
		var addrs []string
		for _, cs := range s.clients {
			for _, c := range cs {
				addrs = append(addrs, c.Addr()+" ("+c.ServerVersion()+")")
			}
		}
		if s.derived {
			report = append(report, fmt.Sprintf("clickhouse: sink %s: %s reachable; table %s is missing: sink.clickhouse.schema.create makes it at startup with %d insertable columns (etl schema prints it)",
				s.name, strings.Join(addrs, ", "), t.Name(), len(t.Schema.Names)))
		} else {
			report = append(report, fmt.Sprintf("clickhouse: sink %s: %s reachable; table %s has %d insertable columns",
				s.name, strings.Join(addrs, ", "), t.Name(), len(t.Schema.Names)))
		}
		for i, name := range t.Schema.Names {
			field := t.Fields[i]
			if field == "" {
				field = "(none: column default)"
			}
			how := ""
			if _, mapped := s.cfg.Columns[name]; mapped {
				how = " (sink.clickhouse.columns)"
			}
			report = append(report, fmt.Sprintf("  column %s %s <- field %s%s", name, t.Schema.Types[i].Name, field, how))
		}
		for _, name := range s.cfg.ExcludeColumns {
			report = append(report, fmt.Sprintf("  column %s: not inserted, the server fills its DEFAULT (sink.clickhouse.exclude_columns)", name))
		}
	}
	if cfg.Decode.Format == config.FormatAvro {
		switch {
		case p.avroSchema != "":
			report = append(report, fmt.Sprintf("avro: schema %s fills the tables' columns", cfg.Decode.Avro.SchemaFile))
		case p.registry != nil:
			r, probs := p.checkRegistry(ctx)
			report = append(report, r...)
			problems = append(problems, probs...)
		}
	}
	if len(cfg.Transform) > 0 {
		report = append(report, fmt.Sprintf("transform: %d steps compiled against the tables", len(cfg.Transform)))
	}
	if !loginRefused {
		if err := checkKafkaAccess(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			problems = append(problems, err)
		}
	}

	if p.dlq != nil {
		limit, source := p.dlq.MaxMessageBytes()
		report = append(report, fmt.Sprintf("dlq: topic %s, records up to %d bytes (%s)", cfg.Decode.DLQ.Topic, limit, source))
	}
	return report, joined()
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
func (p *Pipeline) checkRegistry(ctx context.Context) (report []string, problems []error) {
	a := p.cfg.Decode.Avro
	subjects, configured := a.PrewarmSubjects, true
	if len(subjects) == 0 {
		configured = false
		for _, t := range p.cfg.Source.Kafka.Topics {
			subjects = append(subjects, t+"-value")
		}
	}
	b, err := p.bind(nil)
	if err != nil {
		return nil, []error{err}
	}
	target, fields := b.target, []string(nil)
	var schema *chunk.Schema
	if b.staged != nil {
		schema = b.staged.stage
		fields = b.staged.stage.Names
	} else {
		schema, fields = target.Schema, target.Fields
	}
	// The fields of the latest schemas, for the columns mapping (without a
	// reader schema, which Preflight checked it against already).
	var fieldsOf *recordFields
	for _, subject := range subjects {
		s, err := p.registry.Latest(ctx, subject)
		switch {
		case errors.Is(err, schemaregistry.ErrSubjectNotFound) && !configured:
			report = append(report, fmt.Sprintf("avro: the registry has no subject %s (records will be checked as they name their schemas)", subject))
			continue
		case errors.Is(err, schemaregistry.ErrSubjectNotFound):
			problems = append(problems, &ConfigError{Errs: []error{fmt.Errorf("decode.avro.prewarm_subjects: %w", err)}})
			continue
		case err != nil:
			problems = append(problems, fmt.Errorf("decode.avro.registry %s: %w", a.Registry.URL, err))
			continue
		}
		if p.readerSchema == "" {
			if r, err := avroRecordFields(s.Text, ""); err == nil {
				if fieldsOf == nil {
					fieldsOf = newRecordFields("")
				}
				for n := range r.names {
					fieldsOf.names[n] = true
				}
				fieldsOf.from += fmt.Sprintf(", %s (id %d)", subject, s.ID)
			}
		}
		_, err = avro.New(s.Text, schema, avro.Options{Fields: fields, ReaderSchema: p.readerSchema,
			Validate: p.cfg.Decode.ValidateSchema, Ranges: p.serverRanges()})
		if err != nil {
			problems = append(problems, &ConfigError{Errs: []error{fmt.Errorf("decode.avro: the latest schema of subject %s (id %d) cannot be decoded into the tables (validate_schema %s): %w",
				subject, s.ID, p.cfg.Decode.ValidateSchema, err)}})
			continue
		}
		report = append(report, fmt.Sprintf("avro: subject %s, latest schema id %d, fills the tables' columns", subject, s.ID))
	}
	if fieldsOf != nil {
		fieldsOf.from = "the latest schema of the registry's subjects " + strings.TrimPrefix(fieldsOf.from, ", ")
		if errs := checkMappedFields(p.cfg, fieldsOf); len(errs) > 0 {
			problems = append(problems, &ConfigError{Errs: errs})
		}
	}
	return report, problems
}
