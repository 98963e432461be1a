#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Distributed jobs: the patterns of a profile's name (-o %h %p %r %%, with snapshots and
# --control), each process's rank read from its environment, and profiles of several hosts
# merged and kept apart. The launcher tests/workloads/ranks.c starts NRANKS workers by fork
# and exec with RANK, LOCAL_RANK and WORLD_SIZE set (as torchrun does), one of them a
# straggler doing twice the others' work, counted in iterations; tests/workloads/phases.c
# runs until a file appears.

load helpers

PH=$WORKLOADS/phases

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	# the suite's own ranks only: none inherited from a launcher the tests run under
	unset RANK LOCAL_RANK WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK \
		OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE PMIX_RANK MPI_LOCALRANKID MV2_COMM_WORLD_RANK \
		MV2_COMM_WORLD_LOCAL_RANK MV2_COMM_WORLD_SIZE SLURM_PROCID SLURM_LOCALID SLURM_NTASKS
	host=$(uname -n)
}

teardown() {
	[ -n "${rec:-}" ] && pkill -KILL -P "$rec" 2>/dev/null
	[ -n "${rec:-}" ] && kill -KILL "$rec" 2>/dev/null
	[ -n "${target:-}" ] && kill -KILL "$target" 2>/dev/null
	pkill -KILL -f "$PH" -P $$ 2>/dev/null
	return 0
}

# samples FILE...: the number of samples in the (merged) profiles
samples() {
	"$PROFTOOL" report "$@" | awk '/ samples? over / { print $1; exit }'
}

# ---- -o patterns ----

@test "-o: %h is the host name, %p the command's pid, %r its rank, %% a %" {
	RANK=5 record_to 'n.%h.%p.%r.%%.data' -- "$WORKLOADS/spinners" 1 0.1
	ls n.* >names.txt
	[ "$(wc -l <names.txt)" -eq 1 ]
	pid=$(pjson "$(cat names.txt)" 'p["processes"][0]["pid"]')
	[ "$(cat names.txt)" = "n.$host.$pid.5.%.data" ]
	# a name without patterns is the name
	record_to 'plain.data' -- true
	[ -e plain.data ]
}

@test "-o: %r is 0 without a rank and for one that is not a number; the next variable counts then" {
	record_to 'none.%r.data' -- true
	[ -e none.0.data ]
	RANK=abc record_to 'abc.%r.data' -- true
	[ -e abc.0.data ]
	RANK=-3 WORLD_SIZE=4 record_to 'neg.%r.data' -- true
	[ -e neg.0.data ]
	RANK=abc SLURM_PROCID=2 record_to 'slurm.%r.data' -- true
	[ -e slurm.2.data ]
	OMPI_COMM_WORLD_RANK=6 record_to 'ompi.%r.data' -- true
	[ -e ompi.6.data ]
	PMI_RANK=1 SLURM_PROCID=0 record_to 'pmi.%r.data' -- true
	[ -e pmi.1.data ]
}

@test "-o: attach names the attached process's pid and the rank it was started with" {
	RANK=7 "$PH" a:go_b >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	"$PROFTOOL" attach -q -o 'at.%p.%r.data' "$target" &
	rec=$!
	wait_attached "$rec" "$target"
	burn_ticks "$target" 10
	touch go_b
	wait "$rec"
	rec=
	pid=$target
	wait "$target"
	target=
	[ "$(ls at.*.data)" = "at.$pid.7.data" ]
}

@test "-o: snapshots and --control's answers use the name the patterns made" {
	"$PROFTOOL" record -q -o 'c.%h.%p.data' --control fifo:ctl --snapshot-every 256K -- "$PH" a:go_b b:go_c 2>err.txt &
	rec=$!
	wait_file in_a
	pid=$(pgrep -n -f "$PH a:go_b")
	wait_file "c.$host.$pid.data.1"
	touch go_b
	wait_file in_b
	burn_ticks "$pid" 10
	run "$PROFTOOL" control ctl snapshot
	[ "$status" -eq 0 ]
	[[ $output == "c.$host.$pid.data."[0-9]* ]]
	[ -e "$output" ]
	touch go_c
	wait "$rec"
	rec=
	[ -e "c.$host.$pid.data" ]
	# the parts merge back into one recording of one process
	run "$PROFTOOL" report "c.$host.$pid.data" "c.$host.$pid.data".*
	[ "$status" -eq 0 ]
	[[ $output == *"from 1 process and 1 thread"* ]]
	! ls ./*%* 2>/dev/null || false
}

@test "-o: a name with %p that cannot be created stops record before the command runs" {
	run --separate-stderr "$PROFTOOL" record -o 'nodir/%p.data' -- touch ran
	[ "$status" -eq 1 ]
	one_error_line
	[[ $stderr == "proftool: cannot create 'nodir/"[0-9]*".data': No such file or directory" ]]
	[ ! -e ran ]
}

@test "-o: an unknown pattern is a usage error (record, attach, top --record)" {
	run --separate-stderr "$PROFTOOL" record -o 'x.%q.data' -- true
	[ "$status" -eq 2 ]
	one_error_line
	[ "$stderr" = "proftool: -o takes the patterns %h (host name), %p (process id), %r (rank) and %% (a %), not '%q' in 'x.%q.data'; see 'proftool record --help'" ]
	run --separate-stderr "$PROFTOOL" attach -o 'x%' 1
	[ "$status" -eq 2 ]
	one_error_line
	[[ $stderr == *"not '%' in 'x%'"* ]]
	run --separate-stderr "$PROFTOOL" top --record 'x.%H' -- true
	[ "$status" -eq 2 ]
	one_error_line
	[[ $stderr == "proftool: --record takes the patterns "*"not '%H' in 'x.%H'"* ]]
}

@test "top --record: the patterns are replaced as record's are" {
	"$PROFTOOL" top -q --record 'top.%h.%p.data' --interval 0.2 -- "$WORKLOADS/spinners" 1 0.2 >top.log
	ls top.*.data >names.txt
	[ "$(wc -l <names.txt)" -eq 1 ]
	pid=$(pjson "$(cat names.txt)" 'p["processes"][0]["pid"]')
	[ "$(cat names.txt)" = "top.$host.$pid.data" ]
}

# ---- ranks in the profile ----

# ranks_of FILE: "RANK LOCAL_RANK WORLD_SIZE CMDLINE" of each process, '-' for what it has not
ranks_of() {
	pjson "$1" '"\n".join("%s %s %s %s" % (q.get("rank", "-"), q.get("local_rank", "-"), q.get("world_size", "-"), q["cmdline"]) for q in p["processes"])'
}

@test "ranks: each worker's rank, local rank and world size come from its environment; the launcher has none" {
	record_to r.data -- "$WORKLOADS/ranks" 4 3 0.3
	ranks_of r.data >ranks.txt
	cat ranks.txt
	# the workers, whatever incarnations the recorder saw of them
	for i in 0 1 2 3; do
		grep -qx "$i $i 4 .*ranks --worker $((i + 1)) 4 0.3" ranks.txt
	done
	# the launcher: no rank, not rank 0
	grep -qx -- "- - - .*ranks 4 3 0.3" ranks.txt
	[ "$(grep -c -- '^- - - ' ranks.txt)" -ge 1 ]
}

@test "ranks: Open MPI's variables, and a rank that is not a number is none" {
	RANKS_VARS=OMPI_COMM_WORLD_RANK,OMPI_COMM_WORLD_LOCAL_RANK,OMPI_COMM_WORLD_SIZE \
		record_to o.data -- "$WORKLOADS/ranks" 2 0 0.2
	ranks_of o.data >ranks.txt
	grep -qx "0 0 2 .*--worker 1 1 0.2" ranks.txt
	grep -qx "1 1 2 .*--worker 2 1 0.2" ranks.txt
	# (long enough for the recorder to see the process alive: one gone first has no rank)
	RANK=abc LOCAL_RANK=x WORLD_SIZE=four record_to abc.data -- "$WORKLOADS/spinners" 1 0.5
	[ "$(ranks_of abc.data | cut -d' ' -f1-3 | sort -u)" = "- - -" ]
	[ "$(pjson abc.data 'p["processes"][0]["cmdline"]')" != None ]
	# the next variable that holds a number counts
	RANK=abc SLURM_PROCID=2 SLURM_NTASKS=3 record_to slurm.data -- "$WORKLOADS/spinners" 1 0.5
	[ "$(ranks_of slurm.data | cut -d' ' -f1-3 | sort -u)" = "2 - 3" ]
}

@test "ranks: attach reads the rank the process was started with" {
	RANK=6 WORLD_SIZE=7 "$PH" a:go_b >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	"$PROFTOOL" attach -q -o at.data "$target" &
	rec=$!
	wait_attached "$rec" "$target"
	burn_ticks "$target" 10
	touch go_b
	wait "$rec"
	rec=
	[ "$(ranks_of at.data | cut -d' ' -f1-3)" = "6 - 7" ]
}
