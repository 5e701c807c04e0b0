package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/source/kafka"
)

// Check reaches the brokers and ClickHouse: every topic exists, the table
// exists, and every column maps to a field the decoder can convert. It
// returns a report line per finding and an error listing every problem.
func Check(ctx context.Context, cfg *config.Config) ([]string, error) {
	var report []string
	var problems []error

	opts, err := kafka.ClientOpts(cfg.Source.Kafka)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, cfg.Source.Kafka.Topics...)
	if err != nil {
		problems = append(problems, fmt.Errorf("source.kafka.brokers %s: %w", strings.Join(cfg.Source.Kafka.Brokers, ","), err))
	} else {
		report = append(report, fmt.Sprintf("kafka: brokers %s reachable", strings.Join(cfg.Source.Kafka.Brokers, ",")))
		for _, t := range cfg.Source.Kafka.Topics {
			d, ok := topics[t]
			switch {
			case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || d.Err == nil && len(d.Partitions) == 0:
				problems = append(problems, fmt.Errorf("source.kafka.topics: topic %q does not exist", t))
			case d.Err != nil:
				problems = append(problems, fmt.Errorf("source.kafka.topics: topic %q: %w", t, d.Err))
			default:
				report = append(report, fmt.Sprintf("kafka: topic %s has %d partitions", t, len(d.Partitions)))
			}
		}
	}

	chc := cfg.Sink.ClickHouse
	ch, err := clickhouse.Connect(ctx, clickhouse.Options{
		Addr: chc.Addr, Database: chc.Database, Table: chc.Table, User: chc.User, Password: chc.Password.Value(),
		DialTimeout: chc.DialTimeout.D(), InsertTimeout: chc.InsertTimeout.D(), Settings: chc.Settings,
		Compression: chc.Compression, Columns: chc.Columns, Insert: chc.InsertPath,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		problems = append(problems, fmt.Errorf("sink.clickhouse: %w", err))
		return report, errors.Join(problems...)
	}
	defer ch.Close()
	report = append(report, fmt.Sprintf("clickhouse: %s reachable, server %s", strings.Join(chc.Addr, ","), ch.ServerVersion()))
	target, err := ch.Plan(ctx)
	if err != nil {
		problems = append(problems, fmt.Errorf("sink.clickhouse: %w", err))
		return report, errors.Join(problems...)
	}
	report = append(report, fmt.Sprintf("clickhouse: table %s has %d insertable columns", target.Name(), len(target.Schema.Names)))
	for i, name := range target.Schema.Names {
		field := target.Fields[i]
		if field == "" {
			field = "(none: column default)"
		}
		report = append(report, fmt.Sprintf("  column %s %s <- field %s", name, target.Schema.Types[i].Name, field))
	}
	switch a := cfg.Decode.Avro; {
	case cfg.Decode.Format != "avro":
		if _, err := decode.NewJSON(target.Schema, decode.JSONOptions{Fields: target.Fields}); err != nil {
			problems = append(problems, fmt.Errorf("decode: %w", err))
		}
	case a.Framing != decode.FramingConfluent:
		// The writer schema is known: check that it fills the columns.
		text, err := os.ReadFile(a.SchemaFile)
		if err != nil {
			problems = append(problems, fmt.Errorf("decode.avro.schema_file: %w", err))
		} else if _, err := decode.NewAvro(string(text), target.Schema, decode.AvroOptions{Fields: target.Fields}); err != nil {
			problems = append(problems, fmt.Errorf("decode.avro.schema_file %s: %w", a.SchemaFile, err))
		} else {
			report = append(report, fmt.Sprintf("avro: schema %s fills the table's columns", a.SchemaFile))
		}
	default:
		report = append(report, "avro: writer schemas come from the registry and are checked as records name them")
	}
	return report, errors.Join(problems...)
}
