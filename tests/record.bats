#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool record: sampling real workloads, following threads and processes, exit status, signals.

load helpers

@test "50/30/20 split: self shares within 5 points, main cumulative >= 95%" {
	record_to split.data -g fp -- "$WORKLOADS/split" 1.5
	run --separate-stderr "$PROFTOOL" report --format folded split.data
	[ "$status" -eq 0 ]
	echo "$output" >folded
	near "$(self_share leaf_a <folded)" 50 5
	near "$(self_share leaf_b <folded)" 30 5
	near "$(self_share leaf_c <folded)" 20 5
	at_least "$(cum_share main <folded)" 95
}

@test "the table shows each leaf with its file and line" {
	record_to split.data -- "$WORKLOADS/split" 0.5
	run --separate-stderr "$PROFTOOL" report split.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"split.c:"*"(leaf_a)"* ]]
	[[ "$output" == *"split.c:"*"(leaf_b)"* ]]
	[[ "$output" == *"split.c:"*"(main)"* ]]
	[[ "$output" == *"nsamples"*"tottime"*"tot%"*"cumtime"*"cum%"*"filename:lineno(function)"* ]]
}

@test "every named thread appears with its own name" {
	record_to thr.data -- "$WORKLOADS/threads" 0.5
	run --separate-stderr "$PROFTOOL" report --per-thread --format table thr.data
	[ "$status" -eq 0 ]
	for name in main-thr worker-1 worker-2 worker-3; do
		[[ "$output" == *"=== $name (pid "* ]] || { echo "missing thread $name"; false; }
	done
	for fn in worker_fn_1 worker_fn_2 worker_fn_3; do
		[[ "$output" == *"($fn)"* ]] || { echo "missing $fn"; false; }
	done
	# the header counts them: one process, four threads, one section each
	grep -qE '^[0-9]+ samples over [0-9.]+ s from 1 process and 4 threads$' <<<"$output"
	[ "$(grep -c '^=== ' <<<"$output")" -eq 4 ]
}

@test "forked children and an exec'd child appear with their own names" {
	record_to fork.data -- "$WORKLOADS/forker" 0.5 "$WORKLOADS/split" 0.3
	run --separate-stderr "$PROFTOOL" report --per-thread fork.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"=== forker-parent (pid "* ]]
	[[ "$output" == *"=== forked-child (pid "* ]]
	[[ "$output" == *"=== split (pid "* ]]
	[[ "$output" == *"(child_work)"* ]]
	[[ "$output" == *"(leaf_a)"* ]]
	run --separate-stderr "$PROFTOOL" report --comm split --format folded fork.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;leaf_a "* ]]
}

@test "exit status of the command passes through" {
	run "$PROFTOOL" record -q -o ok.data -- "$WORKLOADS/exitcode" ok 0.1
	[ "$status" -eq 0 ]
	run "$PROFTOOL" record -q -o fail.data -- "$WORKLOADS/exitcode" fail 0.1
	[ "$status" -eq 3 ]
	[ -s fail.data ]
}

@test "a command that dies of SIGSEGV gives 139 and still yields its profile" {
	run "$PROFTOOL" record -q -o segv.data -- "$WORKLOADS/exitcode" segv 0.5
	[ "$status" -eq 139 ]
	run --separate-stderr "$PROFTOOL" report --format folded segv.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"burn"* ]]
	run "$PROFTOOL" record -q -o abrt.data -- "$WORKLOADS/exitcode" abort 0.1
	[ "$status" -eq 134 ]
	run "$PROFTOOL" record -q -o kill.data -- "$WORKLOADS/exitcode" kill 0.1
	[ "$status" -eq 137 ]
}

# Starts record in the background on a long-running workload and waits until the
# workload itself (not its pre-exec copy) runs and has burnt some CPU (work done, not time
# passed: half a second on a loaded machine can leave the profile empty).
start_long_record() {
	"$PROFTOOL" record -q -o "$1" -- "$WORKLOADS/exitcode" "$2" 100 &
	rec=$!
	child=$(wait_child "$rec" exitcode)
	burn_ticks "$child" 20
}

@test "SIGINT to record reaches the command and the profile is still written" {
	start_long_record int.data sleep
	kill -INT "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 130 ]
	run --separate-stderr "$PROFTOOL" report --format folded int.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"burn"* ]]
}

@test "a command that handles SIGINT finishes normally and record exits 0" {
	start_long_record trap.data trap-int
	kill -INT "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 0 ]
	run --separate-stderr "$PROFTOOL" report trap.data
	[ "$status" -eq 0 ]
}

@test "SIGTERM to record reaches the command; the profile is written" {
	start_long_record term.data sleep
	kill -TERM "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 143 ]
	run --separate-stderr "$PROFTOOL" report term.data
	[ "$status" -eq 0 ]
}

@test "--duration stops profiling and leaves the command running" {
	# the command outlives record: give it its own output so nothing waits on it
	"$PROFTOOL" record -q --duration 0.5 -o dur.data -- "$WORKLOADS/exitcode" sleep 100 \
		>/dev/null 2>&1 </dev/null && st=0 || st=$?
	[ "$st" -eq 0 ]
	pid=$(pgrep -f "$WORKLOADS/exitcode sleep 100" | head -n1)
	[ -n "$pid" ]
	[ "$(awk '{ print $3 }' /proc/"$pid"/stat)" != T ]
	kill "$pid"
	run --separate-stderr "$PROFTOOL" report dur.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"(burn)"* ]]
}

@test "a missing program gives 'cannot run' and exit 127" {
	run -127 --separate-stderr "$PROFTOOL" record -o x.data -- no-such-program-xyz
	one_error_line
	[ "$stderr" = "proftool: cannot run 'no-such-program-xyz': No such file or directory" ]
	[ ! -e x.data ]
}

@test "-g none records leaf frames only" {
	# 1.5 s: about 1500 samples, so that the share is within 5 points by a wide margin (at 0.5 s
	# it read 44.5 once: one sample in 500 is 0.2 points, and sampling noise is about 2.2)
	record_to none.data -g none -- "$WORKLOADS/split" 1.5
	run --separate-stderr "$PROFTOOL" report --format folded none.data
	[ "$status" -eq 0 ]
	! grep -q ';' <<<"$output" || false
	near "$(self_share leaf_a <<<"$output")" 50 5
}

# hw_cycles: yes when the kernel, asked directly (tests/tools/hwcounter), opens a cycles
# event on this machine, no when it has no such counter (no PMU: most virtual machines)
hw_cycles() {
	local st=0

	"${TOOLS:?run the suites through 'make check'}/hwcounter" cycles || st=$?
	case $st in
	0) echo yes ;;
	1) echo no ;;
	*) return 1 ;;
	esac
}

@test "-e cycles samples where the machine has hardware counters" {
	have=$(hw_cycles)
	[ "$have" = yes ] || skip "no hardware counters on this machine (the kernel opens no cycles event)"
	run --separate-stderr "$PROFTOOL" record -q -e cycles -o hw.data -- "$WORKLOADS/split" 0.2
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	run --separate-stderr "$PROFTOOL" report hw.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"(leaf_a)"* ]]
}

@test "-e cycles where the machine has no hardware counters: one error line, no profile" {
	have=$(hw_cycles)
	[ "$have" = no ] || skip "this machine has hardware counters (the kernel opens a cycles event)"
	run --separate-stderr "$PROFTOOL" record -q -e cycles -o hw.data -- "$WORKLOADS/split" 0.2
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: hardware counters are not available on this machine; use -e cpu-clock" ]
	[ ! -e hw.data ]
}

@test "task-clock samples like cpu-clock" {
	record_to tc.data -e task-clock -- "$WORKLOADS/split" 0.5
	run --separate-stderr "$PROFTOOL" report --format folded tc.data
	[ "$status" -eq 0 ]
	near "$(self_share leaf_a <<<"$output")" 50 6
}

@test "the closing status line gives samples, lost and the achieved rate; -q silences it" {
	run --separate-stderr "$PROFTOOL" record -o s.data -- "$WORKLOADS/split" 0.3
	[ "$status" -eq 0 ]
	[[ "$stderr" == "proftool: wrote s.data: "*" samples, "*" lost, 1 process, 1 thread, "*"Hz achieved of 999 Hz requested" ]]
	run --separate-stderr "$PROFTOOL" record -q -o s.data -- "$WORKLOADS/split" 0.1
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "the report header gives samples, duration, processes, threads, lost, rate and unwinding" {
	record_to h.data -F 499 -- "$WORKLOADS/split" 0.5
	run --separate-stderr "$PROFTOOL" report h.data
	[ "$status" -eq 0 ]
	[[ "$output" == *" samples over "*" s from 1 process and 1 thread"* ]]
	[[ "$output" == *"Lost samples: 0"* ]]
	[[ "$output" == *"Hz achieved of 499 Hz requested"* ]]
	[[ "$output" == *"Stacks unwound to their root: "* ]]
}

@test "the sampling rate follows -F" {
	record_to f1.data -F 199 -- "$WORKLOADS/split" 1
	record_to f2.data -F 999 -- "$WORKLOADS/split" 1
	n1=$(zcat f1.data | grep -o '"samples":[0-9]*' | head -n1 | cut -d: -f2)
	n2=$(zcat f2.data | grep -o '"samples":[0-9]*' | head -n1 | cut -d: -f2)
	# five times the rate gives about five times the samples (CPU time is the same)
	near "$(awk -v a="$n1" -v b="$n2" 'BEGIN { print b / a }')" 5 1
}

@test "the profile is replaced atomically and an existing one survives a failed record" {
	record_to keep.data -- "$WORKLOADS/split" 0.2
	cp keep.data before.data
	run -127 "$PROFTOOL" record -q -o keep.data -- no-such-program-xyz
	cmp keep.data before.data
	[ -z "$(ls -A | grep -v -e '^keep.data$' -e '^before.data$')" ]
}
