#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --frames mixed|python|all: how a process that ran Python code is shown. Exact views of
# the profile tests/tools/pyprofile.py writes (its header lists the stacks), in every
# format, top and diff; native profiles unchanged byte for byte; and a recorded job
# (tests/workloads/py/pyview.py: imports, a pure-Python loop, hashlib, a sort with a key
# callback, each phase timed by the script) on Debian's python3 and pyenv's 3.12 and 3.13.

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PYTHON3" "$BATS_TEST_DIRNAME/tools/pyprofile.py" py.data
	"$PYTHON3" "$BATS_TEST_DIRNAME/tools/pyprofile.py" main.data --main-only
	"$PYTHON3" "$BATS_TEST_DIRNAME/tools/pyprofile.py" nat.data --native
	"$PROFTOOL" record -q -o c.data -- "$WORKLOADS/threads" 0.3
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# The table rows on stdin as "self/cum label" (a label may have spaces: <frozen site>).
rows() {
	awk '/filename:lineno\(function\)/ { on = 1; next }
		on && /^ *[0-9]+\/[0-9]+ / { n = $1; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, ""); print n, $0 }'
}

@test "frames: mixed (the default) folds the interpreter into the Python functions and leaves out start-up" {
	run --separate-stderr "$PROFTOOL" report --format folded py.data
	[ "$status" -eq 0 ]
	diff -u - <(echo "$output") <<'EOF'
/tmp/x/data.py:12(load.<locals>.read) 10
/tmp/x/data.py:12(load.<locals>.read);read 20
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train) 5
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step) 15
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);/tmp/x/train.py:41(Trainer.step);matmul_kernel 5
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);matmul_kernel 80
EOF
	# the same with --frames mixed, and the table: <module> first, no interpreter row
	diff <("$PROFTOOL" report --format folded --frames mixed py.data) <(echo "$output")
	run --separate-stderr "$PROFTOOL" report --limit 0 py.data
	diff -u - <(rows <<<"$output") <<'EOF'
5/105 /tmp/x/train.py:30(train)
0/105 /tmp/x/train.py:1(<module>)
15/100 /tmp/x/train.py:41(Trainer.step)
85/85 /src/kernel.c:100(matmul_kernel)
10/30 /tmp/x/data.py:12(load.<locals>.read)
20/20 libc.so.6(read)
EOF
	# the header still counts stacks by how the recording unwound them
	[[ "$output" == *"Stacks unwound to their root: 135 of 135 (100.0%)"* ]]
	grep -qx 'Frames: mixed: Python functions and the native code they call outside the interpreter, whose own frames count as the Python function they run; --frames python shows Python only, --frames all every frame' <<<"$output"
}

@test "frames: python counts native time as the calling Python function's, cProfile's way" {
	run --separate-stderr "$PROFTOOL" report --format folded --frames python nat.data
	[ "$status" -eq 0 ]
	diff -u - <(echo "$output") <<'EOF'
/tmp/x/data.py:12(load.<locals>.read) 30
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train) 5
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step) 95
/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);/tmp/x/train.py:41(Trainer.step) 5
[native] 12
__libc_start_main;main;sh_work 8
EOF
	run --separate-stderr "$PROFTOOL" report --frames python --limit 0 --sort tottime py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
100/100 /tmp/x/train.py:41(Trainer.step)
30/30 /tmp/x/data.py:12(load.<locals>.read)
5/105 /tmp/x/train.py:30(train)
0/105 /tmp/x/train.py:1(<module>)
EOF
	[[ "$output" == *"Frames: python: Python functions only, native time counted as the Python function that called it, samples without a Python frame as [native]; --frames mixed shows the native code, --frames all every frame"* ]]
	# mixed keeps the native thread of the Python process (it has no Python frame) as it was
	"$PROFTOOL" report --format folded nat.data | grep -qxF 'start_thread;gomp_thread_start;gomp_barrier_wait 12'
}

@test "frames: all is every frame as recorded, and says so" {
	run --separate-stderr "$PROFTOOL" report --format folded --frames all py.data
	[ "$status" -eq 0 ]
	grep -qxF '_start;__libc_start_main;Py_RunMain;/tmp/x/train.py:1(<module>);/tmp/x/train.py:30(train);/tmp/x/train.py:41(Trainer.step);_PyObject_Call;matmul_kernel 80' <<<"$output"
	run --separate-stderr "$PROFTOOL" report --frames all py.data
	grep -qF "Frames: all, as recorded, the interpreter's own included; --frames mixed (the default) counts them as the Python function they run" <<<"$output"
	grep -qE '^ +0/105 .* python3\.11\(Py_RunMain\)$' <<<"$output"
}

@test "frames: every format shows the view: the interpreter's frames only with all, native ones not with python" {
	# Py_RunMain and _PyObject_Call are the interpreter's, matmul_kernel an extension's
	for fmt in json timers speedscope chrome pprof svg html; do
		for v in mixed python all; do
			"$PROFTOOL" report --format "$fmt" --frames "$v" -o "out.$v" py.data
			if [ "$fmt" = pprof ]; then
				gzip -dc "out.$v" >"txt.$v"
			else
				cp "out.$v" "txt.$v"
			fi
		done
		for f in Py_RunMain _PyObject_Call; do
			grep -qF "$f" txt.all || { echo "$fmt all: no $f" >&2; false; }
			[ "$(grep -cF "$f" txt.mixed)" -eq 0 ] || { echo "$fmt mixed: $f" >&2; false; }
			[ "$(grep -cF "$f" txt.python)" -eq 0 ] || { echo "$fmt python: $f" >&2; false; }
		done
		grep -qF matmul_kernel txt.mixed || { echo "$fmt mixed: no matmul_kernel" >&2; false; }
		[ "$(grep -cF matmul_kernel txt.python)" -eq 0 ] || { echo "$fmt python: matmul_kernel" >&2; false; }
		grep -qF 'Trainer.step' txt.python
	done
	# the call tree: Trainer.step under train, matmul_kernel under it (mixed) or folded in (python)
	"$PROFTOOL" report --format tree py.data | grep -qE '^ +59\.3% +59\.3% .* 80 +/src/kernel\.c:100\(matmul_kernel\)$'
	"$PROFTOOL" report --format tree --frames python py.data |
		grep -qE '^ +74\.1% +70\.4% .* 100 +/tmp/x/train\.py:41\(Trainer\.step\)$'
	run --separate-stderr "$PROFTOOL" report --format callers --match '^Trainer\.step$' py.data
	[ "$status" -eq 0 ]
	diff -u - <(sed -n '/^Function/,$p' <<<"$output") <<'EOF'
Function  <-  was called by (samples with both on the stack, seconds)

/tmp/x/train.py:41(Trainer.step)  (100 samples, 0.100 s cumulative)
    <-       100     0.100  /tmp/x/train.py:30(train)
EOF
	# JSON's stacks start at <module>
	"$PROFTOOL" report --format json py.data | python3 -c 'import json, sys
r = json.load(sys.stdin)
names = [f["name"] for f in r["functions"]]
roots = {names[s["frames"][0]] for s in r["stacks"]}
assert roots == {"/tmp/x/train.py:1(<module>)", "/tmp/x/data.py:12(load.<locals>.read)"}, roots
assert r["meta"]["frames"] == "mixed", r["meta"]["frames"]'
}

@test "frames: --lines, --per-thread, --group-by and --split follow the view; the split classes are the recorded stacks'" {
	run --separate-stderr "$PROFTOOL" report --lines --limit 0 py.data
	[ "$status" -eq 0 ]
	diff -u - <(rows <<<"$output") <<'EOF'
0/105 /tmp/x/train.py:60(<module>)
0/100 /tmp/x/train.py:35(train)
0/85 /tmp/x/train.py:44(Trainer.step)
55/55 /src/kernel.c:104(matmul_kernel)
30/30 /src/kernel.c:108(matmul_kernel)
20/20 libc.so.6(read)
0/20 /tmp/x/data.py:14(load.<locals>.read)
15/15 /tmp/x/train.py:47(Trainer.step)
10/10 /tmp/x/data.py:15(load.<locals>.read)
5/5 /tmp/x/train.py:36(train)
EOF
	run --separate-stderr "$PROFTOOL" report --per-thread --format folded --frames python py.data
	[ "$status" -eq 0 ]
	grep -qxF 'loader (pid 4242, tid 4243);/tmp/x/data.py:12(load.<locals>.read) 30' <<<"$output"
	# the split line is the same in every view; python folds native time, not its class
	for v in mixed python all; do
		"$PROFTOOL" report --split --frames "$v" nat.data | grep '^Python split' >"split.$v"
	done
	diff split.all split.mixed
	diff split.all split.python
	run --separate-stderr "$PROFTOOL" report --split --frames python --limit 0 py.data
	grep -qE '^ +100/100 .* 11\.1% +63\.0%  /tmp/x/train\.py:41\(Trainer\.step\)$' <<<"$output" ||
		{ echo "$output"; false; }
	# groups by module: the interpreter's module only with all
	run --separate-stderr "$PROFTOOL" report --format groups --group-by module nat.data
	[ "$status" -eq 0 ]
	[ "$(grep -cE ' python3\.11$' <<<"$output")" -eq 0 ]
	"$PROFTOOL" report --format groups --group-by module --frames all nat.data | grep -qE ' python3\.11$'
	# --module names a module of the view; the error says where the interpreter is
	run --separate-stderr "$PROFTOOL" report --module python3.11 nat.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"--group-by module --frames all' lists them"* ]]
}

@test "frames: diff and top take --frames" {
	run --separate-stderr "$PROFTOOL" diff --format folded py.data main.data
	[ "$status" -eq 0 ]
	grep -qxF '/tmp/x/data.py:12(load.<locals>.read);read 20 0' <<<"$output"
	[[ "$output" != *_PyObject_Call* ]]
	run --separate-stderr "$PROFTOOL" diff --frames all --format folded py.data main.data
	grep -qxF 'start_thread;/tmp/x/data.py:12(load.<locals>.read);read 20 0' <<<"$output"
	run --separate-stderr "$PROFTOOL" diff --frames python py.data main.data
	[ "$status" -eq 0 ]
	grep -qE '^ +74\.1% +95\.2% +\+21\.2 +74\.1% +95\.2% +\+21\.2  /tmp/x/train\.py:41\(Trainer\.step\)$' <<<"$output" ||
		{ echo "$output"; false; }
	# top, on a Python command: the header says the view, the rows follow it
	[ -x "$PYTHON3" ] || skip_or_fail "no $PYTHON3 (Debian 12's python3 package)"
	run --separate-stderr "$PROFTOOL" top --frames python --cumulative --interval 0.5 --limit 0 -q -- \
		"$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/callback.py" 0.5
	[ "$status" -eq 0 ]
	grep -q ', frames python' <<<"$output"
	grep -qE '\(sort_key\)$' <<<"$output"
	awk '/^ *[0-9]+\/[0-9]+ / { print $NF }' <<<"$output" >labels.txt
	[ -s labels.txt ]
	[ -z "$(grep -vE '\)$|^\[native\]$' labels.txt)" ]
	[ -z "$(grep -E '^(lib)?python3\.' labels.txt)" ]
}

@test "frames: a native profile is the same in every view, byte for byte, with no frames line" {
	for fmt in table folded tree callers callees json timers speedscope chrome pprof svg html; do
		for v in mixed python all; do
			"$PROFTOOL" report --format "$fmt" --frames "$v" -o "c.$v" c.data
		done
		cmp c.all c.mixed
		cmp c.all c.python
	done
	"$PROFTOOL" report c.data >c.txt
	[ "$(grep -c '^Frames' c.txt)" -eq 0 ]
	"$PROFTOOL" report --format json c.data | python3 -c 'import json, sys
assert json.load(sys.stdin)["meta"]["frames"] is None'
	for v in mixed python all; do
		"$PROFTOOL" diff --frames "$v" c.data c.data >"d.$v"
	done
	cmp d.all d.mixed
	cmp d.all d.python
}

@test "frames: errors: an unknown view is a one-line usage error" {
	for cmd in report diff top; do
		run --separate-stderr "$PROFTOOL" "$cmd" --frames native py.data py.data
		[ "$status" -eq 2 ]
		one_error_line
		[[ "$stderr" == "proftool: --frames takes mixed, python or all, not 'native'"* ]]
	done
}

# ---- a recorded Python job ----

# pyview: records tests/workloads/py/pyview.py with $PY into pv.data, its phase times into
# times.txt, and checks the default, python and all views against them
pyview() {
	"$PROFTOOL" record -q -o pv.data -- "$PY" "$BATS_TEST_DIRNAME/workloads/py/pyview.py" times.txt 1
	cat times.txt
	share() { awk -v p="$1" '$1 == p { x = $2 } $1 == "total" { t = $2 } END { printf "%.1f\n", 100 * x / t }' times.txt; }
	# the interpreter's own functions (their module is the interpreter's file) and the
	# Python functions, by the names the folded stacks give them; a name that an extension
	# module has too (Py_INCREF, inlined from Python.h into _csv's dialect_new) is not the
	# interpreter's by its name alone
	"$PROFTOOL" report --format json --frames all pv.data | python3 -c 'import json, re, sys
r = json.load(sys.stdin)
py = [p["interpreter"].rsplit("/", 1)[-1] for p in r["meta"]["python"]]
other = {f["name"] for f in r["functions"] if f["module"] not in py and f["module"] != "[python]"}
with open("interp.txt", "w") as i, open("pynames.txt", "w") as p:
    for f in r["functions"]:
        if f["module"] in py and f["name"] not in other:
            i.write(f["name"] + "\n")
        elif f["module"] == "[python]":
            p.write(f["name"] + "\n")'
	[ -s interp.txt ]
	# the default table: the script's <module> first, no interpreter row in the first 10. (Or
	# second, behind timed, which it calls and which has all its samples but a handful: a
	# sample whose Python and native sides disagree on their eval loops, paired by position,
	# can leave the outermost frame out, a few in 5000 here)
	"$PROFTOOL" report --limit 10 pv.data >table.txt
	rows <table.txt >rows.txt
	cat table.txt
	[[ "$(head -1 rows.txt)" == *"/pyview.py:1(<module>)" ]] ||
		{ [[ "$(head -1 rows.txt)" == *"/pyview.py:"*"(timed)" ]] &&
			[[ "$(sed -n 2p rows.txt)" == *"/pyview.py:1(<module>)" ]] &&
			awk 'NR <= 2 { split($1, c, "/"); v[NR] = c[2] } END { exit !(v[1] - v[2] <= 0.002 * v[1]) }' rows.txt; }
	[ -z "$(cut -d' ' -f2- rows.txt | grep -E '^(lib)?python3\.')" ]
	# the loop's self time is its CPU time
	"$PROFTOOL" report --limit 0 --sort tottime pv.data >tt.txt
	near "$(awk '$NF ~ /\(pure_loop\)$/ { sub(/%/, "", $3); print $3 }' tt.txt)" "$(share pure_loop)" 5
	# folded: every stack with a Python frame starts at one and has no interpreter frame
	# (a stack without one, start-up or exit, stays native)
	"$PROFTOOL" report --format folded pv.data >mixed.txt
	"$PROFTOOL" report --format folded --frames all pv.data >all.txt
	awk -F';' 'FILENAME == ARGV[1] { interp[$0] = 1; next } FILENAME == ARGV[2] { py[$0] = 1; next }
		{
			sub(/ [0-9]+$/, "", $NF)
			for (i = 1; i <= NF && !($i in py); i++)
				;
			if (i > NF)
				next
			if (i > 1) { print "start-up above " $i ": " $0; bad = 1 }
			for (i = 1; i <= NF; i++) if ($i in interp) { print "interpreter frame " $i ": " $0; bad = 1 }
		} END { exit bad }' interp.txt pynames.txt mixed.txt
	depth() { awk -F';' '{ if (NF > m) m = NF } END { print m }' "$1"; }
	echo "folded depth: all $(depth all.txt), mixed $(depth mixed.txt)"
	[ "$(depth mixed.txt)" -lt "$(depth all.txt)" ]
	# the hash's native frames stay under hash_data
	awk '/libcrypto|[Ss][Hh][Aa]256/ { n += $NF; if ($0 ~ /\(hash_data\);/) u += $NF } END { print u, n; exit !(n > 100 && u >= 0.95 * n) }' mixed.txt
	# all: the interpreter's rows are back
	"$PROFTOOL" report --limit 0 --frames all pv.data | rows | cut -d' ' -f2- | grep -qE '^(lib)?python3\.'
	# python: Python rows only, and the hash's caller has the hash's time as its own
	"$PROFTOOL" report --limit 0 --sort tottime --frames python pv.data >py.txt
	rows <py.txt | cut -d' ' -f2- >labels.txt
	[ -z "$(grep -vE '\)$|^\[native\]$' labels.txt)" ]
	[ -z "$(grep -E '^(lib)?python3\.|^\[kernel\]|^libc' labels.txt)" ]
	near "$(awk '$NF ~ /\(hash_data\)$/ { sub(/%/, "", $3); print $3 }' py.txt)" "$(share hash_data)" 5
	near "$(awk '$NF ~ /\(pure_loop\)$/ { sub(/%/, "", $3); print $3 }' py.txt)" "$(share pure_loop)" 5
}

@test "frames: a recorded job leads with <module>, the loop's self time is its CPU time, python counts the hash as its caller's (Debian's python3)" {
	use_python debian
	pyview
}

@test "frames: a recorded job leads with <module>, the loop's self time is its CPU time, python counts the hash as its caller's (pyenv 3.12)" {
	use_python 3.12
	pyview
}

@test "frames: a recorded job leads with <module>, the loop's self time is its CPU time, python counts the hash as its caller's (pyenv 3.13)" {
	use_python 3.13
	pyview
}
