#!/usr/bin/env bash
# clickhouse.sh runs a private ClickHouse server for development and tests.
#
#   scripts/clickhouse.sh start  [--dir DIR] [--tcp-port N] [--http-port N]
#                                [--interserver-port N] [--extra-config FILE]...
#                                [--watch-pid PID]
#   scripts/clickhouse.sh stop   --dir DIR [--purge]
#   scripts/clickhouse.sh status --dir DIR
#
# start installs Debian's clickhouse-server and clickhouse-client when
# /usr/sbin/clickhouse-server is missing, writes a minimal config into DIR
# (a new temporary folder when --dir is not given), starts the server in the
# background, waits until it answers /ping and prints:
#
#   CLICKHOUSE_DIR=DIR
#   CLICKHOUSE_TCP=127.0.0.1:PORT
#   CLICKHOUSE_HTTP=127.0.0.1:PORT
#
# Starting again with an existing DIR keeps its data; without port flags it
# reuses the ports DIR was last started with (default tcp 19000, http 18123).
#
# Options for replicated tables and clusters (none of them is needed
# otherwise, and without them the config is as above):
#
#   --interserver-port N  sets interserver_http_port (replicas fetch parts
#                         from each other there) and interserver_http_host
#                         127.0.0.1; it is printed as CLICKHOUSE_INTERSERVER
#                         and reused by a later start like the other ports.
#   --extra-config FILE   copies FILE (an XML file with a <yandex> root, e.g.
#                         <zookeeper>, <macros>, <remote_servers>) into
#                         DIR/config.d, which the server merges into its
#                         config; may be repeated. Files copied by an
#                         earlier start stay there.
#   --watch-pid PID       ties the server to process PID (a test binary): a
#                         watchdog stops the server (SIGTERM, then SIGKILL
#                         after 15 s) within a second of PID exiting, and
#                         exits by itself when the server stops.
#
# stop --purge also deletes the server's data (DIR/data, DIR/tmp) once it
# has stopped, and keeps the config and the logs: a benchmark's tables
# take hundreds of MB to GB a run, and runs left behind fill the disk.
# KEEP_DATA=1 in the environment keeps the data all the same (the
# benchmark scripts stop their servers with --purge).
#
# Exit codes: 0 success, 1 failure, 2 usage error, 3 a port is already in use.
set -euo pipefail

readonly SERVER_BIN=/usr/sbin/clickhouse-server
readonly DEFAULT_TCP_PORT=19000
readonly DEFAULT_HTTP_PORT=18123
readonly START_TIMEOUT_S=30
readonly STOP_TIMEOUT_S=15
readonly WATCHDOG_INTERVAL_S=0.5

die() {
	echo "clickhouse.sh: $*" >&2
	exit 1
}

usage() {
	cat >&2 <<'EOF'
usage: clickhouse.sh start  [--dir DIR] [--tcp-port N] [--http-port N]
                           [--interserver-port N] [--extra-config FILE]...
                           [--watch-pid PID]
       clickhouse.sh stop   --dir DIR [--purge]
       clickhouse.sh status --dir DIR
EOF
	exit 2
}

# is_port checks that $1 is a TCP port number.
is_port() {
	[[ $1 =~ ^[0-9]+$ ]] && ((10#$1 > 0 && 10#$1 < 65536))
}

# spawned reports whether the process $1, forked by this script, has not
# exited. Until the forked shell has exec'd the server, its command line is
# still this script's, so alive would say no: the start waits with this.
spawned() {
	local state
	[[ -r /proc/$1/stat ]] || return 1
	state=$(sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ $state != Z && $state != X ]]
}

# alive reports whether pid $1 is a running (not zombie) clickhouse-server
# started with the config of $DIR.
alive() {
	local pid=$1 state cmdline
	[[ -r /proc/$pid/stat ]] || return 1
	# The state is the first field after the parenthesised command name.
	state=$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ $state != Z && $state != X ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *clickhouse-server* && $cmdline == *"--config-file=$DIR/config.xml"* ]]
}

# port_open reports whether something accepts connections on 127.0.0.1:$1.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# read_pid prints the pid recorded in DIR, or nothing.
read_pid() {
	if [[ -f $DIR/clickhouse.pid ]]; then
		tr -dc '0-9' <"$DIR/clickhouse.pid"
	fi
}

print_env() {
	echo "CLICKHOUSE_DIR=$DIR"
	echo "CLICKHOUSE_TCP=127.0.0.1:$TCP_PORT"
	echo "CLICKHOUSE_HTTP=127.0.0.1:$HTTP_PORT"
	if [[ -n $INTERSERVER_PORT ]]; then
		echo "CLICKHOUSE_INTERSERVER=127.0.0.1:$INTERSERVER_PORT"
	fi
}

# start_time prints the start time of pid $1 (field 22 of /proc/PID/stat),
# or nothing when it does not exist; with the pid it names one process.
start_time() {
	sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20 || true
}

log_tail() {
	local f
	for f in "$DIR/log/clickhouse-server.err.log" "$DIR/log/stderr.log"; do
		if [[ -s $f ]]; then
			echo "--- tail of $f ---" >&2
			tail -n 30 "$f" >&2
		fi
	done
}

ensure_installed() {
	if [[ -x $SERVER_BIN ]]; then
		return
	fi
	command -v apt-get >/dev/null 2>&1 || die "$SERVER_BIN is missing and apt-get is not available to install it"
	local sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null 2>&1 || die "$SERVER_BIN is missing and installing it needs root (no sudo found)"
		sudo=(sudo)
	fi
	echo "clickhouse.sh: installing clickhouse-server and clickhouse-client with apt-get" >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 ||
		die "apt-get update failed"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q clickhouse-server clickhouse-client >&2 ||
		die "apt-get install clickhouse-server clickhouse-client failed"
	[[ -x $SERVER_BIN ]] || die "$SERVER_BIN is still missing after apt-get install"
}

write_config() {
	mkdir -p "$DIR/data" "$DIR/tmp" "$DIR/user_files" "$DIR/format_schemas" "$DIR/log" ||
		die "create folders in $DIR"
	cat >"$DIR/config.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse.sh; rewritten on every start. -->
<yandex>
    <logger>
        <level>information</level>
        <log>$DIR/log/clickhouse-server.log</log>
        <errorlog>$DIR/log/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$TCP_PORT</tcp_port>
    <http_port>$HTTP_PORT</http_port>
    <path>$DIR/data/</path>
    <tmp_path>$DIR/tmp/</tmp_path>
    <user_files_path>$DIR/user_files/</user_files_path>
    <format_schema_path>$DIR/format_schemas/</format_schema_path>
    <users_config>$DIR/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>10</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mlock_executable>false</mlock_executable>
$(interserver_config)</yandex>
EOF
	cat >"$DIR/users.xml" <<'EOF'
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse.sh; rewritten on every start. -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
EOF
	printf 'TCP_PORT=%s\nHTTP_PORT=%s\n' "$TCP_PORT" "$HTTP_PORT" >"$DIR/ports.env"
	if [[ -n $INTERSERVER_PORT ]]; then
		printf 'INTERSERVER_PORT=%s\n' "$INTERSERVER_PORT" >>"$DIR/ports.env"
	fi
	local f
	for f in "${EXTRA_CONFIGS[@]}"; do
		mkdir -p "$DIR/config.d" || die "create $DIR/config.d"
		cp -- "$f" "$DIR/config.d/$(basename -- "$f")" || die "copy $f into $DIR/config.d"
	done
}

# interserver_config prints the config lines for --interserver-port, or
# nothing without it.
interserver_config() {
	if [[ -n $INTERSERVER_PORT ]]; then
		printf '    <interserver_http_port>%s</interserver_http_port>\n' "$INTERSERVER_PORT"
		printf '    <interserver_http_host>127.0.0.1</interserver_http_host>\n'
	fi
}

cmd_start() {
	if [[ -z $DIR ]]; then
		DIR=$(mktemp -d "${TMPDIR:-/tmp}/clickhouse.XXXXXX") || die "mktemp -d failed"
		echo "clickhouse.sh: using new folder $DIR" >&2
	fi
	mkdir -p "$DIR" || die "create $DIR"
	DIR=$(cd "$DIR" && pwd -P)

	# Ports: flags first, then what DIR was last started with, then defaults.
	local saved_tcp="" saved_http="" saved_interserver=""
	if [[ -f $DIR/ports.env ]]; then
		saved_tcp=$(sed -n 's/^TCP_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
		saved_http=$(sed -n 's/^HTTP_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
		saved_interserver=$(sed -n 's/^INTERSERVER_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
	fi
	TCP_PORT=${TCP_PORT:-${saved_tcp:-$DEFAULT_TCP_PORT}}
	HTTP_PORT=${HTTP_PORT:-${saved_http:-$DEFAULT_HTTP_PORT}}
	INTERSERVER_PORT=${INTERSERVER_PORT:-$saved_interserver}

	local pid
	pid=$(read_pid)
	if [[ -n $pid ]] && alive "$pid"; then
		# Report the ports it actually runs with.
		TCP_PORT=${saved_tcp:-$TCP_PORT}
		HTTP_PORT=${saved_http:-$HTTP_PORT}
		INTERSERVER_PORT=${saved_interserver:-$INTERSERVER_PORT}
		echo "clickhouse.sh: already running in $DIR (pid $pid)" >&2
		print_env
		return 0
	fi

	# Something else listening on our ports would answer /ping for us.
	local port
	for port in "$TCP_PORT" "$HTTP_PORT" ${INTERSERVER_PORT:+"$INTERSERVER_PORT"}; do
		if port_open "$port"; then
			echo "clickhouse.sh: port $port is already in use on 127.0.0.1" >&2
			exit 3
		fi
	done

	local watch_start=""
	if [[ -n $WATCH_PID ]]; then
		watch_start=$(start_time "$WATCH_PID")
		[[ -n $watch_start ]] || die "--watch-pid $WATCH_PID: no such process"
	fi
	local f
	for f in "${EXTRA_CONFIGS[@]}"; do
		[[ -f $f && -r $f ]] || die "--extra-config $f: not a readable file"
		[[ $f == *.xml ]] || die "--extra-config $f: the server only merges files named *.xml"
	done

	ensure_installed
	write_config
	rm -f "$DIR/clickhouse.pid"

	# setsid + nohup: the server outlives this script and its session; its
	# output goes to files so that callers reading our stdout see EOF.
	# Server logs are appended to, so only lines written after this point
	# are searched for a port collision.
	local log_offset=0
	if [[ -f $DIR/log/clickhouse-server.err.log ]]; then
		log_offset=$(stat -c %s "$DIR/log/clickhouse-server.err.log")
	fi
	: >"$DIR/log/stderr.log"
	setsid nohup "$SERVER_BIN" "--config-file=$DIR/config.xml" \
		</dev/null >>"$DIR/log/stdout.log" 2>>"$DIR/log/stderr.log" &
	pid=$!
	echo "$pid" >"$DIR/clickhouse.pid"

	local deadline=$((SECONDS + START_TIMEOUT_S)) answer
	while :; do
		answer=$(curl -sf --max-time 2 "http://127.0.0.1:$HTTP_PORT/ping" 2>/dev/null || true)
		if [[ $answer == Ok.* ]] && alive "$pid"; then
			break
		fi
		if ! spawned "$pid"; then
			echo "clickhouse.sh: clickhouse-server (pid $pid) exited during startup" >&2
			log_tail
			rm -f "$DIR/clickhouse.pid"
			if tail -c "+$((log_offset + 1))" "$DIR/log/clickhouse-server.err.log" 2>/dev/null |
				cat - "$DIR/log/stderr.log" | grep -q 'Address already in use'; then
				echo "clickhouse.sh: port $TCP_PORT or $HTTP_PORT${INTERSERVER_PORT:+ or $INTERSERVER_PORT} is already in use" >&2
				exit 3
			fi
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "clickhouse.sh: no answer from http://127.0.0.1:$HTTP_PORT/ping after ${START_TIMEOUT_S}s" >&2
			log_tail
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$DIR/clickhouse.pid"
			exit 1
		fi
		sleep 0.05
	done
	if [[ -n $WATCH_PID ]]; then
		setsid nohup bash "${BASH_SOURCE[0]}" _watchdog --dir "$DIR" \
			--watch-pid "$WATCH_PID" --watch-start "$watch_start" --server-pid "$pid" \
			</dev/null >>"$DIR/log/watchdog.log" 2>&1 &
	fi
	print_env
}

# cmd_watchdog waits until the server (SERVER_PID) exits, or stops it when
# the watched process (WATCH_PID, started at WATCH_START) is gone.
cmd_watchdog() {
	[[ -n $DIR && -n $WATCH_PID && -n $WATCH_START && -n $SERVER_PID ]] || usage
	local pid=$SERVER_PID
	while alive "$pid"; do
		if [[ $(start_time "$WATCH_PID") != "$WATCH_START" ]]; then
			echo "$(date -Is) clickhouse.sh: pid $WATCH_PID exited, stopping clickhouse-server pid $pid"
			kill -TERM "$pid" 2>/dev/null || true
			kill -CONT "$pid" 2>/dev/null || true
			local deadline=$((SECONDS + STOP_TIMEOUT_S))
			while alive "$pid" && ((SECONDS < deadline)); do
				sleep 0.05
			done
			kill -KILL "$pid" 2>/dev/null || true
			if [[ $(read_pid) == "$pid" ]]; then
				rm -f "$DIR/clickhouse.pid"
			fi
			return 0
		fi
		sleep "$WATCHDOG_INTERVAL_S"
	done
}

cmd_stop() {
	[[ -n $DIR ]] || usage
	[[ -d $DIR ]] || die "no such folder: $DIR"
	DIR=$(cd "$DIR" && pwd -P)
	local pid
	pid=$(read_pid)
	if [[ -z $pid ]] || ! alive "$pid"; then
		echo "clickhouse.sh: not running in $DIR" >&2
		rm -f "$DIR/clickhouse.pid"
		purge
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	# A stopped (SIGSTOP) server must run again to handle SIGTERM.
	kill -CONT "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT_S))
	while alive "$pid"; do
		if ((SECONDS >= deadline)); then
			echo "clickhouse.sh: pid $pid still running after ${STOP_TIMEOUT_S}s, sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			local i
			for i in $(seq 1 100); do
				alive "$pid" || break
				sleep 0.05
			done
			break
		fi
		sleep 0.05
	done
	if alive "$pid"; then
		die "pid $pid survived SIGKILL"
	fi
	rm -f "$DIR/clickhouse.pid"
	echo "clickhouse.sh: stopped pid $pid" >&2
	purge
}

# purge deletes a stopped server's data under --purge.
purge() {
	[[ -n $PURGE && -z ${KEEP_DATA:-} ]] || return 0
	rm -rf "$DIR/data" "$DIR/tmp"
	echo "clickhouse.sh: deleted the data in $DIR" >&2
}

cmd_status() {
	[[ -n $DIR ]] || usage
	[[ -d $DIR ]] || die "no such folder: $DIR"
	DIR=$(cd "$DIR" && pwd -P)
	local pid
	pid=$(read_pid)
	if [[ -z $pid ]] || ! alive "$pid"; then
		echo "stopped"
		exit 1
	fi
	if [[ -f $DIR/ports.env ]]; then
		TCP_PORT=$(sed -n 's/^TCP_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
		HTTP_PORT=$(sed -n 's/^HTTP_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
		INTERSERVER_PORT=$(sed -n 's/^INTERSERVER_PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
	fi
	if [[ $(curl -sf --max-time 2 "http://127.0.0.1:$HTTP_PORT/ping" 2>/dev/null || true) == Ok.* ]]; then
		echo "running pid=$pid"
	else
		echo "running pid=$pid (not answering /ping)"
	fi
	print_env
}

main() {
	(($# >= 1)) || usage
	local cmd=$1
	shift
	DIR="" TCP_PORT="" HTTP_PORT="" INTERSERVER_PORT=""
	EXTRA_CONFIGS=() WATCH_PID="" WATCH_START="" SERVER_PID="" PURGE=""
	while (($# > 0)); do
		case $1 in
		--dir)
			(($# >= 2)) || usage
			DIR=$2
			shift 2
			;;
		--dir=*)
			DIR=${1#--dir=}
			shift
			;;
		--tcp-port | --http-port)
			(($# >= 2)) || usage
			is_port "$2" || die "$1: not a port: $2"
			if [[ $1 == --tcp-port ]]; then TCP_PORT=$((10#$2)); else HTTP_PORT=$((10#$2)); fi
			shift 2
			;;
		--tcp-port=* | --http-port=*)
			local v=${1#*=}
			is_port "$v" || die "${1%%=*}: not a port: $v"
			if [[ $1 == --tcp-port=* ]]; then TCP_PORT=$((10#$v)); else HTTP_PORT=$((10#$v)); fi
			shift
			;;
		--interserver-port | --interserver-port=*)
			local v
			if [[ $1 == *=* ]]; then
				v=${1#*=}
				shift
			else
				(($# >= 2)) || usage
				v=$2
				shift 2
			fi
			is_port "$v" || die "--interserver-port: not a port: $v"
			INTERSERVER_PORT=$((10#$v))
			;;
		--extra-config | --extra-config=*)
			if [[ $1 == *=* ]]; then
				EXTRA_CONFIGS+=("${1#*=}")
				shift
			else
				(($# >= 2)) || usage
				EXTRA_CONFIGS+=("$2")
				shift 2
			fi
			;;
		--watch-pid | --watch-start | --server-pid)
			(($# >= 2)) || usage
			[[ $2 =~ ^[0-9]+$ ]] || die "$1: not a number: $2"
			case $1 in
			--watch-pid) WATCH_PID=$2 ;;
			--watch-start) WATCH_START=$2 ;;
			--server-pid) SERVER_PID=$2 ;;
			esac
			shift 2
			;;
		--purge)
			PURGE=1
			shift
			;;
		-h | --help) usage ;;
		*)
			echo "clickhouse.sh: unknown argument: $1" >&2
			usage
			;;
		esac
	done
	case $cmd in
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	_watchdog) cmd_watchdog ;;
	*) usage ;;
	esac
}

main "$@"
