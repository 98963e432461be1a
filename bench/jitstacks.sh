#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, stacks through code without usable unwind information (issue 24): the share
# of samples whose stacks reach their root on two Python jobs that run such code, with
# proftool before stack scanning (--unwind-scan off) and after (the default), beside perf
# record -g (frame pointers) and perf record --call-graph dwarf, in the same run; and what
# scanning costs: proftool's CPU with scanning less without, per stack scanned. The jobs:
# a PyTorch convolution job (tests/workloads/py/conv.py: oneDNN's JIT kernels, no CFI; only
# where python3 can import torch) and a hashing script (tests/workloads/py/hashing.py:
# OpenSSL's SHA-256, whose CFA is in the red zone). bench/run.sh runs it after rsscost.sh,
# or alone with BENCH_ONLY=jitstacks. See bench/README.md ("Stacks through code without
# unwind information").
#
# Environment: O=DIR (build directory, default build), BENCH_RUNS=N (runs per figure,
# median taken, default 3), BENCH_NO_README=1 (print the table only).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
# shellcheck source=bench/readme_table.sh
. bench/readme_table.sh
# shellcheck source=bench/common.sh
. bench/common.sh
ROOT=$PWD
PT=$ROOT/${O:-build}/proftool
RUNS=${BENCH_RUNS:-3}
README=$ROOT/bench/README.md
PY=/usr/bin/python3
FREQ=999
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }
progress() { printf 'bench: [%3ds] jitstacks: %s\n' $(($(date +%s) - T0)) "$*" >&2; }

[ -x "$PT" ] || die "$PT is missing; run make bench (it builds first)"
[ -x "$PY" ] || die "$PY (Debian's python3) is needed for the jobs"
command -v gcc >/dev/null 2>&1 || die "gcc is needed to build the bench workloads"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "BENCH_RUNS must be a positive whole number"

bench_workdir jitstacks
bench_tools
JOBS=(hashing)
"$PY" -c 'import torch' >/dev/null 2>&1 && JOBS=(conv hashing)
VARS=(pt-off pt-on)
[ "${#PERF[@]}" = 0 ] || VARS+=(perf-fp perf-dwarf)

# job NAME: the command of job NAME, about 5 s of CPU on the 2-CPU VM (conv: 1.3 s of it
# importing torch)
job() {
	case $1 in
	conv) echo "$PY $ROOT/tests/workloads/py/conv.py 3" ;;
	hashing) echo "$PY $ROOT/tests/workloads/py/hashing.py 1" ;;
	esac
}

# measure JOB VARIANT RUN: one recording through two timers, the outer one around the
# profiler, the inner one around the target ("wall user sys maxrss start end" each); then
# its stacks, "COUNT FRAME;FRAME;..." root first, kernel frames left out
measure() {
	local name=$1 var=$2 i=$3 d
	local -a rec
	d=$T/runs/$name/$var/$i
	mkdir -p "$d"
	case $var in
	pt-off) rec=("$PT" record -q -F "$FREQ" --unwind-scan off -o "$d/out.data" --) ;;
	pt-on) rec=("$PT" record -q -F "$FREQ" -o "$d/out.data" --) ;;
	perf-fp) rec=("${PERF[@]}" record -q -e cpu-clock -F "$FREQ" -g -o "$d/out.data" --) ;;
	perf-dwarf) rec=("${PERF[@]}" record -q -e cpu-clock -F "$FREQ" --call-graph dwarf -o "$d/out.data" --) ;;
	*) die "internal: unknown variant $var" ;;
	esac
	# shellcheck disable=SC2046 # job prints a command line of plain words
	if ! "$BL" run "$d/outer" "${rec[@]}" "$BL" run "$d/inner" $(job "$name") >"$d/stdout" 2>"$d/stderr"; then
		echo "bench: jitstacks: $name/$var run $i failed: ${rec[*]} $(job "$name")" >&2
		sed 's/^/  /' "$d/stderr" >&2
		exit 1
	fi
	if [[ $var == pt-* ]]; then
		# every frame as recorded: the interpreter's start-up chain is where the root is
		"$PT" report -i "$d/out.data" --frames all --format folded | awk '
			{ n = $NF; st = substr($0, 1, length($0) - length($NF) - 1)
			  k = split(st, f, ";"); out = ""
			  for (j = 1; j <= k; j++) if (f[j] !~ /^\[kernel\]/) out = out (out == "" ? "" : ";") f[j]
			  print n, (out == "" ? "-" : out) }' >"$d/stacks"
		"$PT" report -i "$d/out.data" --limit 1 | sed -n 's/^Stack scanning: \([0-9]*\) of.*/\1/p' >"$d/scanned"
		[ -s "$d/scanned" ] || echo 0 >"$d/scanned"
		"$PT" report -i "$d/out.data" --frames all --format folded --module '[jit]' 2>/dev/null >"$d/jit" || true
	else
		"${PERF[@]}" script -i "$d/out.data" -F comm,tid,ip,sym,dso 2>/dev/null | awk '
			function flush() { if (have) print 1, (st == "" ? "-" : st); have = 0; st = "" }
			/^[^ \t]/ { flush(); have = 1; next }
			/^[ \t]*$/ { flush(); next }
			{ dso = $NF; if (dso == "([kernel.kallsyms])" || dso ~ /^\(\[guest/) next
			  sym = $2; for (j = 3; j < NF; j++) sym = sym " " $j
			  sub(/@.*/, "", sym); sub(/\+0x[0-9a-f]+$/, "", sym)
			  st = sym (st == "" ? "" : ";") st }   # perf prints the leaf first
			END { flush() }' >"$d/stacks"
	fi
	rm -f "$d/out.data"
}

# ---------------------------------------------------------------- figures
med() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
num() { awk -v a="$1" -v f="$2" 'BEGIN { if (a == "nan" || a == "") print "-"; else printf f "\n", a }'; }

# % of a run's samples whose stack reaches its root: the program's start-up code or a
# thread's entry (as bench/run.sh's completeness counts, main aside: a Python job's is the
# interpreter's)
whole() {
	awk '{ n = $1; t += n
		if ($2 ~ /(^|;)(_start|__libc_start_main[_a-z]*|__libc_start_call_main|start_thread|clone3?|__clone3?)(;|$)/) ok += n }
		END { if (!t) print "nan"; else printf "%.2f\n", 100 * ok / t }' "$1"
}
samples() { awk '{ t += $1 } END { print t + 0 }' "$1"; }
# % of the JIT samples (innermost frame JIT code) with a native caller directly above
# their JIT frames (not JIT code, not Python: as tests/jit.bats counts)
jit_caller() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); gsub(/;\[kernel\] [^;]*/, ""); k = split($0, f, ";")
		t += n; st[NR] = $0; cnt[NR] = n; jit[f[k]] = 1 }
		END {
			for (i = 1; i <= NR; i++) {
				k = split(st[i], f, ";")
				for (j = k; j > 0 && (f[j] in jit || f[j] ~ /^\[jit\] /); j--)
					;
				if (j > 0 && f[j] !~ /\.py:[0-9]+\(|^<[^>]*>:[0-9]+\(|^\[/) ok += cnt[i]
			}
			if (!t) print "nan"; else printf "%.2f\n", 100 * ok / t
		}' "$1"
}
# the profiler's own CPU in one run, seconds: user+sys of the outer timer less the inner's
own_cpu() { paste -d' ' "$1/outer" "$1/inner" | awk '{ printf "%.6f\n", ($2 + $3) - ($8 + $9) }'; }

# over_runs JOB VARIANT FUNC FILE: FUNC of each run's FILE, median
over_runs() {
	local i
	for ((i = 1; i <= RUNS; i++)); do "$3" "$T/runs/$1/$2/$i/$4"; done | med
}
# per_scan JOB: microseconds of proftool's CPU per scanned stack, for each run pair (on
# i, off i): (CPU on - CPU off) / stacks scanned in the run with scanning; median
per_scan() {
	local i on off
	for ((i = 1; i <= RUNS; i++)); do
		on=$T/runs/$1/pt-on/$i off=$T/runs/$1/pt-off/$i
		awk -v a="$(own_cpu "$on")" -v b="$(own_cpu "$off")" -v n="$(cat "$on/scanned")" \
			'BEGIN { if (n > 0) print (a - b) / n * 1e6; else print "nan" }'
	done | med
}
scanned_med() { local i; for ((i = 1; i <= RUNS; i++)); do cat "$T/runs/$1/pt-on/$i/scanned"; done | med; }
cpu_med() { local i; for ((i = 1; i <= RUNS; i++)); do own_cpu "$T/runs/$1/$2/$i"; done | med; }

# ---------------------------------------------------------------- running
progress "$RUNS rounds of ${#JOBS[@]} jobs x ${#VARS[@]} variants, -F $FREQ"
for ((i = 1; i <= RUNS; i++)); do
	for name in "${JOBS[@]}"; do
		for var in "${VARS[@]}"; do
			measure "$name" "$var" "$i"
		done
	done
	progress "round $i of $RUNS done"
done

# ---------------------------------------------------------------- the table
TABLE=$T/table
fmt() { printf '%-31s %-36s %8s %8s %9s %11s\n' "$@" >>"$TABLE"; }
label() {
	case $1 in
	pt-off) echo "proftool --unwind-scan off (before)" ;;
	pt-on) echo "proftool (after: scanning)" ;;
	perf-fp) echo "perf record -g" ;;
	perf-dwarf) echo "perf record --call-graph dwarf" ;;
	esac
}
{
	printf 'stacks reaching their root (_start, __libc_start_main, start_thread, clone): %% of the samples,\n'
	printf 'median of %d runs; -F %d, -e cpu-clock, the tools'"'"' defaults otherwise (proftool -g dwarf and a 32 KiB\n' "$RUNS" "$FREQ"
	printf 'stack copy; perf --call-graph dwarf 8 KiB); JIT callers: %% of the samples in JIT code with a native\n'
	printf 'caller directly above it (proftool only: perf names no JIT code)\n\n'
} >"$TABLE"
fmt "job" "profiler" "samples" "whole %" "JIT call%" "CPU s/run"
fmt "---" "--------" "-------" "-------" "---------" "---------"
for name in "${JOBS[@]}"; do
	case $name in
	conv) jl="PyTorch convolutions, conv.py" ;;
	hashing) jl="SHA-256 from Python, hashing.py" ;;
	esac
	for var in "${VARS[@]}"; do
		jc=-
		if [[ $var == pt-* ]] && [ "$name" = conv ]; then jc=$(num "$(over_runs "$name" "$var" jit_caller jit)" %.1f); fi
		fmt "$jl" "$(label "$var")" "$(num "$(over_runs "$name" "$var" samples stacks)" %.0f)" \
			"$(num "$(over_runs "$name" "$var" whole stacks)" %.1f)" "$jc" "$(num "$(cpu_med "$name" "$var")" %.3f)"
	done
done
[ "${JOBS[0]}" = conv ] || fmt "PyTorch (conv.py)" "skipped: $PY cannot import torch" "" "" "" ""
[ "${#PERF[@]}" != 0 ] || fmt "perf" "skipped: perf is missing or does not work" "" "" "" ""

printf '\ncost of scanning: (proftool'"'"'s CPU with scanning - without) / stacks scanned, median of %d pairs\n' "$RUNS" >>"$TABLE"
for name in "${JOBS[@]}"; do
	printf '  %-8s %6s stacks scanned a run, %8s us per scanned stack\n' "$name" \
		"$(num "$(scanned_med "$name")" %.0f)" "$(num "$(per_scan "$name")" %.1f)" >>"$TABLE"
done

{
	printf '\n'
	printf 'Date %s; Linux %s; %s; %s CPUs; %s; Python %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -r)" \
		"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" "$(nproc)" \
		"$( ((${#PERF[@]})) && perf version 2>/dev/null || echo 'no perf')" \
		"$("$PY" -c 'import platform; print(platform.python_version())')"
	printf 'Took %d s; load average at the end: %s\n' $(($(date +%s) - T0)) "$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$TABLE"

cat "$TABLE"
save_table jitstacks "$TABLE" "$README"
