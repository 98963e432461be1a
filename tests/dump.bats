#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool dump: every thread's current stack, once; the process is left as it was and
# still works. The targets (tests/workloads/blocked.c, py/blocked.py) block in known calls
# and say when they are ready; each test then waits until /proc shows the threads in
# those calls, and releases them through a FIFO at the end.

load helpers

PYDIR=$BATS_TEST_DIRNAME/workloads/py

teardown() {
	[ -z "${rec:-}" ] || kill -KILL "$rec" 2>/dev/null
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	cd "$BATS_TEST_TMPDIR" || return 1
	[ -z "${pub:-}" ] || rm -rf "$pub"
	return 0
}

# tid_of COMM: the id of the target's thread named COMM
tid_of() {
	local t

	for t in /proc/"$target"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] && { echo "${t##*/}"; return 0; }
	done
	echo "the target has no thread $1" >&2
	return 1
}

# wait_syscall TID NR: waits (up to 20 s) until the target's thread TID waits in system call NR
wait_syscall() {
	local nr

	for _ in $(seq 400); do
		read -r nr _ <"/proc/$target/task/$1/syscall" 2>/dev/null && [ "$nr" = "$2" ] && return 0
		sleep 0.05
	done
	echo "thread $1 of $target never waited in system call $2 (it is in: $nr)" >&2
	return 1
}

# start_blocked [OPTION...]: runs the blocked workload (built as distributions build: no
# frame pointers) and waits until its threads wait where they should: blk-main and
# blk-reader in read (0), blk-locker in futex (202)
start_blocked() {
	mkfifo fifo
	"$WORKLOADS_NOFP/blocked" fifo ready "$@" >target.out 2>&1 &
	target=$!
	wait_ready
	wait_syscall "$target" 0
	wait_syscall "$(tid_of blk-reader)" 0
	wait_syscall "$(tid_of blk-locker)" 202
}

# release N: lets the blocked workload go; it must end normally, with its N threads
release() {
	echo go >fifo
	wait "$target" && st=0 || st=$?
	target=
	[ "$st" -eq 0 ] || { echo "the target exited $st: $(cat target.out)"; false; }
	[ "$(cat target.out)" = "blocked: released $1 threads" ]
}

# untouched: no thread of the target is traced, and none is stopped unless STATE says so
untouched() {
	local t want=${1:-[RSD]}

	for t in /proc/"$target"/task/*; do
		[ "$(awk '/^TracerPid:/ { print $2 }' "$t/status")" = 0 ] || { echo "${t##*/} is traced"; false; }
		[[ "$(sed 's/.*) \(.\).*/\1/' "$t/stat")" == $want ]] || { echo "${t##*/} is $(cat "$t/stat")"; false; }
	done
}

# block TID: the lines of $output for thread TID, from its heading to the blank line after
block() {
	awk -v h="Thread $1 " 'index($0, h) == 1 { on = 1 } on && $0 == "" { exit } on' <<<"$output"
}

# in_order PATTERN...: each extended regular expression matches a line of $frames, the
# first of them the first line, each later one a later line than the one before
in_order() {
	local at=0 n

	for re in "$@"; do
		n=$(awk -v re="$re" -v after="$at" 'NR > after && $0 ~ re { print NR; exit }' <<<"$frames")
		[ -n "$n" ] || { echo "no frame matching '$re' after line $at of:"; echo "$frames"; return 1; }
		[ "$at" -gt 0 ] || [ "$n" -eq 1 ] || { echo "the first frame does not match '$re':"; echo "$frames"; return 1; }
		at=$n
	done
}

# frames TID: the frame lines (indented) of thread TID's block
frames() {
	frames=$(block "$1" | sed -n 's/^    //p')
}

@test "dump: each thread under its state and system call, its blocking stack innermost first; the process runs on and finishes" {
	start_blocked
	reader=$(tid_of blk-reader) locker=$(tid_of blk-locker) busy=$(tid_of blk-busy)
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[ -z "$stderr" ]
	[ "${lines[0]}" = "Process $target: $WORKLOADS_NOFP/blocked fifo ready" ]
	[[ "${lines[1]}" =~ ^4\ threads\ in\ [0-9.]+\ ms\;\ each\ stopped\ for\ [0-9.]+\ ms\ \(median\),\ [0-9.]+\ ms\ at\ most$ ]]
	[ "$(grep -c '^Thread ' <<<"$output")" -eq 4 ]
	read_fn='^(__GI___libc_read|__libc_read|read) \('

	block "$target" | head -n1 | grep -qx "Thread $target (blk-main) sleeping in read(), waiting in .*"
	frames "$target"
	in_order "$read_fn" '^wait_for_release \(tests/workloads/blocked\.c:[0-9]+\)$' '^main \(tests/workloads/blocked\.c:' '^_start'

	block "$reader" | head -n1 | grep -qx "Thread $reader (blk-reader) sleeping in read(), waiting in .*"
	frames "$reader"
	in_order "$read_fn" '^reader_wait \(tests/workloads/blocked\.c:[0-9]+\)$' '^reader \(tests/workloads/blocked\.c:' '^start_thread '

	block "$locker" | head -n1 | grep -qx "Thread $locker (blk-locker) sleeping in futex(), waiting in .*"
	frames "$locker"
	in_order 'futex' '^(__GI___lll_lock_wait|__lll_lock_wait) ' 'pthread_mutex_lock ' \
		'^locker_wait \(tests/workloads/blocked\.c:[0-9]+\)$' '^locker \(' '^start_thread '

	block "$busy" | head -n1 | grep -qx "Thread $busy (blk-busy) running"
	frames "$busy"
	in_order '^busy_loop \(tests/workloads/blocked\.c:[0-9]+\)$' '^busy \(' '^start_thread '

	# left as it was: untraced, blocked where it was, the busy thread busy
	untouched
	wait_syscall "$reader" 0
	wait_syscall "$locker" 202
	burn_ticks "$target" 2
	# a second dump sees the same, and the process still works when released
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ]
	frames "$locker"
	in_order 'futex' '^(__GI___lll_lock_wait|__lll_lock_wait) ' 'pthread_mutex_lock ' '^locker_wait '
	release 3
}

@test "dump: 60 threads, every one with its stack" {
	start_blocked idle=56
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[[ "${lines[1]}" == "60 threads in "* ]]
	[ "$(grep -c '^Thread ' <<<"$output")" -eq 60 ]
	[ "$(grep -c '^Thread [0-9]* (blk-idle) sleeping in futex()' <<<"$output")" -eq 56 ]
	[ "$(grep -c '^    idle_wait (tests/workloads/blocked\.c:[0-9]*)$' <<<"$output")" -eq 56 ]
	[ "$(grep -c '^    __pthread_cond_wait' <<<"$output")" -ge 56 ]
	untouched
	release 59
}

@test "dump: a stopped process is read and left stopped" {
	start_blocked
	reader=$(tid_of blk-reader)
	kill -STOP "$target"
	for _ in $(seq 400); do
		[ -z "$(awk '$3 != "T"' /proc/"$target"/task/*/stat)" ] && break
		sleep 0.05
	done
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[ "$(grep -c '^Thread [0-9]* (blk-[a-z]*) stopped' <<<"$output")" -eq 4 ]
	block "$reader" | head -n1 | grep -q "^Thread $reader (blk-reader) stopped in read()"
	frames "$reader"
	in_order '^(__GI___libc_read|__libc_read|read) \(' '^reader_wait \(' '^reader \('
	untouched T
	# still stopped a while later: nothing woke it
	sleep 0.2
	untouched T
	kill -CONT "$target"
	release 3
}

@test "dump: a thread in uninterruptible sleep (vfork) is shown from /proc and never waited for long; the others as usual" {
	start_blocked vfork
	vforker=$(tid_of blk-vfork)
	for _ in $(seq 400); do
		[ "$(state "$target/task/$vforker")" = D ] && break
		sleep 0.05
	done
	[ "$(state "$target/task/$vforker")" = D ]
	run --separate-stderr timeout 20 "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[ "$(grep -c '^Thread ' <<<"$output")" -eq 5 ]
	block "$vforker" | head -n1 | grep -qx "Thread $vforker (blk-vfork) disk wait in vfork().*; it did not stop within a second, so its user stack is unknown"
	frames "$(tid_of blk-reader)"
	in_order '^(__GI___libc_read|__libc_read|read) \(' '^reader_wait \('
	untouched
	release 4
}

@test "dump --kernel: the kernel frames above the user ones (root)" {
	[ "$(id -u)" = 0 ] || skip "/proc/PID/task/TID/stack is root's to read"
	start_blocked
	reader=$(tid_of blk-reader)
	run --separate-stderr "$PROFTOOL" dump --kernel "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	# the kernel frames say where it waits: no wchan in the heading
	block "$reader" | head -n1 | grep -qx "Thread $reader (blk-reader) sleeping in read()"
	frames "$reader"
	in_order '^\[kernel\] [a-z_]' '^\[kernel\] entry_SYSCALL' '^(__GI___libc_read|__libc_read|read) \(' '^reader_wait \('
	untouched
	release 3
}

# the Python script blocked in a read and a sleep: its functions in the stacks
check_python() {
	mkfifo fifo
	"$PY" "$PYDIR/blocked.py" ready fifo >target.out 2>&1 &
	target=$!
	wait_ready
	wait_syscall "$target" 0
	napper=
	for _ in $(seq 400); do
		for t in /proc/"$target"/task/*; do
			read -r nr _ <"$t/syscall" 2>/dev/null && [ "$nr" = 230 ] && napper=${t##*/}
		done
		[ -n "$napper" ] && break
		sleep 0.05
	done
	[ -n "$napper" ] || { echo "no thread of $target sleeps in clock_nanosleep"; false; }
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[ -z "$stderr" ]
	version=$("$PY" -c 'import platform; print(platform.python_version())')
	[[ "${lines[1]}" == "Python $version ("*")" ]]
	frames "$target"
	in_order '^(__GI___libc_read|__libc_read|read) \(' "^wait_for_request \\($PYDIR/blocked\\.py:20\\)\$" \
		"^serve \\($PYDIR/blocked\\.py:27\\)\$" "^<module> \\($PYDIR/blocked\\.py:39\\)\$" '^_start|^__libc_start_main'
	block "$napper" | head -n1 | grep -q "^Thread $napper ([^)]*) sleeping in clock_nanosleep()"
	frames "$napper"
	in_order 'nanosleep' "^nap_loop \\($PYDIR/blocked\\.py:16\\)\$" '^Thread\.run \(' '^start_thread '
	untouched
	echo go >fifo
	wait "$target" && st=0 || st=$?
	target=
	[ "$st" -eq 0 ] || { echo "the script exited $st: $(cat target.out)"; false; }
	[ "$(cat target.out)" = released ]
}

@test "dump: a Python script's functions in its threads' stacks (Debian's python3)" {
	use_python debian
	check_python
}

@test "dump: a Python script's functions in its threads' stacks (pyenv 3.12)" {
	use_python 3.12
	check_python
}

@test "dump: a Python script's functions in its threads' stacks (pyenv 3.13)" {
	use_python 3.13
	check_python
}

@test "dump --python off: native frames only" {
	use_python debian
	mkfifo fifo
	"$PY" "$PYDIR/blocked.py" ready fifo >target.out 2>&1 &
	target=$!
	wait_ready
	wait_syscall "$target" 0
	run --separate-stderr "$PROFTOOL" dump --python off "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[[ "${lines[1]}" == [0-9]*" threads in "* ]]
	frames "$target"
	in_order '^(__GI___libc_read|__libc_read|read) \(' 'python3' '^_start'
	! grep -q '^Python \|wait_for_request\|nap_loop' <<<"$output" || false
	untouched
	echo go >fifo
	wait "$target"
	target=
}

@test "dump errors: no such process, a kernel thread, another tracer, bad arguments" {
	run --separate-stderr "$PROFTOOL" dump 2147483646
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: no such process 2147483646; 'ps' lists the running ones" ]
	kthread=$(awk '$1 == "Name:" && $2 == "kthreadd" { print FILENAME }' /proc/[0-9]*/status 2>/dev/null | head -n1 | cut -d/ -f3)
	if [ -n "$kthread" ]; then
		run --separate-stderr "$PROFTOOL" dump "$kthread"
		[ "$status" -eq 1 ]
		one_error_line
		[ "$stderr" = "proftool: process $kthread is a kernel thread; dump reads user-space processes" ]
	fi
	for args in "" "abc" "0" "1 2" "--python maybe 1" "--stack-size 1000 1" "--stack-size 4100 1" \
		"--bogus 1" "--stack-size"; do
		# shellcheck disable=SC2086 # the words are the arguments
		run --separate-stderr "$PROFTOOL" dump $args
		[ "$status" -eq 2 ] || { echo "dump $args exited $status"; false; }
		one_error_line
		[[ "$stderr" == *"; see 'proftool dump --help'" ]]
	done
	# ptrace allows one tracer: dump says who has the process
	start_blocked
	"$PROFTOOL" attach -q --backend ptrace --duration 60 -o a.data "$target" 2>attach.err &
	rec=$!
	wait_attached "$rec" "$target"
	run --separate-stderr "$PROFTOOL" dump "$target"
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == "proftool: process $target is traced by process "[0-9]*" (proftool), and ptrace allows one tracer at a time; detach that one first" ]]
	kill -INT "$rec"
	wait "$rec"
	rec=
	untouched
	release 3
}

@test "dump: an unprivileged user cannot read another user's process" {
	need_nobody
	public_dir
	start_blocked
	run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" dump "$target"
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == "proftool: not allowed to read process $target of another user; run as its owner or as root (CAP_SYS_PTRACE)"* ]]
	untouched
	release 3
}

@test "dump: an unprivileged user reads its own process, without kernel frames" {
	need_nobody
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	[ "$scope" = 0 ] || skip "kernel.yama.ptrace_scope $scope: a user may trace only its own children"
	# nobody's copies of proftool and the workload, which it must be able to read for its symbols
	public_dir "$WORKLOADS_NOFP/blocked"
	cd "$pub/out"
	mkfifo -m 0666 fifo
	"${AS_NOBODY[@]}" "$pub/blocked" fifo ready >target.out 2>&1 &
	target=$!
	wait_ready
	wait_syscall "$(tid_of blk-reader)" 0
	reader=$(tid_of blk-reader)
	run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" dump --kernel "$target"
	[ "$status" -eq 0 ] || { echo "dump exited $status: $stderr"; false; }
	[ -z "$stderr" ]
	[ "$(grep -c '^Thread ' <<<"$output")" -eq 4 ]
	# /proc/PID/task/TID/stack is root's: no kernel frames, and the heading says where it waits
	! grep -q '^    \[kernel\]' <<<"$output" || false
	block "$reader" | head -n1 | grep -qx "Thread $reader (blk-reader) sleeping in read(), waiting in [a-z_]*"
	frames "$reader"
	in_order '^(__GI___libc_read|__libc_read|read) \(' '^reader_wait \('
	untouched
	release 3
}

@test "dump --help, help dump" {
	run --separate-stderr "$PROFTOOL" dump --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: proftool dump [OPTIONS] PID" ]]
	help=$output
	run --separate-stderr "$PROFTOOL" help dump
	[ "$status" -eq 0 ]
	[ "$output" = "$help" ]
	[ "$(options_in_help <<<"$help" | tr '\n' ' ')" = "--help --kernel --python --stack-size -h " ]
}
