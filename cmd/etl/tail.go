package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/inspect"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/source/kafka"
)

// tailCmd is "etl tail": records read from the pipeline's topics, decoded
// and transformed as the pipeline would, printed as the rows it would
// insert. It joins no consumer group and commits nothing.
func tailCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("tail", stdout, stderr)
	path := fs.String("config", "", "pipeline configuration `file` (YAML)")
	n := fs.Int("n", 10, "stop after this many `rows` (0: no limit)")
	from := fs.String("from", "", "where to start reading: earliest, latest or an RFC 3339 `time` (the first record at or after it); by default the last -n records of each partition (the log start with -n 0)")
	follow := fs.Bool("follow", false, "keep reading new records past the end of the log (until -n rows or interrupted); without it etl tail stops at the log end as of its start")
	partList := fs.String("partitions", "", "comma-separated `partitions` to read (default: all)")
	format := fs.String("format", "json", "output: json (one object per line) or table (aligned columns)")
	raw := fs.Bool("raw", false, "also print each record as decoded, before the transform chain")
	columns := fs.String("columns", "auto", "the tables' columns: table (read from ClickHouse), derived (from the Avro schema, the Protobuf message or decode.fields through the chain, as etl schema prints them; no ClickHouse) or auto (the tables, or the derived columns when ClickHouse cannot be reached and the configuration gives the types)")
	timeout := fs.Duration("timeout", 15*time.Second, "time allowed to reach the brokers and list the partitions, to read the tables and the schemas, between records before the log end, and, with -follow, for the brokers to answer once no record came for that long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl tail: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *path == "" {
		fmt.Fprintln(stderr, "etl tail: -config is required")
		return exitUsage
	}
	if *format != "json" && *format != "table" {
		fmt.Fprintf(stderr, "etl tail: -format %q: want json or table\n", *format)
		return exitUsage
	}
	if *columns != "auto" && *columns != "table" && *columns != "derived" {
		fmt.Fprintf(stderr, "etl tail: -columns %q: want auto, table or derived\n", *columns)
		return exitUsage
	}
	if *n < 0 {
		fmt.Fprintln(stderr, "etl tail: -n must be 0 or more")
		return exitUsage
	}
	start, err := parseTailFrom(*from)
	if err != nil {
		fmt.Fprintf(stderr, "etl tail: %v\n", err)
		return exitUsage
	}
	parts, err := parsePartitions(*partList)
	if err != nil {
		fmt.Fprintf(stderr, "etl tail: -partitions: %v\n", err)
		return exitUsage
	}
	cfg, err := config.Load(*path)
	if err == nil {
		err = pipeline.Preflight(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "etl tail: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Logs (the connections, warnings) go to stderr; the rows to stdout.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *columns == "derived" && !derivable(cfg) {
		fmt.Fprintln(stderr, "etl tail: -columns derived: JSON records without decode.fields carry no types; declare them in decode.fields or read the tables (-columns table)")
		return exitUsage
	}

	// The brokers first: the partitions, where each is read from and
	// where the log ends, within -timeout (at once for a refused login).
	k := cfg.Source.Kafka
	// Small fetches: the first records print in milliseconds rather than
	// after a full fetch of every partition.
	kc, err := newKafkaClient(k, *timeout, kafka.SmallFetchOpts()...)
	if err != nil {
		fmt.Fprintf(stderr, "etl tail: %v\n", err)
		return exitUsage
	}
	defer kc.close()
	pctx, cancel := kc.context(ctx)
	topics, err := kc.sourceTopics(pctx, cfg)
	var plan []tailPart
	if err == nil {
		plan, err = planTail(pctx, kc.adm, topics, parts, start, *n)
	}
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return exitOK // interrupted
		}
		err = kc.explain(err)
		fmt.Fprintf(stderr, "etl tail: %v\n", err)
		if errors.Is(err, errNoPartition) {
			return exitUsage
		}
		return kc.code(err)
	}
	bctx, cancel := context.WithTimeout(ctx, *timeout)
	pv, err := inspect.NewPreview(bctx, inspect.PreviewOptions{Config: cfg, Log: log, Offline: *columns == "derived"})
	if err != nil && *columns == "auto" && pipeline.Unavailable(err) && derivable(cfg) {
		// No ClickHouse: the configuration gives the types.
		fmt.Fprintf(stderr, "etl tail: ClickHouse cannot be reached (%v): the rows follow the columns derived from the data and the chain (etl schema)\n", err)
		pv, err = inspect.NewPreview(bctx, inspect.PreviewOptions{Config: cfg, Log: log, Offline: true})
	}
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "etl tail: %v\n", err)
		var cerr *pipeline.ConfigError
		if errors.As(err, &cerr) {
			return exitUsage
		}
		return exitFailed
	}
	defer pv.Close()

	// Without -follow, a partition is done at the log end as of the
	// start; one with nothing to read is done already.
	type key struct {
		topic     string
		partition int32
	}
	left := map[key]tailPart{}
	ends := map[key]int64{}
	for _, p := range plan {
		if *follow || p.from < p.end {
			left[key{p.topic, p.partition}] = p
		}
		ends[key{p.topic, p.partition}] = p.end
	}
	kc.cl.AddConsumePartitions(consumeFrom(plan))

	w := newTailWriter(stdout, *format)
	rows := 0
	for ctx.Err() == nil && (*n == 0 || rows < *n) && len(left) > 0 {
		// Without -follow, records before the log end are there: none
		// for -timeout means the brokers stopped answering. With it, none
		// for -timeout is checked against the brokers: following an idle
		// log is fine, following brokers that are gone is not.
		pollCtx, cancel := context.WithTimeout(ctx, *timeout)
		fetches := kc.cl.PollFetches(pollCtx)
		quiet := pollCtx.Err() != nil && fetches.NumRecords() == 0
		cancel()
		if ctx.Err() != nil {
			break
		}
		if quiet && *follow {
			w.flush()
			pctx, pcancel := kc.context(ctx)
			err := kc.cl.Ping(pctx)
			pcancel()
			if ctx.Err() != nil {
				break
			}
			if err != nil {
				fmt.Fprintf(stderr, "etl tail: -follow: no record for %v and no broker answers: %v\n", *timeout, kc.explain(err))
				return kc.code(kc.explain(err))
			}
			continue
		}
		if quiet {
			w.flush()
			short := make([]string, 0, len(left))
			for _, p := range left {
				short = append(short, fmt.Sprintf("%s (end offset %d)", p, p.end))
			}
			slices.Sort(short)
			msg := fmt.Sprintf("no record within %v (-timeout) before the log end of %s", *timeout, strings.Join(short, ", "))
			if last := kc.lastErr(); last != "" {
				msg += "; last connection error: " + last
			}
			fmt.Fprintf(stderr, "etl tail: %s\n", msg)
			return exitFailed
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("%s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			fmt.Fprintf(stderr, "etl tail: fetch: %v\n", ferr)
			return exitFailed
		}
		it := fetches.RecordIter()
		for !it.Done() && (*n == 0 || rows < *n) {
			r := it.Next()
			if !*follow {
				end := ends[key{r.Topic, r.Partition}]
				if r.Offset >= end {
					continue // produced after the start
				}
				if r.Offset+1 >= end {
					delete(left, key{r.Topic, r.Partition})
				}
			}
			res, err := pv.Process(ctx, r)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				fmt.Fprintf(stderr, "etl tail: %s/%d offset %d: %v\n", r.Topic, r.Partition, r.Offset, err)
				return exitFailed
			}
			if *raw {
				for _, row := range res.Raw {
					w.raw(r, row)
				}
			}
			if res.Rejected != "" {
				w.rejected(r, res)
				continue
			}
			if len(res.Rows) == 0 {
				w.dropped(r)
				continue
			}
			for _, row := range res.Rows {
				if *n > 0 && rows >= *n {
					break
				}
				w.row(row)
				rows++
			}
		}
		w.flush()
	}
	w.flush()
	if ctx.Err() == nil && !*follow && *n > 0 && rows < *n {
		fmt.Fprintf(stderr, "etl tail: the end of the log: %d rows of the %d asked for (-follow waits for more)\n", rows, *n)
	}
	return exitOK
}

// derivable reports whether the configuration gives the types of the
// records' fields, so that the tables can be derived without ClickHouse
// (pipeline.Derivable; a Protobuf message types its fields as an Avro
// schema does).
func derivable(cfg *config.Config) bool {
	return pipeline.Derivable(cfg) || cfg.Decode.Format == config.FormatProtobuf
}

// tailWriter prints what etl tail reads, as JSON lines or as tables.
type tailWriter struct {
	out    io.Writer
	table  bool
	enc    *json.Encoder
	tw     *tabwriter.Writer
	header string // the table whose column names were printed last
}

func newTailWriter(out io.Writer, format string) *tailWriter {
	w := &tailWriter{out: out, table: format == "table", enc: json.NewEncoder(out)}
	w.enc.SetEscapeHTML(false)
	return w
}

// object is an ordered JSON object.
type object struct {
	names  []string
	values []any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, n := range o.names {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(o.values[i])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

func (w *tailWriter) row(r inspect.PreviewRow) {
	if !w.table {
		_ = w.enc.Encode(object{[]string{"sink", "table", "row"}, []any{r.Sink, r.Table, object{r.Names, r.Values}}})
		return
	}
	w.tableRow("-- sink "+r.Sink+", table "+r.Table, r.Names, r.Values)
}

func (w *tailWriter) raw(rec *kgo.Record, r inspect.PreviewRow) {
	if !w.table {
		_ = w.enc.Encode(object{[]string{"topic", "partition", "offset", "timestamp", "timestamp_type", "key", "headers", "raw"},
			[]any{rec.Topic, rec.Partition, rec.Offset, rec.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
				meta.TimestampTypeName(rec.Attrs.TimestampType()), bytesJSON(rec.Key), headersJSON(rec.Headers), object{r.Names, r.Values}}})
		return
	}
	w.tableRow("-- decoded records (before the chain)", r.Names, r.Values)
}

// bytesJSON is a key or header value as etl tail prints it: null for a
// null one, a string when it is valid UTF-8, else {"hex": "..."}.
func bytesJSON(b []byte) any {
	switch {
	case b == nil:
		return nil
	case utf8.Valid(b):
		return string(b)
	}
	return map[string]string{"hex": hex.EncodeToString(b)}
}

// headersJSON is a record's headers as [key, value] pairs, in order.
func headersJSON(hs []kgo.RecordHeader) [][2]any {
	out := make([][2]any, len(hs))
	for i, h := range hs {
		out[i] = [2]any{bytesJSON([]byte(h.Key)), bytesJSON(h.Value)}
	}
	return out
}

func (w *tailWriter) rejected(rec *kgo.Record, res *inspect.Result) {
	what := map[string]string{"dlq": "dead-lettered", "skip": "skipped", "fail": "stop the pipeline"}[res.Rejected]
	if !w.table {
		_ = w.enc.Encode(object{[]string{"topic", "partition", "offset", "rejected", "reason", "error"},
			[]any{rec.Topic, rec.Partition, rec.Offset, what, res.Reason, res.Err.Error()}})
		return
	}
	w.flush()
	fmt.Fprintf(w.out, "# %s/%d offset %d would be %s (%s): %v\n", rec.Topic, rec.Partition, rec.Offset, what, res.Reason, res.Err)
}

func (w *tailWriter) dropped(rec *kgo.Record) {
	if !w.table {
		_ = w.enc.Encode(object{[]string{"topic", "partition", "offset", "dropped"},
			[]any{rec.Topic, rec.Partition, rec.Offset, "the transform chain keeps no row of it"}})
		return
	}
	w.flush()
	fmt.Fprintf(w.out, "# %s/%d offset %d: the transform chain keeps no row of it\n", rec.Topic, rec.Partition, rec.Offset)
}

func (w *tailWriter) tableRow(header string, names []string, values []any) {
	if w.header != header {
		w.flush()
		w.header = header
		fmt.Fprintln(w.out, header)
		w.tw = tabwriter.NewWriter(w.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w.tw, strings.Join(names, "\t"))
	}
	if w.tw == nil {
		w.tw = tabwriter.NewWriter(w.out, 0, 0, 2, ' ', 0)
	}
	cells := make([]string, len(values))
	for i, v := range values {
		cells[i] = cell(v)
	}
	fmt.Fprintln(w.tw, strings.Join(cells, "\t"))
}

// cell is v as a table cell: strings as they are, NULL, other values as
// JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flush writes the table rows buffered so far; the next row starts a new
// table with its header.
func (w *tailWriter) flush() {
	if w.tw != nil {
		w.tw.Flush()
		w.tw = nil
		w.header = ""
	}
}
