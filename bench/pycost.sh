#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, profiler CPU per sample: what `proftool record` itself spends on each
# sample (its user+system time, less the target's), as the difference between a short
# and a long run of the same job divided by the difference in samples, so that start-up
# and finishing cancel out. A C job, a pure-Python job and, where python3 can import
# torch, the PyTorch job, each with --python off and by default; perf record -g on the
# C job beside them; the Python job bare and under perf -g, for the target's own
# slowdown; two measures of how often a Python stack was read after the thread moved on
# (callback.py, turns.py); and, where strace is installed, proftool's system calls per
# sample on the Python job. bench/run.sh runs it last, or alone with BENCH_ONLY=pycost.
# See bench/README.md ("Profiler CPU per sample").
#
# Environment: O=DIR (build directory, default build), BENCH_RUNS=N (pairs of runs per
# figure, median taken, default 3), BENCH_NO_README=1 (print the table only),
# PYCOST_SHORT=S and PYCOST_LONG=S (the two lengths, seconds, default 3 and 9).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
# shellcheck source=bench/readme_table.sh
. bench/readme_table.sh
# shellcheck source=bench/common.sh
. bench/common.sh
ROOT=$PWD
BUILD=$ROOT/${O:-build}
PT=$BUILD/proftool
RUNS=${BENCH_RUNS:-3}
SHORT=${PYCOST_SHORT:-3}
LONG=${PYCOST_LONG:-9}
README=$ROOT/bench/README.md
PY=/usr/bin/python3
FREQ=999
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }
progress() { printf 'bench: [%3ds] pycost: %s\n' $(($(date +%s) - T0)) "$*" >&2; }

[ -x "$PT" ] || die "$PT is missing; run make bench (it builds first)"
[ -x "$PY" ] || die "$PY (Debian's python3) is needed for the Python job"
command -v gcc >/dev/null 2>&1 || die "gcc is needed to build the bench workloads"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "BENCH_RUNS must be a positive whole number"
awk -v s="$SHORT" -v l="$LONG" 'BEGIN { exit !(s + 0 > 0 && l + 0 > s + 0) }' ||
	die "PYCOST_SHORT and PYCOST_LONG must be seconds, the first less than the second"

bench_workdir pycost
bench_tools
TORCH=0
"$PY" -c 'import torch' >/dev/null 2>&1 && TORCH=1

# ---------------------------------------------------------------- the jobs
# job NAME LEN: the command of job NAME sized for LEN seconds of wall time on 2 idle CPUs
job() {
	local half
	case $1 in
	# 4 threads of LEN/2 s of CPU each: LEN s on 2 CPUs, the profiler competing for them
	c) half=$(awk -v l="$2" 'BEGIN { print l / 2 }'); echo "$BL spin 4 $half" ;;
	# one interpreter, LEN s of CPU, six Python frames deep
	py) echo "$PY $ROOT/bench/pyspin.py $2" ;;
	# the PyTorch job: 8 DataLoader workers forked per epoch; an epoch stands for 3 s
	torch) echo "$PY $ROOT/bench/torchjob.py --workers 8 --epochs $(awk -v l="$2" 'BEGIN { e = int(l / 3 + 0.5); print (e < 1 ? 1 : e) }')" ;;
	esac
}

# measure VARIANT JOB LEN RUN: one recording through two timers, the outer one around
# the profiler, the inner one around the target ("wall user sys maxrss start end" each)
measure() {
	local var=$1 name=$2 len=$3 i=$4 d
	local -a rec
	d=$T/runs/$name/$var/$len/$i
	mkdir -p "$d"
	case $var in
	default) rec=("$PT" record -q -F "$FREQ" -o "$d/out.data" --) ;;
	python-off) rec=("$PT" record -q -F "$FREQ" --python off -o "$d/out.data" --) ;;
	read) rec=("$PT" record -q -F "$FREQ" --python-capture off -o "$d/out.data" --) ;;
	fp) rec=("$PT" record -q -F "$FREQ" -g fp -o "$d/out.data" --) ;;
	perf) rec=("${PERF[@]}" record -q -e cpu-clock -F "$FREQ" -g -o "$d/out.data" --) ;;
	bare) rec=() ;;
	*) die "internal: unknown variant $var" ;;
	esac
	# shellcheck disable=SC2046 # job prints a command line of plain words
	"$BL" run "$d/outer" "${rec[@]}" "$BL" run "$d/inner" $(job "$name" "$len") >"$d/stdout" 2>"$d/stderr" &
	local run=$!
	# while a long run goes, what a sample costs in it (steady); the PyTorch job's samples
	# are counted from its recording, its processes being many
	if [ "$len" = "$LONG" ] && [ "$var" != bare ]; then
		steady "$run" "$([ "$name" = torch ] && echo "$d/window")" >"$d/steady"
	fi
	if ! wait "$run"; then
		echo "bench: pycost: $name/$var ($len s) run $i failed: ${rec[*]} $(job "$name" "$len")" >&2
		sed 's/^/  /' "$d/stderr" >&2
		exit 1
	fi
	if [ "$var" = bare ]; then
		echo 0 >"$d/samples"
	else
		samples "$var" "$d/out.data" >"$d/samples"
	fi
	if [ -s "$d/window" ]; then
		window_steady "$d/window" "$d/out.data" >"$d/steady"
	fi
	# perf defers unwinding, naming and folding to perf report: the C job's reports are
	# timed too, each tool's default view of the recording
	if [ "$name" = c ] && [ "$var" = perf ]; then
		"$BL" run "$d/report" "${PERF[@]}" report --stdio -i "$d/out.data" >/dev/null 2>&1 ||
			die "pycost: perf report failed on $d/out.data"
	elif [ "$name" = c ] && [ "$var" = fp ]; then
		"$BL" run "$d/report" "$PT" report "$d/out.data" >/dev/null 2>&1 ||
			die "pycost: proftool report failed on $d/out.data"
	fi
	rm -f "$d/out.data"
}

# task_ns PID: the nanoseconds on a CPU of process PID's live threads (schedstat)
task_ns() { { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# window_steady WINDOW FILE: steady's figure for a job of many processes, from the window
# steady wrote ("nanoseconds of the profiler's CPU, from, to": the wall clock) and the
# recording FILE: the samples it holds between those instants, of every process
window_steady() {
	python3 - "$1" "$2" <<-'PY'
	import gzip, json, sys
	cpu, t0, t1 = (int(x) for x in open(sys.argv[1]).read().split())
	p = json.load(gzip.open(sys.argv[2]))
	start = p["meta"]["start_real_ns"]
	t, n = 0, 0
	for d in p["samples"]["time_us_delta"]:
	    t += d
	    n += t0 <= start + t * 1000 < t1
	print("%.3f" % (cpu / 1e3 / n) if n else "nan")
	PY
}

# steady OUTER [WINDOW]: the profiler's CPU per sample while the job runs, microseconds: its time on
# a CPU from 1 s into the run to LONG-2 s, over the samples the job's CPU time in that
# window makes at -F FREQ (cpu-clock samples per second of the job's CPU, for proftool
# and perf alike). Start-up and finishing are left out, and with them most of the run to
# run spread of the figure above; so is what the profiler does per sample once the job
# has ended (perf's pass over its samples for build-ids, proftool's symbolizing and
# writing). OUTER is the outer timer: its child the profiler, whose child is the inner
# timer, whose child is the job. "nan" when the job ended within the window (the C job
# on more than 2 CPUs: its threads then run side by side) or the window is under 1 s.
# With WINDOW, the job's samples are counted from its recording (window_steady): the
# profiler's CPU and the window's wall-clock bounds go to that file, and "nan" to stdout.
steady() {
	local prof="" inner="" job="" a b a2 b2 k win r0 r1
	# (the PyTorch job imports torch for its first 1-2 s, and its epochs take 1.2-2 s of the
	# 3 s they stand for here: its window is from 2 s to LONG - 5 s, 4 s for the default 9 s
	# run, which ends at 5-6.5 s)
	local lead=1
	[ -z "${2:-}" ] || lead=2
	win=$(awk -v l="$LONG" -v w="${2:-}" 'BEGIN { printf "%.3f", l - 3 - (w != "" ? 4 : 0) }')
	if ! awk -v w="$win" 'BEGIN { exit !(w >= 1) }'; then
		echo nan
		return
	fi
	sleep "$lead"
	for ((k = 0; k < 50; k++)); do
		[ -z "$job" ] || break
		# (pgrep finding nothing yet is no failure)
		prof=$(pgrep -P "$1" | head -n 1 || true)
		[ -z "$prof" ] || inner=$(pgrep -P "$prof" | head -n 1 || true)
		[ -z "$inner" ] || job=$(pgrep -P "$inner" | head -n 1 || true)
		[ -n "$job" ] || sleep 0.02
	done
	[ -n "$job" ] || { echo nan; return; }
	a=$(task_ns "$prof") b=$(task_ns "$job") r0=$(date +%s%N)
	sleep "$win"
	a2=$(task_ns "$prof") b2=$(task_ns "$job") r1=$(date +%s%N)
	if ! kill -0 "$job" 2>/dev/null || [ "$b2" -le "$b" ]; then
		echo nan
		return
	fi
	if [ -n "${2:-}" ]; then
		echo "$((a2 - a)) $r0 $r1" >"$2"
		echo nan
		return
	fi
	awk -v a="$a" -v a2="$a2" -v b="$b" -v b2="$b2" -v f="$FREQ" \
		'BEGIN { printf "%.3f\n", (a2 - a) / 1e3 / ((b2 - b) / 1e9 * f) }'
}

# samples VARIANT FILE: the samples in a recording
samples() {
	local n
	if [ "$1" = perf ]; then
		n=$("${PERF[@]}" report --stats -i "$2" 2>/dev/null | awk '/ stats:$/ { ev = 1 } ev && /SAMPLE events:/ { print $3; exit }')
	else
		n=$("$PT" report -i "$2" --limit 1 | awk '/ samples over / { print $1; exit }')
	fi
	[ -n "$n" ] || die "cannot read the sample count of a $1 recording"
	echo "$n"
}

# the profiler's own CPU in one run, seconds: user+sys of the outer timer less the inner's
own_cpu() { paste -d' ' "$1/outer" "$1/inner" | awk '{ printf "%.6f\n", ($2 + $3) - ($8 + $9) }'; }

med() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
result() { if "$@"; then echo PASS; else echo MISS; fi; }
num() { awk -v a="$1" -v f="$2" 'BEGIN { printf f "\n", a }'; }
MISSES=()
note_result() { [ "$1" != MISS ] || MISSES+=("$2"); }

# the report's CPU in one run, seconds: user+sys of its timer
report_cpu() { awk '{ printf "%.6f\n", $2 + $3 }' "$1/report"; }

# pair_costs JOB VARIANT [CPU]: microseconds of CPU per extra sample, one line for each run
# pair (short i, long i); CPU is the function that gives a run's seconds (own_cpu, the
# profiler's, by default; report_cpu)
pair_costs() {
	local i s l cpu=${3:-own_cpu}
	for ((i = 1; i <= RUNS; i++)); do
		s=$T/runs/$1/$2/$SHORT/$i l=$T/runs/$1/$2/$LONG/$i
		awk -v cs="$("$cpu" "$s")" -v cl="$("$cpu" "$l")" -v ns="$(cat "$s/samples")" -v nl="$(cat "$l/samples")" \
			'BEGIN { if (nl > ns) print (cl - cs) / (nl - ns) * 1e6; else print "nan" }'
	done
}
# per_sample JOB VARIANT: the median of the pairs' figures
per_sample() { pair_costs "$@" | med; }
# report_costs JOB VARIANT: the same for the report of each recording
report_costs() { pair_costs "$1" "$2" report_cpu; }
# in_run JOB VARIANT: the median of the long runs' steady figures, "nan" for none
in_run() {
	local i
	for ((i = 1; i <= RUNS; i++)); do
		cat "$T/runs/$1/$2/$LONG/$i/steady" 2>/dev/null || true
	done | awk '$1 != "nan"' | med
}
# spread FORMAT: "lowest..highest" of the numbers on stdin (a pair without a figure left out),
# each with printf format FORMAT
spread() { grep -v nan | sort -g | awk -v f="$1" 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf f ".." f "\n", lo, hi }'; }
# NEGATIVE: pairs whose long run cost the profiler less CPU than its short run: the
# machine's speed moved within the round, and no figure of this run is to be read alone
NEGATIVE=()
nsamples() { local i; for ((i = 1; i <= RUNS; i++)); do cat "$T/runs/$1/$2/$3/$i/samples"; done | med; }
# target_cpus JOB VARIANT: the target's own user+sys in each long run, seconds
target_cpus() { local i; for ((i = 1; i <= RUNS; i++)); do awk '{ printf "%.6f\n", $2 + $3 }' "$T/runs/$1/$2/$LONG/$i/inner"; done; }
target_cpu() { target_cpus "$@" | med; }
# target_spread JOB VARIANT: (max - min) / median of the same, a fraction
target_spread() { target_cpus "$@" | sort -g | awk -v m="$(target_cpu "$@")" '{ a[NR] = $1 } END { printf "%.4f\n", (m > 0 ? (a[NR] - a[1]) / m : 0) }'; }

# ---------------------------------------------------------------- running
CASES=("c default" "c python-off" "py default" "py read" "py python-off")
[ "${#PERF[@]}" = 0 ] || CASES+=("c perf" "c fp" "py perf")
# the Python job unprofiled: what the target's own CPU is without a profiler
CASES+=("py bare")
[ "$TORCH" = 0 ] || CASES+=("torch default" "torch read" "torch python-off")
progress "$RUNS rounds of ${#CASES[@]} cases, each run for $SHORT s and $LONG s, -F $FREQ"
# rounds: every case in turn, short and long, so that the machine's drift hits all alike
for ((i = 1; i <= RUNS; i++)); do
	for c in "${CASES[@]}"; do
		read -r name var <<<"$c"
		measure "$var" "$name" "$SHORT" "$i"
		measure "$var" "$name" "$LONG" "$i"
	done
	progress "round $i of $RUNS done"
done

# proftool's system calls per sample on a 2 s Python recording, counted while the target
# runs: from its execve to the wait4 that reaps it, so that start-up and finishing (reading
# /proc/kallsyms alone is thousands of reads) are left out. strace -f follows the target
# too; its own calls are told apart by process, the target being the process that calls
# execve after proftool's own (which strace shows on the first line).
SYSCALLS=(process_vm_readv epoll_wait ppoll poll clock_nanosleep read write wait4)
STRACE=0
if command -v strace >/dev/null 2>&1; then
	progress "strace -f of a 2 s Python recording"
	d=$T/strace
	mkdir -p "$d"
	# shellcheck disable=SC2046 # job prints a command line of plain words
	if strace -f -qq -o "$d/trace" -e trace="$(
		IFS=,
		echo "${SYSCALLS[*]},execve"
	)" "$PT" record -q -F "$FREQ" -o "$d/out.data" -- $(job py 2) >"$d/stdout" 2>"$d/stderr"; then
		samples default "$d/out.data" >"$d/samples"
		# "PID name(...": the first half of an interrupted call, never its "<... resumed>"
		awk 'NR == 1 { self = $1; next }
			!tgt && $2 ~ /^execve\(/ && $1 != self { tgt = $1; next }
			!tgt || done || $1 == tgt { next }
			/wait4/ && $NF == tgt { done = 1 }
			$2 !~ /^<\.\.\./ { n = $2; sub(/\(.*/, "", n); count[n]++ }
			/process_vm_readv/ && $(NF - 1) == "=" && $NF ~ /^[0-9]+$/ { bytes += $NF }
			END { for (n in count) print n, count[n]; print "bytes", bytes + 0 }' "$d/trace" >"$d/counts"
		STRACE=1
	else
		echo "bench: pycost: strace failed, system calls not counted: $(head -n 3 "$d/stderr" | tr '\n' ' ')" >&2
	fi
fi

# Staleness: the perf backend reads a Python stack after its sample, so the thread may
# have moved on. A Python -> C -> Python job (tests/workloads/py/callback.py: sorted() with
# a Python key, thousands of calls in and out of the interpreter per millisecond) shows
# it: a stack whose Python runs do not match its native eval loops was read after the
# thread entered or left a call (the recorder counts them, PROFTOOL_DEBUG_PYTHON=1).
# A lower bound of what staleness would be on slower-changing jobs, and the bench's
# measure of it: median of BENCH_RUNS recordings.
progress "staleness: Python stacks at odds with their native ones, callback.py"
STALE=() CAPTURED=() READ=()
for ((i = 0; i < RUNS; i++)); do
	d=$T/stale.$i
	mkdir -p "$d"
	PROFTOOL_DEBUG_PYTHON=1 "$PT" record -q -F "$FREQ" -o "$d/out.data" -- \
		"$PY" "$ROOT/tests/workloads/py/callback.py" 2 >/dev/null 2>"$d/stderr" || true
	# and read from the process after each sample (where BPF is not allowed), to compare
	PROFTOOL_DEBUG_PYTHON=1 "$PT" record -q -F "$FREQ" --python-capture off -o "$d/off.data" -- \
		"$PY" "$ROOT/tests/workloads/py/callback.py" 2 >/dev/null 2>"$d/off.stderr" || true
	n=$(samples default "$d/out.data" 2>/dev/null || echo 0)
	m=$(sed -n 's/.* \([0-9][0-9]*\) paired by position.*/\1/p' "$d/stderr" | tail -1)
	# how many of its stacks came whole from what was captured at the sample (BPF, root)
	CAPTURED+=("$(sed -n 's/.*debug: \([0-9][0-9]*\) Python stacks read.* \([0-9][0-9]*\) paired by position; \([0-9][0-9]*\) from what was captured.*/\3 \1 \2/p' "$d/stderr" | tail -1)")
	READ+=("$(sed -n 's/.*debug: \([0-9][0-9]*\) Python stacks read.* \([0-9][0-9]*\) paired by position.*/\2 \1/p' "$d/off.stderr" | tail -1)")
	[ -n "$m" ] && [ "${n:-0}" -gt 0 ] && STALE+=("$(awk -v m="$m" -v n="$n" 'BEGIN { printf "%.2f", 100 * m / n }')")
done

# Staleness the loops cannot show: two functions taking turns in the same frame slot
# (tests/workloads/py/turns.py: pyloop and hashing, 0.1 ms each) leave the same native
# stack, so a late read names the wrong one. Samples in SHA-256 code are hashing's: the
# share of them whose innermost Python frame is another, median of BENCH_RUNS recordings.
progress "staleness: samples in SHA-256 code not under hashing, turns.py"
TURNS=()
for ((i = 0; i < RUNS; i++)); do
	d=$T/turns.$i
	mkdir -p "$d"
	"$PT" record -q -F "$FREQ" -o "$d/out.data" -- "$PY" "$ROOT/tests/workloads/py/turns.py" 2 >/dev/null 2>&1 || continue
	"$PT" report -i "$d/out.data" --frames all --format folded >"$d/folded" || continue
	v=$(awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";") }
		tolower(line) ~ /sha2|libcrypto/ {
			for (j = k; j >= 1 && fr[j] !~ /\.py:[0-9]+\(/; j--)
				;
			with += n
			if (j < 1 || fr[j] !~ /\(hashing\)$/) bad += n
		}
		END { if (with) printf "%.2f\n", 100 * bad / with }' "$d/folded")
	[ -n "$v" ] && TURNS+=("$v")
done

# ---------------------------------------------------------------- the table
TABLE=$T/table
fmt() { printf '%-34s %-26s %17s %10s %13s %8s  %-26s %s\n' "$@" >>"$TABLE"; }
# fmt7: a row without an in-run figure
fmt7() { fmt "$1" "$2" "$3" "$4" "$5" "" "$6" "$7"; }
section() { printf '%s\n' "$*" >>"$TABLE"; }
{
	printf 'profiler CPU per sample: (user+sys of record, less the target'"'"'s, in a %s s run - in a %s s run)\n' "$LONG" "$SHORT"
	printf '/ (samples in the %s s run - in the %s s run); median of %d pairs; -F %d, call graph defaults\n' \
		"$LONG" "$SHORT" "$RUNS" "$FREQ"
	printf '(proftool: -g dwarf; perf: -g, frame pointers); pairs: the lowest..highest of the pairs'"'"' figures;\n'
	printf 'in-run: us per sample while the job ran (1 s to %s s into the long runs), start and end left out\n\n' \
		"$(awk -v l="$LONG" 'BEGIN { print l - 2 }')"
} >"$TABLE"
fmt "job" "option" "samples ${SHORT}s/${LONG}s" "us/sample" "pairs" "in-run" "target" "result"
fmt "---" "------" "----------------" "---------" "-----" "------" "------" "------"
row() {   # row JOB VARIANT LABEL OPTION
	local n ir
	n="$(num "$(nsamples "$1" "$2" "$SHORT")" %.0f)/$(num "$(nsamples "$1" "$2" "$LONG")" %.0f)"
	ir=$(in_run "$1" "$2")
	[ "$ir" = nan ] && ir="" || ir=$(num "$ir" %.1f)
	fmt "$3" "$4" "$n" "$(num "$(per_sample "$1" "$2")" %.1f)" "$(pair_costs "$1" "$2" | spread %.1f)" "$ir" "" ""
	if pair_costs "$1" "$2" | awk '$1 + 0 <= 0 || $1 == "nan" { bad = 1 } END { exit !bad }'; then
		NEGATIVE+=("$3, $4")
	fi
}
C_LABEL="C, 4 threads (benchload spin)"
PY_LABEL="Python, 6 frames (pyspin.py)"
row c default "$C_LABEL" "default (--python auto)"
row c python-off "$C_LABEL" "--python off"
if [ "${#PERF[@]}" != 0 ]; then
	row c fp "$C_LABEL" "-g fp (as perf -g)"
	row c perf "$C_LABEL" "perf record -g"
fi
row py default "$PY_LABEL" "default (copied at the sample)"
row py read "$PY_LABEL" "--python-capture off"
row py python-off "$PY_LABEL" "--python off"
if [ "$TORCH" = 1 ]; then
	row torch default "PyTorch, 8 workers (torchjob.py)" "default (copied at the sample)"
	row torch read "PyTorch, 8 workers (torchjob.py)" "--python-capture off"
	row torch python-off "PyTorch, 8 workers (torchjob.py)" "--python off"
else
	fmt7 "PyTorch (torchjob.py)" "skipped: $PY cannot import torch" "" "" "" "" ""
fi

section ""
section "targets"
pc=$(per_sample py default); cc=$(per_sample c default)
res=$(result le "$pc" 10)
ir=$(in_run py default)
[ "$ir" = nan ] && ir="" || ir=$(num "$ir" %.1f)
fmt "Python job, default" "us per sample" "" "$(num "$pc" %.1f)" "" "$ir" "<= 10 us" "$res"
note_result "$res" "Python job: $(num "$pc" %.1f) us of proftool's CPU per sample (target 10)"
# (in awk's printf, a bare '>' would redirect: comparisons go in parentheses)
ratio=$(awk -v a="$pc" -v b="$cc" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
res=$(result le "$ratio" 2.5)
fmt7 "Python job / C job, default" "ratio" "" "${ratio}x" "" "<= 2.5x" "$res"
note_result "$res" "Python job: ${ratio}x the C job's CPU per sample (target 2.5x)"
if [ "${#PERF[@]}" != 0 ]; then
	# like for like: perf -g walks frame pointers in the kernel, as proftool -g fp does;
	# proftool's default (-g dwarf) copies and unwinds 32 KiB of stack per sample
	qc=$(per_sample c perf) fc=$(per_sample c fp)
	res=$(result le "$fc" "$qc")
	ir=$(awk -v a="$(in_run c fp)" -v b="$(in_run c perf)" 'BEGIN { if (a == "nan" || b == "nan") print ""; else printf "%+.1f", a - b }')
	fmt "C job, -g fp, against perf -g" "proftool - perf, us" "" "$(awk -v a="$fc" -v b="$qc" 'BEGIN { printf "%+.1f", a - b }')" "" "$ir" "<= perf ($(num "$qc" %.1f) us)" "$res"
	note_result "$res" "C job: proftool -g fp $(num "$fc" %.1f) us per sample, perf record -g $(num "$qc" %.1f)"
	# and with the report each needs before a user reads anything: perf record only
	# copies the ring buffers, and unwinds, names and folds in perf report
	qr=$(report_costs c perf | med) fr=$(report_costs c fp | med)
	res=$(result le "$(awk -v a="$fc" -v b="$fr" 'BEGIN { print a + b }')" "$(awk -v a="$qc" -v b="$qr" 'BEGIN { print a + b }')")
	ir=$(awk -v a="$(in_run c fp)" -v b="$(in_run c perf)" -v c="$fr" -v d="$qr" \
		'BEGIN { if (a == "nan" || b == "nan") print ""; else printf "%+.1f", (a + c) - (b + d) }')
	fmt "C job, -g fp, record + report" "proftool - perf, us" "" \
		"$(awk -v a="$fc" -v b="$fr" -v c="$qc" -v d="$qr" 'BEGIN { printf "%+.1f", (a + b) - (c + d) }')" "" "$ir" \
		"<= perf ($(num "$qc" %.1f) + $(num "$qr" %.1f) us)" "$res"
	note_result "$res" "C job, record + report: proftool $(num "$fc" %.1f) + $(num "$fr" %.1f) us per sample, perf $(num "$qc" %.1f) + $(num "$qr" %.1f)"
	REPORTS="the reports alone, us of CPU per sample (marginal, as above): proftool report $(num "$fr" %.1f) ($(report_costs c fp | spread %.1f)), perf report --stdio $(num "$qr" %.1f) ($(report_costs c perf | spread %.1f))"
else
	fmt7 "C job, -g fp, against perf -g" "skipped: perf is missing" "" "" "" "<= perf" ""
fi

# the target's own slowdown: its CPU for the same work, profiled against bare; proftool's
# drain reads a Python process on the CPU it was sampled on, so the target waits for it,
# but only its wall time pays for that, not its CPU
bc=$(target_cpu py bare) dc=$(target_cpu py default)
slow() { awk -v a="$1" -v b="$bc" 'BEGIN { printf "%+.1f%%", (b > 0 ? 100 * (a / b - 1) : 0) }'; }
if [ "${#PERF[@]}" != 0 ]; then
	qc=$(target_cpu py perf)
	res=$(result le "$dc" "$qc")
	if [ "$res" = MISS ] && awk -v a="$dc" -v b="$qc" -v c="$bc" -v s="$(target_spread py bare)" 'BEGIN { exit !((a - b) / c < s) }'; then
		res="MISS (within noise)"
	fi
	fmt7 "Python job, target's own CPU" "proftool, perf -g, vs bare" "" "$(slow "$dc")" "" "<= perf ($(slow "$qc"))" "$res"
	[ "$res" != MISS ] || MISSES+=("Python job: the target's CPU $(slow "$dc") profiled by proftool, $(slow "$qc") by perf -g")
else
	fmt7 "Python job, target's own CPU" "proftool vs bare" "" "$(slow "$dc")" "" "<= perf" "skipped: no perf"
fi
# stale_row LABEL MEASURE MISS_TEXT PERCENT...: a staleness row, the median (the lower
# of the two middle ones) of the recordings' percentages against 1 %; MISS_TEXT follows
# the figure in the list of misses
stale_row() {
	local label=$1 measure=$2 text=$3 st res
	shift 3
	if [ "$#" = 0 ]; then
		fmt7 "$label" "not measured" "" "" "" "<= 1%" ""
		return
	fi
	st=$(printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	res=$(result le "$st" 1)
	fmt7 "$label" "$measure" "" "$st%" "$(printf '%s\n' "$@" | spread %.2f)" "<= 1%" "$res"
	note_result "$res" "staleness: $st% $text (target 1%)"
}
stale_row "Python stacks at odds (callback.py)" "% of samples, median" \
	"of callback.py's samples have Python stacks at odds with their native ones" "${STALE[@]}"
stale_row "Python frames newer (turns.py)" "% of SHA-256 samples, median" \
	"of turns.py's samples in SHA-256 code are not under hashing" "${TURNS[@]}"

if [ -n "${REPORTS:-}" ]; then
	section ""
	section "C job, -g fp: $REPORTS"
fi
section ""
section "callback.py by default (root, or CAP_BPF and CAP_PERFMON): Python stacks read whole from what"
section "  a BPF program copied at the sample, and stacks at odds with their native ones: $(printf '%s\n' "${CAPTURED[@]}" | awk 'NF == 3 { c += $1; r += $2; m += $3 } END { if (r) printf "%.1f%% and %.2f%% of %d", 100 * c / r, 100 * m / r, r; else print "none" }')"
section "  with --python-capture off, read from the process after each sample: $(printf '%s\n' "${READ[@]}" | awk 'NF == 2 { m += $1; r += $2 } END { if (r) printf "%.2f%% of %d at odds", 100 * m / r, r; else print "none read" }')"
if [ "$STRACE" = 1 ]; then
	n=$(cat "$T/strace/samples")
	section "system calls of proftool per sample while the target ran, strace -f of a 2 s Python recording (default options, $n samples):"
	line=""
	for sc in "${SYSCALLS[@]}"; do
		line+="$sc $(awk -v s="$sc" -v n="$n" '$1 == s { c = $2 } END { printf "%.2f", (c + 0) / n }' "$T/strace/counts"), "
	done
	section "  ${line%, }"
	section "  bytes copied by process_vm_readv per sample: $(awk -v n="$n" '$1 == "bytes" { printf "%.0f", $2 / n }' "$T/strace/counts")"
else
	section "system calls per sample: skipped (strace is not installed)"
fi

if [ "${#NEGATIVE[@]}" -gt 0 ]; then
	section ""
	section "NOT TO BE READ: a long run cost the profiler no more CPU per sample than its short run in"
	section "  $(printf '%s; ' "${NEGATIVE[@]}" | sed 's/; $//')"
	section "  (the machine's speed moved within a round; run again on a quieter machine)"
fi

ELAPSED=$(($(date +%s) - T0))
{
	printf '\n'
	printf 'Date %s; Linux %s; %s; %s CPUs; %s; Python %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -r)" \
		"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" "$(nproc)" \
		"$( ((${#PERF[@]})) && perf version 2>/dev/null || echo 'no perf')" \
		"$("$PY" -c 'import platform; print(platform.python_version())')"
	printf 'Took %d s; load average at the end: %s\n' "$ELAPSED" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf 'PASS %d, MISS %d\n' "$(grep -cE ' PASS$' "$TABLE" || true)" "$(grep -cE ' MISS( \(within noise\))?$' "$TABLE" || true)"
} >>"$TABLE"

cat "$TABLE"
if [ "${#MISSES[@]}" -gt 0 ]; then
	printf '\nMISS:\n' >&2
	printf '  - %s\n' "${MISSES[@]}" >&2
fi

save_table pycost "$TABLE" "$README"
