package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/internal/clock"
)

// The dead-letter topic under the simulation (decode.on_error: dlq, a
// third of the seeds that do not stop on a bad record): a fake producer
// whose writes wait for the simulation's answer, which fails some of them
// and all of them while the topic is "down". The simulation counts, from
// what it sees, the bytes of the source records the producer holds (a
// bad record's copy holds its bytes in the budget from its first write to
// its acknowledgement), and checks that no commit passes a bad record
// whose copy the broker did not acknowledge, and that every refused row's
// copy names rows the table refuses.

// simDLQ is the fake dead-letter producer.
type simDLQ struct {
	w         *simWorld
	mu        sync.Mutex // Write runs on the shards' goroutines too
	pending   []*simDLQWrite
	retrying  map[*kgo.Record]int  // source records whose write failed: written again after a backoff
	acked     map[*kgo.Record]int  // source records whose copy the broker acknowledged
	copied    map[uint64]bool      // ids of refused rows whose copy was acknowledged
	sources   map[*kgo.Record]bool // the log's records
	downUntil time.Time
	writes    int
	dead      bool // the process crashed: its writes go nowhere
}

// simDLQWrite is one write waiting for the simulation's answer.
type simDLQWrite struct {
	r      *kgo.Record
	source bool // r is a record of the log (a bad record), not a copy of refused rows
	done   func(error)
}

var errSimDLQ = errors.New("sim: dead-letter produce failed")

// newSimDLQ is the producer of a new process: what the topic holds (old's
// acknowledged copies) stays.
func newSimDLQ(w *simWorld, old *simDLQ) *simDLQ {
	q := &simDLQ{w: w, retrying: map[*kgo.Record]int{}, acked: map[*kgo.Record]int{}, copied: map[uint64]bool{}, sources: map[*kgo.Record]bool{}}
	if old != nil {
		old.mu.Lock()
		defer old.mu.Unlock()
		old.dead = true
		q.acked, q.copied, q.sources, q.downUntil = old.acked, old.copied, old.sources, old.downUntil
	}
	return q
}

// produced notes a record of the log.
func (q *simDLQ) produced(r *kgo.Record) {
	q.mu.Lock()
	q.sources[r] = true
	q.mu.Unlock()
}

func (q *simDLQ) Write(r *kgo.Record, _ string, _ error, done func(error)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return // never answered: the process that wrote it is gone
	}
	source := q.sources[r]
	if source && q.w.clock.afterFunc && q.retrying[r] > 0 {
		q.retrying[r]-- // written again: a retry's timer fired
	}
	q.pending = append(q.pending, &simDLQWrite{r: r, source: source, done: done})
}

func (q *simDLQ) Flush(ctx context.Context) error { return nil }
func (q *simDLQ) Close()                          {}
func (q *simDLQ) MaxMessageBytes() (int32, string) {
	return 1 << 20, "sim"
}

// held is the bytes of the source records the producer holds: written and
// not answered, or failed and not written again yet. A record failed while
// the pipeline stops is given up instead (exact is false then: the count
// is an upper bound).
func (q *simDLQ) held() (n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for r, k := range q.retrying {
		n += int64(k) * recordBytes(r)
	}
	return n + q.writingLocked()
}

// writing is the bytes of the source records written and not answered.
func (q *simDLQ) writing() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.writingLocked()
}

func (q *simDLQ) writingLocked() (n int64) {
	for _, wr := range q.pending {
		if wr.source {
			n += recordBytes(wr.r)
		}
	}
	return n
}

// holds reports whether the producer holds a source record of tps:
// written and not answered, or failed and not written again.
func (q *simDLQ) holds(tps []TopicPartition) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	of := func(r *kgo.Record) bool {
		return slices.Contains(tps, TopicPartition{Topic: r.Topic, Partition: r.Partition})
	}
	for _, wr := range q.pending {
		if wr.source && of(wr.r) {
			return true
		}
	}
	for r, k := range q.retrying {
		if k > 0 && of(r) {
			return true
		}
	}
	return false
}

// givenUpAt reports whether tp's committed offset stops at a bad record
// whose write failed and was not written again (the stop gives such
// records up).
func (q *simDLQ) givenUpAt(w *simWorld, tp TopicPartition) bool {
	i := w.indexOf(tp, w.src.committed[tp].Offset)
	if i >= int64(len(w.log[tp])) {
		return false
	}
	r := w.log[tp][i].rec
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.retrying[r] > 0
}

// has reports whether sr's copy was acknowledged.
func (q *simDLQ) has(sr simRec) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.acked[sr.rec] > 0
}

// simDLQKey orders the writes waiting for an answer. Writes made on the
// shards' goroutines arrive in no fixed order: the simulation answers
// every write of the same key at once, with the same answer.
func simDLQKey(a, b *simDLQWrite) int {
	return cmp.Or(cmp.Compare(a.r.Topic, b.r.Topic), cmp.Compare(a.r.Partition, b.r.Partition),
		cmp.Compare(a.r.Offset, b.r.Offset), cmp.Compare(fmt.Sprint(a.source), fmt.Sprint(b.source)),
		slices.Compare(a.r.Value, b.r.Value))
}

// dlqStep answers the writes of one key: acknowledged, or failed (at
// random, or all while the topic is down; never once calm).
func (w *simWorld) dlqStep() {
	q := w.dlq
	if q == nil {
		return
	}
	q.mu.Lock()
	if len(q.pending) == 0 {
		q.mu.Unlock()
		return
	}
	keys := slices.Clone(q.pending)
	slices.SortStableFunc(keys, simDLQKey)
	keys = slices.CompactFunc(keys, func(a, b *simDLQWrite) bool { return simDLQKey(a, b) == 0 })
	key := keys[w.rng.Intn(len(keys))]
	var answer []*simDLQWrite
	q.pending = slices.DeleteFunc(q.pending, func(wr *simDLQWrite) bool {
		if simDLQKey(wr, key) == 0 {
			answer = append(answer, wr)
			return true
		}
		return false
	})
	q.mu.Unlock()
	var err error
	if !w.calm {
		switch {
		case w.now.Before(q.downUntil):
			err = errSimDLQ
		case w.rng.Intn(30) == 0:
			q.downUntil = w.now.Add(time.Duration(w.rng.Intn(3000)) * time.Millisecond)
			err = errSimDLQ
		case w.rng.Intn(5) == 0:
			err = errSimDLQ
		}
	}
	w.tracef("dead-letter %v@%d source=%v (%d writes): %v", key.r.Topic, key.r.Offset, key.source, len(answer), err)
	for _, wr := range answer {
		q.mu.Lock()
		q.writes++
		if err == nil {
			if wr.source {
				q.acked[wr.r]++
			} else {
				w.noteCopy(wr.r)
			}
		} else if wr.source {
			q.retrying[wr.r]++
		}
		q.mu.Unlock()
		wr.done(err)
	}
	// A shard waiting in its on_error handler goes on.
	w.sink.settle()
}

// noteCopy checks an acknowledged copy of refused rows (called with q.mu
// held): its value names rows the table refuses, each by its id.
func (w *simWorld) noteCopy(r *kgo.Record) {
	var rows []map[string]any
	if err := json.Unmarshal(r.Value, &rows); err != nil {
		var one map[string]any
		if err := json.Unmarshal(r.Value, &one); err != nil {
			w.violation("the dead-letter copy of the rows refused at %s/%d@%d is not JSON rows: %q", r.Topic, r.Partition, r.Offset, r.Value)
			return
		}
		rows = append(rows, one)
	}
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	for _, row := range rows {
		f, ok := row["id"].(float64)
		if !ok {
			w.violation("the dead-letter copy of the rows refused at %s/%d@%d has a row with no id: %q", r.Topic, r.Partition, r.Offset, r.Value)
			continue
		}
		id := uint64(f)
		if !w.sink.poison[id] {
			w.violation("the dead-letter copy of the rows refused at %s/%d@%d holds row %d, which the table takes", r.Topic, r.Partition, r.Offset, id)
		}
		w.dlq.copied[id] = true
	}
}

// simJitter is a deterministic draw in [0, d] for the dead-letter
// retries' backoff.
func (w *simWorld) simJitter(d time.Duration) time.Duration {
	h := fnv.New64a()
	fmt.Fprintf(h, "dlq/%d/%d/%d", w.seed, d, w.clock.Now().UnixNano())
	return time.Duration(h.Sum64() % uint64(d+1))
}

// AfterFunc runs f when the simulation moves time past d from now,
// marking the clock as inside it (a dead-letter write made there is a
// retry's).
func (k simPClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return k.c.newTimer(d, 0, func() {
		k.c.afterFunc = true
		defer func() { k.c.afterFunc = false }()
		f()
	})
}
