package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
)

// genCmd produces generated records: -count of them, or -rate a second for
// -duration. Record n's content is a pure function of -seed and n.
func genCmd(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("gen", stdout, stderr)
	brokers := fs.String("brokers", envOr("KAFKA_BROKERS", "127.0.0.1:19092"), "comma-separated Kafka `brokers`")
	topic := fs.String("topic", "events", "`topic` to produce to")
	partitions := fs.Int("partitions", 6, "partitions of the topic (created with this many when missing; default for an existing topic: all of its partitions); record n goes to n mod partitions")
	seed := fs.Int64("seed", 1, "data set `seed`")
	start := fs.Uint64("start", 0, "first record number")
	count := fs.Uint64("count", 100000, "records to produce (0 with -rate: until -duration ends)")
	rate := fs.Int("rate", 0, "records per second (0: as fast as possible)")
	duration := fs.Duration("duration", 0, "with -rate: stop after this long")
	printDDL := fs.Bool("ddl", false, "print the CREATE TABLE statement for the generated records and exit")
	table := fs.String("table", "default.events", "table name for -ddl")
	tsForm := fs.String("ts", "mixed", "form of the timestamps: mixed (RFC 3339, epoch seconds and epoch milliseconds by record), rfc3339, seconds or millis")
	format := fs.String("format", "json", "records to produce: json (6-column events), nested-avro (Confluent-framed Avro batches of 100 nested events, registered with -registry) or nested-protobuf (the same batches in Protobuf, Confluent-framed, the schema registered with -registry as two files, the event's a reference; protobuf for short)")
	registry := fs.String("registry", envOr("SCHEMA_REGISTRY_URL", ""), "with -format nested-avro or nested-protobuf: the schema registry `URL` the schema is registered with (subject <topic>-value; the Protobuf event's file under "+gen.ProtobufEventImport+")")
	compression := fs.String("compression", "snappy", "compression of the produced batches: none, gzip, snappy, lz4 or zstd")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "etl gen: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	ts, err := gen.ParseTSForm(*tsForm)
	if err != nil {
		fmt.Fprintf(stderr, "etl gen: -ts: %v\n", err)
		return exitUsage
	}
	codec, ok := compressionCodecs[*compression]
	if !ok {
		fmt.Fprintf(stderr, "etl gen: -compression %q is not one of none, gzip, snappy, lz4, zstd\n", *compression)
		return exitUsage
	}
	nested, protobuf := false, false
	switch *format {
	case "json":
	case "nested-avro":
		nested = true
	case "nested-protobuf", "protobuf":
		nested, protobuf = true, true
	default:
		fmt.Fprintf(stderr, "etl gen: -format %q is not one of json, nested-avro, nested-protobuf\n", *format)
		return exitUsage
	}
	if *printDDL {
		db, tbl, ok := strings.Cut(*table, ".")
		if !ok {
			db, tbl = "default", *table
		}
		if nested {
			fmt.Fprintln(stdout, gen.NestedDDL(db, tbl))
		} else {
			fmt.Fprintln(stdout, gen.TableDDL(db, tbl))
		}
		return exitOK
	}
	var schemaID int32
	if nested {
		if *registry == "" {
			fmt.Fprintf(stderr, "etl gen: -format %s needs -registry\n", *format)
			return exitUsage
		}
		if protobuf {
			schemaID, err = registerProtobuf(*registry, *topic+"-value")
		} else {
			schemaID, err = registerSchema(*registry, *topic+"-value", map[string]any{"schema": gen.NestedSchema})
		}
		if err != nil {
			fmt.Fprintf(stderr, "etl gen: %v\n", err)
			return exitFailed
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200000),
		kgo.ProducerBatchCompression(codec),
	)
	if err != nil {
		fmt.Fprintf(stderr, "etl gen: %v\n", err)
		return exitFailed
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, int32(*partitions), -1, nil, *topic); err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		fmt.Fprintf(stderr, "etl gen: create topic %s: %v\n", *topic, err)
		return exitFailed
	}
	// An existing topic keeps its partitions: spread the records over
	// them, unless -partitions asks for fewer.
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "partitions" })
	if td, err := adm.ListTopics(ctx, *topic); err == nil {
		if d, ok := td[*topic]; ok && d.Err == nil && len(d.Partitions) > 0 {
			have := len(d.Partitions)
			switch {
			case !set:
				*partitions = have
			case *partitions > have:
				fmt.Fprintf(stderr, "etl gen: topic %s has %d partitions, fewer than -partitions %d\n", *topic, have, *partitions)
				return exitUsage
			}
		}
	}
	began := time.Now()
	po := gen.ProduceOptions{
		Topic: *topic, Seed: *seed, Start: *start, Count: *count, Rate: *rate, Duration: *duration,
		Partitions: *partitions, TS: ts,
	}
	if protobuf {
		po.ProtobufSchemaID = schemaID
	} else {
		po.NestedSchemaID = schemaID
	}
	n, err := gen.Produce(ctx, cl, po)
	el := time.Since(began)
	fmt.Fprintf(stdout, "produced %d records to %s in %v (%.0f records/s)\n", n, *topic, el.Round(time.Millisecond), float64(n)/el.Seconds())
	if nested && err == nil {
		fmt.Fprintf(stdout, "rows the benchmark's chain keeps: %d\n", gen.KeptRows(*seed, *start, n))
	}
	if err != nil {
		fmt.Fprintf(stderr, "etl gen: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// registerSchema registers a schema under subject with the registry at
// base (POST /subjects/{subject}/versions, body the request's JSON:
// schema, and schemaType and references when not Avro) and returns its
// id.
func registerSchema(base, subject string, request map[string]any) (int32, error) {
	body, err := json.Marshal(request)
	if err != nil {
		return 0, err
	}
	u := strings.TrimRight(base, "/") + "/subjects/" + url.PathEscape(subject) + "/versions"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("register schema: %w", err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("register schema under %s: %w", subject, err)
	}
	defer resp.Body.Close()
	var out struct {
		ID      int32  `json:"id"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.ID == 0 {
		return 0, fmt.Errorf("register schema under %s: HTTP %d %s", subject, resp.StatusCode, out.Message)
	}
	return out.ID, nil
}

// registerProtobuf registers the nested data set's Protobuf schema with
// the registry at base: the event's file under the subject named by its
// import path, then the batch's file, which references that version of
// it, under subject. It returns the batch schema's id, the one the
// records carry.
func registerProtobuf(base, subject string) (int32, error) {
	eventID, err := registerSchema(base, gen.ProtobufEventImport, map[string]any{
		"schema": gen.ProtobufEventSchema, "schemaType": "PROTOBUF",
	})
	if err != nil {
		return 0, err
	}
	version, err := latestVersion(base, gen.ProtobufEventImport, eventID)
	if err != nil {
		return 0, err
	}
	return registerSchema(base, subject, map[string]any{
		"schema": gen.ProtobufBatchSchema, "schemaType": "PROTOBUF",
		"references": []map[string]any{{"name": gen.ProtobufEventImport, "subject": gen.ProtobufEventImport, "version": version}},
	})
}

// latestVersion returns the version number of subject's latest version
// (GET /subjects/{subject}/versions/latest), which must be schema id, just
// registered.
func latestVersion(base, subject string, id int32) (int, error) {
	u := strings.TrimRight(base, "/") + "/subjects/" + url.PathEscape(subject) + "/versions/latest"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("version of %s: %w", subject, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("version of %s: %w", subject, err)
	}
	defer resp.Body.Close()
	var out struct {
		ID      int32  `json:"id"`
		Version int    `json:"version"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Version < 1 {
		return 0, fmt.Errorf("version of %s: HTTP %d %s", subject, resp.StatusCode, out.Message)
	}
	if out.ID != id {
		return 0, fmt.Errorf("version of %s: its latest version %d is schema id %d, not the id %d just registered", subject, out.Version, out.ID, id)
	}
	return out.Version, nil
}

// compressionCodecs are the codecs -compression names.
var compressionCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok && v != "" {
		return v
	}
	return def
}
