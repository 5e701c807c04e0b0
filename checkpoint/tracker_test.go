package checkpoint

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestTrackerOutOfOrderAcks(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 0}
	e := tr.Assign(tp)
	tr.Start(tp, e, 100)
	tr.Ack(tp, e, 110, 120)
	tr.Ack(tp, e, 130, 140)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("pending with a gap at 100: %v", got)
	}
	if s, _ := tr.Status(tp); s.Ranges != 2 || s.Watermark != 100 {
		t.Fatalf("status = %+v", s)
	}
	tr.Ack(tp, e, 100, 110)
	got := tr.Pending(nil)
	if len(got) != 1 || got[0].Offset != 120 {
		t.Fatalf("pending = %v, want offset 120", got)
	}
	tr.Ack(tp, e, 120, 130)
	if got := tr.Pending(nil); got[0].Offset != 140 {
		t.Fatalf("pending = %v, want 140", got)
	}
	if s, _ := tr.Status(tp); s.Ranges != 0 {
		t.Fatalf("ranges left: %+v", s)
	}
}

func TestTrackerAcksBeforeStart(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 1}
	e := tr.Assign(tp)
	tr.Ack(tp, e, 5, 10)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("committable before start: %v", got)
	}
	tr.Start(tp, e, 5)
	if got := tr.Pending(nil); len(got) != 1 || got[0].Offset != 10 {
		t.Fatalf("pending = %v", got)
	}
}

func TestTrackerEpochs(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{"t", 2}
	e1 := tr.Assign(tp)
	tr.Start(tp, e1, 0)
	tr.Ack(tp, e1, 0, 10)
	e2 := tr.Assign(tp) // revoked and assigned again
	if e2 == e1 {
		t.Fatal("epoch not advanced")
	}
	if tr.Ack(tp, e1, 10, 20) {
		t.Fatal("stale ack taken")
	}
	tr.Start(tp, e2, 10)
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("stale ack moved watermark: %v", got)
	}
	tr.Ack(tp, e2, 10, 15)
	got := tr.Pending(nil)
	if len(got) != 1 || got[0].Offset != 15 || got[0].Epoch != e2 {
		t.Fatalf("pending = %v", got)
	}
	tr.Committed(Commit{TopicPartition: tp, Epoch: e1, Offset: 100})
	if s, _ := tr.Status(tp); s.Committed != 10 {
		t.Fatalf("stale commit recorded: %+v", s)
	}
	tr.Committed(got[0])
	if got := tr.Pending(nil); len(got) != 0 {
		t.Fatalf("pending after commit: %v", got)
	}
	tr.Remove(tp, e1) // stale: no effect
	if _, ok := tr.Status(tp); !ok {
		t.Fatal("removed by a stale epoch")
	}
	tr.Remove(tp, e2)
	if _, ok := tr.Status(tp); ok {
		t.Fatal("not removed")
	}
}

// TestTrackerRandom acknowledges a shuffled cover of [0, n) in random pieces,
// some of them overlapping, and checks the watermark against a bitmap.
func TestTrackerRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		n := int64(1 + r.IntN(500))
		var pieces [][2]int64
		for from := int64(0); from < n; {
			to := min(n, from+1+r.Int64N(20))
			pieces = append(pieces, [2]int64{from, to})
			if r.IntN(4) == 0 { // a duplicate ack overlapping the piece
				pieces = append(pieces, [2]int64{max(0, from-r.Int64N(5)), to})
			}
			from = to
		}
		r.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		tr := NewTracker()
		tp := TopicPartition{"t", 0}
		e := tr.Assign(tp)
		tr.Start(tp, e, 0)
		acked := make([]bool, n)
		for _, p := range pieces {
			tr.Ack(tp, e, p[0], p[1])
			for o := p[0]; o < p[1]; o++ {
				acked[o] = true
			}
			want := int64(0)
			for want < n && acked[want] {
				want++
			}
			s, _ := tr.Status(tp)
			if s.Watermark != want {
				t.Fatalf("round %d: watermark %d, want %d", round, s.Watermark, want)
			}
		}
		if s, _ := tr.Status(tp); s.Ranges != 0 || s.Watermark != n {
			t.Fatalf("round %d: end state %+v, want watermark %d", round, s, n)
		}
	}
}

// TestTrackerBlocks: registered blocks ride in the commit metadata until
// the watermark passes them; max_open_blocks bounds the blocks open at
// once, a block registered already always having room.
func TestTrackerBlocks(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 0}
	e := tr.Assign(tp)
	tr.Start(tp, e, 0)
	for _, b := range [][2]int64{{0, 10}, {10, 20}} {
		if !tr.BlockRoom(tp, e, b[0], b[1], 2) {
			t.Fatalf("no room for %v with %d blocks open", b, len(tr.Blocks(tp)))
		}
		if _, ok := tr.RegisterBlock(tp, e, b[0], b[1]); !ok {
			t.Fatalf("block %v refused", b)
		}
	}
	if tr.BlockRoom(tp, e, 20, 30, 2) || !tr.BlockRoom(tp, e, 10, 20, 2) || !tr.BlockRoom(tp, e, 20, 30, 0) {
		t.Fatal("room: want none for a third block under 2, some for a registered one and under no bound")
	}
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 0 || p[0].Metadata != "etl1:0-10,10-20" {
		t.Fatalf("pending = %v; want offset 0 naming both blocks", p)
	}
	tr.Ack(tp, e, 0, 10)
	p := tr.Pending(nil)
	if len(p) != 1 || p[0].Offset != 10 || p[0].Metadata != "etl1:10-20" {
		t.Fatalf("pending = %v; want offset 10 naming the second block", p)
	}
	tr.Committed(p[0])
	if !tr.BlockRoom(tp, e, 20, 30, 2) {
		t.Fatal("no room once the first block is durable")
	}
	tr.Ack(tp, e, 10, 20)
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 20 || p[0].Metadata != "etl1:" {
		t.Fatalf("pending = %v; want offset 20 with the blocks emptied", p)
	}
	if _, ok := tr.RegisterBlock(tp, e+1, 20, 30); ok {
		t.Fatal("a block registered under a stale epoch")
	}
}

// TestTrackerCommitHeldInsideBlock: a durable block with one record not
// acknowledged yet (a bad record whose dead-letter copy the broker has not
// taken) holds the commit at the block's start, not inside it: a new owner
// resuming inside would rebuild a block of fewer rows, which the table
// would take a second time.
func TestTrackerCommitHeldInsideBlock(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 0}
	e := tr.Assign(tp)
	tr.Start(tp, e, 0)
	tr.Ack(tp, e, 0, 10)
	c, ok := tr.RegisterBlock(tp, e, 10, 20)
	if !ok || c.Offset != 10 {
		t.Fatalf("registration = %v, %v; want offset 10", c, ok)
	}
	tr.Committed(c)
	// The block's rows are durable; offset 15, its bad record, is not.
	tr.Ack(tp, e, 10, 15)
	tr.Ack(tp, e, 16, 20)
	if p := tr.Pending(nil); len(p) != 0 {
		t.Fatalf("pending = %v; want nothing: the commit stays at the block's start 10", p)
	}
	if c, _ := tr.RegisterBlock(tp, e, 20, 30); c.Offset != 10 || c.Metadata != "etl1:10-20,20-30" {
		t.Fatalf("the next registration commits %d %q; want 10 naming both blocks", c.Offset, c.Metadata)
	}
	tr.Ack(tp, e, 15, 16)
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 20 || p[0].Metadata != "etl1:20-30" {
		t.Fatalf("pending = %v; want offset 20 naming the second block", p)
	}
}

// TestBlocksCodec: the metadata format read by a new owner and by etl
// offsets.
func TestBlocksCodec(t *testing.T) {
	for _, c := range []struct {
		blocks [][2]int64
		meta   string
	}{{nil, "etl1:"}, {[][2]int64{{5, 9}}, "etl1:5-9"}, {[][2]int64{{0, 1}, {1, 300}}, "etl1:0-1,1-300"}} {
		if got := EncodeBlocks(c.blocks); got != c.meta {
			t.Errorf("EncodeBlocks(%v) = %q, want %q", c.blocks, got, c.meta)
		}
		if got, err := DecodeBlocks(c.meta); err != nil || len(got) != len(c.blocks) {
			t.Errorf("DecodeBlocks(%q) = %v, %v; want %v", c.meta, got, err, c.blocks)
		}
	}
	for _, meta := range []string{"", "other", "etl2:1-2"} {
		if got, err := DecodeBlocks(meta); got != nil || err != nil {
			t.Errorf("DecodeBlocks(%q) = %v, %v; want no block", meta, got, err)
		}
	}
	if _, err := DecodeBlocks("etl1:9-5"); err == nil || !strings.Contains(err.Error(), `bad block "9-5"`) {
		t.Errorf("DecodeBlocks of an empty range: %v", err)
	}
}

// TestTrackerResume: a partition resumed outside its committed offset
// commits the resume point at the next commit, even with no record and
// when it lies below the committed offset (a truncated log); the first
// record raises the watermark past offsets that hold none; a Resume once
// started changes nothing.
func TestTrackerResume(t *testing.T) {
	tr := NewTracker()
	tp := TopicPartition{Topic: "t", Partition: 0}
	e := tr.Assign(tp)
	tr.Resume(tp, e, 1000) // the log end, below the committed 5000
	pending := tr.Pending(nil)
	if len(pending) != 1 || pending[0].Offset != 1000 {
		t.Fatalf("pending %+v, want the resume point 1000", pending)
	}
	tr.Committed(pending[0])
	if p := tr.Pending(nil); len(p) != 0 {
		t.Fatalf("pending %+v after the commit, want none", p)
	}
	// The first record is at 1003: 1000-1002 hold none.
	tr.Start(tp, e, 1003)
	tr.Ack(tp, e, 1003, 1010)
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 1010 {
		t.Fatalf("pending %+v, want 1010", p)
	}
	tr.Resume(tp, e, 0)
	if p := tr.Pending(nil); len(p) != 1 || p[0].Offset != 1010 {
		t.Fatalf("pending %+v after a late Resume, want 1010 still", p)
	}

	// Without a Resume, nothing is pending until the watermark moves.
	tp1 := TopicPartition{Topic: "t", Partition: 1}
	e1 := tr.Assign(tp1)
	tr.Start(tp1, e1, 500)
	for _, c := range tr.Pending(nil) {
		if c.TopicPartition == tp1 {
			t.Fatalf("pending %+v for a partition that did not move", c)
		}
	}
}
