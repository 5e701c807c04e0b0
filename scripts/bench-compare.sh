#!/usr/bin/env bash
# bench-compare.sh: the same JSON backlog through etl and through
# ClickHouse's own Kafka engine (a Kafka table and a materialized view into
# the target table), on one ClickHouse and one local broker.
#
#   N=2000000 RUNS=3 scripts/bench-compare.sh      (make bench-compare)
#
# N generated records (6 columns, epoch-second timestamps, which both
# readers take, lz4-compressed batches, 6 partitions) are produced once.
# Then RUNS rounds each run etl and the engine, alternating which goes
# first, each into a fresh table with a fresh consumer group, and each
# until all N rows are in its table:
#   - rows/s is N over the time from the start (etl's process start; the
#     engine's CREATE MATERIALIZED VIEW) to the moment the count reaches N;
#   - etl's CPU is its own process's (utime + stime), from start to end;
#   - the server's CPU is ClickHouse's from the same start until the
#     table's merges have stopped (no merge of it running for SETTLE_QUIET
#     seconds, 1 by default, at most SETTLE_MAX, 30, after the count
#     reached N): for etl, what its inserts and the merges of their parts
#     cost the server; for the engine, everything. Each arm starts on a
#     quiet server, so no arm pays for another's merges. SETTLE_QUIET=0
#     stops at the count, as before.
# The two tables must hold the same rows (count and column sums), or the
# run fails. The last line is
#   compare: etl R1 rows/s C1 CPU-s/M; kafka-engine R2 rows/s C2 CPU-s/M; ratio X
# with the medians over the rounds: C1 is etl's process, C2 the server's,
# X = R1 / R2.
#
# The engine's settings are the best found here (docs/BENCHMARKS.md):
# <kafka> auto_offset_reset=smallest (a new group reads nothing without
# it), queued_min_messages=ENGINE_QUEUED (1000000); kafka_num_consumers=1
# (more produced duplicates on 18.16); kafka_max_block_size=ENGINE_BLOCK
# (1048576; empty for the server's default) when the server takes it; the
# profile's stream_flush_interval_ms=ENGINE_FLUSH_MS (2000; empty for the
# server's 7500), after which the engine writes a block that is not full.
# etl runs configs/bench.yaml, its defaults.
#
# TUNED=configs/bench-1m.yaml adds a third arm, etl-tuned: etl with that
# configuration (batches of up to 1M rows), to compare the server's CPU
# per row for etl's default inserts with 1M-row inserts of the same rows,
# and the defaults' rows/s with the tuned configuration's.
#
# Unless FLOORS=0, each round also runs the machine's two floors on the
# same topic and server:
#   - franz-go: bin/floorconsumer, a franz-go consumer with franz-go's
#     default fetch sizes in a new group, reading every record and
#     discarding it (the client floor: what any Go consumer pays);
#   - native-file: clickhouse-client inserting the same rows (etl's table
#     of round 1, dumped once as a Native file) into a fresh table (the
#     server floor: what the server pays for the rows from its own
#     client), until merges settle, as for etl.
# Every arm's table must hold the same rows. Each arm's peak RSS (etl's
# from its resource usage log line, the others' from GNU time) and the
# active parts once merges stopped are listed too, and the last line is
#   floors: etl/native-file rows/s A; server CPU etl/native-file B; etl CPU/franz-go C; etl/kafka-engine rows/s D
# with the ratios of the arms' medians.
#
# With gnuplot installed (Debian's gnuplot-nox), CHARTS=DIR draws
# DIR/compare-rows.png (rows in ClickHouse over time, each run of each arm)
# and DIR/compare-inflight.png (etl's in-flight bytes against its budget).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000000}
RUNS=${RUNS:-3}
CONFIG=${CONFIG:-configs/bench.yaml}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/etl-compare.XXXXXX)}
mkdir -p "$DIR"
CH_TCP=${CH_TCP:-29100}
CH_HTTP=${CH_HTTP:-28223}
BROKER=${BROKER:-127.0.0.1:29192}
METRICS=${METRICS:-127.0.0.1:29190}
ENGINE_QUEUED=${ENGINE_QUEUED:-1000000}
ENGINE_BLOCK=${ENGINE_BLOCK-1048576}
ENGINE_FLUSH_MS=${ENGINE_FLUSH_MS-2000}
ENGINE_PART_FETCH=${ENGINE_PART_FETCH:-} # librdkafka's max.partition.fetch.bytes (1 MiB by default)
TIMEOUT=${TIMEOUT:-300} # seconds an arm may take before the run fails
FLOORS=${FLOORS:-1}
# SETTLE_QUIET, SETTLE_MAX: scripts/settle.sh
. scripts/settle.sh
[[ -x bin/etl && -x bin/devbroker && -x bin/floorconsumer ]] || make build >/dev/null
if [[ $FLOORS != 0 ]]; then
	command -v clickhouse-client >/dev/null || { echo "bench-compare: FLOORS needs clickhouse-client" >&2; exit 1; }
	/usr/bin/time -f %M true 2>/dev/null || { echo "bench-compare: FLOORS needs GNU time (/usr/bin/time)" >&2; exit 1; }
fi

cleanup() {
	[[ -n "${etl:-}" ]] && kill -9 "$etl" 2>/dev/null || true
	[[ -n "${broker:-}" ]] && kill "$broker" 2>/dev/null || true
	scripts/clickhouse.sh stop --dir "$DIR/clickhouse" --purge >/dev/null 2>&1 || true
	[[ -n ${KEEP_DATA:-} ]] || rm -f "$DIR/rows.native" # the Native-file arm's rows: 49 bytes a row
}
trap cleanup EXIT

cat >"$DIR/kafka.xml" <<XML
<yandex>
  <kafka>
    <auto_offset_reset>smallest</auto_offset_reset>
    <queued_min_messages>$ENGINE_QUEUED</queued_min_messages>${ENGINE_PART_FETCH:+
    <max_partition_fetch_bytes>$ENGINE_PART_FETCH</max_partition_fetch_bytes>}
  </kafka>
</yandex>
XML
if [[ -n "$ENGINE_FLUSH_MS" ]]; then
	# The engine writes a block when it is full or after
	# stream_flush_interval_ms (a profile setting, 7500 by default).
	mkdir -p "$DIR/clickhouse/users.d"
	cat >"$DIR/clickhouse/users.d/flush.xml" <<XML
<yandex><profiles><default><stream_flush_interval_ms>$ENGINE_FLUSH_MS</stream_flush_interval_ms></default></profiles></yandex>
XML
fi
scripts/clickhouse.sh start --dir "$DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" --extra-config "$DIR/kafka.xml" >/dev/null
bin/devbroker -listen "$BROKER" -topics events -partitions 6 >"$DIR/broker.log" 2>&1 &
broker=$!
for _ in $(seq 100); do
	(echo >"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null && break
	sleep 0.1
done
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/" --data-binary "$1"; }
# CPU seconds a process has used so far (utime + stime).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
now() { date +%s.%N; }
inflight() { curl -sf --max-time 1 "http://$METRICS/metrics" | awk '/^etl_backpressure_inflight_bytes[ {]/ { v = $NF } /^etl_backpressure_budget_bytes[ {]/ { b = $NF } END { printf "%d %d", v, b }'; }
chpid=$(cat "$DIR/clickhouse/clickhouse.pid")

bin/etl gen -brokers "$BROKER" -topic events -partitions 6 -count "$N" -ts seconds -compression lz4 >"$DIR/gen.log"
cat "$DIR/gen.log"
ddl=$(bin/etl gen -ddl -table default.x) # CREATE TABLE ... default.x (COLUMNS) ENGINE = ... ORDER BY KEY
cols=$(sed -E 's/^[^(]*\((.*)\) ENGINE.*/\1/' <<<"$ddl")
order=$(sed -E 's/.* ORDER BY (.*)$/\1/' <<<"$ddl")
# The sums both tables must agree on: every column goes into one.
check='SELECT count(), sum(id), sum(toUInt32(ts)), sum(user_id), sum(cityHash64(kind)), sum(toInt64(round(amount * 1000))), countIf(isNull(note)), sum(cityHash64(ifNull(note, '"''"')))'

# wait_rows TABLE T0 SERIES: polls TABLE's count every 50 ms until it is N,
# writing "seconds-since-T0 count [inflight budget]" lines to SERIES, and
# sets first (seconds to the first row) and end (the time N was reached).
wait_rows() {
	local table=$1 t0=$2 series=$3 c t deadline
	first= end=
	deadline=$(awk -v t="$t0" -v s="$TIMEOUT" 'BEGIN { printf "%d", t + s }')
	: >"$series"
	while true; do
		c=$(q "SELECT count() FROM $table")
		t=$(now)
		if [[ -n "${etl:-}" ]]; then
			echo "$(awk -v t="$t" -v s="$t0" 'BEGIN { printf "%.3f", t - s }') $c $(inflight)" >>"$series"
		else
			echo "$(awk -v t="$t" -v s="$t0" 'BEGIN { printf "%.3f", t - s }') $c" >>"$series"
		fi
		[[ -z "$first" && "$c" -gt 0 ]] && first=$(awk -v t="$t" -v s="$t0" 'BEGIN { printf "%.3f", t - s }')
		if [[ "$c" -ge "$N" ]]; then
			end=$t
			return 0
		fi
		if [[ -n "${etl:-}" ]] && ! kill -0 "$etl" 2>/dev/null; then
			echo "etl exited early; see its log in $DIR" >&2
			tail -5 "$DIR"/etl*-"$r".log >&2
			exit 1
		fi
		if [[ ${t%.*} -ge $deadline ]]; then
			echo "$table has $c of $N rows after ${TIMEOUT}s; see $DIR" >&2
			exit 1
		fi
		sleep 0.05
	done
}

# settle TABLE: waits for the merges of TABLE (default.NAME) to stop
# (scripts/settle.sh) and lists its parts in parts.tsv.
settle() {
	local name=${1#default.}
	settle_merges "$name"
	q "SELECT '$name', countIf(level = 0), countIf(active), max(level) FROM system.parts WHERE database = 'default' AND table = '$name' FORMAT TSV" >>"$DIR/parts.tsv"
}

results=$DIR/results.tsv
: >"$results"
# run_etl ROUND [ARM CONFIG]: etl's arm (etl with $CONFIG, or ARM with
# CONFIG) into the table default.ARM_ROUND.
run_etl() {
	local r=$1 arm=${2:-etl} config=${3:-$CONFIG} ch0 ch1 t0 cpu
	local name=${arm//-/_}_$r
	local table=default.$name
	q "CREATE TABLE $table ($cols) ENGINE = MergeTree ORDER BY $order"
	ch0=$(cpu_of "$chpid")
	t0=$(now)
	KAFKA_BROKERS=$BROKER CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP METRICS_LISTEN=$METRICS \
		BENCH_TABLE=$name BENCH_GROUP=compare-$arm-$r-$$ \
		bin/etl -config "$config" 2>"$DIR/$arm-$r.log" &
	etl=$!
	wait_rows "$table" "$t0" "$DIR/$arm-$r.series"
	cpu=$(cpu_of "$etl")
	curl -sf --max-time 2 "http://$METRICS/metrics" >"$DIR/$arm-$r.metrics" || true
	kill -TERM "$etl"
	wait "$etl" || true
	etl=
	settle "$table"
	ch1=$(cpu_of "$chpid")
	rss=$(sed -nE 's/.*resource usage.*max_rss_bytes=([0-9]+).*/\1/p' "$DIR/$arm-$r.log" | tail -1)
	awk -v arm="$arm" -v r="$r" -v n="$N" -v t0="$t0" -v e="$end" -v cpu="$cpu" -v ch="$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { print b - a }')" -v f="$first" -v rss="${rss:-0}" -v parts="$(active_parts "$name")" 'BEGIN {
		el = e - t0
		printf "%s\t%d\t%.0f\t%.3f\t%.3f\t%.2f\t%.0f\t%d\n", arm, r, n / el, cpu / (n / 1e6), ch / (n / 1e6), f, rss / 1048576, parts
	}' >>"$results"
}

# active_parts NAME: the active parts of default.NAME.
active_parts() { q "SELECT count() FROM system.parts WHERE database = 'default' AND table = '$1' AND active"; }

# timed OUT CMD...: runs CMD under GNU time, which writes "elapsed user
# system maxrss_kb" to OUT.
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$out" "$@"
}

# run_franz ROUND: the client floor, bin/floorconsumer over the topic.
run_franz() {
	local r=$1 t0 e
	t0=$(now)
	timed "$DIR/franz-$r.time" bin/floorconsumer -brokers "$BROKER" -topic events -group "floor-$r-$$" -count "$N" -timeout "${TIMEOUT}s" >"$DIR/franz-$r.log"
	e=$(now)
	read -r _ user sys rss <"$DIR/franz-$r.time"
	awk -v r="$r" -v n="$N" -v t0="$t0" -v e="$e" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v rss="$rss" 'BEGIN {
		printf "franz-go\t%d\t%.0f\t%.3f\t-\t-\t%.0f\t-\n", r, n / (e - t0), cpu / (n / 1e6), rss / 1024
	}' >>"$results"
}

# run_native ROUND: the server floor, clickhouse-client inserting
# $DIR/rows.native into default.native_ROUND.
run_native() {
	local r=$1 table=default.native_$1 ch0 ch1 t0 e
	q "CREATE TABLE $table ($cols) ENGINE = MergeTree ORDER BY $order"
	ch0=$(cpu_of "$chpid")
	t0=$(now)
	timed "$DIR/native-$r.time" clickhouse-client --host 127.0.0.1 --port "$CH_TCP" --query "INSERT INTO $table FORMAT Native" <"$DIR/rows.native"
	e=$(now)
	settle "$table"
	ch1=$(cpu_of "$chpid")
	read -r _ user sys rss <"$DIR/native-$r.time"
	awk -v r="$r" -v n="$N" -v t0="$t0" -v e="$e" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v ch="$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { print b - a }')" -v rss="$rss" -v parts="$(active_parts "native_$r")" 'BEGIN {
		printf "native-file\t%d\t%.0f\t%.3f\t%.3f\t-\t%.0f\t%d\n", r, n / (e - t0), cpu / (n / 1e6), ch / (n / 1e6), rss / 1024, parts
	}' >>"$results"
}

run_engine() {
	local r=$1 table=default.engine_$1 ch0 ch1 t0 settings
	q "CREATE TABLE $table ($cols) ENGINE = MergeTree ORDER BY $order"
	settings="kafka_broker_list = '$BROKER', kafka_topic_list = 'events', kafka_group_name = 'compare-engine-$r-$$', kafka_format = 'JSONEachRow', kafka_num_consumers = 1"
	if [[ -n "$ENGINE_BLOCK" ]] && q "CREATE TABLE default.kafka_probe ($cols) ENGINE = Kafka SETTINGS $settings, kafka_max_block_size = $ENGINE_BLOCK" 2>/dev/null; then
		q "DROP TABLE default.kafka_probe"
		settings="$settings, kafka_max_block_size = $ENGINE_BLOCK"
	fi
	q "CREATE TABLE default.kafka_$r ($cols) ENGINE = Kafka SETTINGS $settings"
	ch0=$(cpu_of "$chpid")
	t0=$(now)
	q "CREATE MATERIALIZED VIEW default.mv_$r TO $table AS SELECT * FROM default.kafka_$r"
	wait_rows "$table" "$t0" "$DIR/engine-$r.series"
	q "DROP TABLE default.mv_$r"
	q "DROP TABLE default.kafka_$r"
	settle "$table"
	ch1=$(cpu_of "$chpid")
	awk -v r="$r" -v n="$N" -v t0="$t0" -v e="$end" -v ch="$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { print b - a }')" -v f="$first" -v parts="$(active_parts "engine_$r")" 'BEGIN {
		el = e - t0
		printf "kafka-engine\t%d\t%.0f\t%.3f\t%.3f\t%.2f\t-\t%d\n", r, n / el, ch / (n / 1e6), ch / (n / 1e6), f, parts
	}' >>"$results"
}

# floors ROUND: the two floors' arms, the Native file made from etl's
# first table when it does not exist yet.
floors() {
	[[ $FLOORS == 0 ]] && return 0
	if [[ ! -s "$DIR/rows.native" ]]; then
		clickhouse-client --host 127.0.0.1 --port "$CH_TCP" --query "SELECT * FROM default.etl_1 FORMAT Native" >"$DIR/rows.native"
	fi
	run_franz "$1"
	run_native "$1"
}

for r in $(seq "$RUNS"); do
	if ((r % 2)); then
		run_etl "$r"
		run_engine "$r"
		[[ -n "${TUNED:-}" ]] && run_etl "$r" etl-tuned "$TUNED"
		floors "$r"
	else
		floors "$r"
		[[ -n "${TUNED:-}" ]] && run_etl "$r" etl-tuned "$TUNED"
		run_engine "$r"
		run_etl "$r"
	fi
	a=$(q "$check FROM default.etl_$r")
	native=
	[[ $FLOORS != 0 ]] && native=native_$r
	for t in engine_$r ${TUNED:+etl_tuned_$r} $native; do
		b=$(q "$check FROM default.$t")
		if [[ "$a" != "$b" ]]; then
			printf 'round %d: the tables differ\n  etl_%d: %s\n  %s: %s\n' "$r" "$r" "$a" "$t" "$b" >&2
			exit 1
		fi
	done
	tail -"$((${TUNED:+1} + 2 + (FLOORS != 0 ? 2 : 0)))" "$results" | sed "s/^/round $r: /"
done

echo "arm	run	rows/s	CPU-s/M (own)	server CPU-s/M	first row (s)	peak RSS (MiB)	active parts"
sort "$results"
if [[ -n "${CHARTS:-}" ]]; then
	if command -v gnuplot >/dev/null; then
		mkdir -p "$CHARTS"
		plots= sep=
		for r in $(seq "$RUNS"); do
			plots="$plots$sep'$DIR/etl-$r.series' using 1:(\$2/1e6) with lines lw 2 title 'etl, run $r', '$DIR/engine-$r.series' using 1:(\$2/1e6) with lines dt 2 lw 2 title 'Kafka engine, run $r'"
			[[ -n "${TUNED:-}" ]] && plots="$plots, '$DIR/etl-tuned-$r.series' using 1:(\$2/1e6) with lines dt 3 lw 2 title 'etl tuned, run $r'"
			sep=", "
		done
		gnuplot <<GP
set terminal pngcairo size 1000,500 noenhanced
set output '$CHARTS/compare-rows.png'
set title 'Rows in ClickHouse: $N JSON records (6 partitions, lz4), etl against the Kafka engine'
set xlabel 'seconds from start'
set ylabel 'million rows'
set key outside right top
set grid
plot $plots
GP
		plots= sep=
		for r in $(seq "$RUNS"); do
			plots="$plots$sep'$DIR/etl-$r.series' using 1:(\$3/1048576) with lines lw 2 title 'in flight, run $r'"
			sep=", "
		done
		gnuplot <<GP
set terminal pngcairo size 900,500 noenhanced
set output '$CHARTS/compare-inflight.png'
set title 'etl in-flight bytes while the backlog drains (budget: dashed)'
set xlabel 'seconds from start'
set ylabel 'MiB'
set key top right
set grid
plot $plots, '$DIR/etl-1.series' using 1:(\$4/1048576) with lines dt 2 lc rgb 'black' title 'budget'
GP
		echo "charts: $CHARTS/compare-rows.png $CHARTS/compare-inflight.png"
	else
		echo "charts: gnuplot is not installed (apt-get install gnuplot-nox)" >&2
	fi
fi
awk -F'\t' '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == "etl" { er[++ne] = $3; ec[ne] = $4; es[ne] = $5; em[ne] = $7; ep[ne] = $8 }
$1 == "kafka-engine" { kr[++nk] = $3; kc[nk] = $4; kp[nk] = $8 }
$1 == "etl-tuned" { tr[++nt] = $3; tc[nt] = $4; ts[nt] = $5 }
$1 == "franz-go" { fr[++nf] = $3; fc[nf] = $4; fm[nf] = $7 }
$1 == "native-file" { nr[++nn] = $3; nc[nn] = $4; ns[nn] = $5; nm[nn] = $7; np[nn] = $8 }
END {
	R1 = median(er, ne); C1 = median(ec, ne); S1 = median(es, ne); R2 = median(kr, nk); C2 = median(kc, nk)
	printf "medians:\narm\trows/s\tclient CPU-s/M\tserver CPU-s/M\tpeak RSS (MiB)\tactive parts\n"
	printf "etl\t%.0f\t%.3f\t%.3f\t%.0f\t%g\n", R1, C1, S1, median(em, ne), median(ep, ne)
	printf "kafka-engine\t%.0f\t(in server)\t%.3f\t(server)\t%g\n", R2, C2, median(kp, nk)
	if (nf > 0) printf "franz-go\t%.0f\t%.3f\t-\t%.0f\t-\n", median(fr, nf), median(fc, nf), median(fm, nf)
	if (nn > 0) printf "native-file\t%.0f\t%.3f\t%.3f\t%.0f\t%g\n", median(nr, nn), median(nc, nn), median(ns, nn), median(nm, nn), median(np, nn)
	printf "server CPU per million rows: %.2f CPU-s for etl'"'"'s inserts, %.2f CPU-s for the Kafka engine\n", S1, C2
	if (nt > 0) {
		R3 = median(tr, nt); C3 = median(tc, nt); S3 = median(ts, nt)
		printf "tuned: etl-tuned %.0f rows/s %.2f CPU-s/M, server %.2f CPU-s/M; the defaults reach %.0f%% of its rows/s, and their inserts cost the server %.0f%% of its\n", R3, C3, S3, 100 * R1 / R3, 100 * S1 / S3
	}
	printf "compare: etl %.0f rows/s %.2f CPU-s/M; kafka-engine %.0f rows/s %.2f CPU-s/M; ratio %.2f\n", R1, C1, R2, C2, R1 / R2
	if (nf > 0 && nn > 0)
		printf "floors: etl/native-file rows/s %.2f; server CPU etl/native-file %.2f; etl CPU/franz-go %.2f; etl/kafka-engine rows/s %.2f\n",
			R1 / median(nr, nn), S1 / median(ns, nn), C1 / median(fc, nf), R1 / R2
}' "$results"
