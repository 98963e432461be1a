#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# report and diff free what they allocate and close what they open: valgrind's
# leak and fd checks over every format, on a profile of many stacks and samples.

load ../helpers

setup_file() {
	command -v valgrind >/dev/null || return 0
	cd "$BATS_FILE_TMPDIR" || return 1
	# several threads and processes, kernel frames, about 15000 samples (most in module train)
	"$PROFTOOL" record -q -F 4999 -o big.data -- "$WORKLOADS/train" 0.8
	"$PROFTOOL" record -q -o small.data -- "$WORKLOADS/split" 0.3
}

# vg STATUS ARGS...: proftool ARGS under valgrind must exit with STATUS, with no
# definite or indirect leak, no memory error (valgrind would exit 99) and no file
# descriptor left open that proftool opened itself.
vg() {
	local want=$1 status=0
	shift
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 --track-fds=yes --log-file=vg.log "$PROFTOOL" "$@" 2>/dev/null || status=$?
	if [ "$status" -ne "$want" ]; then
		echo "proftool $* under valgrind: exit $status, not $want" >&2
		cat vg.log >&2
		return 1
	fi
	# every descriptor still open at exit must be one the test harness passed down
	if awk '/Open file descriptor/ { fd = $0; getline; if ($0 !~ /inherited from parent/) { print fd; bad = 1 } }
		END { exit !bad }' vg.log; then
		cat vg.log >&2
		return 1
	fi
}

@test "report frees everything and closes its files, in every format" {
	need valgrind valgrind
	big=$BATS_FILE_TMPDIR/big.data
	for fmt in table tree callers callees folded groups json timers speedscope chrome pprof svg html; do
		vg 0 report --format "$fmt" -o "out.$fmt" "$big"
		[ -s "out.$fmt" ]
	done
	vg 0 report --group-by module,comm,process,thread,state --module train -o out.g "$big"
	vg 0 report --format json --group-by comm,module -o out.gj "$big"
	vg 0 report --per-thread --format tree -o out.pt "$big"
	vg 0 report --comm compute-0 --time-range 0.1- -o out.f "$big" "$BATS_FILE_TMPDIR/small.data"
	vg 0 diff -o out.diff "$BATS_FILE_TMPDIR/small.data" "$big"
	vg 0 diff --format svg -o out.diff.svg "$BATS_FILE_TMPDIR/small.data" "$big"
}

@test "the error paths free and close too" {
	need valgrind valgrind
	printf 'not a profile' >bad.data
	vg 1 report bad.data
	vg 1 report --match '^no_such_function$' --format callers "$BATS_FILE_TMPDIR/big.data"
	vg 1 report -o /nonexistent/dir/x "$BATS_FILE_TMPDIR/big.data"
	vg 2 report --format nonsense "$BATS_FILE_TMPDIR/big.data"
	vg 1 diff "$BATS_FILE_TMPDIR/big.data" bad.data
}

@test "Python profiles: every format, --lines, merged files, diff and a corrupt meta.python" {
	need valgrind valgrind
	python3 "$BATS_TEST_DIRNAME/../tools/pyprofile.py" py.data
	python3 "$BATS_TEST_DIRNAME/../tools/pyprofile.py" main.data --main-only
	for fmt in table tree callers callees folded json timers speedscope chrome pprof svg html; do
		vg 0 report --format "$fmt" -o "py.$fmt" py.data main.data
	done
	for fmt in table tree callers callees; do
		vg 0 report --lines --format "$fmt" -o "lines.$fmt" py.data
	done
	vg 0 report --lines --per-thread --match 'train\.py' --format callers -o lines.pt py.data
	vg 0 diff -o py.diff py.data main.data
	python3 "$BATS_TEST_DIRNAME/../tools/pyprofile.py" nat.data --native
	vg 0 report --split --lines --group-by process,module -o split.txt nat.data
	vg 0 report --split --format groups --per-thread -o split.g nat.data
	vg 1 report --split "$BATS_FILE_TMPDIR/small.data"
	vg 1 report --module libnothere.so "$BATS_FILE_TMPDIR/small.data"
	python3 "$BATS_TEST_DIRNAME/../tools/pyprofile.py" bad.data --meta-python \
		'[{"interpreter": "/p", "samples": 1, "with_frames": 0, "misses": [{"reason": "torn"}]}]'
	vg 1 report bad.data
}
