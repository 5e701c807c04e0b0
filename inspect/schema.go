package inspect

import (
	"context"
	"log/slog"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/schema"
)

// SchemaSource returns the fields the configured pipeline reads, for
// deriving its tables (etl schema): the reader schema when there is one
// (every record is resolved to it), else schema_file, else the latest
// schema of each prewarm subject or "<topic>-value" subject in the
// registry (merged, the first subject's type winning); for Protobuf,
// the message of the local schema or of each subject's latest schema
// (fields.Schemas.Source); for JSON, decode.fields. The tables derive from them with schema.DeriveSinks, as
// sink.clickhouse.schema does at run time.
func SchemaSource(ctx context.Context, cfg *config.Config, log *slog.Logger) (schema.Source, error) {
	s := &fields.Schemas{}
	if cfg.Decode.Format == config.FormatAvro || cfg.Decode.Format == config.FormatProtobuf {
		var err error
		if s, err = fields.LoadSchemas(ctx, fields.Options{Config: cfg, Log: log}); err != nil {
			return schema.Source{}, err
		}
		defer s.Close()
	}
	return s.Source(ctx, cfg)
}

// CheckMapped checks every sink's sink.clickhouse.columns against src, the
// fields etl schema derives the tables from (SchemaSource): a
// *pipeline.ConfigError for each column mapped to a field src does not
// have and the chain does not derive, with the closest field as a
// did-you-mean; nil when none is.
func CheckMapped(cfg *config.Config, src schema.Source) error {
	from := "decode.fields"
	switch cfg.Decode.Format {
	case config.FormatAvro:
		from = "the Avro schema"
	case config.FormatProtobuf:
		from = "the Protobuf message"
	}
	if errs := fields.CheckMapped(cfg, fields.FromSource(src, from)); len(errs) > 0 {
		return &pipeline.ConfigError{Errs: errs}
	}
	return nil
}
