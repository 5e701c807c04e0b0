package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/source/kafka"
)

type assignedHandler struct{ assigned chan kafka.Partitions }

func (h *assignedHandler) Assigned(_ context.Context, p kafka.Partitions) { h.assigned <- p }
func (h *assignedHandler) Revoked(context.Context, kafka.Partitions)      {}
func (h *assignedHandler) Lost(context.Context, kafka.Partitions)         {}
func (h *assignedHandler) Fetched(*kgo.FetchTopicPartition)               {}

// TestExactlyOnceCommitKeepsBlocks: with exactly-once, the broker's
// committed metadata names every registered block above the committed
// offset after each kind of commit: a block's registration, the periodic
// commit of a watermark that moved past an earlier block, and an
// assignment that reads it back (which must see only its own partitions).
func TestExactlyOnceCommitKeepsBlocks(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 2)
	h := &assignedHandler{assigned: make(chan kafka.Partitions, 4)}
	src, err := kafka.New(kafka.Options{Config: &config.Kafka{Brokers: []string{kb.Addr()}, Topics: []string{"events"}, GroupID: "eo-meta",
		StartOffset: "earliest", SessionTimeout: config.Duration(6 * time.Second), RebalanceTimeout: config.Duration(6 * time.Second),
		FetchMaxBytes: 1 << 20, FetchMaxPartitionBytes: 1 << 20, FetchMaxWait: config.Duration(100 * time.Millisecond)},
		Handler: h, Log: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() { cancel(); <-done; src.Close() }()
	select {
	case <-h.assigned:
	case <-time.After(20 * time.Second):
		t.Fatal("no assignment")
	}

	p := &Pipeline{cfg: &config.Config{Delivery: "exactly_once"}, exactlyOnce: true, log: slog.Default(), src: src, tracker: checkpoint.NewTracker(), m: newMetrics(nil)}
	p.commits = newCommitter(p)
	tp := TopicPartition{Topic: "events", Partition: 0}
	l := newLane(tp, p.tracker.Assign(tp), nil, nil)
	p.tracker.Start(tp, l.epoch, 0)
	read := func(what string, wantOffset int64, wantMeta string) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		got, err := src.FetchCommitted(cctx, kafka.Partitions{"events": {0}})
		if err != nil {
			t.Fatal(err)
		}
		if c := got["events"][0]; c.Offset != wantOffset || c.Metadata != wantMeta {
			t.Errorf("after %s: committed %d %q, want %d %q", what, c.Offset, c.Metadata, wantOffset, wantMeta)
		}
	}

	if !p.eoRegister(l, 0, 10) || !p.eoRegister(l, 10, 20) {
		t.Fatal("registration refused")
	}
	read("two registrations", 0, "etl1:0-10,10-20")

	// The first block is durable: the periodic commit moves the offset
	// and must keep naming the second, still in flight.
	p.tracker.Ack(tp, l.epoch, 0, 10)
	if err := p.commits.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	read("the periodic commit", 10, "etl1:10-20")

	// A new owner of partition 0 rebuilds [10, 20); an assignment of
	// partition 1 alone (nothing committed) rebuilds nothing, and one
	// that adds no partition reads nothing.
	blocks, ok := p.eoAssigned(context.Background(), kafka.Partitions{"events": {0, 1}})
	if !ok || len(blocks) != 1 || len(blocks[tp]) != 1 || blocks[tp][0] != [2]int64{10, 20} {
		t.Errorf("blocks to rebuild for partitions 0 and 1 = %v, %v; want [10 20] for events/0 only", blocks, ok)
	}
	if blocks, ok := p.eoAssigned(context.Background(), kafka.Partitions{"events": {1}}); !ok || len(blocks) != 0 {
		t.Errorf("blocks to rebuild for partition 1 = %v, %v; want none", blocks, ok)
	}
	if blocks, ok := p.eoAssigned(context.Background(), kafka.Partitions{}); !ok || len(blocks) != 0 {
		t.Errorf("blocks to rebuild for an empty assignment = %v, %v; want none", blocks, ok)
	}

	// The second block is durable too: the metadata is emptied.
	p.tracker.Ack(tp, l.epoch, 10, 20)
	if err := p.commits.Commit(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	read("the last block's commit", 20, "etl1:")
}

// TestExactlyOnceTableCheck: exactly_once starts on a ReplicatedMergeTree
// whose deduplication window is large, warns when it is small (the
// server's default, 100), and refuses a window of 0 and a sink that turns
// insert_deduplicate off, saying why.
func TestExactlyOnceTableCheck(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	ddl := strings.Replace(gen.TableDDL("default", "events"), "ENGINE = MergeTree", "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/check_%d', '{replica}')", 1)
	for i, tc := range []struct {
		name, settings string
		dedup          any    // sink.clickhouse.settings.insert_deduplicate, nil for none
		err, log       string // the error New returns, a line it logs
	}{
		{"large window", " SETTINGS replicated_deduplication_window = 1000", nil, "", "replicated_deduplication_window=1000"},
		{"default window", "", nil, "", "exactly_once: the table remembers few blocks"},
		{"no window", " SETTINGS replicated_deduplication_window = 0", nil, "has replicated_deduplication_window = 0, which turns that off", ""},
		{"insert_deduplicate off", " SETTINGS replicated_deduplication_window = 1000", int64(0), "sink default sets insert_deduplicate: 0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch.Exec(t, "DROP TABLE IF EXISTS default.events")
			ch.Exec(t, fmt.Sprintf(ddl, i)+tc.settings)
			cfg := testConfig(t, kb, ch, "eo-check")
			cfg.Delivery = "exactly_once"
			if tc.dedup != nil {
				cfg.Sink.ClickHouse.Settings = map[string]any{"insert_deduplicate": tc.dedup}
			}
			var logs bytes.Buffer
			newOrRefused(t, Options{Config: cfg, Log: slog.New(slog.NewTextHandler(&logs, nil))}, tc.err)
			if tc.err != "" {
				return
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, logs.String())
			}
		})
	}
}

// countingDown is a downSource that counts its offset fetches.
type countingDown struct {
	downSource
	fetches int
}

func (s *countingDown) FetchCommitted(ctx context.Context, parts kafka.Partitions) (map[string]map[int32]kafka.Committed, error) {
	s.fetches++
	return s.downSource.FetchCommitted(ctx, parts)
}

// TestEOAssignedReadsFail: an assignment whose reads of the committed
// blocks fail reads again every eoFetchRetry for the group callback's
// limit, then stops the pipeline naming the cause; one whose callback
// context ends (the client closing) takes no lane and stops nothing.
func TestEOAssignedReadsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDirectSimWorld(t, 1)
		p := w.p
		p.hook, p.clk = nil, nil
		src := &countingDown{}
		p.src = src
		start := time.Now()
		if _, ok := p.eoAssigned(context.Background(), kafka.Partitions{"events": {0}}); ok {
			t.Fatal("eoAssigned reported success with every read failed")
		}
		took, limit := time.Since(start), p.callbackLimit()
		if took > limit {
			t.Errorf("the reads went on for %s, past the callback's limit %s", took, limit)
		}
		if want := 1 + int(limit/eoFetchRetry); src.fetches != want {
			t.Errorf("%d reads in %s; want one at once and one every %s (%d)", src.fetches, took, eoFetchRetry, want)
		}
		select {
		case err := <-p.failc:
			if !strings.Contains(err.Error(), "exactly_once: read the committed blocks of") || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("the pipeline stopped with %q; want the reads' cause", err)
			}
		default:
			t.Fatal("the pipeline was not stopped")
		}

		// The client closes while the callback waits to read again.
		p2 := newDirectSimWorld(t, 1).p
		p2.hook, p2.clk = nil, nil
		src2 := &countingDown{}
		p2.src = src2
		ctx, cancel := context.WithCancel(context.Background())
		// (Between two reads: at a read's instant the timer and the
		// close would be ready at once.)
		closeAt := time.Second + eoFetchRetry/2
		time.AfterFunc(closeAt, cancel)
		if _, ok := p2.eoAssigned(ctx, kafka.Partitions{"events": {0}}); ok {
			t.Fatal("eoAssigned reported success with every read failed")
		}
		if want := 1 + int(closeAt/eoFetchRetry); src2.fetches != want {
			t.Errorf("%d reads before the close; want %d", src2.fetches, want)
		}
		select {
		case err := <-p2.failc:
			t.Errorf("the close stopped the pipeline with %v", err)
		default:
		}
	})
}
