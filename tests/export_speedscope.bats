#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# report --format speedscope and --format chrome: parsed back, checked against the other
# reports, and opened in speedscope's own app in headless Chromium.

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PROFTOOL" record -q -o split.data -- "$WORKLOADS/split" 1.0
	"$PROFTOOL" record -q -o thr.data -- "$WORKLOADS/threads" 1
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# py SCRIPT FILE...: runs a python3 check on JSON files; the script sees them parsed as
# docs, and values from the shell as os.environ.
py() {
	local script=$1
	shift
	python3 -c "import json, os, sys
docs = [json.load(open(f, encoding='utf-8')) for f in sys.argv[1:]]
$script" "$@"
}

# The sampling period of a profile in nanoseconds, from its meta.
period_ns() {
	zcat "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["meta"]["period_ns"])'
}

# "NAME (pid P, tid T) N" per thread, from the headers of report --per-thread.
thread_counts() {
	"$PROFTOOL" report --per-thread --limit 1 "$@" |
		sed -n 's/^=== \(.*\) === \([0-9]*\) samples .*/\1 \2/p'
}

# Checks that every thread's complete events in a trace nest: a slice starts
# no earlier than its parent and ends no later, on the same pid and tid.
# Prints "pid tid slices" per thread.
check_nesting() {
	python3 "$BATS_TEST_DIRNAME/tools/chrome_nesting.py" "$1"
}

@test "speedscope: the file validates against speedscope's bundled schema" {
	schema=${CONSUMERS:-}/node_modules/speedscope/dist/release/file-format-schema.json
	[ -f "$schema" ] || skip_or_fail "speedscope's file-format-schema.json is missing (make consumers installs speedscope)"
	"$PROFTOOL" report --format speedscope -o thr.speedscope.json thr.data
	python3 "$BATS_TEST_DIRNAME/tools/speedscope_schema.py" "$schema" thr.speedscope.json
	py '
doc = docs[0]
assert all(p["type"] == "sampled" for p in doc["profiles"])
' thr.speedscope.json
}

@test "speedscope: one profile per sampled thread, with report --per-thread's names and counts" {
	"$PROFTOOL" report --format speedscope -o thr.speedscope.json thr.data
	thread_counts thr.data >expected
	[ "$(wc -l <expected)" -eq 4 ]
	PERIOD=$(period_ns thr.data) py '
import collections
d = docs[0]
expected = {}
for line in open("expected"):
    name, n = line.rstrip("\n").rsplit(" ", 1)
    expected[name] = int(n)
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
assert d["exporter"].startswith("proftool ") and d["name"].endswith("threads 1"), (d["exporter"], d["name"])
frames = d["shared"]["frames"]
assert all(isinstance(f["name"], str) for f in frames)
got = {p["name"]: len(p["samples"]) for p in d["profiles"]}
assert got == expected, (got, expected)
assert {n.split(" (")[0] for n in got} == {"main-thr", "worker-1", "worker-2", "worker-3"}
period = int(os.environ["PERIOD"])
for p in d["profiles"]:
    assert p["type"] == "sampled" and p["unit"] == "nanoseconds"
    assert len(p["weights"]) == len(p["samples"])
    assert sum(p["weights"]) == len(p["samples"]) * period, p["name"]
    assert p["endValue"] - p["startValue"] == sum(p["weights"])
    assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
    # root first: stacks start where the thread does (_start, clone3), its function further in
    roots = collections.Counter(frames[s[0]]["name"] for s in p["samples"])
    assert roots.most_common(1)[0][0] in ("_start", "__clone3", "clone3", "clone", "__clone"), roots
    fn = "main_spin" if p["name"].startswith("main-thr") else "worker_fn_" + p["name"][7]
    on = sum(fn in (frames[i]["name"] for i in s[1:]) for s in p["samples"])
    assert on > 0.9 * len(p["samples"]), (p["name"], fn, on)
active = d["profiles"][d["activeProfileIndex"]]
assert len(active["samples"]) == max(got.values()), active["name"]
leaf = [f for f in frames if f["name"] == "worker_fn_1"][0]
assert leaf["file"].endswith("threads.c") and leaf["line"] > 0, leaf
' thr.speedscope.json
}

@test "speedscope: leaf_a's share of the weight is the folded report's" {
	"$PROFTOOL" report --format speedscope split.data >split.speedscope.json
	folded=$("$PROFTOOL" report --format folded split.data | self_share leaf_a)
	share=$(py '
d = docs[0]
names = [f["name"] for f in d["shared"]["frames"]]
(p,) = d["profiles"]
hit = sum(w for s, w in zip(p["samples"], p["weights"]) if names[s[-1]] == "leaf_a")
print("%.1f" % (100.0 * hit / sum(p["weights"])))
' split.speedscope.json)
	near "$share" "$folded" 1
	near "$share" 50 10
}

@test "speedscope: speedscope's app shows the profile, its functions and a flame graph" {
	need_browser speedscope
	"$PROFTOOL" report --format speedscope -o split.speedscope.json split.data
	title=$(py 'print(docs[0]["profiles"][0]["name"])' split.speedscope.json)
	[[ "$title" == "split (pid "*", tid "*")" ]]
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" split.speedscope.json \
		"$BATS_TEST_TMPDIR/speedscope.png" "$title" leaf_a leaf_b leaf_c
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$BATS_TEST_TMPDIR/speedscope.png" ]
}

@test "chrome: valid trace events, named processes and threads, slices nested per thread" {
	"$PROFTOOL" report --format chrome -o thr.trace.json thr.data
	py '
d = docs[0]
assert d["displayTimeUnit"] == "ms" and d["otherData"]["exporter"].startswith("proftool ")
assert all(isinstance(v, str) for v in d["otherData"].values())
evs = d["traceEvents"]
for e in evs:
    assert e["ph"] in ("M", "X", "C"), e
    assert isinstance(e["name"], str) and e["name"], e
    assert all(isinstance(e[k], int) and e[k] >= 0 for k in ("pid", "tid", "ts")), e
    if e["ph"] == "X":
        assert isinstance(e["dur"], int) and e["dur"] >= 0, e
        assert isinstance(e["args"]["module"], str), e
    elif e["ph"] == "C":
        # the resident memory of the process, a counter track
        assert e["name"] == "RSS" and e["pid"] == e["tid"], e
        assert all(isinstance(v, float) and v >= 0 for v in e["args"].values()), e
    else:
        assert e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str), e
assert [e for e in evs if e["ph"] == "C"], "no RSS counter"
threads = {e["args"]["name"]: (e["pid"], e["tid"]) for e in evs if e["name"] == "thread_name"}
assert set(threads) == {"main-thr", "worker-1", "worker-2", "worker-3"}, threads
procs = {e["pid"]: e["args"]["name"] for e in evs if e["name"] == "process_name"}
assert list(procs.values()) == ["main-thr"], procs
assert len({pid for pid, tid in threads.values()}) == 1 and set(procs) == {threads["main-thr"][0]}
assert threads["main-thr"][0] == threads["main-thr"][1]
# every thread has slices, and each worker spends its time in its own function
for name, (pid, tid) in threads.items():
    mine = [e for e in evs if e["ph"] == "X" and (e["pid"], e["tid"]) == (pid, tid)]
    fn = "main_spin" if name == "main-thr" else "worker_fn_" + name[-1]
    assert fn in {e["name"] for e in mine}, (name, fn)
    assert not {"worker_fn_1", "worker_fn_2", "worker_fn_3", "main_spin"} - {fn} & {e["name"] for e in mine}
leaf = [e for e in evs if e["name"] == "worker_fn_1"][0]
assert leaf["args"]["file"].startswith("tests/workloads/threads.c:"), leaf
' thr.trace.json
	run check_nesting thr.trace.json
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
}

@test "chrome: leaf_a's slices last its samples times the period, one slice per call" {
	"$PROFTOOL" report --format chrome -o split.trace.json split.data
	check_nesting split.trace.json
	# samples with leaf_a anywhere on the stack (kernel frames can sit above it)
	n=$("$PROFTOOL" report --format folded split.data | awk '/(^|;)leaf_a(;| )/ { n += $NF } END { print n }')
	PERIOD=$(period_ns split.data) N=$n py '
n, period = int(os.environ["N"]), int(os.environ["PERIOD"])
d = docs[0]
(pid,) = {e["pid"] for e in d["traceEvents"] if e["ph"] == "X"}
for name in ("_start", "main"):
    assert [e["dur"] for e in d["traceEvents"] if e["name"] == name], name
a = [e for e in d["traceEvents"] if e["name"] == "leaf_a"]
total, expect = sum(e["dur"] for e in a), n * period / 1000.0
print("leaf_a: %d slices, %d us, %d samples x %d ns = %.0f us" % (len(a), total, n, period, expect))
# split calls leaf_a 100 times; more slices only where the thread was off the CPU
assert 100 <= len(a) < n, len(a)
# each sample is a period of its slice, and a gap of up to half a period to the next sample is
# bridged: on a loaded machine (samples late) the slices grow by up to that half
assert 0.95 * expect <= total <= 1.5 * expect, (total, expect)
' split.trace.json
}

@test "chrome: speedscope's app imports the trace and shows its functions" {
	need_browser speedscope
	"$PROFTOOL" report --format chrome -o split.trace.json split.data
	run "$NODE" "$BATS_TEST_DIRNAME/tools/speedscope_check.js" split.trace.json \
		"$BATS_TEST_TMPDIR/chrome.png" "split (tid " leaf_a leaf_b leaf_c
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "merged inputs add up in both formats, each recording on its own timeline" {
	"$PROFTOOL" report --format speedscope -o both.speedscope.json split.data thr.data
	{ thread_counts split.data; thread_counts thr.data; } >expected
	py '
got = sorted("%s %d" % (p["name"], len(p["samples"])) for p in docs[0]["profiles"])
assert got == sorted(open("expected").read().splitlines()), got
' both.speedscope.json
	"$PROFTOOL" report --format chrome -o both.trace.json split.data thr.data
	py '
evs = docs[0]["traceEvents"]
names = sorted(e["args"]["name"] for e in evs if e["name"] == "thread_name")
assert names == ["main-thr", "split", "worker-1", "worker-2", "worker-3"], names
assert len([e for e in evs if e["name"] == "process_name"]) == 2
' both.trace.json
	check_nesting both.trace.json
	# the same recording twice: same pids, same times; the copy moves to a pid of its own
	"$PROFTOOL" report --format chrome -o twice.trace.json split.data split.data
	run check_nesting twice.trace.json
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	py '
procs = [e for e in docs[0]["traceEvents"] if e["name"] == "process_name"]
assert len({e["pid"] for e in procs}) == 2, procs
assert procs[1]["args"]["name"] == "split (pid %d)" % procs[0]["pid"], procs
' twice.trace.json
}

@test "--tid keeps only that thread in both formats" {
	line=$(thread_counts thr.data | grep '^worker-2 ')
	tid=$(sed 's/.*tid \([0-9]*\)).*/\1/' <<<"$line")
	"$PROFTOOL" report --format speedscope --tid "$tid" -o w2.speedscope.json thr.data
	"$PROFTOOL" report --format chrome --tid "$tid" -o w2.trace.json thr.data
	LINE=$line TID=$tid py '
ss, tr = docs
line = os.environ["LINE"]
assert ["%s %d" % (p["name"], len(p["samples"])) for p in ss["profiles"]] == [line], ss["profiles"][0]["name"]
assert ss["activeProfileIndex"] == 0
assert "main_spin" not in {f["name"] for f in ss["shared"]["frames"]}
tids = {e["tid"] for e in tr["traceEvents"] if e["ph"] == "X"}
assert tids == {int(os.environ["TID"])}, tids
assert [e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"] == ["worker-2"]
' w2.speedscope.json w2.trace.json
}

@test "names with quotes, control characters and non-ASCII come out as valid JSON, unchanged" {
	python3 - <<'EOF'
import json
names = ['say "hi"', 'back\\slash', 'tab\there', 'new\nline', 'ctl\x01\x1f', 'caf\u00e9 \u2615 \U0001F600',
         'semi;colon', 'operator<<(std::ostream&, T const&)']
n = len(names)
p = {"format": "proftool-profile", "version": 1,
     "meta": {"command": 'weird "names"\n', "period_ns": 1000000, "freq": 1000},
     "functions": {"name": names, "module": ["m\u00e9"] * n, "file": ["f\"ile.c"] + [None] * (n - 1),
                   "line": [7] + [0] * (n - 1)},
     "locations": {"function": list(range(n)), "line": [0] * n},
     "stacks": {"parent": [-1] + list(range(n - 1)), "location": list(range(n))},
     "processes": [{"pid": 10, "ppid": 1, "comm": "p\"roc", "cmdline": None}],
     "threads": [{"tid": 11, "process": 0, "comm": "t\\hread\u00e9"}],
     "samples": {"time_us_delta": [1000] * n, "thread": [0] * n, "stack": list(range(n))}}
json.dump(p, open("weird.json", "w"))
json.dump(names, open("names.json", "w"))
EOF
	"$PROFTOOL" report --format speedscope -o weird.speedscope.json weird.json
	"$PROFTOOL" report --format chrome -o weird.trace.json weird.json
	py '
ss, tr, names = docs
assert [f["name"] for f in ss["shared"]["frames"]] == names
assert ss["shared"]["frames"][0]["file"] == "f\"ile.c" and ss["shared"]["frames"][1]["file"] == "m\u00e9"
assert ss["name"] == "weird \"names\"\n"
assert ss["profiles"][0]["name"] == "t\\hread\u00e9 (pid 10, tid 11)"
assert [len(s) for s in ss["profiles"][0]["samples"]] == list(range(1, len(names) + 1))
xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
assert [e["name"] for e in xs] == names, [e["name"] for e in xs]
assert xs[0]["args"]["file"] == "f\"ile.c:7" and xs[1]["args"]["module"] == "m\u00e9"
# one sample per millisecond, each a frame deeper: all slices stay open to the end
assert [(e["ts"], e["ts"] + e["dur"]) for e in xs] == [(1000 * (i + 1), 1000 * (len(names) + 1)) for i in range(len(names))]
' weird.speedscope.json weird.trace.json names.json
}
