// Package checkpoint decides what a consumer group commits: the
// acknowledgement tracker (which offsets are durable, per partition and
// assignment), the exactly-once block metadata that goes with a commit,
// and the committer that commits what the tracker has pending.
package checkpoint

import (
	"sort"
	"sync"
	"time"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// offsetRange is a half-open range [from, to) of offsets.
type offsetRange struct{ from, to int64 }

// partitionState is the acknowledgement state of one assigned partition.
type partitionState struct {
	epoch     uint64
	started   bool
	watermark int64         // every offset below it is durable (or skipped)
	committed int64         // the last offset committed, -1 when none
	ranges    []offsetRange // acknowledged ranges above the watermark, sorted, disjoint, non-adjacent
	moved     time.Time     // when the watermark last moved (or the assignment started)

	// Exactly-once: the insert blocks registered (and so maybe inserted)
	// that end above the watermark, and the metadata last committed.
	blocks        []offsetRange
	committedMeta string

	// resumed: consumption resumed at the watermark, not at the group's
	// committed offset, which lay outside the log (Resume): the watermark
	// must be committed even though it did not move. firstPending: no
	// record came since, and the first one's offset (Start) may raise it.
	resumed, firstPending bool
}

// Tracker keeps, per assigned partition, the acknowledged offsets as merged
// ranges and the committable watermark: the end of the contiguous prefix of
// acknowledged offsets. Each assignment of a partition has an epoch;
// acknowledgements that carry another epoch are ignored, so work finished for
// a revoked assignment can never move a later assignment's watermark.
//
// Tracker is safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	parts map[TopicPartition]*partitionState
	epoch uint64
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{parts: map[TopicPartition]*partitionState{}}
}

// Assign starts a new assignment of tp and returns its epoch. Any previous
// state of tp is discarded.
func (t *Tracker) Assign(tp TopicPartition) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epoch++
	t.parts[tp] = &partitionState{epoch: t.epoch, committed: -1, moved: time.Now()}
	return t.epoch
}

// Remove forgets tp if its current epoch is epoch.
func (t *Tracker) Remove(tp TopicPartition, epoch uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.parts[tp]; p != nil && p.epoch == epoch {
		delete(t.parts, tp)
	}
}

// Start sets the watermark of an assignment to the offset of its first
// record, the offset the consumer group resumed from. Later calls are no-ops.
func (t *Tracker) Start(tp TopicPartition, epoch uint64, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil || p.epoch != epoch {
		return
	}
	switch {
	case !p.started:
		// The group already resumed from offset: nothing to commit until
		// the watermark moves past it.
		p.started, p.watermark, p.committed = true, offset, offset
		p.advance()
	case p.firstPending:
		// The first record after a Resume: the offsets before it hold
		// none (compaction, transaction markers).
		p.firstPending = false
		if offset > p.watermark {
			p.watermark = offset
			p.advance()
		}
	}
}

// Resume starts an assignment whose consumption resumes at offset rather
// than at the group's committed offset, which lay outside the log (below
// its start: retention; above its end: a truncated log). The watermark is
// offset and is committed at the next commit even if no record comes, so
// that a restart finds the committed offset inside the log, and the skip
// is reported once, not at every start. A later Start may raise the
// watermark to the first record's offset. A no-op once started.
func (t *Tracker) Resume(tp TopicPartition, epoch uint64, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.parts[tp]; p != nil && p.epoch == epoch && !p.started {
		p.started, p.watermark, p.committed, p.resumed, p.firstPending = true, offset, offset, true, true
		p.advance()
	}
}

// Ack records that offsets [from, to) of tp under epoch are durable. It
// reports whether the acknowledgement was taken (false for a stale epoch or
// an unknown partition).
func (t *Tracker) Ack(tp TopicPartition, epoch uint64, from, to int64) bool {
	if to <= from {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil || p.epoch != epoch {
		return false
	}
	p.insert(from, to)
	if p.started {
		p.advance()
	}
	return true
}

func (p *partitionState) insert(from, to int64) {
	if p.started && to <= p.watermark {
		return
	}
	rs := p.ranges
	// First range whose end reaches from (touching counts as overlap).
	i := sort.Search(len(rs), func(i int) bool { return rs[i].to >= from })
	j := i
	for j < len(rs) && rs[j].from <= to {
		from = min(from, rs[j].from)
		to = max(to, rs[j].to)
		j++
	}
	if i == j {
		rs = append(rs, offsetRange{})
		copy(rs[i+1:], rs[i:])
		rs[i] = offsetRange{from, to}
	} else {
		rs[i] = offsetRange{from, to}
		rs = append(rs[:i+1], rs[j:]...)
	}
	p.ranges = rs
}

func (p *partitionState) advance() {
	n := 0
	for n < len(p.ranges) && p.ranges[n].from <= p.watermark {
		p.watermark = max(p.watermark, p.ranges[n].to)
		n++
	}
	if n > 0 {
		p.ranges = append(p.ranges[:0], p.ranges[n:]...)
		p.moved = time.Now()
	}
}

// Commit is an offset to commit for one partition, with the commit's
// metadata (exactly-once: the blocks that may be in ClickHouse above it).
type Commit struct {
	TopicPartition
	Epoch    uint64
	Offset   int64
	Metadata string
}

// Pending returns, for every partition whose watermark moved past its last
// committed offset, the offset to commit. If only is non-nil, just those
// partitions are considered.
func (t *Tracker) Pending(only map[TopicPartition]bool) []Commit {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Commit
	for tp, p := range t.parts {
		if only != nil && !only[tp] {
			continue
		}
		if !p.started {
			continue
		}
		meta := p.metadata()
		if off := p.commitOffset(); off > p.committed || meta != p.committedMeta || p.resumed {
			out = append(out, Commit{TopicPartition: tp, Epoch: p.epoch, Offset: off, Metadata: meta})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Committed records that c was committed. A commit of an older epoch is
// ignored.
func (t *Tracker) Committed(c Commit) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.parts[c.TopicPartition]; p != nil && p.epoch == c.Epoch && (c.Offset >= p.committed || p.resumed) {
		p.committed = c.Offset
		p.committedMeta = c.Metadata
		p.resumed = false
	}
}

// RegisterBlock records that the insert block [first, next) of tp may go
// to ClickHouse from now on, and returns the commit that makes that
// durable: the current watermark with every registered block above it in
// the metadata. ok is false when tp is not assigned under epoch.
func (t *Tracker) RegisterBlock(tp TopicPartition, epoch uint64, first, next int64) (c Commit, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil || p.epoch != epoch {
		return Commit{}, false
	}
	found := false
	for _, b := range p.blocks {
		found = found || (b.from == first && b.to == next)
	}
	if !found {
		p.blocks = append(p.blocks, offsetRange{first, next})
		sort.Slice(p.blocks, func(i, j int) bool { return p.blocks[i].from < p.blocks[j].from })
	}
	wm := p.commitOffset()
	if !p.started {
		wm = first
	}
	return Commit{TopicPartition: tp, Epoch: p.epoch, Offset: wm, Metadata: p.metadata()}, true
}

// commitOffset is the offset to commit: the watermark, or, when the
// watermark lies inside a registered block (exactly-once: the block is
// durable but a record of it is not acknowledged yet, such as a bad
// record whose dead-letter copy the broker has not taken), that block's
// first offset. A new owner then resumes at the block's start and rebuilds
// it whole, as it was inserted, so the table drops it; resumed inside it,
// it would rebuild a block of fewer rows, which the table would take a
// second time. Never below the offset committed already (a block
// registered again by a new owner may start below it).
func (p *partitionState) commitOffset() int64 {
	off := p.watermark
	for _, b := range p.blocks {
		if b.from < off && off < b.to {
			off = b.from
			break // sorted by first offset
		}
	}
	return max(off, p.committed)
}

// BlockRoom reports whether the block [first, next) of tp may be
// registered under a bound of max open blocks: it is registered already,
// or fewer than max blocks end above the watermark (max 0: no bound). A partition not
// assigned under epoch has room (registering it fails on its own).
func (t *Tracker) BlockRoom(tp TopicPartition, epoch uint64, first, next int64, max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil || p.epoch != epoch {
		return true
	}
	p.pruneBlocks()
	for _, b := range p.blocks {
		if b.from == first && b.to == next {
			return true
		}
	}
	return max <= 0 || len(p.blocks) < max
}

// Blocks returns the registered blocks of tp that end above its watermark.
func (t *Tracker) Blocks(tp TopicPartition) [][2]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil {
		return nil
	}
	p.pruneBlocks()
	out := make([][2]int64, len(p.blocks))
	for i, b := range p.blocks {
		out[i] = [2]int64{b.from, b.to}
	}
	return out
}

// pruneBlocks forgets the blocks wholly below the watermark: their rows
// are durable and their offsets committable.
func (p *partitionState) pruneBlocks() {
	k := 0
	for _, b := range p.blocks {
		if b.to > p.watermark {
			p.blocks[k] = b
			k++
		}
	}
	p.blocks = p.blocks[:k]
}

// metadata encodes the blocks above the watermark (see EncodeBlocks).
func (p *partitionState) metadata() string {
	if len(p.blocks) == 0 && p.committedMeta == "" {
		return ""
	}
	p.pruneBlocks()
	b := []byte(blocksPrefix)
	for i, r := range p.blocks {
		b = appendBlock(b, i, r.from, r.to)
	}
	return string(b)
}

// PartitionStatus is a snapshot of one partition's acknowledgement state.
type PartitionStatus struct {
	Epoch     uint64
	Started   bool
	Watermark int64
	Committed int64
	Ranges    int
	Moved     time.Time // when the watermark last moved
}

// Status returns the state of tp, and false when tp is not assigned.
func (t *Tracker) Status(tp TopicPartition) (PartitionStatus, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[tp]
	if p == nil {
		return PartitionStatus{}, false
	}
	return PartitionStatus{Epoch: p.epoch, Started: p.started, Watermark: p.watermark, Committed: p.committed,
		Ranges: len(p.ranges), Moved: p.moved}, true
}

// PendingRanges is the total number of acknowledged ranges held above the
// watermarks: the gaps a slow or failed batch leaves behind.
func (t *Tracker) PendingRanges() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.parts {
		n += len(p.ranges)
	}
	return n
}
