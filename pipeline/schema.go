package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/schema"
)

// SchemaSource returns the fields the configured pipeline reads, for
// deriving its tables (etl schema): the reader schema when there is one
// (every record is resolved to it), else schema_file, else the latest
// schema of each prewarm subject or "<topic>-value" subject in the
// registry (merged, the first subject's type winning); for JSON,
// decode.fields.
func SchemaSource(ctx context.Context, cfg *config.Config, log *slog.Logger) (schema.Source, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{cfg: cfg, log: log, component: components(nil, cfg.Pipeline.Name)}
	defer func() {
		if p.registry != nil {
			p.registry.Close()
		}
	}()
	if cfg.Decode.Format == config.FormatAvro {
		if err := p.setupAvro(ctx); err != nil {
			return schema.Source{}, err
		}
	}
	return p.schemaSource(ctx)
}

// schemaSource is SchemaSource on a pipeline whose Avro schemas are set up.
func (p *Pipeline) schemaSource(ctx context.Context) (schema.Source, error) {
	cfg := p.cfg
	if cfg.Decode.Format != config.FormatAvro {
		if len(cfg.Decode.Fields) == 0 {
			return schema.Source{}, fmt.Errorf("decode.fields is empty: JSON records carry no types, so the table's columns cannot be derived; declare each field's ClickHouse type in decode.fields")
		}
		return schema.FromFields(cfg.Decode.Fields, cfg.Decode.FieldOrder), nil
	}
	if text := p.readerSchema; text != "" {
		return avroSource(text, "decode.avro.reader_schema")
	}
	if p.avroSchema != "" {
		return avroSource(p.avroSchema, "decode.avro.schema_file")
	}
	subjects := p.subjects()
	var src schema.Source
	for _, subject := range subjects {
		s, err := p.registry.Latest(ctx, subject)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.avro.registry: the latest schema of subject %q: %w", subject, err)
		}
		one, err := schema.FromAvro(s.Text)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.avro.registry: subject %q schema id %d: %w", subject, s.ID, err)
		}
		src = schema.Merge(src, one)
	}
	return src, nil
}

// avroSource reads the fields of an Avro schema; where names its key.
func avroSource(text, where string) (schema.Source, error) {
	s, err := schema.FromAvro(text)
	if err != nil {
		return s, fmt.Errorf("%s: %w", where, err)
	}
	return s, nil
}

// subjects are the registry subjects whose latest schemas type the
// fields: the prewarm subjects, or each topic's "<topic>-value".
func (p *Pipeline) subjects() []string {
	subjects := p.cfg.Decode.Avro.PrewarmSubjects
	if len(subjects) == 0 {
		for _, t := range p.cfg.Source.Kafka.Topics {
			subjects = append(subjects, t+"-value")
		}
	}
	return subjects
}

// DeriveOptions are etl schema's choices for one sink.
type DeriveOptions struct {
	Server         schema.Server
	LowCardinality bool
	// Sink, when set, derives only that sink's columns.
	Sink string
}

// DeriveColumns returns each sink's derived columns (sink name -> its
// columns): src through the transform chain and the sink's column
// overrides.
func DeriveColumns(cfg *config.Config, src schema.Source, o DeriveOptions) (map[string][]schema.Column, error) {
	sinks := cfg.SinkList()
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.Name
	}
	out := map[string][]schema.Column{}
	for _, s := range sinks {
		if o.Sink != "" && s.Name != o.Sink {
			continue
		}
		lc := o.LowCardinality || s.ClickHouse.Schema.LowCardinality
		cols, err := schema.Derive(src, schema.Options{
			Steps: cfg.Transform, Sinks: names, Overrides: s.ClickHouse.Columns,
			Server: o.Server, LowCardinality: lc,
		})
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
		out[s.Name] = cols
	}
	return out, nil
}
