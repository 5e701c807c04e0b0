#!/usr/bin/env bash
# bench-scale.sh: what many partitions cost (make bench-scale).
#
#   TOPICS=10 PARTS=100 PER=1000 scripts/bench-scale.sh
#
# On one local broker and one ClickHouse, with the JSON records of make
# bench (6 columns):
#   1. base: TOPICS × PARTS × PER records in one topic of 6 partitions,
#      drained by one member; then that member idles IDLE_FOR seconds
#      (default 30) with nothing to read.
#   2. one: the same number of records over TOPICS topics of PARTS
#      partitions (PER each), drained by one member; then it idles.
#   3. three: the same topics drained by MEMBERS members (default 3) of a
#      new group started together.
#   4. rebalance: MEMBERS members of a new group (start_offset latest)
#      while one producer per topic writes STREAM_RATE records/s in all
#      (default 20000) for STREAM_FOR seconds (default 40); a member more
#      joins JOIN_AT seconds in (default 10) and the first member leaves
#      (SIGTERM) LEAVE_AT seconds in (default 25). Each member writes its
#      name into the rows (a set step), with the topic, partition and
#      offset, and the table stamps each row with its insert time; a
#      partition that kept its member throughout "stayed", one written by
#      two members "moved". For each it gives the longest gap, in whole
#      seconds, between two consecutive insert times of its rows.
#   5. with DELIVERY=exactly_once (default at_least_once) every drain runs
#      exactly-once (into a ReplicatedMergeTree, scripts/zookeeper.sh), and
#      the commit's metadata size per partition is read with
#      etl offsets -format json after each drain. The rebalance step is
#      not run then: its table stamps the insert time (DEFAULT now()),
#      which exactly-once refuses.
#   6. floors: before the drains, bin/floorconsumer (a franz-go consumer
#      with franz-go's default fetch sizes, reading every record and
#      discarding it) reads base, then the TOPICS topics: what any Go
#      consumer pays for the same records in 6 partitions and in
#      TOPICS × PARTS (needs GNU time).
# For each drain it prints the seconds to the first row, rows/s (from the
# members' start to the last row), etl's CPU-s per million rows (all
# members), the largest peak RSS of a member and the etl_* series one
# member serves; for each idle run the member's RSS and its CPU as a share
# of one core; for each floor its rows/s, CPU-s per million rows and peak
# RSS. The last lines give the ratios of the 1,000-partition figures to
# the 6-partition ones, etl's and then the floor's.
set -euo pipefail
cd "$(dirname "$0")/.."
TOPICS=${TOPICS:-10}
PARTS=${PARTS:-100}
PER=${PER:-1000}
MEMBERS=${MEMBERS:-3}
IDLE_FOR=${IDLE_FOR:-30}
STREAM_RATE=${STREAM_RATE:-20000}
STREAM_FOR=${STREAM_FOR:-40}
JOIN_AT=${JOIN_AT:-10}
LEAVE_AT=${LEAVE_AT:-25}
DELIVERY=${DELIVERY:-at_least_once}
TIMEOUT=${TIMEOUT:-300}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/etl-scale.XXXXXX)}
mkdir -p "$DIR"
CH_TCP=${CH_TCP:-29300}
CH_HTTP=${CH_HTTP:-28323}
BROKER=${BROKER:-127.0.0.1:29392}
METRICS_BASE=${METRICS_BASE:-29400}
ROWS=$((TOPICS * PARTS * PER))
[[ -x bin/etl && -x bin/devbroker && -x bin/floorconsumer ]] || make build >/dev/null
/usr/bin/time -f %M true 2>/dev/null || { echo "bench-scale: needs GNU time (/usr/bin/time)" >&2; exit 1; }
. scripts/settle.sh

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	[[ -n "${broker:-}" ]] && kill "$broker" 2>/dev/null || true
	scripts/clickhouse.sh stop --dir "$DIR/clickhouse" --purge >/dev/null 2>&1 || true
	[[ $DELIVERY == exactly_once ]] && scripts/zookeeper.sh stop --dir "$DIR/zk" >/dev/null 2>&1 || true
}
trap cleanup EXIT

chargs=()
if [[ $DELIVERY == exactly_once ]]; then
	ZK_PORT=${ZK_PORT:-29381}
	scripts/zookeeper.sh start --dir "$DIR/zk" --port "$ZK_PORT" >/dev/null
	cat >"$DIR/zk.xml" <<XML
<yandex>
  <zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node></zookeeper>
  <macros><shard>01</shard><replica>r1</replica></macros>
</yandex>
XML
	chargs=(--extra-config "$DIR/zk.xml" --interserver-port "${CH_INTERSERVER:-29309}")
fi
scripts/clickhouse.sh start --dir "$DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" "${chargs[@]}" >/dev/null
topics=()
for i in $(seq 0 $((TOPICS - 1))); do topics+=("s$i"); done
# The topics s0.. have PARTS partitions; base, which gen creates, 6.
bin/devbroker -listen "$BROKER" -topics "$(IFS=,; echo "${topics[*]}")" -partitions "$PARTS" >"$DIR/broker.log" 2>&1 &
broker=$!
for _ in $(seq 100); do
	(echo >"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null && break
	sleep 0.1
done
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/" --data-binary "$1"; }
now() { date +%s.%N; }
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_of() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
cols=$(bin/etl gen -ddl -table default.x | sed -E 's/^[^(]*\((.*)\) ENGINE.*/\1/')
order=$(bin/etl gen -ddl -table default.x | sed -E 's/.* ORDER BY (.*)$/\1/')

# table NAME [EXTRA_COLUMNS]: a fresh table of the benchmark's columns
# (a ReplicatedMergeTree under exactly_once, which needs its block
# deduplication).
table() {
	if [[ $DELIVERY == exactly_once ]]; then
		q "CREATE TABLE default.$1 ($cols${2:+, $2}) ENGINE = ReplicatedMergeTree('/clickhouse/tables/01/$1', 'r1') ORDER BY $order SETTINGS replicated_deduplication_window = 1000"
	else
		q "CREATE TABLE default.$1 ($cols${2:+, $2}) ENGINE = MergeTree ORDER BY $order"
	fi
}

# config FILE TOPICS START [EXTRA]: a pipeline reading TOPICS (YAML
# list) into ${SCALE_TABLE}, group ${SCALE_GROUP}, metrics on
# ${METRICS_LISTEN}; EXTRA is appended under sink.clickhouse.
config() {
	cat >"$1" <<YAML
pipeline: {name: scale}
delivery: $DELIVERY
source:
  kafka:
    brokers: ["$BROKER"]
    topics: $2
    group_id: \${SCALE_GROUP}
    start_offset: $3
decode: {format: json}
${5:-}
sink:
  clickhouse:
    addr: ["127.0.0.1:$CH_TCP"]
    database: default
    table: \${SCALE_TABLE}
    user: default
${4:-}
checkpoint: {commit_interval: 5s, drain_timeout: 25s}
metrics: {listen: "\${METRICS_LISTEN}"}
log: {level: info, format: text}
YAML
}
list=$(IFS=,; echo "[${topics[*]}]")
config "$DIR/base.yaml" "[base]" earliest
config "$DIR/scale.yaml" "$list" earliest
config "$DIR/stream.yaml" "$list" latest "    columns: {ktopic: _topic, kpartition: _partition, koffset: _offset}
    exclude_columns: [ins]" "transform:
  - set: {member: \"'\${MEMBER}'\"}"

echo "producing $ROWS records to base (6 partitions) and $PER per partition to ${TOPICS} topics of $PARTS partitions"
bin/etl gen -brokers "$BROKER" -topic base -partitions 6 -count "$ROWS" >"$DIR/gen-base.log"
gens=()
for t in "${topics[@]}"; do
	bin/etl gen -brokers "$BROKER" -topic "$t" -partitions "$PARTS" -count $((PARTS * PER)) -seed "${t#s}" >"$DIR/gen-$t.log" &
	gens+=($!)
done
wait "${gens[@]}"

# start MEMBER CONFIG TABLE GROUP PORT: starts a member in the
# background; its pid is added to pids and members, its name to names,
# its metrics port to ports.
start() {
	SCALE_TABLE=$3 SCALE_GROUP=$4 METRICS_LISTEN=127.0.0.1:$5 MEMBER=$1 bin/etl -config "$2" 2>"$DIR/$1.log" &
	pids+=($!)
	members+=($!)
	names+=("$1")
	ports+=("$5")
}

# drain NAME CONFIG N: N members of a new group drain the topics into a
# fresh table NAME; prints the drain's figures and leaves the members
# running (their pids in members, their metrics ports in ports).
drain() {
	local name=$1 cfg=$2 n=$3 t0 first= c t end cpu=0 rss=0 i
	table "$name"
	members=() names=() ports=()
	t0=$(now)
	for i in $(seq "$n"); do
		start "$name-m$i" "$cfg" "$name" "scale-$name-$$" $((METRICS_BASE + i))
	done
	while true; do
		c=$(q "SELECT count() FROM default.$name")
		t=$(now)
		[[ -z "$first" && $c -gt 0 ]] && first=$(awk -v a="$t0" -v b="$t" 'BEGIN { printf "%.2f", b - a }')
		[[ $c -ge $ROWS ]] && break
		if awk -v a="$t0" -v b="$t" -v m="$TIMEOUT" 'BEGIN { exit !(b - a > m) }'; then
			echo "$name: $c of $ROWS rows after ${TIMEOUT}s; see $DIR" >&2
			exit 1
		fi
		for i in "${members[@]}"; do kill -0 "$i" 2>/dev/null || { echo "$name: a member exited; see $DIR" >&2; exit 1; }; done
		sleep 0.05
	done
	end=$(now)
	for i in "${members[@]}"; do
		cpu=$(awk -v a="$cpu" -v b="$(cpu_of "$i")" 'BEGIN { print a + b }')
	done
	series=$(curl -sf --max-time 5 "http://127.0.0.1:${ports[0]}/metrics" | grep -c '^etl_' || true)
	awk -v name="$name" -v n="$n" -v rows="$ROWS" -v t0="$t0" -v e="$end" -v f="$first" -v cpu="$cpu" -v s="$series" 'BEGIN {
		printf "%s\t%d\t%s\t%.0f\t%.3f\t%s\n", name, n, f, rows / (e - t0), cpu / (rows / 1e6), s
	}' | tee -a "$DIR/drains.tsv"
	if [[ $DELIVERY == exactly_once ]]; then
		SCALE_TABLE=$name SCALE_GROUP=scale-$name-$$ METRICS_LISTEN=off bin/etl offsets -config "$cfg" -format json >"$DIR/$name-offsets.json" || true
	fi
}

# idle NAME: the first member of the last drain, idle for IDLE_FOR
# seconds (after 5 s for its last batch and commit): its RSS and CPU.
idle() {
	local p=${members[0]} c0 c1
	sleep 5
	c0=$(cpu_of "$p")
	sleep "$IDLE_FOR"
	c1=$(cpu_of "$p")
	awk -v name="$1" -v c0="$c0" -v c1="$c1" -v s="$IDLE_FOR" -v rss="$(rss_of "$p")" 'BEGIN {
		printf "%s\t%.1f\t%.2f\n", name, rss / 1024, 100 * (c1 - c0) / s
	}' | tee -a "$DIR/idle.tsv"
}

# stop: SIGTERM to the running members; their peak RSS from their
# resource usage lines.
stop() {
	local i peak=0 r
	for i in "${members[@]}"; do kill -TERM "$i" 2>/dev/null || true; done
	for i in "${members[@]}"; do wait "$i" 2>/dev/null || true; done
	for i in "${names[@]}"; do
		r=$(sed -nE 's/.*resource usage.*max_rss_bytes=([0-9]+).*/\1/p' "$DIR/$i.log" | tail -1)
		((${r:-0} > peak)) && peak=${r:-0}
	done
	echo "$1	$((peak / 1048576))" | tee -a "$DIR/peaks.tsv"
}

# floor NAME TOPICS: bin/floorconsumer reads the ROWS records of TOPICS
# (comma-separated) in a new group; prints its rows/s (from its start to
# its exit), CPU-s per million rows and peak RSS.
floor() {
	local t0 e user sys rss
	t0=$(now)
	/usr/bin/time -f '%U %S %M' -o "$DIR/floor-$1.time" bin/floorconsumer -brokers "$BROKER" -topic "$2" -group "floor-$1-$$" -count "$ROWS" -timeout "${TIMEOUT}s" >"$DIR/floor-$1.log"
	e=$(now)
	read -r user sys rss <"$DIR/floor-$1.time"
	awk -v name="$1" -v rows="$ROWS" -v t0="$t0" -v e="$e" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v rss="$rss" 'BEGIN {
		printf "%s\t%.0f\t%.3f\t%.0f\n", name, rows / (e - t0), cpu / (rows / 1e6), rss / 1024
	}' | tee -a "$DIR/floors.tsv"
}

echo "floor	rows/s	CPU-s/M	peak RSS (MiB)"
floor base base
floor one "$(IFS=,; echo "${topics[*]}")"

echo "drain	members	first row (s)	rows/s	etl CPU-s/M	etl_* series"
drain base "$DIR/base.yaml" 1
idle base
stop base >/dev/null
drain one "$DIR/scale.yaml" 1
idle one
stop one >/dev/null
drain three "$DIR/scale.yaml" "$MEMBERS"
stop three >/dev/null

# The stream phase stamps each row with its insert time (DEFAULT now()),
# which exactly-once refuses: a replayed block would differ from the first.
if [[ $DELIVERY == exactly_once ]]; then
	echo "stream: not run under exactly_once (its rows carry the insert time, DEFAULT now(), which exactly-once refuses)"
else
	echo "stream: $MEMBERS members, $STREAM_RATE records/s for ${STREAM_FOR}s, one joins at ${JOIN_AT}s, the first leaves at ${LEAVE_AT}s"
	table stream "ktopic String, kpartition Int32, koffset Int64, member String, ins DateTime DEFAULT now()"
	members=() names=() ports=()
	for i in $(seq "$MEMBERS"); do
		start "stream-m$i" "$DIR/stream.yaml" stream "scale-stream-$$" $((METRICS_BASE + 10 + i))
	done
	# The members have joined and hold their partitions when the group is
	# Stable with every member assigned.
	stable=
	for _ in $(seq 120); do
		SCALE_TABLE=stream SCALE_GROUP=scale-stream-$$ METRICS_LISTEN=off MEMBER=none bin/etl offsets -config "$DIR/stream.yaml" -format json >"$DIR/stream-group.json" 2>"$DIR/stream-group.err" || true
		if grep -q '"state": *"Stable"' "$DIR/stream-group.json" && [[ $(grep -o '"member_id"' "$DIR/stream-group.json" | wc -l) -ge $MEMBERS ]]; then
			stable=1
			break
		fi
		sleep 0.5
	done
	[[ -n "$stable" ]] || { echo "stream: the group of $MEMBERS members is not Stable after 60 s; see $DIR" >&2; cat "$DIR/stream-group.err" >&2; exit 1; }
	rate=$((STREAM_RATE / TOPICS))
	gens=()
	for t in "${topics[@]}"; do
		bin/etl gen -brokers "$BROKER" -topic "$t" -partitions "$PARTS" -count 0 -rate "$rate" -duration "${STREAM_FOR}s" -seed $((100 + ${t#s})) >"$DIR/stream-gen-$t.log" &
		gens+=($!)
	done
	t0=$(now)
	sleep "$JOIN_AT"
	start "stream-m$((MEMBERS + 1))" "$DIR/stream.yaml" stream "scale-stream-$$" $((METRICS_BASE + 10 + MEMBERS + 1))
	sleep $((LEAVE_AT - JOIN_AT))
	kill -TERM "${members[0]}"
	wait "${gens[@]}"
	produced=$(cat "$DIR"/stream-gen-*.log | sed -nE 's/^produced ([0-9]+) records.*/\1/p' | awk '{ s += $1 } END { print s }')
	for _ in $(seq 600); do
		[[ $(q "SELECT count() FROM default.stream") -ge $produced ]] && break
		sleep 0.1
	done
	got=$(q "SELECT count() FROM default.stream")
	# Per partition: the members that wrote it and the longest gap between
	# consecutive insert times of its rows.
	q "SELECT ktopic, kpartition, member, toUInt32(ins) FROM default.stream GROUP BY ktopic, kpartition, member, toUInt32(ins) FORMAT TSV" >"$DIR/stream-times.tsv"
	awk -F'\t' -v got="$got" -v produced="$produced" '
	{ k = $1 "/" $2; if (!((k, $3) in seen)) { seen[k, $3] = 1; members[k]++ } t[k] = t[k] " " $4; keys[k] = 1 }
	END {
		for (k in keys) {
			n = split(t[k], a, " "); m = 0
			# sort the times (insertion sort: a partition has about STREAM_FOR of them)
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { x = a[j]; a[j] = a[j-1]; a[j-1] = x }
			for (i = 2; i <= n; i++) if (a[i] - a[i-1] > m) m = a[i] - a[i-1]
			if (members[k] > 1) { nm++; if (m > mm) mm = m } else { ns++; if (m > ms) ms = m; if (m > 5) late++ }
		}
		printf "stream: %d of %d records landed; %d partitions stayed, longest gap %d s (%d over 5 s); %d moved, longest gap %d s\n", got, produced, ns, ms, late, nm, mm
	}' "$DIR/stream-times.tsv" | tee "$DIR/stream.txt"
	stop stream >/dev/null
fi

echo "idle	RSS (MiB)	CPU (% of a core)"
cat "$DIR/idle.tsv"
echo "peak RSS (MiB) by drain:"
cat "$DIR/peaks.tsv"
if [[ $DELIVERY == exactly_once ]]; then
	for n in base one; do
		awk -v n="$n" '/"metadata_bytes"/ { gsub(/[^0-9]/, "", $0); s += $0; c++ } END { if (c) printf "commit metadata (%s): %.1f bytes per partition over %d partitions\n", n, s / c, c }' "$DIR/$n-offsets.json"
	done
fi
awk -F'\t' 'FILENAME ~ /drains/ { r[$1] = $4; c[$1] = $5; s[$1] = $6 } FILENAME ~ /idle/ { rss[$1] = $2; cpu[$1] = $3 } END {
	printf "scale: %d partitions against 6: drain rows/s %.2f, CPU per row %.2f, idle RSS %.2f, idle CPU %.2f%% against %.2f%% of a core, series %d against %d; three members %.2f of one member'"'"'s rows/s\n",
		'"$((TOPICS * PARTS))"', r["one"] / r["base"], c["one"] / c["base"], rss["one"] / rss["base"], cpu["one"], cpu["base"], s["one"], s["base"], r["three"] / r["one"]
}' "$DIR/drains.tsv" "$DIR/idle.tsv"
awk -F'\t' '{ r[$1] = $2; c[$1] = $3 } END {
	printf "scale floor: franz-go over %d partitions against 6: rows/s %.2f, CPU per row %.2f\n", '"$((TOPICS * PARTS))"', r["one"] / r["base"], c["one"] / c["base"]
}' "$DIR/floors.tsv"
echo "details: $DIR"
