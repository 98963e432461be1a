#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, named regions: what a region costs in C (<proftool.h>) and in Python
# (python/proftool), recorded and not, and a million tiny regions of each read back
# by proftool's reader. bench/run.sh runs it after the perf comparison, or alone with
# BENCH_ONLY=regions. See bench/README.md ("Named regions") for the method.
#
# Environment: O=DIR (build directory, default build), BENCH_RUNS=N (rounds, default
# 5), BENCH_NO_README=1 (print the table only).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."
# shellcheck source=bench/readme_table.sh
. bench/readme_table.sh
ROOT=$PWD
BUILD=$ROOT/${O:-build}
RUNS=${BENCH_RUNS:-5}
README=$ROOT/bench/README.md
PY=/usr/bin/python3
PAIRS=100000            # C: pairs per run
CRUNS=21                # C: runs per round, median taken
COUNT=1000000           # the tiny regions read back
T0=$(date +%s)

die() { echo "bench: $*" >&2; exit 1; }
progress() { printf 'bench: [%3ds] regions: %s\n' $(($(date +%s) - T0)) "$*" >&2; }

[ -x "$BUILD/bench/regions" ] || die "$BUILD/bench/regions is missing; run make bench (it builds first)"
[ -f "$BUILD/libproftool-rt.so" ] || die "$BUILD/libproftool-rt.so is missing; run make bench (it builds first)"
[ -x "$PY" ] || die "$PY (Debian's python3) is needed for the Python figures"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "BENCH_RUNS must be a positive whole number"

# The files go where proftool record puts its directory: under $TMPDIR (here an ext4
# disk; /dev/shm is measured beside it for comparison).
T=$(mktemp -d "${TMPDIR:-/tmp}/proftool-bench-regions.XXXXXX")
SHM=
cleanup() { rm -rf "$T" ${SHM:+"$SHM"}; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cp "$BUILD/libproftool-rt.so" "$T/libproftool-rt.so"
cp "$BUILD/bench/regions" "$T/regions"
export PROFTOOL_RT=$T/libproftool-rt.so
unset PROFTOOL_REGIONS PROFTOOL_REGIONS_MB
R=$T/regions

med() { sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
result() { if "$@"; then echo PASS; else echo MISS; fi; }
num() { awk -v a="$1" -v f="$2" 'BEGIN { printf f "\n", a }'; }
MISSES=()
note_result() { [ "$1" != MISS ] || MISSES+=("$2"); }

# ---------------------------------------------------------------- C
# RUNS rounds of every case, each round in fresh processes, the order of the cases
# reversed every other round (a recorded case leaves ~70 MB for the kernel to write
# back while the next one runs); a figure is the median of the rounds' medians.
CASES=(clock unrecorded unrecorded-scope recorded recorded-scope recorded-warm cold)
progress "C: $RUNS rounds of $CRUNS runs x $PAIRS pairs per case, files under ${TMPDIR:-/tmp}"
for ((i = 1; i <= RUNS; i++)); do
	order=("${CASES[@]}")
	if ((i % 2 == 0)); then
		order=()
		for ((k = ${#CASES[@]} - 1; k >= 0; k--)); do order+=("${CASES[k]}"); done
	fi
	mkdir "$T/c$i"
	"$R" time "$T/c$i" "$PAIRS" "$CRUNS" "${order[@]}" >"$T/c$i.out" || die "bench/regions time failed"
	rm -rf "$T/c$i"
done
if [ -d /dev/shm ] && SHM=$(mktemp -d /dev/shm/proftool-bench-regions.XXXXXX 2>/dev/null); then
	progress "C: recorded into /dev/shm (tmpfs), for comparison"
	for ((i = 1; i <= RUNS; i++)); do
		"$R" time "$SHM" "$PAIRS" "$CRUNS" recorded >"$T/shm$i.out" || die "bench/regions time failed"
		rm -rf "${SHM:?}"/*
	done
fi
# c CASE KEY [PREFIX]: the median over the rounds of KEY (wall, cpu) of CASE
c() { local i; for ((i = 1; i <= RUNS; i++)); do
	awk -v c="$1" -v k="$2" '$1 == c { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$T/${3:-c}$i.out"
done | med; }

# ---------------------------------------------------------------- Python
PYTHONS=("$PY")
# pyenv's, where there are any: 3.8 and later (the module's oldest), in version order
while read -r p; do
	[ -x "$p" ] || continue
	"$p" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null && PYTHONS+=("$p")
done < <(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 2>/dev/null | sort -V)
for p in "${PYTHONS[@]}"; do
	v=$("$p" -c 'import platform; print(platform.python_version())')
	progress "Python $v ($p): bench/regions_py.py, $RUNS runs x 200000 blocks"
	TMPDIR=$T "$p" bench/regions_py.py --runs "$RUNS" >"$T/py-$v.out" || die "bench/regions_py.py failed with $p"
	echo "$v $p" >>"$T/pythons"
done
# py VERSION recording|not KEY: ns per `with` (KEY 4: wall, 5: CPU, of the "with" line)
py() { awk -v r="$2" -v k="$3" '
	r == "not" && $1 == "not" && $3 == "with" { print $(k + 1) }
	r == "recording" && $1 == "recording" && $2 == "with" { print $k }' "$T/py-$1.out"; }

# ---------------------------------------------------------------- a million
progress "C: $COUNT tiny regions recorded and read back"
mkdir "$T/count-c" "$T/count-py"
"$R" count "$T/count-c" "$COUNT" >"$T/count-c.out" || die "bench/regions count failed"
progress "Python $("$PY" -c 'import platform; print(platform.python_version())'): $COUNT tiny regions recorded and read back"
PROFTOOL_REGIONS=$T/count-py PYTHONPATH=$ROOT/python "$PY" -c '
import sys
import proftool
assert proftool.enabled()
for _ in range(int(sys.argv[1])):
    with proftool.region("tiny"):
        pass' "$COUNT" || die "the Python count failed"
"$R" read "$T/count-py" >"$T/count-py.out" || die "bench/regions read failed"
# exact LINE: the reader saw COUNT begin/end pairs, nothing else, nothing dropped or torn
exact() { awk -v n="$COUNT" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
	END { exit !(v["pairs"] == n && v["begins"] == n && v["ends"] == n && v["other"] == 0 &&
		     v["dropped"] == 0 && v["torn"] == 0 && v["files"] == 1 && v["bad"] == 0) }' "$1"; }
field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

# ---------------------------------------------------------------- the table
TABLE=$T/table
fmt() { printf '%-58s %10s %10s  %-26s %s\n' "$@" >>"$TABLE"; }
section() { printf '%s\n' "$*" >>"$TABLE"; }
: >"$TABLE"
fmt "measurement (median of $RUNS rounds)" "CPU" "wall" "target" "result"
fmt "-----------" "---" "----" "------" "------"

section "C, ns per begin/end pair ($CRUNS runs x $PAIRS pairs a round; gcc -O2; file under ${TMPDIR:-/tmp})"
crow() {        # crow CASE LABEL LIMIT [PREFIX]
	local p w res=""
	p=$(c "$1" cpu "${4:-}"); w=$(c "$1" wall "${4:-}")
	if [ -n "$3" ]; then
		res=$(result le "$p" "$3")
		note_result "$res" "$2: $(num "$p" %.1f) ns per pair (CPU), $(num "$w" %.1f) ns wall"
	fi
	fmt "$2" "$(num "$p" %.1f)" "$(num "$w" %.1f)" "${3:+<= $3 ns}" "$res"
}
crow recorded "recorded: begin(name) ... end(name)" 60
crow recorded-scope "recorded: PROFTOOL_REGION(name) { }" 60
crow unrecorded "not recorded: begin(name) ... end(name)" 2
crow unrecorded-scope "not recorded: PROFTOOL_REGION(name) { }" 2
section "C, what a recorded begin/end pair is made of (for reference)"
ck=$(c clock cpu); warm=$(c recorded-warm cpu); rec=$(c recorded cpu)
fmt "two clock_gettime(CLOCK_MONOTONIC) alone (vDSO)" "$(num "$ck" %.1f)" "$(num "$(c clock wall)" %.1f)" "" ""
fmt "recorded into pages given memory beforehand" "$(num "$warm" %.1f)" "$(num "$(c recorded-warm wall)" %.1f)" "" ""
fmt "  the runtime's own work (that less the clock)" "$(num "$(awk -v w="$warm" -v k="$ck" 'BEGIN { print w - k }')" %.1f)" "" "" ""
fmt "  fresh pages (recorded less that; 1 page per 128 pairs)" "$(num "$(awk -v w="$warm" -v r="$rec" 'BEGIN { print r - w }')" %.1f)" "" "" ""
if [ -n "$SHM" ]; then
	fmt "recorded, the file in /dev/shm (tmpfs)" "$(num "$(c recorded cpu shm)" %.1f)" "$(num "$(c recorded wall shm)" %.1f)" "" ""
fi
fmt "a fresh process's first 1000 pairs, per pair" "" "$(num "$(c cold-1000 wall)" %.1f)" "" ""
fmt "its first call (loads the runtime, makes the file), us" "" "$(num "$(c first-call wall)" %.0f)" "" ""

section "Python, ns per 'with proftool.region(name): pass' (bench/regions_py.py: $RUNS runs x 200000 blocks)"
while read -r v p; do
	label="Python $v"
	[ "$p" = "$PY" ] && label="Python $v (Debian's python3)"
	for r in recording not; do
		if [ "$r" = recording ]; then l="$label, recorded"; lim=1000; else l="$label, not recorded"; lim=300; fi
		pc=$(py "$v" "$r" 4); pw=$(py "$v" "$r" 3)
		res=$(result le "$pc" "$lim")
		note_result "$res" "$l: $pc ns per with (CPU), $pw ns wall"
		fmt "$l" "$pc" "$pw" "<= $lim ns" "$res"
	done
done <"$T/pythons"

section "$COUNT tiny regions, default sizes, read back by regions/read.c (pairs, dropped, torn)"
for w in c py; do
	f=$T/count-$w.out
	if [ "$w" = c ]; then l="C: $COUNT begin/end pairs"; else l="Python: $COUNT 'with' blocks"; fi
	res=$(result exact "$f")
	note_result "$res" "$l: read back $(cat "$f")"
	fmt "$l" "" "" "exactly $COUNT, 0 dropped" "$res"
	fmt "  read back: $(field "$f" pairs) pairs, $(field "$f" dropped) dropped, $(field "$f" torn) torn" "" "" "" ""
done

ELAPSED=$(($(date +%s) - T0))
{
	printf '\n'
	printf 'Date %s; Linux %s; %s; %s CPUs; clocksource %s; %s on %s; gcc %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
		"$(uname -r)" "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" "$(nproc)" \
		"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')" \
		"${TMPDIR:-/tmp}" "$(findmnt -n -o FSTYPE -T "${TMPDIR:-/tmp}" 2>/dev/null || echo '?')" \
		"$(gcc -dumpfullversion 2>/dev/null || echo '?')"
	printf 'Took %d s; load average at the end: %s\n' "$ELAPSED" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf 'PASS %d, MISS %d\n' "$(grep -cE ' PASS$' "$TABLE" || true)" "$(grep -cE ' MISS$' "$TABLE" || true)"
} >>"$TABLE"

cat "$TABLE"
if [ "${#MISSES[@]}" -gt 0 ]; then
	printf '\nMISS:\n' >&2
	printf '  - %s\n' "${MISSES[@]}" >&2
fi

save_table regions "$TABLE" "$README"
