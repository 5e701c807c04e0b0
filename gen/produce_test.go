package gen

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newCluster starts an in-process one-broker Kafka on a free port (the
// kernel picks it) with topic "events" of 4 partitions.
func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func newProducer(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(500), // smaller than the run, so Produce must block and resume
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestProduceConsume(t *testing.T) {
	const (
		seed  = 42
		start = 1000
		count = 10000
		parts = 4
	)
	c := newCluster(t)
	cl := newProducer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var progress []uint64
	acked, err := Produce(ctx, cl, ProduceOptions{
		Topic: "events", Seed: seed, Start: start, Count: count, Partitions: parts,
		Progress: func(n uint64) { progress = append(progress, n) },
	})
	if err != nil || acked != count {
		t.Fatalf("Produce = %d, %v; want %d, nil", acked, err, count)
	}
	if len(progress) < count/progressEvery || progress[len(progress)-1] != count {
		t.Errorf("progress calls %v", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Errorf("progress went back: %v", progress)
			break
		}
	}

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	seen := make([]bool, count)
	got := 0
	for got < count {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, count, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			id, err := strconv.ParseUint(string(r.Key), 10, 64)
			if err != nil || id < start || id >= start+count {
				t.Fatalf("record key %q", r.Key)
			}
			if seen[id-start] {
				t.Fatalf("record %d consumed twice", id)
			}
			seen[id-start] = true
			got++
			if r.Partition != int32(id%parts) {
				t.Errorf("record %d in partition %d, want %d", id, r.Partition, id%parts)
			}
			want := Make(seed, id)
			e, err := parseEvent(r.Value)
			if err != nil {
				t.Fatalf("record %d: %v: %s", id, err, r.Value)
			}
			if !equal(e, want) {
				t.Errorf("record %d: got %+v, want %+v", id, e, want)
			}
			if !bytes.Equal(r.Value, want.AppendJSON(nil)) {
				t.Errorf("record %d: value %s", id, r.Value)
			}
		})
	}
}

func TestProduceRateAndDuration(t *testing.T) {
	c := newCluster(t)
	cl := newProducer(t, c)
	const rate, dur = 1000, 300 * time.Millisecond
	begin := time.Now()
	acked, err := Produce(context.Background(), cl, ProduceOptions{
		Topic: "events", Seed: 1, Rate: rate, Duration: dur, Partitions: 4,
	})
	elapsed := time.Since(begin)
	if err != nil {
		t.Fatalf("Produce: %v", err)
	}
	// Record i is sent no earlier than i/rate after the start, so at most
	// rate*dur+1 records fit in dur.
	if maxN := uint64(rate*dur.Seconds()) + 1; acked == 0 || acked > maxN {
		t.Errorf("acked %d records in %v at %d/s; want 1..%d", acked, dur, rate, maxN)
	}
	if elapsed < dur {
		t.Errorf("returned after %v, before Duration %v", elapsed, dur)
	}
}

func TestProduceCountWithRate(t *testing.T) {
	c := newCluster(t)
	cl := newProducer(t, c)
	begin := time.Now()
	acked, err := Produce(context.Background(), cl, ProduceOptions{
		Topic: "events", Seed: 1, Count: 50, Rate: 500, Partitions: 4,
	})
	if err != nil || acked != 50 {
		t.Fatalf("Produce = %d, %v", acked, err)
	}
	// 50 records at 500/s: the last is due 98 ms after the first.
	if elapsed := time.Since(begin); elapsed < 98*time.Millisecond {
		t.Errorf("50 records at 500/s took only %v", elapsed)
	}
}

func TestProduceErrorStops(t *testing.T) {
	c := newCluster(t)
	cl := newProducer(t, c)
	// Ids with id%8 >= 4 go to partitions the topic does not have.
	acked, err := Produce(context.Background(), cl, ProduceOptions{
		Topic: "events", Seed: 1, Count: 100000, Partitions: 8,
	})
	if err == nil {
		t.Fatalf("Produce to missing partitions acked %d and returned no error", acked)
	}
	if acked >= 100000 {
		t.Errorf("acked %d after an error", acked)
	}
	t.Logf("acked %d, error: %v", acked, err)
}

func TestProduceContextCancel(t *testing.T) {
	c := newCluster(t)
	cl := newProducer(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	// Unbounded by count and duration: only ctx stops it.
	acked, err := Produce(ctx, cl, ProduceOptions{Topic: "events", Seed: 1, Rate: 1000, Partitions: 4})
	elapsed := time.Since(begin)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Produce = %d, %v; want context.DeadlineExceeded", acked, err)
	}
	// Record k is due k ms after the first: no more can have gone out than
	// were due when Produce returned (the deadline's timer may fire late on
	// a loaded machine, so the bound is the time that really passed).
	if due := uint64(elapsed/time.Millisecond) + 1; acked == 0 || acked > due {
		t.Errorf("acked %d in %v at 1000/s, at most %d were due", acked, elapsed, due)
	}
}
