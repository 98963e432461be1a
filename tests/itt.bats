#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The regions runtime as an ITT collector (regions/itt.c in libproftool-rt.so): programs
# instrumented with Intel's ITT API, pointed at it by INTEL_LIBITTNOTIFY64, write their tasks,
# frames and markers into the region files of PROFTOOL_REGIONS. Checked with a program that
# plays ITT's static part itself (tests/workloads/ittclient.c, no ITT code) and with Debian's
# oneDNN (libdnnl2 2.6, tests/workloads/dnnl/dnnlprims.c); the files are read back by
# tests/tools/rgn_read.py, which also checks them against the format strictly.

load helpers

RGN_READ=$BATS_TEST_DIRNAME/tools/rgn_read.py
DNNL=dnnl::primitive::execute

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset PROFTOOL_REGIONS PROFTOOL_REGIONS_MB INTEL_LIBITTNOTIFY64 OMP_NUM_THREADS \
		ONEDNN_ITT_TASK_LEVEL DNNL_ITT_TASK_LEVEL
	RT=$(dirname "$PROFTOOL")/libproftool-rt.so
	mkdir rgn
}

# rgn_read [OPTIONS] FILE|DIR...: the strict reader, for files the C runtime wrote
rgn_read() {
	python3 "$RGN_READ" --writer c "$@"
}

# itt PROGRAM ARGS...: runs PROGRAM with the collector, recording into rgn/; stdout in
# out.txt; fails if it fails
itt() {
	PROFTOOL_REGIONS=$PWD/rgn INTEL_LIBITTNOTIFY64=$RT "$@" >out.txt 2>err.txt ||
		{ cat out.txt err.txt >&2; return 1; }
}

# out KEY: the value printed as "KEY VALUE" in out.txt
out() {
	awk -v k="$1" '$1 == k { print $2 }' out.txt
}

# header KEY FILE: the value of KEY in FILE's header
header() {
	rgn_read "$2" | sed -n "s/^header .* $1=\([^ ]*\).*/\1/p"
}

# per_thread FILE: "TID KIND DOMAIN/NAME COUNT" for every thread, kind and region of FILE
# (pause and resume: "TID KIND / COUNT"), sorted
per_thread() {
	rgn_read "$1" |
		sed -n 's/^event tid=\([0-9]*\) .* kind=\([a-z]*\) id=[0-9]* domain="\([^"]*\)" name="\(.*\)"$/\1 \2 \3\/\4/p' |
		sort | uniq -c | awk '{ print $2, $3, $4, $1 }'
}

# balanced FILE: every end closes an open begin of its region, per thread, and nothing is
# left open
balanced() {
	rgn_read --summary "$1" | grep -qx 'balanced yes'
}

# ---- a static part written here ----

@test "itt: the collector fills in the functions it implements, the others get their null_func" {
	itt "$WORKLOADS/ittclient" run
	# the program checks each pointer itself; a few of them here too
	grep -qx 'api __itt_task_begin collector' out.txt
	grep -qx 'api __itt_string_handle_create collector' out.txt
	grep -qx 'api __itt_frame_end_v3 collector' out.txt
	# with a static implementation (thread names are not collected): left to it
	grep -qx 'api __itt_thread_set_name static' out.txt
	# without one: NULL, which ITT's macros skip
	grep -qx 'api __itt_counter_inc_v3 null' out.txt
	grep -qx 'api __itt_sync_create null' out.txt
	[ ! -s err.txt ]
}

@test "itt: tasks, frames, markers, overlapped tasks, regions and pause, exactly, per thread" {
	itt "$WORKLOADS/ittclient" run
	local main worker f
	main=$(out main)
	worker=$(out worker)
	f=rgn/$main-c-0.rgn
	[ -f "$f" ]
	balanced "$f"
	# the static function's name is its place: the module and an offset
	per_thread "$f" | sed "s/^$main /main /; s/^$worker /worker /; s|/ittclient+0x[0-9a-f]*|/ittclient+OFFSET|" >got.txt
	{
		for t in main worker; do
			for k in begin end; do
				cat <<-EOF
				$t $k ittclient::main/frame 10
				$t $k ittclient::main/inner 410
				$t $k ittclient::main/ittclient+OFFSET 1
				$t $k ittclient::main/outer 100
				$t $k ittclient::main/ov_a 1
				$t $k ittclient::main/ov_b 1
				$t $k ittclient::main/qsort 1
				$t $k ittclient::main/reg 1
				$t $k ittclient::other/frame 1
				$t $k ittclient::other/step 100
				EOF
			done
			echo "$t mark ittclient::main/tick 100"
		done
		for k in begin end; do
			echo "main $k ittclient::early/early 1"
			echo "main $k ittclient::main/deep 128"
			echo "main $k ittclient::main/forked 1"
		done
		echo "main pause / 2"
		echo "main resume / 2"
	} | sort >expected.txt
	diff expected.txt got.txt
}

@test "itt: an end closes the innermost task of its domain, and a frame is a region of its domain" {
	itt "$WORKLOADS/ittclient" run
	local main
	main=$(out main)
	rgn_read "rgn/$main-c-0.rgn" |
		sed -n "s/^event tid=$main .* kind=\([a-z]*\) id=[0-9]* domain=\"\([^\"]*\)\" name=\"\(.*\)\"$/\1 \2\/\3/p" >events.txt
	# the first round of work(): three inner tasks, then a step of the other domain ended
	# while an inner task of the first is innermost
	sed -n '3,16p' events.txt >round.txt
	cat >expected.txt <<-'EOF'
	begin ittclient::main/outer
	begin ittclient::main/inner
	end ittclient::main/inner
	begin ittclient::main/inner
	end ittclient::main/inner
	begin ittclient::main/inner
	end ittclient::main/inner
	begin ittclient::other/step
	begin ittclient::main/inner
	end ittclient::other/step
	end ittclient::main/inner
	mark ittclient::main/tick
	end ittclient::main/outer
	begin ittclient::main/outer
	EOF
	diff expected.txt round.txt
	# overlapped tasks end in any order; a frame holds what ran in it
	grep -A3 -x 'begin ittclient::main/ov_a' events.txt >ov.txt
	printf '%s\n' 'begin ittclient::main/ov_a' 'begin ittclient::main/ov_b' \
		'end ittclient::main/ov_a' 'end ittclient::main/ov_b' | diff - ov.txt
	grep -m1 -A3 -x 'begin ittclient::main/frame' events.txt >frame.txt
	printf '%s\n' 'begin ittclient::main/frame' 'begin ittclient::main/inner' \
		'end ittclient::main/inner' 'end ittclient::main/frame' | diff - frame.txt
}

@test "itt: tasks nested deeper than the collector's stack are counted dropped, begins and ends" {
	itt "$WORKLOADS/ittclient" run
	local f
	f=rgn/$(out main)-c-0.rgn
	# 200 nested: 128 kept (and balanced), 72 begins and their 72 ends dropped
	[ "$(header dropped "$f")" = 144 ]
	per_thread "$f" | grep -x "$(out main) begin ittclient::main/deep 128"
	per_thread "$f" | grep -x "$(out main) end ittclient::main/deep 128"
	balanced "$f"
	# nothing past the stack was lost from the threads' segments
	rgn_read --summary "$f" | grep -q "^thread $(out main) .* dropped 0$"
}

@test "itt: a forked child writes a file of its own, without the end of a task its parent began" {
	itt "$WORKLOADS/ittclient" run
	local child f
	child=$(out child)
	f=rgn/$child-c-0.rgn
	[ "$(ls rgn | sort)" = "$(printf '%s\n' "$(out main)-c-0.rgn" "$child-c-0.rgn" | sort)" ]
	per_thread "$f" >got.txt
	printf '%s\n' "$child begin ittclient::main/child 1" "$child end ittclient::main/child 1" | diff - got.txt
	[ "$(header dropped "$f")" = 0 ]
}

@test "itt: loaded but not recording (no PROFTOOL_REGIONS), the collector leaves ITT disabled" {
	# the program checks that every pointer is at its null_func and domains are disabled
	INTEL_LIBITTNOTIFY64=$RT "$WORKLOADS/ittclient" off >out.txt
	grep -qx 'api __itt_task_begin null' out.txt
	grep -qx 'api __itt_domain_create static' out.txt
	[ -z "$(ls rgn)" ]
}

@test "itt: the pairs of a tight loop all arrive" {
	itt "$WORKLOADS/ittclient" bench 100000
	local f
	f=$(echo rgn/*.rgn)
	per_thread "$f" | awk '{ print $2, $3, $4 }' >got.txt
	printf '%s\n' 'begin ittclient::bench/pair 100001' 'begin ittclient::bench/push 100000' \
		'end ittclient::bench/pair 100001' 'end ittclient::bench/push 100000' | diff - got.txt
	[ "$(header dropped "$f")" = 0 ]
}

# ---- oneDNN (Debian's libdnnl2 2.6) ----

# need_dnnl: the oneDNN test program, built where libdnnl-dev is installed
need_dnnl() {
	need_package libdnnl-dev
	[ -x "$WORKLOADS/dnnlprims" ] ||
		skip_or_fail "$WORKLOADS/dnnlprims was not built (make builds it where libdnnl-dev is installed)"
}

# dnnl_main_counts N: checks that rgn/ holds one file, balanced, nothing dropped, whose main
# thread ran each of reorder, eltwise and matmul N times and nothing else; the other
# threads' lines of per_thread go into workers.txt
dnnl_main_counts() {
	local n=$1 main f
	main=$(out main)
	[ "$(out ran)" = "$n" ]
	f=rgn/$main-c-0.rgn
	[ "$(ls rgn)" = "$main-c-0.rgn" ]
	balanced "$f"
	[ "$(header dropped "$f")" = 0 ]
	per_thread "$f" | awk -v m="$main" '$1 == m' >got.txt
	printf '%s\n' "$main begin $DNNL/eltwise $n" "$main begin $DNNL/matmul $n" "$main begin $DNNL/reorder $n" \
		"$main end $DNNL/eltwise $n" "$main end $DNNL/matmul $n" "$main end $DNNL/reorder $n" |
		diff - got.txt
	per_thread "$f" | awk -v m="$main" '$1 != m' >workers.txt
}

@test "itt: oneDNN at ITT level 1: each primitive execution is one task on the main thread" {
	need_dnnl
	local level
	for level in ONEDNN_ITT_TASK_LEVEL DNNL_ITT_TASK_LEVEL; do
		rm -f rgn/*
		itt env "$level=1" OMP_NUM_THREADS=2 "$WORKLOADS/dnnlprims" 300
		dnnl_main_counts 300
		[ ! -s workers.txt ]
	done
}

@test "itt: oneDNN at its default level also marks each OpenMP worker's share" {
	need_dnnl
	# one worker beside the main thread, however many CPUs the machine has
	itt env OMP_NUM_THREADS=2 "$WORKLOADS/dnnlprims" 300
	dnnl_main_counts 300
	# the ReLU is split over both threads at every execution; every kind at most once per
	# execution on the worker, and only its kinds
	[ "$(awk '$2 == "begin" && $3 == "'"$DNNL"'/eltwise"' workers.txt | cut -d' ' -f4)" = 300 ]
	[ "$(cut -d' ' -f1 workers.txt | sort -u | wc -l)" = 1 ]
	awk '$4 > 300 { exit 1 }' workers.txt
	run ! grep -v " $DNNL/\(eltwise\|matmul\|reorder\) " workers.txt
	# one thread alone: the main thread's tasks only
	rm -f rgn/*
	itt env OMP_NUM_THREADS=1 "$WORKLOADS/dnnlprims" 300
	dnnl_main_counts 300
	[ ! -s workers.txt ]
}

@test "itt: oneDNN at ITT level 0 makes no ITT call: the collector is never loaded" {
	need_dnnl
	itt env ONEDNN_ITT_TASK_LEVEL=0 "$WORKLOADS/dnnlprims" 10
	[ "$(out ran)" = 10 ]
	[ -z "$(ls rgn)" ]
}

@test "itt: oneDNN with the collector loaded but not recording runs as without it" {
	need_dnnl
	INTEL_LIBITTNOTIFY64=$RT "$WORKLOADS/dnnlprims" 10 >out.txt
	[ "$(out ran)" = 10 ]
	[ -z "$(ls rgn)" ]
}

# ---- proftool record --regions itt ----

# rrow PATH FILE: the --format regions row of PATH in FILE: count total ... cpu
rrow() {
	"$PROFTOOL" report --format regions --limit 0 "$2" |
		awk -v p="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && $9 == p { print; found = 1 }
			END { exit !found }'
}

@test "itt: record --regions itt collects an ITT client's tasks, frames and markers" {
	unset PROFTOOL_REGIONS INTEL_LIBITTNOTIFY64
	"$PROFTOOL" record -q --regions itt -o itt.data -- "$WORKLOADS/ittclient" run >/dev/null
	run "$PROFTOOL" report --format regions itt.data
	[ "$status" -eq 0 ]
	[[ $output == *"Domain ittclient::main"* ]]
	# two threads, 100 each; interleaved domains are not unbalanced
	[ "$(rrow ittclient::main::outer itt.data | awk '{ print $1 }')" -eq 200 ]
	[ "$(rrow ittclient::main::outer/ittclient::main::inner itt.data | awk '{ print $1 }')" -ge 200 ]
	[[ $output == *"marks"* ]]
	# only itt and all name the collector; auto and off leave ITT alone
	for mode in itt all auto off; do
		run "$PROFTOOL" record -q --regions "$mode" -o env.data -- sh -c 'echo "[${INTEL_LIBITTNOTIFY64:-}]"'
		case $mode in
		itt | all) [ "$output" = "[$(dirname "$PROFTOOL")/libproftool-rt.so]" ] ;;
		*) [ "$output" = "[]" ] ;;
		esac
	done
}

@test "itt: record --regions itt counts Debian's oneDNN primitives exactly" {
	need_dnnl
	unset PROFTOOL_REGIONS INTEL_LIBITTNOTIFY64
	ONEDNN_ITT_TASK_LEVEL=1 OMP_NUM_THREADS=2 "$PROFTOOL" record -q --regions itt -o dnnl.data -- \
		"$WORKLOADS/dnnlprims" 300 >/dev/null
	for prim in reorder eltwise matmul; do
		[ "$(rrow "$DNNL::$prim" dnnl.data | awk '{ print $1 }')" -eq 300 ]
	done
	run "$PROFTOOL" report --format regions dnnl.data
	[[ $output == *"Domain $DNNL"* ]]
	[[ $output == *"dropped 0, unbalanced 0, open at exit 0"* ]]
}
