package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/backpressure"
	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/gen"
)

// idleMemory counts the controller's releases while idle (releaseIdle);
// allocated is the heap's allocations the controller reads
// (heapAllocated).
type idleMemory struct {
	released, allocated atomic.Int64
}

// controllerUnder runs the controller of a pipeline with only a budget, in
// a synctest bubble, and counts its wakes.
func controllerUnder(t *testing.T, f func(t *testing.T, p *Pipeline, wakes *atomic.Int64, m *idleMemory)) {
	synctest.Test(t, func(t *testing.T) {
		b, err := backpressure.New(backpressure.Options{Bytes: 1000, HighRatio: 0.8, LowRatio: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		var wakes atomic.Int64
		var m idleMemory
		p := &Pipeline{
			budget:        b,
			releaseIdle:   func() { m.released.Add(1) },
			heapAllocated: func() uint64 { return uint64(m.allocated.Load()) },
		}
		p.hook = func(at hookPoint, _ *lane) {
			if at == hookControllerWoken {
				wakes.Add(1)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		stop := make(chan struct{})
		go func() {
			defer close(stop)
			p.controller(ctx)
		}()
		f(t, p, &wakes, &m)
		cancel()
		<-stop
	})
}

// TestControllerIdleWakesOncePerRelease: with nothing in flight the
// controller wakes once every releaseIdleAfter, not every controllerTick
// nor every second; with bytes in flight every controllerTick.
func TestControllerIdleWakesOncePerRelease(t *testing.T) {
	controllerUnder(t, func(t *testing.T, p *Pipeline, wakes *atomic.Int64, _ *idleMemory) {
		time.Sleep(3*releaseIdleAfter + time.Millisecond)
		synctest.Wait()
		// The first tick (controllerTick in) and one each releaseIdleAfter.
		if n := wakes.Load(); n < 3 || n > 4 {
			t.Fatalf("idle for %s: %d wakes, want 3 or 4", 3*releaseIdleAfter, n)
		}
		p.budget.Add(100)
		p.wakeController()
		synctest.Wait()
		n0 := wakes.Load()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := wakes.Load() - n0; n < 45 {
			t.Fatalf("busy for 1 s: %d wakes, want about %d", n, time.Second/controllerTick)
		}
	})
}

// TestControllerWokenByFetch: bytes handed over while the controller is
// idle wake it at once, not at the end of its idle period.
func TestControllerWokenByFetch(t *testing.T) {
	controllerUnder(t, func(t *testing.T, p *Pipeline, wakes *atomic.Int64, _ *idleMemory) {
		// The wakes fall at controllerTick plus multiples of
		// controllerIdleTick.
		time.Sleep(2*time.Second + 2*controllerTick)
		synctest.Wait()
		n0 := wakes.Load()
		time.Sleep(100 * time.Millisecond) // well inside the idle period
		synctest.Wait()
		if n := wakes.Load(); n != n0 {
			t.Fatalf("idle: woke %d times within 100 ms", n-n0)
		}
		p.budget.Add(100)
		p.wakeController()
		synctest.Wait()
		if n := wakes.Load(); n != n0+1 {
			t.Fatalf("bytes added: %d wakes, want 1 at once", n-n0)
		}
		// Nothing in flight again: back to the idle period after one more
		// short tick at most.
		p.budget.Release(100)
		time.Sleep(controllerTick)
		synctest.Wait()
		n1 := wakes.Load()
		time.Sleep(900 * time.Millisecond)
		synctest.Wait()
		if n := wakes.Load(); n != n1 {
			t.Fatalf("idle again: woke %d times within 900 ms", n-n1)
		}
	})
}

// TestControllerReleasesMemoryWhileIdle: the free chunks are dropped and
// releaseIdle runs once nothing has been in flight for releaseIdleAfter;
// while the idle period lasts, again every releaseIdleAfter in which the
// heap has allocated at least releaseIdleGarbage since the last release,
// and not in the others.
func TestControllerReleasesMemoryWhileIdle(t *testing.T) {
	controllerUnder(t, func(t *testing.T, p *Pipeline, _ *atomic.Int64, m *idleMemory) {
		c, err := chunk.New(&chunk.Schema{})
		if err != nil {
			t.Fatal(err)
		}
		p.chunks.put(c)
		// The drain allocated: the first release comes whatever the heap
		// did since.
		m.allocated.Store(100 << 20)
		time.Sleep(releaseIdleAfter - time.Second)
		synctest.Wait()
		if n := m.released.Load(); n != 0 {
			t.Fatalf("idle for less than releaseIdleAfter: released %d times", n)
		}
		if p.chunks.len() != 1 {
			t.Fatalf("idle for less than releaseIdleAfter: %d free chunks, want 1", p.chunks.len())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := m.released.Load(); n != 1 {
			t.Fatalf("idle for releaseIdleAfter: released %d times, want 1", n)
		}
		if p.chunks.len() != 0 {
			t.Fatalf("after releaseIdleAfter: %d free chunks, want none", p.chunks.len())
		}
		// Still idle, the heap allocating less than releaseIdleGarbage a
		// period: no release until the allocations since the last one add
		// up to releaseIdleGarbage.
		for i := range 3 {
			m.allocated.Add(releaseIdleGarbage / 4)
			time.Sleep(releaseIdleAfter)
			synctest.Wait()
			if n := m.released.Load(); n != 1 {
				t.Fatalf("idle period %d, %d KiB allocated since the release: released %d times, want 1",
					i+2, (i+1)*releaseIdleGarbage/4>>10, n)
			}
		}
		m.allocated.Add(releaseIdleGarbage / 4)
		time.Sleep(releaseIdleAfter)
		synctest.Wait()
		if n := m.released.Load(); n != 2 {
			t.Fatalf("releaseIdleGarbage allocated since the release: released %d times, want 2", n)
		}
		// The heap allocating more than releaseIdleGarbage a period: a
		// release each period.
		for i := range 3 {
			m.allocated.Add(2 * releaseIdleGarbage)
			time.Sleep(releaseIdleAfter)
			synctest.Wait()
			if n := m.released.Load(); n != int64(i+3) {
				t.Fatalf("busy idle heap, period %d: released %d times, want %d", i+1, n, i+3)
			}
		}
		// Bytes in flight end the idle period; the next one releases
		// again, whatever the heap allocated.
		p.budget.Add(100)
		p.wakeController()
		time.Sleep(5 * controllerTick)
		synctest.Wait()
		p.budget.Release(100)
		time.Sleep(releaseIdleAfter / 2)
		synctest.Wait()
		if n := m.released.Load(); n != 5 {
			t.Fatalf("half an idle period after work: released %d times, want 5", n)
		}
		time.Sleep(releaseIdleAfter)
		synctest.Wait()
		if n := m.released.Load(); n != 6 {
			t.Fatalf("second idle period: released %d times, want 6", n)
		}
	})
}

// TestRuntimeHeapAllocsGrows: the runtime's count of heap allocations,
// which the controller compares with releaseIdleGarbage, grows with what
// is allocated.
func TestRuntimeHeapAllocsGrows(t *testing.T) {
	a := runtimeHeapAllocs()
	for range 64 {
		sinkBytes = make([]byte, 64<<10)
	}
	if b := runtimeHeapAllocs(); b < a+(4<<20) {
		t.Fatalf("4 MiB allocated: the count moved from %d to %d", a, b)
	}
}

var sinkBytes []byte

// TestReleaseMemoryDropsEmptyRecordBuffers: releaseMemory lets go of the
// record buffer of a lane with no record and keeps a lane's records.
func TestReleaseMemoryDropsEmptyRecordBuffers(t *testing.T) {
	p, _ := newBarePipeline(t, &nopSource{}, 1024)
	empty := newLane(TopicPartition{Topic: "t", Partition: 0}, 1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
	full := newLane(TopicPartition{Topic: "t", Partition: 1}, 1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), &p.settle)
	p.lanes[empty.tp], p.lanes[full.tp] = empty, full
	empty.push([]*kgo.Record{{Offset: 0, Value: []byte("a")}})
	empty.advance(1, recordBytes(&kgo.Record{Offset: 0, Value: []byte("a")}))
	full.push([]*kgo.Record{{Offset: 0, Value: []byte("a")}, {Offset: 1, Value: []byte("b")}})
	if cap(empty.recs) == 0 {
		t.Fatal("the emptied lane has no buffer to drop")
	}
	p.releaseMemory()
	if empty.recs != nil {
		t.Fatalf("emptied lane: buffer of capacity %d kept", cap(empty.recs))
	}
	if recs, ok := full.pending(10); !ok || len(recs) != 2 {
		t.Fatalf("lane with records: %d pending (ok %v), want 2", len(recs), ok)
	}
}

// TestNewChunkTakesFullShape: a chunk made new for a lane holding a
// chunk's worth of undecoded records, once a full chunk of its schema has
// been sealed, comes with that chunk's capacity, so that filling it grows
// no buffer. Before any full chunk, for a lane with less to decode, and
// after the idle release, a new chunk has none.
func TestNewChunkTakesFullShape(t *testing.T) {
	p, dec := newBarePipeline(t, &nopSource{}, 2048)
	busy := &lane{recBytes: 2048}
	trickle := &lane{recBytes: 2047}
	fill := func(c *chunk.Chunk) {
		for i := uint64(0); c.Measure() < p.chunkTarget; i++ {
			n, err := dec.Decode(gen.Make(1, i).AppendJSON(nil), c)
			if err != nil {
				t.Fatal(err)
			}
			c.Rows += n
		}
	}
	capacity := func(c *chunk.Chunk) (n int) {
		for _, col := range c.Cols {
			if s, ok := col.(*chunk.Strings); ok {
				n += cap(s.Buf)
			}
		}
		return n
	}
	first, err := p.newChunk(dec.target, busy)
	if err != nil {
		t.Fatal(err)
	}
	if n := capacity(first); n != 0 {
		t.Fatalf("a new chunk before any was sealed has %d bytes of string capacity", n)
	}
	fill(first)
	p.seal(first)
	next, err := p.newChunk(dec.target, busy)
	if err != nil {
		t.Fatal(err)
	}
	if next == first {
		t.Fatal("the sealed chunk was handed out again")
	}
	want := 0
	for _, col := range first.Cols {
		if s, ok := col.(*chunk.Strings); ok {
			want += len(s.Buf)
		}
	}
	if got := capacity(next); got < want {
		t.Fatalf("a new chunk after a full one has %d bytes of string capacity, want at least the full one's %d", got, want)
	}
	if c, _ := p.newChunk(dec.target, trickle); capacity(c) != 0 {
		t.Fatalf("a new chunk for a lane with less than a chunk to decode has %d bytes of string capacity", capacity(c))
	}
	p.chunks.clear()
	if c, _ := p.newChunk(dec.target, busy); capacity(c) != 0 {
		t.Fatalf("a new chunk after the idle release has %d bytes of string capacity", capacity(c))
	}
	// An exactly-once block, however large, is no model.
	p.exactlyOnce = true
	block, _ := p.newChunk(dec.target, busy)
	for i := uint64(0); block.Measure() <= 2*p.chunkTarget; i++ {
		n, err := dec.Decode(gen.Make(1, i).AppendJSON(nil), block)
		if err != nil {
			t.Fatal(err)
		}
		block.Rows += n
	}
	p.seal(block)
	if c, _ := p.newChunk(dec.target, busy); capacity(c) != 0 {
		t.Fatalf("a new chunk after a block of %d bytes was sealed has %d bytes of string capacity", block.Size(), capacity(c))
	}
}
