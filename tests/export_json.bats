#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# report --format json and timers, and proftool diff: parsed back and checked against the table.

load helpers

# py SCRIPT FILE...: runs a python3 check on JSON files; the script sees them as sys.argv[1:].
py() {
	local script=$1
	shift
	python3 -c "import json, sys
docs = [json.load(open(f)) for f in sys.argv[1:]]
$script" "$@"
}

@test "json: the aggregated profile, versioned, with the table's numbers" {
	record_to s.data -- "$WORKLOADS/split" 1
	"$PROFTOOL" report --format json -o s.json s.data
	"$PROFTOOL" report --format folded s.data >folded
	n=$(awk '{ n += $NF } END { print n }' folded)
	py '
d = docs[0]
assert d["format"] == "proftool-report" and d["version"] == 1, d["format"]
m = d["meta"]
assert m["samples"] == '"$n"', (m["samples"], '"$n"')
assert m["command"].endswith("split 1") and m["event"] == "cpu-clock" and m["period_ns"] > 0
f = {x["name"]: x for x in d["functions"]}
assert [x["id"] for x in d["functions"]] == list(range(len(d["functions"])))
assert sum(s["samples"] for s in d["stacks"]) == m["samples"]
assert sum(x["self_samples"] for x in d["functions"]) == m["samples"]
# (the rest is the exec and the dynamic loader before main: more of it on a loaded machine)
assert f["main"]["total_samples"] >= 0.97 * m["samples"], (f["main"]["total_samples"], m["samples"])
assert f["leaf_a"]["file"].endswith("split.c") and f["leaf_a"]["module"] == "split"
# each stack: root first, leaf last; the leaf function holds the self samples
for s in d["stacks"]:
    assert all(0 <= i < len(d["functions"]) for i in s["frames"])
names = [d["functions"][s["frames"][-1]]["name"] for s in d["stacks"]]
assert "leaf_a" in names
# nearly every stack was unwound to the program entry, which comes first
from_start = sum(s["samples"] for s in d["stacks"] if d["functions"][s["frames"][0]]["name"] == "_start")
assert from_start >= 0.95 * m["samples"], (from_start, m["samples"])
assert sum(t["samples"] for t in d["threads"]) == m["samples"]
print(round(100.0 * f["leaf_a"]["self_samples"] / m["samples"], 1))
' s.json >share
	[ "$(cat share)" = "$(self_share leaf_a <folded)" ]
}

@test "json: filters and merged files add up" {
	record_to a.data -- "$WORKLOADS/split" 0.4
	record_to b.data -- "$WORKLOADS/threads" 0.4
	"$PROFTOOL" report --format json -o a.json a.data
	"$PROFTOOL" report --format json -o b.json b.data
	"$PROFTOOL" report --format json -o ab.json a.data b.data
	py '
a, b, ab = docs
assert ab["meta"]["samples"] == a["meta"]["samples"] + b["meta"]["samples"]
assert len(ab["threads"]) == len(a["threads"]) + len(b["threads"])
assert {t["comm"] for t in ab["threads"]} >= {"worker-1", "worker-2", "worker-3"}
' a.json b.json ab.json
	tid=$(py 'print([t["tid"] for t in docs[0]["threads"] if t["comm"] == "worker-2"][0])' b.json)
	"$PROFTOOL" report --format json --tid "$tid" -o w2.json b.data
	py '
d = docs[0]
assert [t["comm"] for t in d["threads"]] == ["worker-2"], d["threads"]
assert d["meta"]["samples"] < d["meta"]["samples_in_file"]
names = {f["name"] for f in d["functions"]}
assert "worker_fn_2" in names and "worker_fn_1" not in names
' w2.json
}

@test "timers: total/self/count/children by name; is_parallel only where threads overlap" {
	record_to t.data -- "$WORKLOADS/threads" 1
	"$PROFTOOL" report --format timers -o t.json t.data
	"$PROFTOOL" report --format folded t.data >folded
	n=$(awk '{ n += $NF } END { print n }' folded)
	py '
root = docs[0]
assert root["name"] == "root" and root["count"] == '"$n"'
assert root["metadata"]["timer_format_version"]
def walk(node, path):
    kids = node["children"]
    assert abs(node["total"] - node["self"] - sum(k["total"] for k in kids.values())) < 1e-6, path
    assert node["count"] >= sum(k["count"] for k in kids.values())
    for name, k in kids.items():
        yield from walk(k, path + [name])
    yield path, node
nodes = dict((";".join(p), n) for p, n in walk(root, []))
def find(name):
    return [n for p, n in nodes.items() if p.split(";")[-1] == name]
# three workers run worker_thread at the same time: parallel; each worker_fn_N is one thread
[wt] = find("worker_thread")
assert wt.get("is_parallel") is True, wt
for k in ("worker_fn_1", "worker_fn_2", "worker_fn_3", "main_spin"):
    [x] = find(k)
    assert "is_parallel" not in x, k
    assert x["self"] > 0 and x["count"] > 0
assert root.get("is_parallel") is True
' t.json
	# one thread alone: nothing is parallel (tests/unit/test_stats.c checks threads one after the other)
	"$PROFTOOL" report --format timers --comm worker-1 t.data >w1.json
	run ! grep -q is_parallel w1.json
}

@test "diff: the function that grew comes first, with the change in points" {
	record_to base.data -- "$WORKLOADS/split" 0.8 50 30 20
	record_to new.data -- "$WORKLOADS/split" 0.8 20 30 50
	run --separate-stderr "$PROFTOOL" diff base.data new.data
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "${lines[0]}" == "Base base.data: "* ]]
	[[ "${lines[1]}" == "New  new.data: "* ]]
	first=$(grep -m1 -E '^ +[0-9.]+%' <<<"$output")
	second=$(grep -E '^ +[0-9.]+%' <<<"$output" | sed -n 2p)
	# leaf_a and leaf_c moved by about 30 points each, in opposite directions; leaf_b did not
	[[ "$first $second" == *leaf_a* && "$first $second" == *leaf_c* ]]
	change_c=$(grep ' leaf_c ' <<<"$output" | awk '{ print $3 }')
	change_a=$(grep ' leaf_a ' <<<"$output" | awk '{ print $3 }')
	near "$change_c" 30 5
	near "$change_a" -30 5
	run --separate-stderr "$PROFTOOL" diff --limit 1 base.data new.data
	[ "$(grep -cE '^ +[0-9.]+%' <<<"$output")" -eq 1 ]
}

@test "diff --format folded: each stack with its base and new counts" {
	record_to base.data -- "$WORKLOADS/split" 0.5 50 30 20
	record_to new.data -- "$WORKLOADS/split" 0.5 20 30 50
	"$PROFTOOL" diff --format folded base.data new.data >d.folded
	"$PROFTOOL" report --format folded base.data >b.folded
	"$PROFTOOL" report --format folded new.data >n.folded
	# the columns sum to each profile's samples
	[ "$(awk '{ n += $(NF-1) } END { print n }' d.folded)" = "$(awk '{ n += $NF } END { print n }' b.folded)" ]
	[ "$(awk '{ n += $NF } END { print n }' d.folded)" = "$(awk '{ n += $NF } END { print n }' n.folded)" ]
	grep -q ';main;leaf_c [0-9]* [0-9]*$' d.folded
}

@test "diff: errors are one line with what to do" {
	record_to a.data -- "$WORKLOADS/split" 0.2
	run --separate-stderr "$PROFTOOL" diff a.data
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" diff a.data missing.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"missing.data"* ]]
	run --separate-stderr "$PROFTOOL" diff --format tree a.data a.data
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" report --per-thread --format json a.data
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" report --format nonsense a.data
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"speedscope"* ]]
	# a profile compared with itself: nothing changed
	run --separate-stderr "$PROFTOOL" diff a.data a.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"no function's share changed"* ]]
}
