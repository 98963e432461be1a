#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The ptrace backend, the automatic fallback to it, and wall-clock mode.

load helpers

: "${TOOLS:?run the suites through 'make check'}"

teardown() {
	[ -n "${target:-}" ] && kill -KILL "$target" 2>/dev/null || true
	return 0
}

@test "ptrace backend on the 50/30/20 program: shares within 5 points, whole stacks" {
	record_to p.data --backend ptrace -- "$WORKLOADS_NOFP/split" 1.5
	run --separate-stderr "$PROFTOOL" report --format folded p.data
	[ "$status" -eq 0 ]
	echo "$output" >folded
	near "$(self_share leaf_a <folded)" 50 5
	near "$(self_share leaf_b <folded)" 30 5
	near "$(self_share leaf_c <folded)" 20 5
	at_least "$(ancestor_share leaf_a main <folded)" 95
	run --separate-stderr "$PROFTOOL" report p.data
	[[ "$output" == *"on-CPU mode, ptrace backend"* ]]
}

# Each thread earns a sample per period it ran (its schedstat CPU time), so what was kept and
# what was counted lost add up to the CPU time, uncontended or not. (It once sampled at
# 87 Hz of 99 uncontended and at 120 Hz of 99 with two threads sharing a CPU, losses unsaid.)
@test "ptrace backend: samples kept plus lost match the CPU time, at -F 99 and -F 999, 1 and 3 threads" {
	for f in 99 999; do
		for w in "split 1" "spinners 3 0.7"; do
			# shellcheck disable=SC2086
			record_to r.data --backend ptrace -F $f -- "$WORKLOADS_NOFP/"$w
			ratio=$(pjson r.data '(len(p["samples"]["thread"]) + p["meta"]["lost"]) / (p["meta"]["cpu_time_ns"] / 1e9 * p["meta"]["freq"])')
			echo "-F $f $w: (kept + lost) / expected = $ratio"
			near "$ratio" 1 0.12
			# most of it kept: the tracer keeps up at 99 Hz whatever the load
			[ "$f" = 999 ] || at_least "$(pjson r.data 'len(p["samples"]["thread"]) / (len(p["samples"]["thread"]) + p["meta"]["lost"])')" 0.9
		done
	done
}

# Any ptrace stop answers a pending interrupt (the kernel clears it at every trap): a thread
# interrupted as it exec'd (or forked, or took a signal) once went unsampled for 200 ms, its
# samples neither kept nor counted lost: 0.03-0.09 of the chain's CPU time sampled at -F 999.
@test "ptrace backend: a process that execs itself 300 times is sampled through the chain" {
	record_to c.data --backend ptrace -F 999 -- "$WORKLOADS_NOFP/execchain" 300
	run --separate-stderr "$PROFTOOL" report --format folded c.data
	[ "$status" -eq 0 ]
	before=$(awk '/;before_chain_work / { n += $NF } END { print n + 0 }' <<<"$output")
	chain=$(awk '/;chain_link_work / { n += $NF } END { print n + 0 }' <<<"$output")
	echo "before_chain_work $before, chain_link_work $chain (the same CPU time)"
	at_least "$before" 100
	at_least "$(awk -v c="$chain" -v b="$before" 'BEGIN { print c / b }')" 0.7
	[ "$(pjson c.data 'len(p["processes"])')" -eq 301 ]
}

# The first stop of a new child can come before its parent's fork event; such a child was
# once in the profile without its parent (18-52 of 200 here), or not at all.
@test "ptrace backend: 200 children forked at once are each in the profile with their parent" {
	record_to b.data --backend ptrace -g fp -- "$WORKLOADS/burst" 200
	[ "$(pjson b.data 'len(p["processes"])')" -eq 201 ]
	run pjson b.data '[sum(c["ppid"] == r["pid"] for c in p["processes"]) for r in p["processes"] if r["ppid"] not in [x["pid"] for x in p["processes"]]]'
	[ "$output" = "[200]" ]
}

@test "ptrace backend follows threads, a forked child and an exec'd child" {
	record_to t.data --backend ptrace -- "$WORKLOADS_NOFP/threads" 0.4
	run --separate-stderr "$PROFTOOL" report --per-thread t.data
	[ "$status" -eq 0 ]
	for name in main-thr worker-1 worker-2 worker-3; do
		[[ "$output" == *"=== $name (pid "* ]] || { echo "missing thread $name"; false; }
	done
	record_to f.data --backend ptrace -- "$WORKLOADS_NOFP/forker" 0.5 "$WORKLOADS_NOFP/split" 0.3
	run --separate-stderr "$PROFTOOL" report --per-thread f.data
	[[ "$output" == *"=== forked-child (pid "* ]]
	[[ "$output" == *"=== split (pid "* ]]
	[[ "$output" == *"(leaf_a)"* ]]
}

@test "ptrace backend: exit status, and the target is not left traced" {
	run "$PROFTOOL" record -q --backend ptrace -o x.data -- "$WORKLOADS_NOFP/exitcode" fail 0.1
	[ "$status" -eq 3 ]
	run "$PROFTOOL" record -q --backend ptrace -o x.data -- "$WORKLOADS_NOFP/exitcode" segv 0.2
	[ "$status" -eq 139 ]
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	burn_ticks "$target" 10   # split runs (a loaded machine can take a while to exec it)
	run --separate-stderr "$PROFTOOL" attach -q --backend ptrace --duration 1 -o a.data "$target"
	[ "$status" -eq 0 ]
	[ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$target/status")" = 0 ]
	[[ "$(sed 's/.*) \(.\).*/\1/' "/proc/$target/stat")" == [RS] ]]
	run --separate-stderr "$PROFTOOL" report --format folded a.data
	near "$(self_share leaf_a <<<"$output")" 50 6
}

# Container runtimes deny perf_event_open with EPERM (Docker's default profile) or EACCES; a
# kernel without perf events, or a filter that pretends so, gives ENOSYS. Each is a fallback.
@test "with perf_event_open denied (seccomp: EPERM, EACCES, ENOSYS), auto falls back to ptrace with one notice" {
	for e in EPERM EACCES ENOSYS; do
		run --separate-stderr "$TOOLS/noperf" --errno "$e" "$PROFTOOL" record -o "fb-$e.data" -- "$WORKLOADS_NOFP/split" 0.5
		[ "$status" -eq 0 ] || { echo "$e: status $status: $stderr"; false; }
		[ "$(grep -c 'notice' <<<"$stderr")" -eq 1 ] || { echo "$e: $stderr"; false; }
		# the notice is one line, the first, and says what happens instead
		[[ "${stderr_lines[0]}" == "proftool: notice: perf_event_open "*"; sampling with ptrace instead" ]] ||
			{ echo "$e: $stderr"; false; }
		[[ "$stderr" != *"error"* && "$stderr" != *"warning"* ]] || { echo "$e: $stderr"; false; }
		run --separate-stderr "$PROFTOOL" report "fb-$e.data"
		[ "$status" -eq 0 ]
		[[ "$output" == *"ptrace backend"* ]] || { echo "$e: not the ptrace backend"; false; }
		[[ "$output" == *"(leaf_a)"* ]] || { echo "$e: no leaf_a in the profile"; false; }
		# an explicit --backend perf fails instead, naming the cause
		run --separate-stderr "$TOOLS/noperf" --errno "$e" "$PROFTOOL" record --backend perf -o fb2.data -- touch ran
		[ "$status" -eq 1 ] || { echo "$e: --backend perf: status $status: $stderr"; false; }
		one_error_line
		[[ "$stderr" == *"perf_event_open"* ]]
		[ ! -e ran ]
		[ ! -e fb2.data ]
	done
	# without --errno, noperf still denies with EPERM
	run --separate-stderr "$TOOLS/noperf" "$PROFTOOL" record -o fb.data -- "$WORKLOADS_NOFP/split" 0.2
	[ "$status" -eq 0 ]
	[ "$(grep -c 'notice' <<<"$stderr")" -eq 1 ]
	[ -s fb.data ]
}

# work_percent OWN: the worker's work phase as a percentage of its two phases' wall time, by
# its own measure in the file OWN ("work SECONDS sleep SECONDS"). Half on a quiet machine;
# on a busy one each phase runs over by as long as the worker waits for a CPU, the work
# phase the more (niced under load: 61% for sleepy's own clock, 60.6% sampled).
work_percent() {
	awk '{ printf "%.1f\n", 100 * $2 / ($2 + $4) }' "$1"
}

@test "wall mode: a thread sleeping half the time shows about 50/50, on and off CPU; cpu mode shows compute" {
	record_to w.data --mode wall -- "$WORKLOADS_NOFP/sleepy" 1.5 >own
	work=$(work_percent own)
	run --separate-stderr "$PROFTOOL" report --comm sleepy-worker --format folded w.data
	[ "$status" -eq 0 ]
	near "$(cum_share work_phase <<<"$output")" "$work" 7
	near "$(cum_share sleep_phase <<<"$output")" "$(awk -v w="$work" 'BEGIN { print 100 - w }')" 7
	# the same with three busy threads competing for the CPUs, where a runnable thread is
	# slow to stop and the tracer slow to get a CPU (it read 31-37 % work before a late stop
	# was sampled when it came)
	"$WORKLOADS_NOFP/spinners" 3 30 >/dev/null &
	target=$!
	record_to busy.data --mode wall -- "$WORKLOADS_NOFP/sleepy" 1.5 >busy.own
	kill "$target"
	busy=$(work_percent busy.own)
	run --separate-stderr "$PROFTOOL" report --comm sleepy-worker --format folded busy.data
	near "$(cum_share work_phase <<<"$output")" "$busy" 7
	near "$(cum_share sleep_phase <<<"$output")" "$(awk -v w="$busy" 'BEGIN { print 100 - w }')" 7
	run --separate-stderr "$PROFTOOL" report w.data
	[[ "$output" == *"wall-clock mode"* ]]
	# what the threads were doing: the worker on CPU about as long as it worked, never main
	run --separate-stderr "$PROFTOOL" report --comm sleepy-worker w.data
	on=$(sed -n 's/^Thread states: on CPU (running or runnable) [0-9]* (\([0-9.]*\)%), off CPU.*/\1/p' <<<"$output")
	near "$on" "$work" 15
	run --separate-stderr "$PROFTOOL" report --state on-cpu --comm sleepy-worker --format folded w.data
	# (a thread just woken from nanosleep is runnable too: 9 % on a quiet machine, more on a
	# busy one, where it waits longer for a CPU)
	at_least "$(cum_share work_phase <<<"$output")" 70
	run --separate-stderr "$PROFTOOL" report --state off-cpu --format folded w.data
	# off CPU: the worker's nanosleep and main's pthread_join, never computing
	near "$(cum_share work_phase <<<"$output")" 0 5
	grep -q 'sleep_phase;.*nanosleep' <<<"$output"
	grep -q 'pthread_clockjoin\|pthread_join' <<<"$output"
	record_to c.data --mode cpu -- "$WORKLOADS_NOFP/sleepy" 1
	run --separate-stderr "$PROFTOOL" report --comm sleepy-worker --format folded c.data
	at_least "$(cum_share work_phase <<<"$output")" 95
	# an on-CPU profile has no thread states: no such line, and --state says why it cannot
	run --separate-stderr "$PROFTOOL" report c.data
	[[ "$output" != *"Thread states"* ]]
	run --separate-stderr "$PROFTOOL" report --state off-cpu c.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"--state needs a wall-mode profile"*"--mode wall"* ]]
	run --separate-stderr "$PROFTOOL" report --state sleeping c.data
	[ "$status" -eq 2 ]
	one_error_line
	[[ "$stderr" == *"--state takes on-cpu or off-cpu"* ]]
}

@test "backend and mode errors" {
	run --separate-stderr "$PROFTOOL" record --backend ptrace -e cycles -o e.data -- true
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"ptrace backend samples time only"* ]]
	run --separate-stderr "$PROFTOOL" record --backend perf --mode wall -o e.data -- true
	[ "$status" -eq 2 ]
	one_error_line
}
