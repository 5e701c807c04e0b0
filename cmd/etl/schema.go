package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/inspect"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/sink/clickhouse"
)

// schemaCmd prints the CREATE TABLE statement of each sink, derived from
// what the pipeline writes.
func schemaCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("schema", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML)")
	orderBy := fs.String("order-by", "", "the sorting key: comma-separated `columns` (default: sink.clickhouse.schema.order_by, else tuple())")
	engine := fs.String("engine", "", "the table `engine` (default: sink.clickhouse.schema.engine, else MergeTree)")
	lowCard := fs.Bool("low-cardinality", false, "make String columns LowCardinality(String)")
	version := fs.String("server-version", "", "the ClickHouse `version` to write for, such as 18.16 or 24.3 (default: read from the sink's server)")
	only := fs.String("sink", "", "print only this `sink`'s table")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed to read the registry and the server's version")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl schema: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *path == "" {
		fmt.Fprintln(stderr, "etl schema: -config is required")
		return exitUsage
	}
	var srv schema.Server
	if *version != "" {
		var err error
		if srv, err = schema.ParseServer(*version); err != nil {
			fmt.Fprintf(stderr, "etl schema: -server-version: %v\n", err)
			return exitUsage
		}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "etl schema: %v\n", err)
		return exitUsage
	}
	found := *only == ""
	for _, s := range cfg.SinkList() {
		found = found || s.Name == *only
	}
	if !found {
		fmt.Fprintf(stderr, "etl schema: -sink %q: the configuration has no such sink\n", *only)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src, err := inspect.SchemaSource(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "etl schema: %v\n", err)
		return exitFailed
	}
	if err := inspect.CheckMapped(cfg, src); err != nil {
		fmt.Fprintf(stderr, "etl schema: %v\n", err)
		return exitUsage
	}
	for i, s := range cfg.SinkList() {
		if *only != "" && s.Name != *only {
			continue
		}
		ch := s.ClickHouse
		sv := srv
		if *version == "" {
			v, err := serverVersion(ctx, ch)
			if err != nil {
				fmt.Fprintf(stderr, "etl schema: sink %s: cannot read the server's version: %v\n(pass -server-version to write for a version without connecting)\n", s.Name, err)
				return exitFailed
			}
			if sv, err = schema.ParseServer(v); err != nil {
				fmt.Fprintf(stderr, "etl schema: sink %s: %v\n", s.Name, err)
				return exitFailed
			}
		}
		all, err := schema.DeriveSinks(cfg, src, schema.SinkOptions{Server: sv, LowCardinality: *lowCard, Sink: s.Name})
		if err != nil {
			fmt.Fprintf(stderr, "etl schema: %v\n", err)
			return exitUsage
		}
		cols := all[s.Name]
		t := schema.Table{Database: ch.Database, Name: ch.Table, Engine: ch.Schema.Engine, OrderBy: ch.Schema.OrderBy}
		t = schema.CDCTable(cfg, ch.Columns, t, sv)
		if *engine != "" {
			t.Engine = *engine
		}
		if *orderBy != "" {
			t.OrderBy = nil
			for _, k := range strings.Split(*orderBy, ",") {
				if k = strings.TrimSpace(k); k != "" {
					t.OrderBy = append(t.OrderBy, k)
				}
			}
		}
		_, text, err := schema.CreateTable(t, cols, sv)
		if err != nil {
			fmt.Fprintf(stderr, "etl schema: sink %s: %v\n", s.Name, err)
			return exitUsage
		}
		if i > 0 && *only == "" {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "-- sink %s", s.Name)
		if sv.Version != "" {
			fmt.Fprintf(stdout, ", for ClickHouse %s", sv.Version)
		}
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, text)
	}
	return exitOK
}

// serverVersion reads the version of the first replica of ch that answers.
func serverVersion(ctx context.Context, ch *config.ClickHouse) (string, error) {
	password, err := ch.Secret()
	if err != nil {
		return "", fmt.Errorf("password_file: %w", err)
	}
	var errs []string
	for _, sh := range ch.ShardList() {
		for _, addr := range sh.Replicas {
			o := clickhouse.Options{Addr: []string{addr}, Database: ch.Database, Table: ch.Table, User: ch.User, Password: password, DialTimeout: ch.DialTimeout.D()}
			if ch.TLS != nil && ch.TLS.Enabled {
				if o.TLS, err = ch.TLS.Config("sink.clickhouse.tls"); err != nil {
					return "", err
				}
			}
			c, err := clickhouse.Connect(ctx, o, slog.New(slog.DiscardHandler))
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			v := c.ServerVersion()
			_ = c.Close()
			return v, nil
		}
	}
	return "", fmt.Errorf("%s", strings.Join(errs, "; "))
}
