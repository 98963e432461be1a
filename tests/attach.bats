#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool attach: a running process is profiled and left exactly as it was.

load helpers

teardown() {
	[ -n "${target:-}" ] && kill -KILL "$target" 2>/dev/null || true
	[ -n "${stopped:-}" ] && kill -KILL "$stopped" 2>/dev/null || true
	[ -z "${pub:-}" ] || rm -rf "$pub"
	return 0
}

# signal_attach SIGNAL BACKEND: SIGNAL to 'proftool attach --backend BACKEND' stops it: it
# writes the profile, exits 0, and the target goes on running, neither stopped nor traced.
signal_attach() {
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	"$PROFTOOL" attach -q --backend "$2" -o sig.data "$target" 2>err.txt &
	rec=$!
	wait_attached "$rec" "$target"
	burn_ticks "$target" 30
	kill -"$1" "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 0 ] || { echo "attach exited $st: $(cat err.txt)"; false; }
	[ ! -s err.txt ] || { echo "stderr: $(cat err.txt)"; false; }
	[[ "$(state "$target")" == [RS] ]]
	for t in /proc/"$target"/task/*; do
		[ "$(awk '/^TracerPid:/ { print $2 }' "$t/status")" = 0 ]
	done
	# no temporary profile (.sig.data.XXXXXX) left beside it
	[ -s sig.data ]
	[ -z "$(find . -maxdepth 1 -name '.sig.data*')" ]
	run --separate-stderr "$PROFTOOL" report --format folded sig.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;leaf_a "* ]]
	# the target still runs: it goes on using CPU
	burn_ticks "$target" 5
}

@test "attach to a running 50/30/20 program: shares right, target left running and untraced" {
	# about 5 s of CPU (more on a loaded machine): it outlives the 2 s attach, then ends by itself
	"$WORKLOADS_NOFP/split" 5 >out.txt 2>err.txt &
	target=$!
	burn_ticks "$target" 10   # split runs (a loaded machine can take a while to exec it)
	run --separate-stderr "$PROFTOOL" attach -q --duration 2 -o a.data "$target"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	# still running, not stopped, not traced
	[ -d "/proc/$target" ]
	[[ "$(state "$target")" == [RS] ]]
	[ "$(tracer "$target")" = 0 ]
	run --separate-stderr "$PROFTOOL" report --format folded a.data
	[ "$status" -eq 0 ]
	near "$(self_share leaf_a <<<"$output")" 50 5
	near "$(self_share leaf_b <<<"$output")" 30 5
	near "$(self_share leaf_c <<<"$output")" 20 5
	at_least "$(ancestor_share leaf_a main <<<"$output")" 95
	# and it finishes by itself, as it would have unprofiled: status 0, no output (split prints
	# nothing when it succeeds)
	wait "$target" && st=0 || st=$?
	target=
	[ "$st" -eq 0 ]
	[ ! -s out.txt ] || { echo "stdout: $(cat out.txt)"; false; }
	[ ! -s err.txt ] || { echo "stderr: $(cat err.txt)"; false; }
}

@test "attach follows a thread and a child created after it attached" {
	"$WORKLOADS_NOFP/late" go >/dev/null 2>&1 &
	target=$!
	"$PROFTOOL" attach -q --duration 4 -o late.data "$target" &
	rec=$!
	wait_attached "$rec" "$target"
	touch go
	wait "$target" && st=0 || st=$?
	[ "$st" -eq 0 ]
	target=
	wait "$rec"
	run --separate-stderr "$PROFTOOL" report --per-thread late.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"=== late-main (pid "* ]]
	[[ "$output" == *"=== late-thread (pid "* ]]
	[[ "$output" == *"=== late-child (pid "* ]]
	[[ "$output" == *"(late_thread_work)"* ]]
	[[ "$output" == *"(late_child_work)"* ]]
}

@test "attach --backend ptrace follows a thread and a child created after it attached" {
	"$WORKLOADS_NOFP/late" go >/dev/null 2>&1 &
	target=$!
	# attach ends when its target does; --duration 60 only guards against a hang
	"$PROFTOOL" attach -q --backend ptrace --duration 60 -o late.data "$target" 2>err.txt &
	rec=$!
	wait_attached "$rec" "$target"
	touch go
	# late exits 1 unless its child exited normally: under ptrace the fork is traced too
	wait "$target" && st=0 || st=$?
	target=
	[ "$st" -eq 0 ]
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 0 ] || { echo "attach exited $st: $(cat err.txt)"; false; }
	run --separate-stderr "$PROFTOOL" report --per-thread late.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"ptrace backend"* ]]
	[[ "$output" == *"=== late-main (pid "* ]]
	[[ "$output" == *"=== late-thread (pid "* ]]
	[[ "$output" == *"=== late-child (pid "* ]]
	[[ "$output" == *"(late_thread_work)"* ]]
	[[ "$output" == *"(late_child_work)"* ]]
}

@test "SIGINT stops attach, writes the profile and leaves the target running" {
	signal_attach INT perf
}

@test "SIGTERM stops attach (perf backend): profile written, exit 0, target running, untraced" {
	signal_attach TERM perf
}

@test "SIGTERM stops attach (ptrace backend): profile written, exit 0, target running, untraced" {
	signal_attach TERM ptrace
}

@test "SIGINT stops attach (ptrace backend): profile written, exit 0, target running, untraced" {
	signal_attach INT ptrace
}

@test "attach ends when the target exits, with its whole profile" {
	"$WORKLOADS_NOFP/split" 1 >/dev/null 2>&1 &
	target=$!
	run --separate-stderr "$PROFTOOL" attach -q -o end.data "$target"
	[ "$status" -eq 0 ]
	target=
	run --separate-stderr "$PROFTOOL" report --format folded end.data
	[ "$status" -eq 0 ]
	[[ "$output" == *leaf_a* ]]
}

@test "a process that was stopped is left stopped" {
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	stopped=$!
	disown "$stopped"   # killed in teardown: no job notice
	kill -STOP "$stopped"
	for _ in $(seq 100); do [ "$(state "$stopped")" = T ] && break; sleep 0.01; done
	run --separate-stderr "$PROFTOOL" attach -q --duration 0.3 -o st.data "$stopped"
	[ "$status" -eq 0 ]
	[ "$(state "$stopped")" = T ]
}

@test "attach errors: no such process, a kernel thread, bad arguments" {
	run --separate-stderr "$PROFTOOL" attach 2147483646
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == "proftool: no such process 2147483646"* ]]
	kthread=$(awk '$1 == "Name:" && $2 == "kthreadd" { print FILENAME }' /proc/[0-9]*/status 2>/dev/null | head -n1 | cut -d/ -f3)
	if [ -n "$kthread" ]; then
		run --separate-stderr "$PROFTOOL" attach "$kthread"
		[ "$status" -eq 1 ]
		one_error_line
		[[ "$stderr" == *"kernel thread"* ]]
	fi
	run --separate-stderr "$PROFTOOL" attach
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" attach abc
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" attach 1 2
	[ "$status" -eq 2 ]
	one_error_line
}

@test "an unprivileged user cannot attach to another user's process" {
	need_nobody
	# a directory of this test's own where nobody could write the profile (not a name in /tmp
	# that another run may have left), and a copy of proftool nobody can run
	public_dir
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" attach -q --duration 0.5 -o "$pub/out/never.data" "$target"
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"not allowed"* ]]
	[[ "$(state "$target")" == [RS] ]]
	[ -z "$(ls -A "$pub/out")" ]
}
