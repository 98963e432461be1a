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
	record_to s.data --snapshot-every 0.5 -- "$WORKLOADS/memtouch" 60 20 2 >out.txt
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
