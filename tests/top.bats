#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool top: the hottest functions of the last seconds, on a terminal (tmux is the
# terminal: it shows the screen and takes the keys) and as a log when stdout is not one.
# Workloads follow files, never the clock: 'phases a:go_b b:go_c' burns f_a until go_b
# exists, then f_b until go_c does, and says where it is with in_a, in_b.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	tm kill-server 2>/dev/null || true
	# what a test started and left running (a command top left behind on q)
	local here
	here=$(pwd -P)
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" != "$$" ] || continue
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$here" ] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	return 0
}

# ---- waiting on files and processes ----

# wait_gone PID: waits (up to 60 s) until PID has exited (and been reaped, or is a zombie)
wait_gone() {
	for _ in $(seq 1200); do
		[[ "$(state "$1" 2>/dev/null || echo X)" == [ZX] ]] && return 0
		sleep 0.05
	done
	echo "process $1 still runs after 60 s" >&2
	return 1
}

# log_leads LOG FUNC: whether the last table of LOG has FUNC in its first row
log_leads() {
	awk '/^ +nsamples +tottime/ { getline; row = $0 } END { print row }' "$1" | grep -qE "\($2\)\$"
}

# wait_log LOG FUNC: waits (up to 60 s) until the last table of LOG leads with FUNC
wait_log() {
	for _ in $(seq 600); do
		log_leads "$1" "$2" && return 0
		sleep 0.1
	done
	echo "$1 never led with $2:" >&2
	tail -30 "$1" >&2
	return 1
}

# wait_tables LOG N: waits (up to 60 s) until LOG has N tables
wait_tables() {
	for _ in $(seq 600); do
		[ "$(grep -c '^proftool top at' "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "$1 has fewer than $2 tables after 60 s" >&2
	return 1
}

# ---- the terminal ----

# tm ARGS...: tmux, on a server of this test's own, without the user's configuration
tm() {
	tmux -L "proftool-top-$$-$BATS_TEST_NUMBER" -f /dev/null "$@"
}

# on_screen COMMAND: runs the shell command line COMMAND, in this directory, in a terminal of
# 160x50 that bash keeps open after it; its exit status then goes to exit.txt and the
# terminal's modes to stty.txt.
on_screen() {
	need tmux tmux
	tm new-session -d -x 160 -y 50 -s top "bash --norc --noprofile"
	tm send-keys -t top "cd $(printf %q "$PWD") && $1; echo \$? >exit.tmp; stty -a >stty.txt; mv exit.tmp exit.txt" Enter
}

# keys KEY...: types the keys (tmux's names: Enter, Escape, C-c; -l TEXT for text)
keys() {
	tm send-keys -t top "$@"
}

# until_screen TEST [ARGS...]: reads the screen into screen.txt until TEST ARGS... holds on it (60 s)
until_screen() {
	for _ in $(seq 600); do
		# (-J keeps the spaces a line was overwritten with: they go)
		tm capture-pane -p -J -t top 2>/dev/null | sed 's/ *$//' >screen.txt
		"$@" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "the screen never passed '$*':" >&2
	cat screen.txt >&2
	return 1
}

# shows ERE: a line of the screen matches ERE
shows() {
	grep -qE -- "$1" screen.txt
}

# new_total: the count since the start is no longer $total
new_total() {
	if grep -qx -- "$total" <(grep -oE '^since the start: [0-9]+ samples' screen.txt); then
		return 1
	fi
}

# rows: the table's rows on the screen
rows() {
	awk '/^ +nsamples +tottime/ { t = 1; next } t && /^ *$/ { exit } t' screen.txt
}

# sorted_by_cumtime: the title says cumulative time and the rows' cumtime never grows down the table
sorted_by_cumtime() {
	shows 'by cumulative time$' && [ -n "$(rows)" ] &&
		rows | awk '{ if (NR > 1 && $4 > prev) exit 1; prev = $4 }'
}

# leads FUNC: the first row of the table is FUNC's
leads() {
	rows | head -1 | grep -qE "\($1\)\$"
}

# ended_clean: top has ended (exit.txt) and left the terminal as it found it: the alternate
# screen left, the cursor shown, the line discipline cooked and echoing
ended_clean() {
	wait_file exit.txt
	[ "$(tm display -p -t top '#{alternate_on} #{cursor_flag}')" = "0 1" ] ||
		{ echo "alternate screen, cursor: $(tm display -p -t top '#{alternate_on} #{cursor_flag}')"; false; }
	grep -qE '(^| )icanon( |;|$)' stty.txt || { echo "not icanon: $(cat stty.txt)"; false; }
	grep -qE '(^| )echo( |;|$)' stty.txt || { echo "not echo: $(cat stty.txt)"; false; }
}

# ---- usage ----

@test "top: usage errors exit 2 with one line" {
	for args in "" "abc" "12 34" "-- " "--interval 0.05 1" "--interval x 1" "--window 0 1" \
		"--window 2 --cumulative 1" "--sort bogus 1" "--limit -1 1" "-o x.data 1" \
		"--snapshot-every 1 1" "--keep 2 1" "--bogus 1" "-F 0 1" "--backend perf --mode wall 1" \
		"--record"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$PROFTOOL" top $args
		[ "$status" -eq 2 ] || { echo "top $args: exit $status: $stderr"; false; }
		one_error_line
		[[ "$stderr" == *"see 'proftool top --help'"* ]]
		[ -z "$output" ]
	done
	run --separate-stderr "$PROFTOOL" top --record '' 1
	[ "$status" -eq 2 ]
	one_error_line
}

@test "top of a process that does not exist fails with one line" {
	run --separate-stderr "$PROFTOOL" top 4194303
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"no such process 4194303"* ]]
	[ -z "$output" ]
}

@test "top --help: the keys and the options, exit 0" {
	run --separate-stderr "$PROFTOOL" top --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: proftool top [OPTIONS] PID"* ]]
	for o in --interval --window --cumulative --record --sort --limit --per-thread -F -g -e --backend \
		--mode --python --duration -q; do
		grep -qE -- "^  $o( |$)" <<<"$output" || { echo "no $o"; false; }
	done
	for o in -o --snapshot-every --keep; do
		if grep -qE -- "^  $o( |$)" <<<"$output"; then echo "$o is in --help"; false; fi
	done
	[[ "$output" == *"q quit"* && "$output" == *"Esc clears"* ]]
}

# ---- not a terminal: a log ----

# whole_run_in FILE TOTAL: --record's FILE holds TOTAL samples (what the last table counted),
# the summary line says so, and both phases of the workload are in it
whole_run_in() {
	[ "$(pjson "$1" 'len(p["samples"]["thread"])')" -eq "$2" ]
	[[ "$(cat err.txt)" == "proftool: wrote $1: $2 samples, "* ]]
	run --separate-stderr "$PROFTOOL" report --format folded "$1"
	[ "$status" -eq 0 ]
	at_least "$(self_share f_a <<<"$output")" 10
	at_least "$(self_share f_b <<<"$output")" 10
}

# log_phases BACKEND: top -- phases with stdout to a file: f_a leads, then f_b; the log's
# tables agree with themselves, and --record has all the samples, both phases'
log_phases() {
	rm -f in_* go_* log.txt err.txt rec.data
	"$PROFTOOL" top --backend "$1" --interval 0.5 --window 1 --limit 0 --record rec.data -- \
		"$WORKLOADS/phases" a:go_b b:go_c >log.txt 2>err.txt &
	local top=$!
	wait_log log.txt f_a
	touch go_b
	wait_log log.txt f_b
	touch go_c
	wait "$top" && st=0 || st=$?
	[ "$st" -eq 0 ] || { echo "top exited $st: $(cat err.txt)"; false; }
	run python3 "$BATS_TEST_DIRNAME/tools/top_log.py" log.txt 999
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 3 ]
	# f_a first, f_b after it, and last (the closing table)
	[[ "$(grep -m1 -v ' -$' <<<"$output")" == *" f_a" ]]
	[[ "${lines[-1]}" == *" f_b" ]]
	grep -q "^proftool top at .* (ended)$" log.txt
	grep -q "; $1 backend; by self time$" log.txt
	# the whole run is in --record's file: as many samples as the last table counted
	total=$(awk '{ n = $3 } END { print n }' <<<"$output")
	whole_run_in rec.data "$total"
}

@test "not on a terminal: a timestamped table per interval, f_a then f_b on top; --record has the whole run (perf)" {
	log_phases perf
}

@test "not on a terminal: a timestamped table per interval, f_a then f_b on top; --record has the whole run (ptrace)" {
	log_phases ptrace
}

@test "samples moved to a file (a long run) are all in the tables and in --record's profile" {
	# every 100 samples, as a long run does every 65536
	PROFTOOL_SPILL_SAMPLES=100 "$PROFTOOL" top --interval 0.5 --limit 0 --record rec.data -- \
		"$WORKLOADS/phases" a:go_b b:go_c >log.txt 2>err.txt &
	local top=$!
	wait_log log.txt f_a
	wait_tables log.txt 3
	touch go_b
	wait_file in_b
	wait_tables log.txt 5
	touch go_c
	wait "$top"
	run python3 "$BATS_TEST_DIRNAME/tools/top_log.py" log.txt 999
	[ "$status" -eq 0 ]
	total=$(awk '{ n = $3 } END { print n }' <<<"$output")
	[ "$total" -gt 300 ]
	whole_run_in rec.data "$total"
}

@test "top -- COMMAND exits when the command does, with its status" {
	run --separate-stderr "$PROFTOOL" top -q -- "$WORKLOADS/exitcode" fail 0.2
	[ "$status" -eq 3 ]
	[ -z "$stderr" ]
	[[ "$output" == *"(burn)"* ]]
	run --separate-stderr "$PROFTOOL" top -q -- "$WORKLOADS/exitcode" segv 0.2
	[ "$status" -eq $((128 + 11)) ]
	run -127 --separate-stderr "$PROFTOOL" top -- /nonexistent/command
	[ "$status" -eq 127 ]
	one_error_line
}

@test "top PID --duration: ends, and the process runs on, untraced (perf, ptrace)" {
	"$WORKLOADS/phases" a:go_end >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	for backend in perf ptrace; do
		run --separate-stderr "$PROFTOOL" top --backend "$backend" --duration 1.5 --interval 0.5 "$target"
		[ "$status" -eq 0 ] || { echo "$backend: $status: $stderr"; false; }
		[[ "$output" == *"proftool top at "*": pid $target: $WORKLOADS/phases a:go_end"* ]]
		[[ "$output" == *"(f_a)"* ]]
		[[ "$stderr" == "proftool: top ran "*" samples, "* ]]
		[[ "$(state "$target")" == [RS] ]]
		[ "$(tracer "$target")" = 0 ]
	done
	touch go_end
	wait "$target"
}

@test "top PID ends when the reader of its log goes (| head), and leaves the process running" {
	"$WORKLOADS/phases" a:go_end >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	run --separate-stderr bash -c 'set -o pipefail; timeout 60 "$0" top --interval 0.2 "$1" | head -1' \
		"$PROFTOOL" "$target"
	[ "$status" -ne 124 ] || { echo "top went on after head had gone"; false; }
	[[ "$output" == "proftool top at "* ]]
	[[ "$stderr" != *"cannot write"* ]]
	[[ "$(state "$target")" == [RS] ]]
	touch go_end
	wait "$target"
}

@test "--cumulative: each table has everything since the start" {
	"$PROFTOOL" top --cumulative --interval 0.5 --limit 0 -- "$WORKLOADS/phases" a:go_b b:go_c >log.txt 2>err.txt &
	local top=$!
	wait_log log.txt f_a
	touch go_b
	wait_file in_b
	# the window keeps f_a however long f_b runs: three tables more
	wait_tables log.txt $(($(grep -c '^proftool top at' log.txt) + 3))
	touch go_c
	wait "$top"
	run python3 "$BATS_TEST_DIRNAME/tools/top_log.py" log.txt 999
	[ "$status" -eq 0 ]
	# in each table the window is everything: its samples are the total
	awk '$2 != $3 { exit 1 }' <<<"$output"
	grep -q "samples since the start, " log.txt
	tail -n +"$(grep -n '^proftool top at' log.txt | tail -1 | cut -d: -f1)" log.txt >last.txt
	grep -q '(f_a)$' last.txt
	grep -q '(f_b)$' last.txt
}

@test "Python functions in top's table" {
	need "$PYTHON3" python3
	run --separate-stderr "$PROFTOOL" top --interval 0.5 --limit 0 -- "$PYTHON3" \
		"$BATS_TEST_DIRNAME/workloads/py/split.py" 1
	[ "$status" -eq 0 ]
	[[ "$output" == *"/split.py:"*"(load_batch)"* ]]
	[[ "$output" == *"/split.py:"*"(Trainer.step)"* ]]
}

@test "DWARF stacks: a program built without frame pointers has main above its leaves" {
	run --separate-stderr "$PROFTOOL" top -g dwarf --sort cumtime --interval 0.5 --limit 0 -- \
		"$WORKLOADS_NOFP/split" 1
	[ "$status" -eq 0 ]
	tail -n +"$(grep -n '^proftool top at' <<<"$output" | tail -1 | cut -d: -f1)" <<<"$output" >last.txt
	main=$(awk '/\(main\)$/ { sub(/%/, "", $5); print $5; exit }' last.txt)
	at_least "$main" 95
	grep -q '(leaf_a)$' last.txt
}

# ---- on a terminal ----

@test "on a terminal: f_a then f_b on top; keys c s t / Esc p; q leaves a clean terminal and the command running" {
	printf -v cmd '%q ' "$PROFTOOL" top --window 1 --record rec.data -- "$WORKLOADS/phases" a:go_b b:go_c
	on_screen "$cmd"
	until_screen leads f_a
	shows '^proftool top - .*/phases a:go_b b:go_c +[0-9]{2}:[0-9]{2}:[0-9]{2}$'
	shows '^[0-9]+ samples in the last [0-9.]+ s \([0-9.]+/s\), [0-9]+ lost; 1 process, 1 thread(, RSS [0-9.]+ MiB)?$'
	shows '; perf backend; by self time$'
	touch go_b
	until_screen leads f_b

	# c: by cumulative time, largest first
	keys c
	until_screen shows 'by cumulative time$'
	# (a capture may catch the terminal half redrawn: the rows come sorted within the wait)
	until_screen sorted_by_cumtime
	# s: by self time again
	keys s
	until_screen shows 'by self time$'
	until_screen leads f_b

	# t: a row per thread and function, the thread named
	keys t
	until_screen shows 'by self time, per thread$'
	shows '^ +nsamples +tottime +tot% +cumtime +cum% +thread +filename:lineno\(function\)$'
	rows | head -1 | grep -qE "phases \([0-9]+\) +.*\(f_b\)$"
	keys t
	until_screen shows 'by self time$'

	# /: only the rows whose name has the text, once Enter applies it; Esc shows them all again
	keys /
	keys -l phases.c
	until_screen shows '^filter: phases\.c$'
	keys Enter
	until_screen shows "by self time, filter 'phases\.c'$"
	[ "$(rows | wc -l)" -ge 2 ]
	[ -z "$(rows | grep -v 'phases\.c:')" ]
	keys Escape
	until_screen shows 'by self time$'
	[ -n "$(rows | grep -v 'phases\.c:')" ]

	# p: sampling pauses (the screen says so) and resumes
	keys p
	until_screen shows '^proftool top - .* PAUSED +[0-9:]+$'
	shows 'p resume'
	sleep 1.5        # a pause of some length, whatever the machine; nothing waits on it
	keys p
	until_screen shows '^proftool top - .*/phases a:go_b b:go_c +[0-9:]+$'
	# a table taken after the pause
	total=$(grep -oE '^since the start: [0-9]+ samples' screen.txt)
	until_screen new_total

	keys q
	ended_clean
	[ "$(cat exit.txt)" = 0 ]
	# q leaves the command running, as --duration does
	[ ! -e in_c ]
	pid=$(pgrep -f "^$WORKLOADS/phases a:go_b b:go_c")
	[ -n "$pid" ]
	[[ "$(state "$pid")" == [RS] ]]
	touch go_c
	wait_gone "$pid"

	# --record: both phases, and the pause: a span with no sample in it
	run python3 - rec.data <<'PY'
import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
pauses = p["regions"]["pauses"]
assert len(pauses["start_ns"]) == 1, pauses
start, end = pauses["start_ns"][0], pauses["end_ns"][0]
assert end - start > 1e9, (start, end)
t, times = 0, []
for d in p["samples"]["time_us_delta"]:
    t += d
    times.append(t * 1000)
inside = [x for x in times if start < x < end]
assert not inside, (start, end, inside[:5])
print(len(times))
PY
	echo "$output"
	[ "$status" -eq 0 ]
}

# ctrl_c_pid BACKEND: Ctrl-C on the terminal ends top PID; the process runs on, untraced
ctrl_c_pid() {
	rm -f exit.txt stty.txt
	on_screen "$(printf '%q ' "$PROFTOOL" top --backend "$1" "$target")"
	until_screen leads f_a
	shows "; $1 backend; "
	keys C-c
	ended_clean
	[ "$(cat exit.txt)" = 0 ]
	[[ "$(state "$target")" == [RS] ]]
	for t in /proc/"$target"/task/*; do
		[ "$(awk '/^TracerPid:/ { print $2 }' "$t/status")" = 0 ]
	done
	tm kill-server
}

@test "on a terminal: Ctrl-C ends top PID, the terminal clean, the process running on, untraced (perf, ptrace)" {
	"$WORKLOADS/phases" a:go_end >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	ctrl_c_pid perf
	ctrl_c_pid ptrace
	touch go_end
	wait "$target"
}

@test "on a terminal: Ctrl-C goes to top -- COMMAND, which ends when the command does, with its status" {
	# a shell loop that leaves with 7 on SIGINT, once its trap is set
	on_screen "$(printf '%q ' "$PROFTOOL" top -- sh -c 'trap "exit 7" INT; touch ready; while :; do :; done')"
	wait_file ready
	until_screen shows '^ +[0-9]+/[0-9]+ '
	keys C-c
	ended_clean
	[ "$(cat exit.txt)" = 7 ]
}

@test "on a terminal: SIGTERM, the command's end and a profile that cannot be written each leave it clean" {
	"$WORKLOADS/phases" a:go_end >/dev/null 2>&1 &
	target=$!
	wait_file in_a
	# SIGTERM to top PID
	on_screen "$(printf '%q ' "$PROFTOOL" top "$target")"
	until_screen leads f_a
	kill -TERM "$(pgrep -f "proftool top $target" | head -1)"
	ended_clean
	[ "$(cat exit.txt)" = 0 ]
	[[ "$(state "$target")" == [RS] ]]
	tm kill-server
	touch go_end
	wait "$target"

	# the command ends by itself
	rm -f exit.txt stty.txt in_* go_*
	on_screen "$(printf '%q ' "$PROFTOOL" top -- "$WORKLOADS/phases" a:go_end)"
	until_screen leads f_a
	touch go_end
	ended_clean
	[ "$(cat exit.txt)" = 0 ]
	tm kill-server

	# --record into a directory removed meanwhile: one line, after the screen, and status 1
	rm -f exit.txt stty.txt in_* go_*
	mkdir out
	on_screen "$(printf '%q ' "$PROFTOOL" top --record out/p.data -- "$WORKLOADS/phases" a:go_end) 2>err.txt"
	until_screen leads f_a
	rm -rf out
	touch go_end
	ended_clean
	[ "$(cat exit.txt)" = 1 ]
	[ "$(wc -l <err.txt)" -eq 1 ]
	grep -q '^proftool: .*out/p.data.*the profile was not saved' err.txt
}
