package pipeline

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/source/kafka"
)

// partitionPauser is the part of the source the pauser drives.
type partitionPauser interface {
	Pause(kafka.Partitions)
	Resume(kafka.Partitions)
}

// pauser decides which partitions are paused at the source. A partition is
// paused while its lane is blocked on a full shard queue, or while the byte
// budget holds the whole source paused.
type pauser struct {
	src   partitionPauser
	gauge prometheus.Gauge

	mu       sync.Mutex
	budget   bool
	assigned map[TopicPartition]bool
	blocked  map[TopicPartition]*lane
	paused   map[TopicPartition]bool
}

func newPauser(src partitionPauser, gauge prometheus.Gauge) *pauser {
	return &pauser{src: src, gauge: gauge, assigned: map[TopicPartition]bool{},
		blocked: map[TopicPartition]*lane{}, paused: map[TopicPartition]bool{}}
}

// apply pauses or resumes tps to match the wanted state. Called with mu held.
func (ps *pauser) apply(tps ...TopicPartition) {
	var pause, resume kafka.Partitions
	for _, tp := range tps {
		want := ps.assigned[tp] && (ps.budget || ps.blocked[tp] != nil)
		if want == ps.paused[tp] {
			continue
		}
		if want {
			ps.paused[tp] = true
			if pause == nil {
				pause = kafka.Partitions{}
			}
			pause[tp.Topic] = append(pause[tp.Topic], tp.Partition)
		} else {
			delete(ps.paused, tp)
			if resume == nil {
				resume = kafka.Partitions{}
			}
			resume[tp.Topic] = append(resume[tp.Topic], tp.Partition)
		}
	}
	if pause != nil {
		ps.src.Pause(pause)
	}
	if resume != nil {
		ps.src.Resume(resume)
	}
	ps.gauge.Set(float64(len(ps.paused)))
}

func (ps *pauser) assign(tp TopicPartition) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.assigned[tp] = true
	ps.apply(tp)
}

func (ps *pauser) unassign(tp TopicPartition) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.assigned, tp)
	delete(ps.blocked, tp)
	if ps.paused[tp] {
		// The client forgets the partition with the assignment; resume so
		// that a later assignment of it starts unpaused.
		delete(ps.paused, tp)
		ps.src.Resume(kafka.Partitions{tp.Topic: {tp.Partition}})
	}
	ps.gauge.Set(float64(len(ps.paused)))
}

// block records that l waits for shard queue space, pausing its partition.
func (ps *pauser) block(l *lane) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.assigned[l.tp] {
		return
	}
	ps.blocked[l.tp] = l
	ps.apply(l.tp)
}

// unblock undoes block.
func (ps *pauser) unblock(l *lane) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.blocked[l.tp] == l {
		delete(ps.blocked, l.tp)
		ps.apply(l.tp)
	}
}

// takeBlocked unblocks every blocked lane and returns them.
func (ps *pauser) takeBlocked() []*lane {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.blocked) == 0 {
		return nil
	}
	out := make([]*lane, 0, len(ps.blocked))
	tps := make([]TopicPartition, 0, len(ps.blocked))
	for tp, l := range ps.blocked {
		out = append(out, l)
		tps = append(tps, tp)
	}
	clear(ps.blocked)
	ps.apply(tps...)
	return out
}

// setBudget pauses or resumes every assigned partition for the byte budget.
func (ps *pauser) setBudget(paused bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.budget = paused
	tps := make([]TopicPartition, 0, len(ps.assigned))
	for tp := range ps.assigned {
		tps = append(tps, tp)
	}
	ps.apply(tps...)
}

func (ps *pauser) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.paused)
}
