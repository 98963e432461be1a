#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Python frames in recorded profiles (record/attach --python auto|off): what a user sees
# in the report of CPython programs (tests/workloads/py/*.py), with Debian's python3
# (3.11, stripped: .dynsym only) always and pyenv's 3.12 and 3.13 (libpython3.X.so) when
# they are installed. Each scenario is a function run by one test per interpreter. The
# reports show every frame as recorded (--frames all): tests/report_frames.bats has the
# views that fold the interpreter away.

load helpers

PYDIR=$BATS_TEST_DIRNAME/workloads/py

teardown() {
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	return 0
}

# ---- reading folded stacks ----
#
# A folded frame "is" the Python function QUALNAME when it is QUALNAME or ends with
# "(QUALNAME)": folded stacks may name Python frames by their qualified name alone or
# by the table's label FILE:FIRSTLINE(QUALNAME), and both must pass. A frame is Python
# when it is one of the profile's Python functions (module "[python]" in --format json)
# by that rule; every other frame is native.

FOLDED_AWK='
function isfn(f, q,   n) {
	n = length(f) - length(q) - 2
	return f == q || (n > 0 && substr(f, n + 1) == "(" q ")")
}
function ispy(f) {
	if (f in pyname)
		return 1
	if (!match(f, /\([^()]*\)$/))
		return 0
	return substr(f, RSTART + 1, RLENGTH - 2) in pyname
}
function pct(a, b) {
	return b ? 100 * a / b : 0
}
BEGIN {
	while ((getline l < "names.txt") > 0)
		pyname[l] = 1
}
{
	n = $NF
	line = $0
	sub(/ [0-9]+$/, "", line)
	k = split(line, fr, ";")
	total += n
}
'

# python_names FILE [REPORT OPTIONS]: the qualified names of FILE's Python functions
# (their JSON name, and the QUALNAME of a FILE:LINE(QUALNAME) name), one per line
python_names() {
	"$PROFTOOL" report --frames all --format json "$@" | python3 -c 'import json, re, sys
for f in json.load(sys.stdin)["functions"]:
    if f["module"] == "[python]":
        print(f["name"])
        m = re.search(r"\(([^()]*)\)$", f["name"])
        if m:
            print(m.group(1))'
}

# folded FILE [REPORT OPTIONS]: FILE's folded stacks into folded.txt and its Python
# function names into names.txt, for the measures below
folded() {
	"$PROFTOOL" report --frames all --format folded "$@" >folded.txt
	[ -s folded.txt ] || { echo "no folded stacks from $*" >&2; return 1; }
	python_names "$@" >names.txt
}

# fold_awk PROGRAM [AWK OPTIONS]: runs PROGRAM after FOLDED_AWK on folded.txt, with the
# names of names.txt
fold_awk() {
	awk "${@:2}" "$FOLDED_AWK$1" folded.txt
}

# share Q: percent of the samples whose stack holds the Python function Q
share() {
	fold_awk '{ for (i = 1; i <= k; i++) if (isfn(fr[i], q)) { hit += n; break } }
		END { printf "%.1f\n", pct(hit, total) }' -v q="$1"
}

# coverage: percent of the samples whose stack holds at least one Python frame
coverage() {
	fold_awk '{ for (i = 1; i <= k; i++) if (ispy(fr[i])) { hit += n; break } }
		END { printf "%.2f\n", pct(hit, total) }'
}

# under Q A: percent of the samples holding Q that have A above (before) Q
under() {
	fold_awk '{
		for (j = 1; j <= k && !isfn(fr[j], q); j++)
			;
		if (j > k) next
		with += n
		for (i = 1; i < j; i++) if (isfn(fr[i], a)) { hit += n; break }
	} END { printf "%.1f\n", pct(hit, with) }' -v q="$1" -v a="$2"
}

# through_native A Q: percent of the samples holding Q where A is above Q with at least
# one native frame between them (A ... native ... Q)
through_native() {
	fold_awk '{
		for (j = 1; j <= k && !isfn(fr[j], q); j++)
			;
		if (j > k) next
		with += n
		for (i = j - 1; i >= 1 && !isfn(fr[i], a); i--)
			;
		if (i < 1) next
		for (m = i + 1; m < j; m++) if (!ispy(fr[m])) { hit += n; break }
	} END { printf "%.1f\n", pct(hit, with) }' -v a="$1" -v q="$2"
}

# native_leaf Q: percent of the samples holding Q whose leaf is a native frame below Q
native_leaf() {
	fold_awk '{
		for (j = k; j >= 1 && !isfn(fr[j], q); j--)
			;
		if (j < 1) next
		with += n
		if (j < k && !ispy(fr[k])) hit += n
	} END { printf "%.1f\n", pct(hit, with) }' -v q="$1"
}

# max_frames Q: the most frames of Q in one stack
max_frames() {
	fold_awk '{
		c = 0
		for (i = 1; i <= k; i++) if (isfn(fr[i], q)) c++
		if (c > most) most = c
	} END { print most + 0 }' -v q="$1"
}

# python_frames: how many frames of folded.txt are Python functions (all stacks)
python_frames() {
	fold_awk '{ for (i = 1; i <= k; i++) if (ispy(fr[i])) hit += n }
		END { print hit + 0 }'
}

# ---- reading tables ----

# table_rows: the label and cum% of each row of a --format table report on stdin, as
# "CUM<TAB>LABEL", with "=== TITLE" lines for the sections of --per-thread/--per-process
table_rows() {
	awk '/^=== / { print; next }
		/^ *[0-9]+\/[0-9]+ / {
			cum = $5; sub(/%$/, "", cum)
			label = $0
			sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", label)
			print cum "\t" label
		}'
}

# section_share TITLE_PART Q: cum% of the Python function Q in the section of
# table_rows (stdin) whose title contains TITLE_PART; 0 when the section lacks it
section_share() {
	awk -F '\t' -v t="$1" -v q="$2" '
		function isfn(f, q,   n) {
			n = length(f) - length(q) - 2
			return f == q || (n > 0 && substr(f, n + 1) == "(" q ")")
		}
		/^=== / { in_s = index($0, t) > 0; next }
		in_s && isfn($2, q) { v = $1 }
		END { print v + 0 }'
}

# record_py FILE [RECORD OPTIONS] -- SCRIPT [ARGS]: records $PY running SCRIPT (a file of
# tests/workloads/py) into FILE; its stdout goes to script.out, fails unless it exits 0
record_py() {
	local out=$1 opts=()
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	local script=$PYDIR/$1
	shift
	record_to "$out" "${opts[@]}" -- "$PY" "$script" "$@" >script.out 2>record.err ||
		{ echo "record of $script exited $?: $(cat record.err)" >&2; return 1; }
}

# ---- the scenarios ----

# The 50/30/20 split, cumulative shares within 5 points, and the share of samples with a
# Python frame (BACKEND: perf or ptrace; coverage is checked with perf only)
check_split() {
	local backend=$1 a b c cov def

	record_py s.data --backend "$backend" -- split.py 1.5
	folded s.data
	a=$(share load_batch)
	b=$(share Trainer.step)
	c=$(share log_metrics)
	echo "$PY, $backend: load_batch $a%, Trainer.step $b%, log_metrics $c%" >&3
	near "$a" 50 5
	near "$b" 30 5
	near "$c" 20 5
	# the table's label: FILE:FIRSTLINE(QUALNAME), the method by its qualified name
	def=$(grep -n '    def step(' "$PYDIR/split.py" | cut -d: -f1)
	"$PROFTOOL" report --frames all --limit 0 s.data | table_rows | cut -f2 >labels.txt
	grep -qxF "$PYDIR/split.py:$def(Trainer.step)" labels.txt ||
		{ echo "no row $PYDIR/split.py:$def(Trainer.step):" >&2; cat labels.txt >&2; return 1; }
	[ "$backend" = perf ] || return 0
	cov=$(coverage)
	echo "$PY: $cov% of the samples have a Python frame" >&3
	at_least "$cov" 99
}

# Short bursts between naps (naps.py): an on-CPU profile shows the bursts at their
# 60/40 split, not the sleeps, though the process sleeps most of the time; with
# the perf backend the Python stack is read after the sample is taken, with the
# ptrace backend a thread is stopped only while it runs.
check_naps() {
	local backend=$1 a b nap ab split max_nap

	record_py n.data --backend "$backend" -- naps.py 250
	folded n.data
	a=$(share burst_a)
	b=$(share burst_b)
	nap=$(share nap)
	ab=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a + b }')
	split=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", a + b ? 100 * a / (a + b) : 0 }')
	echo "$PY, $backend: burst_a $a%, burst_b $b% (burst_a $split% of the two), nap $nap%" >&3
	# the ptrace backend's ticks come late when its tracer waits for a CPU: on a loaded
	# 2-CPU machine its split drifts either way (70/30, 47/53 measured), so there it is
	# only held to sampling both bursts, not to their split. The perf backend reads the Python
	# stack after the sample, late by more on a loaded machine (6-8 % of the samples
	# under ASan, 16.2 % once in a CI run): a burst's last samples may name nap, which
	# must still stay well below either burst
	if [ "$backend" = perf ]; then
		max_nap=25
		at_least "$ab" 80
		near "$split" 60 8
	else
		max_nap=5
		at_least "$ab" 85
		at_least "$split" 20
		awk -v s="$split" 'BEGIN { exit !(s <= 80) }'
	fi
	awk -v n="$nap" -v m="$max_nap" 'BEGIN { exit !(n <= m) }' ||
		{ echo "nap, which sleeps, has $nap% of the on-CPU samples" >&2; return 1; }
}

# Python -> C -> Python: sorted(..., key=sort_key) in outer
check_callback() {
	local via in_outer s

	record_py c.data -- callback.py 0.6
	folded c.data
	s=$(share sort_key)
	via=$(through_native outer sort_key)
	in_outer=$(under sort_key outer)
	echo "$PY: sort_key $s% of the samples; of those, under outer $in_outer%, outer ... native ... sort_key $via%" >&3
	at_least "$s" 30
	at_least "$in_outer" 90
	at_least "$via" 90
}

# hashlib.sha256 over 16 MiB again and again: hash_buffers has native leaves
check_native_leaf() {
	local s leaf

	record_py h.data -- hashing.py 1
	folded h.data
	s=$(share hash_buffers)
	leaf=$(native_leaf hash_buffers)
	echo "$PY: hash_buffers $s% of the samples; of those, native leaf below it $leaf%" >&3
	at_least "$s" 90
	at_least "$leaf" 90
}

# pyloop and hashing take turns in one frame slot every 0.1 ms: a sample in SHA-256 code
# (hashing's) whose innermost Python frame is another was read after the thread moved on.
# check_turns [script|script-auto|capture-off]: the command is a shell script that runs the
# interpreter through a variable (its text does not say python), recorded with --python on;
# or one that names it, recorded with the default --python auto, which reads the script; or
# the script itself, with --python-capture off (as where BPF is not allowed: read from the
# process just after each sample, the drain thread woken on its CPU)
check_turns() {
	local s bad

	if [ "${1:-}" = capture-off ]; then
		record_py t.data --python-capture off -- turns.py 2
	elif [ "${1:-}" = script ]; then
		printf '#!/bin/sh\nexec "$TURNS_PY" "%s" 2\n' "$PYDIR/turns.py" >turns.sh
		chmod +x turns.sh
		TURNS_PY=$PY record_to t.data --python on -- ./turns.sh >script.out 2>record.err ||
			{ echo "record of turns.sh exited $?: $(cat record.err)" >&2; return 1; }
	elif [ "${1:-}" = script-auto ]; then
		printf '#!/usr/bin/env bash\n# trains the model\nset -e\n"%s" "%s" 2\n' "$PY" "$PYDIR/turns.py" >turns.sh
		chmod +x turns.sh
		record_to t.data -- ./turns.sh >script.out 2>record.err ||
			{ echo "record of turns.sh exited $?: $(cat record.err)" >&2; return 1; }
	else
		record_py t.data -- turns.py 2
	fi
	folded t.data
	s=$(fold_awk 'tolower(line) ~ /sha2|libcrypto/ { hit += n } END { printf "%.1f\n", pct(hit, total) }')
	bad=$(fold_awk 'tolower(line) ~ /sha2|libcrypto/ {
		for (j = k; j >= 1 && !ispy(fr[j]); j--)
			;
		with += n
		if (j < 1 || !isfn(fr[j], "hashing")) hit += n
	} END { printf "%.2f\n", pct(hit, with) }')
	echo "$PY: $s% of the samples in SHA-256 code; of those, not under hashing $bad%" >&3
	# enough SHA-256 samples to judge by: their share is the interpreter's speed against
	# OpenSSL's (29-31 % on Debian's 3.11, 20 % on 3.13, 17.6 % once on 3.12 in CI)
	at_least "$s" 10
	awk -v b="$bad" 'BEGIN { exit !(b <= 2) }' ||
		{ echo "$bad% of the SHA-256 samples are not under hashing: read after the thread moved on" >&2; return 1; }
}

# four threads in four functions: --per-thread shows each thread with its own function
check_threads() {
	local fn tid other v

	record_py t.data -- threads.py 1
	[ "$(wc -l <script.out)" -eq 4 ]
	"$PROFTOOL" report --frames all --per-thread --limit 0 t.data | table_rows >rows.txt
	[ "$(grep -c '^=== ' rows.txt)" -ge 4 ]
	while read -r fn tid; do
		grep -q "^=== .*tid $tid)" rows.txt || { echo "no section for tid $tid" >&2; return 1; }
		v=$(section_share "tid $tid)" "$fn" <rows.txt)
		echo "$PY: thread $tid: $fn $v%" >&3
		at_least "$v" 90
		for other in spin_red spin_green spin_blue spin_gold; do
			[ "$other" = "$fn" ] && continue
			v=$(section_share "tid $tid)" "$other" <rows.txt)
			[ "$v" = 0 ] || { echo "thread $tid ($fn) has $other: $v%" >&2; return 1; }
		done
	done <script.out
}

# multiprocessing with start method METHOD: work in the workers, not in the parent
check_processes() {
	local method=$1 parent pid v n=0

	record_py p.data -- procs.py "$method" 0.6
	parent=$(awk '$1 == "parent" { print $2 }' script.out)
	[ -n "$parent" ]
	"$PROFTOOL" report --frames all --per-process --limit 0 p.data | table_rows >rows.txt
	for pid in $(awk '$1 == "worker" { print $2 }' script.out); do
		n=$((n + 1))
		grep -q "^=== .*(pid $pid)" rows.txt || { echo "no section for worker $pid" >&2; return 1; }
		v=$(section_share "(pid $pid)" work <rows.txt)
		echo "$PY, $method: worker $pid: work $v%" >&3
		at_least "$v" 60
		# and --pid keeps it
		folded p.data --pid "$pid"
		at_least "$(share work)" 60
	done
	[ "$n" -eq 2 ]
	v=$(section_share "(pid $parent)" work <rows.txt)
	[ "$v" = 0 ] || { echo "the parent $parent runs work: $v%" >&2; return 1; }
}

# 900-deep recursion: every frame of it on the stack
check_recursion() {
	local most

	record_py d.data -- deep.py 900 0.3
	folded d.data
	most=$(max_frames recurse)
	echo "$PY: at most $most frames of recurse in a stack" >&3
	[ "$most" -eq 901 ]
	at_least "$(share recurse)" 90
	# the samples of the innermost call (the spinning one) mostly hold all 901 frames
	fold_awk '{
		c = 0
		for (i = 1; i <= k; i++) if (isfn(fr[i], "recurse")) c++
		if (c) with += n
		if (c == 901) hit += n
	} END { printf "%.1f\n", pct(hit, with) }' >full.txt
	echo "$PY: $(cat full.txt)% of the samples in recurse hold all 901 frames" >&3
	at_least "$(cat full.txt)" 90
}

# a generator under its for loop, an asyncio coroutine under the one awaiting it
check_generators() {
	local g c gu cu

	record_py g.data -- gens.py 0.6
	folded g.data
	g=$(share produce_items)
	c=$(share crunch_coro)
	gu=$(under produce_items consume_gen)
	cu=$(under crunch_coro run_tasks)
	echo "$PY: produce_items $g% (under consume_gen $gu%), crunch_coro $c% (under run_tasks $cu%)" >&3
	at_least "$g" 25
	at_least "$c" 25
	# (90 rather than 100: up to 4 % of the generator's samples come out as a stack of
	# produce_items alone, read while the generator was being resumed or suspended)
	at_least "$gu" 90
	at_least "$cu" 90
}

# exceptions raised and caught in a hot loop
check_exceptions() {
	local r cov

	record_py e.data -- exceptions.py 0.8
	folded e.data
	r=$(share raise_error)
	cov=$(coverage)
	echo "$PY: raise_error $r% (under catch_loop $(under raise_error catch_loop)%), Python frames in $cov% of the samples" >&3
	at_least "$r" 20
	at_least "$(under raise_error catch_loop)" 99
	# (98 rather than 99: the exception machinery adds a few samples, 0.3 % to 0.6 %, where
	# the reader finds no Python frame or a torn one)
	at_least "$cov" 98
}

# attach for 2 s to a running script; it goes on running and finishes normally
check_attach() {
	local st

	"$PY" "$PYDIR/attach_target.py" ready stop >target.out 2>&1 &
	target=$!
	wait_ready
	run --separate-stderr "$PROFTOOL" attach -q --duration 2 -o a.data "$target"
	[ "$status" -eq 0 ] || { echo "attach exited $status: $stderr" >&2; return 1; }
	# left running, neither stopped nor traced, and still working
	[[ "$(state "$target")" == [RS] ]]
	[ "$(tracer "$target")" = 0 ]
	burn_ticks "$target" 5
	folded a.data
	echo "$PY: attach: wait_for_stop $(share wait_for_stop)%, spin_round $(share spin_round)%" >&3
	at_least "$(share wait_for_stop)" 90
	at_least "$(share spin_round)" 50
	# told to stop, it finishes normally
	touch stop
	wait "$target" && st=0 || st=$?
	target=
	[ "$st" -eq 0 ] || { echo "the target exited $st: $(cat target.out)" >&2; return 1; }
	grep -q '^finished after [0-9]* rounds$' target.out
}

# a C thread that never ran Python, beside a Python thread
check_c_thread() {
	local ctid ptid v

	record_py ct.data -- cthread.py "$WORKLOADS/libcspin.so" 1
	ctid=$(awk '$1 == "c" { print $2 }' script.out)
	ptid=$(awk '$1 == "python" { print $2 }' script.out)
	[ -n "$ctid" ]
	[ -n "$ptid" ]
	folded ct.data --tid "$ptid"
	v=$(share python_side)
	echo "$PY: Python thread: python_side $v%" >&3
	at_least "$v" 90
	folded ct.data --tid "$ctid"
	v=$(python_frames)
	echo "$PY: C thread: spin_in_c $(share spin_in_c)%, $v Python frames" >&3
	[ "$v" -eq 0 ] || { head -5 folded.txt >&2; return 1; }
	at_least "$(share spin_in_c)" 90
}

# children forking and execing /bin/true or exiting at once, all the time
check_fork_exec() {
	local parent s

	record_py fx.data -- forkexec.py 200 0.7
	parent=$(awk '$1 == "parent" { print $2 }' script.out)
	[ -n "$parent" ]
	folded fx.data --pid "$parent"
	s=$(share parent_work)
	echo "$PY: parent_work $s% of the parent's samples" >&3
	# (the parent computes in parent_work nearly all the time it is on a CPU, but a share
	# of its samples shows main instead: the perf backend reads Python frames late)
	at_least "$s" 25
	at_least "$(coverage)" 95
	# the whole profile reads, every format that walks the stacks
	"$PROFTOOL" report --frames all --limit 0 fx.data >/dev/null
	"$PROFTOOL" report --frames all --format tree fx.data >/dev/null
}

# --python off: the interpreter's own frames, no Python functions
check_python_off() {
	local q

	record_py o.data --python off -- split.py 0.3
	folded o.data
	[ ! -s names.txt ] || { echo "Python functions with --python off: $(head -5 names.txt)" >&2; return 1; }
	for q in load_batch Trainer.step log_metrics main '<module>'; do
		[ "$(share "$q")" = 0.0 ] || { echo "frame $q with --python off" >&2; return 1; }
	done
	at_least "$(share _PyEval_EvalFrameDefault)" 90
}

# ---- the tests ----

@test "python: 50/30/20 split within 5 points, a method by its qualified name, >= 99% of samples with a Python frame (Debian's python3)" {
	use_python debian
	check_split perf
}

@test "python: 50/30/20 split within 5 points, a method by its qualified name, >= 99% of samples with a Python frame (pyenv 3.12)" {
	use_python 3.12
	check_split perf
}

@test "python: 50/30/20 split within 5 points, a method by its qualified name, >= 99% of samples with a Python frame (pyenv 3.13)" {
	use_python 3.13
	check_split perf
}

@test "python: --backend ptrace: the 50/30/20 split within 5 points (Debian's python3)" {
	use_python debian
	check_split ptrace
}

@test "python: --backend ptrace: the 50/30/20 split within 5 points (pyenv 3.12)" {
	use_python 3.12
	check_split ptrace
}

@test "python: --backend ptrace: the 50/30/20 split within 5 points (pyenv 3.13)" {
	use_python 3.13
	check_split ptrace
}

@test "python: short bursts between sleeps, --backend perf: the bursts' split, not the sleeps (Debian's python3)" {
	use_python debian
	check_naps perf
}

@test "python: short bursts between sleeps, --backend ptrace: the bursts' split, not the sleeps (Debian's python3)" {
	use_python debian
	check_naps ptrace
}

@test "python: short bursts between sleeps, --backend perf: the bursts' split, not the sleeps (pyenv 3.12)" {
	use_python 3.12
	check_naps perf
}

@test "python: short bursts between sleeps, --backend ptrace: the bursts' split, not the sleeps (pyenv 3.12)" {
	use_python 3.12
	check_naps ptrace
}

@test "python: short bursts between sleeps, --backend perf: the bursts' split, not the sleeps (pyenv 3.13)" {
	use_python 3.13
	check_naps perf
}

@test "python: short bursts between sleeps, --backend ptrace: the bursts' split, not the sleeps (pyenv 3.13)" {
	use_python 3.13
	check_naps ptrace
}

@test "python: Python -> C -> Python: sorted(key=) stacks read outer ... native ... key (Debian's python3)" {
	use_python debian
	check_callback
}

@test "python: Python -> C -> Python: sorted(key=) stacks read outer ... native ... key (pyenv 3.12)" {
	use_python 3.12
	check_callback
}

@test "python: Python -> C -> Python: sorted(key=) stacks read outer ... native ... key (pyenv 3.13)" {
	use_python 3.13
	check_callback
}

@test "python: hashlib over a large buffer: native leaves under the Python caller (Debian's python3)" {
	use_python debian
	check_native_leaf
}

@test "python: hashlib over a large buffer: native leaves under the Python caller (pyenv 3.12)" {
	use_python 3.12
	check_native_leaf
}

@test "python: hashlib over a large buffer: native leaves under the Python caller (pyenv 3.13)" {
	use_python 3.13
	check_native_leaf
}

@test "python: two functions taking turns in one frame every 0.1 ms: samples in SHA-256 code read as under hashing (Debian's python3)" {
	use_python debian
	check_turns
}

@test "python: two functions taking turns in one frame every 0.1 ms: samples in SHA-256 code read as under hashing (pyenv 3.12)" {
	use_python 3.12
	check_turns
}

@test "python: two functions taking turns in one frame every 0.1 ms: samples in SHA-256 code read as under hashing (pyenv 3.13)" {
	use_python 3.13
	check_turns
}

@test "python: --python-capture off: turns.py's samples in SHA-256 code read as under hashing (Debian's python3)" {
	use_python debian
	check_turns capture-off
}

@test "python: --python-capture off: turns.py's samples in SHA-256 code read as under hashing (pyenv 3.13)" {
	use_python 3.13
	check_turns capture-off
}

@test "python: --python on, behind a shell script: turns.py's samples in SHA-256 code read as under hashing (Debian's python3)" {
	use_python debian
	check_turns script
}

@test "python: behind a shell script that names the interpreter, --python auto reads as on: turns.py's samples in SHA-256 code read as under hashing" {
	use_python debian
	check_turns script-auto
}

@test "python: --python takes auto, on or off; anything else is a usage error" {
	run "$PROFTOOL" record --python sometimes -o x.data -- true
	[ "$status" -eq 2 ]
	[ "$output" = "proftool: --python takes auto, on or off, not 'sometimes'; see 'proftool record --help'" ]
	[ ! -e x.data ]
}

@test "python: four threads, four functions: --per-thread shows each thread with its own (Debian's python3)" {
	use_python debian
	check_threads
}

@test "python: four threads, four functions: --per-thread shows each thread with its own (pyenv 3.12)" {
	use_python 3.12
	check_threads
}

@test "python: four threads, four functions: --per-thread shows each thread with its own (pyenv 3.13)" {
	use_python 3.13
	check_threads
}

# forkwork.py's workers run the function their parent ran before it forked them: each starts
# with its parent's code objects (symbolize/pyfind.c, py_proc_seed), checks their headers but
# reads no name or line table of them, and names its frames as a cold read would. With
# captures (the headers checked from the copy) and without.
check_fork_seed() {
	local cap took pid n
	for cap in auto off; do
		PROFTOOL_DEBUG_PYTHON=1 "$PROFTOOL" record -q --python-capture "$cap" -o f.data -- \
			"$PY" "$PYDIR/forkwork.py" 1 >script.out 2>record.err
		# "...; took N from other processes", a line a process
		took=$(sed -n 's/.*; took \([0-9][0-9]*\) from other processes$/\1/p' record.err |
			awk '{ s += $1 } END { print s + 0 }')
		echo "$PY, --python-capture $cap: $took code objects taken from other processes" >&3
		# work and <module> at least, for each of two workers
		at_least "$took" 4
		n=0
		for pid in $(awk '$1 == "worker" { print $2 }' script.out); do
			n=$((n + 1))
			folded f.data --pid "$pid"
			echo "  worker $pid: work $(share work)%, main $(share main)%" >&3
			at_least "$(share work)" 90
			at_least "$(under work main)" 99
		done
		[ "$n" -eq 2 ]
	done
}

@test "python: forked workers start with their parent's code objects, and name their frames the same (Debian's python3)" {
	use_python debian
	check_fork_seed
}

@test "python: forked workers start with their parent's code objects, and name their frames the same (pyenv 3.13)" {
	use_python 3.13
	check_fork_seed
}

@test "python: multiprocessing fork and spawn: work in the worker processes (Debian's python3)" {
	use_python debian
	check_processes fork
	check_processes spawn
}

@test "python: multiprocessing fork and spawn: work in the worker processes (pyenv 3.12)" {
	use_python 3.12
	check_processes fork
	check_processes spawn
}

@test "python: multiprocessing fork and spawn: work in the worker processes (pyenv 3.13)" {
	use_python 3.13
	check_processes fork
	check_processes spawn
}

@test "python: 900-deep recursion: all 901 frames in the stack (Debian's python3)" {
	use_python debian
	check_recursion
}

@test "python: 900-deep recursion: all 901 frames in the stack (pyenv 3.12)" {
	use_python 3.12
	check_recursion
}

@test "python: 900-deep recursion: all 901 frames in the stack (pyenv 3.13)" {
	use_python 3.13
	check_recursion
}

@test "python: a generator and an asyncio coroutine under their consumers (Debian's python3)" {
	use_python debian
	check_generators
}

@test "python: a generator and an asyncio coroutine under their consumers (pyenv 3.12)" {
	use_python 3.12
	check_generators
}

@test "python: a generator and an asyncio coroutine under their consumers (pyenv 3.13)" {
	use_python 3.13
	check_generators
}

@test "python: exceptions raised and caught in a hot loop (Debian's python3)" {
	use_python debian
	check_exceptions
}

@test "python: exceptions raised and caught in a hot loop (pyenv 3.12)" {
	use_python 3.12
	check_exceptions
}

@test "python: exceptions raised and caught in a hot loop (pyenv 3.13)" {
	use_python 3.13
	check_exceptions
}

@test "python: attach --duration 2 to a running script, which goes on and finishes (Debian's python3)" {
	use_python debian
	check_attach
}

@test "python: attach --duration 2 to a running script, which goes on and finishes (pyenv 3.12)" {
	use_python 3.12
	check_attach
}

@test "python: attach --duration 2 to a running script, which goes on and finishes (pyenv 3.13)" {
	use_python 3.13
	check_attach
}

@test "python: a C thread that never ran Python has no Python frames, the Python thread has (Debian's python3)" {
	use_python debian
	check_c_thread
}

@test "python: a C thread that never ran Python has no Python frames, the Python thread has (pyenv 3.12)" {
	use_python 3.12
	check_c_thread
}

@test "python: a C thread that never ran Python has no Python frames, the Python thread has (pyenv 3.13)" {
	use_python 3.13
	check_c_thread
}

@test "python: children that exec or exit at once while the parent runs Python (Debian's python3)" {
	use_python debian
	check_fork_exec
}

@test "python: children that exec or exit at once while the parent runs Python (pyenv 3.12)" {
	use_python 3.12
	check_fork_exec
}

@test "python: children that exec or exit at once while the parent runs Python (pyenv 3.13)" {
	use_python 3.13
	check_fork_exec
}

@test "python: --python off: no Python functions, the interpreter's _PyEval_EvalFrameDefault (Debian's python3)" {
	use_python debian
	check_python_off
}

@test "python: --python off: no Python functions, the interpreter's _PyEval_EvalFrameDefault (pyenv 3.12)" {
	use_python 3.12
	check_python_off
}

@test "python: --python off: no Python functions, the interpreter's _PyEval_EvalFrameDefault (pyenv 3.13)" {
	use_python 3.13
	check_python_off
}

@test "python: a program that is not Python: the same functions with --python auto and off" {
	record_to auto.data -- "$WORKLOADS/threads"
	record_to off.data --python off -- "$WORKLOADS/threads"
	[ -z "$(python_names auto.data)" ]
	for f in auto off; do
		"$PROFTOOL" report --frames all --limit 0 "$f.data" | table_rows >"$f.rows"
	done
	# every function with 1% of either run is in the table of the other (the program's:
	# the kernel's interrupt entry took 1 % of one run and none of the other once in CI)
	for f in auto off; do
		awk -F '\t' '$1 >= 1 && $2 !~ /^\[kernel\]/ { print $2 }' "$f.rows" | sort -u >"$f.main"
		cut -f2 "$f.rows" | sort -u >"$f.all"
	done
	comm -23 auto.main off.all >only-auto
	comm -23 off.main auto.all >only-off
	[ ! -s only-auto ] || { echo "only with --python auto: $(cat only-auto)" >&2; false; }
	[ ! -s only-off ] || { echo "only with --python off: $(cat only-off)" >&2; false; }
	grep -q '(worker_fn_1)$' auto.main
}

@test "python: record --python maybe is a usage error" {
	run --separate-stderr "$PROFTOOL" record --python maybe -- true
	[ "$status" -eq 2 ]
	one_error_line
	[ ! -e proftool.data ]
}
