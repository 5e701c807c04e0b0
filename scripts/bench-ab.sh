#!/usr/bin/env bash
# bench-ab.sh: two etl binaries through the same benchmark, in pairs, to
# tell a change from the machine's noise. On a shared virtual machine the
# same binary's CPU per row moves by a fifth from run to run and by more
# from hour to hour; runs of A and B taken in alternation, each pair
# within a minute, see the same machine, and the ratio within each pair
# varies much less than either figure alone.
#
#   REF=HEAD~1 ROUNDS=4 scripts/bench-ab.sh       (make bench-ab)
#
# A is etl built from the git revision REF (default HEAD~1; or A=PATH, a
# binary), B is etl built from the work tree (or B=PATH). Each round runs
# scripts/bench.sh (WORKLOAD, N, CODEC, CONFIG as there; the stage split is
# off) once with each binary, A first in odd rounds and B first in even
# ones. A_WORKLOAD and B_WORKLOAD (default WORKLOAD) give each arm its own
# workload: A=bin/etl B=bin/etl B_WORKLOAD=json-meta measures what two
# metadata columns cost. It prints each run's steady-state rows/s and etl
# CPU-s per million rows and its whole-run CPU-s per million rows, then
# the medians and, per round, B's CPU over A's; its last lines are
#   ab: A C_A CPU-s/M R_A rows/s; B C_B CPU-s/M R_B rows/s; B/A CPU median X (min-max)
#   ab whole run: A W_A CPU-s/M; B W_B CPU-s/M; B/A CPU median Y (min-max)
# with the medians over the rounds (steady state, then the whole run),
# followed by the medians of each arm's peak RSS (whole run):
#   ab peak RSS: A M_A MiB; B M_B MiB
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-4}
REF=${REF:-HEAD~1}
DIR=$(mktemp -d /tmp/etl-ab.XXXXXX)
make build >/dev/null
if [[ -z "${A:-}" ]]; then
	git worktree add -q --detach "$DIR/a-src" "$REF"
	trap 'git worktree remove --force "$DIR/a-src" >/dev/null 2>&1 || true' EXIT
	# Built as make build builds bin/etl (stripped).
	(cd "$DIR/a-src" && go build -ldflags "-s -w" -o "$DIR/etl-a" ./cmd/etl)
	A=$DIR/etl-a
	echo "A: $(git rev-parse --short "$REF") ($REF)"
else
	echo "A: $A"
fi
B=${B:-bin/etl}
echo "B: $B"
A_WORKLOAD=${A_WORKLOAD:-${WORKLOAD:-json}}
B_WORKLOAD=${B_WORKLOAD:-${WORKLOAD:-json}}
echo "workloads: A $A_WORKLOAD, B $B_WORKLOAD"

# run ARM BINARY ROUND WORKLOAD: one bench.sh run; appends "arm round
# rows/s cpu whole-cpu peak-rss".
run() {
	local out rows cpu whole rss
	out=$(STAGES=0 ETL_BIN=$2 WORKLOAD=$4 BENCH_DIR=$DIR/$1-$3 scripts/bench.sh 2>&1) || { echo "$out" >&2; exit 1; }
	rows=$(sed -n 's/^steady state ([0-9]* rows, .*): \([0-9]*\) rows\/s$/\1/p' <<<"$out")
	cpu=$(sed -n 's/^steady state etl CPU: \([0-9.]*\) CPU-s per million rows.*/\1/p' <<<"$out")
	whole=$(sed -n 's/^etl CPU: [0-9.]* s (\([0-9.]*\) CPU-s per million rows)$/\1/p' <<<"$out")
	rss=$(sed -n 's/^etl peak RSS: \([0-9.]*\) MiB$/\1/p' <<<"$out")
	[[ -n "$rows" && -n "$cpu" && -n "$whole" ]] || { echo "bench-ab: no steady state in run $1-$3" >&2; echo "$out" >&2; exit 1; }
	printf '%s\t%d\t%s\t%s\t%s\t%s\n' "$1" "$3" "$rows" "$cpu" "$whole" "${rss:-0}" | tee -a "$DIR/results.tsv"
}

printf 'arm\tround\tsteady rows/s\tsteady etl CPU-s/M\twhole-run etl CPU-s/M\tpeak RSS MiB\n'
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then
		run A "$A" "$r" "$A_WORKLOAD"; run B "$B" "$r" "$B_WORKLOAD"
	else
		run B "$B" "$r" "$B_WORKLOAD"; run A "$A" "$r" "$A_WORKLOAD"
	fi
done
awk -F'\t' '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ if ($1 == "A") { ca[$2] = $4; ra[$2] = $3; wa[$2] = $5; ma[$2] = $6 } else { cb[$2] = $4; rb[$2] = $3; wb[$2] = $5; mb[$2] = $6 } }
END {
	n = 0
	for (r in ca) if (r in cb) {
		n++; x[n] = cb[r] / ca[r]; c1[n] = ca[r]; c2[n] = cb[r]; r1[n] = ra[r]; r2[n] = rb[r]
		y[n] = wb[r] / wa[r]; w1[n] = wa[r]; w2[n] = wb[r]; m1[n] = ma[r]; m2[n] = mb[r]
		if (n == 1 || x[n] < lo) lo = x[n]
		if (n == 1 || x[n] > hi) hi = x[n]
		if (n == 1 || y[n] < wlo) wlo = y[n]
		if (n == 1 || y[n] > whi) whi = y[n]
	}
	if (n == 0) { print "bench-ab: no complete round"; exit 1 }
	printf "ab: A %.2f CPU-s/M %.0f rows/s; B %.2f CPU-s/M %.0f rows/s; B/A CPU median %.3f (%.3f-%.3f)\n",
		median(c1, n), median(r1, n), median(c2, n), median(r2, n), median(x, n), lo, hi
	printf "ab whole run: A %.3f CPU-s/M; B %.3f CPU-s/M; B/A CPU median %.3f (%.3f-%.3f)\n",
		median(w1, n), median(w2, n), median(y, n), wlo, whi
	printf "ab peak RSS: A %.1f MiB; B %.1f MiB\n", median(m1, n), median(m2, n)
}' "$DIR/results.tsv"
