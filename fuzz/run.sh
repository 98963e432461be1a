#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs each fuzz target for SECONDS and says what it did; exits 1 when one crashed.
# Usage: fuzz/run.sh FUZZ_DIR SECONDS TARGET...
# FUZZ_DIR is the clang build (build-fuzz): binaries in FUZZ_DIR/fuzz, seeds in
# FUZZ_DIR/seeds/TARGET. The growing corpus is kept in FUZZ_DIR/corpus/TARGET
# between runs; crashes, leaks, timeouts and out-of-memory inputs are written
# to FUZZ_DIR/crashes/TARGET/ and the log of each run to FUZZ_DIR/logs/.
set -u

dir=$1
secs=$2
shift 2
failed=0

for t in "$@"; do
	bin=$dir/fuzz/$t
	corpus=$dir/corpus/$t
	art=$dir/crashes/$t
	log=$dir/logs/$t.log
	mkdir -p "$corpus" "$dir/seeds/$t" "$art" "$dir/logs"
	# an ELF file needs room for its section headers at the end; a profile is small JSON
	case $t in
	fuzz_elf) maxlen=131072 ;;
	*) maxlen=65536 ;;
	esac
	# forged Python processes whose walks reach the reader's bounds take up to a second each
	# under the sanitizers: weighing inputs by their speed, it runs 25 times as many
	extra=
	case $t in
	fuzz_python_read) extra=-entropic_scale_per_exec_time=1 ;;
	esac
	dict=
	[ -f "fuzz/$t.dict" ] && dict=-dict=fuzz/$t.dict
	before=$(ls "$art" | wc -l)
	start=$(date +%s)
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" \
		-print_final_stats=1 -artifact_prefix="$art/" ${dict:+"$dict"} ${extra:+"$extra"} "$corpus" "$dir/seeds/$t" \
		>"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	after=$(ls "$art" | wc -l)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	# a crash ends the run before the final stats: take the last status line
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	crashes=$((after - before))
	[ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
	echo "$t: ${execs:-0} executions in $took s, $crashes crash$([ "$crashes" -eq 1 ] || echo es)," \
		"corpus $(ls "$corpus" | wc -l) inputs"
	if [ "$crashes" -ne 0 ]; then
		failed=1
		echo "$t: exit status $rc; log $log; new inputs in $art/:" >&2
		ls -t "$art" | head -n "$crashes" | sed "s|^|  $art/|" >&2
		grep -m 1 -A 30 -E '^==[0-9]+==ERROR|runtime error|ALARM|out-of-memory|deadly signal' "$log" >&2
	fi
done
exit $failed
