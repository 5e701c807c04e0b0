package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/inspect"
	"github.com/etl-project/etl/pipeline"
)

// validate checks a configuration file; with -connect it also reaches the
// brokers and ClickHouse and checks the table and the column mapping.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("validate", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML)")
	connect := fs.Bool("connect", false, "also reach Kafka and ClickHouse and check the table")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for each part of the -connect checks (Kafka; ClickHouse and the registry)")
	printCfg := fs.Bool("print", false, "print the effective configuration, defaults filled in and secrets masked")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl validate: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *path == "" {
		fmt.Fprintln(stderr, "etl validate: -config is required")
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err == nil {
		// Everything that can be built without a network: the files the
		// configuration names, the schemas, the transform expressions.
		err = pipeline.Preflight(cfg)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	if *printCfg {
		fmt.Fprint(stdout, cfg.Redacted())
	}
	if *connect {
		report, err := inspect.Check(cfg, *timeout)
		for _, line := range report {
			fmt.Fprintln(stdout, line)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			var ce *pipeline.ConfigError
			if errors.As(err, &ce) {
				return exitUsage // the file does not fit the servers' tables or schemas
			}
			return exitFailed
		}
	}
	fmt.Fprintf(stdout, "%s: ok\n", *path)
	return exitOK
}
