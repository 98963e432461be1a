#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# record as an unprivileged user: perf_event_paranoid decides whether it may, and the ring
# buffers fit the per-user locked-memory budget (perf_event_mlock_kb, then 'ulimit -l').
# As root the tests drop to 'nobody' with setpriv; otherwise they run as the current user.

load helpers

# Runs its arguments as a command with 'ulimit -l $1' (KiB): memlock KIB COMMAND...
MEMLOCK_SH='ulimit -l "$1" || exit 125; shift; exec "$@"'

setup() {
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid) || skip "no /proc/sys/kernel/perf_event_paranoid"
	mlock_kb=$(cat /proc/sys/kernel/perf_event_mlock_kb) || skip "no /proc/sys/kernel/perf_event_mlock_kb"
	page_kb=$(($(getconf PAGESIZE) / 1024))
	cpus=$(getconf _NPROCESSORS_ONLN)
	started=()      # record processes, waited for in teardown
	held=()         # commands they profile, stopped in teardown
	tmp_work=
	if [ "$(id -u)" -eq 0 ]; then
		need_nobody
		AS_USER=("${AS_NOBODY[@]}")
	else
		AS_USER=()
	fi
	# a directory the user can write: under BATS_TEST_TMPDIR if its parents let the user
	# through (bats makes them 0700), else one of our own under /tmp
	work=$BATS_TEST_TMPDIR/work
	mkdir -m 0777 "$work"
	chmod 0777 "$work"
	if ! "${AS_USER[@]}" test -w "$work"; then
		work=$(mktemp -d /tmp/proftool-nonroot.XXXXXX)
		tmp_work=$work
		chmod 0777 "$work"
	fi
	cd "$work" || return 1
	# the user must be able to run the programs and read their symbols: copies, since the
	# checkout may be private (in root's 0700 home), or readable but not all the way
	mkdir -m 0755 bin
	cp "$PROFTOOL" "$WORKLOADS/split" "$WORKLOADS/exitcode" bin/
	chmod 0755 bin/*
	proftool=$work/bin/proftool split=$work/bin/split exitcode=$work/bin/exitcode
}

teardown() {
	local p

	for p in "${held[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${started[@]}"; do
		# a record whose command was never held (a test failed early): stop that command too
		pkill -P "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	cd "$BATS_TEST_TMPDIR" || return 1
	if [ -n "$tmp_work" ]; then
		rm -rf "$tmp_work"
	fi
}

# reap PID: waits for a record started by start_held, its exit status in $st.
reap() {
	local p keep=()

	wait "$1" && st=0 || st=$?
	for p in "${started[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	started=("${keep[@]}")
}

# start_held OUT KIB [OPTIONS...] -- COMMAND...: starts 'record -q -o OUT OPTIONS -- COMMAND'
# as the user with 'ulimit -l KIB', in the background, its stderr in OUT.err. Returns 0 once
# COMMAND runs (record maps its ring buffers before it lets COMMAND exec), with record's pid
# in $rec and COMMAND's in $child; returns 1 if record ended first, its exit status in $rec_status.
start_held() {
	local out=$1 kib=$2 opts=() state c comm
	shift 2
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	comm=${1##*/}
	bash -c "$MEMLOCK_SH" memlock "$kib" "${AS_USER[@]}" "$proftool" record -q -o "$out" "${opts[@]}" \
		-- "$@" 2>"$out.err" </dev/null 3>&- &
	rec=$!
	started+=("$rec")
	for _ in $(seq 300); do
		for c in $(pgrep -P "$rec"); do
			if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "${comm:0:15}" ]; then
				child=$c
				held+=("$child")
				return 0
			fi
		done
		state=$(awk '{ print $3 }' /proc/"$rec"/stat 2>/dev/null || echo gone)
		if [ "$state" = Z ] || [ "$state" = gone ]; then
			reap "$rec"
			rec_status=$st
			return 1
		fi
		sleep 0.1
	done
	echo "record of '$*' neither started its command nor ended in 30 s" >&2
	return 2
}

# use_up_budget: holds '--backend perf' recordings with 'ulimit -l 0' (so only the per-user
# perf_event_mlock_kb budget is left) until one finds no room for its ring buffers; that one
# is number $failed. Skips when 32 recordings fit.
use_up_budget() {
	failed=
	for i in $(seq 32); do
		start_held "held$i.data" 0 --backend perf -- sleep 1000 && continue
		[ $? -eq 1 ] || return 1
		failed=$i
		break
	done
	[ -n "$failed" ] || skip "perf_event_mlock_kb ($mlock_kb KiB per CPU) holds 32 recordings: it cannot be used up"
}

# check_split FILE: the profile of "split" in FILE reads back with its 50/30/20 shares.
check_split() {
	run --separate-stderr "${AS_USER[@]}" "$proftool" report --format folded "$1"
	[ "$status" -eq 0 ]
	echo "$output" >"$1.folded"
	near "$(self_share leaf_a <"$1.folded")" 50 5
	near "$(self_share leaf_b <"$1.folded")" 30 5
	near "$(self_share leaf_c <"$1.folded")" 20 5
}

@test "--backend perf as an unprivileged user records when perf_event_paranoid allows it, else fails in one line" {
	run --separate-stderr "${AS_USER[@]}" "$proftool" record -q --backend perf -o split.data -- "$split" 0.5
	if [ "$paranoid" -ge 3 ]; then
		[ "$status" -eq 1 ]
		one_error_line
		[[ "$stderr" == *"perf_event_paranoid"* ]]
		[ ! -e split.data ]
		return
	fi
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ -z "$stderr" ]
	check_split split.data
	if [ "$paranoid" -eq 2 ] && [ "${#AS_USER[@]}" -gt 0 ]; then
		# paranoid 2 lets unprivileged users sample user space only
		run ! grep -q '\[kernel\]' split.data.folded
	fi
}

@test "the default backend as an unprivileged user records with perf, or with ptrace after one notice" {
	run --separate-stderr "${AS_USER[@]}" "$proftool" record -o split.data -- "$split" 0.5
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	if [ "$paranoid" -ge 3 ]; then
		[ "${#stderr_lines[@]}" -eq 2 ] || { echo "$stderr"; false; }
		[[ "${stderr_lines[0]}" == "proftool: notice: "*"ptrace"* ]]
	else
		[ "${#stderr_lines[@]}" -eq 1 ] || { echo "$stderr"; false; }
	fi
	[[ "${stderr_lines[-1]}" == "proftool: wrote split.data: "* ]]
	run --separate-stderr "${AS_USER[@]}" "$proftool" report split.data
	[ "$status" -eq 0 ]
	if [ "$paranoid" -ge 3 ]; then
		[[ "$output" == *"ptrace backend"* ]]
		[[ "$output" == *"(leaf_a)"* && "$output" == *"(leaf_b)"* && "$output" == *"(leaf_c)"* ]]
	else
		[[ "$output" == *"perf backend"* ]]
		check_split split.data
	fi
}

@test "two recordings at once: the second fits its ring buffers into what the first left" {
	[ "$paranoid" -le 2 ] || skip "perf_event_paranoid is $paranoid: unprivileged users cannot use perf"
	# 'ulimit -l' on top of the per-user perf_event_mlock_kb budget, which the first recording
	# takes: room for 32 pages per CPU, less than a recording maps when it has the choice
	kib=$((32 * page_kb * cpus))
	hard=$(ulimit -H -l)
	[ "$hard" = unlimited ] || [ "$hard" -ge "$kib" ] || [ "${#AS_USER[@]}" -gt 0 ] ||
		skip "'ulimit -H -l' is $hard KiB, below the $kib KiB this test sets"
	start_held first.data "$kib" --backend perf -- "$exitcode" sleep 100 || { cat first.data.err; false; }
	run --separate-stderr bash -c "$MEMLOCK_SH" memlock "$kib" "${AS_USER[@]}" \
		"$proftool" record -q --backend perf -o second.data -- "$split" 0.5
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ -z "$stderr" ]
	check_split second.data
	# the first recording went on undisturbed
	kill "$child"
	reap "$rec"
	[ "$st" -eq 143 ]
	run --separate-stderr "${AS_USER[@]}" "$proftool" report --format folded first.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"burn "* ]]
}

@test "--backend perf with the locked-memory budget used up fails in one line naming perf_event_mlock_kb or 'ulimit -l'" {
	[ "$paranoid" -le 2 ] || skip "perf_event_paranoid is $paranoid: unprivileged users cannot use perf"
	use_up_budget
	# the kernel's default budget (512 KiB + 1 page per CPU) is made for one recording
	if [ "$mlock_kb" -ge $((512 + page_kb)) ]; then
		[ "$failed" -ge 2 ] || { echo "a lone recording did not fit in perf_event_mlock_kb"; cat held1.data.err; false; }
	fi
	[ "$rec_status" -eq 1 ]
	mapfile -t stderr_lines <"held$failed.data.err"
	stderr=$(cat "held$failed.data.err")
	one_error_line
	[[ "$stderr" == *"perf_event_mlock_kb"* || "$stderr" == *"ulimit -l"* ]]
	# no profile and no temporary file is left behind
	[ -z "$(ls -A | grep -F "held$failed.data" | grep -vxF "held$failed.data.err")" ]
}

# A budget used up is no denial: --backend auto falls back to ptrace only where
# perf_event_open is refused (sampler/perf_open.c gives ENOBUFS for it, so that auto tells the two
# apart), and a fallback would hide what to raise.
@test "the default backend with the locked-memory budget used up fails like perf, without a fallback" {
	[ "$paranoid" -le 2 ] || skip "perf_event_paranoid is $paranoid: unprivileged users cannot use perf"
	use_up_budget
	run --separate-stderr bash -c "$MEMLOCK_SH" memlock 0 "${AS_USER[@]}" \
		"$proftool" record -o auto.data -- "$split" 0.5
	[ "$status" -eq 1 ] || { echo "status $status: $stderr"; false; }
	one_error_line
	[[ "$stderr" == *"perf_event_mlock_kb"* || "$stderr" == *"ulimit -l"* ]]
	[[ "$stderr" != *"notice"* ]]
	[ ! -e auto.data ]
}
