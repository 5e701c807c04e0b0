package pipeline

import (
	"sync"

	"github.com/etl-project/etl/chunk"
)

// runQueue holds the lanes waiting for a worker. Its length is bounded by
// the number of assigned partitions, since a lane is queued at most once.
type runQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	q      []*lane
	closed bool
}

func newRunQueue() *runQueue {
	r := &runQueue{}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *runQueue) push(l *lane) {
	r.mu.Lock()
	r.q = append(r.q, l)
	r.mu.Unlock()
	r.cond.Signal()
}

// pop waits for a lane; it returns nil once the queue is closed.
func (r *runQueue) pop() *lane {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.q) == 0 && !r.closed {
		r.cond.Wait()
	}
	if r.closed {
		return nil
	}
	l := r.q[0]
	r.q[0] = nil
	r.q = r.q[1:]
	return l
}

func (r *runQueue) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cond.Broadcast()
}

// ackQueue carries acknowledged chunks from the sink to the committer. It
// is unbounded so that a full data path can never block an acknowledgement;
// its length is bounded by the chunks in flight, which the byte budget
// bounds.
type ackQueue struct {
	mu     sync.Mutex
	items  []*chunk.Chunk
	notify chan struct{}
}

func newAckQueue() *ackQueue { return &ackQueue{notify: make(chan struct{}, 1)} }

func (a *ackQueue) push(cs []*chunk.Chunk) {
	a.mu.Lock()
	a.items = append(a.items, cs...)
	a.mu.Unlock()
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

func (a *ackQueue) take() []*chunk.Chunk {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.items
	a.items = nil
	return out
}

// chunkPool is a bounded free list of emptied chunks. Unlike a
// sync.Pool, it survives garbage collections, so steady-state chunks never
// regrow their columns. It holds at most max chunks: New sets it so that
// the chunks of a busy shard (a batch being built and the batches being
// inserted, about chunk.target_bytes each) come back to it (freeChunks).
// A new chunk is made only when the list has none of its schema, so the
// list never holds more chunks than were in flight at once, when the byte
// budget counted them.
type chunkPool struct {
	mu   sync.Mutex
	max  int
	free []*chunk.Chunk
	// shapes holds, per schema, the shape of the last full chunk sealed
	// (chunk.Shape): a chunk made new is given its capacity at once
	// (chunk.Reserve) rather than growing every column by doubling.
	shapes map[*chunk.Schema][]int
}

// noteFull records the shape of c, a chunk sealed at least half full (not
// an exactly-once block), for the new chunks of its schema.
func (p *chunkPool) noteFull(c *chunk.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shapes == nil {
		p.shapes = make(map[*chunk.Schema][]int)
	}
	p.shapes[c.Schema] = c.Shape(p.shapes[c.Schema][:0])
}

// reserve gives c, a new chunk, the capacity of the last full chunk of
// its schema, if one was sealed.
func (p *chunkPool) reserve(c *chunk.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.shapes[c.Schema]; ok {
		c.Reserve(s)
	}
}

// freeChunks is the size of the free list for a byte budget and a chunk
// target: a quarter of the budget in chunks, at least 64, at most 4096.
func freeChunks(budget, target int64) int {
	if target <= 0 {
		return 64
	}
	return int(min(max(budget/4/target, 64), 4096))
}

// get returns a free chunk built for schema, or nil.
func (p *chunkPool) get(schema *chunk.Schema) *chunk.Chunk {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		c := p.free[i]
		if c.Schema != schema {
			continue
		}
		last := len(p.free) - 1
		p.free[i] = p.free[last]
		p.free[last] = nil
		p.free = p.free[:last]
		return c
	}
	return nil
}

// clear drops every free chunk: an idle member holds no column capacity
// for a load that has gone (the chunks of a drain over many partitions
// add up to tens of megabytes).
func (p *chunkPool) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.free = p.free[:0:0]
	clear(p.shapes)
}

// len is the number of free chunks.
func (p *chunkPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

func (p *chunkPool) put(c *chunk.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := p.max
	if limit <= 0 {
		limit = 64
	}
	if len(p.free) >= limit {
		// Make room: the oldest chunk may be of a schema no longer used.
		copy(p.free, p.free[1:])
		p.free = p.free[:len(p.free)-1]
	}
	p.free = append(p.free, c)
}
