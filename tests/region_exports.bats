#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The exports that carry the program's named regions: json (the region table), timers (the
# region tree), Chrome trace (complete and instant events), speedscope (an evented profile per
# thread), pprof (region labels), folded stacks and flame graphs (--region-frames); each
# opened by its real consumer where there is one, and --region filtering every one of them.
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
	"$PROFTOOL" record -q -o pause.data -- "$WORKLOADS/regions" pause 0.5 >pause.own
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
check_nesting() {
	python3 "$BATS_TEST_DIRNAME/tools/chrome_nesting.py" "$1"
}

# Checks the evented profiles of a speedscope file as speedscope's importer does
# (CallTreeProfileBuilder): every C closes the innermost open frame, "at" never goes back and
# stays within startValue..endValue, nothing is left open. Prints "NAME FRAME COUNT SECONDS"
# per profile and frame name.
check_evented() {
	py '
import collections
d = docs[0]
frames = d["shared"]["frames"]
for p in d["profiles"]:
    if p["type"] != "evented":
        continue
    assert p["unit"] == "nanoseconds"
    stack, last, n, t = [], p["startValue"], collections.Counter(), collections.Counter()
    for ev in p["events"]:
        assert ev["at"] >= last and ev["at"] <= p["endValue"], (p["name"], ev, last)
        last = ev["at"]
        if ev["type"] == "O":
            stack.append((ev["frame"], ev["at"]))
        else:
            assert ev["type"] == "C" and stack and stack[-1][0] == ev["frame"], (p["name"], ev, stack[-1:])
            f, at = stack.pop()
            n[frames[f]["name"]] += 1
            t[frames[f]["name"]] += ev["at"] - at
    assert not stack, (p["name"], "left open", stack)
    for name in sorted(n):
        print(p["name"], name, n[name], "%.9f" % (t[name] / 1e9))
' "$1"
}

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
             "open_at_end": 0, "open_at_start": 0, "paused_events": 0, "pauses": [],
             "paused_seconds": 0.0}, m
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
	PAUSED=$(awk '{ print $2 }' pause.own) py '
dom, pause, plain, pause_profile = docs
rows = {(r["domain"], r["name"]): r for r in dom["regions"]}
assert set(rows) == {("net", "step"), ("", "step")}, rows
assert rows[("net", "step")]["path"] == "net::step" and rows[("", "step")]["path"] == "step"
assert rows[("net", "step")]["count"] == rows[("", "step")]["count"] == 10
# the default domain first, as --format regions groups them
assert [r["domain"] for r in dom["regions"]] == ["", "net"]
m = pause["meta"]["regions"]
assert len(m["pauses"]) == 1 and m["pauses"][0]["end_ns"] > m["pauses"][0]["start_ns"], m
# at least the 50 ms spun while paused, at most what the program measured around the pause
# (which a busy machine stretches: 167 ms once)
assert 0.05 <= m["paused_seconds"] <= float(os.environ["PAUSED"]) + 1e-6, (m, os.environ["PAUSED"])
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

# ---- Chrome trace ----

@test "chrome: regions as complete events with their exact times, on a track next to their thread's" {
	"$PROFTOOL" report --format chrome -o nest.trace.json nest.data
	check_nesting nest.trace.json
	py '
tr, d = docs
evs = tr["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["name"] == "thread_name"}
regions = [e for e in evs if e["ph"] == "X" and e.get("cat") == "region"]
(track,) = {(e["pid"], e["tid"]) for e in regions}
(thread,) = [k for k, v in names.items() if k != track]
assert names[track] == "regions [regions, tid %d]" % thread[1], names
assert track[0] == thread[0]
# no function slice on the regions track, no region on the thread track
assert all(e.get("cat") == "region" for e in evs if e["ph"] == "X" and (e["pid"], e["tid"]) == track)
count = {n: sum(e["name"] == n for e in regions) for n in ("outer", "inner")}
assert count == {"outer": 10, "inner": 50}, count
assert {e["args"]["path"] for e in regions if e["name"] == "inner"} == {"outer/inner"}
rows = {r["path"]: r for r in d["regions"]}
for name, path in (("outer", "outer"), ("inner", "outer/inner")):
    total = sum(e["dur"] for e in regions if e["name"] == name)
    # microseconds to the nanosecond: the table to the nanosecond, less a rounding nanosecond at most per event
    assert abs(total / 1e6 - rows[path]["total"]) <= count[name] * 2e-9, (name, total, rows[path])
    assert min(e["dur"] for e in regions if e["name"] == name) / 1e6 >= rows[path]["min"] - 2e-9
# fractional microseconds: the exact times, not the whole microseconds of the sample slices
assert any(e["ts"] != int(e["ts"]) for e in regions)
' nest.trace.json nest.json
}

@test "chrome: marks are thread-scoped instant events; the category is the domain, or region" {
	"$PROFTOOL" report --format chrome -o domains.trace.json domains.data
	check_nesting domains.trace.json
	py '
evs = docs[0]["traceEvents"]
marks = [e for e in evs if e["ph"] == "i"]
assert len(marks) == 5 and all(e["s"] == "t" and e["name"] == "net::tick" and e["cat"] == "net" for e in marks), marks
regions = [e for e in evs if e["ph"] == "X" and "cat" in e]
assert sorted({(e["name"], e["cat"]) for e in regions}) == [("net::step", "net"), ("step", "region")]
assert len(regions) == 20
assert {(e["pid"], e["tid"]) for e in marks} == {(e["pid"], e["tid"]) for e in regions}
' domains.trace.json
}

@test "chrome: each thread's regions on its own track, none attributed to another thread" {
	"$PROFTOOL" report --format chrome -o threads.trace.json threads.data
	run check_nesting threads.trace.json
	[ "$status" -eq 0 ]
	py '
import collections
evs = docs[0]["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["name"] == "thread_name"}
by = collections.defaultdict(collections.Counter)
for e in evs:
    if e["ph"] == "X" and e.get("cat") == "region":
        by[names[(e["pid"], e["tid"])]][e["name"]] += 1
assert len(by) == 4, by
for track, c in by.items():
    # one region per track, 20 times, on the track of the thread that ran it
    (name, n), = c.items()
    assert n == 20, (track, c)
    tid = int(track.split("tid ")[1].rstrip("]"))
    work = [e for e in evs if e["ph"] == "X" and e["name"] == "work_" + name]
    assert work and {e["tid"] for e in work} == {tid}, (track, {e["tid"] for e in work})
' threads.trace.json
}

@test "chrome: speedscope's app imports the trace and shows the regions track" {
	need_browser speedscope
	"$PROFTOOL" report --format chrome -o nest.trace.json nest.data
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" --switch nest.trace.json \
		"$BATS_TEST_TMPDIR/chrome.png" "[regions, tid " outer inner
	echo "$output"
	[ "$status" -eq 0 ]
}

# ---- speedscope ----

@test "speedscope: an evented profile of the regions next to each thread's sampled profile" {
	"$PROFTOOL" report --format speedscope -o nest.speedscope.json nest.data
	run check_evented nest.speedscope.json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	EVENTED=$output py '
ss, d = docs
rows = {r["path"]: r for r in d["regions"]}
kinds = [(p["type"], p["name"]) for p in ss["profiles"]]
assert len(kinds) == 2 and kinds[0][0] == "sampled" and kinds[1] == ("evented", kinds[0][1] + " regions"), kinds
assert ss["activeProfileIndex"] == 0
ev = ss["profiles"][1]
frames = ss["shared"]["frames"]
opened = [frames[e["frame"]]["name"] for e in ev["events"] if e["type"] == "O"]
assert opened.count("outer") == 10 and opened.count("inner") == 50 and len(opened) == 60
# the exact nanoseconds of each instance: its total to the nanosecond, as far as the JSON
# report gives them: 9 significant digits (past 1 s, as on a busy machine, that is 10 ns)
out = {}
for line in os.environ["EVENTED"].splitlines():
    name, frame, n, secs = line.rsplit(" ", 3)
    out[frame] = (int(n), float("%.9g" % float(secs)))
assert out["outer"] == (10, rows["outer"]["total"]), (out, rows["outer"])
assert out["inner"] == (50, rows["outer/inner"]["total"]), (out, rows["outer/inner"])
' nest.speedscope.json nest.json
}

@test "speedscope: the file validates against the bundled schema, and the app shows the regions" {
	need_browser speedscope
	schema=$CONSUMERS/node_modules/speedscope/dist/release/file-format-schema.json
	"$PROFTOOL" report --format speedscope -o threads.speedscope.json threads.data
	check_evented threads.speedscope.json >evented
	[ "$(awk '{ print $(NF - 1) }' evented | sort -u)" = 20 ]
	[ "$(wc -l <evented)" -eq 4 ]
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_schema.py" "$schema" threads.speedscope.json
	py '
doc = docs[0]
assert sum(p["type"] == "evented" for p in doc["profiles"]) == 4
' threads.speedscope.json
	"$PROFTOOL" report --format speedscope -o nest.speedscope.json nest.data
	title=$(py 'print([p["name"] for p in docs[0]["profiles"] if p["type"] == "evented"][0])' nest.speedscope.json)
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" --switch nest.speedscope.json \
		"$BATS_TEST_TMPDIR/speedscope.png" "$title" outer inner
	echo "$output"
	[ "$status" -eq 0 ]
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
	! grep -qE ' outer_spin$' <<<"$output" || false
	[[ "$output" == *"accounting for $inner, "* ]]
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 -tagfocus 'region=^outer$' nest.pb.gz
	[ "$status" -eq 0 ]
	grep -qE ' outer_spin$' <<<"$output"
	! grep -qE ' inner_spin$' <<<"$output" || false
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 -tagfocus 'region_name=inner' nest.pb.gz
	[ "$status" -eq 0 ]
	grep -qE ' inner_spin$' <<<"$output"
	! grep -qE ' outer_spin$' <<<"$output" || false
}

# ---- folded and flame graphs ----

@test "folded --region-frames: each stack after the path of the region it was taken in" {
	"$PROFTOOL" report --format folded nest.data >plain.folded
	"$PROFTOOL" report --format folded --region-frames nest.data >rf.folded
	read -r inner outer <<<"$(py '
rows = {r["path"]: r for r in docs[0]["regions"]}
print(rows["outer/inner"]["samples"], rows["outer"]["samples"])' nest.json)"
	# the same samples, and the same stacks once the region frames are taken off
	[ "$(awk '{ n += $NF } END { print n }' rf.folded)" = "$(awk '{ n += $NF } END { print n }' plain.folded)" ]
	diff <(sed 's/^\(\[region\] [^;]*;\)*//' rf.folded | awk '{ n = $NF; sub(/ [0-9]+$/, ""); c[$0] += n }
		END { for (s in c) print s, c[s] }' | sort) <(sort plain.folded)
	[ "$(awk '/^\[region\] outer;/ { n += $NF } END { print n + 0 }' rf.folded)" = "$outer" ]
	[ "$(awk '/^\[region\] outer;\[region\] inner;/ { n += $NF } END { print n + 0 }' rf.folded)" = "$inner" ]
	# inner_spin only ever inside inner; outer_spin only in outer, never in inner
	! grep -v '^\[region\] outer;\[region\] inner;' rf.folded | grep -q ';inner_spin\(;\| \)' || false
	grep '(^|;)outer_spin(;| )' -E rf.folded | grep -q '^\[region\] outer;_start'
	! grep '^\[region\] outer;\[region\] inner;' rf.folded | grep -q ';outer_spin\(;\| \)' || false
	# per thread, the thread's frame first, then the regions
	"$PROFTOOL" report --format folded --per-thread --region-frames nest.data | grep -q '^regions (pid [0-9]*, tid [0-9]*);\[region\] outer;\[region\] inner;'
	# a profile without regions: the stacks as they are (each report on its own line, so that
	# two failing ones cannot compare equal)
	"$PROFTOOL" report --format folded --region-frames plain.data >plain-rf.folded
	"$PROFTOOL" report --format folded plain.data >plain-none.folded
	[ -s plain-none.folded ]
	cmp plain-rf.folded plain-none.folded
}

@test "svg and html --region-frames: region frames under the stacks, their own colour" {
	"$PROFTOOL" report --format svg --region-frames -o rf.svg nest.data
	"$PROFTOOL" report --format html --region-frames -o rf.html nest.data
	"$PROFTOOL" report --format folded --region-frames nest.data >rf.folded
	py '
import re, xml.dom.minidom
def frames(svg):
    out = {}
    for g in svg.getElementsByTagName("g"):
        if g.getAttribute("class") != "f":
            continue
        tip = "".join(n.data for n in g.getElementsByTagName("title")[0].childNodes)
        name = tip.split("\n")[0]
        out.setdefault(name, []).append((int(g.getAttribute("data-n")), g.getElementsByTagName("rect")[0].getAttribute("fill")))
    return out
f = frames(xml.dom.minidom.parse("rf.svg"))
counts = {}
for line in open("rf.folded"):
    stack, n = line.rsplit(" ", 1)
    fr = stack.split(";")
    for k in (1, 2):
        if len(fr) >= k and all(x.startswith("[region] ") for x in fr[:k]):
            counts[";".join(fr[:k])] = counts.get(";".join(fr[:k]), 0) + int(n)
assert [n for n, _ in f["[region] outer"]] == [counts["[region] outer"]], (f["[region] outer"], counts)
assert [n for n, _ in f["[region] inner"]] == [counts["[region] outer;[region] inner"]]
# violet: blue above red and green, unlike the warm colours of code
for name in ("[region] outer", "[region] inner"):
    r, g, b = map(int, re.match(r"rgb\((\d+),(\d+),(\d+)\)", f[name][0][1]).groups())
    assert b > r and b > g, (name, f[name])
html = open("rf.html", encoding="utf-8").read()
assert html.count("<title>[region] outer\n") == 1 and html.count("<title>[region] inner\n") == 1
'
}

@test "--region-frames goes with folded, svg and html only: a usage error elsewhere" {
	for fmt in table tree json chrome speedscope pprof timers regions; do
		run --separate-stderr "$PROFTOOL" report --format "$fmt" --region-frames -o out nest.data
		[ "$status" -eq 2 ]
		one_error_line
		[[ "$stderr" == *"--region-frames goes with --format folded, svg and html"* ]]
		[ ! -e out ]
	done
}

# ---- --region filters every export ----

@test "--region inner: every export keeps only what ran inside inner" {
	need "$GO" golang-go
	"$PROFTOOL" report --format folded --region inner nest.data >in.folded
	grep -q ';inner_spin\( \|;\)' in.folded
	! grep -q 'outer_spin' in.folded || false
	"$PROFTOOL" report --format pprof --region inner -o in.pb.gz nest.data
	run --separate-stderr "$GO" tool pprof -top -nodecount=100 in.pb.gz
	[ "$status" -eq 0 ]
	grep -qE ' inner_spin$' <<<"$output"
	! grep -qE ' outer_spin$' <<<"$output" || false
	for fmt in json timers chrome speedscope svg; do
		"$PROFTOOL" report --format "$fmt" --region inner -o "in.$fmt" nest.data
	done
	! grep -q outer_spin in.svg || false
	grep -q inner_spin in.svg
	py '
js, tm, tr, ss = docs
names = {f["name"] for f in js["functions"]}
assert "inner_spin" in names and "outer_spin" not in names, names
assert [r["path"] for r in js["regions"]] == ["outer/inner"], js["regions"]
# timers: the path down to inner stays whole
assert list(tm["children"]) == ["outer"] and list(tm["children"]["outer"]["children"]) == ["inner"]
assert tm["children"]["outer"]["children"]["inner"]["count"] == 50
regions = [e for e in tr["traceEvents"] if e["ph"] == "X" and e.get("cat") == "region"]
assert len(regions) == 50 and {e["name"] for e in regions} == {"inner"}
assert "outer_spin" not in {e["name"] for e in tr["traceEvents"]}
frames = ss["shared"]["frames"]
assert "outer_spin" not in {f["name"] for f in frames}
(ev,) = [p for p in ss["profiles"] if p["type"] == "evented"]
assert {frames[e["frame"]]["name"] for e in ev["events"]} == {"inner"} and len(ev["events"]) == 100
' in.json in.timers in.chrome in.speedscope
	check_nesting in.chrome >/dev/null
	check_evented in.speedscope >/dev/null
}

@test "--tid and --time-range keep the regions they keep the samples of" {
	tid=$(py 'print([t["tid"] for t in docs[0]["threads"] if t["comm"] == "regions"][0])' nest.json)
	"$PROFTOOL" report --format speedscope --tid "$tid" -o tid.speedscope.json nest.data
	# a window that ends half a millisecond after the 4th outer began: 4 outer regions in it
	"$PROFTOOL" report --format chrome -o nest.trace.json nest.data
	to=$(py '
ts = sorted(e["ts"] for e in docs[0]["traceEvents"] if e["ph"] == "X" and e["name"] == "outer")
print("%.6f" % ((ts[3] + 500) / 1e6))' nest.trace.json)
	"$PROFTOOL" report --format json --time-range "-$to" -o part.json nest.data
	"$PROFTOOL" report --format chrome --time-range "-$to" -o part.trace.json nest.data
	py '
part, tr, ss = docs
rows = {r["path"]: r for r in part["regions"]}
assert rows["outer"]["count"] == 4, rows["outer"]
assert sum(e["name"] == "outer" for e in tr["traceEvents"] if e["ph"] == "X" and e.get("cat")) == 4
assert [p["type"] for p in ss["profiles"]] == ["sampled", "evented"]
' part.json part.trace.json tid.speedscope.json
}

# ---- nesting that only a reader's rounding or a damaged file can break ----

# edge_profile: writes edge.json, a profile (plain JSON) whose regions end together, are
# empty, or overlap without nesting as only a damaged file has them
edge_profile() {
	# times around an hour into a recording, odd nanoseconds: the sums a reader makes of
	# ts + dur in doubles round, and a region ending with its parent must not end after it
	python3 - <<'EOF'
import json
H = 3600 * 10**9
inst = [  # (node, start, end): A, B in A, C in B, all ending together
    (0, H + 1, H + 3000003), (1, H + 1, H + 3000003), (2, H + 2000002, H + 3000003),
    (0, H + 3000003, H + 3000003),                     # empty, where the last one ended
    (0, H + 4000001, H + 6000007), (1, H + 4000001, H + 4000001),  # an empty child at its start
    (0, H + 7000000, H + 9000000), (1, H + 8000000, H + 9500000),  # damaged: B ends after A
    (0, H + 9000000, H + 9999999),                      # begins where A ended
    # B's ts + dur rounds past its end as doubles: it ends with A, the next A begins there
    (0, H + 20451000, H + 21121075), (1, H + 20451589, H + 21121075), (0, H + 21121075, H + 21200000)]
starts = [s for _, s, _ in inst]
p = {"format": "proftool-profile", "version": 1,
     "meta": {"command": "synthetic", "period_ns": 1000000, "freq": 1000, "duration_ns": H + 10**7,
              "regions": {"events": 18, "dropped": 0, "torn": 0, "unbalanced": 0, "open_at_exit": 0, "paused": 0}},
     "functions": {"name": ["main", "work"], "module": ["m", "m"], "file": [None, None], "line": [0, 0]},
     "locations": {"function": [0, 1], "line": [0, 0]},
     "stacks": {"parent": [-1, 0], "location": [0, 1]},
     "processes": [{"pid": 10, "ppid": 1, "comm": "syn", "cmdline": None}],
     "threads": [{"tid": 10, "process": 0, "comm": "syn"}],
     "regions": {"names": {"domain": ["", "", ""], "name": ["A", "B", "C"]},
                 "nodes": {"parent": [-1, 0, 1], "name": [0, 1, 2]},
                 "pauses": {"start_ns": [], "end_ns": []}},
     "region_instances": {"thread": [0] * len(inst), "node": [n for n, _, _ in inst],
                          "start_ns_delta": [s - (starts[i - 1] if i else 0) for i, s in enumerate(starts)],
                          "duration_ns": [e - s for _, s, e in inst], "flags": [0] * len(inst)},
     "region_marks": {"thread": [0], "name": [2], "time_ns": [H + 2500000]},
     "samples": {"time_us_delta": [H // 1000 + 2500, 1000], "thread": [0, 0], "stack": [1, 1], "region": [2, 0]}}
json.dump(p, open("edge.json", "w"))
EOF
}

@test "regions ending together, empty regions and a damaged overlap still nest in chrome and speedscope" {
	edge_profile
	"$PROFTOOL" report --format chrome -o edge.trace.json edge.json
	"$PROFTOOL" report --format speedscope -o edge.speedscope.json edge.json
	run check_nesting edge.trace.json
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" 12" ]]
	run check_evented edge.speedscope.json
	echo "$output"
	[ "$status" -eq 0 ]
	py '
tr, ss = docs
xs = [e for e in tr["traceEvents"] if e["ph"] == "X" and e.get("cat") == "region"]
assert [e["name"] for e in xs] == ["A", "B", "C", "A", "A", "B", "A", "B", "A", "A", "B", "A"], [e["name"] for e in xs]
# exact where nothing had to give: the first C, 1 ms to the nanosecond
assert xs[2]["ts"] == 3600002000.002 and xs[2]["dur"] == 1000.001, xs[2]
# the damaged B ends with its A
assert xs[7]["ts"] + xs[7]["dur"] <= xs[6]["ts"] + xs[6]["dur"], (xs[6], xs[7])
# where the sum would round past the end, the duration gives a nanosecond or two, no more
assert 3600020451.589 + 669.486 > 3600021121.075
assert xs[10]["ts"] == 3600020451.589 and 669.484 <= xs[10]["dur"] < 669.486, xs[10]
assert xs[10]["ts"] + xs[10]["dur"] <= min(xs[9]["ts"] + xs[9]["dur"], xs[11]["ts"]), xs[9:]
(mark,) = [e for e in tr["traceEvents"] if e["ph"] == "i"]
assert mark["name"] == "C" and mark["ts"] == 3600002500
' edge.trace.json edge.speedscope.json
}

@test "speedscope's app imports the edge cases, evented and as a trace" {
	need_browser speedscope
	edge_profile
	"$PROFTOOL" report --format speedscope -o edge.speedscope.json edge.json
	"$PROFTOOL" report --format chrome -o edge.trace.json edge.json
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" --switch edge.speedscope.json \
		"$BATS_TEST_TMPDIR/edge.png" "syn (pid 10, tid 10) regions" A B C
	echo "$output"
	[ "$status" -eq 0 ]
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" --switch edge.trace.json \
		"$BATS_TEST_TMPDIR/edge-trace.png" "[regions, tid 10]" A B C
	echo "$output"
	[ "$status" -eq 0 ]
}
