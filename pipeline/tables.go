package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/sink/clickhouse"
)

// Schema changes, the values of etl_schema_changes_total's change label.
const (
	changeCreateTable = "create_table"
	changeAddColumn   = "add_column"
)

// tableManager holds what sink.clickhouse.schema reads at startup.
type tableManager struct {
	// src is what the pipeline reads at startup (New's goroutine only).
	src    schema.Source
	srcErr error
	read   bool
}

// addsColumns reports whether a sink adds the columns new writer
// schemas bring (registry framing without a reader schema: with one,
// every record is resolved to it and brings no new field).
func (p *Pipeline) addsColumns() bool {
	if p.schemas.Client() == nil || p.schemas.Reader != "" {
		return false
	}
	for _, s := range p.cfg.SinkList() {
		if s.ClickHouse.Schema.AddColumns {
			return true
		}
	}
	return false
}

// prepareTable applies sink.clickhouse.schema at startup: the table is
// created on every replica that lacks it (create), and the fields the
// rows carry get the columns the table lacks (add_columns).
//
// A dry run (Parts: validate -connect, tail) changes nothing: it reports
// derived true when the table is missing and would be created, and the
// sink is then planned against the derived table.
func (p *Pipeline) prepareTable(ctx context.Context, s *sinkState, dryRun bool) (derived bool, err error) {
	sc := s.cfg.Schema
	if p.m != nil {
		p.m.schemaChanges.WithLabelValues(s.name, changeCreateTable)
		p.m.schemaChanges.WithLabelValues(s.name, changeAddColumn)
	}
	if !sc.Create && !sc.AddColumns {
		return false, nil
	}
	if sc.Create {
		var missing []*clickhouse.Client
		for i, cs := range s.clients {
			for _, c := range cs {
				ok, err := c.TableExists(ctx)
				if err != nil {
					err = fmt.Errorf("sink %s: shard %d: %w", s.name, i, err)
					if !clickhouse.ServerAnswered(err) {
						return false, unavailable(err)
					}
					return false, err
				}
				if !ok {
					missing = append(missing, c)
				}
			}
		}
		if len(missing) > 0 && dryRun {
			return true, nil
		}
		if len(missing) > 0 {
			src, srcErr := p.source(ctx)
			if srcErr != nil {
				return false, fmt.Errorf("sink %s: sink.clickhouse.schema.create: the table %s is missing and its columns cannot be derived: %w", s.name, missing[0].TableName(), srcErr)
			}
			for _, c := range missing {
				if err := p.createTable(ctx, s, c, src); err != nil {
					return false, err
				}
			}
		}
	}
	if sc.AddColumns && !dryRun {
		src, srcErr := p.source(ctx)
		if srcErr != nil {
			p.log.Warn("sink.clickhouse.schema.add_columns: the fields of the writer schema cannot be read now; columns are added when a new writer schema is seen",
				"sink", s.name, "err", srcErr)
			return false, nil
		}
		err := p.addColumns(ctx, s, src, "startup")
		var u *underivable
		if errors.As(err, &u) {
			p.log.Warn("sink.clickhouse.schema.add_columns: the rows of the writer schema cannot be derived: no column added",
				"sink", s.name, "err", err)
			return false, nil
		}
		return false, err
	}
	return false, nil
}

// source is the fields the tables are derived from (fields.Schemas.Source),
// read once at startup.
func (p *Pipeline) source(ctx context.Context) (schema.Source, error) {
	if !p.tables.read {
		if p.proto != nil {
			p.tables.src, p.tables.srcErr = p.protobufTableSource(ctx)
		} else {
			p.tables.src, p.tables.srcErr = p.schemas.Source(ctx, p.cfg)
		}
		p.tables.read = true
	}
	return p.tables.src, p.tables.srcErr
}

// serverOf is what the server behind c supports.
func serverOf(ctx context.Context, c *clickhouse.Client) (schema.Server, error) {
	v, err := c.Version(ctx)
	if err != nil {
		if !clickhouse.ServerAnswered(err) {
			err = unavailable(err)
		}
		return schema.Server{}, err
	}
	return schema.ParseServer(v)
}

// derive is sink s's columns from src, for server srv.
func (p *Pipeline) derive(s *sinkState, src schema.Source, srv schema.Server) ([]schema.Column, error) {
	all, err := schema.DeriveSinks(p.cfg, src, schema.SinkOptions{Server: srv, Sink: s.name})
	if err != nil {
		return nil, err
	}
	return all[s.name], nil
}

// ddlSettings are the settings a statement with cols needs on srv.
func ddlSettings(stmt string, srv schema.Server) map[string]any {
	if srv.LowCardinalityNeedsSetting() && strings.Contains(stmt, "LowCardinality(") {
		return map[string]any{"allow_experimental_low_cardinality_type": 1}
	}
	return nil
}

// createTable creates sink s's table on replica c.
func (p *Pipeline) createTable(ctx context.Context, s *sinkState, c *clickhouse.Client, src schema.Source) error {
	srv, err := serverOf(ctx, c)
	if err != nil {
		return fmt.Errorf("sink %s: sink.clickhouse.schema.create: %w", s.name, err)
	}
	cols, err := p.derive(s, src, srv)
	if err != nil {
		return &ConfigError{Errs: []error{fmt.Errorf("sink %s: sink.clickhouse.schema.create: %w", s.name, err)}}
	}
	sc := s.cfg.Schema
	stmts, _, err := schema.CreateTable(schema.CDCTable(p.cfg, s.cfg.Columns, schema.Table{
		Database: c.Database(), Name: s.cfg.Table, Engine: sc.Engine, OrderBy: sc.OrderBy, IfNotExists: true,
	}, srv), cols, srv)
	if err != nil {
		return &ConfigError{Errs: []error{fmt.Errorf("sink %s: sink.clickhouse.schema: %w", s.name, err)}}
	}
	stmt := stmts[len(stmts)-1]
	if err := c.Exec(ctx, stmt, ddlSettings(stmt, srv)); err != nil {
		return fmt.Errorf("sink %s: sink.clickhouse.schema.create: %s: %w", s.name, c.TableName(), err)
	}
	var skipped []string
	for _, col := range cols {
		if col.Type == "" {
			skipped = append(skipped, col.Name+": "+col.Note)
		}
	}
	if p.m != nil {
		p.m.schemaChanges.WithLabelValues(s.name, changeCreateTable).Inc()
	}
	p.log.Info("created the table (sink.clickhouse.schema.create)", "sink", s.name, "table", c.TableName(),
		"server_version", c.ServerVersion(), "statement", stmt, "fields_without_column", skipped)
	return nil
}

// addColumns adds to sink s's table, on every replica, a column for each
// field of the rows from src that it lacks. why names the occasion in
// the log.
func (p *Pipeline) addColumns(ctx context.Context, s *sinkState, src schema.Source, why string) error {
	for i, cs := range s.clients {
		for _, c := range cs {
			srv, err := serverOf(ctx, c)
			if err != nil {
				return fmt.Errorf("sink %s: shard %d: %w", s.name, i, err)
			}
			cols, err := p.derive(s, src, srv)
			if err != nil {
				return &underivable{fmt.Errorf("sink %s: sink.clickhouse.schema.add_columns: %w", s.name, err)}
			}
			have, err := c.Describe(ctx)
			if err != nil {
				err = fmt.Errorf("sink %s: shard %d: %w", s.name, i, err)
				if !clickhouse.ServerAnswered(err) {
					return unavailable(err)
				}
				return err
			}
			exists := map[string]bool{}
			for _, h := range have {
				exists[h.Name] = true
			}
			for _, col := range cols {
				if col.Type == "" || exists[col.Name] {
					continue
				}
				stmt := schema.AddColumn(c.Database(), s.cfg.Table, col)
				if err := c.Exec(ctx, stmt, ddlSettings(stmt, srv)); clickhouse.ColumnExists(err) {
					continue // another replica or etl added it meanwhile
				} else if err != nil {
					err = fmt.Errorf("sink %s: shard %d: sink.clickhouse.schema.add_columns: %s: %w", s.name, i, stmt, err)
					if !clickhouse.ServerAnswered(err) {
						return unavailable(err)
					}
					return err
				}
				if p.m != nil {
					p.m.schemaChanges.WithLabelValues(s.name, changeAddColumn).Inc()
				}
				p.log.Info("added a column (sink.clickhouse.schema.add_columns)", "sink", s.name, "table", c.TableName(),
					"shard", i, "replica", c.Addr(), "column", col.Name, "statement", stmt, "occasion", why)
			}
		}
	}
	return nil
}

// addColumnsForNew adds the columns the writer schemas first seen since
// the last call need. An id whose schema cannot be read is kept for the
// next call.
func (p *Pipeline) addColumnsForNew(ctx context.Context) error {
	ids := p.desc.takePending()
	var errs []error
	var retry []int32
	for _, id := range ids {
		src, err := p.schemaSource(id)
		if errors.Is(err, errRetrySchema) {
			retry = append(retry, id)
			errs = append(errs, fmt.Errorf("schema id %d: %w", id, err))
			continue
		}
		if err != nil {
			// The decoder reports this schema's records.
			p.log.Warn("sink.clickhouse.schema.add_columns: cannot read writer schema", "id", id, "err", err)
			continue
		}
		for _, s := range p.sinks {
			if !s.cfg.Schema.AddColumns {
				continue
			}
			err := p.addColumns(ctx, s, src, fmt.Sprintf("writer schema id %d", id))
			var u *underivable
			if errors.As(err, &u) {
				// Not a schema the chain can take (a type change): no
				// column is added, and the decoder refuses its records
				// (schema_mismatch).
				p.log.Warn("sink.clickhouse.schema.add_columns: the rows of a new writer schema cannot be derived: no column added; its records go to decode.on_error",
					"sink", s.name, "id", id, "err", err)
				continue
			}
			if err != nil {
				retry = append(retry, id)
				errs = append(errs, err)
				break
			}
		}
	}
	if len(retry) > 0 {
		p.desc.keepPending(retry)
	}
	return errors.Join(errs...)
}

// derivedTarget plans sink s's insert into the table derived from the
// data and the chain, for the newest server, without ClickHouse.
func (p *Pipeline) derivedTarget(ctx context.Context, s *sinkState) (*clickhouse.Target, error) {
	src, err := p.source(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: derive the table's columns: %w", s.name, err)
	}
	srv, _ := schema.ParseServer("")
	cols, err := p.derive(s, src, srv)
	if err != nil {
		return nil, &ConfigError{Errs: []error{fmt.Errorf("sink %s: derive the table's columns: %w", s.name, err)}}
	}
	var info []clickhouse.ColumnInfo
	for _, c := range cols {
		if c.Type != "" {
			info = append(info, clickhouse.ColumnInfo{Name: c.Name, Type: c.Type})
		}
	}
	db := s.cfg.Database
	if db == "" {
		db = "default"
	}
	t, err := clickhouse.Plan(db, s.cfg.Table, info, clickhouse.Mapping{Columns: s.cfg.Columns, Exclude: s.cfg.ExcludeColumns})
	if err != nil {
		return nil, &ConfigError{Errs: []error{fmt.Errorf("sink %s: the derived table: %w", s.name, err)}}
	}
	return t, nil
}

// Derivable reports whether the configuration gives every field's type,
// so that the tables can be derived without ClickHouse: Avro (a schema
// file, a reader schema or the registry), JSON with decode.fields, or raw
// records (every column is metadata).
func Derivable(cfg *config.Config) bool {
	return cfg.Decode.Format == config.FormatAvro || cfg.Decode.Format == config.FormatProtobuf || cfg.Decode.Format == config.FormatRaw || len(cfg.Decode.Fields) > 0
}

// underivable is a writer schema whose rows cannot be derived through the
// chain.
type underivable struct{ err error }

func (u *underivable) Error() string { return u.err.Error() }
func (u *underivable) Unwrap() error { return u.err }

// errRetrySchema marks a schema schemaSource cannot read now.
var errRetrySchema = errors.New("the schema cannot be read now")

// schemaSource is the fields of writer schema id (Avro) or of the first
// message of schema id (Protobuf). An error wrapping errRetrySchema is
// worth a retry; another means the schema cannot give columns.
func (p *Pipeline) schemaSource(id int32) (schema.Source, error) {
	if p.proto != nil {
		src, err := p.protobufSchemaSource(id)
		if errors.Is(err, protoschema.ErrPending) {
			return src, fmt.Errorf("%w: %w", errRetrySchema, err)
		}
		return src, err
	}
	sc, err := p.schemas.Registry.Lookup(id)
	if err != nil {
		return schema.Source{}, fmt.Errorf("%w: %w", errRetrySchema, err)
	}
	return fields.RowSource(p.cfg, sc.Text)
}
