#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, the cost of reading resident memory: the recorder reads every process's
# /proc/PID/statm four times a second. A job of 64 processes that sleep (so that sampling
# costs next to nothing and what is left is the readings) is recorded for a short and a
# long time; the recorder's CPU (user+system, getrusage of its children: the sleeping
# processes use none) in the long run less the short one, over the difference in seconds,
# is the share of one CPU the readings take. Target: under 1 %. bench/run.sh runs it after
# pycost.sh, or alone with BENCH_ONLY=rsscost. See bench/README.md ("Resident memory").
#
# Environment: O=DIR (build directory, default build), BENCH_RUNS=N (pairs of runs,
# median taken, default 3), BENCH_NO_README=1 (print the table only).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
# shellcheck source=bench/readme_table.sh
. bench/readme_table.sh
ROOT=$PWD
PT=$ROOT/${O:-build}/proftool
RUNS=${BENCH_RUNS:-3}
PROCS=64
SHORT=3
LONG=11
README=$ROOT/bench/README.md
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }
[ -x "$PT" ] || die "$PT is missing; run make bench (it builds first)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to time the recorder"

T=$(mktemp -d "${TMPDIR:-/tmp}/proftool-bench-rsscost.XXXXXX")
trap 'rm -rf "$T"' EXIT

# cpu SECONDS: the recorder's CPU seconds (and its children's: sleep and bash use none
# to speak of) for a recording of PROCS processes sleeping SECONDS; then its readings
cpu() {
	python3 - "$PT" "$T/out.data" "$PROCS" "$1" <<'PY'
import gzip, json, resource, subprocess, sys
pt, out, procs, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run([pt, "record", "-q", "-o", out, "--", "bash", "-c",
                "for i in $(seq %d); do sleep %d & done; wait" % (procs, secs)], check=True)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
p = json.load(gzip.open(out))
n = sum(len(pr.get("rss", {}).get("time_us", [])) for pr in p["processes"])
print("%.4f %d" % (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, n))
PY
}

SHARES=()
READS=()
for ((i = 0; i < RUNS; i++)); do
	printf 'bench: [%3ds] rsscost: round %d of %d\n' $(($(date +%s) - T0)) $((i + 1)) "$RUNS" >&2
	read -r a na < <(cpu "$SHORT")
	read -r b nb < <(cpu "$LONG")
	SHARES+=("$(awk -v a="$a" -v b="$b" -v s="$SHORT" -v l="$LONG" 'BEGIN { printf "%.2f", 100 * (b - a) / (l - s) }')")
	READS+=("$(awk -v a="$na" -v b="$nb" -v s="$SHORT" -v l="$LONG" -v p="$PROCS" 'BEGIN { printf "%.1f", (b - a) / (l - s) / p }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
share=$(median "${SHARES[@]}")
reads=$(median "${READS[@]}")
res=$(awk -v s="$share" 'BEGIN { print (s < 1 ? "PASS" : "MISS") }')

TABLE=$T/table
{
	printf 'recorder CPU of the resident-memory readings: %d sleeping processes recorded %d s and %d s;\n' "$PROCS" "$SHORT" "$LONG"
	printf '(recorder CPU in the long run - in the short) / (%d s); median of %d pairs\n\n' $((LONG - SHORT)) "$RUNS"
	printf '%-40s %12s  %-10s %s\n' "measure" "value" "target" "result"
	printf '%-40s %12s  %-10s %s\n' "---" "---" "---" "---"
	printf '%-40s %11s%%  %-10s %s\n' "share of one CPU, $PROCS processes" "$share" "< 1 %" "$res"
	printf '%-40s %12s  %-10s %s\n' "readings per process per second" "$reads" "" ""
	printf '\nDate %s; Linux %s; %s CPUs; took %d s; load average at the end: %s\n' \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -r)" "$(nproc)" $(($(date +%s) - T0)) \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$TABLE"
cat "$TABLE"
save_table rsscost "$TABLE" "$README"
