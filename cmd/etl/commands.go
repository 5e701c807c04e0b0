package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// command is one subcommand of etl.
type command struct {
	name    string
	usage   string // the synopsis, as "etl NAME ..."
	summary string // one line for the command list
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists etl's commands in the order the help shows them. It is
// filled by init: help refers to it.
var commands []command

func init() {
	commands = []command{
		{"run", "etl [run] -config FILE [-progress] [-cpuprofile FILE] [-memprofile FILE]",
			"run the pipeline (the default: etl -config FILE)", runPipeline},
		{"validate", "etl validate [-connect] [-print] -config FILE",
			"check the configuration file; -connect also reaches the brokers, ClickHouse and the registry", validate},
		{"gen", "etl gen [-brokers B] [-topic T] [-count N] [-format json|nested-avro] [-ddl] ...",
			"produce generated test records to a topic, or print their table's CREATE TABLE (-ddl)", genCmd},
		{"tail", "etl tail -config FILE [-n 10] [-from earliest|latest|TIME] [-follow] [-partitions 0,3] [-format json|table] [-raw] [-columns auto|table|derived] [-timeout 15s]",
			"print the rows the pipeline would insert for the records on its topics (by default the last ones, up to the log end), without joining the group or writing anything", tailCmd},
		{"schema", "etl schema -config FILE [-order-by a,b] [-engine E] [-low-cardinality] [-server-version V] [-sink NAME]",
			"print each sink's CREATE TABLE, derived from the Avro schema or decode.fields through the transform chain", schemaCmd},
		{"offsets", "etl offsets -config FILE [-format text|json] [-timeout 15s]",
			"show the consumer group: state, members, and per partition the committed offset, log start and end, lag and pending exactly-once blocks", offsetsCmd},
		{"offsets reset", "etl offsets reset -config FILE -to earliest|latest|TIME|OFFSET [-topics T] [-partitions 0,1] [-execute]",
			"move the group's committed offsets (a plan without -execute; refused while the group has members)", offsetsResetCmd},
		{"version", "etl version",
			"print the versions of etl, Go, franz-go, ch-go and clickhouse-go", versionCmd},
		{"help", "etl help [COMMAND]",
			"list the commands, or show one command's flags", helpCmd},
	}
}

// lookup returns the command called name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage writes the command list.
func usage(w io.Writer) {
	fmt.Fprintln(w, "etl moves records from Kafka topics into ClickHouse, driven by one YAML file.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  etl -config FILE          run the pipeline")
	fmt.Fprintln(w, "  etl COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "etl COMMAND -help" (or "etl help COMMAND") for a command's flags.`)
}

// flagSet returns the flag set of command name, whose -help prints the
// command's synopsis, summary and flags to stdout.
func flagSet(name string, stdout, stderr io.Writer) *flag.FlagSet {
	c, _ := lookup(name)
	fs := flag.NewFlagSet("etl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fs.SetOutput(stdout)
		defer fs.SetOutput(stderr)
		fmt.Fprintf(stdout, "Usage: %s\n\n%s.\n", c.usage, upperFirst(c.summary))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(stdout, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args into fs. done is true when the command must
// return code: after -help (0, the usage printed) or a bad flag (2, the
// flag package said why).
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == flag.ErrHelp:
		return exitOK, true
	case err != nil:
		return exitUsage, true
	}
	return 0, false
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// helpCmd is "etl help [COMMAND]".
func helpCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("help", stdout, stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		usage(stdout)
		return exitOK
	}
	name := strings.Join(fs.Args(), " ")
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "etl help: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return c.run([]string{"-help"}, stdout, stderr)
}

// versionCmd is "etl version": one line each for etl, Go and the client
// libraries the binary was built with.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("version", stdout, stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl version: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	fmt.Fprintf(stdout, "etl %s\n", version)
	fmt.Fprintf(stdout, "go %s\n", strings.TrimPrefix(runtime.Version(), "go"))
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps[d.Path] = d.Version
		}
	}
	for _, lib := range []struct{ name, path string }{
		{"franz-go", "github.com/twmb/franz-go"},
		{"ch-go", "github.com/ClickHouse/ch-go"},
		{"clickhouse-go", "github.com/ClickHouse/clickhouse-go/v2"},
	} {
		v := deps[lib.path]
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(stdout, "%s %s\n", lib.name, v)
	}
	return exitOK
}

// parsePartitions reads a -partitions list: comma-separated partition
// numbers; "" is none (every partition).
func parsePartitions(list string) ([]int32, error) {
	if list == "" {
		return nil, nil
	}
	var parts []int32
	for _, s := range strings.Split(list, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a partition number", s)
		}
		parts = append(parts, int32(v))
	}
	return parts, nil
}
