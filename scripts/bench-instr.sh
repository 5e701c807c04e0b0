#!/usr/bin/env bash
# bench-instr.sh: instructions per call of one function in one benchmark,
# counted by valgrind's callgrind: repeatable to the instruction, where
# wall time on a shared machine moves by 20% from run to run.
#
#   scripts/bench-instr.sh PACKAGE BENCHMARK FUNCTION [N]
#   scripts/bench-instr.sh ./decode/json 'BenchmarkJSON6$' \
#       'github.com/etl-project/etl/decode/json.(*Decoder).Decode'
#
# It builds PACKAGE's test binary, runs BENCHMARK for N iterations (100000
# by default) under callgrind with collection on only inside FUNCTION,
# and prints the instructions inside FUNCTION per benchmark iteration and
# the functions that took the most (self cost). The benchmark's setup
# calls FUNCTION too (the decoder benchmarks decode their 1,024 records
# once first, and the benchmark runs once with b.N = 1), so the figure is
# about 2% above the true one at N = 100000: compare builds with the same
# N rather than reading it as exact. The garbage collector is off
# (GOGC=off), since a collection running inside FUNCTION would add its
# own instructions (it doubled some counts), and so is asynchronous
# preemption, whose signals callgrind does not survive, and the RDTSCP
# instruction, which valgrind does not know (cpu.rdtscp=off). Needs valgrind
# (Debian's valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${1:?package} bench=${2:?benchmark} fn=${3:?function} n=${4:-100000}
command -v valgrind >/dev/null || { echo "bench-instr.sh: valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d /tmp/etl-instr.XXXXXX)
go test -c -o "$dir/test" "$pkg"
GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
	--toggle-collect="$fn" "$dir/test" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" >"$dir/log" 2>&1
total=$(awk '/Collected/ {print $4}' "$dir/log")
if [[ -z "$total" ]]; then
	echo "bench-instr.sh: callgrind collected nothing; see $dir/log" >&2
	exit 1
fi
awk -v t="$total" -v n="$n" 'BEGIN { printf "instructions: %.0f, %.0f per iteration of %d\n", t, t / n, n }'
callgrind_annotate --inclusive=no "$dir/callgrind.out" 2>/dev/null | awk '/file:function/ {go = 1; next} go && /^ *[0-9]/' | head -12
rm -rf "$dir"
