#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Python module python/proftool: the region event files (regions/format.h) it writes,
# read back by tests/tools/rgn_read.py (strict, and independent of the module and of
# proftool's reader), for the programs in tests/workloads/pyregions; with Debian's python3
# (3.11) always and pyenv's 3.12 and 3.13 where they are installed. The adapters are
# tested on the stand-ins in tests/workloads/pyregions/standins, and on the real
# frameworks where they are installed.

load helpers

PYREGIONS=$BATS_TEST_DIRNAME/workloads/pyregions
STANDINS=$PYREGIONS/standins
RGN_READ=$BATS_TEST_DIRNAME/tools/rgn_read.py
PYTHON_TREE=$(cd "$BATS_TEST_DIRNAME/../python" && pwd)
MIB=1048576

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset PROFTOOL_REGIONS PROFTOOL_REGIONS_MB
	export PYTHONPATH=$PYTHON_TREE
	mkdir rgn
}

teardown() {
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	if [ -n "${tmpfs:-}" ]; then
		umount "$tmpfs" 2>/dev/null
	fi
	return 0
}

# ---- running and reading ----

# recorded PROGRAM [ARGS]: runs the workload PROGRAM (in tests/workloads/pyregions) with
# $PY, recording into rgn/; stdout in out.txt, stderr in err.txt; fails if it fails
recorded() {
	local prog=$1
	shift
	PROFTOOL_REGIONS=$PWD/rgn "$PY" "$PYREGIONS/$prog" "$@" >out.txt 2>err.txt ||
		{ cat out.txt err.txt >&2; return 1; }
}

# rgn_read [OPTIONS] FILE|DIR...: the strict reader; fails on any breach of the format
rgn_read() {
	python3 "$RGN_READ" "$@"
}

# events FILE: "KIND DOMAIN/NAME" per event of FILE (pause and resume: "KIND"), in order
events() {
	rgn_read "$1" | sed -n 's/^event .* kind=\([a-z]*\) id=[0-9]* domain="\([^"]*\)" name="\(.*\)"$/\1 \2\/\3/p' |
		sed 's/^\(pause\|resume\) \/$/\1/'
}

# value KEY LINE...: the value of KEY=VALUE in the lines on stdin that start with LINE
value() {
	grep "^$2 " | sed -n "s/.* $1=\([^ ]*\).*/\1/p"
}

# out KEY: the value printed as "KEY VALUE" in out.txt
out() {
	awk -v k="$1" '$1 == k { print $2 }' out.txt
}

# only_file: the one file in rgn/ (fails unless there is exactly one)
only_file() {
	local f=(rgn/*.rgn)
	[ "${#f[@]}" -eq 1 ] && [ -f "${f[0]}" ] || { echo "files: ${f[*]}" >&2; return 1; }
	echo "${f[0]}"
}

# rgn_py FILE EXPR: the Python expression EXPR on FILE read by rgn_read.py (bound to f,
# a RegionFile)
rgn_py() {
	python3 -c 'import sys
sys.path.insert(0, sys.argv[1])
from rgn_read import RegionFile
f = RegionFile(sys.argv[2])
print(eval(sys.argv[3]))' "$(dirname "$RGN_READ")" "$1" "$2"
}

# count KIND DOMAIN NAME FILE: how many KIND events of DOMAIN/NAME FILE holds
count() {
	rgn_read --summary "$4" |
		awk -v l="count $1 domain=\"$2\" name=\"$3\"" 'index($0, l " ") == 1 { n = $NF } END { print n + 0 }'
}

# ---- not recording ----

@test "not recording: without PROFTOOL_REGIONS every call is a no-op and no file is made" {
	use_python debian
	"$PY" "$PYREGIONS/api.py" >out.txt
	[ "$(out enabled)" = False ]
	grep -qx ok out.txt
	# one shared object; the decorator hands the function back; setting the variable
	# after the import changes nothing
	"$PY" -c '
import os, proftool
os.environ["PROFTOOL_REGIONS"] = os.path.abspath("rgn")
def f(): pass
assert proftool.region("a") is proftool.region("b", domain="d")
assert proftool.region("a")(f) is f
with proftool.region("a"):
    proftool.begin("a"); proftool.end("a"); proftool.mark("m"); proftool.pause(); proftool.resume()
assert not proftool.enabled()'
	[ -z "$(ls rgn)" ]
}

@test "not recording: the module imports nothing of the writer" {
	use_python debian
	run "$PY" -c 'import sys, proftool; print("proftool._writer" in sys.modules, "mmap" in sys.modules)'
	[ "$status" -eq 0 ]
	[ "$output" = "False False" ]
}

# ---- what one thread records ----

api_events() {
	recorded api.py
	local tid f
	tid=$(out tid)
	[ "$(out enabled)" = True ]
	grep -qx ok out.txt
	[ ! -s err.txt ]
	# one file, named for the process (the main thread's tid is the pid), its header
	[ "$(ls rgn)" = "$tid-py-0.rgn" ]
	f=rgn/$tid-py-0.rgn
	rgn_read "$f" >read.txt
	[ "$(value pid header <read.txt)" = "$tid" ]
	[ "$(value writer header <read.txt)" = 2 ]
	[ "$(value size header <read.txt)" = $((256 * MIB)) ]
	[ "$(value dropped header <read.txt)" = 0 ]
	[ "$(value next_id header <read.txt)" = 12 ]
	[ "$(value next header <read.txt)" = $((4096 + 2 * MIB)) ]
	# one segment, the main thread's
	[ "$(grep -c '^segment ' read.txt)" = 1 ]
	grep -q "^segment at=$((4096 + MIB)) tid=$tid seq=0 used=$((29 * 16)) dropped=0 comm=\"MainThread\"$" read.txt
	# the names, in the order of first use
	grep '^name ' read.txt >names.txt
	cat >expected.txt <<-'EOF'
	name id=1 domain="" name="outer"
	name id=2 domain="" name="tick"
	name id=3 domain="" name="inner"
	name id=4 domain="io" name="inner"
	name id=5 domain="" name="manual"
	name id=6 domain="" name="fact"
	name id=7 domain="" name="Model.forward"
	name id=8 domain="" name="raises"
	name id=9 domain="" name="boom"
	name id=10 domain="" name="again"
	name id=11 domain="" name="42"
	name id=12 domain="" name="['un', 'hashable']"
	EOF
	diff expected.txt names.txt
	# every event, in order, on that thread
	[ "$(value tid event <read.txt | sort -u)" = "$tid" ]
	events "$f" >events.txt
	cat >expected.txt <<-'EOF'
	begin /outer
	mark /tick
	begin /inner
	end /inner
	begin io/inner
	end io/inner
	end /outer
	pause
	resume
	begin /manual
	end /manual
	begin /fact
	begin /fact
	begin /fact
	end /fact
	end /fact
	end /fact
	begin /Model.forward
	end /Model.forward
	begin /raises
	end /raises
	begin /boom
	end /boom
	begin /again
	begin /again
	end /again
	end /again
	mark /42
	mark /['un', 'hashable']
	EOF
	diff expected.txt events.txt
	# CLOCK_MONOTONIC: after the file's start (rgn_read checks it, and that time never
	# goes backwards on a thread) and before now
	local last now
	last=$(value time event <read.txt | tail -1)
	now=$(python3 -c 'import time; print(time.monotonic_ns())')
	[ "$last" -lt "$now" ]
}

@test "one thread, python3.11: every call's events, ids, names, times and tid" {
	use_python debian
	api_events
}

@test "one thread, python3.12: every call's events, ids, names, times and tid" {
	use_python 3.12
	api_events
}

@test "one thread, python3.13: every call's events, ids, names, times and tid" {
	use_python 3.13
	api_events
}

# ---- threads ----

threads_segments() {
	recorded threads.py 4 1000
	local f name tid
	f=$(only_file)
	rgn_read "$f" >read.txt
	rgn_read --summary "$f" >summary.txt
	# a segment per thread (the main thread records nothing: it has none), its tid and name
	[ "$(grep -c '^segment ' read.txt)" = 4 ]
	[ "$(grep -c '^thread ' out.txt)" = 4 ]
	while read -r _ name tid; do
		grep -q "^segment .* tid=$tid seq=0 used=$((4000 * 16)) dropped=0 comm=\"$name\"$" read.txt
		grep -qx "thread $tid events 4000 segments 1 dropped 0" summary.txt
		# the region of worker K only on worker K's thread
		[ "$(grep "name=\"work-${name#worker-}\"$" read.txt | value tid event | sort -u)" = "$tid" ]
	done <out.txt
	for k in 0 1 2 3; do
		[ "$(count begin "" "work-$k" "$f")" = 1000 ]
		[ "$(count end "" "work-$k" "$f")" = 1000 ]
	done
	[ "$(count begin "" step "$f")" = 4000 ]
	grep -qx "balanced yes" summary.txt
}

@test "threads, python3.11: 4 threads, each its own segment, tid and name" {
	use_python debian
	threads_segments
}

@test "threads, python3.12: 4 threads, each its own segment, tid and name" {
	use_python 3.12
	threads_segments
}

@test "threads, python3.13: 4 threads, each its own segment, tid and name" {
	use_python 3.13
	threads_segments
}

# ---- processes ----

fork_files() {
	recorded forks.py
	local parent child grandchild
	parent=$(out parent)
	child=$(out child)
	grandchild=$(out grandchild)
	diff <(printf '%s\n' "$parent-py-0.rgn" "$child-py-0.rgn" "$grandchild-py-0.rgn" | sort) <(ls rgn)
	for p in "$parent" "$child" "$grandchild"; do
		rgn_read "rgn/$p-py-0.rgn" >read.txt
		[ "$(value pid header <read.txt)" = "$p" ]
		[ "$(value tid segment <read.txt)" = "$p" ]
	done
	diff <(printf '%s\n' "begin /parent-before" "end /parent-before" "begin /around" "end /around" \
		"begin /parent-after" "end /parent-after") <(events "rgn/$parent-py-0.rgn")
	# the child holds only its own events ("around" was opened in the parent's file)
	diff <(printf '%s\n' "begin /child" "end /child" "begin /child" "end /child" "begin /child" \
		"end /child") <(events "rgn/$child-py-0.rgn")
	[ "$(events "rgn/$grandchild-py-0.rgn")" = "mark /grandchild" ]
	# names keep the ids they had before the fork
	rgn_read "rgn/$grandchild-py-0.rgn" | grep '^name ' >names.txt
	cat >expected.txt <<-'EOF'
	name id=1 domain="" name="parent-before"
	name id=2 domain="" name="around"
	name id=3 domain="" name="child"
	name id=4 domain="" name="grandchild"
	EOF
	diff expected.txt names.txt
}

@test "os.fork, python3.11: the child and the grandchild write files of their own" {
	use_python debian
	fork_files
}

@test "os.fork, python3.12: the child and the grandchild write files of their own" {
	use_python 3.12
	fork_files
}

@test "os.fork, python3.13: the child and the grandchild write files of their own" {
	use_python 3.13
	fork_files
}

# procs_files METHOD: multiprocessing workers of that start method each write their own file
procs_files() {
	recorded procs.py "$1" 3
	local parent w
	parent=$(out parent)
	[ "$(out worker | wc -l)" = 3 ]
	diff <( (echo "$parent"; out worker) | sed 's/$/-py-0.rgn/' | sort) <(ls rgn)
	[ "$(count begin "" parent "rgn/$parent-py-0.rgn")" = 1 ]
	[ "$(count end "" parent "rgn/$parent-py-0.rgn")" = 1 ]
	for w in $(out worker); do
		rgn_read --summary "rgn/$w-py-0.rgn" >summary.txt
		[ "$(value pid header <summary.txt)" = "$w" ]
		grep -qx "count begin domain=\"\" name=\"task\" 7" summary.txt
		grep -qx "count end domain=\"\" name=\"task\" 7" summary.txt
		grep -qx "balanced yes" summary.txt
		grep '^count mark ' summary.txt >>marks.txt
	done
	# each worker's own mark, once
	diff <(printf 'count mark domain="" name="task-of-%d" 1\n' 0 1 2) <(sort marks.txt)
}

@test "multiprocessing fork, python3.11: each worker its own file" {
	use_python debian
	procs_files fork
}

@test "multiprocessing spawn, python3.11: each worker its own file" {
	use_python debian
	procs_files spawn
}

@test "multiprocessing forkserver, python3.11: each worker its own file" {
	use_python debian
	procs_files forkserver
}

@test "multiprocessing fork and spawn, python3.12: each worker its own file" {
	use_python 3.12
	procs_files fork
	rm -f rgn/* marks.txt
	procs_files spawn
}

@test "multiprocessing fork and spawn, python3.13: each worker its own file" {
	use_python 3.13
	procs_files fork
	rm -f rgn/* marks.txt
	procs_files spawn
}

@test "exec: the same pid, a second file (N = 1) for the new image" {
	use_python debian
	recorded execself.py
	local pid
	pid=$(out pid | sort -u)
	[ "$(out pid | wc -l)" = 2 ]
	[ "$(echo "$pid" | wc -l)" = 1 ]
	diff <(printf '%s\n' "$pid-py-0.rgn" "$pid-py-1.rgn") <(ls rgn)
	[ "$(events "rgn/$pid-py-0.rgn")" = "mark /before-exec" ]
	[ "$(events "rgn/$pid-py-1.rgn")" = "mark /after-exec" ]
}

# ---- no room ----

@test "a full segment: the thread goes on in its next one, seq 1" {
	use_python debian
	recorded fill.py 40000
	local f main late
	f=$(only_file)
	main=$(out main)
	late=$(out late)
	rgn_read "$f" >read.txt
	grep '^segment ' read.txt | sed 's/^segment at=[0-9]* //' >segments.txt
	cat >expected.txt <<-EOF
	tid=$main seq=0 used=$((65532 * 16)) dropped=0 comm="MainThread"
	tid=$main seq=1 used=$(((80000 - 65532) * 16)) dropped=0 comm="MainThread"
	tid=$late seq=0 used=$((5 * 16)) dropped=0 comm="late"
	EOF
	diff expected.txt segments.txt
	[ "$(value dropped header <read.txt)" = 0 ]
	[ "$(count begin "" fill "$f")" = 40000 ]
	[ "$(count end "" fill "$f")" = 40000 ]
}

@test "a million tiny regions at the default sizes: every one read back, none dropped" {
	use_python debian
	local f
	PROFTOOL_REGIONS=$PWD/rgn "$PY" -c 'import proftool
assert proftool.enabled()
for _ in range(1000000):
    with proftool.region("tiny"):
        pass'
	f=$(only_file)
	rgn_read --summary "$f" >summary.txt
	[ "$(value size header <summary.txt)" = $((256 * MIB)) ]
	[ "$(value dropped header <summary.txt)" = 0 ]
	# 31 segments of 65532 events; the strict reader checks each segment's records and order
	grep -qx "thread [0-9]* events 2000000 segments 31 dropped 0" summary.txt
	grep -qx 'count begin domain="" name="tiny" 1000000' summary.txt
	grep -qx 'count end domain="" name="tiny" 1000000' summary.txt
	[ "$(grep -c '^count ' summary.txt)" = 2 ]
	grep -qx "balanced yes" summary.txt
}

@test "a full file: events dropped and counted, on the thread's last segment or, for a thread with none, in the header" {
	use_python debian
	# 4 MiB: the header, the names and two segments (2 x 65532 events)
	PROFTOOL_REGIONS_MB=4 recorded fill.py 70000
	local f main
	f=$(only_file)
	main=$(out main)
	rgn_read "$f" >read.txt
	grep '^segment ' read.txt | sed 's/^segment at=[0-9]* //' >segments.txt
	cat >expected.txt <<-EOF
	tid=$main seq=0 used=$((65532 * 16)) dropped=0 comm="MainThread"
	tid=$main seq=1 used=$((65532 * 16)) dropped=$((140000 - 2 * 65532)) comm="MainThread"
	EOF
	diff expected.txt segments.txt
	# the late thread found no segment: its 5 marks are the header's
	[ "$(value dropped header <read.txt)" = 5 ]
	[ "$(value size header <read.txt)" = $((4 * MIB)) ]
	[ "$(value next header <read.txt)" = $((4096 + 3 * MIB)) ]
	grep -qx 'name id=2 domain="" name="late"' read.txt
	[ "$(count mark "" late "$f")" = 0 ]
}

@test "a full names area: the events of the names that find no room are dropped and counted" {
	use_python debian
	recorded names.py
	local f
	f=$(only_file)
	rgn_read "$f" >read.txt
	# 15 names of 65535 bytes (65544 a entry), then "short"
	[ "$(value next_id header <read.txt)" = 16 ]
	[ "$(value names_used header <read.txt)" = $((15 * 65544 + 16)) ]
	[ "$(value dropped header <read.txt)" = 4 ]
	[ "$(rgn_py "$f" '[len(n) for d, n in f.names.values()]')" = "[$(printf '65535, %.0s' $(seq 15))5]" ]
	[ "$(rgn_py "$f" 'f.names[15][1] == "o" * 65535')" = True ]
	[ "$(events "$f" | tail -2 | tr '\n' ' ')" = "begin /short end /short " ]
	[ "$(events "$f" | wc -l)" = 32 ]
}

@test "PROFTOOL_REGIONS_MB sizes the file; garbage is the default 256; too small for a segment drops all" {
	use_python debian
	local mb size
	for mb in 3:3 x:256 -1:256 0:256 " 5":5; do
		rm -f rgn/*
		PROFTOOL_REGIONS_MB=${mb%%:*} recorded api.py
		size=$(rgn_read "$(only_file)" | value size header)
		[ "$size" = $((${mb#*:} * MIB)) ] || { echo "PROFTOOL_REGIONS_MB='${mb%%:*}': size $size" >&2; false; }
	done
	# 1 MiB holds the header and most of the names area, but no segment
	rm -f rgn/*
	PROFTOOL_REGIONS_MB=1 recorded api.py
	rgn_read "$(only_file)" >read.txt
	[ "$(value dropped header <read.txt)" = 29 ]
	[ "$(value next_id header <read.txt)" = 12 ]
	run ! grep -q '^segment ' read.txt
}

@test "a full disk: events dropped and counted, and no SIGBUS" {
	use_python debian
	[ "$(id -u)" = 0 ] || skip "needs root to mount a small tmpfs"
	mkdir fs
	mount -t tmpfs -o size=256k proftool-regions fs 2>/dev/null || skip "mounting a tmpfs is not permitted here"
	tmpfs=$PWD/fs
	# 40005 events: 640 KiB of records in a 256 MiB file on 256 KiB of disk
	PROFTOOL_REGIONS=$PWD/fs "$PY" "$PYREGIONS/fill.py" 20000 >out.txt 2>err.txt
	[ ! -s err.txt ]
	local f=(fs/*.rgn)
	[ "${#f[@]}" = 1 ]
	rgn_read "${f[0]}" >read.txt
	[ "$(value size header <read.txt)" = $((256 * MIB)) ]
	# what is in the file, and what was dropped, add up
	local events dropped
	events=$(grep -c '^event ' read.txt)
	dropped=$(( $(value dropped segment <read.txt | paste -sd+) + $(value dropped header <read.txt) ))
	[ "$events" -gt 0 ]
	[ "$dropped" -gt 0 ]
	[ $((events + dropped)) = 40005 ] || { echo "$events events, $dropped dropped" >&2; false; }
}

# ---- death and failure ----

@test "SIGKILL inside a region: what was recorded, the open region's begin included, is in the file" {
	use_python debian
	PROFTOOL_REGIONS=$PWD/rgn "$PY" "$PYREGIONS/doomed.py" >out.txt 2>err.txt &
	target=$!
	for _ in $(seq 400); do
		grep -qx ready out.txt && break
		sleep 0.05
	done
	grep -qx ready out.txt
	kill -KILL "$target"
	wait "$target" || true
	target=
	local f
	f=$(only_file)
	diff <(printf '%s\n' "begin /before" "end /before" "begin /doomed") <(events "$f")
	rgn_read --summary "$f" | grep -qx "balanced no"
}

@test "a directory that cannot be written: the program runs on, with one warning at its own line" {
	use_python debian
	touch file
	local line
	PROFTOOL_REGIONS=$PWD/file/sub "$PY" "$PYREGIONS/api.py" >out.txt 2>err.txt
	grep -qx ok out.txt
	[ "$(out enabled)" = False ]
	[ "$(grep -c 'RuntimeWarning' err.txt)" = 1 ]
	# at the program's line that recorded first: api.py's region "outer"
	line=$(grep -n 'with proftool.region("outer") as r:' "$PYREGIONS/api.py" | cut -d: -f1)
	grep -qx "$PYREGIONS/api.py:$line: RuntimeWarning: proftool: cannot record regions in '$PWD/file/sub': Not a directory; process [0-9]* runs on without them" err.txt
	# threads, and processes forked from it: still one warning
	PROFTOOL_REGIONS=$PWD/file/sub "$PY" "$PYREGIONS/threads.py" 4 10 >out.txt 2>err.txt
	[ "$(grep -c 'RuntimeWarning: proftool: ' err.txt)" = 1 ]
	PROFTOOL_REGIONS=$PWD/file/sub "$PY" "$PYREGIONS/forks.py" >out.txt 2>err.txt
	[ "$(grep -c 'RuntimeWarning: proftool: ' err.txt)" = 1 ]
	# a missing directory, with warnings made errors: not a word, and still no harm
	PROFTOOL_REGIONS=$PWD/missing "$PY" -W error "$PYREGIONS/api.py" >out.txt 2>err.txt
	grep -qx ok out.txt
	[ ! -s err.txt ]
	[ ! -e missing ]
}

# ---- the reader ----

@test "rgn_read refuses files that break the format" {
	use_python debian
	recorded api.py
	local f seg=$((4096 + MIB))
	f=$(only_file)
	# corrupt OFFSET BYTES WHAT: a copy of f with BYTES (a Python bytes literal) at OFFSET
	# must be refused with an error naming WHAT
	corrupt() {
		mkdir -p bad
		cp "$f" bad/
		python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); f.write(eval(sys.argv[3]))' "bad/${f##*/}" "$1" "$2"
		run --separate-stderr python3 "$RGN_READ" "bad/${f##*/}"
		[ "$status" -eq 1 ] || { echo "accepted: $1 $2" >&2; return 1; }
		[[ "$stderr" == "rgn_read: bad/${f##*/}: "*"$3"* ]] || { echo "stderr: $stderr" >&2; return 1; }
	}
	corrupt 0 'b"PTREGIOX"' "magic"
	corrupt $((seg + 64 + 12)) 'b"\x09"' "kind 9"
	corrupt $((seg + 64 + 8)) 'b"\x63"' "id 99"
	corrupt $((seg + 16)) 'b"\x08" + b"\0" * 7' "used 8"
	corrupt $((seg + 64 + 29 * 16)) 'b"\x01"' "after used"
	corrupt $((4096 + 4)) 'b"\xff"' "name"
	corrupt $((seg + 64 + 16)) 'b"\0" * 8' "time 0 before"
	# and a file cut short
	head -c $((128 * MIB)) "$f" >"bad/${f##*/}"
	run --separate-stderr python3 "$RGN_READ" "bad/${f##*/}"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"size $((256 * MIB)) in the header, $((128 * MIB)) on disk"* ]]
}

# ---- adapters ----

# adapter CASE [with-standins|real]: runs adapters.py CASE, recording, with the stand-ins
# on PYTHONPATH (default) or the frameworks installed; its events into events.txt
adapter() {
	use_python debian
	if [ "${2:-with-standins}" = with-standins ]; then
		PYTHONPATH=$PYTHON_TREE:$STANDINS recorded adapters.py "$1"
	else
		recorded adapters.py "$1"
	fi
	grep -qx ok out.txt
	events "$(only_file)" >events.txt
	rgn_read --summary "$(only_file)" | grep -qx "balanced yes"
}

lightning_events() {
	diff - events.txt <<-'EOF'
	begin lightning/run_training_epoch
	begin lightning/training_step
	end lightning/training_step
	begin lightning/optimizer_step
	end lightning/optimizer_step
	end lightning/run_training_epoch
	begin trainer/fit
	end trainer/fit
	EOF
}

@test "adapters: proftool.lightning.Profiler on a stand-in for lightning.pytorch.profilers" {
	adapter lightning
	lightning_events
}

@test "adapters: proftool.lightning.Profiler on a stand-in for pytorch_lightning.profilers" {
	adapter lightning-pl
	lightning_events
}

@test "adapters: proftool.lightning without Lightning is an ImportError that says so" {
	use_python debian
	recorded adapters.py lightning-missing
	grep -qx "proftool.lightning needs Lightning: neither lightning.pytorch.profilers nor pytorch_lightning.profilers can be imported (pip install lightning)" out.txt
	[ -z "$(ls rgn)" ]
}

mlagents_events() {
	diff - events.txt <<-'EOF'
	begin mlagents/env_step
	begin mlagents/policy
	end mlagents/policy
	end mlagents/env_step
	begin mlagents/mlagents.<locals>.update
	end mlagents/mlagents.<locals>.update
	begin rl/outer
	begin rl/inner
	end rl/inner
	end rl/outer
	EOF
}

@test "adapters: proftool.mlagents on a stand-in for mlagents_envs.timers" {
	adapter mlagents
	mlagents_events
}

sample_factory_events() {
	diff - events.txt <<-'EOF'
	begin sample_factory/rollout
	begin sample_factory/env_step
	end sample_factory/env_step
	begin sample_factory/env_step
	end sample_factory/env_step
	begin sample_factory/inference
	end sample_factory/inference
	end sample_factory/rollout
	begin sample_factory/fails
	end sample_factory/fails
	EOF
}

@test "adapters: proftool.sample_factory on a stand-in for sample_factory.utils.timing" {
	adapter sample_factory
	sample_factory_events
}

@test "adapters: proftool.torch_ops on a stand-in for record_function" {
	adapter torch-standin
	diff - events.txt <<-'EOF'
	begin PyTorch/forward
	begin PyTorch/linear
	end PyTorch/linear
	end PyTorch/forward
	begin PyTorch/fails
	end PyTorch/fails
	begin ops/custom
	end ops/custom
	EOF
}

@test "adapters: not recording, install() patches nothing and the Lightning profiler does nothing" {
	use_python debian
	PYTHONPATH=$PYTHON_TREE:$STANDINS "$PY" "$PYREGIONS/adapters.py" disabled >out.txt
	grep -qx ok out.txt
	[ -z "$(ls rgn)" ]
}

# need_module MODULE WHAT: skips unless Debian's python3 can import MODULE (extra coverage)
need_module() {
	"$PYTHON3" -c "import $1" 2>/dev/null || skip "$1 is not installed ($2; extra coverage)"
}

@test "adapters: proftool.torch_ops on PyTorch's record_function" {
	need_module torch "Debian package python3-torch"
	adapter torch-real real
	local loader='PyTorch/enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__'
	diff - events.txt <<-EOF
	begin PyTorch/my-scope
	end PyTorch/my-scope
	begin PyTorch/decorated
	end PyTorch/decorated
	begin PyTorch/Optimizer.step#SGD.step
	end PyTorch/Optimizer.step#SGD.step
	begin $loader
	end $loader
	begin $loader
	end $loader
	begin $loader
	end $loader
	begin $loader
	end $loader
	EOF
}

@test "adapters: PyTorch's DataLoader workers (forked) write files of their own" {
	need_module torch "Debian package python3-torch"
	use_python debian
	recorded adapters.py torch-dataloader
	local parent w
	parent=$(out parent)
	[ "$(out worker | wc -l)" = 2 ]
	diff <( (echo "$parent"; out worker) | sed 's/$/-py-0.rgn/' | sort) <(ls rgn)
	for w in $(out worker); do
		[ "$(count begin "" getitem "rgn/$w-py-0.rgn")" = 4 ]
		[ "$(count end "" getitem "rgn/$w-py-0.rgn")" = 4 ]
	done
	[ "$(count begin PyTorch "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__" \
		"rgn/$parent-py-0.rgn")" = 5 ]
	[ "$(count begin "" getitem "rgn/$parent-py-0.rgn")" = 0 ]
}

@test "adapters: proftool.lightning.Profiler on Lightning" {
	need_module lightning.pytorch.profilers "pip install lightning"
	adapter lightning real
	lightning_events
}

@test "adapters: proftool.mlagents on ML-Agents" {
	need_module mlagents_envs.timers "pip install mlagents-envs"
	adapter mlagents real
	mlagents_events
}

@test "adapters: proftool.sample_factory on Sample Factory" {
	need_module sample_factory.utils.timing "pip install sample-factory"
	adapter sample_factory real
	sample_factory_events
}

# ---- the cost ----

@test "bench/regions_py.py measures both ways (make bench reads the figures; not checked here)" {
	use_python debian
	run "$PY" "$BATS_TEST_DIRNAME/../bench/regions_py.py" --pairs 2000 --runs 1
	[ "$status" -eq 0 ]
	[[ "$output" == *"not recording  with "* ]]
	[[ "$output" == *"recording      enabled          True"* ]]
	[[ "$output" == *"not recording  enabled          False"* ]]
}
