package pipeline

import (
	"testing"

	"github.com/etl-project/etl/config"
)

// TestBudgetSizingPerSink derives the budget from every sink's own batch,
// queue and in-flight settings: two sinks with 256 MiB batches need about
// 4,100 MiB, not the 1,028 MiB the default sink's settings would give.
func TestBudgetSizingPerSink(t *testing.T) {
	const yaml = `
pipeline: {name: p}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [events], group_id: g}}
sinks:
  a:
    clickhouse: {addr: ["127.0.0.1:1"], table: a, batch: {max_bytes: 256MiB}}
  b:
    clickhouse:
      table: b
      batch: {max_bytes: 256MiB}
      queue_capacity: 16
      inflight: {max_per_shard: 3}
      shards:
        - {replicas: ["127.0.0.1:1"]}
        - {replicas: ["127.0.0.1:2"]}
`
	cfg, err := config.Parse([]byte(yaml), "p.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	sizings, total := budgetSizing(cfg)
	if len(sizings) != 2 {
		t.Fatalf("%d sinks sized, want 2", len(sizings))
	}
	const mib = 1 << 20
	chunk := int64(cfg.Chunk.TargetBytes)
	low := cfg.Backpressure.LowRatio
	// sink a: 1 shard × 2 inserts × 256 MiB + 1 × 64 × chunk (the default
	// queue); sink b: 2 shards × 3 inserts × 256 MiB + 2 × 16 × chunk.
	steadyA := 2*256*mib + 64*chunk
	steadyB := 2*3*256*mib + 2*16*chunk
	want := int64(float64(2*steadyA)/low+0.5) + int64(float64(2*steadyB)/low+0.5)
	if total != want {
		t.Fatalf("derived budget %d MiB, want %d MiB", total/mib, want/mib)
	}
	if total < 8000*mib {
		t.Fatalf("derived budget %d MiB is below what the sinks' own settings need", total/mib)
	}
	t.Logf("derived budget: %d MiB (a: %d MiB, b: %d MiB)", total/mib, sizings[0].MinBudget()/mib, sizings[1].MinBudget()/mib)

	// The case: two sinks of one shard with 256 MiB batches.
	cfg2, err := config.Parse([]byte(`
pipeline: {name: p}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [events], group_id: g}}
sinks:
  a: {clickhouse: {addr: ["127.0.0.1:1"], table: a, batch: {max_bytes: 256MiB}}}
  b: {clickhouse: {addr: ["127.0.0.1:1"], table: b, batch: {max_bytes: 256MiB}}}
`), "p.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, total2 := budgetSizing(cfg2)
	if total2 < 4090*mib || total2 > 4130*mib {
		t.Fatalf("two sinks with 256 MiB batches: derived budget %d MiB, want about 4,100 MiB", total2/mib)
	}
	t.Logf("two sinks with 256 MiB batches: %d MiB", total2/mib)
}
