#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# ThreadSanitizer over the recordings where proftool's threads work side by side: the
# drain threads of both CPUs reading Python stacks of several processes at once while
# processes fork, exec and exit, the reader symbolizing and naming meanwhile. PROFTOOL is
# built with -fsanitize=thread (make tsan); a data race or a lock-order inversion ends it
# with status 66 (TSAN_OPTIONS, set by make tsan). Its timing-sensitive shares are
# asserted elsewhere (tests/python.bats): an instrumented build is several times slower.

load ../helpers

PY=/usr/bin/python3
PYDIR=$BATS_TEST_DIRNAME/../workloads/py

teardown() {
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	return 0
}

# clean CMD...: proftool CMD... exits 0, ThreadSanitizer silent
clean() {
	run --separate-stderr "$PROFTOOL" "$@"
	if [ "$status" -ne 0 ] || grep -q ThreadSanitizer <<<"$stderr"; then
		echo "proftool $* exited $status: $stderr" >&2
		return 1
	fi
}

# has_python FILE FUNC: the profile FILE has samples in the Python function FUNC
has_python() {
	"$PROFTOOL" report -i "$1" --format folded | grep -q "($2) [0-9]*$\|;$2 [0-9]*$\|($2);"
}

@test "tsan: two Python processes forked by multiprocessing, --python-capture auto: read from captures (as root)" {
	[ -x "$PY" ] || skip_or_fail "$PY is missing (Debian package python3)"
	cd "$BATS_TEST_TMPDIR"
	clean record -q -F 999 --python-capture auto -o m.data -- "$PY" "$PYDIR/procs.py" fork 0.5
	has_python m.data work
}

@test "tsan: two Python processes forked by multiprocessing, read on both CPUs at once" {
	[ -x "$PY" ] || skip_or_fail "$PY is missing (Debian package python3)"
	cd "$BATS_TEST_TMPDIR"
	clean record -q -F 999 -o m.data -- "$PY" "$PYDIR/procs.py" fork 0.5
	has_python m.data work
}

@test "tsan: a Python process forking children that exec or exit while it is read" {
	[ -x "$PY" ] || skip_or_fail "$PY is missing (Debian package python3)"
	cd "$BATS_TEST_TMPDIR"
	clean record -q -F 999 -o f.data -- "$PY" "$PYDIR/forkexec.py" 60 0.5
	has_python f.data parent_work
}

@test "tsan: two unrelated Python processes under a shell, --python on" {
	[ -x "$PY" ] || skip_or_fail "$PY is missing (Debian package python3)"
	cd "$BATS_TEST_TMPDIR"
	clean record -q -F 999 --python on -o s.data -- sh -c \
		"'$PY' '$PYDIR/callback.py' 1 & '$PY' '$PYDIR/procs.py' fork 0.3; wait"
	has_python s.data work
}

@test "tsan: attach to a running Python script, and leave it running" {
	[ -x "$PY" ] || skip_or_fail "$PY is missing (Debian package python3)"
	cd "$BATS_TEST_TMPDIR"
	"$PY" "$PYDIR/attach_target.py" ready stop >target.out 2>&1 &
	target=$!
	for _ in $(seq 100); do [ -s ready ] && break; sleep 0.1; done
	[ -s ready ]
	clean attach -q --duration 1 -o a.data "$target"
	has_python a.data spin_round
	touch stop
	wait "$target"
	target=
}

@test "tsan: a native job of threads and forked, exec'd children, per-CPU drain threads forced" {
	cd "$BATS_TEST_TMPDIR"
	clean record -q -F 999 --python on --python-capture off -o t.data -- "$WORKLOADS/train" 0.3
	"$PROFTOOL" report -i t.data >/dev/null
}
