package pipeline

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCheckStalls1000 is one watchdog tick over 1,000 idle lanes.
func BenchmarkCheckStalls1000(b *testing.B) {
	p, _ := newBarePipeline(b, &nopSource{}, 1024)
	for i := range 1000 {
		tp := TopicPartition{Topic: fmt.Sprintf("s%d", i/100), Partition: int32(i % 100)}
		l := newLane(tp, p.tracker.Assign(tp), new(fetchLag), &p.settle)
		p.tracker.Start(tp, l.epoch, 0)
		p.lanes[tp] = l
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		p.checkStalls(now)
	}
}
