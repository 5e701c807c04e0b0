package pipeline

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/etl-project/etl/checkpoint"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/dlq"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestExactlyOnceBlockCutByRetention: under exactly_once, the group's
// committed offset 1,000 carries a block [1000, 1500) a previous owner
// registered (so it may already be in ClickHouse), and retention deleted
// the records below 1,200 before etl started again. The block cannot be
// rebuilt identically, so ClickHouse would not drop it as a duplicate: its
// 300 remaining records are not written but go to the dead-letter topic
// with reason unrebuildable_block, an ERROR names the block, the log start
// and the count, the records after the block are written once, and the
// group commits to the end. Under on_error fail the pipeline stops at the
// block's first record with an error saying how to go on, and the commit
// keeps naming the block.
func TestExactlyOnceBlockCutByRetention(t *testing.T) {
	kb := testenv.Kafka(t)
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	for _, onError := range []config.OnError{config.OnErrorDLQ, config.OnErrorFail} {
		t.Run(string(onError), func(t *testing.T) {
			topic := "eolost_" + string(onError)
			kb.CreateTopic(t, topic, 1)
			kb.CreateTopic(t, topic+".dlq", 1)
			ch.Exec(t, strings.Replace(gen.TableDDL("default", topic), "ENGINE = MergeTree",
				"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/"+topic+"', '{replica}')", 1))
			cfg := oorConfigDelivery(t, kb, ch, topic, "earliest", "exactly_once")
			cfg.Decode.OnError = onError
			if onError == config.OnErrorDLQ {
				cfg.Decode.DLQ = &config.DLQ{Topic: topic + ".dlq"}
			}
			produceIDs(t, kb, topic, 0, 1000)
			first := startOOR(t, cfg)
			testenv.WaitFor(t, "1,000 rows committed", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 1000 })
			first.stop(t)

			// A previous owner registered [1000, 1500) and stopped before
			// it was durable; retention then deleted the records below
			// 1,200.
			produceIDs(t, kb, topic, 1000, 3000)
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1000, LeaderEpoch: -1,
				Metadata: checkpoint.EncodeBlocks([][2]int64{{1000, 1500}})})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := kadm.NewClient(kb.Client(t)).CommitOffsets(ctx, topic, offs)
			cancel()
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatalf("commit the registered block: %v", err)
			}
			kb.DeleteRecords(t, topic, 0, 1200)

			began := time.Now()
			r := startOOR(t, cfg)
			if onError == config.OnErrorFail {
				select {
				case err := <-r.done:
					r.cancel = nil
					t.Logf("Run stopped after %v: %v", time.Since(began).Round(time.Millisecond), err)
					if err == nil || !strings.Contains(err.Error(), "offset 1200") || !strings.Contains(err.Error(), "the block [1000, 1500) registered by the partition's previous owner") {
						t.Fatalf("Run: %v; want the stop at offset 1200 naming the block", err)
					}
				case <-time.After(time.Minute):
					t.Fatal("the pipeline did not stop at the block's first record")
				}
				if n := ch.Count(t, "default."+topic); n != 1000 {
					t.Fatalf("%d rows, want the first run's 1,000 only", n)
				}
				// The commit moved to the log start (the records below it
				// are gone), not past the block's first record there, and
				// still names the block for the next run.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				fetched, err := kadm.NewClient(kb.Client(t)).FetchOffsets(ctx, topic)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				o, _ := fetched.Lookup(topic, 0)
				blocks, err := checkpoint.DecodeBlocks(o.Metadata)
				if o.At != 1200 || err != nil || len(blocks) != 1 || blocks[0] != [2]int64{1000, 1500} {
					t.Fatalf("committed %d with blocks %v (%v), want 1200 with [1000, 1500)", o.At, blocks, err)
				}
				return
			}
			testenv.WaitFor(t, "the commit at 3,000", time.Minute, func() bool { return kb.CommittedOffsets(t, topic, topic)[0] == 3000 })
			took := time.Since(began)
			r.stop(t)
			if got := ch.Query(t, "SELECT count(), uniqExact(id), countIf(id >= 1000 AND id < 1500), min(id), max(id) FROM default."+topic+" WHERE id >= 1000"); got != "1500\t1500\t0\t1500\t2999" {
				t.Fatalf("rows of the second run (count, distinct, of the block, min, max) = %s, want the 1,500 records after the block, once", got)
			}
			line := errorLine(r.logs.String(), "lost its first records to retention", "topic="+topic, "partition=0", "block_first=1000", "block_next=1500", "log_start=1200", "records=300")
			if line == "" {
				t.Fatalf("no ERROR naming the block, the log start and the 300 records; log:\n%s", r.logs.String())
			}
			dead := readTopic(t, kb, topic+".dlq", 300)
			for i, d := range dead {
				h := map[string]string{}
				for _, x := range d.Headers {
					h[x.Key] = string(x.Value)
				}
				if h[dlq.HeaderReason] != "unrebuildable_block" || h[dlq.HeaderOffset] != strconv.Itoa(1200+i) {
					t.Fatalf("dead letter %d: reason %q offset %q, want unrebuildable_block at %d", i, h[dlq.HeaderReason], h[dlq.HeaderOffset], 1200+i)
				}
			}
			t.Logf("300 records dead-lettered, 1,500 written, committed to 3,000 in %v; %s", took.Round(time.Millisecond), line)
		})
	}
}
