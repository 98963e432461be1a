#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: proftool against perf, side by side in the same run.
# Overhead, accuracy, lost samples, profile size, report speed/memory and the
# time record needs after the target exits; then what named regions cost
# (bench/regions.sh), what a dump costs (bench/dump.sh) and proftool's CPU per
# sample (bench/pycost.sh), what reading resident memory costs (bench/rsscost.sh) and
# stacks through code without unwind information (bench/jitstacks.sh).
# See bench/README.md for the method.
#
# Environment (for experiments; the defaults are what make bench measures):
#   O=DIR             build directory (default build), as for make
#   BENCH_RUNS=N      runs per measurement, median taken (default 5)
#   BENCH_SCALE=X     multiplies every workload's size (default 1)
#   BENCH_SAMPLES=N   samples aimed at for the big recording (default 100000)
#   BENCH_NO_README=1 print the table only; leave bench/README.md alone
#   BENCH_ONLY=PART   one part only: perf (the comparison), regions, dump, pycost, rsscost
#                     or jitstacks
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/${O:-build}
PT=$BUILD/proftool
WL=$BUILD/workloads
RUNS=${BENCH_RUNS:-5}
SCALE=${BENCH_SCALE:-1}
BIG_SAMPLES=${BENCH_SAMPLES:-100000}
README=$ROOT/bench/README.md
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }

case ${BENCH_ONLY:-} in
'' | perf) ;;
regions) exec bench/regions.sh ;;
dump) exec bench/dump.sh ;;
pycost) exec bench/pycost.sh ;;
rsscost) exec bench/rsscost.sh ;;
jitstacks) exec bench/jitstacks.sh ;;
*) die "BENCH_ONLY must be perf, regions, dump, pycost, rsscost or jitstacks, not '$BENCH_ONLY'" ;;
esac

# ---------------------------------------------------------------- preconditions
command -v perf >/dev/null 2>&1 ||
	die "perf is not installed; make bench compares against it (apt-get install linux-perf, or run scripts/deps.sh bench as root)"
perf version >/dev/null 2>&1 ||
	die "'perf version' fails: perf is installed but does not run on this kernel ($(uname -r))"
command -v gcc >/dev/null 2>&1 || die "gcc is needed to build the bench workloads"
[ -x "$PT" ] || die "$PT is missing; run make bench (it builds first)"
[ -x "$WL/split" ] || die "$WL/split is missing; run make bench (it builds first)"
[[ $BIG_SAMPLES =~ ^[0-9]+$ ]] && [ "$BIG_SAMPLES" -ge 1000 ] || die "BENCH_SAMPLES must be a whole number >= 1000"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "BENCH_RUNS must be a positive whole number"
[ "$RUNS" -ge 5 ] || echo "bench: warning: BENCH_RUNS=$RUNS; the issue asks for medians of at least 5 runs" >&2

T=$(mktemp -d "${TMPDIR:-/tmp}/proftool-bench.XXXXXX")
cleanup() { rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Work on copies: the build directory may be rebuilt or cleaned while the bench
# runs (make check in another shell), and every run must use the same binary.
cp "$PT" "$T/proftool"
PT=$T/proftool
cp "$WL/split" "$T/split"

# perf keeps a build-id cache (copies of every binary it saw) in ~/.debug by
# default; keep it in the temp dir so the bench leaves nothing behind.
PERF=(perf --buildid-dir "$T/perf-debug")

# Bench-only programs: the helper (timer, 2-thread and fork/exec workloads), and
# split built without frame pointers for the stack completeness measurement.
BL=$T/benchload
gcc -std=gnu11 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
	-Wall -Wextra -Werror -o "$BL" bench/benchload.c -lm
SPLIT_NOFP=$T/split-nofp
# The fork-heavy job: a library with 30000 exported functions (libtorch-like
# symbol count, assembled in a second) mapped by a parent that forks workers.
bench/biglib.sh 30000 >"$T/big.s"
gcc -shared -o "$T/libbig.so" "$T/big.s"
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -o "$T/forkjob" bench/forkjob.c -ldl -Wl,-rpath,'$ORIGIN'
gcc -std=gnu11 -O2 -g -fomit-frame-pointer -momit-leaf-frame-pointer \
	-Wall -Wextra -Werror -o "$SPLIT_NOFP" tests/workloads/split.c -lm

"${PERF[@]}" record -q -e cpu-clock -o "$T/probe.perf" -- true >/dev/null 2>"$T/probe.err" ||
	die "perf record does not work here: $(head -n 3 "$T/probe.err" | tr '\n' ' ')"
# proftool's DWARF unwinding is measured as soon as it exists. (Never probe with
# -o /dev/null: record replaces its output by rename(2), which as root would
# replace the /dev/null device node.)
if "$PT" record -g dwarf -q -o "$T/probe.data" -- true >/dev/null 2>&1; then
	PT_DWARF=1
else
	PT_DWARF=0
fi
rm -f "$T/probe.perf" "$T/probe.data" "$T/probe.err"

scaled() { awk -v a="$1" -v s="$SCALE" 'BEGIN { printf "%.4g", a * s }'; }

# ---------------------------------------------------------------- running things
# measure CASE VARIANT RUN FREQ -- TARGET...
# Runs TARGET bare or under a profiler, through two timers: the outer one around
# the profiler (everything the user waits for and pays), the inner one around the
# target alone (its own wall and CPU time, unaffected by the profiler's start-up
# and finish). Each writes "wall user sys maxrss start_ns end_ns".
measure() {
	local case=$1 var=$2 i=$3 freq=$4
	shift 5
	local d=$T/runs/$case/$var/$i
	local -a rec=()
	mkdir -p "$d"
	case $var in
	bare) ;;
	pt-fp) rec=("$PT" record -q -F "$freq" -g fp -o "$d/pt.data" --) ;;
	pt-dwarf) rec=("$PT" record -q -F "$freq" -g dwarf -o "$d/pt.data" --) ;;
	perf-fp) rec=("${PERF[@]}" record -q -e cpu-clock -F "$freq" -g -o "$d/perf.data" --) ;;
	perf-dwarf) rec=("${PERF[@]}" record -q -e cpu-clock -F "$freq" --call-graph dwarf -o "$d/perf.data" --) ;;
	*) die "internal: unknown variant $var" ;;
	esac
	if ! "$BL" run "$d/outer" "${rec[@]}" "$BL" run "$d/inner" "$@" >"$d/stdout" 2>"$d/stderr"; then
		echo "bench: $case/$var run $i failed: ${rec[*]} $*" >&2
		sed 's/^/  /' "$d/stderr" >&2
		exit 1
	fi
}

# rounds CASE FREQ "VARIANTS" -- TARGET...: RUNS rounds, variants alternating.
rounds() {
	local case=$1 freq=$2 vars=$3 i v
	shift 4
	for ((i = 1; i <= RUNS; i++)); do
		for v in $vars; do
			measure "$case" "$v" "$i" "$freq" -- "$@"
		done
	done
}

progress() { printf 'bench: [%3ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

# ---------------------------------------------------------------- extracting figures
med() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
maxof() { sort -g | tail -n 1; }

# field CASE VAR FILE EXPR: EXPR (awk, over fields $1..$6 of the timer file) for every run
field() {
	local i
	for ((i = 1; i <= RUNS; i++)); do
		awk "{ print $4 }" "$T/runs/$1/$2/$i/$3"
	done
}
wall() { field "$1" "$2" inner '$1' | med; }                 # target wall-clock
cpu() { field "$1" "$2" inner '$2 + $3' | med; }             # target user+sys
totcpu() { field "$1" "$2" outer '$2 + $3' | med; }          # target + profiler user+sys
finish() { local i; for ((i = 1; i <= RUNS; i++)); do
	echo $(($(cut -d' ' -f6 "$T/runs/$1/$2/$i/outer") - $(cut -d' ' -f6 "$T/runs/$1/$2/$i/inner")))
done | awk '{ print $1 / 1e9 }' | med; }
startup() { local i; for ((i = 1; i <= RUNS; i++)); do
	echo $(($(cut -d' ' -f5 "$T/runs/$1/$2/$i/inner") - $(cut -d' ' -f5 "$T/runs/$1/$2/$i/outer")))
done | awk '{ print $1 / 1e9 }' | med; }

datafile() { if [[ $2 == pt-* ]]; then echo "$T/runs/$1/$2/$3/pt.data"; else echo "$T/runs/$1/$2/$3/perf.data"; fi; }

# samples and lost samples of one recording: "SAMPLES LOST"
pt_counts() {
	"$PT" report -i "$1" --limit 1 | awk '
		/ samples over / { s = $1 }
		/^Lost samples:/ { l = $3 }
		END { if (s == "" || l == "") exit 1; print s, l }'
}
# perf report --stats: the per-event section has SAMPLE events and, from perf 6.1
# on (kernel PERF_FORMAT_LOST), LOST_SAMPLES events = samples lost in total (the
# same sum as the PERF_RECORD_LOST records of perf report -D, and what perf report
# --stdio prints as "Total Lost Samples"). Without it, sum the LOST records.
perf_counts() {
	local out s l chunks
	out=$("${PERF[@]}" report --stats -i "$1" 2>/dev/null)
	s=$(awk '/ stats:$/ { ev = 1 } ev && /SAMPLE events:/ { print $3; exit }' <<<"$out")
	l=$(awk '/ stats:$/ { ev = 1 } ev && /LOST_SAMPLES events:/ { print $3; exit }' <<<"$out")
	chunks=$(awk '/^ *LOST events:/ { print $3; exit }' <<<"$out")
	if [ -z "$l" ]; then
		if [ "${chunks:-0}" -gt 0 ]; then
			l=$("${PERF[@]}" report -D -i "$1" 2>/dev/null | grep -a 'PERF_RECORD_LOST' |
				sed 's/.*lost:[[:space:]]*//' | awk '{ s += $1 } END { print s + 0 }')
		else
			l=0
		fi
	fi
	[ -n "$s" ] || die "cannot read the sample count of $1"
	echo "$s $l"
}
counts() { if [[ $2 == pt-* ]]; then pt_counts "$1"; else perf_counts "$1"; fi; }

# Per-run sample/lost counts, cached: counts_of CASE VAR -> lines "SAMPLES LOST BYTES"
counts_of() {
	local i f c
	for ((i = 1; i <= RUNS; i++)); do
		f=$(datafile "$1" "$2" "$i")
		c=$T/runs/$1/$2/$i/counts
		if [ ! -s "$c" ]; then
			[ -f "$f" ] || die "internal: $f is gone"
			echo "$(counts "$f" "$2") $(stat -c %s "$f")" >"$c"
		fi
		cat "$c"
	done
}

# Stacks, one line per sample group: "COUNT FRAME;FRAME;..." root first, user frames
# only (kernel frames dropped), for the samples of processes named COMM.
pt_stacks() {
	"$PT" report -i "$1" --comm "$2" --format folded | awk '
		{ n = $NF; st = substr($0, 1, length($0) - length($NF) - 1)
		  k = split(st, f, ";"); out = ""
		  for (i = 1; i <= k; i++) if (f[i] !~ /^\[kernel\]/) out = out (out == "" ? "" : ";") f[i]
		  print n, (out == "" ? "-" : out) }'
}
perf_stacks() {
	"${PERF[@]}" script -i "$1" --comms "$2" -F comm,tid,ip,sym,dso 2>/dev/null | awk '
		function flush() { if (have) print 1, (st == "" ? "-" : st); have = 0; st = "" }
		/^[^ \t]/ { flush(); have = 1; next }
		/^[ \t]*$/ { flush(); next }
		{ dso = $NF; if (dso == "([kernel.kallsyms])" || dso ~ /^\(\[guest/) next
		  sym = $2; for (i = 3; i < NF; i++) sym = sym " " $i
		  sub(/@.*/, "", sym); sub(/\+0x[0-9a-f]+$/, "", sym)
		  st = sym (st == "" ? "" : ";") st }   # perf prints leaf first
		END { flush() }'
}
stacks() { if [[ $2 == pt-* ]]; then pt_stacks "$1" "$3"; else perf_stacks "$1" "$3"; fi; }

# max |self share - expected| in points over leaf_a/b/c (50/30/20), of all samples of split
share_error() {
	awk '{ n = $1; k = split($2, f, ";"); t += n; c[f[k]] += n }
		END { if (!t) { print "nan"; exit }
		      e["leaf_a"] = 50; e["leaf_b"] = 30; e["leaf_c"] = 20; m = 0
		      for (x in e) { d = 100 * c[x] / t - e[x]; if (d < 0) d = -d; if (d > m) m = d }
		      printf "%.2f\n", m }'
}
# % of samples whose stack reaches main, the C start-up code or a thread entry
completeness() {
	awk '{ n = $1; t += n
		if ($2 ~ /(^|;)(main|_start|__libc_start_main[_a-z]*|__libc_start_call_main|start_thread|clone3?|__clone3?)(;|$)/) ok += n }
		END { if (!t) print "nan"; else printf "%.1f\n", 100 * ok / t }'
}
per_run() {     # per_run CASE VAR COMM FUNC: FUNC over every run's stacks, median
	local i
	for ((i = 1; i <= RUNS; i++)); do
		stacks "$(datafile "$1" "$2" "$i")" "$2" "$3" | $4
	done | med
}

# ---------------------------------------------------------------- table
TABLE=$T/table
fmt() { printf '%-46s %9s %17s %17s %8s  %-26s %s\n' "$@" >>"$TABLE"; }
section() { printf '%s\n' "$*" >>"$TABLE"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "?"; else printf "%+.1f%%\n", 100 * (a / b - 1) }'; }
num() { awk -v a="$1" -v f="$2" 'BEGIN { printf f "\n", a }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
result() { if "$@"; then echo PASS; else echo MISS; fi; }
NA="n/a (not implemented)"
MISSES=()
note_result() { [ "$1" != MISS ] || MISSES+=("$2"); }

# ---------------------------------------------------------------- the runs
VARS_FP="pt-fp perf-fp"
VARS_DW="perf-dwarf"
[ "$PT_DWARF" = 1 ] && VARS_DW="pt-dwarf perf-dwarf"
OVH_VARS="bare $VARS_FP $VARS_DW"

W1_ARGS=("$T/split" "$(scaled 1.5)")
W2_ARGS=("$BL" spin 2 "$(scaled 1)")
FE_N=$(awk -v s="$SCALE" 'BEGIN { n = int(150 * s); print (n < 1 ? 1 : n) }')
W3_ARGS=("$BL" forkexec "$FE_N" 1 0.005)

progress "overhead, 1 thread: split $(scaled 1.5), $RUNS rounds of: $OVH_VARS"
rounds w1 999 "$OVH_VARS" -- "${W1_ARGS[@]}"
progress "overhead, 2 threads: benchload spin 2 $(scaled 1)"
rounds w2 999 "$OVH_VARS" -- "${W2_ARGS[@]}"
progress "overhead, fork+exec: benchload forkexec $FE_N 1 0.005"
rounds w3 999 "$OVH_VARS" -- "${W3_ARGS[@]}"
FJ_SECS=$(scaled 0.3)
for w in 4 16; do
	progress "fork-heavy job: forkjob $w $FJ_SECS (a 30000-symbol library, $w workers)"
	rounds "fj$w" 999 "pt-dwarf perf-dwarf" -- "$T/forkjob" "$w" "$FJ_SECS"
done
# perf defers unwinding and naming to perf report: its share of the work is timed there
for ((i = 1; i <= RUNS; i++)); do
	"$BL" run "$T/runs/fj16/perf-dwarf/$i/report" "${PERF[@]}" report --stdio \
		-i "$(datafile fj16 perf-dwarf "$i")" >/dev/null 2>&1 || die "perf report failed on the fork job"
done
progress "stack completeness: split built with -fomit-frame-pointer"
rounds nofp 999 "$VARS_FP $VARS_DW" -- "$SPLIT_NOFP" "$(scaled 0.5)"

# The big recording: 2 busy threads at -F 10000, in the mode proftool would be
# used in (dwarf once it exists). Sized from a calibration run of the bare
# workload: samples ~= CPU seconds x 10000 x the CPU inflation that 10 kHz
# sampling causes here (measured 1.35-1.4 on this VM; 1.35 assumed).
BIG_MODE=fp
[ "$PT_DWARF" = 1 ] && BIG_MODE=dwarf
"$BL" run "$T/calib" "$BL" spin 2 0.5 >/dev/null
BIG_SECS=$(awk -v n="$BIG_SAMPLES" -v c="$(cut -d' ' -f2,3 "$T/calib" | awk '{ print $1 + $2 }')" \
	'BEGIN { per = c / 2 / 0.5; s = n / (2 * 10000 * 1.35 * per); printf "%.3g", (s < 0.05 ? 0.05 : s) }')
progress "loss/finish/report recording: benchload spin 2 $BIG_SECS at -F 10000 -g $BIG_MODE (aiming at $BIG_SAMPLES samples)"
BIG_VARS="pt-$BIG_MODE perf-$BIG_MODE"
for ((i = 1; i <= RUNS; i++)); do
	for v in $BIG_VARS; do
		measure big "$v" "$i" 10000 -- "$BL" spin 2 "$BIG_SECS"
		f=$(datafile big "$v" "$i")
		echo "$(counts "$f" "$v") $(stat -c %s "$f")" >"$T/runs/big/$v/$i/counts"
		# keep only the last recording for the report measurement (dwarf ones are GBs)
		[ "$i" = "$RUNS" ] || rm -f "$f"
	done
done

progress "report: proftool report (table, folded) and perf report --stdio on the last big recording"
PT_BIG=$(datafile big "pt-$BIG_MODE" "$RUNS")
PERF_BIG=$(datafile big "perf-$BIG_MODE" "$RUNS")
for ((i = 1; i <= RUNS; i++)); do
	d=$T/report/$i
	mkdir -p "$d"
	"$BL" run "$d/pt-table" "$PT" report -i "$PT_BIG" >/dev/null 2>"$d/err" || die "proftool report failed: $(cat "$d/err")"
	"$BL" run "$d/pt-folded" "$PT" report -i "$PT_BIG" --format folded >/dev/null 2>"$d/err" || die "proftool report --format folded failed: $(cat "$d/err")"
	"$BL" run "$d/perf" "${PERF[@]}" report --stdio -i "$PERF_BIG" >/dev/null 2>"$d/err" || die "perf report failed: $(cat "$d/err")"
done
rep() { for ((i = 1; i <= RUNS; i++)); do awk "{ print $2 }" "$T/report/$i/$1"; done | med; }

progress "analysing"

# ---------------------------------------------------------------- the table
: >"$TABLE"
fmt "measurement (median of $RUNS)" bare proftool perf pt/perf target result
fmt "-----------" ---- -------- ---- ------- ------ ------

spread() {   # spread() CASE VAR FILE EXPR: run-to-run spread, (max - min) / median, as a fraction
	field "$1" "$2" "$3" "$4" | sort -g | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.4f\n", (m > 0 ? (a[NR] - a[1]) / m : 0) }'
}
pctof() { awk -v a="$1" 'BEGIN { printf "%.1f%%", 100 * a }'; }
# judge P Q BARE SPREAD [LIMIT]: P <= Q (and P/BARE <= LIMIT); a MISS by less than
# the bare runs' spread is marked as such
judge() {
	local p=$1 q=$2 b=$3 sp=$4 lim=${5:-} miss=0 margin
	le "$p" "$q" || miss=1
	[ -z "$lim" ] || le "$(awk -v p="$p" -v b="$b" 'BEGIN { print p / b }')" "$lim" || miss=1
	if [ "$miss" = 0 ]; then echo PASS; return; fi
	margin=$(awk -v p="$p" -v q="$q" -v b="$b" -v l="$lim" 'BEGIN {
		m = (p - q) / b; if (l != "" && p / b - l > m) m = p / b - l; print m }')
	if lt "$margin" "$sp"; then echo "MISS (within noise)"; else echo MISS; fi
}
ovh_rows() {     # ovh_rows CASE LABEL MODE
	local c=$1 label=$2 mode=$3 p q res tgt lim=""
	local bw bc bt sc st
	bw=$(wall "$c" bare); bc=$(cpu "$c" bare); bt=$(totcpu "$c" bare)
	sc=$(spread "$c" bare inner '$2 + $3'); st=$(spread "$c" bare outer '$2 + $3')
	tgt="<= perf"
	if [ "$mode" = dwarf ] && [ "$c" = w1 ]; then tgt="<= perf, <= 1.03x bare"; lim=1.03; fi
	if [ "$mode" = fp ] || [ "$PT_DWARF" = 1 ]; then
		p=$(wall "$c" "pt-$mode"); q=$(wall "$c" "perf-$mode")
		fmt "$label -g $mode: target wall s" "$(num "$bw" %.3f)" "$(num "$p" %.3f) $(pct "$p" "$bw")" \
			"$(num "$q" %.3f) $(pct "$q" "$bw")" "$(ratio "$p" "$q")" "" ""
		p=$(cpu "$c" "pt-$mode"); q=$(cpu "$c" "perf-$mode")
		res=$(judge "$p" "$q" "$bc" "$sc" "$lim")
		fmt "$label -g $mode: target CPU s" "$(num "$bc" %.3f)" "$(num "$p" %.3f) $(pct "$p" "$bc")" \
			"$(num "$q" %.3f) $(pct "$q" "$bc")" "$(ratio "$p" "$q")" "$tgt" "$res"
		note_result "${res%% *}" "overhead, $label -g $mode, target CPU: proftool $(pct "$p" "$bc") vs perf $(pct "$q" "$bc") over bare${res#MISS}"
		p=$(totcpu "$c" "pt-$mode"); q=$(totcpu "$c" "perf-$mode")
		res=$(judge "$p" "$q" "$bt" "$st")
		fmt "$label -g $mode: CPU s incl. profiler" "$(num "$bt" %.3f)" "$(num "$p" %.3f) $(pct "$p" "$bt")" \
			"$(num "$q" %.3f) $(pct "$q" "$bt")" "$(ratio "$p" "$q")" "<= perf" "$res"
		note_result "${res%% *}" "overhead, $label -g $mode, CPU incl. profiler: proftool ${p}s vs perf ${q}s${res#MISS}"
	else
		q=$(wall "$c" "perf-$mode")
		fmt "$label -g $mode: target wall s" "$(num "$bw" %.3f)" "$NA" "$(num "$q" %.3f) $(pct "$q" "$bw")" - "" ""
		q=$(cpu "$c" "perf-$mode")
		fmt "$label -g $mode: target CPU s" "$(num "$bc" %.3f)" "$NA" "$(num "$q" %.3f) $(pct "$q" "$bc")" - "$tgt" MISS
		q=$(totcpu "$c" "perf-$mode")
		fmt "$label -g $mode: CPU s incl. profiler" "$(num "$bt" %.3f)" "$NA" "$(num "$q" %.3f) $(pct "$q" "$bt")" - "<= perf" MISS
		note_result MISS "overhead, $label -g dwarf: proftool has no DWARF unwinding"
	fi
}

section "1. overhead at -F 999; spread of the bare runs (max-min)/median, wall / CPU: 1 thread $(pctof "$(spread w1 bare inner '$1')") / $(pctof "$(spread w1 bare inner '$2 + $3')"), 2 threads $(pctof "$(spread w2 bare inner '$1')") / $(pctof "$(spread w2 bare inner '$2 + $3')"), fork+exec $(pctof "$(spread w3 bare inner '$1')") / $(pctof "$(spread w3 bare inner '$2 + $3')")"
for m in fp dwarf; do ovh_rows w1 "1 thread" "$m"; done
for m in fp dwarf; do ovh_rows w2 "2 threads" "$m"; done
for m in fp dwarf; do ovh_rows w3 "fork+exec x$FE_N" "$m"; done

section "2. accuracy"
for m in fp dwarf; do
	q=$(per_run w1 "perf-$m" split share_error)
	if [ "$m" = fp ] || [ "$PT_DWARF" = 1 ]; then
		p=$(per_run w1 "pt-$m" split share_error)
		res=$(result le "$p" 2)
		fmt "self-share error, split -g $m (points)" "" "$(num "$p" %.2f)" "$(num "$q" %.2f)" "$(ratio "$p" "$q")" "<= 2 points" "$res"
		note_result "$res" "self-share error -g $m: $p points"
	else
		fmt "self-share error, split -g $m (points)" "" "$NA" "$(num "$q" %.2f)" - "<= 2 points" MISS
		note_result MISS "self-share error -g dwarf: proftool has no DWARF unwinding"
	fi
done
for m in fp dwarf; do
	q=$(per_run nofp "perf-$m" split-nofp completeness)
	tgt=""; [ "$m" = dwarf ] && tgt=">= 98% (dwarf)"
	if [ "$m" = fp ] || [ "$PT_DWARF" = 1 ]; then
		p=$(per_run nofp "pt-$m" split-nofp completeness)
		res=""
		if [ "$m" = dwarf ]; then res=$(result le 98 "$p"); note_result "$res" "stack completeness -g dwarf: $p%"; fi
		fmt "stack completeness, no-fp split -g $m (%)" "" "$(num "$p" %.1f)" "$(num "$q" %.1f)" "$(ratio "$p" "$q")" "$tgt" "$res"
	else
		fmt "stack completeness, no-fp split -g $m (%)" "" "$NA" "$(num "$q" %.1f)" - "$tgt" MISS
		note_result MISS "stack completeness -g dwarf: proftool has no DWARF unwinding"
	fi
done

section "3. lost samples, 2 busy threads (median, max over runs in brackets)"
lost_row() {   # lost_row CASE MODE LABEL TARGETKIND
	local c=$1 m=$2 label=$3 kind=$4 pm pM qm qM res tgt
	qm=$(counts_of "$c" "perf-$m" | awk '{ print $2 }' | med)
	qM=$(counts_of "$c" "perf-$m" | awk '{ print $2 }' | maxof)
	if [ "$kind" = zero ]; then tgt="0 at -F 999"; else tgt="< perf (or 0)"; fi
	if [ "$m" = fp ] || [ "$PT_DWARF" = 1 ]; then
		pm=$(counts_of "$c" "pt-$m" | awk '{ print $2 }' | med)
		pM=$(counts_of "$c" "pt-$m" | awk '{ print $2 }' | maxof)
		if [ "$kind" = zero ]; then
			res=$(result le "$pM" 0)
		else
			res=$(result eval 'lt "$pm" "$qm" || le "$pM" 0')
		fi
		fmt "$label" "" "$pm [$pM]" "$qm [$qM]" "$(ratio "$pm" "$qm")" "$tgt" "$res"
		note_result "$res" "$label: proftool $pm (max $pM), perf $qm"
	else
		fmt "$label" "" "$NA" "$qm [$qM]" - "$tgt" MISS
		note_result MISS "$label: proftool has no DWARF unwinding"
	fi
}
lost_row w2 fp "lost, 2 threads -F 999 -g fp" zero
lost_row w2 dwarf "lost, 2 threads -F 999 -g dwarf" zero
lost_row big "$BIG_MODE" "lost, 2 threads -F 10000 -g $BIG_MODE" fewer

section "4. profile size, bytes per 1000 samples (samples per recording in brackets)"
size_row() {   # size_row CASE MODE LABEL
	local c=$1 m=$2 label=$3 p q ps qs res tgt
	q=$(counts_of "$c" "perf-$m" | awk '{ print 1000 * $3 / $1 }' | med)
	qs=$(counts_of "$c" "perf-$m" | awk '{ print $1 }' | med)
	if [ "$m" = dwarf ]; then tgt="<= 1/50 perf (dwarf)"; else tgt="<= perf (fp)"; fi
	if [ "$m" = fp ] || [ "$PT_DWARF" = 1 ]; then
		p=$(counts_of "$c" "pt-$m" | awk '{ print 1000 * $3 / $1 }' | med)
		ps=$(counts_of "$c" "pt-$m" | awk '{ print $1 }' | med)
		if [ "$m" = dwarf ]; then res=$(result le "$(ratio "$p" "$q")" 0.02); else res=$(result le "$p" "$q"); fi
		fmt "$label -g $m" "" "$(num "$p" %.0f) [$(num "$ps" %.0f)]" "$(num "$q" %.0f) [$(num "$qs" %.0f)]" \
			"$(ratio "$p" "$q")" "$tgt" "$res"
		note_result "$res" "size, $label -g $m: proftool $(num "$p" %.0f) B vs perf $(num "$q" %.0f) B per 1000 samples"
	else
		fmt "$label -g $m" "" "$NA" "$(num "$q" %.0f) [$(num "$qs" %.0f)]" - "$tgt" MISS
		note_result MISS "size, $label -g dwarf: proftool has no DWARF unwinding"
	fi
}
size_row w1 fp "size, split"
size_row w1 dwarf "size, split"
size_row big "$BIG_MODE" "size, big recording"
if [ "$BIG_MODE" = fp ]; then
	fmt "size, big recording -g dwarf" "" "$NA" "not run" - "<= 1/50 perf (dwarf)" MISS
fi

PTS=$(awk '{ print $1 }' "$T/runs/big/pt-$BIG_MODE/$RUNS/counts")
PFS=$(awk '{ print $1 }' "$T/runs/big/perf-$BIG_MODE/$RUNS/counts")
section "5. report on the last big recording (-F 10000 -g $BIG_MODE, 2 threads: proftool $PTS samples, perf $PFS samples)"
rtgt="" rres=""
[ "$BIG_MODE" = dwarf ] && rtgt=">= 10x faster than perf"
qw=$(rep perf '$1'); qr=$(rep perf '$4 / 1024')
for fmtname in table folded; do
	pw=$(rep "pt-$fmtname" '$1'); pr=$(rep "pt-$fmtname" '$4 / 1024')
	if [ "$BIG_MODE" = dwarf ]; then
		rres=$(result le "$(ratio "$pw" "$qw")" 0.1); note_result "$rres" "report --format $fmtname wall: ${pw}s vs perf ${qw}s"
	fi
	fmt "report wall s (--format $fmtname)" "" "$(num "$pw" %.3f)" "$(num "$qw" %.3f)" "$(ratio "$pw" "$qw")" "$rtgt" "$rres"
	if [ "$BIG_MODE" = dwarf ]; then
		rres=$(result le "$(ratio "$pr" "$qr")" 0.1); note_result "$rres" "report --format $fmtname peak RSS: ${pr} MiB vs perf ${qr} MiB"
	fi
	fmt "report peak RSS MiB (--format $fmtname)" "" "$(num "$pr" %.1f)" "$(num "$qr" %.1f)" "$(ratio "$pr" "$qr")" \
		"$([ "$BIG_MODE" = dwarf ] && echo "<= 1/10 of perf")" "$rres"
done
if [ "$BIG_MODE" = fp ]; then
	fmt "report on a dwarf recording (wall, RSS)" "" "$NA" "not run" - ">= 10x faster, <= 1/10 RSS" MISS
	note_result MISS "report speed and memory on a DWARF recording: proftool has no DWARF unwinding (fp measured instead)"
fi

section "6. finish: target exit -> record returns, s (start-up: record start -> target start, for reference)"
# The target is for 200k samples; a smaller recording is judged on its finish time
# scaled linearly to 200k, which overestimates (part of the work is fixed or per
# distinct address, not per sample).
p=$(finish big "pt-$BIG_MODE"); q=$(finish big "perf-$BIG_MODE")
PTS_MED=$(counts_of big "pt-$BIG_MODE" | awk '{ print $1 }' | med)
if [ "$(num "$PTS_MED" %.0f)" -lt 190000 ]; then
	p200=$(awk -v p="$p" -v n="$PTS_MED" 'BEGIN { print p * 200000 / n }')
	tgt="<= 2 s at 200k (x$(num "$(awk -v n="$PTS_MED" 'BEGIN { print 200000 / n }')" %.2f) lin.)"
else
	p200=$p tgt="<= 2 s for 200k samples"
fi
res=$(result le "$p200" 2)
fmt "finish, big recording -g $BIG_MODE" "" "$(num "$p" %.3f)" "$(num "$q" %.3f)" "$(ratio "$p" "$q")" "$tgt" "$res"
note_result "$res" "finish, big recording: ${p}s (${p200}s scaled to 200k samples)"
for c in w1 w2 w3; do
	case $c in w1) l="1 thread" ;; w2) l="2 threads" ;; w3) l="fork+exec x$FE_N" ;; esac
	for m in fp dwarf; do
		[ "$m" = fp ] || [ "$PT_DWARF" = 1 ] || continue
		p=$(finish "$c" "pt-$m"); q=$(finish "$c" "perf-$m")
		fmt "finish, $l -g $m" "" "$(num "$p" %.3f)" "$(num "$q" %.3f)" "$(ratio "$p" "$q")" "" ""
	done
done
p=$(startup w1 pt-fp); q=$(startup w1 perf-fp)
fmt "start-up, 1 thread -g fp" "" "$(num "$p" %.3f)" "$(num "$q" %.3f)" "$(ratio "$p" "$q")" "" ""
section "7. fork-heavy job: a 30000-symbol library, 16 forked workers, -g dwarf -F 999 (issue 15: CPU per sample within 2x of 2 threads', RSS flat in workers)"
# profiler CPU per sample, microseconds: (record's CPU - the target's) / samples
per_sample() {
	local c=$1 v=$2 i n extra
	for ((i = 1; i <= RUNS; i++)); do
		n=$(sed -n "${i}p" <<<"$(counts_of "$c" "$v")" | awk '{ print $1 }')
		extra=0
		[ -f "$T/runs/$c/$v/$i/report" ] && extra=$(awk '{ print $2 + $3 }' "$T/runs/$c/$v/$i/report")
		paste -d' ' "$T/runs/$c/$v/$i/outer" "$T/runs/$c/$v/$i/inner" |
			awk -v n="$n" -v x="$extra" '{ print (($2 + $3) - ($8 + $9) + x) / n * 1e6 }'
	done | med
}
rss() { field "$1" "$2" outer '$4 / 1024' | med; }
p=$(per_sample fj16 pt-dwarf); q=$(per_sample fj16 perf-dwarf); s2=$(per_sample w2 pt-dwarf)
res=$(result le "$p" "$(awk -v s="$s2" 'BEGIN { print 2 * s }')")
fmt "fork x16: profiler CPU us/sample (perf: +report)" "" "$(num "$p" %.1f)" "$(num "$q" %.1f)" "$(ratio "$p" "$q")" "<= 2x 2 threads ($(num "$s2" %.1f))" "$res"
note_result "$res" "fork-heavy job: ${p} us of CPU per sample against ${s2} for 2 threads"
p4=$(per_sample fj4 pt-dwarf)
fmt "fork x4: profiler CPU us/sample" "" "$(num "$p4" %.1f)" "" "" "" ""
p=$(rss fj16 pt-dwarf); p4=$(rss fj4 pt-dwarf); q=$(rss fj16 perf-dwarf)
res=$(result le "$p" "$(awk -v a="$p4" 'BEGIN { print a * 1.15 + 2 }')")
fmt "fork x16: record peak RSS MiB (x4 in brackets)" "" "$(num "$p" %.1f) [$(num "$p4" %.1f)]" "$(num "$q" %.1f)" "$(ratio "$p" "$q")" "x16 <= 1.15 x4 + 2 MiB" "$res"
note_result "$res" "fork-heavy job: record peak RSS $p MiB with 16 workers, $p4 MiB with 4"
p=$(counts_of fj16 pt-dwarf | awk '{ print $2 }' | med); q=$(counts_of fj16 perf-dwarf | awk '{ print $2 }' | med)
fmt "fork x16: lost samples" "" "$p" "$q" "" "" ""

ELAPSED=$(($(date +%s) - T0))
{
	printf '\n'
	printf 'Date %s; Linux %s; %s; %s CPUs; %s; proftool %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -r)" \
		"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" "$(nproc)" \
		"$(perf version 2>/dev/null)" "$("$PT" --version 2>/dev/null | awk '{ print $NF }')"
	printf 'Bench took %d s; load average at the end: %s\n' "$ELAPSED" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf 'PASS %d, MISS %d\n' "$(grep -cE ' PASS$' "$TABLE" || true)" "$(grep -cE ' MISS( \(within noise\))?$' "$TABLE" || true)"
} >>"$TABLE"

cat "$TABLE"
if [ "${#MISSES[@]}" -gt 0 ]; then
	printf '\nMISS:\n' >&2
	printf '  - %s\n' "${MISSES[@]}" >&2
fi
[ "$ELAPSED" -lt 600 ] || echo "bench: warning: took $ELAPSED s, over the 10-minute budget" >&2

# ---------------------------------------------------------------- README
if [ "${BENCH_NO_README:-0}" != 1 ]; then
	if [ -f "$README" ] && grep -q '^<!-- bench:start -->$' "$README" && grep -q '^<!-- bench:end -->$' "$README"; then
		awk -v tf="$TABLE" '
			/^<!-- bench:start -->$/ { print; print "```"; while ((getline l < tf) > 0) print l; print "```"; skip = 1; next }
			/^<!-- bench:end -->$/ { skip = 0 }
			!skip { print }' "$README" >"$T/README.new"
		cat "$T/README.new" >"$README"
		echo "bench: table written to bench/README.md" >&2
	else
		echo "bench: bench/README.md has no <!-- bench:start --> / <!-- bench:end --> markers; table not saved" >&2
	fi
fi

# ---------------------------------------------------------------- named regions
[ "${BENCH_ONLY:-}" = perf ] || bench/regions.sh
# ---------------------------------------------------------------- dump
[ "${BENCH_ONLY:-}" = perf ] || bench/dump.sh
# ---------------------------------------------------------------- CPU per sample
[ "${BENCH_ONLY:-}" = perf ] || bench/pycost.sh
# ---------------------------------------------------------------- resident memory readings
[ "${BENCH_ONLY:-}" = perf ] || bench/rsscost.sh
# ---------------------------------------------------------------- stacks through code without CFI
[ "${BENCH_ONLY:-}" = perf ] || bench/jitstacks.sh
