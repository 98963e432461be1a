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
	record_to r.data -- "$WORKLOADS/ranks" 4 3
	ranks_of r.data >ranks.txt
	cat ranks.txt
	# the workers, whatever incarnations the recorder saw of them
	for i in 0 1 2 3; do
		grep -qx "$i $i 4 .*ranks --worker $((i + 1)) 4 1" ranks.txt
	done
	# the launcher: no rank, not rank 0
	grep -qx -- "- - - .*ranks 4 3" ranks.txt
	# and a rank is the exec'd worker's alone: its child between fork and exec has the
	# launcher's environment, whatever the recorder finds in /proc by the time it looks
	[ "$(grep -vc -- '^- - - ' ranks.txt)" -eq 4 ]
}

@test "ranks: Open MPI's variables, and a rank that is not a number is none" {
	RANKS_VARS=OMPI_COMM_WORLD_RANK,OMPI_COMM_WORLD_LOCAL_RANK,OMPI_COMM_WORLD_SIZE \
		record_to o.data -- "$WORKLOADS/ranks" 2 0
	ranks_of o.data >ranks.txt
	grep -qx "0 0 2 .*--worker 1 1 1" ranks.txt
	grep -qx "1 1 2 .*--worker 2 1 1" ranks.txt
	# (long enough for the recorder to see the process alive: one gone first has no rank)
	RANK=abc LOCAL_RANK=x WORLD_SIZE=four record_to abc.data -- "$WORKLOADS/spinners" 1 0.5
	[ "$(ranks_of abc.data | cut -d' ' -f1-3 | sort -u)" = "- - -" ]
	[ "$(pjson abc.data 'p["processes"][0]["cmdline"]')" != None ]
	# the reports show it as without a rank, never as rank 0
	[ "$(groups --group-by rank abc.data | cut -f2)" = none ]
	run "$PROFTOOL" report --per-process abc.data
	grep -q '^=== spinners (pid [0-9]*) === ' <<<"$output"
	[[ $output != *"Ranks:"* ]]
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

# ---- the reports ----

# groups [REPORT OPTIONS]: the rows of the groups' table as "TOT%<TAB>KEYS" (percent signs
# dropped, the key columns' padding squeezed to one space)
groups() {
	"$PROFTOOL" report --format groups "$@" | awk '/^ +nsamples +tottime/ { on = 1; next }
		on && /^ *[0-9]+\/[0-9]+ / {
			tot = $3; sub(/%$/, "", tot)
			keys = $0
			for (i = 0; i < 5; i++)
				sub(/^ *[^ ]+/, "", keys)
			sub(/^ +/, "", keys)
			gsub(/  +/, " ", keys)
			print tot "\t" keys
		}'
}

# share KEYS: the tot% of the row whose keys are KEYS, in rows on stdin; 0 without one
share() {
	awk -F '\t' -v k="$1" '$2 == k { v = $1 } END { print v + 0 }'
}

# need_namespaces: root and unshare, to record as another host (a UTS namespace)
need_namespaces() {
	[ "$(id -u)" = 0 ] || skip "needs root to make UTS and PID namespaces (unshare -u -p)"
	need unshare util-linux
	unshare -u -p -f -m --mount-proc true 2>/dev/null || skip "unshare cannot make namespaces here"
}

@test "straggler: 4 ranks, rank 3 with twice the work: 40 % against 20 % each, within 5 points" {
	record_to s.data -- "$WORKLOADS/ranks" 4 3
	groups --group-by rank --limit 0 s.data >rows.txt
	cat rows.txt >&3
	for r in 0 1 2; do
		near "$(share "$r" <rows.txt)" 20 5
	done
	near "$(share 3 <rows.txt)" 40 5
	# sorted by self time: the straggler first
	[ "$(head -1 rows.txt | cut -f2)" = 3 ]
	run "$PROFTOOL" report s.data
	[[ $output == *$'\n'"Ranks: 4 (0-3) of 4 in 4 processes"* ]]
}

@test "straggler: --format regions --group-by rank: a table per rank, rank 3's steps twice the CPU" {
	record_to s.data -- "$WORKLOADS/ranks" 4 3
	run "$PROFTOOL" report --format regions --group-by rank s.data
	[ "$status" -eq 0 ]
	echo "$output" >&3
	# one section per rank, in rank order, each with its 20 steps
	[ "$(grep '^=== ' <<<"$output" | tr '\n' ' ')" = "=== rank 0 === === rank 1 === === rank 2 === === rank 3 === " ]
	[ "$(awk '$NF == "step" { print $1 }' <<<"$output" | sort -u)" = 20 ]
	# the cpu column (samples inside the steps): rank 3's twice each other's, within 5 points
	# of the steps' total
	awk '/^=== rank/ { r = $3 } $NF == "step" { print r, $8 }' <<<"$output" >cpu.txt
	total=$(awk '{ s += $2 } END { print s }' cpu.txt)
	for r in 0 1 2; do
		near "$(awk -v r="$r" -v t="$total" '$1 == r { print 100 * $2 / t }' cpu.txt)" 20 5
	done
	near "$(awk -v t="$total" '$1 == 3 { print 100 * $2 / t }' cpu.txt)" 40 5
	# keys that are not a thread's own, and --per-process, do not go with it
	run --separate-stderr "$PROFTOOL" report --format regions --group-by rank,module s.data
	[ "$status" -eq 2 ]
	one_error_line
	[[ $stderr == "proftool: --format regions groups by comm, process, thread, rank or host, not by module"* ]]
	run --separate-stderr "$PROFTOOL" report --format regions --group-by rank --per-process s.data
	[ "$status" -eq 2 ]
	one_error_line
}

@test "ranks in titles, labels and exports: --per-process, json, chrome, pprof, top" {
	record_to s.data -- "$WORKLOADS/ranks" 2 1
	run "$PROFTOOL" report --per-process --limit 1 s.data
	[ "$status" -eq 0 ]
	grep -q '^=== ranks (rank 0 of 2, local 0, pid [0-9]*) === ' <<<"$output"
	grep -q '^=== ranks (rank 1 of 2, local 1, pid [0-9]*) === ' <<<"$output"
	run "$PROFTOOL" report --per-thread --format folded s.data
	grep -q '^ranks (rank 1 of 2, local 1, pid [0-9]*, tid [0-9]*);' <<<"$output"
	# json: numbers, and null (never 0) for a process without a rank
	"$PROFTOOL" report --format json -o r.json s.data
	python3 - r.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ranks = sorted(p["rank"] for p in r["processes"] if p["rank"] is not None)
assert ranks == [0, 1], ranks
for p in r["processes"]:
    # the launcher has none (nor its children before their exec, when they were sampled)
    if "--worker" not in (p["cmdline"] or ""):
        assert p["rank"] is None and p["local_rank"] is None and p["world_size"] is None, p
    assert p["host"], p
PY
	"$PROFTOOL" report --format json --group-by rank -o g.json s.data
	python3 -c 'import json, sys; g = json.load(open(sys.argv[1]))["groups"]; assert sorted(r["rank"] for r in g["rows"] if r["rank"] is not None) == [0, 1], g' g.json
	# chrome: each rank's timeline named by it, in rank order
	"$PROFTOOL" report --format chrome -o t.json s.data
	python3 - t.json <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
order = {e["pid"]: e["args"]["sort_index"] for e in ev if e.get("name") == "process_sort_index"}
ranked = sorted((order[p], n) for p, n in names.items() if p in order)
assert [r for r, _ in ranked] == [0, 1], ranked
for r, n in ranked:
    assert n.startswith("ranks (rank %d of 2, local %d, pid " % (r, r)), n
PY
	# top: a thread's rank in the thread column of its log
	"$PROFTOOL" top --per-thread --cumulative --interval 0.3 -- "$WORKLOADS/ranks" 2 1 >top.log
	grep -q '\[rank 1\] ranks ([0-9]*)' top.log
}

@test "ranks in pprof: labels rank and host, read back by go tool pprof" {
	need "$GO" golang-go
	export HOME=$BATS_TEST_TMPDIR GOCACHE=$BATS_TEST_TMPDIR/gocache GOTOOLCHAIN=local GOFLAGS= PPROF_TMPDIR=$BATS_TEST_TMPDIR
	record_to s.data -- "$WORKLOADS/ranks" 4 3
	"$PROFTOOL" report --format pprof -o p.pb.gz s.data
	"$GO" tool pprof -tags p.pb.gz >tags.txt 2>/dev/null
	# the rank label's values are the four ranks, rank 0 among them
	sed -n '/^ *rank:/,/^$/p' tags.txt >rank.txt
	cat rank.txt >&3
	for r in 0 1 2 3; do
		grep -Eq "\): $r\$" rank.txt
	done
	sed -n '/^ *host:/,/^$/p' tags.txt | grep -q "): $(uname -n)\$"
	# one rank's samples: the straggler's 40 %, within 5 points
	"$GO" tool pprof -top -tagfocus 'rank=^3$' p.pb.gz >top3.txt 2>/dev/null
	share=$(sed -n 's/.*Total samples = .*//; s/^Showing nodes accounting for [^,]*, \([0-9.]*\)% of .*/\1/p' top3.txt)
	near "$share" 40 5
}

@test "hosts: two recordings in their own UTS and PID namespaces, merged, are told apart" {
	need_namespaces
	for h in node-a node-b; do
		unshare -u -p -f -m --mount-proc sh -c 'hostname "$1" && shift && exec "$@"' sh "$h" \
			"$PROFTOOL" record -q -o 'prof.%h.%p.data' -- "$WORKLOADS/ranks" 2 1
	done
	ls prof.*.data >files.txt
	cat files.txt
	[ "$(wc -l <files.txt)" -eq 2 ]
	grep -qx 'prof\.node-a\.[0-9]*\.data' files.txt
	grep -qx 'prof\.node-b\.[0-9]*\.data' files.txt
	# in a PID namespace of its own, each launcher had the same pid: one pid, two processes
	[ "$(sed 's/.*\.\([0-9]*\)\.data/\1/' files.txt | sort -u | wc -l)" -eq 1 ]
	run "$PROFTOOL" report prof.*.data
	[ "$status" -eq 0 ]
	echo "$output"
	# two workers each, and the launcher (and its children before their exec) when sampled
	grep -Eqx 'Hosts: 2: node-a \([2-5] processes\), node-b \([2-5] processes\)' <<<"$output"
	grep -Eqx 'Ranks: 2 \(0-1\) of 2 in 4 processes(; [0-9]+ process(es)? without a rank)?' <<<"$output"
	groups --group-by host,rank prof.*.data >rows.txt
	cat rows.txt
	[ "$(cut -f2 rows.txt | grep -v ' none$' | sort | tr '\n' ' ')" = "node-a 0 node-a 1 node-b 0 node-b 1 " ]
	# each host's straggler (rank 1) did 2/3 of its host's work, within 5 points
	near "$(share 'node-a 1' <rows.txt)" 33.3 5
	near "$(share 'node-b 1' <rows.txt)" 33.3 5
	groups --group-by host prof.*.data >hosts.txt
	near "$(share node-a <hosts.txt)" 50 5
	run "$PROFTOOL" report --per-process --limit 1 prof.*.data
	[ "$(grep -c '^=== ranks (rank [01] of 2, local [01], pid [0-9]* on node-[ab]) === ' <<<"$output")" -eq 4 ]
	# the same pid on both hosts, still two processes: the workers' pids are the same too
	run "$PROFTOOL" report --format groups --group-by process prof.*.data
	[ "$(grep -c ' ranks (rank 0 of 2, local 0, pid [0-9]* on node-' <<<"$output")" -eq 2 ]
	# --pid keeps that pid on both hosts
	pid=$(pjson "$(head -1 files.txt)" '[q["pid"] for q in p["processes"] if q.get("rank") == 0][0]')
	run "$PROFTOOL" report --format groups --group-by host --pid "$pid" prof.*.data
	[[ $output == *" node-a"* && $output == *" node-b"* ]]
}
