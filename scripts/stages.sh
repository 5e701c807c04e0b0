#!/usr/bin/env bash
# stages.sh: where etl's CPU went, by pipeline stage, from a CPU profile of
# a run (etl -cpuprofile FILE).
#
#   scripts/stages.sh BINARY PROFILE ROWS
#
# Each sample's stack is read from the leaf up; the first frame that
# belongs to a stage names the sample's stage:
#   fetch      franz-go (kgo) and source/kafka: reading from the broker,
#              decompression, CRC checks, record parsing
#   decode     decode/... and the schema registry client
#   transform  transform
#   encode     the Native encoder (sink/clickhouse/native Encoder, the
#              column nodes' encode, the driver column adapters)
#   insert     the rest of sink/clickhouse and the ClickHouse client (ch-go,
#              clickhouse-go): block compression, network writes, retries
#   pipeline   pipeline, backpressure, dlq: lanes, acks, commits
#   gc         the garbage collector's background workers
#   other      the rest: the scheduler, timers, metrics, idle spinning
# Frames of chunk (column appends, chunk reuse) and of the runtime
# (allocation, memmove) count toward the stage that called them.
#
# It prints each stage's CPU seconds, share and CPU-s per million rows
# (ROWS: the rows the run wrote), and a last line
#   stages (CPU-s/M): fetch F decode D transform T encode E insert I pipeline P gc G other O
set -euo pipefail
bin=$1 profile=$2 rows=$3
go tool pprof -traces "$bin" "$profile" 2>/dev/null | awk -v rows="$rows" '
function unit(v) {
	if (v ~ /ms$/) { sub(/ms$/, "", v); return v / 1000 }
	if (v ~ /us$/) { sub(/us$/, "", v); return v / 1e6 }
	if (v ~ /s$/) { sub(/s$/, "", v); return v + 0 }
	return 0
}
function stage(f) {
	if (f ~ /etl\/decode\// || f ~ /etl\/schemaregistry/) return "decode"
	if (f ~ /etl\/transform/) return "transform"
	if (f ~ /etl\/sink\/clickhouse\/native\.\(\*Encoder\)|etl\/sink\/clickhouse\/native\.\(\*[A-Za-z]+Node\)\.encode|etl\/sink\/clickhouse\.\(\*chgoColumn\)\.(EncodeColumn|WriteColumn)/) return "encode"
	if (f ~ /etl\/sink\// || f ~ /ClickHouse\/ch-go/ || f ~ /ClickHouse\/clickhouse-go/) return "insert"
	if (f ~ /franz-go\/pkg\/kgo/ || f ~ /etl\/source\//) return "fetch"
	if (f ~ /etl\/pipeline/ || f ~ /etl\/backpressure/ || f ~ /etl\/dlq/) return "pipeline"
	if (f ~ /^runtime\.gcBgMarkWorker/) return "gc"
	return ""
}
/^-+\+-+$/ { if (cur != "") { s = st; if (s == "") s = "other"; sec[s] += cur }; cur = ""; st = ""; next }
/^ +[0-9.]+(ms|us|s) +/ {
	cur = unit($1); st = stage($2); next
}
/^ +[^ ]/ && cur != "" {
	if (st == "") st = stage($1)
	next
}
END {
	if (cur != "") { s = st; if (s == "") s = "other"; sec[s] += cur }
	n = split("fetch decode transform encode insert pipeline gc other", order, " ")
	for (i = 1; i <= n; i++) total += sec[order[i]]
	if (total == 0 || rows == 0) { print "stages: no samples"; exit }
	printf "%-10s %8s %6s %10s\n", "stage", "CPU-s", "share", "CPU-s/M"
	line = "stages (CPU-s/M):"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "%-10s %8.2f %5.1f%% %10.3f\n", k, sec[k], 100 * sec[k] / total, sec[k] / (rows / 1e6)
		line = line sprintf(" %s %.3f", k, sec[k] / (rows / 1e6))
	}
	printf "%-10s %8.2f %5.1f%% %10.3f\n", "total", total, 100, total / (rows / 1e6)
	print line
}'
