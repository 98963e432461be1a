#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool report on a Python job's profile: Python functions named FILE:FIRSTLINE(QUALNAME)
# in every format, the interpreters' lines in the header, --lines, merging, a corrupt
# meta.python; every frame as recorded (--frames all: tests/report_frames.bats has the
# other views). The profiles come from tests/tools/pyprofile.py, which writes the file
# the recorder will write, with counts known in advance (its header lists them).

load helpers

STEP=/tmp/x/train.py:41\(Trainer.step\)
READ=/tmp/x/data.py:12\(load.\<locals\>.read\)
PY311='Python 3.11.2 (/usr/bin/python3.11): 135 of 148 samples (91.2%) with Python frames; without: 10 no Python thread state, 3 torn'
PY310='Python 3.10.12 (/usr/bin/python3.10): not read: CPython 3.10 is not supported (3.11 to 3.13 are); its stacks are native'

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	pyprofile py.data
	pyprofile main.data --main-only
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# pyprofile OUT [OPTIONS]: a Python job's profile (tests/tools/pyprofile.py)
pyprofile() {
	python3 "$BATS_TEST_DIRNAME/tools/pyprofile.py" "$@"
}

# The table rows on stdin as "self/cum label".
rows() {
	awk '/filename:lineno\(function\)/ { on = 1; next } on && /^ *[0-9]+\/[0-9]+ / { print $1, $6 }'
}

# The header on stdin: everything before the table's blank line.
header() {
	sed '/^$/q' | sed '/^$/d'
}

@test "python: the table names Python functions FILE:FIRSTLINE(QUALNAME), with exact counts, native ones as before" {
	run --separate-stderr "$PROFTOOL" report --frames all --limit 0 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
5/105 /tmp/x/train.py:30(train)
0/105 /tmp/x/train.py:1(<module>)
0/105 python3.11(Py_RunMain)
0/105 libc.so.6(__libc_start_main)
0/105 python3.11(_start)
15/100 /tmp/x/train.py:41(Trainer.step)
85/85 /src/kernel.c:100(matmul_kernel)
0/85 python3.11(_PyObject_Call)
10/30 /tmp/x/data.py:12(load.<locals>.read)
0/30 libc.so.6(start_thread)
20/20 libc.so.6(read)
EOF
	# stacks that pass through Python code still reach their thread's entry
	[[ "$output" == *"Stacks unwound to their root: 135 of 135 (100.0%)"* ]]
}

@test "python: sort keys order Python rows like the others (name by qualified name, filename by file and line)" {
	first() { "$PROFTOOL" report --frames all --limit 1 --sort "$1" py.data | rows; }
	[ "$(first tottime)" = "85/85 /src/kernel.c:100(matmul_kernel)" ]
	[ "$(first nsamples)" = "85/85 /src/kernel.c:100(matmul_kernel)" ]
	[ "$(first name)" = "0/105 /tmp/x/train.py:1(<module>)" ]
	[ "$(first nfl)" = "0/105 /tmp/x/train.py:1(<module>)" ]
	[ "$(first filename)" = "85/85 /src/kernel.c:100(matmul_kernel)" ]
	run --separate-stderr "$PROFTOOL" report --frames all --limit 0 --sort filename py.data
	diff -u - <(rows <<<"$output" | awk '{ print $2 }' | grep '^/tmp') <<'EOF'
/tmp/x/data.py:12(load.<locals>.read)
/tmp/x/train.py:1(<module>)
/tmp/x/train.py:30(train)
/tmp/x/train.py:41(Trainer.step)
EOF
	run --separate-stderr "$PROFTOOL" report --frames all --limit 3 --sort tottime py.data
	diff -u - <(rows <<<"$output") <<'EOF'
85/85 /src/kernel.c:100(matmul_kernel)
20/20 libc.so.6(read)
15/100 /tmp/x/train.py:41(Trainer.step)
EOF
	[[ "$output" == *"... 8 more functions (--limit 0 shows all)"* ]]
}

@test "python: the header has a line per interpreter; whole-recording figures, which say so under a filter" {
	run --separate-stderr "$PROFTOOL" report --frames all py.data
	[ "$status" -eq 0 ]
	header <<<"$output" | grep -v "^Frames: " | tail -2 >got
	diff -u - got <<<"$PY311"$'\n'"$PY310"
	run --separate-stderr "$PROFTOOL" report --frames all --tid 4243 py.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"30 samples (of 135 total)"* ]]
	header <<<"$output" | grep -v "^Frames: " | tail -2 >got
	diff -u - got <<<"Whole recording: $PY311"$'\n'"Whole recording: $PY310"
	# the tree, callers and callees share the header
	for fmt in tree callers callees; do
		"$PROFTOOL" report --frames all --format "$fmt" py.data | grep -qxF "$PY311"
	done
}

@test "python: the header leaves out what it does not know: no misses, no version, no samples" {
	pyprofile few.data --meta-python '[{"interpreter": "/opt/py/bin/python3", "version": null, "unsupported": null, "samples": 40, "with_frames": 40, "misses": []},
		{"interpreter": "/usr/lib/libpython3.12.so.1.0", "version": "3.12.1", "unsupported": null, "samples": 0, "with_frames": 0}]'
	run --separate-stderr "$PROFTOOL" report --frames all few.data
	[ "$status" -eq 0 ]
	header <<<"$output" | grep -v "^Frames: " | tail -2 >got
	diff -u - got <<'EOF'
Python (/opt/py/bin/python3): 40 of 40 samples (100.0%) with Python frames
Python 3.12.1 (/usr/lib/libpython3.12.so.1.0): 0 of 0 samples with Python frames
EOF
	# a profile without meta.python (every native one, and older files) has no such line
	pyprofile old.data --plain
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); del p["meta"]["python"]; json.dump(p, open(sys.argv[1], "w"))' old.data
	run --separate-stderr "$PROFTOOL" report --frames all old.data
	[ "$status" -eq 0 ]
	[ -z "$(grep '^Python' <<<"$output")" ]
	[ "$(rows <<<"$output")" = "$("$PROFTOOL" report --frames all py.data | rows)" ]
}

@test "python: folded stacks and flame graphs name Python frames by their label" {
	run --separate-stderr "$PROFTOOL" report --frames all --format folded py.data
	[ "$status" -eq 0 ]
	diff -u - <(echo "$output") <<'EOF'
_start;__libc_start_main;Py_RunMain;/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train) 5
_start;__libc_start_main;Py_RunMain;/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step) 15
_start;__libc_start_main;Py_RunMain;/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);_PyObject_Call;/tmp/x/train.py:41(Trainer.step);_PyObject_Call;matmul_kernel 5
_start;__libc_start_main;Py_RunMain;/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);_PyObject_Call;matmul_kernel 80
start_thread;/tmp/x/data.py:12(load.<locals>.read) 10
start_thread;/tmp/x/data.py:12(load.<locals>.read);read 20
EOF
	for fmt in svg html; do
		"$PROFTOOL" report --frames all --format "$fmt" -o "py.$fmt" py.data
		grep -qF '/tmp/x/train.py:41(Trainer.step)' "py.$fmt"
		grep -qF '/tmp/x/train.py:1(&lt;module&gt;)' "py.$fmt"
	done
}

@test "python: json names Python functions by their label, with module, file and first line, and carries meta.python" {
	"$PROFTOOL" report --frames all --format json -o py.json py.data
	python3 - py.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in r["functions"]}
step = f["/tmp/x/train.py:41(Trainer.step)"]
assert (step["module"], step["file"], step["line"]) == ("[python]", "/tmp/x/train.py", 41), step
assert (step["self_samples"], step["total_samples"]) == (15, 100), step
assert f["/tmp/x/data.py:12(load.<locals>.read)"]["total_samples"] == 30
assert f["matmul_kernel"]["file"] == "/src/kernel.c" and f["_start"]["file"] is None
names = [x["name"] for x in r["functions"]]
path = [names[i] for i in max(r["stacks"], key=lambda s: len(s["frames"]))["frames"]]
assert path[3:7] == ["/tmp/x/train.py:1(<module>)", "/tmp/x/train.py:30(train)",
                     "/tmp/x/train.py:41(Trainer.step)", "_PyObject_Call"], path
py = r["meta"]["python"]
assert [p["interpreter"] for p in py] == ["/usr/bin/python3.11", "/usr/bin/python3.10"], py
assert (py[0]["version"], py[0]["unsupported"], py[0]["samples"], py[0]["with_frames"]) == \
    ("3.11.2", None, 148, 135), py[0]
assert sorted((m["reason"], m["count"]) for m in py[0]["misses"]) == \
    [("no Python thread state", 10), ("torn", 3)], py[0]
assert py[1]["unsupported"].startswith("CPython 3.10 is not supported") and py[1]["misses"] == []
EOF
	# whole-recording figures: a filter leaves them as they are
	"$PROFTOOL" report --frames all --format json --tid 4243 py.data |
		python3 -c 'import json, sys; r = json.load(sys.stdin); assert r["meta"]["python"][0]["samples"] == 148'
	"$PROFTOOL" report --frames all --format timers py.data |
		python3 -c 'import json, sys
t = json.load(sys.stdin)["children"]["_start"]["children"]["__libc_start_main"]["children"]["Py_RunMain"]["children"]
step = t["/tmp/x/train.py:1(<module>)"]["children"]["/tmp/x/train.py:30(train)"]["children"]["/tmp/x/train.py:41(Trainer.step)"]
assert step["count"] == 100, step'
}

@test "python: speedscope and Chrome trace name Python frames by their label, with file and first line" {
	"$PROFTOOL" report --frames all --format speedscope -o py.speedscope.json py.data
	python3 - py.speedscope.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
fr = {f["name"]: f for f in d["shared"]["frames"]}
assert fr["/tmp/x/train.py:41(Trainer.step)"] == \
    {"name": "/tmp/x/train.py:41(Trainer.step)", "file": "/tmp/x/train.py", "line": 41}, fr
assert fr["/tmp/x/data.py:12(load.<locals>.read)"]["line"] == 12
assert fr["matmul_kernel"] == {"name": "matmul_kernel", "file": "/src/kernel.c", "line": 100}
EOF
	"$PROFTOOL" report --frames all --format chrome -o py.trace.json py.data
	python3 - py.trace.json <<'EOF'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
step = [e for e in ev if e["name"] == "/tmp/x/train.py:41(Trainer.step)"]
assert step and all(e["args"] == {"file": "/tmp/x/train.py:41", "module": "[python]"} for e in step), step
assert not [e for e in ev if e["name"] in ("Trainer.step", "<module>")]
EOF
}

# The Functions of a pprof file and the lines of its Locations, decoded here from
# profile.proto: "NAME SYSTEM_NAME FILENAME START_LINE LINE" per Location.
pprof_lines() {
	python3 - "$1" <<'EOF'
import gzip, sys
def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        if key & 7 == 0:
            v, i = varint(b, i)
        else:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        yield key >> 3, v
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
prof = list(fields(gzip.open(sys.argv[1]).read()))
strs = [v.decode() for k, v in prof if k == 6]
funcs = {}
for k, v in prof:
    if k == 5:
        f = dict(fields(v))
        funcs[f[1]] = [strs[f.get(n, 0)] for n in (2, 3, 4)] + [str(f.get(5, 0))]
for k, v in prof:
    if k == 4:
        for n, line in fields(v):
            if n == 4:
                ln = dict(fields(line))
                print(" ".join(funcs[ln[1]] + [str(ln.get(2, 0))]))
EOF
}

@test "python: pprof names Python functions by their label, system name the qualified name, with file and lines" {
	"$PROFTOOL" report --frames all --format pprof -o py.pb.gz py.data
	pprof_lines py.pb.gz | sort >lines
	grep -qxF '/tmp/x/train.py:41(Trainer.step) Trainer.step /tmp/x/train.py 41 44' lines
	grep -qxF '/tmp/x/train.py:41(Trainer.step) Trainer.step /tmp/x/train.py 41 47' lines
	grep -qxF '/tmp/x/data.py:12(load.<locals>.read) load.<locals>.read /tmp/x/data.py 12 14' lines
	grep -qxF 'matmul_kernel matmul_kernel /src/kernel.c 100 104' lines
	grep -qxF '_PyObject_Call _PyObject_Call  0 0' lines
}

@test "python: go tool pprof shows Python functions by their label, and their lines with -lines" {
	need "$GO" golang-go
	export HOME=$BATS_TEST_TMPDIR GOCACHE=$BATS_TEST_TMPDIR/gocache GOTOOLCHAIN=local GOFLAGS=
	export PPROF_TMPDIR=$BATS_TEST_TMPDIR
	"$PROFTOOL" report --frames all --format pprof -o py.pb.gz py.data
	# flat and cum of a function's row (pprof -top: flat flat% sum% cum cum% name [file:line])
	"$GO" tool pprof -top -sample_index=samples py.pb.gz >top 2>/dev/null
	awk -v f="$STEP" '$6 == f { print $1, $4 }' top >got
	[ "$(cat got)" = "15 100" ] || { cat top; false; }
	awk -v f="$READ" '$6 == f { print $1, $4 }' top >got
	[ "$(cat got)" = "10 30" ] || { cat top; false; }
	"$GO" tool pprof -top -lines -sample_index=samples py.pb.gz >top 2>/dev/null
	awk -v f="$STEP" '$6 == f { print $1, $4, $7 }' top | sort >got
	diff -u - got <<'EOF' || { cat top; false; }
0 85 /tmp/x/train.py:44
15 15 /tmp/x/train.py:47
EOF
}

@test "python: tree, callers and callees label Python functions; --match takes the qualified name or the label" {
	run --separate-stderr "$PROFTOOL" report --frames all --format tree py.data
	[ "$status" -eq 0 ]
	grep -qE '^ +74\.1% +11\.1% .* 100 +/tmp/x/train\.py:41\(Trainer\.step\)$' <<<"$output"
	for m in '^Trainer\.step$' 'train\.py:41'; do
		run --separate-stderr "$PROFTOOL" report --frames all --format callers --match "$m" py.data
		[ "$status" -eq 0 ]
		diff -u - <(sed -n '/^Function/,$p' <<<"$output") <<'EOF'
Function  <-  was called by (samples with both on the stack, seconds)

/tmp/x/train.py:41(Trainer.step)  (100 samples, 0.100 s cumulative)
    <-       100     0.100  /tmp/x/train.py:30(train)
    <-         5     0.005  python3.11(_PyObject_Call)
EOF
	done
	run --separate-stderr "$PROFTOOL" report --frames all --format callees --match '^load\.<locals>\.read$' py.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"$READ  (30 samples, 0.030 s cumulative)"*"->        20     0.020  libc.so.6(read)"* ]]
	# a native function still matches by its name only
	run --separate-stderr "$PROFTOOL" report --frames all --format callers --match 'python3\.11\(' py.data
	[ "$status" -eq 1 ]
	one_error_line
}

@test "python: diff names Python functions by their label, one per file and line" {
	run --separate-stderr "$PROFTOOL" diff --frames all py.data main.data
	[ "$status" -eq 0 ]
	grep -qE '^ +11\.1% +14\.3% +\+3\.2 +74\.1% +95\.2% +\+21\.2  /tmp/x/train\.py:41\(Trainer\.step\)$' <<<"$output"
	grep -qE ' /tmp/x/data\.py:12\(load\.<locals>\.read\) \(gone\)$' <<<"$output"
	[[ "$output" != *"[[python]]"* ]]
	run --separate-stderr "$PROFTOOL" diff --frames all --format folded py.data main.data
	[ "$status" -eq 0 ]
	grep -qxF 'start_thread;/tmp/x/data.py:12(load.<locals>.read);read 20 0' <<<"$output"
}

@test "python: --lines gives a row per line, self and cumulative exact, recursion counted once" {
	run --separate-stderr "$PROFTOOL" report --frames all --lines --limit 0 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
0/105 /tmp/x/train.py:60(<module>)
0/105 python3.11(Py_RunMain)
0/105 libc.so.6(__libc_start_main)
0/105 python3.11(_start)
0/100 /tmp/x/train.py:35(train)
0/85 /tmp/x/train.py:44(Trainer.step)
0/85 python3.11(_PyObject_Call)
55/55 /src/kernel.c:104(matmul_kernel)
30/30 /src/kernel.c:108(matmul_kernel)
0/30 libc.so.6(start_thread)
20/20 libc.so.6(read)
0/20 /tmp/x/data.py:14(load.<locals>.read)
15/15 /tmp/x/train.py:47(Trainer.step)
10/10 /tmp/x/data.py:15(load.<locals>.read)
5/5 /tmp/x/train.py:36(train)
EOF
}

@test "python: --lines with sort keys, --limit, filters and --per-thread" {
	run --separate-stderr "$PROFTOOL" report --frames all --lines --sort tottime --limit 4 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
55/55 /src/kernel.c:104(matmul_kernel)
30/30 /src/kernel.c:108(matmul_kernel)
20/20 libc.so.6(read)
15/15 /tmp/x/train.py:47(Trainer.step)
EOF
	[[ "$output" == *"... 11 more lines (--limit 0 shows all)"* ]]
	run --separate-stderr "$PROFTOOL" report --frames all --lines --sort filename --limit 0 py.data
	diff -u - <(rows <<<"$output" | awk '{ print $2 }' | grep '^/') <<'EOF'
/src/kernel.c:104(matmul_kernel)
/src/kernel.c:108(matmul_kernel)
/tmp/x/data.py:14(load.<locals>.read)
/tmp/x/data.py:15(load.<locals>.read)
/tmp/x/train.py:35(train)
/tmp/x/train.py:36(train)
/tmp/x/train.py:44(Trainer.step)
/tmp/x/train.py:47(Trainer.step)
/tmp/x/train.py:60(<module>)
EOF
	run --separate-stderr "$PROFTOOL" report --frames all --lines --sort name --limit 2 py.data
	diff -u - <(rows <<<"$output") <<'EOF'
0/105 /tmp/x/train.py:60(<module>)
0/105 python3.11(Py_RunMain)
EOF
	run --separate-stderr "$PROFTOOL" report --frames all --lines --tid 4243 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
0/30 libc.so.6(start_thread)
20/20 libc.so.6(read)
0/20 /tmp/x/data.py:14(load.<locals>.read)
10/10 /tmp/x/data.py:15(load.<locals>.read)
EOF
	run --separate-stderr "$PROFTOOL" report --frames all --lines --per-thread --sort tottime --limit 1 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
55/55 /src/kernel.c:104(matmul_kernel)
20/20 libc.so.6(read)
EOF
}

@test "python: --lines in the tree and in callers; other formats refuse it" {
	run --separate-stderr "$PROFTOOL" report --frames all --lines --format tree py.data
	[ "$status" -eq 0 ]
	grep -qE '^ +63\.0% +0\.0% .* 85 +/tmp/x/train\.py:44\(Trainer\.step\)$' <<<"$output"
	grep -qE '^ +11\.1% +11\.1% .* 15 +/tmp/x/train\.py:47\(Trainer\.step\)$' <<<"$output"
	run --separate-stderr "$PROFTOOL" report --frames all --lines --format callers --match 'train\.py:44' py.data
	[ "$status" -eq 0 ]
	diff -u - <(sed -n '/^Function/,$p' <<<"$output") <<'EOF'
Function  <-  was called by (samples with both on the stack, seconds)

/tmp/x/train.py:44(Trainer.step)  (85 samples, 0.085 s cumulative)
    <-        85     0.085  /tmp/x/train.py:35(train)
    <-         5     0.005  python3.11(_PyObject_Call)
EOF
	for fmt in folded json speedscope pprof svg; do
		run --separate-stderr "$PROFTOOL" report --frames all --lines --format "$fmt" -o out py.data
		[ "$status" -eq 2 ]
		one_error_line
		[[ "$stderr" == *"--lines goes with table, tree, callers and callees"* ]]
	done
}

@test "python: merged files add up their interpreters, by interpreter and version" {
	run --separate-stderr "$PROFTOOL" report --frames all py.data py.data
	[ "$status" -eq 0 ]
	header <<<"$output" | grep -v "^Frames: " | tail -2 >got
	diff -u - got <<'EOF'
Python 3.11.2 (/usr/bin/python3.11): 270 of 296 samples (91.2%) with Python frames; without: 20 no Python thread state, 6 torn
Python 3.10.12 (/usr/bin/python3.10): not read: CPython 3.10 is not supported (3.11 to 3.13 are); its stacks are native
EOF
	[ "$(rows <<<"$output" | grep -F "$STEP")" = "30/200 $STEP" ]
	pyprofile other.data --meta-python '[{"interpreter": "/usr/bin/python3.11", "version": "3.11.4", "samples": 10, "with_frames": 9, "misses": [{"reason": "torn", "count": 1}]}]'
	run --separate-stderr "$PROFTOOL" report --frames all py.data other.data
	[ "$status" -eq 0 ]
	header <<<"$output" | grep '^Python' >got
	diff -u - got <<EOF
$PY311
$PY310
Python 3.11.4 (/usr/bin/python3.11): 9 of 10 samples (90.0%) with Python frames; without: 1 torn
EOF
}

@test "python: a corrupt meta.python is a one-line error, not a crash" {
	for bad in '{}' '[1]' '[{"interpreter": "/p", "samples": 1}]' \
		'[{"interpreter": "/p", "version": 3, "samples": 1, "with_frames": 0}]' \
		'[{"interpreter": "/p", "samples": 1, "with_frames": 2}]' \
		'[{"interpreter": "/p", "samples": 1, "with_frames": 0, "misses": [{"reason": "torn"}]}]' \
		'[{"interpreter": "/p", "samples": 1, "with_frames": 0, "misses": {}}]'; do
		pyprofile bad.data --meta-python "$bad"
		run --separate-stderr "$PROFTOOL" report --frames all bad.data
		[ "$status" -eq 1 ] || { echo "status $status for $bad"; false; }
		one_error_line
		[[ "$stderr" == "proftool: cannot read 'bad.data': the file is corrupt ("*python*")"* ]] ||
			{ echo "for $bad: $stderr"; false; }
		[ -z "$output" ]
	done
	pyprofile bad.data --meta-python '[{"interpreter": "/p", "samples": 1, "with_frames": 2}]'
	run --separate-stderr "$PROFTOOL" report --frames all bad.data
	[[ "$stderr" == "proftool: cannot read 'bad.data': the file is corrupt (python entry 0 is malformed); "* ]]
}
