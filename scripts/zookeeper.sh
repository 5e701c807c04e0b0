#!/usr/bin/env bash
# zookeeper.sh runs a private ZooKeeper server (standalone, Debian's package)
# for development and tests, e.g. for ClickHouse's ReplicatedMergeTree.
#
#   scripts/zookeeper.sh start  [--dir DIR] [--port N] [--watch-pid PID]
#   scripts/zookeeper.sh stop   --dir DIR
#   scripts/zookeeper.sh status --dir DIR
#
# start installs Debian's zookeeper package (not zookeeperd, which would add
# a system service) when /usr/share/java/zookeeper.jar is missing, writes a
# zoo.cfg into DIR (a new temporary folder when --dir is not given) with the
# client port on 127.0.0.1 only, no admin server (8080) and no other port,
# starts the server in the background, waits until it serves requests (its
# answer to `srvr` shows its mode: `ruok` answers `imok` before that) and
# prints:
#
#   ZOOKEEPER_DIR=DIR
#   ZOOKEEPER_ADDR=127.0.0.1:PORT
#
# Starting again with an existing DIR keeps its data (DIR/data); without
# --port it reuses the port DIR was last started with (default 12181).
#
# --watch-pid PID ties the server to process PID (a test binary): a small
# watchdog stops the server (SIGTERM, then SIGKILL) within about a second of
# PID exiting, so nothing is left running when a test process dies without
# running its cleanup. The watchdog exits by itself when the server stops.
#
# Exit codes: 0 success, 1 failure, 2 usage error, 3 the port is already in use.
set -euo pipefail

readonly ZK_JAR=/usr/share/java/zookeeper.jar
# zookeeper.jar's manifest names its other dependencies; these two give
# slf4j a log4j 1.2 backend (both come with the package's dependencies).
readonly LOG_JARS=/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
readonly ZK_MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain
readonly DEFAULT_PORT=12181
readonly START_TIMEOUT_S=60
readonly STOP_TIMEOUT_S=15

die() {
	echo "zookeeper.sh: $*" >&2
	exit 1
}

usage() {
	cat >&2 <<'EOF'
usage: zookeeper.sh start  [--dir DIR] [--port N] [--watch-pid PID]
       zookeeper.sh stop   --dir DIR
       zookeeper.sh status --dir DIR
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

# alive reports whether pid $1 is a running (not zombie) ZooKeeper started
# with the config of $DIR.
alive() {
	local pid=$1 state cmdline
	[[ -r /proc/$pid/stat ]] || return 1
	# The state is the first field after the parenthesised command name.
	state=$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ $state != Z && $state != X ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"$ZK_MAIN $DIR/zoo.cfg"* ]]
}

# start_time prints the start time of pid $1 (field 22 of /proc/PID/stat),
# or nothing when it does not exist; with the pid it names one process.
start_time() {
	sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20 || true
}

# port_open reports whether something accepts connections on 127.0.0.1:$1.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# serving reports whether the server on 127.0.0.1:$1 serves requests.
serving() {
	[[ $(four_letter "$1" srvr) == *"Mode: "* ]]
}

# four_letter sends the four-letter command $2 to 127.0.0.1:$1 and prints
# the answer (at most 2 s).
four_letter() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}

# read_pid prints the pid recorded in DIR, or nothing.
read_pid() {
	if [[ -f $DIR/zookeeper.pid ]]; then
		tr -dc '0-9' <"$DIR/zookeeper.pid"
	fi
}

print_env() {
	echo "ZOOKEEPER_DIR=$DIR"
	echo "ZOOKEEPER_ADDR=127.0.0.1:$PORT"
}

log_tail() {
	if [[ -s $DIR/log/zookeeper.log ]]; then
		echo "--- tail of $DIR/log/zookeeper.log ---" >&2
		tail -n 30 "$DIR/log/zookeeper.log" >&2
	fi
}

ensure_installed() {
	if [[ -f $ZK_JAR ]] && command -v java >/dev/null 2>&1; then
		return
	fi
	command -v apt-get >/dev/null 2>&1 || die "$ZK_JAR or java is missing and apt-get is not available to install them"
	local sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null 2>&1 || die "$ZK_JAR is missing and installing it needs root (no sudo found)"
		sudo=(sudo)
	fi
	echo "zookeeper.sh: installing zookeeper with apt-get" >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 ||
		die "apt-get update failed"
	# Only the package with the server's jars: zookeeperd would add a
	# system service.
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper >&2 ||
		die "apt-get install zookeeper failed"
	[[ -f $ZK_JAR ]] || die "$ZK_JAR is still missing after apt-get install"
	command -v java >/dev/null 2>&1 || die "java is still missing after apt-get install zookeeper"
}

write_config() {
	mkdir -p "$DIR/data" "$DIR/conf" "$DIR/log" || die "create folders in $DIR"
	# forceSync=no: a test server need not survive a power cut, and fsync
	# on every write slows ClickHouse's inserts on a busy disk; SIGKILL
	# loses nothing (the writes are in the page cache).
	cat >"$DIR/zoo.cfg" <<EOF
# Written by scripts/zookeeper.sh; rewritten on every start.
tickTime=2000
dataDir=$DIR/data
clientPort=$PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
maxClientCnxns=0
forceSync=no
preAllocSize=4096
EOF
	cat >"$DIR/conf/log4j.properties" <<'EOF'
# Written by scripts/zookeeper.sh; rewritten on every start.
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n
EOF
	printf 'PORT=%s\n' "$PORT" >"$DIR/ports.env"
}

# stop_pid stops pid $1 with SIGTERM, then SIGKILL after STOP_TIMEOUT_S.
stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || true
	# A stopped (SIGSTOP) server must run again to handle SIGTERM.
	kill -CONT "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT_S))
	while alive "$pid"; do
		if ((SECONDS >= deadline)); then
			echo "zookeeper.sh: pid $pid still running after ${STOP_TIMEOUT_S}s, sending SIGKILL" >&2
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
	! alive "$pid"
}

cmd_start() {
	if [[ -z $DIR ]]; then
		DIR=$(mktemp -d "${TMPDIR:-/tmp}/zookeeper.XXXXXX") || die "mktemp -d failed"
		echo "zookeeper.sh: using new folder $DIR" >&2
	fi
	mkdir -p "$DIR" || die "create $DIR"
	DIR=$(cd "$DIR" && pwd -P)

	local saved_port=""
	if [[ -f $DIR/ports.env ]]; then
		saved_port=$(sed -n 's/^PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
	fi
	PORT=${PORT:-${saved_port:-$DEFAULT_PORT}}

	local pid
	pid=$(read_pid)
	if [[ -n $pid ]] && alive "$pid"; then
		PORT=${saved_port:-$PORT}
		echo "zookeeper.sh: already running in $DIR (pid $pid)" >&2
		print_env
		return 0
	fi

	# Something else listening on our port would answer for us.
	if port_open "$PORT"; then
		echo "zookeeper.sh: port $PORT is already in use on 127.0.0.1" >&2
		exit 3
	fi

	local watch_start=""
	if [[ -n $WATCH_PID ]]; then
		watch_start=$(start_time "$WATCH_PID")
		[[ -n $watch_start ]] || die "--watch-pid $WATCH_PID: no such process"
	fi

	ensure_installed
	write_config
	rm -f "$DIR/zookeeper.pid"

	# setsid + nohup: the server outlives this script and its session; its
	# output goes to a file so that callers reading our stdout see EOF.
	# The log is appended to, so only lines written after this point are
	# searched for a port collision.
	local log_offset=0
	if [[ -f $DIR/log/zookeeper.log ]]; then
		log_offset=$(stat -c %s "$DIR/log/zookeeper.log")
	fi
	# -Dzookeeper.admin.enableServer=false repeats zoo.cfg's setting: the
	# admin server (Jetty on 8080) must never start.
	setsid nohup java -Xmx512m -XX:+UseSerialGC \
		-Dzookeeper.admin.enableServer=false \
		-Dzookeeper.jmx.log4j.disable=true \
		-cp "$DIR/conf:$ZK_JAR:$LOG_JARS" \
		"$ZK_MAIN" "$DIR/zoo.cfg" \
		</dev/null >>"$DIR/log/zookeeper.log" 2>&1 &
	pid=$!
	echo "$pid" >"$DIR/zookeeper.pid"

	local deadline=$((SECONDS + START_TIMEOUT_S))
	while :; do
		if serving "$PORT" && alive "$pid"; then
			break
		fi
		if ! spawned "$pid"; then
			echo "zookeeper.sh: ZooKeeper (pid $pid) exited during startup" >&2
			log_tail
			rm -f "$DIR/zookeeper.pid"
			if tail -c "+$((log_offset + 1))" "$DIR/log/zookeeper.log" 2>/dev/null | grep -q 'Address already in use'; then
				echo "zookeeper.sh: port $PORT is already in use" >&2
				exit 3
			fi
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "zookeeper.sh: not serving on 127.0.0.1:$PORT after ${START_TIMEOUT_S}s (srvr: $(four_letter "$PORT" srvr))" >&2
			log_tail
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$DIR/zookeeper.pid"
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
	while alive "$SERVER_PID"; do
		if [[ $(start_time "$WATCH_PID") != "$WATCH_START" ]]; then
			echo "$(date -Is) zookeeper.sh: pid $WATCH_PID exited, stopping ZooKeeper pid $SERVER_PID"
			if stop_pid "$SERVER_PID" && [[ $(read_pid) == "$SERVER_PID" ]]; then
				rm -f "$DIR/zookeeper.pid"
			fi
			return 0
		fi
		sleep 0.5
	done
}

cmd_stop() {
	[[ -n $DIR ]] || usage
	[[ -d $DIR ]] || die "no such folder: $DIR"
	DIR=$(cd "$DIR" && pwd -P)
	local pid
	pid=$(read_pid)
	if [[ -z $pid ]] || ! alive "$pid"; then
		echo "zookeeper.sh: not running in $DIR" >&2
		rm -f "$DIR/zookeeper.pid"
		return 0
	fi
	stop_pid "$pid" || die "pid $pid survived SIGKILL"
	rm -f "$DIR/zookeeper.pid"
	echo "zookeeper.sh: stopped pid $pid" >&2
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
		PORT=$(sed -n 's/^PORT=\([0-9]*\)$/\1/p' "$DIR/ports.env")
	fi
	if serving "$PORT"; then
		echo "running pid=$pid"
	else
		echo "running pid=$pid (not serving requests)"
	fi
	print_env
}

main() {
	(($# >= 1)) || usage
	local cmd=$1
	shift
	DIR="" PORT="" WATCH_PID="" WATCH_START="" SERVER_PID=""
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
		--port)
			(($# >= 2)) || usage
			is_port "$2" || die "$1: not a port: $2"
			PORT=$((10#$2))
			shift 2
			;;
		--port=*)
			is_port "${1#*=}" || die "--port: not a port: ${1#*=}"
			PORT=$((10#${1#*=}))
			shift
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
		-h | --help) usage ;;
		*)
			echo "zookeeper.sh: unknown argument: $1" >&2
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
