#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Named regions end to end: programs mark them (tests/workloads/regions.c through
# <proftool.h>, tests/workloads/pyregions/nest.py through the Python module), record
# collects them, report --format regions counts and times them, --region and --by-region
# keep the samples inside them. Durations are spun on the wall clock by the workloads, so
# they are exact whatever the machine does; CPU figures are only compared with them.

load helpers

RW=$WORKLOADS/regions
PYTHON_TREE=$(cd "$BATS_TEST_DIRNAME/../python" && pwd)

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset PROFTOOL_REGIONS PROFTOOL_RT PROFTOOL_REGIONS_MB INTEL_LIBITTNOTIFY64
}

teardown() {
	if [ -n "${target:-}" ]; then
		kill -KILL "$target" 2>/dev/null
		wait "$target" 2>/dev/null
	fi
	return 0
}

# row PATH [FILE...]: the --format regions row of region path PATH:
# count total self mean min max %wall cpu (the region column left out)
row() {
	local path=$1
	shift
	"$PROFTOOL" report --format regions --limit 0 "$@" |
		awk -v p="$path" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && NF >= 9 && $9 == p {
			print $1, $2, $3, $4, $5, $6, $7, $8; found = 1 }
			END { exit !found }'
}

# field ROW N: the Nth of row's fields
field() {
	echo "$1" | cut -d' ' -f"$2"
}

# within VALUE EXPECTED PERCENT: |VALUE - EXPECTED| <= PERCENT % of EXPECTED
within() {
	awk -v v="$1" -v e="$2" -v p="$3" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d <= e * p / 100) }' ||
		{ echo "$1 is not within $3 % of $2" >&2; return 1; }
}

# between VALUE LOW HIGH: LOW <= VALUE <= HIGH, give or take the 6 decimals the figures have
between() {
	awk -v v="$1" -v l="$2" -v h="$3" 'BEGIN { exit !(v != "" && v >= l - 1e-5 && v <= h + 1e-5) }' ||
		{ echo "$1 is not between $2 and $3" >&2; return 1; }
}

# ---- the C API ----

# A region lasts at least its spins (inner: 50 x 2 ms; outer: 10 x (5 x 2 + 1) ms) and at
# most the program's own measure, taken just outside it: on a busy machine both stretch,
# the latter the more, as the program can be preempted between its clock and the region.
@test "regions: 10 x outer { 5 x inner } counted exactly, totals between their spins and the program's own measure" {
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest >own
	read -r _ _ outer _ _ inner _ inner_cpu <own
	r=$(row outer nest.data)
	[ "$(field "$r" 1)" -eq 10 ]
	between "$(field "$r" 2)" 0.110 "$outer"
	r=$(row outer/inner nest.data)
	[ "$(field "$r" 1)" -eq 50 ]
	between "$(field "$r" 2)" 0.100 "$inner"
	# no instance is shorter than its spin
	awk -v m="$(field "$r" 5)" 'BEGIN { exit !(m >= 0.002) }'
	# inner is computing all along: its samples' time is its CPU time (as the thread counted
	# it), which on a busy machine is well short of its wall time
	within "$(field "$r" 8)" "$inner_cpu" 25
	run "$PROFTOOL" report --format regions nest.data
	[[ $output == *"Region events: 120, dropped 0, unbalanced 0, open at exit 0"* ]]
	[[ $output == *"count       total        self        mean         min         max   %wall         cpu  region"* ]]
}

@test "regions: --region keeps the samples inside the region, in every function report" {
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest >own
	read -r _ _ outer _ _ inner _ <own
	run "$PROFTOOL" report --region inner --format folded nest.data
	[ "$status" -eq 0 ]
	[[ $output == *inner_spin* ]]
	[[ $output != *outer_spin* ]]
	run "$PROFTOOL" report --region outer --format folded nest.data
	[[ $output == *inner_spin* && $output == *outer_spin* ]]
	# a path, and a path from the top
	[ "$("$PROFTOOL" report --region outer/inner --format folded nest.data)" = \
	  "$("$PROFTOOL" report --region inner --format folded nest.data)" ]
	[ "$("$PROFTOOL" report --region /outer/inner --format folded nest.data)" = \
	  "$("$PROFTOOL" report --region inner --format folded nest.data)" ]
	run "$PROFTOOL" report --region inner nest.data
	between "$(sed -n 's/^Region inner: 1 path, 50 instances, total \([0-9.]*\) s, .*/\1/p' <<<"$output")" 0.100 "$inner"
	[[ $output == *"inner_spin"* && $output != *"outer_spin"* ]]
	run "$PROFTOOL" report --region inner --format tree nest.data
	[[ $output == *inner_spin* && $output != *outer_spin* ]]
}

@test "regions: --by-region prints a function table per region path" {
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest >own
	read -r _ _ outer _ _ inner _ <own
	run "$PROFTOOL" report --by-region --limit 0 nest.data
	[ "$status" -eq 0 ]
	between "$(sed -n 's/^=== region outer === 10 instances, total \([0-9.]*\) s, .*/\1/p' <<<"$output")" 0.110 "$outer"
	between "$(sed -n 's/^=== region outer\/inner === 50 instances, total \([0-9.]*\) s, .*/\1/p' <<<"$output")" 0.100 "$inner"
	# the inner section holds inner_spin and not outer_spin
	inner=$(echo "$output" | sed -n '/=== region outer\/inner ===/,$p')
	[[ $inner == *inner_spin* && $inner != *outer_spin* ]]
}

@test "regions: four threads, each region holds only its own thread's function" {
	"$PROFTOOL" record -q -o threads.data -- "$RW" threads
	for k in 0 1 2 3; do
		r=$(row "t$k" threads.data)
		[ "$(field "$r" 1)" -eq 20 ]
		run "$PROFTOOL" report --region "t$k" --format folded threads.data
		[ "$status" -eq 0 ]
		[[ $output == *"work_t$k"* ]]
		for o in 0 1 2 3; do
			[ "$o" = "$k" ] || [[ $output != *"work_t$o"* ]]
		done
	done
	run "$PROFTOOL" report --format regions --per-thread threads.data
	[ "$(grep -c '^=== regions (pid [0-9]*, tid [0-9]*) ===$' <<<"$output")" -eq 4 ]
}

@test "regions: forked and exec'd children record their own regions" {
	"$PROFTOOL" record -q -o procs.data -- "$RW" procs >/dev/null
	[ "$(field "$(row parent procs.data)" 1)" -eq 1 ]
	[ "$(field "$(row parent/in_parent procs.data)" 1)" -eq 4 ]
	# the forked child starts with no open region of its own
	[ "$(field "$(row in_child procs.data)" 1)" -eq 4 ]
	[ "$(field "$(row outer procs.data)" 1)" -eq 10 ]
	[ "$(field "$(row outer/inner procs.data)" 1)" -eq 50 ]
	run "$PROFTOOL" report --format regions --per-process procs.data
	[ "$(grep -c '^=== .* (pid [0-9]*) ===$' <<<"$output")" -eq 3 ]
	run "$PROFTOOL" report --region in_child --format folded procs.data
	[[ $output == *child_spin* && $output != *parent_spin* ]]
}

@test "regions: unbalanced ends are counted, not fatal" {
	run "$PROFTOOL" record -o unb.data -- "$RW" unbalanced
	[ "$status" -eq 0 ]
	run "$PROFTOOL" report --format regions unb.data
	[[ $output == *"unbalanced 2"* ]]
	[ "$(field "$(row ok unb.data)" 1)" -eq 3 ]
	[ "$(field "$(row a unb.data)" 1)" -eq 1 ]
	[ "$(field "$(row a/b unb.data)" 1)" -eq 1 ]
}

@test "regions: SIGKILL and abort() inside an open region keep it, closed at the end and flagged" {
	for how in kill abort; do
		run "$PROFTOOL" record -q -o "$how.data" -- "$RW" "$how"
		[ "$status" -eq $([ "$how" = kill ] && echo 137 || echo 134) ]
		run "$PROFTOOL" report --format regions "$how.data"
		[[ $output == *"open at exit 1"* ]]
		[[ $output == *" open [open at exit]"* ]]
		line=$(grep ' open \[open at exit\]' <<<"$output")
		[ "$(echo "$line" | awk '{ print $1 }')" -eq 1 ]
		# it lasted the spin's 100 ms of CPU, up to the thread's last sample (a ms or a few of
		# CPU before its death; on a busy machine more of wall time)
		awk -v t="$(echo "$line" | awk '{ print $2 }')" 'BEGIN { exit !(t >= 0.08 && t < 5) }'
	done
}

@test "regions: 1,000,000 empty regions are counted exactly, none dropped" {
	"$PROFTOOL" record -q -o many.data -- "$RW" many 1000000
	r=$(row tiny many.data)
	[ "$(field "$r" 1)" -eq 1000000 ]
	run "$PROFTOOL" report --format regions many.data
	[[ $output == *"Region events: 2000001, dropped 0, unbalanced 0, open at exit 0"* ]]
	[[ $output == *"1 mark"* ]]
}

@test "regions: proftool_pause/resume leave out the samples and regions of the paused span" {
	"$PROFTOOL" record -q -o pause.data -- "$RW" pause
	run "$PROFTOOL" report --format folded pause.data
	[[ $output == *before_spin* && $output == *after_spin* ]]
	[[ $output != *paused_spin* ]]
	run "$PROFTOOL" report --format regions pause.data
	[[ $output == *"Paused 1 time, 0.1"* ]]
	[[ $output != *paused_region* ]]
}

@test "regions: domains group the table; marks are counted" {
	"$PROFTOOL" record -q -o dom.data -- "$RW" domains
	run "$PROFTOOL" report --format regions dom.data
	[[ $output == *"Domain net"* ]]
	[[ $output == *"5 marks"* ]]
	[ "$(field "$(row step dom.data)" 1)" -eq 10 ]
	[ "$(field "$(row net::step dom.data)" 1)" -eq 10 ]
	run "$PROFTOOL" report --region net::step --format folded dom.data
	[ "$status" -eq 0 ]
}

@test "regions: --sort orders the rows by MXNet's keys" {
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest
	first() {
		"$PROFTOOL" report --format regions --sort "$1" nest.data | awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && NF >= 9 { print $9; exit }'
	}
	[ "$(first total)" = outer ]
	[ "$(first count)" = outer/inner ]
	[ "$(first avg)" = outer ]
	[ "$(first self)" = outer/inner ]
	[ "$(first min)" = outer ]
	[ "$(first max)" = outer ]
	[ "$(first name)" = outer ]
	run "$PROFTOOL" report --format regions --sort cumtime nest.data
	[ "$status" -eq 2 ]
	[[ $output == "proftool: unknown sort key 'cumtime' for --format regions"* ]]
}

@test "regions: merged profiles add their regions up" {
	"$PROFTOOL" record -q -o a.data -- "$RW" nest
	"$PROFTOOL" record -q -o b.data -- "$RW" nest
	[ "$(field "$(row outer/inner a.data b.data)" 1)" -eq 100 ]
	[ "$(field "$(row outer a.data b.data)" 1)" -eq 20 ]
}

@test "regions: --regions off records none; errors say what to do" {
	"$PROFTOOL" record -q --regions off -o off.data -- "$RW" nest
	run "$PROFTOOL" report --format regions off.data
	[ "$status" -eq 1 ]
	[[ $output == "proftool: the profile has no regions"* ]]
	run "$PROFTOOL" report --region inner off.data
	[ "$status" -eq 1 ]
	[[ $output == "proftool: no region is named 'inner'"* ]]
	run "$PROFTOOL" record --regions bogus -- true
	[ "$status" -eq 2 ]
	[[ $output == "proftool: --regions takes auto, itt, all or off, not 'bogus'"* ]]
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest
	run "$PROFTOOL" report --by-region --format tree nest.data
	[ "$status" -eq 2 ]
	run "$PROFTOOL" report --region nope nest.data
	[ "$status" -eq 1 ]
	[[ $output == "proftool: no region is named 'nope'; 'proftool report --format regions' lists them" ]]
}

@test "regions: record leaves no directory behind" {
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir "$TMPDIR"
	"$PROFTOOL" record -q -o nest.data -- "$RW" nest
	"$PROFTOOL" record -q -o kill.data -- "$RW" kill || true
	[ -z "$(ls -A "$TMPDIR")" ]
}

@test "regions: attach reads the regions of a program started with them" {
	mkdir rgn
	PROFTOOL_REGIONS=$BATS_TEST_TMPDIR/rgn PROFTOOL_RT=$(dirname "$PROFTOOL")/libproftool-rt.so \
		"$RW" nest 100 >/dev/null &
	target=$!
	# the program has written its first events: it runs
	for _ in $(seq 200); do
		[ -n "$(ls rgn)" ] && break
		sleep 0.05
	done
	"$PROFTOOL" attach -q --duration 1 -o att.data "$target"
	kill -KILL "$target"
	wait "$target" 2>/dev/null || true
	target=
	run "$PROFTOOL" report --format regions att.data
	r=$(grep ' outer/inner' <<<"$output")
	# 200 ms each at this scale: a second holds a few, those it cut counted from its start
	# or to its end, and flagged
	[ "$(echo "$r" | awk '{ print $1 }')" -ge 1 ]
	[ "$(echo "$r" | awk '{ print $1 }')" -le 10 ]
	# one thread's regions, one at a time, within the recording: at most all of it
	awk -v w="$(echo "$r" | awk '{ print $7 }' | tr -d %)" 'BEGIN { exit !(w <= 100.1) }'
	[[ $output == *"outer"*"[open at the start]"* ]]
	[[ $output == *"[open at the end]"* ]]
	[[ $output == *", open at the start "[12]", open at the end "[12]* ]]
	# the directory is the program's: attach leaves it
	[ -n "$(ls rgn)" ]
}

# ---- Python ----

@test "regions: Python regions, one computing and one sleeping; workers' regions" {
	need "$PYTHON3" python3
	PYTHONPATH=$PYTHON_TREE "$PROFTOOL" record -q -o py.data -- "$PYTHON3" \
		"$BATS_TEST_DIRNAME/workloads/pyregions/nest.py" >own
	read -r _ compute compute_cpu _ wait wait_cpu <own
	[ "$(field "$(row step py.data)" 1)" -eq 10 ]
	c=$(row step/compute py.data)
	w=$(row step/wait py.data)
	[ "$(field "$c" 1)" -eq 50 ]
	[ "$(field "$w" 1)" -eq 50 ]
	# against the program's own measure (a with block costs about a microsecond more)
	within "$(field "$c" 2)" "$compute" 5
	within "$(field "$w" 2)" "$wait" 5
	awk -v t="$compute" 'BEGIN { exit !(t >= 0.200) }'
	# computing: its samples are its CPU time (as the thread counted it); sleeping: near none
	within "$(field "$c" 8)" "$compute_cpu" 25
	awk -v c="$(field "$w" 8)" -v o="$wait_cpu" 'BEGIN { exit !(c <= o + 0.02) }'
	[ "$(field "$(row worker py.data)" 1)" -eq 8 ]
	run "$PROFTOOL" report --region compute --format folded py.data
	[[ $output == *"nest.py:"*"(compute)"* && $output != *"(worker_spin)"* ]]
	run "$PROFTOOL" report --region worker --format folded py.data
	[[ $output == *"(worker_spin)"* && $output != *"(compute)"* ]]
}
