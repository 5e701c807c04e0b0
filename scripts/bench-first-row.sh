#!/usr/bin/env bash
# bench-first-row.sh: the time from etl's start to its first rows in
# ClickHouse, with a backlog, and the broker's part of it. One devbroker
# holds N (default 2,000,000) generated JSON records, lz4, in 6
# partitions. RUNS (default 3) rounds each run, into a fresh table with a
# fresh group:
#
#   - etl tail -n 1 -from earliest: a process that starts, reads the table
#     and prints the first record of the first fetch (its wall time: the
#     floor the broker and the start leave);
#   - etl with configs/bench.yaml (batch.first_at_once on, the default),
#     then with it off: the "first rows written" log line (since_start).
#
# Figures: docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000000}
RUNS=${RUNS:-3}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/etl-firstrow.XXXXXX)}
CH_TCP=${CH_TCP:-29500}
CH_HTTP=${CH_HTTP:-28523}
BROKER=${BROKER:-127.0.0.1:29592}
METRICS=${METRICS_ADDR:-127.0.0.1:29591}
[[ -x bin/etl && -x bin/devbroker ]] || make build >/dev/null
broker= etl=
cleanup() {
	[[ -n "$etl" ]] && kill -9 "$etl" 2>/dev/null || true
	[[ -n "$broker" ]] && kill "$broker" 2>/dev/null || true
	scripts/clickhouse.sh stop --dir "$DIR/clickhouse" --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT
scripts/clickhouse.sh start --dir "$DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" >/dev/null
bin/devbroker -listen "$BROKER" -topics events -partitions 6 >"$DIR/broker.log" 2>&1 &
broker=$!
for _ in $(seq 100); do
	(echo >"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null && break
	sleep 0.1
done
bin/etl gen -brokers "$BROKER" -topic events -partitions 6 -count "$N" -ts seconds -compression lz4 >"$DIR/gen.log"
cat "$DIR/gen.log"
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/" --data-binary "$1"; }
sed 's/linger: 1s}/linger: 1s, first_at_once: false}/' configs/bench.yaml >"$DIR/off.yaml"
grep -q 'first_at_once: false' "$DIR/off.yaml"

printf 'run\ttail -n 1 (s)\tfirst_at_once on (s)\toff (s)\n'
for r in $(seq "$RUNS"); do
	line="$r"
	for arm in tail on off; do
		table=t_${arm}_$r
		q "$(bin/etl gen -ddl -table "default.$table")"
		config=configs/bench.yaml
		[[ $arm == off ]] && config=$DIR/off.yaml
		export KAFKA_BROKERS=$BROKER CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP METRICS_LISTEN=$METRICS BENCH_TABLE=$table BENCH_GROUP=firstrow-$table-$$
		if [[ $arm == tail ]]; then
			t0=$(date +%s.%N)
			timeout 60 bin/etl tail -config "$config" -from earliest -n 1 >/dev/null 2>"$DIR/$table.log"
			line+=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "\t%.3f", b - a }')
			continue
		fi
		bin/etl -config "$config" 2>"$DIR/$table.log" &
		etl=$!
		for _ in $(seq 600); do
			grep -q 'first rows written' "$DIR/$table.log" && break
			sleep 0.05
		done
		kill -TERM "$etl"
		wait "$etl" || true
		etl=
		ms=$(sed -nE 's/.*first rows written.*since_start=([0-9.]+)(ms|s).*/\1 \2/p' "$DIR/$table.log" | head -1)
		[[ -n "$ms" ]] || { echo "no first rows in $DIR/$table.log" >&2; exit 1; }
		line+=$(awk -v v="${ms% *}" -v u="${ms#* }" 'BEGIN { printf "\t%.3f", (u == "ms" ? v / 1000 : v) }')
	done
	echo "$line"
done
