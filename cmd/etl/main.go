// Command etl moves records from Kafka topics into a ClickHouse table, driven
// by one YAML file.
//
//	etl -config pipeline.yaml              run the pipeline
//	etl validate [-connect] -config FILE   check the file (and reach the servers)
//	etl gen -brokers B -topic T -count N   produce generated test records
//	etl version                            the versions of etl and its clients
//	etl help [COMMAND]                     the commands, or one command's flags
//
// The commands are listed in commands.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK           = 0
	exitFailed       = 1 // the pipeline stopped on an error
	exitUsage        = 2 // bad command line or configuration
	exitDrainTimeout = 3 // stopped, but records in flight were not written, or the final commit failed
	exitInterrupted  = 130
)

// processStart is when the process started, as near as Go can tell: the
// log of the first rows written measures from it.
var processStart = time.Now()

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a command: its name first, or the run command's
// flags (etl -config FILE).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "etl: -config is required (etl -config pipeline.yaml)")
		fmt.Fprintln(stderr)
		usage(stderr)
		return exitUsage
	}
	switch a := args[0]; {
	case a == "-h" || a == "-help" || a == "--help":
		usage(stdout)
		fmt.Fprintln(stdout)
		return runPipeline([]string{"-help"}, stdout, stderr)
	case strings.HasPrefix(a, "-"):
		return runPipeline(args, stdout, stderr)
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "etl: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func runPipeline(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("run", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML)")
	progress := fs.Bool("progress", false, "print a live progress line to stdout")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file`")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the run to `file` when it stops")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl: unexpected argument %q (flags go before it; commands: etl help)\n", fs.Arg(0))
		return exitUsage
	}
	if *path == "" {
		fmt.Fprintln(stderr, "etl: -config is required (etl -config pipeline.yaml)")
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err == nil {
		err = pipeline.Preflight(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "etl: %v\n", err)
		return exitUsage
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "etl: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "etl: %v\n", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10 // a sample per 64 KiB allocated: cheap, and enough to rank the sites
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "etl: -memprofile: %v\n", err)
			}
		}()
	}
	log := newLogger(cfg.Log, stderr)
	slog.SetDefault(log)
	log.Debug("effective configuration (secrets masked)", "config", cfg.Redacted())

	// The first SIGTERM or SIGINT starts a graceful stop; another one a
	// second or more later exits at once (watchSignals).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer func() {
		signal.Stop(sigs) // no signal is delivered to sigs after it returns
		close(sigs)
	}()
	go watchSignals(sigs, cancel, os.Exit, log, time.Now)

	reg := newRegistry(cfg)
	st, err := newStartup(pipeline.Options{Config: cfg, Log: log, WrapAck: testWrapAck(), Started: processStart}, reg)
	if err != nil {
		logError(log, "cannot start the pipeline", err)
		return exitFailed
	}
	// The probes and /metrics answer while the pipeline is being built,
	// which takes as long as ClickHouse cannot be reached.
	srv, err := startHTTP(cfg.Metrics.Listen, cfg.Metrics.Pprof, st.metrics, st, log)
	if err != nil {
		logError(log, "cannot start the metrics server", err)
		return exitFailed
	}
	defer srv.Close()
	p, err := st.run(ctx)
	var cfgErr *pipeline.ConfigError
	switch {
	case err != nil && ctx.Err() != nil:
		log.Info("stopped before the pipeline started: nothing was read")
		return exitOK
	case errors.As(err, &cfgErr):
		logError(log, "the configuration cannot run", err)
		fmt.Fprintf(stderr, "etl: %s\n", err)
		return exitUsage
	case err != nil:
		logError(log, "cannot start the pipeline", err)
		return exitFailed
	}
	setMemoryLimit(p.Stats().BudgetBytes, log)
	if *progress {
		stop := startProgress(p, stdout)
		defer stop()
	}
	err = p.Run(ctx)
	logUsage(log)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pipeline.ErrDrainTimeout):
		logError(log, "stopped before everything was written", err)
		return exitDrainTimeout
	case errors.Is(err, pipeline.ErrCommitFailed):
		logError(log, "stopped with everything written but not committed", err)
		return exitDrainTimeout
	default:
		logError(log, "pipeline failed", err)
		return exitFailed
	}
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	switch c.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	o := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// logUsage logs the process's CPU time (user and system), peak RSS and
// minor page faults (memory touched for the first time), for benchmarks.
func logUsage(log *slog.Logger) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	log.Info("resource usage", "cpu_seconds", fmt.Sprintf("%.2f", cpu),
		"user_seconds", fmt.Sprintf("%.2f", float64(ru.Utime.Sec)+float64(ru.Utime.Usec)/1e6),
		"system_seconds", fmt.Sprintf("%.2f", float64(ru.Stime.Sec)+float64(ru.Stime.Usec)/1e6),
		"max_rss_bytes", ru.Maxrss*1024, "page_faults", ru.Minflt)
}

// logError logs err under msg; an error of several lines (a list of
// problems) is logged as one record per line, numbered, so that no line
// is squeezed into an escaped string.
func logError(log *slog.Logger, msg string, err error) {
	lines := strings.Split(strings.TrimRight(err.Error(), "\n"), "\n")
	if len(lines) == 1 {
		log.Error(msg, "err", err)
		return
	}
	log.Error(msg, "problems", len(lines))
	for i, l := range lines {
		log.Error(msg, "problem", i+1, "err", l)
	}
}
