package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// kafkaStartAttempts bounds how often Kafka picks a new port when
	// another process took the free port first.
	kafkaStartAttempts = 5

	// kafkaRequestTimeout bounds each admin request and each produce batch.
	kafkaRequestTimeout = time.Minute

	// produceBatch is how many records Produce hands to one ProduceSync.
	produceBatch = 10_000
)

// Broker is an in-process Kafka cluster (franz-go's kfake) started by
// [Kafka]. Its methods are safe for concurrent use.
type Broker struct {
	cluster *kfake.Cluster
	addrs   []string

	mu     sync.Mutex
	client *kgo.Client // shared producer and admin client, made on first use
	adm    *kadm.Client
}

// Kafka starts an in-process Kafka cluster listening on a free port of
// 127.0.0.1 and closes it when t finishes. With no options it is one broker
// without automatic topic creation: create topics with CreateTopic, or pass
// kfake.SeedTopics or kfake.AllowAutoTopicCreation. The free port is given
// as kfake.Ports first, so a kfake.Ports option in opts replaces it (one
// broker per port; kfake.NumBrokers alone is overridden by the free port).
func Kafka(t testing.TB, opts ...kfake.Opt) *Broker {
	t.Helper()
	var (
		cluster *kfake.Cluster
		err     error
	)
	for attempt := 1; ; attempt++ {
		all := append([]kfake.Opt{kfake.Ports(FreePort(t))}, opts...)
		cluster, err = kfake.NewCluster(all...)
		if err == nil {
			break
		}
		if strings.Contains(err.Error(), "address already in use") && attempt < kafkaStartAttempts {
			t.Logf("testenv: Kafka port taken, retrying with a new port: %v", err)
			continue
		}
		t.Fatalf("testenv: start Kafka: %v", err)
	}
	b := &Broker{cluster: cluster, addrs: cluster.ListenAddrs()}
	t.Cleanup(b.close)
	return b
}

func (b *Broker) close() {
	b.mu.Lock()
	if b.client != nil {
		b.client.Close()
		b.client = nil
	}
	b.mu.Unlock()
	if b.cluster != nil {
		b.cluster.Close()
	}
}

// Addr returns the host:port of the first broker.
func (b *Broker) Addr() string { return b.addrs[0] }

// Addrs returns the host:port of every broker.
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Cluster returns the kfake cluster, for control functions and node moves.
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Client returns a new client seeded with the brokers and configured by
// opts, closed when t finishes.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs...)}, opts...)...)
	if err != nil {
		t.Fatalf("testenv: new Kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// shared returns the broker's own client and admin client, which live until
// the broker is closed.
func (b *Broker) shared() (*kgo.Client, *kadm.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(b.addrs...),
			kgo.ProducerLinger(0),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		)
		if err != nil {
			return nil, nil, fmt.Errorf("new Kafka client: %w", err)
		}
		b.client, b.adm = cl, kadm.NewClient(cl)
	}
	return b.client, b.adm, nil
}

func (b *Broker) admin(t testing.TB) *kadm.Client {
	t.Helper()
	_, adm, err := b.shared()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return adm
}

// CreateTopic creates topic with the given number of partitions.
func (b *Broker) CreateTopic(t testing.TB, name string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	resp, err := b.admin(t).CreateTopic(ctx, int32(partitions), -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testenv: create topic %s with %d partitions: %v", name, partitions, err)
	}
}

// DeleteTopic deletes topic name; the brokers forget the groups' committed
// offsets for it, as Kafka does.
func (b *Broker) DeleteTopic(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	resp, err := b.admin(t).DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testenv: delete topic %s: %v", name, err)
	}
	// The shared producer would refuse a topic created again under the
	// name (a new topic ID) until it forgets the old one.
	cl, _, _ := b.shared()
	cl.PurgeTopicsFromClient(name)
}

// Produce writes recs to topic and waits until all are acknowledged. A
// record with an empty Topic gets topic; records with no partition set are
// spread round robin over the partitions.
func (b *Broker) Produce(t testing.TB, topic string, recs []*kgo.Record) {
	t.Helper()
	cl, _, err := b.shared()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for _, r := range recs {
		if r.Topic == "" {
			r.Topic = topic
		}
	}
	for start := 0; start < len(recs); start += produceBatch {
		batch := recs[start:min(start+produceBatch, len(recs))]
		ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
		err := cl.ProduceSync(ctx, batch...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("testenv: produce records %d..%d of %d to %s: %v",
				start, start+len(batch), len(recs), topic, err)
		}
	}
}

// EndOffsets returns the end offset (high watermark) of each partition of
// topic. It fails t when the topic does not exist.
func (b *Broker) EndOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	listed, err := b.admin(t).ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("testenv: list end offsets of %s: %v", topic, err)
	}
	out := make(map[int32]int64, len(listed[topic]))
	for p, o := range listed[topic] {
		out[p] = o.Offset
	}
	return out
}

// CommittedOffsets returns the offsets group has committed for the
// partitions of topic. A group that does not exist yet has committed
// nothing: the map is empty.
func (b *Broker) CommittedOffsets(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	out, err := b.committedOffsets(group, topic)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return out
}

// CommittedOffsetsErr is CommittedOffsets returning its error, for use
// outside the test goroutine.
func (b *Broker) CommittedOffsetsErr(group, topic string) (map[int32]int64, error) {
	return b.committedOffsets(group, topic)
}

func (b *Broker) committedOffsets(group, topic string) (map[int32]int64, error) {
	_, adm, err := b.shared()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	fetched, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil
	}
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	out := make(map[int32]int64, len(fetched[topic]))
	for p, o := range fetched[topic] {
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// DeleteRecords deletes the records of topic's partition below offset, as
// retention does: the partition's log start becomes offset.
func (b *Broker) DeleteRecords(t testing.TB, topic string, partition int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	var os kadm.Offsets
	os.AddOffset(topic, partition, offset, -1)
	resp, err := b.admin(t).DeleteRecords(ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("testenv: delete records of %s/%d below %d: %v", topic, partition, offset, err)
	}
}

// CommitOffset commits offset for group on topic's partition, as a tool
// outside the group would (the group must have no members).
func (b *Broker) CommitOffset(t testing.TB, group, topic string, partition int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	var os kadm.Offsets
	os.AddOffset(topic, partition, offset, -1)
	resp, err := b.admin(t).CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("testenv: commit offset %d of %s/%d for group %s: %v", offset, topic, partition, group, err)
	}
}

// StartOffsets returns the log start offset of each partition of topic.
func (b *Broker) StartOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRequestTimeout)
	defer cancel()
	listed, err := b.admin(t).ListStartOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("testenv: list start offsets of %s: %v", topic, err)
	}
	out := make(map[int32]int64, len(listed[topic]))
	for p, o := range listed[topic] {
		out[p] = o.Offset
	}
	return out
}
