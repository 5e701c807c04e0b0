# settle.sh, sourced by the benchmark scripts: settle_merges TABLE waits
# until no merge of default.TABLE has run for SETTLE_QUIET seconds (1 by
# default), at most SETTLE_MAX seconds (30). SETTLE_QUIET=0 returns at
# once. It queries the server with the caller's q.
settle_merges() {
	local table=$1 quiet=0 polls=$((${SETTLE_QUIET:-1} * 10)) deadline
	deadline=$(($(date +%s) + ${SETTLE_MAX:-30}))
	while ((quiet < polls)) && (($(date +%s) < deadline)); do
		if [[ $(q "SELECT count() FROM system.merges WHERE database = 'default' AND table = '$table'") == 0 ]]; then
			quiet=$((quiet + 1))
		else
			quiet=0
		fi
		sleep 0.1
	done
}
