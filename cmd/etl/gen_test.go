package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/etl-project/etl/internal/testenv"
)

// TestGenExistingTopic: `etl gen` spreads records over all partitions of
// an existing topic, whatever its count, and refuses a -partitions above
// it with a clear message.
func TestGenExistingTopic(t *testing.T) {
	kb := testenv.Kafka(t)
	for _, n := range []int{2, 9} {
		topic := "gen" + string(rune('0'+n))
		kb.CreateTopic(t, topic, n)
		var out, errb bytes.Buffer
		if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", topic, "-count", "90"}, &out, &errb); code != exitOK {
			t.Fatalf("%d partitions: exit %d: %s", n, code, errb.String())
		}
		end := kb.EndOffsets(t, topic)
		total := int64(0)
		for p := int32(0); p < int32(n); p++ {
			if end[p] == 0 {
				t.Errorf("%d partitions: partition %d got nothing (%v)", n, p, end)
			}
			total += end[p]
		}
		if total != 90 {
			t.Errorf("%d partitions: %d records, want 90", n, total)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-brokers", kb.Addr(), "-topic", "gen2", "-partitions", "6", "-count", "10"}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "topic gen2 has 2 partitions, fewer than -partitions 6") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
