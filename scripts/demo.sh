#!/usr/bin/env bash
# The demo: a fresh local ClickHouse and broker, N generated JSON records,
# the pipeline with a live progress line, and the row count at the end.
#   scripts/demo.sh          run it (N=1000000 by default)
#   scripts/demo.sh stop     stop the servers a demo left running (KEEP=1)
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO_DIR=${DEMO_DIR:-.demo}
N=${N:-1000000}
CH_TCP=${CH_TCP:-19000}
CH_HTTP=${CH_HTTP:-18123}
BROKER=${BROKER:-127.0.0.1:19092}

stop_all() {
	if [[ -f "$DEMO_DIR/broker.pid" ]]; then
		kill "$(cat "$DEMO_DIR/broker.pid")" 2>/dev/null || true
		rm -f "$DEMO_DIR/broker.pid"
	fi
	if [[ -d "$DEMO_DIR/clickhouse" ]]; then
		scripts/clickhouse.sh stop --dir "$DEMO_DIR/clickhouse" >/dev/null 2>&1 || true
	fi
}

if [[ "${1:-}" == "stop" ]]; then
	stop_all
	exit 0
fi

[[ -x bin/etl && -x bin/devbroker ]] || make build
stop_all
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
[[ "${KEEP:-0}" == 1 ]] || trap stop_all EXIT

echo "== starting ClickHouse on 127.0.0.1:$CH_TCP (HTTP $CH_HTTP)"
scripts/clickhouse.sh start --dir "$DEMO_DIR/clickhouse" --tcp-port "$CH_TCP" --http-port "$CH_HTTP" >/dev/null
echo "== starting the broker on $BROKER"
bin/devbroker -listen "$BROKER" -topics events -partitions 6 -data-dir "$DEMO_DIR/broker" >"$DEMO_DIR/broker.log" 2>&1 &
echo $! >"$DEMO_DIR/broker.pid"
for _ in $(seq 100); do
	(echo >"/dev/tcp/${BROKER%:*}/${BROKER#*:}") 2>/dev/null && break
	sleep 0.1
done
q() { curl -sSf "http://127.0.0.1:$CH_HTTP/" --data-binary "$1"; }
bin/etl gen -ddl -table default.events | q "$(cat)"
echo "== generating $N records"
bin/etl gen -brokers "$BROKER" -topic events -count "$N"
echo "== running the pipeline (configs/demo.yaml)"
KAFKA_BROKERS=$BROKER CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP bin/etl -config configs/demo.yaml -progress 2>"$DEMO_DIR/etl.log" &
etl=$!
while [[ "$(q 'SELECT count() FROM default.events')" -lt "$N" ]]; do
	kill -0 "$etl" 2>/dev/null || { echo "etl exited early; see $DEMO_DIR/etl.log" >&2; exit 1; }
	sleep 0.5
done
kill -TERM "$etl"
wait "$etl" || true
echo
echo "== done: ClickHouse has $(q 'SELECT count() FROM default.events') rows in default.events"
q "SELECT kind, count() AS rows, round(sum(amount), 2) AS amount FROM default.events GROUP BY kind ORDER BY kind FORMAT PrettyCompact"
