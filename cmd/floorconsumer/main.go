// Command floorconsumer is the client floor of the benchmarks
// (scripts/bench-compare.sh): a franz-go consumer with franz-go's default
// fetch sizes that joins a consumer group, reads a topic (or several,
// comma-separated) from its start and discards every record until it has
// read -count of them. What it costs is what any Go consumer of those
// topics pays before doing anything with the records; etl's CPU per row is
// measured against it (scripts/bench-compare.sh, and over many partitions
// scripts/bench-scale.sh).
//
//	floorconsumer -brokers 127.0.0.1:9092 -topic events -count 2000000
//	floorconsumer -brokers 127.0.0.1:9092 -topic s0,s1,s2 -count 300000
//
// It prints "read N records (B value bytes) in S s" and exits 0, or exits
// 1 with the error once -timeout has passed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "comma-separated seed `brokers`")
	topic := flag.String("topic", "events", "the `topics` to read, comma-separated")
	group := flag.String("group", "", "the consumer `group` (default: a new one per run)")
	count := flag.Int64("count", 0, "stop after this many `records` (required)")
	timeout := flag.Duration("timeout", 5*time.Minute, "fail if the records have not all been read by then")
	flag.Parse()
	if *count <= 0 {
		fmt.Fprintln(os.Stderr, "floorconsumer: -count is required")
		os.Exit(2)
	}
	if *group == "" {
		*group = fmt.Sprintf("floor-%d", time.Now().UnixNano())
	}
	if err := run(*brokers, *topic, *group, *count, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "floorconsumer:", err)
		os.Exit(1)
	}
}

func run(brokers, topic, group string, count int64, timeout time.Duration) error {
	start := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(strings.Split(topic, ",")...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var n, bytes int64
	for n < count {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", n, count, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("%s[%d]: %w", t, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value))
		})
	}
	fmt.Printf("read %d records (%d value bytes) in %.3f s\n", n, bytes, time.Since(start).Seconds())
	return nil
}
