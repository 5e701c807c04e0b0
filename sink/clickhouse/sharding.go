package clickhouse

// ShardOf maps a value to a shard the way ClickHouse's Distributed engine
// maps its sharding key: v modulo the sum of the weights, then the shard
// whose range of that many slots, laid out in shard order, holds it.
func ShardOf(v uint64, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	if total <= 0 {
		return 0
	}
	slot := int(v % uint64(total))
	for i, w := range weights {
		if slot < w {
			return i
		}
		slot -= w
	}
	return len(weights) - 1
}
