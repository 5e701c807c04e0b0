package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestDistributedCheck: sink.clickhouse.distributed_check compares the
// configured shards with a cluster of system.clusters at startup: the same
// shards and weights in the same order start; another weight or another
// order is refused, naming the difference.
func TestDistributedCheck(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	a := testenv.ClickHouseWith(t, testenv.CHOptions{})
	b := testenv.ClickHouseWith(t, testenv.CHOptions{})
	for _, ch := range []*testenv.CH{a, b} {
		ch.Exec(t, gen.TableDDL("default", "events"))
	}
	clusters := map[string][]testenv.CHShard{"two": {
		{Replicas: []string{a.TCPAddr()}, Weight: 1},
		{Replicas: []string{b.TCPAddr()}, Weight: 2},
	}}
	a.SetClusters(t, clusters)
	b.SetClusters(t, clusters)
	shards := func(first, second string, w1, w2 int) string {
		return fmt.Sprintf("    shards:\n      - {weight: %d, replicas: [%q]}\n      - {weight: %d, replicas: [%q]}\n    distributed_check: two\n", w1, first, w2, second)
	}
	for _, tc := range []struct {
		name, shards, want string
	}{
		{"matching", shards(a.TCPAddr(), b.TCPAddr(), 1, 2), ""},
		{"other weight", shards(a.TCPAddr(), b.TCPAddr(), 1, 1), `cluster "two" shard 2 has weight 2, sink.clickhouse shard 1 has 1`},
		{"other order", shards(b.TCPAddr(), a.TCPAddr(), 1, 2), `does not hold replica ` + b.TCPAddr() + ` of sink.clickhouse shard 0: the shard order differs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testConfig(t, kb, a, "dcheck")
			y, err := yamlWithShards(base, a.TCPAddr(), tc.shards)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse([]byte(y), "pipeline.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			newOrRefused(t, Options{Config: cfg, Log: testenv.Logger(t)}, tc.want)
		})
	}
}

// yamlWithShards renders cfg's pipeline file with the sink's addr replaced
// by shards.
func yamlWithShards(cfg *config.Config, addr, shards string) (string, error) {
	y := cfg.Redacted()
	old := "    addr:\n      - " + addr + "\n"
	if !strings.Contains(y, old) {
		return "", fmt.Errorf("no addr %s in:\n%s", addr, y)
	}
	y = strings.Replace(y, "    distributed_check: \"\"\n", "", 1)
	return strings.Replace(y, old, shards, 1), nil
}

// newOrRefused builds a pipeline from o. With want empty it must start,
// and it is stopped at once through Run (Run owns the source's shutdown:
// closing a client whose group callback waits for Run would not return);
// otherwise New must fail with an error that contains want.
func newOrRefused(t *testing.T, o Options, want string) {
	t.Helper()
	p, err := New(context.Background(), o)
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New: error = %v, want it to contain %q", err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
