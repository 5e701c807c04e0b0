#!/usr/bin/env bash
# The end-to-end benchmark: N generated JSON records (6 columns) are
# produced to a fresh local broker, then the pipeline moves the backlog into
# a fresh local ClickHouse. Prints rows/s (from the pipeline's start to the
# last row in ClickHouse), etl's CPU seconds per million rows and its peak
# RSS, for the whole run and for its steady state (from the moment a
# quarter of the rows are in ClickHouse to the moment three quarters are:
# a process that runs for days pays its warm-up, growing its heap and
# buffers, once, and a stream that does not end never waits for the
# linger of a last, partial batch). The broker and ClickHouse run on the
# same machine and share its CPUs.
#   N=4000000 CONFIG=configs/bench.yaml scripts/bench.sh
# The default of 4M rows runs about 6 s here: in shorter runs the first
# second of the process (heap growth, page faults) weighs on the figures.
# With FREEZE_FOR=20 (seconds), ClickHouse is frozen (SIGSTOP) FREEZE_AFTER
# seconds (default 2) into the run, and etl's RSS is sampled every 100 ms
# while it is: the peak shows that memory stays within the byte budget.
# With REPLICATED=1 the table is a ReplicatedMergeTree on a ClickHouse with
# a local ZooKeeper (scripts/zookeeper.sh), and DELIVERY=exactly_once
# compares exactly-once with at-least-once into the same kind of table.
#
# ETL_BIN runs another etl binary (default bin/etl; scripts/bench-ab.sh).
#
# WORKLOAD=nested-avro runs the nested-Avro data set instead: N (default
# 56000) Confluent-framed Avro batches of 100 nested events, with a schema
# registry double (devbroker -registry), flattened, filtered and derived
# by configs/bench-nested-avro.yaml into a table with LowCardinality,
# Nullable and Array columns (about 4.4M rows).
#
# WORKLOAD=nested-protobuf is the same batches as Confluent-framed
# Protobuf (the event's schema a registry reference), through the same
# chain into the same table (configs/bench-nested-protobuf.yaml).
#
# WORKLOAD=json-meta is the json workload with two more columns filled
# from each record's Kafka metadata (kpartition Int32 from _partition,
# koffset Int64 from _offset; configs/bench-meta.yaml): what those columns
# cost, measured against json with scripts/bench-ab.sh
# (A=bin/etl B=bin/etl B_WORKLOAD=json-meta).
#
# WORKLOAD=json-raw writes the same JSON records unparsed
# (decode.format: raw; configs/bench-raw.yaml): each value whole into a
# String column beside its partition and offset.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOAD=${WORKLOAD:-json}
case $WORKLOAD in
json)
	N=${N:-4000000}
	CONFIG=${CONFIG:-configs/bench.yaml}
	TOPIC=events TABLE=events
	;;
json-meta)
	N=${N:-4000000}
	CONFIG=${CONFIG:-configs/bench-meta.yaml}
	TOPIC=events TABLE=events
	;;
json-raw)
	N=${N:-4000000}
	CONFIG=${CONFIG:-configs/bench-raw.yaml}
	TOPIC=events TABLE=events
	;;
nested-avro)
	N=${N:-56000}
	CONFIG=${CONFIG:-configs/bench-nested-avro.yaml}
	TOPIC=batches TABLE=batches
	;;
nested-protobuf)
	N=${N:-56000}
	CONFIG=${CONFIG:-configs/bench-nested-protobuf.yaml}
	TOPIC=batches TABLE=batches
	;;
*)
	echo "WORKLOAD=$WORKLOAD is not one of json, json-meta, json-raw, nested-avro, nested-protobuf" >&2
	exit 2
	;;
esac
REGISTRY=${REGISTRY:-127.0.0.1:29081}
# The run is profiled (etl -cpuprofile) and its CPU split by stage
# (scripts/stages.sh) unless STAGES=0.
DIR=${BENCH_DIR:-$(mktemp -d /tmp/etl-bench.XXXXXX)}
CH_TCP=${CH_TCP:-29000}
CH_HTTP=${CH_HTTP:-28123}
BROKER=${BROKER:-127.0.0.1:29092}
[[ -x bin/etl && -x bin/devbroker ]] || make build >/dev/null
[[ ${STAGES:-1} != 0 ]] && PROFILE=${PROFILE:-$DIR/cpu.pprof}

cleanup() {
	[[ -n "${chpid:-}" ]] && kill -CONT "$chpid" 2>/dev/null || true
	[[ -n "${etl:-}" ]] && kill -9 "$etl" 2>/dev/null || true
	[[ -n "${broker:-}" ]] && kill "$broker" 2>/dev/null || true
	scripts/clickhouse.sh stop --dir "$DIR/clickhouse" --purge >/dev/null 2>&1 || true
	[[ -n "${REPLICATED:-}" ]] && scripts/zookeeper.sh stop --dir "$DIR/zk" >/dev/null 2>&1 || true
}
trap cleanup EXIT

chargs=()
if [[ -n "${REPLICATED:-}" ]]; then
	ZK_PORT=${ZK_PORT:-29181}
	scripts/zookeeper.sh start --dir "$DIR/zk" --port "$ZK_PORT" >/dev/null
	cat >"$DIR/zk.xml" <<XML
<yandex>
  <zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node></zookeeper>
  <macros><shard>01</shard><replica>r1</replica></macros>
</yandex>
XML
	chargs=(--extra-config "$DIR/zk.xml" --interserver-port "${CH_INTERSERVER:-29009}")
fi
scripts/clickhouse.sh start --dir "$DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" "${chargs[@]}" >/dev/null
regargs=()
[[ $WORKLOAD == nested-* ]] && regargs=(-registry "$REGISTRY")
bin/devbroker -listen "$BROKER" -topics "$TOPIC" -partitions 6 "${regargs[@]}" >"$DIR/broker.log" 2>&1 &
broker=$!
for _ in $(seq 100); do
	(echo >"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null && break
	sleep 0.1
done
. scripts/settle.sh
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/?allow_experimental_low_cardinality_type=1" --data-binary "$1"; }
# GEN: the data set etl gen produces (json-meta's and json-raw's are
# json's).
GEN=${WORKLOAD%-meta}
GEN=${GEN%-raw}
ddl=$(bin/etl gen -format "$GEN" -ddl -table "default.$TABLE")
[[ $WORKLOAD == json-raw ]] && ddl="CREATE TABLE default.$TABLE (raw String, kpartition Int32, koffset Int64) ENGINE = MergeTree ORDER BY tuple()"
if [[ -n "${REPLICATED:-}" ]]; then
	ddl=${ddl/ENGINE = MergeTree/ENGINE = ReplicatedMergeTree(\'/clickhouse/tables/01/events\', \'r1\')}
	ddl="$ddl SETTINGS replicated_deduplication_window = 1000"
fi
q "$ddl"
[[ $WORKLOAD == json-meta ]] && q "ALTER TABLE default.$TABLE ADD COLUMN kpartition Int32, ADD COLUMN koffset Int64"
bin/etl gen -format "$GEN" -registry "http://$REGISTRY" -brokers "$BROKER" -topic "$TOPIC" -count "$N" ${CODEC:+-compression "$CODEC"} >"$DIR/gen.log"
cat "$DIR/gen.log"
# ROWS: the rows the pipeline writes (N, or the rows the nested chain keeps).
ROWS=$N
if [[ $WORKLOAD == nested-* ]]; then
	ROWS=$(sed -n 's/^rows the benchmark.s chain keeps: //p' "$DIR/gen.log")
fi

# Rows etl has decoded so far, from its metrics (the configs listen on
# 127.0.0.1:29090). In the steady state etl reads ahead of ClickHouse, so
# its CPU is divided by the rows it decoded in the same time, not by the
# rows that arrived in ClickHouse.
decoded() { { curl -sf --max-time 1 "http://${METRICS_ADDR:-127.0.0.1:29090}/metrics" || true; } | awk '/^etl_decode_rows_total[ {]/ { printf "%d", $NF }'; }
# CPU seconds a process has used so far (utime + stime).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# Minor page faults a process has taken so far: each first touch of a page
# (about 2 us of system time each on the development machine).
faults_of() { awk '{ print $10 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
chpid=$(cat "$DIR/clickhouse/clickhouse.pid")
ch0=$(cpu_of "$chpid"); br0=$(cpu_of "$broker")
start=$(date +%s.%N)
KAFKA_BROKERS=$BROKER CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP SCHEMA_REGISTRY_URL=http://$REGISTRY "${ETL_BIN:-bin/etl}" -config "$CONFIG" ${PROFILE:+-cpuprofile "$PROFILE"} ${MEMPROFILE:+-memprofile "$MEMPROFILE"} 2>"$DIR/etl.log" &
etl=$!
if [[ -n "${FREEZE_FOR:-}" ]]; then
	sleep "${FREEZE_AFTER:-2}"
	kill -STOP "$chpid"
	peak=0
	t_end=$(( $(date +%s%N) + FREEZE_FOR * 1000000000 ))
	while [[ $(date +%s%N) -lt $t_end ]]; do
		r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$etl/status" 2>/dev/null || echo 0)
		(( r > peak )) && peak=$r
		sleep 0.1
	done
	kill -CONT "$chpid"
	awk -v p="$peak" -v s="$FREEZE_FOR" 'BEGIN { printf "ClickHouse frozen %d s: etl peak RSS while frozen %.1f MiB\n", s, p / 1024 }'
fi
# The steady state: from the moment a quarter of the rows are in
# ClickHouse (the process has warmed up: its heap, buffers and free lists
# are grown) to the moment three quarters are (before the last batch,
# which waits for its linger once the backlog is read).
warm= hot= steady_rss=0
while true; do
	c=$(q "SELECT count() FROM default.$TABLE")
	# Peak RSS in the steady state: VmRSS sampled at each poll from the
	# warm point to the hot one.
	if [[ -n "$warm" && -z "$hot" ]]; then
		r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$etl/status" 2>/dev/null || echo 0)
		(( r > steady_rss )) && steady_rss=$r
	fi
	if [[ -n "$warm" && -z "$hot" && "$c" -ge $((ROWS * 3 / 4)) ]]; then
		hot=$c; hot_t=$(date +%s.%N); hot_cpu=$(cpu_of "$etl"); hot_dec=$(decoded); hot_flt=$(faults_of "$etl")
	fi
	[[ "$c" -ge "$ROWS" ]] && break
	if [[ -z "$warm" && "$c" -ge $((ROWS / 4)) ]]; then
		warm=$c; warm_t=$(date +%s.%N); warm_cpu=$(cpu_of "$etl"); warm_dec=$(decoded); warm_flt=$(faults_of "$etl")
	fi
	kill -0 "$etl" 2>/dev/null || { echo "etl exited early; see $DIR/etl.log" >&2; tail -5 "$DIR/etl.log" >&2; exit 1; }
	sleep 0.05
done
end=$(date +%s.%N)
br1=$(cpu_of "$broker")
# etl's metrics at the end, kept in the run's directory; the batches'
# mean rows and bytes come from them.
curl -sf --max-time 2 "http://${METRICS_ADDR:-127.0.0.1:29090}/metrics" >"$DIR/metrics.txt" || true
kill -TERM "$etl"
wait "$etl" || true
etl=
# The server's CPU counts the merges the inserts caused: it is read once no
# merge of the table has run for SETTLE_QUIET seconds (1; at most
# SETTLE_MAX, 30, after the last row; SETTLE_QUIET=0 reads it at once).
settle_merges "$TABLE"
ch1=$(cpu_of "$chpid")
settled=$(date +%s.%N)
rows=$(q "SELECT count() FROM default.$TABLE")
# Parts the inserts created (level 0; merged ones stay listed, inactive,
# for the server's old_parts_lifetime of 8 minutes).
parts=$(q "SELECT count() FROM system.parts WHERE database = 'default' AND table = '$TABLE' AND level = 0")
active=$(q "SELECT count() FROM system.parts WHERE database = 'default' AND table = '$TABLE' AND active")
if [[ $WORKLOAD == json-meta || $WORKLOAD == json-raw ]]; then
	# The metadata columns hold what Kafka gave: 6 partitions whose offsets
	# run from 0 without a gap.
	echo "metadata columns: $(q "SELECT uniqExact(kpartition), sum(koffset_max + 1) = sum(c), sum(c) FROM (SELECT kpartition, max(koffset) AS koffset_max, count() AS c FROM default.$TABLE GROUP BY kpartition) FORMAT TSV" | awk '{ printf "%d partitions, offsets dense: %s, rows %d", $1, ($2 == 1 ? "yes" : "no"), $3 }')"
fi
usage=$(grep 'resource usage' "$DIR/etl.log" | tail -1)
cpu=$(sed -E 's/.*cpu_seconds=([0-9.]+).*/\1/' <<<"$usage")
rss=$(sed -E 's/.*max_rss_bytes=([0-9]+).*/\1/' <<<"$usage")
awk -v n="$rows" -v s="$start" -v e="$end" -v cpu="$cpu" -v rss="$rss" -v ch0="$ch0" -v ch1="$ch1" -v br0="$br0" -v br1="$br1" -v cores="$(nproc)" -v parts="$parts" -v active="$active" -v settled="$settled" 'BEGIN {
	ch = ch1 - ch0; br = br1 - br0
	el = e - s
	printf "rows: %d in %.2f s\nthroughput: %.0f rows/s\netl CPU: %.2f s (%.3f CPU-s per million rows)\netl peak RSS: %.1f MiB\n", n, el, n / el, cpu, cpu / (n / 1e6), rss / 1048576
	printf "during the run: ClickHouse CPU %.2f s (with its merges, until %.1f s after the last row), broker CPU %.2f s (machine: %.1f CPU-s available)\n", ch, settled - e, br, el * cores
	printf "ClickHouse: %.2f CPU-s per million rows; %d parts created, %.1f per million rows; %d active once merges stopped\n", ch / (n / 1e6), parts, parts / (n / 1e6), active
}'
awk '/^etl_sink_batch_rows_(sum|count)[ {]/ { split($1, a, "{"); v[a[1]] += $NF }
	/^etl_sink_batch_bytes_sum[ {]/ { b += $NF }
	END { n = v["etl_sink_batch_rows_count"]; if (n > 0) printf "batches: %d inserts, %.0f rows and %.1f MiB each on average\n", n, v["etl_sink_batch_rows_sum"] / n, b / n / 1048576 }' "$DIR/metrics.txt" 2>/dev/null || true
if [[ -n "$warm" && -n "$hot" ]]; then
	awk -v w="$warm" -v h="$hot" -v s="$warm_t" -v e="$hot_t" -v c0="$warm_cpu" -v c1="$hot_cpu" -v d0="${warm_dec:-0}" -v d1="${hot_dec:-0}" -v f0="${warm_flt:-0}" -v f1="${hot_flt:-0}" -v rss="$steady_rss" 'BEGIN {
		r = h - w; el = e - s; d = d1 - d0
		if (r > 0 && el > 0) printf "steady state (%d rows, from %d to %d in ClickHouse): %.0f rows/s\n", r, w, h, r / el
		if (d > 0) printf "steady state etl CPU: %.3f CPU-s per million rows (%.2f s for the %d rows it decoded meanwhile)\n", (c1 - c0) / (d / 1e6), c1 - c0, d
		if (rss > 0) printf "steady state etl peak RSS: %.1f MiB (sampled every 50 ms)\n", rss / 1024
		if (d > 0) printf "steady state etl page faults: %d (%.0f per million rows)\n", f1 - f0, (f1 - f0) / (d / 1e6)
	}'
fi
if [[ -n "${PROFILE:-}" && -s "$PROFILE" ]]; then
	echo "etl CPU by stage (whole run, from its CPU profile):"
	scripts/stages.sh "${ETL_BIN:-bin/etl}" "$PROFILE" "$rows"
fi
