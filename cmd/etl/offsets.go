package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/offsets"
)

// offsetsCmd is "etl offsets": where the pipeline's consumer group stands
// on its topics, and "etl offsets reset", which moves it.
func offsetsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "reset" {
		return offsetsResetCmd(args[1:], stdout, stderr)
	}
	fs := flagSet("offsets", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML): its brokers, group and topics")
	format := fs.String("format", "text", "output: text or json")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for the requests to the brokers")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	cfg, code := offsetsConfig(fs, *path, *format, stderr)
	if cfg == nil {
		return code
	}
	kc, err := newKafkaClient(cfg.Source.Kafka, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "etl offsets: %v\n", err)
		return exitUsage
	}
	defer kc.close()
	ctx, cancel := kc.context(context.Background())
	defer cancel()
	topics, err := kc.sourceTopics(ctx, cfg)
	var r *offsets.Report
	if err == nil {
		r, err = offsets.Describe(ctx, kc.adm, cfg.Source.Kafka.GroupID, topics)
	}
	if err != nil {
		err = kc.explain(err)
		fmt.Fprintf(stderr, "etl offsets: %v\n", err)
		return kc.code(err)
	}
	if *format == "json" {
		return writeJSON(stdout, stderr, r)
	}
	fmt.Fprintf(stdout, "group %s: state %s, %d member(s)\n", r.Group, r.State, len(r.Members))
	for _, m := range r.Members {
		fmt.Fprintf(stdout, "  member %s (client %s, host %s): %s\n", m.ID, m.ClientID, m.Host, assignedText(m.Assigned))
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG START\tLOG END\tLAG\tPENDING BLOCKS")
	var lag int64
	for _, p := range r.Partitions {
		committed := "-"
		if p.Committed >= 0 {
			committed = strconv.FormatInt(p.Committed, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, committed, p.Start, p.End, p.Lag, blocksText(p.Pending))
		lag += p.Lag
	}
	tw.Flush()
	fmt.Fprintf(stdout, "total lag: %d records\n", lag)
	return exitOK
}

// offsetsResetCmd is "etl offsets reset".
func offsetsResetCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("offsets reset", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML): its brokers, group and topics")
	to := fs.String("to", "", "where to move the group: earliest, latest, an RFC 3339 `time` (the first record at or after it) or an offset")
	topicList := fs.String("topics", "", "comma-separated `topics` to move (default: all of the pipeline's)")
	partList := fs.String("partitions", "", "comma-separated `partitions` to move (default: all)")
	execute := fs.Bool("execute", false, "apply the plan; without it the plan is printed and nothing changes")
	format := fs.String("format", "text", "output: text or json")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed for the requests to the brokers")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	cfg, code := offsetsConfig(fs, *path, *format, stderr)
	if cfg == nil {
		return code
	}
	target, err := offsets.ParseTarget(*to)
	if err != nil {
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", err)
		return exitUsage
	}
	k := cfg.Source.Kafka
	parts, err := parsePartitions(*partList)
	if err != nil {
		fmt.Fprintf(stderr, "etl offsets reset: -partitions: %v\n", err)
		return exitUsage
	}
	kc, err := newKafkaClient(k, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", err)
		return exitUsage
	}
	defer kc.close()
	ctx, cancel := kc.context(context.Background())
	defer cancel()
	adm := kc.adm
	// The pipeline's topics: under source.kafka.topics_regex, those it
	// matches now.
	all, err := kc.sourceTopics(ctx, cfg)
	if err != nil {
		err = kc.explain(err)
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", err)
		return kc.code(err)
	}
	topics := all
	if *topicList != "" {
		topics = nil
		for _, t := range strings.Split(*topicList, ",") {
			if !slices.Contains(all, t) {
				fmt.Fprintf(stderr, "etl offsets reset: -topics: %q is not one of the pipeline's topics %v\n", t, all)
				return exitUsage
			}
			topics = append(topics, t)
		}
	}
	r, err := offsets.Describe(ctx, adm, k.GroupID, all)
	if err != nil {
		err = kc.explain(err)
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", err)
		return kc.code(err)
	}
	if *execute {
		// Refused before any plan is printed: a running pipeline would
		// overwrite the reset with its next commit.
		if err := r.Active(); err != nil {
			fmt.Fprintf(stderr, "etl offsets reset: %v\n", err)
			return exitUsage
		}
	}
	moves, err := offsets.Plan(ctx, adm, r, topics, parts, target)
	if err != nil {
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", kc.explain(err))
		return exitUsage
	}
	eo := cfg.Delivery == config.ExactlyOnce
	if *format == "json" {
		if code := writeJSON(stdout, stderr, struct {
			Group    string         `json:"group"`
			To       string         `json:"to"`
			Executed bool           `json:"executed"`
			Moves    []offsets.Move `json:"moves"`
		}{k.GroupID, target.String(), *execute, moves}); code != exitOK {
			return code
		}
	} else {
		mode := "plan (nothing changes; add -execute to apply it)"
		if *execute {
			mode = "moving"
		}
		fmt.Fprintf(stdout, "group %s to %s: %s\n", k.GroupID, target, mode)
		for _, m := range moves {
			from := "none"
			if m.From >= 0 {
				from = strconv.FormatInt(m.From, 10)
			}
			note := ""
			if m.Clamped {
				note = " (the offset is outside the log: moved to its start or end)"
			}
			if len(m.Cleared) > 0 {
				note += " (pending blocks " + blocksText(m.Cleared) + " cleared)"
			}
			fmt.Fprintf(stdout, "  %s/%d: %s -> %d%s\n", m.Topic, m.Partition, from, m.To, note)
		}
		if eo {
			fmt.Fprintln(stdout, "delivery is exactly_once: the reset clears the pending-block metadata of these partitions, and the records from the new offsets will be inserted again; only a block identical to one the table still remembers (within its replicated_deduplication_window) is dropped by the server")
		}
	}
	if !*execute {
		return exitOK
	}
	if err := offsets.Execute(ctx, adm, k.GroupID, moves); err != nil {
		fmt.Fprintf(stderr, "etl offsets reset: %v\n", kc.explain(err))
		if errors.Is(err, offsets.ErrActive) {
			return exitUsage
		}
		return exitFailed
	}
	if *format != "json" {
		fmt.Fprintf(stdout, "moved %d partition(s)\n", len(moves))
	}
	return exitOK
}

// offsetsConfig loads the configuration of the offsets commands; nil with
// the exit code when it cannot.
func offsetsConfig(fs *flag.FlagSet, path, format string, stderr io.Writer) (*config.Config, int) {
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return nil, exitUsage
	}
	if path == "" {
		fmt.Fprintf(stderr, "%s: -config is required\n", fs.Name())
		return nil, exitUsage
	}
	if format != "text" && format != "json" {
		fmt.Fprintf(stderr, "%s: -format %q: want text or json\n", fs.Name(), format)
		return nil, exitUsage
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, exitUsage
	}
	return cfg, exitOK
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "etl: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func blocksText(blocks [][2]int64) string {
	if len(blocks) == 0 {
		return "-"
	}
	parts := make([]string, len(blocks))
	for i, b := range blocks {
		parts[i] = fmt.Sprintf("%d-%d", b[0], b[1])
	}
	return strings.Join(parts, ",")
}

func assignedText(a map[string][]int32) string {
	if len(a) == 0 {
		return "nothing assigned"
	}
	topics := make([]string, 0, len(a))
	for t := range a {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var b strings.Builder
	for i, t := range topics {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s%v", t, a[t])
	}
	return b.String()
}
