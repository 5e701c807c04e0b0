package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
)

// validate checks a configuration file; with -connect it also reaches the
// brokers and ClickHouse and checks the table and the column mapping.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("etl validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML)")
	connect := fs.Bool("connect", false, "also reach Kafka and ClickHouse and check the table")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for -connect checks")
	printCfg := fs.Bool("print", false, "print the effective configuration, defaults filled in and secrets masked")
	if err := fs.Parse(args); err != nil {
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
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		report, err := pipeline.Check(ctx, cfg)
		for _, line := range report {
			fmt.Fprintln(stdout, line)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
	}
	fmt.Fprintf(stdout, "%s: ok\n", *path)
	return exitOK
}
