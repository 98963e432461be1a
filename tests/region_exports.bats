#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The exports that carry the program's named regions, each opened by its real consumer where
# there is one.
#
# The workload's counts are exact by construction (tests/workloads/regions.c): "regions nest"
# is 10 x outer { 5 x inner (inner_spin, 2 ms), outer_spin (1 ms) }; its spins run on the
# wall clock, so no region is shorter than its spins (a loaded machine makes them longer).

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PROFTOOL" record -q -o nest.data -- "$WORKLOADS/regions" nest
	"$PROFTOOL" record -q -o threads.data -- "$WORKLOADS/regions" threads 0.5
	"$PROFTOOL" record -q -o procs.data -- "$WORKLOADS/regions" procs 0.5
	"$PROFTOOL" record -q -o domains.data -- "$WORKLOADS/regions" domains
	"$PROFTOOL" record -q -o pause.data -- "$WORKLOADS/regions" pause 0.5
	"$PROFTOOL" record -q -o plain.data -- "$WORKLOADS/split" 0.2
	"$PROFTOOL" report --format json -o nest.json nest.data
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
	# go wants a writable cache and home; never let it fetch a newer toolchain
	export HOME=$BATS_TEST_TMPDIR GOCACHE=$BATS_TEST_TMPDIR/gocache GOTOOLCHAIN=local GOFLAGS=
	export PPROF_TMPDIR=$BATS_TEST_TMPDIR
}

# py SCRIPT FILE...: runs a python3 check on JSON files (gzip'd ones too); the script sees
# them parsed as docs, and values from the shell as os.environ.
py() {
	local script=$1
	shift
	python3 -c "import gzip, json, os, sys
def load(f):
    with open(f, 'rb') as fh:
        head = fh.read(2)
    return json.load(gzip.open(f) if head == b'\\x1f\\x8b' else open(f, encoding='utf-8'))
docs = [load(f) for f in sys.argv[1:]]
$script" "$@"
}

# "COUNT TOTAL PATH" per row of --format regions (all rows, the default order).
region_rows() {
	"$PROFTOOL" report --format regions --limit 0 "$@" |
		awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && NF >= 9 { print $1, $2, $9 }'
}

# Checks that the complete events of every (pid, tid) of a Chrome trace nest as a reader
# sees them: ts + dur summed as doubles, a child inside its parent, siblings apart.
# Prints "pid tid events" per track.
# ---- json ----

@test "json: the region table, MXNet's count/total/min/max/avg per path, with self, cpu and domain" {
	region_rows nest.data >rows
	cat rows
	py '
d = docs[0]
rows = {r["path"]: r for r in d["regions"]}
assert list(rows) == ["outer", "outer/inner"], list(rows)
o, i = rows["outer"], rows["outer/inner"]
assert (o["count"], i["count"]) == (10, 50)
assert (o["name"], o["domain"], o["depth"], i["name"], i["depth"]) == ("outer", "", 1, "inner", 2)
# spins on the wall clock: never shorter than 11 and 2 ms, longer by what the scheduler
# takes from them on a loaded machine, never longer than the recording
assert o["min"] >= 0.011 and i["min"] >= 0.002, (o, i)
assert i["total"] + 10 * 0.001 <= o["total"] <= d["meta"]["duration_ns"] / 1e9, (o, i)
for r in (o, i):
    assert r["min"] <= r["avg"] <= r["max"] and abs(r["avg"] * r["count"] - r["total"]) < 1e-6, r
    assert r["open_at_exit"] == 0 and 0 <= r["cpu"] and r["samples"] >= 0
# self: outer less the inner regions nested in it; inner has none
assert abs(o["self"] - (o["total"] - i["total"])) < 1e-8 and i["self"] == i["total"], (o, i)
# cpu: the samples inside, nested regions included
assert o["samples"] >= i["samples"] and abs(o["cpu"] - o["samples"] * d["meta"]["period_ns"] / 1e9) < 1e-6
m = d["meta"]["regions"]
assert m == {"events": 120, "dropped": 0, "torn": 0, "unbalanced": 0, "open_at_exit": 0,
             "paused_events": 0, "pauses": [], "paused_seconds": 0.0}, m
# the same figures as --format regions
for line in open("rows"):
    count, total, path = line.split()
    assert rows[path]["count"] == int(count) and abs(rows[path]["total"] - float(total)) < 1e-6, line
' nest.json
}

@test "json: domains, paused spans, and a profile without regions" {
	"$PROFTOOL" report --format json -o domains.json domains.data
	"$PROFTOOL" report --format json -o pause.json pause.data
	"$PROFTOOL" report --format json -o plain.json plain.data
	zcat pause.data >pause.profile.json
	py '
dom, pause, plain, pause_profile = docs
rows = {(r["domain"], r["name"]): r for r in dom["regions"]}
assert set(rows) == {("net", "step"), ("", "step")}, rows
assert rows[("net", "step")]["path"] == "net::step" and rows[("", "step")]["path"] == "step"
assert rows[("net", "step")]["count"] == rows[("", "step")]["count"] == 10
# the default domain first, as --format regions groups them
assert [r["domain"] for r in dom["regions"]] == ["", "net"]
m = pause["meta"]["regions"]
assert len(m["pauses"]) == 1 and m["pauses"][0]["end_ns"] > m["pauses"][0]["start_ns"], m
assert abs(m["paused_seconds"] - 0.05) <= 0.05 * 0.5, m
# the figures of the recording itself
stats = pause_profile["meta"]["regions"]
assert [m[k] for k in ("events", "dropped", "torn", "unbalanced", "open_at_exit", "paused_events")] == \
       [stats[k] for k in ("events", "dropped", "torn", "unbalanced", "open_at_exit", "paused")], (m, stats)
assert m["paused_events"] >= 1 and "paused_region" not in {r["name"] for r in pause["regions"]}, m
assert plain["regions"] == [] and plain["meta"]["regions"]["events"] == 0
' domains.json pause.json plain.json pause.profile.json
}

# ---- timers ----

@test "timers: the tree of region paths with real counts and durations, ML-Agents' shape" {
	"$PROFTOOL" report --format timers -o nest.timers.json nest.data
	py '
t, d = docs
rows = {r["path"]: r for r in d["regions"]}
assert t["name"] == "root" and t["count"] == 1 and "is_parallel" not in t
assert list(t["children"]) == ["outer"], list(t["children"])
o = t["children"]["outer"]
assert list(o["children"]) == ["inner"]
i = o["children"]["inner"]
assert (o["count"], i["count"]) == (10, 50) and i["children"] == {}
assert abs(o["total"] - rows["outer"]["total"]) < 1e-8 and abs(i["total"] - rows["outer/inner"]["total"]) < 1e-8
# ML-Agents: self is the total less the children totals, never below 0
assert abs(o["self"] - (o["total"] - i["total"])) < 1e-8 and i["self"] == i["total"]
assert abs(t["self"] - max(0, t["total"] - o["total"])) < 1e-8
# the root is the recording, as the root of ML-Agents is the time since the timers started
assert abs(t["total"] - d["meta"]["duration_ns"] / 1e9) < 1e-6 and t["total"] >= o["total"]
assert "is_parallel" not in o and "is_parallel" not in i
assert t["metadata"]["timer_format_version"] and "wall-clock" in t["metadata"]["unit"]
' nest.timers.json nest.json
}

@test "timers: subtrees from other threads and processes are is_parallel, the main thread's are not" {
	"$PROFTOOL" report --format timers -o threads.timers.json threads.data
	"$PROFTOOL" report --format timers -o procs.timers.json procs.data
	# two recordings merged: the second one's main thread is not the first one's
	"$PROFTOOL" report --format timers -o twice.timers.json nest.data nest.data
	py '
thr, procs, twice = docs
# 4 threads, each 20 x its own region: merged from workers, so parallel
assert sorted(thr["children"]) == ["t0", "t1", "t2", "t3"], thr["children"]
for k, v in thr["children"].items():
    assert v["count"] == 20 and v.get("is_parallel") is True and v["children"] == {}, (k, v)
# procs: the parent (main thread) has parent/in_parent; the forked child in_child; the
# one it execs outer/inner
c = procs["children"]
assert sorted(c) == ["in_child", "outer", "parent"], sorted(c)
assert "is_parallel" not in c["parent"] and c["parent"]["count"] == 1
assert list(c["parent"]["children"]) == ["in_parent"] and c["parent"]["children"]["in_parent"]["count"] == 4
assert "is_parallel" not in c["parent"]["children"]["in_parent"]
assert c["in_child"]["count"] == 4 and c["in_child"]["is_parallel"] is True
assert c["outer"]["count"] == 10 and c["outer"]["is_parallel"] is True
assert c["outer"]["children"]["inner"]["count"] == 50 and c["outer"]["children"]["inner"]["is_parallel"] is True
o = twice["children"]["outer"]
assert o["count"] == 20 and o["children"]["inner"]["count"] == 100 and o["is_parallel"] is True
' threads.timers.json procs.timers.json twice.timers.json
}

# ---- pprof ----

@test "pprof: samples carry region and region_name labels; go tool pprof -tagfocus selects them" {
	need "$GO" golang-go
	"$PROFTOOL" report --format pprof -o nest.pb.gz nest.data
	# the samples taken in each region, innermost: outer's own are outer's less inner's
	read -r inner outer <<<"$(py '
rows = {r["path"]: r for r in docs[0]["regions"]}
print(rows["outer/inner"]["samples"], rows["outer"]["samples"] - rows["outer/inner"]["samples"])' nest.json)"
	run --separate-stderr "$GO" tool pprof -tags -sample_index=samples nest.pb.gz
	[ "$status" -eq 0 ]
	echo "$output"
	# "region: Total N" then "COUNT (P%): VALUE" lines (pprof 2025 adds "of TOTAL (P%)")
	tag() {
		awk -v k="$1:" -v v="$2" '/^ *[a-z_]+: Total / { sec = $1; next }
			sec == k && $NF == v { print $1 + 0; exit }' <<<"$output"
	}
	[ "$(tag region outer/inner)" = "$inner" ]
	[ "$(tag region outer)" = "$outer" ]
	[ "$(tag region_name inner)" = "$inner" ]
	# -tagfocus takes a regular expression on the label's value
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 -sample_index=samples \
		-tagfocus 'region=^outer/inner$' nest.pb.gz
	[ "$status" -eq 0 ]
	echo "$output"
	grep -qE ' inner_spin$' <<<"$output"
	! grep -qE ' outer_spin$' <<<"$output"
	[[ "$output" == *"accounting for $inner, "* ]]
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 -tagfocus 'region=^outer$' nest.pb.gz
	[ "$status" -eq 0 ]
	grep -qE ' outer_spin$' <<<"$output"
	! grep -qE ' inner_spin$' <<<"$output"
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 -tagfocus 'region_name=inner' nest.pb.gz
	[ "$status" -eq 0 ]
	grep -qE ' inner_spin$' <<<"$output"
	! grep -qE ' outer_spin$' <<<"$output"
}
