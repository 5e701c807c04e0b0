package schema

import (
	"fmt"

	"github.com/etl-project/etl/config"
)

// SinkOptions are the choices DeriveSinks makes for the servers.
type SinkOptions struct {
	Server         Server
	LowCardinality bool
	// Sink, when set, derives only that sink's columns.
	Sink string
}

// DeriveSinks returns each sink's derived columns (sink name -> its
// columns): src through cfg's transform chain and the sink's column
// overrides. sink.clickhouse.schema.create and add_columns derive with it
// at run time, etl schema to print the DDL.
func DeriveSinks(cfg *config.Config, src Source, o SinkOptions) (map[string][]Column, error) {
	sinks := cfg.SinkList()
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.Name
	}
	out := map[string][]Column{}
	for _, s := range sinks {
		if o.Sink != "" && s.Name != o.Sink {
			continue
		}
		lc := o.LowCardinality || s.ClickHouse.Schema.LowCardinality
		opts := Options{
			Steps: cfg.Transform, Sinks: names, Overrides: s.ClickHouse.Columns,
			Server: o.Server, LowCardinality: lc,
		}
		if cfg.CDC() {
			opts.CDC = cfg.DebeziumSettings().Mode
		}
		cols, err := Derive(src, opts)
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", s.Name, err)
		}
		out[s.Name] = cols
	}
	return out, nil
}
