package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// zombieHandler models the pipeline for TestZombieRejoin: it remembers,
// per partition and per assignment, a durable watermark it commits on
// revoke (as the pipeline commits its tracker's watermark), and which
// offsets it was handed.
type zombieHandler struct {
	name string
	src  *Source

	mu sync.Mutex
	// durable is the offset committed on revoke (-1: nothing), per
	// partition of the current assignment.
	durable map[int32]int64
	// seen is every offset handed over since the mark, per partition.
	seen    map[int32][]int64
	marked  bool
	pauseAt int64 // pause a partition once an offset at or above it was handed over (0: never)
	events  []string
	commits []string // commit errors on revoke
	// ticking: the durable watermarks are committed every 50 ms too, as
	// the pipeline's commit loop does.
	ticking bool
	// rounds counts the rounds of tick done: a commit a round started
	// has returned once the next round is counted.
	rounds atomic.Int64
}

// tick commits the durable watermarks while ticking, every 50 ms until
// ctx ends.
func (h *zombieHandler) tick(ctx context.Context) {
	every := time.NewTicker(50 * time.Millisecond)
	defer every.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-every.C:
		}
		h.mu.Lock()
		var offs []Offset
		if h.ticking {
			for part, d := range h.durable {
				if d >= 0 {
					offs = append(offs, Offset{Topic: "z", Partition: part, Offset: d})
				}
			}
		}
		h.mu.Unlock()
		if len(offs) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = h.src.Commit(cctx, offs)
			cancel()
		}
		h.rounds.Add(1)
	}
}

func newZombieHandler(name string) *zombieHandler {
	return &zombieHandler{name: name, durable: map[int32]int64{}, seen: map[int32][]int64{}}
}

func (h *zombieHandler) Assigned(_ context.Context, p Partitions) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, part := range p["z"] {
		h.durable[part] = -1
	}
	h.events = append(h.events, fmt.Sprintf("assigned %v", p["z"]))
	h.pauseAt = 0
	var owned []int32
	for part := range h.durable {
		owned = append(owned, part)
	}
	h.src.Resume(Partitions{"z": owned})
}

func (h *zombieHandler) Revoked(ctx context.Context, p Partitions) {
	h.mu.Lock()
	var offs []Offset
	for _, part := range p["z"] {
		if d := h.durable[part]; d >= 0 {
			offs = append(offs, Offset{Topic: "z", Partition: part, Offset: d})
		}
		delete(h.durable, part)
	}
	h.events = append(h.events, fmt.Sprintf("revoked %v", p["z"]))
	h.mu.Unlock()
	if err := h.src.Commit(ctx, offs); err != nil {
		h.mu.Lock()
		h.commits = append(h.commits, err.Error())
		h.mu.Unlock()
	}
}

func (h *zombieHandler) Lost(_ context.Context, p Partitions) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, part := range p["z"] {
		delete(h.durable, part)
	}
	h.events = append(h.events, fmt.Sprintf("lost %v", p["z"]))
}

func (h *zombieHandler) Fetched(p *kgo.FetchTopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.durable[p.Partition]; ok && len(p.Records) > 0 {
		// Everything handed over counts as durable at once.
		h.durable[p.Partition] = p.Records[len(p.Records)-1].Offset + 1
	}
	for _, r := range p.Records {
		if h.marked {
			h.seen[p.Partition] = append(h.seen[p.Partition], r.Offset)
		}
		if h.pauseAt > 0 && r.Offset >= h.pauseAt {
			h.src.Pause(Partitions{"z": {p.Partition}})
		}
	}
}

func (h *zombieHandler) setDurable(part int32, off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.durable[part]; ok {
		h.durable[part] = off
	}
}

func (h *zombieHandler) owned() []int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int32
	for p := range h.durable {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (h *zombieHandler) mark() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.marked = true
	h.seen = map[int32][]int64{}
}

func (h *zombieHandler) seenOf(part int32) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.seen[part]...)
}

func (h *zombieHandler) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.name + ": " + strings.Join(h.events, "; ")
}

// TestZombieRejoin: member A stops reaching the group (its heartbeats are
// answered without the coordinator seeing them, as for a member frozen
// past its session), the group drops it and member B takes its
// partitions, reads them to the end and commits. When A's next commit is
// refused, franz-go rejoins the group as a new member without reporting
// A's partitions lost, and keeps claiming them. Whatever the group then
// gives A, nothing A held under its old membership may be committed (its
// durable watermark is B's past), and a partition A consumes again must
// restart from the committed offset, not from A's old fetch position.
// With B still in the group, franz-go revokes A's old partitions (and the
// group may give one back); with B gone, A keeps them.
func TestZombieRejoin(t *testing.T) {
	t.Run("revoked", func(t *testing.T) { testZombieRejoin(t, false) })
	t.Run("kept", func(t *testing.T) { testZombieRejoin(t, true) })
}

func testZombieRejoin(t *testing.T, bLeaves bool) {
	const perPartition = 1000
	kb := testenv.Kafka(t, kfake.GroupMinSessionTimeout(500*time.Millisecond))
	kb.CreateTopic(t, "z", 2)
	produce := func(n int) {
		recs := make([]*kgo.Record, 2*n)
		for i := range recs {
			// 1 KiB values: A's first fetches (64 KiB a partition) stop
			// well before the end, so its fetch position lags.
			recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%01024d", i))}
		}
		kb.Produce(t, "z", recs)
	}
	produce(perPartition)

	cfg := &config.Kafka{Brokers: kb.Addrs(), Topics: []string{"z"}, GroupID: "zg", StartOffset: "earliest",
		SessionTimeout: config.Duration(1500 * time.Millisecond), RebalanceTimeout: config.Duration(3 * time.Second)}
	logger := slog.New(slog.NewTextHandler(testenv.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := func(h *zombieHandler) (*Source, func()) {
		s, err := New(Options{Config: cfg, Handler: h, Log: logger.With("member", h.name), HeartbeatInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		h.src = s
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(ctx) }()
		go h.tick(ctx)
		var once sync.Once
		stop := func() { once.Do(func() { s.Close(); cancel(); <-done }) }
		t.Cleanup(stop)
		return s, stop
	}
	waitFor := func(what string, d time.Duration, ok func() bool, logs ...*zombieHandler) {
		t.Helper()
		testenv.Eventually(t, what, d, func() error {
			if ok() {
				return nil
			}
			var l []string
			for _, h := range logs {
				l = append(l, h.log())
			}
			return errors.New("\n" + strings.Join(l, "\n"))
		})
	}
	committed := func() map[int32]int64 {
		o, err := kb.CommittedOffsetsErr("zg", "z")
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	// A reads both partitions up to about a third (its durable watermark
	// is what it has read) and stops.
	a := newZombieHandler("A")
	a.pauseAt = 300
	sa, _ := start(a)
	waitFor("A owns both partitions", 10*time.Second, func() bool { return len(a.owned()) == 2 }, a)
	aMember, _ := sa.cl.GroupMetadata()

	// From now on A's heartbeats are answered without reaching the group.
	c := kb.Cluster()
	c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		hb := req.(*kmsg.HeartbeatRequest)
		if hb.MemberID != aMember {
			return nil, nil, false
		}
		resp := hb.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.Version = hb.Version
		return resp, nil, true
	})

	// B joins; the group drops A when its session expires and B gets both
	// partitions, reads them to the end and commits.
	b := newZombieHandler("B")
	b.marked = true
	b.ticking = true
	sb, stopB := start(b)
	waitFor("B owns both partitions", 20*time.Second, func() bool { return len(b.owned()) == 2 }, a, b)
	waitFor("B read both partitions", 20*time.Second, func() bool {
		return len(b.seenOf(0)) > 0 && len(b.seenOf(1)) > 0 &&
			b.seenOf(0)[len(b.seenOf(0))-1] == perPartition-1 && b.seenOf(1)[len(b.seenOf(1))-1] == perPartition-1
	}, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sb.Commit(ctx, []Offset{{Topic: "z", Partition: 0, Offset: perPartition}, {Topic: "z", Partition: 1, Offset: perPartition}}); err != nil {
		t.Fatalf("B's commit: %v", err)
	}
	b.setDurable(0, perPartition)
	b.setDurable(1, perPartition)
	if bLeaves {
		stopB()
	}

	// What A is handed from here on must come from the committed offsets.
	a.mark()
	// A, still holding its partitions, commits: the group refuses (A is
	// no member) and franz-go rejoins as a new member.
	if err := sa.Commit(ctx, []Offset{{Topic: "z", Partition: 0, Offset: 100}, {Topic: "z", Partition: 1, Offset: 100}}); err == nil {
		t.Fatalf("A's commit as a dropped member succeeded")
	}
	// And goes on committing what it holds, as the pipeline's commit loop
	// does.
	a.mu.Lock()
	a.ticking = true
	a.mu.Unlock()
	waitFor("A rejoined under a new member id", 20*time.Second, func() bool {
		m, _ := sa.cl.GroupMetadata()
		return m != "" && m != aMember
	}, a, b)
	// The group settles: every partition owned by exactly one member.
	waitFor("the group settles", 30*time.Second, func() bool {
		oa, ob := a.owned(), b.owned()
		if bLeaves {
			ob = nil
		}
		if len(oa)+len(ob) != 2 {
			return false
		}
		for _, p := range oa {
			for _, q := range ob {
				if p == q {
					return false
				}
			}
		}
		return true
	}, a, b)
	// A late commit of A's old watermark would come from a round of its
	// commit loop under way now: two more rounds done, it has returned.
	roundsA := a.rounds.Load()
	waitFor("two more rounds of A's commit loop", 20*time.Second, func() bool { return a.rounds.Load() >= roundsA+2 }, a, b)
	for p, off := range committed() {
		if off < perPartition {
			t.Errorf("partition %d: committed offset %d after the zombie's rejoin, want %d (B's): the zombie committed its old watermark\n%s\n%s",
				p, off, perPartition, a.log(), b.log())
		}
	}

	// New records reach whoever owns each partition, from the committed
	// offset on: not from A's old fetch position.
	b.mark()
	produce(200)
	for p := int32(0); p < 2; p++ {
		waitFor(fmt.Sprintf("partition %d read to its new end", p), 20*time.Second, func() bool {
			for _, h := range []*zombieHandler{a, b} {
				if s := h.seenOf(p); len(s) > 0 && s[len(s)-1] == perPartition+199 {
					return true
				}
			}
			return false
		}, a, b)
		for _, h := range []*zombieHandler{a, b} {
			s := h.seenOf(p)
			if len(s) == 0 {
				continue
			}
			t.Logf("partition %d: %s was handed %d offsets from %d to %d", p, h.name, len(s), s[0], s[len(s)-1])
			if s[0] != perPartition {
				t.Errorf("partition %d: %s was handed offsets from %d, want from %d (the committed offset)\n%s\n%s",
					p, h.name, s[0], perPartition, a.log(), b.log())
			}
		}
	}
	// And the owners commit them.
	waitFor("the new records committed", 20*time.Second, func() bool {
		c := committed()
		return c[0] == perPartition+200 && c[1] == perPartition+200
	}, a, b)
	// The source never has a handler commit, on a revoke, what it may
	// not commit.
	for _, h := range []*zombieHandler{a, b} {
		h.mu.Lock()
		if len(h.commits) > 0 {
			t.Errorf("%s: commits on revoke failed: %v", h.name, h.commits)
		}
		h.mu.Unlock()
	}
	t.Logf("%s\n%s", a.log(), b.log())
}
