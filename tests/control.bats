#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Long runs under control: --delay, --paused, pause/resume/snapshot/stop through --control
# and proftool control, SIGUSR1/SIGUSR2, the program's own pause, --snapshot-every, --keep.
#
# The workload tests/workloads/phases.c burns f_a, f_b, f_c, f_d in turn, each for a time or
# until a file exists, and creates in_X as it enters phase X: the tests move it along with
# files and wait for its markers and for proftool's own messages, never for time alone.

load helpers

PH=$WORKLOADS/phases
PYTHON_TREE=$(cd "$BATS_TEST_DIRNAME/../python" && pwd)

teardown() {
	# the recorder's command first: once the recorder is gone it would run on, and hold the
	# output bats waits on (a test that failed while phases waited for a file hung the suite)
	[ -n "${rec:-}" ] && pkill -KILL -P "$rec" 2>/dev/null
	[ -n "${rec:-}" ] && kill -KILL "$rec" 2>/dev/null
	[ -n "${target:-}" ] && kill -KILL "$target" 2>/dev/null
	pkill -KILL -f "$PH" -P $$ 2>/dev/null
	return 0
}

# samples FILE...: the number of samples in the (merged) profiles
samples() {
	"$PROFTOOL" report "$@" | awk '/ samples? over / { print $1; exit }'
}

# self FUNC FILE...: samples with FUNC on top, in the folded report of FILE...
self() {
	local f=$1
	shift
	"$PROFTOOL" report --format folded "$@" | awk -v f="$f" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, fr, ";"); if (fr[k] == f) s += n } END { print s + 0 }'
}

# pause_resume BACKEND: pause during phase b, c runs wholly paused, resume in d
pause_resume() {
	"$PROFTOOL" record --backend "$1" -o c.data --control fifo:ctl -- "$PH" a:go_b b:go_c c:go_d d:go_e 2>err.txt &
	rec=$!
	wait_file in_a
	burn_ticks "$(pgrep -n -f "$PH")" 20
	touch go_b
	wait_file in_b
	burn_ticks "$(pgrep -n -f "$PH")" 20
	run "$PROFTOOL" control ctl pause
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	touch go_c
	wait_file in_c
	burn_ticks "$(pgrep -n -f "$PH")" 30
	touch go_d
	wait_file in_d
	run "$PROFTOOL" control ctl resume
	[ "$status" -eq 0 ]
	burn_ticks "$(pgrep -n -f "$PH")" 20
	touch go_e
	wait "$rec"
	rec=
	grep -q 'paused at' err.txt
	grep -q 'resumed at' err.txt
	# nothing of phase c, which ran while paused; the others are there
	[ "$(self f_c c.data)" -eq 0 ]
	[ "$(self f_a c.data)" -gt 0 ]
	[ "$(self f_b c.data)" -gt 0 ]
	[ "$(self f_d c.data)" -gt 0 ]
	run "$PROFTOOL" report c.data
	[[ $output == *"Paused 1 time, "* ]]
	# the FIFO proftool made is gone with it
	[ ! -e ctl ]
}

@test "control: pause and resume through the FIFO leave out what ran paused (perf)" {
	pause_resume perf
}

@test "control: pause and resume through the FIFO leave out what ran paused (ptrace)" {
	pause_resume ptrace
}

# delayed BACKEND: --delay past phase a keeps only phase b (its last second of wall time:
# how many samples that is depends on how busy the machine is, so no count is expected)
delayed() {
	record_to d.data --backend "$1" --delay 3 -- "$PH" a:1 b:3
	[ "$(self f_a d.data)" -eq 0 ]
	b=$(self f_b d.data)
	[ "$b" -gt 0 ]
	at_least "$b" $((9 * $(samples d.data) / 10))
	run "$PROFTOOL" report d.data
	[[ $output == *"Paused 1 time, 3."* ]]
}

@test "control: --delay past the first phase records the second only (perf)" {
	delayed perf
}

@test "control: --delay past the first phase records the second only (ptrace)" {
	delayed ptrace
}

@test "control: --duration counts from the end of --delay" {
	record_to dd.data --delay 1 --duration 1 -- "$PH" a:5
	run "$PROFTOOL" report dd.data
	# one paused second, then one sampled: the profile ends at about 2 s while a runs on,
	# and holds what the CPU time a had in that second is worth at -F 999 (how much CPU that
	# is depends on how busy the machine is)
	[[ $output == *"Paused 1 time, 1."* ]]
	near "$(pjson dd.data 'p["meta"]["duration_ns"] / 1e9')" 2 0.5
	n=$(samples dd.data)
	[ "$n" -gt 0 ]
	at_least "$n" "$(pjson dd.data 'int(0.9 * p["meta"]["cpu_time_ns"] * 999 / 1e9)')"
	pkill -KILL -f "$PH a:5" || true
}

@test "control: --paused waits for SIGUSR2; SIGUSR1 writes a snapshot" {
	"$PROFTOOL" record --paused -o p.data -- "$PH" a:go_b b:go_c c:0.3 2>err.txt &
	rec=$!
	wait_file in_a
	burn_ticks "$(pgrep -n -f "$PH")" 20
	touch go_b
	wait_file in_b
	kill -USR2 "$rec"
	wait_text err.txt "resumed at"
	burn_ticks "$(pgrep -n -f "$PH")" 20
	kill -USR1 "$rec"
	wait_text err.txt "wrote p.data.1"
	touch go_c
	wait "$rec"
	rec=
	# a ran before the resume: in neither file
	[ "$(self f_a p.data.1 p.data)" -eq 0 ]
	[ "$(self f_b p.data.1)" -gt 0 ]
	[ "$(self f_c p.data.1)" -eq 0 ]
	[ "$(self f_c p.data)" -gt 0 ]
	run "$PROFTOOL" report p.data.1
	[[ $output == *"Snapshot 1 of a recording"* && $output == *"Paused 1 time"* ]]
}

@test "control: --snapshot-every 1 writes whole profiles whose union is the recording" {
	# a until the first part is written, b until the third is: the phases follow the parts,
	# however long a loaded machine takes to write them (1.2 s for the first, niced under
	# three busy processes, so that the second covered 2 s and a 4 s run made 3 parts)
	"$PROFTOOL" record -q -o s.data --snapshot-every 1 -- "$PH" a:go_b b:go_c &
	rec=$!
	wait_file s.data.1
	touch go_b
	wait_file s.data.3
	touch go_c
	wait "$rec"
	rec=
	n=$(ls s.data.* | wc -l)
	[ "$n" -ge 3 ]
	total=0
	for f in s.data s.data.*; do
		c=$(samples "$f")
		total=$((total + c))
	done
	# every file is a valid profile of its own, and merged they are the whole recording,
	# one process and one thread, not one per file; no sample was dropped between the files:
	# they hold what the CPU time the target had is worth at -F 999 (4 s of wall time on a
	# busy machine are much less)
	[ "$(samples s.data s.data.*)" -eq "$total" ]
	cpu=0
	for f in s.data s.data.*; do
		cpu=$((cpu + $(pjson "$f" 'p["meta"]["cpu_time_ns"]')))
	done
	at_least "$total" $((cpu * 999 / 1000000000 * 9 / 10))
	[ "$total" -gt 0 ]
	run "$PROFTOOL" report s.data.* s.data
	[[ $output == *"from 1 process and 1 thread"* ]]
	# the shares follow the phases: the first part is a's, the third b's (b began as soon as
	# the first was there, before the second was cut)
	a1=$(self f_a s.data.1) b1=$(self f_b s.data.1)
	a3=$(self f_a s.data.3) b3=$(self f_b s.data.3)
	[ "$a1" -gt 0 ]
	[ "$b3" -gt 0 ]
	at_least "$a1" $((9 * (a1 + b1) / 10))
	at_least "$b3" $((9 * (a3 + b3) / 10))
	# the merged time line is the recording's: it runs to 3 s (past 2.5), where each part
	# alone spans a second (its events' ends: an event starts where the stack last changed,
	# which may be long before, when a sample in done()'s system call is all that changes it)
	"$PROFTOOL" report --format chrome -o merged.json s.data.3 s.data.1 s.data.2 s.data
	python3 - merged.json <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
end = [e["ts"] + e.get("dur", 0) for e in ev if e.get("ph") in ("X", "B", "P", "i", "I") and "ts" in e]
assert end and max(end) > 2.5e6, max(end or [0])
EOF
}

@test "control: --snapshot-every SIZE cuts by sample data; --keep removes the oldest" {
	# a runs until the third part is written, however long the samples for it take to come
	"$PROFTOOL" record -q -o z.data --snapshot-every 256K --keep 2 -- "$PH" a:go_end &
	rec=$!
	wait_file z.data.3
	touch go_end
	wait "$rec"
	rec=
	ls z.data.* >list.txt
	[ "$(wc -l <list.txt)" -eq 2 ]
	# the two newest are kept: the highest numbers, and more than 2 were written
	last=$(sed 's/.*\.//' list.txt | sort -n | tail -1)
	[ "$last" -gt 2 ]
	[ -e "z.data.$last" ]
	[ -e "z.data.$((last - 1))" ]
	[ ! -e z.data.1 ]
	for f in $(cat list.txt); do
		at_least "$(samples "$f")" 1
	done
}

@test "control: SIGKILL of the recorder leaves every finished snapshot readable" {
	"$PROFTOOL" record -q -o k.data --snapshot-every 0.5 -- "$PH" a:60 &
	rec=$!
	wait_file k.data.3
	kill -KILL "$rec"
	wait "$rec" || true
	rec=
	pkill -KILL -f "$PH a:60" || true
	for f in k.data.*; do
		[ "$(self f_a "$f")" -gt 0 ]
	done
	run "$PROFTOOL" report k.data.*
	[ "$status" -eq 0 ]
	[ ! -e k.data ]
}

@test "control: stop ends the recording; attach under control leaves the target running" {
	"$PH" a:go_b b:60 >/dev/null 2>&1 &
	target=$!
	disown "$target"
	"$PROFTOOL" attach -o at.data --control fifo:actl "$target" 2>err.txt &
	rec=$!
	wait_attached "$rec" "$target"
	burn_ticks "$target" 20
	run "$PROFTOOL" control actl snapshot
	[ "$status" -eq 0 ]
	[ "$output" = at.data.1 ]
	touch go_b
	wait_file in_b
	burn_ticks "$target" 20
	run "$PROFTOOL" control actl stop
	[ "$status" -eq 0 ]
	wait "$rec"
	rec=
	[ "$(self f_a at.data.1)" -gt 0 ]
	[ "$(self f_b at.data)" -gt 0 ]
	[[ "$(state "$target")" == [RS] ]]
	burn_ticks "$target" 5
}

@test "control: the program's proftool_pause() pauses the sampler while it lasts" {
	"$PROFTOOL" record -o prog.data -- "$WORKLOADS/regions" pause 10 2>err.txt
	grep -q 'the program paused the recording' err.txt
	grep -q 'the program resumed the recording' err.txt
	run "$PROFTOOL" report --format folded prog.data
	[[ $output == *before_spin* && $output == *after_spin* && $output != *paused_spin* ]]
	run "$PROFTOOL" report prog.data
	[[ $output == *"Paused 1 time, 1."* ]]
}

@test "control: Python's proftool.pause() lands on the same switch" {
	cat >pp.py <<'EOF'
import time, proftool
def spin(name, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        pass
spin("before", 0.3)
proftool.pause()
spin("paused", 1.0)
proftool.resume()
spin("after", 0.3)
EOF
	PYTHONPATH=$PYTHON_TREE "$PROFTOOL" record -o pp.data -- "$PYTHON3" pp.py 2>err.txt
	grep -q 'the program paused the recording' err.txt
	grep -q 'the program resumed the recording' err.txt
	run "$PROFTOOL" report pp.data
	[[ $output == *"Paused 1 time, 1."* ]]
}

@test "control: errors are one line and say what to do" {
	run -2 "$PROFTOOL" control
	[[ $output == "proftool: "* ]]
	run -2 "$PROFTOOL" control x frobnicate
	[[ $output == *"unknown command 'frobnicate'"* ]]
	run -1 "$PROFTOOL" control nowhere pause
	[[ $output == "proftool: no control FIFO at 'nowhere'"*"--control fifo:nowhere"* ]]
	touch plain
	run -1 "$PROFTOOL" control plain pause
	[[ $output == *"is not a FIFO"* ]]
	mkfifo dead
	run -1 "$PROFTOOL" control dead pause
	[[ $output == "proftool: no recording reads 'dead': it has ended"* ]]
	[ "${#lines[@]}" -eq 1 ]
	run -2 "$PROFTOOL" record --control ctl -- true
	[[ $output == *"fifo:PATH"* ]]
	run -2 "$PROFTOOL" record --snapshot-every 0 -- true
	run -2 "$PROFTOOL" record --snapshot-every 10X -- true
	run -2 "$PROFTOOL" record --delay soon -- true
	run -2 "$PROFTOOL" record --delay 1 --paused -- true
	run -2 "$PROFTOOL" attach --keep 0 1
	run -1 "$PROFTOOL" record --control fifo:plain -- true
	[[ $output == *"'plain' is not a FIFO"* ]]
}

@test "control: an unknown word on the FIFO is answered with an error, the recording goes on" {
	"$PROFTOOL" record -o u.data --control fifo:uctl -- "$PH" a:go_b b:0.2 2>err.txt &
	rec=$!
	wait_file in_a
	echo frobnicate >uctl
	wait_text err.txt "unknown command 'frobnicate'"
	touch go_b
	wait "$rec"
	rec=
	[ "$(self f_b u.data)" -gt 0 ]
}

@test "control: a pause cut by a snapshot is one pause again in the merged parts" {
	"$PROFTOOL" record --paused -o x.data -- "$PH" a:go_b b:0.3 2>err.txt &
	rec=$!
	wait_file in_a
	kill -USR1 "$rec"
	wait_text err.txt "wrote x.data.1"
	kill -USR2 "$rec"
	wait_text err.txt "resumed at"
	touch go_b
	wait "$rec"
	rec=
	run "$PROFTOOL" report x.data.1 x.data
	[[ $output == *"Paused 1 time, "* ]]
	[ "$(self f_b x.data.1 x.data)" -gt 0 ]
}
