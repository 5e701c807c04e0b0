#!/usr/bin/env bash
# bench-sorted.sh: what a block sorted by the table's sorting key saves
# ClickHouse. For the benchmark's two tables (the 6-column JSON events,
# ORDER BY id; the nested Avro events, ORDER BY (kind, ts)) it builds 1M
# rows, writes them as Native blocks of 100,000 rows in the order etl
# inserts them (the JSON backlog: ascending runs of 5,000 rows from 6
# interleaved partitions; the nested one: in record order, kinds mixed)
# and each block sorted by the key, inserts each file RUNS times
# alternately with merges stopped (one part per block), and prints the
# server's CPU seconds per million rows for the inserts, then for the
# merge of those parts (OPTIMIZE FINAL).
#
# Its counterpart on etl's side is BenchmarkSortBatch (sink/clickhouse).
# Figures: docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/etl-sorted.XXXXXX)}
CH_TCP=${CH_TCP:-29400}
CH_HTTP=${CH_HTTP:-28423}
[[ -x bin/etl ]] || make build >/dev/null
cleanup() { scripts/clickhouse.sh stop --dir "$DIR/clickhouse" --purge >/dev/null 2>&1 || true; }
trap cleanup EXIT
scripts/clickhouse.sh start --dir "$DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" >/dev/null
chpid=$(cat "$DIR/clickhouse/clickhouse.pid")
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/?allow_experimental_low_cardinality_type=1&max_block_size=100000" --data-binary "$1"; }
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }

q "$(bin/etl gen -ddl -table default.json_src)"
q "INSERT INTO default.json_src SELECT number, toDateTime(1700000000 + intDiv(number, 1000)), number % 100000, ['click','view','buy','scroll'][number % 4 + 1], number / 7, if(number % 3 = 0, NULL, concat('note-', toString(number % 1000))) FROM numbers(1000000)"
q "SELECT * FROM default.json_src ORDER BY intDiv(intDiv(id, 6), 5000), id % 6, id FORMAT Native" >"$DIR/json-etl.native"
q "SELECT * FROM default.json_src ORDER BY intDiv(intDiv(intDiv(id, 6), 5000) * 6 + id % 6, 20), id FORMAT Native" >"$DIR/json-sorted.native"
q "$(bin/etl gen -format nested-avro -ddl -table default.nested_src)"
q "INSERT INTO default.nested_src SELECT intDiv(number, 100), ['web','ios','android','api'][intDiv(number, 100) % 4 + 1], concat('user-', toString(intDiv(number, 100) % 5000)), toDateTime(1700000000 + intDiv(number, 2000)), ['click','view','buy','scroll','search'][cityHash64(number) % 5 + 1], number, if(number % 4 = 0, NULL, concat('/p/', toString(number % 300))), arrayMap(x -> concat('t', toString(x)), range(number % 4)), number % 1000, toInt32(number % 64), concat('k', toString(cityHash64(number) % 100000)) FROM numbers(1000000)"
q "SELECT * FROM default.nested_src ORDER BY batch_id, value FORMAT Native" >"$DIR/nested-etl.native"
q "SELECT * FROM default.nested_src ORDER BY intDiv(batch_id, 1000), kind, ts FORMAT Native" >"$DIR/nested-sorted.native"

# measure TABLE FILE: one line "insert CPU-s merge CPU-s parts".
measure() {
	local table=$1 file=$2 c0 c1 c2 parts
	q "DROP TABLE IF EXISTS $table"
	q "CREATE TABLE $table AS ${table%_*}_src"
	q "SYSTEM STOP MERGES"
	c0=$(cpu_of "$chpid")
	curl -sSf "http://127.0.0.1:$CH_HTTP/?query=INSERT%20INTO%20$table%20FORMAT%20Native&min_insert_block_size_rows=100000&min_insert_block_size_bytes=0" --data-binary @"$file"
	c1=$(cpu_of "$chpid")
	parts=$(q "SELECT count() FROM system.parts WHERE active AND database = 'default' AND table = '${table#default.}'")
	q "SYSTEM START MERGES"
	q "OPTIMIZE TABLE $table FINAL"
	c2=$(cpu_of "$chpid")
	awk -v a="$c0" -v b="$c1" -v c="$c2" -v p="$parts" 'BEGIN { printf "%.2f %.2f %d\n", b - a, c - b, p }'
}

echo "table	block order	run	insert CPU-s/M	merge CPU-s/M	parts"
for r in $(seq "$RUNS"); do
	for shape in json nested; do
		for order in etl sorted; do
			read -r ins mrg parts < <(measure "default.${shape}_x" "$DIR/$shape-$order.native")
			echo "$shape	$order	$r	$ins	$mrg	$parts"
		done
	done
done | tee "$DIR/results.tsv"
awk -F'\t' 'NR > 0 { k = $1 " " $2; n[k]++; i[k] += $4; m[k] += $5 } END {
	for (k in n) printf "sorted: %s insert %.2f merge %.2f CPU-s/M (mean of %d)\n", k, i[k] / n[k], m[k] / n[k], n[k]
}' "$DIR/results.tsv" | sort
