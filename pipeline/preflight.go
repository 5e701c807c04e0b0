package pipeline

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	havro "github.com/hamba/avro/v2"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/transform"
)

// ConfigError is a mistake in the configuration found before any server
// was reached: the process exits 2 for it, as for a file that does not
// parse, and retrying cannot help.
type ConfigError struct{ Errs []error }

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

func (e *ConfigError) Unwrap() []error { return e.Errs }

// Preflight builds everything of cfg that can be built without a network:
// every file the configuration names (Avro schema files, the reader
// schema, TLS CA, certificate and key files, password files) is read and
// parsed, and every
// transform expression is parsed with its functions checked. Where the
// configuration lists the records' fields (an Avro schema file or reader
// schema, decode.fields), a sink.clickhouse.columns entry mapping a column
// to a field that is not one of them (nor derived by the chain), and with
// an Avro schema an expression reading such a field, is an error with the
// closest field as a did-you-mean. It returns a
// *ConfigError listing every problem, or nil. `etl validate` and the run
// both call it, so a mistake it can see never starts a pipeline.
func Preflight(cfg *config.Config) error {
	var errs []error
	files := cfg.SecretFiles()
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, err := config.ReadSecretFile(files[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: cannot read the password: %w", k, err))
		}
	}
	if k := cfg.Source.Kafka; k != nil && k.TLS != nil && k.TLS.Enabled {
		if _, err := k.TLS.Config("source.kafka.tls"); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range cfg.SinkList() {
		if t := ns.ClickHouse.TLS; t != nil && t.Enabled {
			if _, err := t.Config(cfg.KeyPath(ns) + ".tls"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if cfg.Decode.Format == config.FormatAvro {
		a := cfg.Decode.Avro
		if rs := a.ReaderSchema; rs != "" {
			text, where := rs, "decode.avro.reader_schema"
			if !strings.HasPrefix(strings.TrimSpace(rs), "{") {
				b, err := os.ReadFile(rs)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
					text = ""
				} else {
					text, where = string(b), where+" "+rs
				}
			}
			if text != "" {
				if _, err := havro.ParseWithCache(text, "", &havro.SchemaCache{}); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
				}
			}
		}
		if a.Framing != avro.FramingConfluent && a.SchemaFile != "" {
			b, err := os.ReadFile(a.SchemaFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("decode.avro.schema_file: %w", err))
			} else if _, err := havro.ParseWithCache(string(b), "", &havro.SchemaCache{}); err != nil {
				errs = append(errs, fmt.Errorf("decode.avro.schema_file %s: %w", a.SchemaFile, err))
			}
		}
		if r := a.Registry; a.Framing == avro.FramingConfluent && r != nil && r.TLS != nil && r.TLS.Enabled {
			if _, err := r.TLS.Config("decode.avro.registry.tls"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := transform.Check(cfg.Transform); err != nil {
		var ce transform.CompileErrors
		if errors.As(err, &ce) {
			for _, e := range ce {
				errs = append(errs, e)
			}
		} else {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		// The fields the configuration lists (an Avro schema, the reader
		// schema, decode.fields): a column mapped to a field none of them
		// is, or an expression reading one, is refused here.
		r, err := fields.Offline(cfg)
		if err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, fields.CheckMapped(cfg, r)...)
		if err := fields.CheckExpr(cfg, r); err != nil {
			var ce transform.CompileErrors
			if errors.As(err, &ce) {
				for _, e := range ce {
					errs = append(errs, e)
				}
			} else {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return &ConfigError{Errs: errs}
	}
	return nil
}
