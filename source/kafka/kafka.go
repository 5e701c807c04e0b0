// Package kafka is the Kafka source: a franz-go consumer-group client whose
// poll loop never blocks on the pipeline, with manual commits of offsets
// computed by the pipeline and partition pause and resume for backpressure.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/etl-project/etl/config"
)

// Partitions maps topics to partition numbers, as franz-go's callbacks do.
type Partitions = map[string][]int32

// Handler receives what the source sees. Assigned, Revoked and Lost are
// called from the group management goroutine, never concurrently with each
// other nor, thanks to BlockRebalanceOnPoll, with Fetched. Fetched is called
// from the poll loop and must not block.
type Handler interface {
	// Assigned is called before fetching starts for newly assigned partitions.
	Assigned(ctx context.Context, p Partitions)
	// Revoked is called when partitions are taken away in a rebalance or on
	// leaving the group; it may block to finish in-flight work and commit.
	Revoked(ctx context.Context, p Partitions)
	// Lost is called when partitions were lost (session expired, fenced):
	// nothing may be committed for them.
	Lost(ctx context.Context, p Partitions)
	// Fetched hands over the records of one partition from one poll.
	Fetched(p *kgo.FetchTopicPartition)
}

// Options configures a Source.
type Options struct {
	Config   *config.Kafka
	Pipeline string
	Handler  Handler
	Log      *slog.Logger
	// Registerer receives the source's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// CommitRegisterer receives etl_checkpoint_commit_errors_total
	// (default Registerer).
	CommitRegisterer prometheus.Registerer
	// MaxPollRecords bounds the records one poll returns.
	MaxPollRecords int
	// Resumed, when set, is told of a partition whose group's committed
	// offset lay outside the log and that resumes at offset instead (the
	// log start or end; outofrange.go), before its records are fetched,
	// so that the position is committed and a restart does not report the
	// skip again.
	Resumed func(topic string, partition int32, offset int64)
	// HeartbeatInterval is the group heartbeat's period (0: franz-go's
	// 3 s); tests with short sessions shorten it.
	HeartbeatInterval time.Duration
	// MaxDecompressedBatchBytes bounds what one record batch may
	// decompress to (source.kafka.max_decompressed_batch_bytes, resolved);
	// 0: the configured value, or franz-go's 1 GiB.
	MaxDecompressedBatchBytes int64
	// Room, when set, is the in-flight budget's room (the budget less
	// what is in flight): what the client holds decompressed and not yet
	// polled is bounded by it (decompress.go).
	Room func() int64
	// SkipRefused moves a partition past a refused batch once its stand-in
	// record is handed over (on_error skip or dlq); otherwise the
	// partition stops at it (refused.go).
	SkipRefused bool
	// Missing are source topics that did not exist at startup, waited
	// for (source.kafka.wait_for_topics; MissingTopics). The caller has
	// warned about them: the source warns again every 30 s. Under
	// source.kafka.topics_regex, one entry (MissingTopic.String) stands
	// for no topic matching.
	Missing []string
	// Subscription is what the source consumes (SubscriptionOf); nil:
	// Config's, excluding nothing.
	Subscription *Subscription
	// Matched are the topics matched at startup under
	// source.kafka.topics_regex, nil when not known. A topic not among
	// them, with no committed offset, was created while etl ran: it is
	// read from its first record whatever source.kafka.start_offset says.
	Matched []string
}

// Source is a consumer-group member.
type Source struct {
	cl       *kgo.Client
	decomp   *decompressor // the client's decompressor (lz4 read block by block)
	ready    chan struct{} // closed by Run: the handler may be called from then on
	runOnce  sync.Once
	o        Options
	log      *slog.Logger
	metrics  *metrics
	lastPoll atomic.Int64 // unix nanoseconds of the last return from a poll
	// flights follows the fetches; restarts are the resumes that restart
	// them (resume.go).
	flights  fetchFlights
	restarts restarts
	paused   pausedSet
	brokers  *brokerWatch
	owners   *ownership
	pos      *positions    // where each partition's next record should be (outofrange.go)
	fetch    fetchState    // fetch errors (fetcherr.go)
	missing  missingTopics // topics waited for (topics.go)
	sub      *Subscription
	// recreated are the topics resubscribed after being deleted and
	// created again (fetcherr.go): their committed offsets are the old
	// topic's, and adjustOffsets starts them at start_offset instead.
	recreated topicSet
	// The client is made with the small first-fetch sizes (startFetch...);
	// each fetch response that carried records raises them fourfold
	// (readHook) until they reach the configured ones, full. client is
	// cl for the hook, which may run before New has set cl.
	client atomic.Pointer[kgo.Client]
	full   [2]int32 // fetch_max_bytes, fetch_max_partition_bytes
	rampMu sync.Mutex
	ramp   [2]int32 // the sizes in force
}

// The first fetch of a process asks for at most these many bytes in all
// and per partition, so that the first records are read, decompressed and
// handed over in milliseconds instead of after a full fetch of every
// partition (6 partitions of 1 MiB took 0.2-0.25 s to arrive on a local
// broker, against 20 ms for 256 KiB). Each response that carried records
// raises both fourfold for the next fetch, up to the configured
// fetch_max_bytes and fetch_max_partition_bytes, so the decoders work on
// the first records while the larger fetches arrive.
const (
	startFetchBytes          = 256 << 10
	startFetchPartitionBytes = 64 << 10
)

// SmallFetchOpts are the first fetches' sizes, for clients that read a few
// records and should have them at once (etl tail).
func SmallFetchOpts() []kgo.Opt {
	return []kgo.Opt{kgo.FetchMaxBytes(startFetchBytes), kgo.FetchMaxPartitionBytes(startFetchPartitionBytes)}
}

// Brokers reports when a broker last answered a request (the client's
// creation before the first answer) and the last connection error.
func (s *Source) Brokers() (lastAnswer time.Time, lastErr string) {
	return s.brokers.LastAnswer(), s.brokers.LastError()
}

// LastPoll is when the poll loop last returned from a poll (zero before
// Run).
func (s *Source) LastPoll() time.Time {
	if n := s.lastPoll.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// pollWait bounds one poll, so that the loop shows it is alive even when
// no record arrives.
const pollWait = time.Second

// New builds the client. The client joins the group at once, but the
// handler is not called before Run starts: a rebalance callback waits for
// it, so the caller can finish building what the handler uses.
func New(o Options) (*Source, error) {
	if o.MaxPollRecords <= 0 {
		o.MaxPollRecords = 10000
	}
	s := &Source{o: o, log: o.Log, metrics: newMetrics(o.Registerer, o.CommitRegisterer), ready: make(chan struct{}), owners: newOwnership(), decomp: newDecompressor(), pos: newPositions()}
	s.missing.topics, s.missing.warned = slices.Clone(o.Missing), time.Now()
	s.sub = o.Subscription
	if s.sub == nil {
		sub, err := NewSubscription(o.Config)
		if err != nil {
			return nil, err
		}
		s.sub = sub
	}
	opts, err := clientOpts(o.Config)
	if err != nil {
		return nil, err
	}
	s.brokers = newBrokerWatch(s.log, o.Config, s.metrics.connErrors)
	s.metrics.skipped = newSkipped(s.sub.Listed())
	s.metrics.refused = newRefused(s.sub.Listed())
	s.decomp.room = o.Room
	switch {
	case o.MaxDecompressedBatchBytes > 0:
		s.decomp.max = int(o.MaxDecompressedBatchBytes)
	case o.Config.MaxDecompressedBatchBytes > 0:
		s.decomp.max = int(o.Config.MaxDecompressedBatchBytes)
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(s.metrics.skipped, s.metrics.refused, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "etl_source_batches_deferred_total",
			Help: "Compressed record batches not decompressed yet because the in-flight budget had no room for them: fetched again once the pipeline took what the client held.",
		}, func() float64 { return float64(s.decomp.deferred.Load()) }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "etl_source_decompressed_held_bytes",
			Help: "Decompressed record batch bytes the Kafka client holds and the pipeline has not polled yet (bounded by the in-flight budget's room).",
		}, func() float64 { return float64(s.decomp.Held()) }))
	}
	for _, b := range o.Config.Brokers {
		s.metrics.connErrors.WithLabelValues(b) // served from the start, at 0
	}
	opts = append(opts,
		kgo.WithHooks(s.brokers, readHook{s}),
		kgo.WithDecompressor(s.decomp),
		kgo.ConsumerGroup(o.Config.GroupID),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, p map[string][]int32) {
			if !s.waitReady(ctx) {
				return
			}
			s.restarts.drop(p)
			s.assigned(ctx, cl, p)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, p map[string][]int32) {
			if len(p) == 0 || !s.waitReady(ctx) {
				return
			}
			s.revoked(ctx, cl, p)
			s.pos.drop(p)
			s.restarts.drop(p)
			s.decomp.dropParts(p)
		}),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, p map[string][]int32) {
			if len(p) == 0 || !s.waitReady(ctx) {
				return
			}
			s.metrics.assigned.Sub(float64(count(p)))
			s.metrics.lost.Add(float64(count(p)))
			s.log.Warn("partitions lost", "partitions", p)
			o.Handler.Lost(ctx, p)
			s.owners.drop(p)
			s.pos.drop(p)
			s.restarts.drop(p)
			s.decomp.dropParts(p)
		}),
		kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
	)
	// start_offset is only for partitions without a committed offset; an
	// offset outside the log resumes inside it (outofrange.go).
	start := kgo.NewOffset().AtStart()
	if o.Config.StartOffset == "latest" {
		start = kgo.NewOffset().AtEnd()
	}
	opts = append(opts, kgo.ConsumeStartOffset(start), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	opts = append(opts, s.sub.consumeOpts()...)
	// A topic topics_regex matches is found by a metadata refresh, at
	// least every metadata_max_age. The shortest time between two
	// refreshes (franz-go's 5 s) is lowered with a shorter max age.
	if d := o.Config.MetadataMaxAge.D(); d > 0 {
		opts = append(opts, kgo.MetadataMaxAge(d), kgo.MetadataMinAge(min(d, 5*time.Second)))
	}
	if d := o.Config.SessionTimeout.D(); d > 0 {
		opts = append(opts, kgo.SessionTimeout(d))
	}
	if o.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(o.HeartbeatInterval))
	}
	if d := o.Config.RebalanceTimeout.D(); d > 0 {
		opts = append(opts, kgo.RebalanceTimeout(d))
	}
	if d := o.Config.FetchMaxWait.D(); d > 0 {
		opts = append(opts, kgo.FetchMaxWait(d))
	}
	// The fetch limits are the hard backstop under the byte budget: at most
	// fetch_max_bytes per broker response is buffered by the client before
	// the pipeline counts it.
	s.full = [2]int32{50 << 20, 1 << 20} // franz-go's defaults
	if b := o.Config.FetchMaxBytes; b > 0 {
		s.full[0] = int32(min(int64(b), 1<<30))
	}
	if b := o.Config.FetchMaxPartitionBytes; b > 0 {
		s.full[1] = int32(min(int64(b), 1<<30))
	}
	s.ramp = [2]int32{min(s.full[0], startFetchBytes), min(s.full[1], startFetchPartitionBytes)}
	opts = append(opts, kgo.FetchMaxBytes(s.ramp[0]), kgo.FetchMaxPartitionBytes(s.ramp[1]))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	s.cl = cl
	s.client.Store(cl)
	return s, nil
}

// clientOpts returns the connection options shared by consumers and
// producers: brokers, client id, TLS and SASL.
func clientOpts(c *config.Kafka) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.TLS != nil && c.TLS.Enabled {
		tc, err := c.TLS.Config("source.kafka.tls")
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.SASL != nil {
		m, err := saslMechanism(c.SASL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// ClientOpts returns the connection options of c for other clients of the
// same cluster (producers, admin).
func ClientOpts(c *config.Kafka) ([]kgo.Opt, error) { return clientOpts(c) }

// saslMechanism returns the mechanism of c. Its password is read at each
// connection (SASL.Secret): a rotated password_file is picked up by the
// next connection.
func saslMechanism(c *config.SASL) (sasl.Mechanism, error) {
	switch c.Mechanism {
	case "PLAIN":
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			pw, err := c.Secret()
			return plain.Auth{User: c.Username, Pass: pw}, err
		}), nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		auth := func(context.Context) (scram.Auth, error) {
			pw, err := c.Secret()
			return scram.Auth{User: c.Username, Pass: pw}, err
		}
		if c.Mechanism == "SCRAM-SHA-256" {
			return scram.Sha256(auth), nil
		}
		return scram.Sha512(auth), nil
	}
	return nil, fmt.Errorf("source.kafka.sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", c.Mechanism)
}

// waitReady waits until Run has started; false when the client closed
// first (nothing was handed to the handler, so there is nothing to do).
func (s *Source) waitReady(ctx context.Context) bool {
	select {
	case <-s.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// Run is the poll loop: it polls, hands each partition's records to the
// handler and allows rebalances between polls, until ctx is cancelled. It
// never waits on the pipeline: backpressure acts by pausing partitions.
func (s *Source) Run(ctx context.Context) error {
	s.runOnce.Do(func() { close(s.ready) })
	for {
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		s.restarts.polling(cancel)
		fs := s.cl.PollRecords(pctx, s.o.MaxPollRecords)
		s.restarts.polled()
		cancel()
		now := time.Now()
		s.lastPoll.Store(now.UnixNano())
		s.metrics.pollSeconds.Observe(now.Sub(start).Seconds())
		if fs.IsClientClosed() || ctx.Err() != nil {
			s.cl.AllowRebalance()
			return nil
		}
		var refused []*kgo.ErrDecompressTooLarge
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			if dl := (*kgo.ErrDataLoss)(nil); errors.As(err, &dl) {
				s.dataLoss(dl)
				return
			}
			if errors.Is(err, errDeferred) {
				return // fetched again: the budget had no room for it (decompress.go)
			}
			if tl := (*kgo.ErrDecompressTooLarge)(nil); errors.As(err, &tl) {
				refused = append(refused, tl)
				return
			}
			s.fetchError(topic, p, err)
		})
		// Partitions kept across a member change restart here, while no
		// rebalance can run; this poll's records of them came from the old
		// position.
		seeked := s.owners.takeSeek()
		if seeked != nil {
			s.cl.SetOffsets(seeked)
			for t, ps := range seeked {
				for part, eo := range ps {
					s.pos.set(t, part, eo.Offset)
				}
			}
		}
		for _, tl := range refused {
			if _, moved := seeked[tl.Topic][tl.Partition]; !moved {
				s.refused(tl) // refused.go
			}
		}
		floors := seeked != nil || s.owners.hasFloors()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if floors {
				s.owners.filter(&p, seeked)
			}
			if len(p.Records) == 0 {
				return
			}
			s.checkGap(&p)
			n := 0
			for _, r := range p.Records {
				n += len(r.Value) + len(r.Key)
			}
			s.metrics.records.Add(float64(len(p.Records)))
			s.metrics.bytes.Add(float64(n))
			s.o.Handler.Fetched(&p)
		})
		s.restartResumed(seeked)
		s.cl.AllowRebalance()
		s.afterPoll(ctx, fs) // fetcherr.go: fetch health, recreated topics, backoff
	}
}

// Offset is an offset to commit: the next offset to read.
type Offset struct {
	Topic     string
	Partition int32
	Offset    int64
	// Metadata is stored with the committed offset (exactly-once delivery
	// keeps its insert blocks there).
	Metadata string
}

// Committed is a partition's committed offset and its metadata.
type Committed struct {
	Offset   int64 // -1 when nothing is committed
	Metadata string
}

// FetchCommitted reads the group's committed offsets and metadata for
// parts from the group coordinator.
func (s *Source) FetchCommitted(ctx context.Context, parts Partitions) (map[string]map[int32]Committed, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = s.o.Config.GroupID
	for topic, ps := range parts {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, ps...)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets: %w", err)
	}
	if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
		return nil, fmt.Errorf("fetch committed offsets: %w", e)
	}
	out := map[string]map[int32]Committed{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				return nil, fmt.Errorf("fetch committed offsets: %s/%d: %w", t.Topic, p.Partition, e)
			}
			if out[t.Topic] == nil {
				out[t.Topic] = map[int32]Committed{}
			}
			c := Committed{Offset: p.Offset}
			if p.Metadata != nil {
				c.Metadata = *p.Metadata
			}
			out[t.Topic][p.Partition] = c
		}
	}
	return out, nil
}

// Commit synchronously commits offsets for the group. It fails if any
// partition's commit fails.
func (s *Source) Commit(ctx context.Context, offsets []Offset) error {
	if len(offsets) == 0 {
		return nil
	}
	m := map[string]map[int32]kgo.EpochOffset{}
	meta := map[string]map[int32]string{}
	for _, o := range offsets {
		if m[o.Topic] == nil {
			m[o.Topic] = map[int32]kgo.EpochOffset{}
			meta[o.Topic] = map[int32]string{}
		}
		m[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
		meta[o.Topic][o.Partition] = o.Metadata
	}
	// The client's commit carries no metadata of its own: set each
	// partition's on the request just before it is sent.
	ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		// The request carries the member id it is sent under: a partition
		// assigned under another one is not ours to commit any more.
		if err := s.owners.check(req); err != nil {
			return err
		}
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				if md, ok := meta[t.Topic][t.Partitions[j].Partition]; ok && md != "" {
					t.Partitions[j].Metadata = &md
				}
			}
		}
		return nil
	})
	var cerr error
	s.cl.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
					cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	if cerr != nil {
		s.metrics.commitErrors.Inc()
		return fmt.Errorf("commit offsets: %w", cerr)
	}
	return nil
}

// Close leaves the group (running the final Revoked callback) and closes
// the client.
func (s *Source) Close() { s.cl.CloseAllowingRebalance() }

// Client is the underlying client, for producing to the same cluster.
func (s *Source) Client() *kgo.Client { return s.cl }

func count(p map[string][]int32) int {
	n := 0
	for _, ps := range p {
		n += len(ps)
	}
	return n
}

// readHook counts what the client reads from fetch responses, and raises
// the fetch sizes after each response that carried records.
type readHook struct{ s *Source }

func (h readHook) OnFetchBatchRead(m kgo.BrokerMetadata, topic string, partition int32, b kgo.FetchBatchMetrics) {
	h.s.decomp.batchRead(m.NodeID, topicPartition{topic, partition}, b)
	if b.NumRecords > 0 {
		h.s.flights.batch(m.NodeID, topicPartition{topic, partition})
	}
	h.s.metrics.read.Add(float64(b.NumRecords))
	h.s.metrics.readBytes.Add(float64(b.UncompressedBytes))
}

// OnBrokerWrite: a fetch request went out (resume.go).
func (h readHook) OnBrokerWrite(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		ps := &h.s.paused
		ps.mu.Lock()
		h.s.flights.written(m.NodeID, ps.lockedHas)
		ps.mu.Unlock()
	}
}

// rampMinRead: a fetch response this large carried records (an empty one
// is a few dozen bytes per partition).
const rampMinRead = 4 << 10

// OnBrokerE2E runs in the client's fetch goroutine once a response is
// read, before it is processed and long before the next fetch request is
// built, which carries the raised sizes.
func (h readHook) OnBrokerE2E(m kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == 1 { // Fetch
		h.s.flights.answered(m.NodeID)
		// The broker is answered again: what the client held of its
		// previous response was polled or dropped.
		h.s.decomp.responseRead(m.NodeID)
	}
	if key != 1 || e2e.Err() != nil || e2e.BytesRead < rampMinRead {
		return
	}
	s := h.s
	s.rampMu.Lock()
	defer s.rampMu.Unlock()
	if s.ramp == s.full {
		return
	}
	cl := s.client.Load()
	if cl == nil {
		return
	}
	s.ramp = [2]int32{int32(min(4*int64(s.ramp[0]), int64(s.full[0]))), int32(min(4*int64(s.ramp[1]), int64(s.full[1])))}
	cl.UpdateFetchMaxBytes(s.ramp[0], s.ramp[1])
}

type metrics struct {
	connErrors                                            *prometheus.CounterVec
	records, bytes, fetchErrors, rebalances, commitErrors prometheus.Counter
	lost                                                  prometheus.Counter
	skipped, refused                                      *prometheus.CounterVec
	read, readBytes, restarts                             prometheus.Counter
	assigned                                              prometheus.Gauge
	pollSeconds                                           prometheus.Histogram
}

func newMetrics(reg, commitReg prometheus.Registerer) *metrics {
	m := &metrics{
		records:     prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_records_total", Help: "Records fetched from Kafka."}),
		bytes:       prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_bytes_total", Help: "Key and value bytes fetched from Kafka."}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_fetch_errors_total", Help: "Errors returned by fetches."}),
		read: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_read_records_total",
			Help: "Records read from fetch responses, including those of a partition paused before they were polled (dropped, and read again after the resume)."}),
		readBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_read_bytes_total",
			Help: "Record batch bytes read from fetch responses, after decompression, including those read again after a pause."}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_fetch_restarts_total",
			Help: "Times the client's fetches were restarted so that a resumed partition whose broker holds a fetch over idle partitions (up to fetch_max_wait) is fetched at once."}),
		connErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_source_connection_errors_total",
			Help: "Failed connections and requests to a Kafka broker (dial, TLS handshake, SASL, broken connection), by broker.",
		}, []string{"broker"}),
		rebalances:   prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_rebalances_total", Help: "Partition assignments received from the consumer group."}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_checkpoint_commit_errors_total", Help: "Offset commits that failed."}),
		assigned:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_source_assigned_partitions", Help: "Partitions assigned to this member now."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "etl_source_partitions_lost_total",
			Help: "Partitions this member lost without handing them over (its session expired, or the group dropped it and it rejoined as a new member): nothing was committed for them."}),
		pollSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "etl_source_poll_duration_seconds", Help: "Time one poll waited for records.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.records, m.bytes, m.read, m.readBytes, m.restarts, m.fetchErrors, m.connErrors, m.rebalances, m.assigned, m.lost, m.pollSeconds)
		if commitReg == nil {
			commitReg = reg
		}
		commitReg.MustRegister(m.commitErrors)
	}
	return m
}
