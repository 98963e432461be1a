#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Resident memory over time: every recording reads each process's RSS a few times a
# second (record, attach, snapshots, both backends); the header's Peak RSS, --per-process
# titles, json and Chrome trace counters show it; older profiles without it still read.
# The workload (tests/workloads/memtouch.c) first-touches known sizes and reports its own
# ru_maxrss.

load helpers

teardown() {
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	return 0
}

# maxrss FILE: the MiB of memtouch's own "maxrss KIB" line in FILE
maxrss() {
	awk '$1 == "maxrss" { printf "%.1f\n", $2 / 1024 }' "$1"
}

# peak_rss: the MiB of the header's "Peak RSS: N MiB (COMM PID)" on stdin
peak_rss() {
	awk '/^Peak RSS: / { print $3 }'
}

@test "memory: the header's Peak RSS is the program's own ru_maxrss within 10 %, named by comm and pid" {
	record_to m.data -- "$WORKLOADS/memtouch" 60 20 1 >out.txt
	run --separate-stderr "$PROFTOOL" report m.data
	[ "$status" -eq 0 ]
	grep -qE '^Peak RSS: [0-9]+\.[0-9] MiB \(memtouch [0-9]+\)$' <<<"$output"
	near "$(peak_rss <<<"$output")" "$(maxrss out.txt)" "$(awk -v m="$(maxrss out.txt)" 'BEGIN { print m / 10 }')"
	# several readings while it held its memory, in time order, anonymous within resident
	pjson m.data '[(len(pr["rss"]["time_us"]), pr["rss"]["time_us"] == sorted(pr["rss"]["time_us"]),
		all(a <= r for a, r in zip(pr["rss"]["anon_kib"], pr["rss"]["rss_kib"]))) for pr in p["processes"]]' >readings.txt
	python3 -c 'import ast, sys
r = ast.literal_eval(open(sys.argv[1]).read())
assert len(r) == 1 and r[0][0] >= 2 and r[0][1] and r[0][2], r' readings.txt
}

@test "memory: --per-process titles give each process's RSS, a forked child its own" {
	record_to f.data -- "$WORKLOADS/memtouch" 60 20 1 fork >out.txt
	run --separate-stderr "$PROFTOOL" report --per-process --limit 1 f.data
	[ "$status" -eq 0 ]
	grep -E '^=== memtouch \(pid [0-9]+\) === [0-9]+ samples \([0-9.]+%\); RSS peak [0-9.]+ MiB, from [0-9.]+ to [0-9.]+ MiB$' <<<"$output"
	grep -E '^=== memchild \(pid [0-9]+\) === [0-9]+ samples \([0-9.]+%\); RSS peak [0-9.]+ MiB, from [0-9.]+ to [0-9.]+ MiB$' <<<"$output"
	# the folded stacks' title frames are the processes' names and pids alone
	"$PROFTOOL" report --per-process --format folded f.data | grep -qE '^memchild \(pid [0-9]+\);'
	parent=$(sed -n 's/^=== memtouch .* peak \([0-9.]*\) MiB.*/\1/p' <<<"$output")
	child=$(sed -n 's/^=== memchild .* peak \([0-9.]*\) MiB.*/\1/p' <<<"$output")
	near "$parent" "$(maxrss out.txt)" "$(awk -v m="$(maxrss out.txt)" 'BEGIN { print m / 10 }')"
	# the child keeps its parent's 80 MiB mapped (shared until written) and touches 20 of its own
	near "$child" 100 10
	# the header names the larger of the two
	[[ "$output" == *"Peak RSS: $child MiB (memchild "* ]]
	# a filter keeps the header to the processes it keeps
	run --separate-stderr "$PROFTOOL" report --comm memtouch f.data
	[[ "$output" == *"Peak RSS: $parent MiB (memtouch "* ]]
}

@test "memory: json and the Chrome trace carry each process's readings (counter events named RSS)" {
	record_to m.data -- "$WORKLOADS/memtouch" 60 20 1 >out.txt
	"$PROFTOOL" report --format json -o m.json m.data
	python3 - m.json "$(maxrss out.txt)" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
(pr,) = r["processes"]
rss = pr["rss"]
assert rss["readings"] and rss["peak_bytes"] == max(x[1] for x in rss["readings"]), rss
assert abs(rss["peak_bytes"] / 2**20 - float(sys.argv[2])) <= float(sys.argv[2]) / 10, rss
assert all(0 <= a <= b for _, b, a in rss["readings"])
EOF
	"$PROFTOOL" report --format chrome -o m.trace.json m.data
	python3 - m.trace.json <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
c = [e for e in ev if e["ph"] == "C"]
assert c and all(e["name"] == "RSS" for e in c), c
pids = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert {e["pid"] for e in c} <= pids, (c, pids)
ts = [e["ts"] for e in c]
assert ts == sorted(ts)
assert all(isinstance(e["args"]["resident MiB"], float) and 0 <= e["args"]["anonymous MiB"] <= e["args"]["resident MiB"] for e in c)
assert max(e["args"]["resident MiB"] for e in c) > 70, c
EOF
	# a time window keeps the readings in it
	"$PROFTOOL" report --format chrome --time-range 0.2- m.data | python3 -c 'import json, sys
c = [e for e in json.load(sys.stdin)["traceEvents"] if e["ph"] == "C"]
assert c and all(e["ts"] >= 200000 for e in c), c'
}

@test "memory: attach reads the process's RSS, ptrace backend too, snapshots keep theirs" {
	"$WORKLOADS/memtouch" 60 20 8 >out.txt &
	target=$!
	burn_ticks "$target" 10
	run --separate-stderr "$PROFTOOL" attach -q --duration 1 -o a.data "$target"
	[ "$status" -eq 0 ]
	run --separate-stderr "$PROFTOOL" report a.data
	near "$(peak_rss <<<"$output")" 81 8
	record_to p.data --backend ptrace -- "$WORKLOADS/memtouch" 60 20 1 >out.txt
	run --separate-stderr "$PROFTOOL" report p.data
	near "$(peak_rss <<<"$output")" "$(maxrss out.txt)" "$(awk -v m="$(maxrss out.txt)" 'BEGIN { print m / 10 }')"
	# snapshots every 0.5 s (two RSS reading intervals, so each part has a reading) of a
	# program that runs about 2 s: with 1.1 s CI got only s.data.1, the second due as it ended
	record_to s.data --snapshot-every 0.5 -- "$WORKLOADS/memtouch" 60 20 4 >out.txt
	ls s.data.1 s.data.2 s.data
	# the snapshots have the readings of their own parts, and the series merged has them
	# all, in order, on the recording's time line
	for f in s.data.1 s.data.2; do
		[ "$(pjson "$f" 'sum(len(pr.get("rss", {}).get("time_us", [])) for pr in p["processes"])')" -ge 1 ]
	done
	"$PROFTOOL" report --format json s.data.* s.data | python3 -c 'import json, sys
(pr,) = json.load(sys.stdin)["processes"]
t = [x[0] for x in pr["rss"]["readings"]]
assert len(t) >= 4 and t == sorted(t) and t[-1] > 0.5, t'
}

@test "memory: a process shorter than the readings' interval gets one, read as its first sample was" {
	# forker's parent and child each compute about 90 ms, less than the 250 ms between readings
	for backend in perf ptrace; do
		record_to fk.data --backend "$backend" -- "$WORKLOADS/forker" 0.3
		[ "$(pjson fk.data 'sorted((pr["comm"], len(pr.get("rss", {}).get("time_us", [])) > 0) for pr in p["processes"])')" = \
			"[('forked-child', True), ('forker-parent', True)]" ]
	done
}

@test "memory: top's header gives the processes' resident memory" {
	run --separate-stderr "$PROFTOOL" top --cumulative --interval 0.5 --limit 3 -q -- "$WORKLOADS/memtouch" 60 20 1
	[ "$status" -eq 0 ]
	# the last table's, when memtouch held all it touched
	rss=$(sed -n 's/.* thread, RSS \([0-9.]*\) MiB$/\1/p' <<<"$output" | tail -1)
	near "$rss" "$(maxrss <(printf '%s\n' "$output"))" 8
}

@test "memory: a profile without readings (older files) reads, without a Peak RSS line" {
	record_to m.data -- "$WORKLOADS/memtouch" 30 10 0.3 >/dev/null
	python3 -c 'import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
for pr in p["processes"]:
    del pr["rss"]
json.dump(p, open(sys.argv[2], "w"))' m.data old.data
	run --separate-stderr "$PROFTOOL" report old.data
	[ "$status" -eq 0 ]
	[ "$(grep -c '^Peak RSS' <<<"$output")" -eq 0 ]
	run --separate-stderr "$PROFTOOL" report --format json old.data
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys
(pr,) = json.load(sys.stdin)["processes"]
assert pr["rss"] == {"peak_bytes": None, "readings": []}, pr' <<<"$output"
	# readings out of order are a malformed file, one line
	python3 -c 'import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
p["processes"][0]["rss"] = {"time_us": [5, 3], "rss_kib": [1, 2], "anon_kib": [0, 0]}
json.dump(p, open(sys.argv[2], "w"))' m.data bad.data
	run --separate-stderr "$PROFTOOL" report bad.data
	[ "$status" -eq 1 ]
	one_error_line
}

# ---- counting events ----

# fshare F: percent of the folded stacks' events (on stdin) with frame F on the stack (F,
# or a Python function's FILE:LINE(F))
fshare() {
	awk -v f="$1" '{ n = $NF; tot += n; k = split($0, fr, ";"); for (i = 1; i <= k; i++) { sub(/ [0-9]+$/, "", fr[i]); if (fr[i] == f || substr(fr[i], length(fr[i]) - length(f) - 1) == "(" f ")") { hit += n; break } } }
		END { printf "%.1f\n", tot ? 100 * hit / tot : 0 }'
}

@test "page-faults: 60 and 20 MiB first-touched are 75/25 of the faults, counted in events, not seconds" {
	record_to pf.data -e page-faults -- "$WORKLOADS/memtouch" 60 20 0.2 >out.txt
	run --separate-stderr "$PROFTOOL" report --format folded pf.data
	[ "$status" -eq 0 ]
	near "$(fshare touch_a <<<"$output")" 75 5
	near "$(fshare touch_b <<<"$output")" 25 5
	# the header names the event and the period; the table counts events
	run --separate-stderr "$PROFTOOL" report --sort tottime pf.data
	[[ "$output" == *"event page-faults,"* ]]
	grep -qE '^Lost samples: .*; a sample every 100 page-faults \([0-9]+ in all\)$' <<<"$output"
	grep -qE '^ +nsamples totevents +tot% cumevents +cum%  filename:lineno\(function\)$' <<<"$output"
	# touch_a's faults: its samples times the period, about 60 MiB of 4 KiB pages
	row=$(grep -E '\(touch_a\)$' <<<"$output")
	n=$(awk '{ split($1, s, "/"); print s[2] }' <<<"$row")
	[ "$(awk '{ print $4 }' <<<"$row")" -eq $((n * 100)) ]
	near "$n" 154 8
	# -c sets the period (ten times the samples, lost ones counted); faults is perf's short name
	record_to pf1.data -e faults -c 10 -- "$WORKLOADS/memtouch" 60 20 0.2 >/dev/null
	run --separate-stderr "$PROFTOOL" report pf1.data
	grep -qE 'a sample every 10 page-faults' <<<"$output"
	all=$(pjson pf1.data 'p["meta"]["lost"] + len(p["samples"]["thread"])')
	near "$all" 2100 250
}

@test "page-faults -F: by frequency, each sample weighs the faults since the one before, kept in the file" {
	record_to pff.data -e page-faults -F 999 -- "$WORKLOADS/memtouch" 60 20 0.2 >out.txt
	run --separate-stderr "$PROFTOOL" report pff.data
	[ "$status" -eq 0 ]
	# The weights add up to the faults the program made (its own ru_minflt: 80 MiB of 4 KiB
	# pages and its start), give or take one period: the kernel gives each sample the period
	# it set at the sample before, and the faults after the last sample are in none. The
	# period it adapts is about 400 faults on an idle machine, but up to 10 000 when the
	# program is descheduled between ticks (CI under load): the largest weight bounds it.
	all=$(sed -n 's/.*each weighing the page-faults since the one before (\([0-9]*\) in all)$/\1/p' <<<"$output")
	minflt=$(awk '$1 == "minflt" { print $2 }' out.txt)
	near "$minflt" 21000 2500
	near "$all" "$minflt" "$(pjson pff.data 'max(p["samples"]["weight"]) + 500')"
	# the file has each sample's weight, and the json report adds them up the same
	[ "$(pjson pff.data 'sum(p["samples"]["weight"])')" -eq "$all" ]
	"$PROFTOOL" report --format json pff.data | python3 -c 'import json, sys
r = json.load(sys.stdin)
assert r["meta"]["events"] == int(sys.argv[1]) and sum(f["self_events"] for f in r["functions"]) == int(sys.argv[1]), r["meta"]' "$all"
	# -c and -F together are a usage error
	run --separate-stderr "$PROFTOOL" record -e page-faults -c 10 -F 99 -o x.data -- true
	[ "$status" -eq 2 ]
	one_error_line
}

@test "page-faults: every format counts events: tree, callers, flame graph, json, pprof, speedscope" {
	record_to pf.data -e page-faults -- "$WORKLOADS/memtouch" 60 20 0.2 >/dev/null
	"$PROFTOOL" report --format tree pf.data | grep -qE '^ +[0-9.]+% +[0-9.]+% +[0-9]+ +[0-9]+ +[0-9]+ +.*\(touch_a\)$'
	"$PROFTOOL" report --format callers --match touch_a pf.data | grep -qF '(samples with both on the stack, page-faults)'
	"$PROFTOOL" report --format callers --match touch_a pf.data | grep -qE 'samples, [0-9]+ page-faults cumulative\)$'
	"$PROFTOOL" report --format svg -o pf.svg pf.data
	grep -qE 'total [0-9]+ page-faults, self [0-9]+ page-faults' pf.svg
	"$PROFTOOL" report --format json pf.data | python3 -c 'import json, sys
r = json.load(sys.stdin)
assert r["meta"]["unit"] == "page-faults" and r["meta"]["seconds"] is None and r["meta"]["events"] == 100 * r["meta"]["samples"], r["meta"]
f = {x["name"]: x for x in r["functions"]}
a = f["touch_a"]
assert a["self_seconds"] is None and a["self_events"] == 100 * a["self_samples"], a'
	"$PROFTOOL" report --format pprof -o pf.pb.gz pf.data
	gzip -dc pf.pb.gz | grep -qaF page-faults
	"$PROFTOOL" report --format speedscope pf.data | python3 -c 'import json, sys
d = json.load(sys.stdin)
(p,) = d["profiles"]
assert p["unit"] == "none" and p["endValue"] == sum(p["weights"]) and set(p["weights"]) == {100}, p["unit"]'
}

@test "page-faults: copy on write in forked Python workers shows under the function that reads the list" {
	[ -x "$PYTHON3" ] || skip_or_fail "no $PYTHON3 (Debian 12's python3 package)"
	record_to cow.data -e page-faults -- "$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/cow.py" 3 2
	# the workers, ordered by faults: the one that read the whole list first
	run --separate-stderr "$PROFTOOL" report --format groups --group-by process cow.data
	[ "$status" -eq 0 ]
	awk '/^ +[0-9]+\/[0-9]+ / { print $2 }' <<<"$output" >events.txt
	[ "$(wc -l <events.txt)" -eq 4 ]
	sort -rn -c events.txt
	# in each worker (every process but the first, the parent), the faults are read_all's
	run --separate-stderr "$PROFTOOL" report --per-process --format folded cow.data
	parent=$(head -1 <<<"$output" | sed 's/;.*//')
	for w in $(sed 's/;.*//' <<<"$output" | sort -u | grep -vxF "$parent" | sed 's/.*(pid \([0-9]*\)).*/\1/'); do
		near "$("$PROFTOOL" report --pid "$w" --format folded cow.data | fshare read_all)" 100 10
	done
	# and the parent's are building the list
	p=$(sed 's/.*(pid \([0-9]*\)).*/\1/' <<<"$parent")
	at_least "$("$PROFTOOL" report --pid "$p" --format folded cow.data | fshare build)" 50
}

@test "context-switches: a ping-pong of two threads over pipes switches in both, under their own functions" {
	# on one CPU the two sides switch out in turn, so an odd period (an even one would always
	# land on the same side) samples each half the time
	record_to cs.data -e cs -c 7 -- "$WORKLOADS/pingpong" 20000
	run --separate-stderr "$PROFTOOL" report --format folded cs.data
	[ "$status" -eq 0 ]
	near "$(fshare ping_side <<<"$output")" 50 10
	near "$(fshare pong_side <<<"$output")" 50 10
	"$PROFTOOL" report cs.data | grep -qE 'event context-switches,.*|a sample every 7 context-switches'
}

@test "counting events: the ptrace backend and wall mode refuse them in one line; -c and -F where they belong" {
	for opt in "--backend ptrace" "--mode wall"; do
		# shellcheck disable=SC2086 # two words on purpose
		run --separate-stderr "$PROFTOOL" record -e page-faults $opt -o x.data -- true
		[ "$status" -eq 2 ]
		one_error_line
		[[ "$stderr" == *"cannot count events"* ]]
	done
	run --separate-stderr "$PROFTOOL" record -c 100 -o x.data -- true
	[ "$status" -eq 2 ]
	one_error_line
	[[ "$stderr" == *"-c N goes with the counting events"* ]]
	run --separate-stderr "$PROFTOOL" record -e major-faults -o x.data -- true
	[ "$status" -eq 0 ]
	run --separate-stderr "$PROFTOOL" record -e no-such-event -o x.data -- true
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"page-faults, minor-faults, major-faults, context-switches"* ]]
}
