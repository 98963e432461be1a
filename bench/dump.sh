#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, proftool dump: how long a dump takes and how long it holds each thread
# stopped, on a 60-thread process (tests/workloads/blocked.c: threads blocked in read(),
# a mutex and condition waits, one busy) and on a Python script with two threads
# (tests/workloads/py/blocked.py). bench/run.sh runs it after the regions, or alone with
# BENCH_ONLY=dump. See bench/README.md ("dump: how long threads are held").
#
# Environment: O=DIR (build directory, default build), BENCH_RUNS=N (dumps per case,
# default 21), BENCH_NO_README=1 (print the table only).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
# shellcheck source=bench/readme_table.sh
. bench/readme_table.sh
ROOT=$PWD
BUILD=$ROOT/${O:-build}
PT=$BUILD/proftool
RUNS=${BENCH_RUNS:-21}
README=$ROOT/bench/README.md
PY=/usr/bin/python3
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }

[ -x "$PT" ] || die "$PT is missing; run make bench (it builds first)"
[ -x "$BUILD/workloads-nofp/blocked" ] || die "$BUILD/workloads-nofp/blocked is missing; run make bench (it builds first)"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "BENCH_RUNS must be a positive whole number"

T=$(mktemp -d "${TMPDIR:-/tmp}/proftool-bench-dump.XXXXXX")
target=
cleanup() {
	[ -z "$target" ] || kill -KILL "$target" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

med() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
max() { sort -g | tail -n1; }

# start DIR COMMAND...: runs COMMAND (given DIR/fifo and DIR/ready) and waits for its pid in DIR/ready
start() {
	local dir=$1

	shift
	mkdir "$dir"
	mkfifo "$dir/fifo"
	"$@" >"$dir/out" 2>&1 &
	target=$!
	for _ in $(seq 400); do
		[ -s "$dir/ready" ] && break
		kill -0 "$target" 2>/dev/null || die "$* ended: $(cat "$dir/out")"
		sleep 0.05
	done
	[ "$(cat "$dir/ready" 2>/dev/null)" = "$target" ] || die "$* did not get ready"
	# every thread at its wait (the busy one running): /proc's state settles
	sleep 0.5
}

# finish DIR: releases the target, which must end normally
finish() {
	echo go >"$1/fifo"
	wait "$target" || die "the target exited $? after the dumps: $(cat "$1/out")"
	target=
}

# measure NAME THREADS DIR: RUNS dumps of $target; one line of figures per dump into T/NAME
measure() {
	local name=$1 threads=$2 dir=$3 t0 t1 head

	: >"$T/$name"
	for ((i = 1; i <= RUNS; i++)); do
		t0=$(date +%s%N)
		"$PT" dump "$target" >"$dir/dump.txt" 2>"$dir/dump.err" || die "dump failed: $(cat "$dir/dump.err")"
		t1=$(date +%s%N)
		[ "$(grep -c '^Thread ' "$dir/dump.txt")" -eq "$threads" ] || die "dump shows $(grep -c '^Thread ' "$dir/dump.txt") threads, not $threads"
		# "N threads in X ms; each stopped for M ms (median), L ms at most"
		head=$(grep -m1 ' threads in ' "$dir/dump.txt")
		awk -v wall="$(((t1 - t0) / 1000))" '{ print wall / 1000, $4, $9, $12 }' <<<"$head" >>"$T/$name"
	done
}

TABLE=$T/table
row() { printf '%-44s %10s %10s %12s %12s %12s\n' "$@" >>"$TABLE"; }
summarize() {
	local f=$T/$1

	row "$2" "$(cut -d' ' -f1 "$f" | med)" "$(cut -d' ' -f2 "$f" | med)" \
		"$(cut -d' ' -f3 "$f" | med)" "$(cut -d' ' -f4 "$f" | med)" "$(cut -d' ' -f4 "$f" | max)"
}

echo "bench: dump: $RUNS dumps of a 60-thread process" >&2
start "$T/c" "$BUILD/workloads-nofp/blocked" "$T/c/fifo" "$T/c/ready" idle=56
measure c60 60 "$T/c"
finish "$T/c"
grep -q 'released 59 threads' "$T/c/out" || die "the 60-thread process did not finish as it should: $(cat "$T/c/out")"

if [ -x "$PY" ]; then
	echo "bench: dump: $RUNS dumps of a Python script with 2 threads" >&2
	start "$T/py" "$PY" "$ROOT/tests/workloads/py/blocked.py" "$T/py/ready" "$T/py/fifo"
	measure python 2 "$T/py"
	finish "$T/py"
fi

{
	printf 'proftool dump: %d dumps per process, medians (ms); "held" is how long a thread stays stopped\n\n' "$RUNS"
} >"$TABLE"
row "" "dump" "threads" "held" "held" "held"
row "process" "wall" "read in" "median" "max, median" "max, worst"
summarize c60 "60 threads (C, no frame pointers)"
[ ! -s "$T/python" ] || summarize python "Python $("$PY" -c 'import platform; print(platform.python_version())') script, 2 threads"
{
	printf '\n'
	printf 'Date %s; Linux %s; %s; %s CPUs\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -r)" \
		"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" "$(nproc)"
	printf 'Took %d s; load average at the end: %s\n' "$(($(date +%s) - T0))" "$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$TABLE"
cat "$TABLE"

save_table dump "$TABLE" "$README"
