package clickhouse

import "testing"

func TestShardOf(t *testing.T) {
	w := []int{2, 1, 3} // slots: 0 1 -> shard 0, 2 -> shard 1, 3 4 5 -> shard 2
	want := []int{0, 0, 1, 2, 2, 2, 0, 0, 1}
	for v, s := range want {
		if got := ShardOf(uint64(v), w); got != s {
			t.Errorf("ShardOf(%d) = %d, want %d", v, got, s)
		}
	}
	if ShardOf(12345, []int{1}) != 0 {
		t.Error("one shard")
	}
}
