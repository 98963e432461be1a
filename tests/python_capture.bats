#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Python stacks copied at the sample (--python-capture auto, the default; sampler/perf_bpf.c):
# where BPF is allowed, no sample costs a process_vm_readv or a wake-up, the stacks are the
# ones the samples saw, and the report says how many were copied; where it is not (another
# user, the ptrace backend), and with --python-capture off, the stacks are read from the
# process as before.

load helpers

PYDIR=$BATS_TEST_DIRNAME/workloads/py

teardown() {
	[ -n "${pub:-}" ] && rm -rf "$pub"
	return 0
}

# need_captures: root on a machine whose kernel lets proftool load its BPF program
need_captures() {
	[ "$(id -u)" = 0 ] || skip "captures need root (or CAP_BPF and CAP_PERFMON)"
	run "$TOOLS/capturecheck"
	[ "$status" -eq 0 ] || skip "$output"
}

# copied FILE: the percentage of Python stacks the header says were copied at the sample, or none
copied() {
	"$PROFTOOL" report --limit 0 "$1" |
		sed -n 's/^Python stacks: [0-9]* of [0-9]* samples (\([0-9.]*\)%) copied as they were taken .*/\1/p'
}

# per_sample TRACE SAMPLES CALL: CALL's count in strace's -c summary TRACE, per sample
per_sample() {
	awk -v c="$3" -v n="$2" '$NF == c { k = $4 } END { printf "%.3f\n", (k + 0) / n }' "$1"
}

# pyshare NAME: the share of the samples of the folded report on stdin under Python function NAME
pyshare() {
	awk -v f="($1)" '{ n = $NF; t += n; if (index($0, f)) hit += n } END { printf "%.1f\n", t ? 100 * hit / t : 0 }'
}

samples_of() {
	pjson "$1" 'len(p["samples"]["thread"])'
}

@test "python capture: a Python job's stacks are copied at the sample: no process_vm_readv and no wake-up per sample" {
	need_captures
	need strace strace
	# (LeakSanitizer cannot run under strace; the other tests check for leaks)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -c -o on.trace -e trace=process_vm_readv,epoll_wait \
		"$PROFTOOL" record -q --python-capture auto -o on.data -- "$PYTHON3" "$PYDIR/split.py" 1 >/dev/null
	n=$(samples_of on.data)
	at_least "$n" 500
	pvr=$(per_sample on.trace "$n" process_vm_readv)
	ew=$(per_sample on.trace "$n" epoll_wait)
	echo "captures: $n samples, process_vm_readv $pvr, epoll_wait $ew per sample" >&3
	# what is left: a code object's header checked again every 100 ms (at most once a sweep:
	# when a quarter of the buffer has filled, or every 100 ms), and the reads of a start (0.20 here; 0.33 once, over 1083 samples: what does not grow
	# with the run weighs more in a short one), against 1.2 to 1.3 without captures
	awk -v a="$pvr" -v b="$ew" 'BEGIN { exit !(a <= 0.45 && b <= 0.25) }'
	at_least "$(copied on.data)" 90
	# the same job read from the process (--python-capture off): a call per sample, and no
	# header line; a wake-up per sample too, but a loaded machine's drain thread finds a few
	# at once (CI: 0.70)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -c -o off.trace -e trace=process_vm_readv,epoll_wait \
		"$PROFTOOL" record -q --python-capture off -o off.data -- "$PYTHON3" "$PYDIR/split.py" 1 >/dev/null
	n=$(samples_of off.data)
	pvr=$(per_sample off.trace "$n" process_vm_readv)
	ew=$(per_sample off.trace "$n" epoll_wait)
	echo "--python-capture off: $n samples, process_vm_readv $pvr, epoll_wait $ew per sample" >&3
	at_least "$pvr" 0.8
	at_least "$ew" 0.4
	[ -z "$(copied off.data)" ]
	# and the functions' split is the same both ways, within 8 points: under strace -f every
	# system call of the target stops it too (CI's ASan run: load_batch at 44.6 %; python.bats
	# checks the split within 5 without strace)
	for f in on.data off.data; do
		"$PROFTOOL" report --format folded "$f" >folded
		echo "$f: load_batch $(pyshare load_batch <folded)%, Trainer.step $(pyshare Trainer.step <folded)%" >&3
		near "$(pyshare load_batch <folded)" 50 8
		near "$(pyshare Trainer.step <folded)" 30 8
	done
}

# memo_check PY: with PROFTOOL_DEBUG_PYTHON, each stack taken from its thread's last capture
# (symbolize/pymemo.c) is walked as well: what the two found must be the same, for loops,
# generators, threads, exceptions and recursion (mostly deeper than a capture holds: walked).
# And the walks check their code objects against the headers the capture copied: a code
# object's header is read from the process only for the frames a capture did not hold (a
# thread's first stack, before it is registered; deep.py's frames past the 64th)
memo_check() {
	local f hits codes args
	# each long enough for its bounds (gens.py's first stacks read 169-193 code objects, so
	# it needs 4,000 checked), not longer: with every stack walked twice, the three
	# interpreters' runs at full length took 56 s
	for f in split:0.4 gens:0.7 threads:0.4 exceptions:0.5 deep:; do
		args=${f#*:}
		f=${f%%:*}
		# shellcheck disable=SC2086
		PROFTOOL_DEBUG_PYTHON=1 "$PROFTOOL" record -q -o m.data -- "$1" "$PYDIR/$f.py" $args >/dev/null 2>err.txt
		# "N Python stacks taken from the thread's last capture, D differed from a walk; walks
		# checked H code objects from the capture, read R", a line a process
		hits=$(sed -n 's/.* \([0-9][0-9]*\) Python stacks taken from .* \([0-9][0-9]*\) differed from a walk;.*/\1 \2/p' err.txt |
			awk '{ h += $1; d += $2 } END { print h + 0, d + 0 }')
		codes=$(sed -n 's/.* walks checked \([0-9][0-9]*\) code objects from the capture, read \([0-9][0-9]*\);.*/\1 \2/p' err.txt |
			awk '{ h += $1; r += $2 } END { print h + 0, r + 0 }')
		echo "$f.py: ${hits% *} stacks from the last capture, ${hits#* } differed from a walk;" \
			"code objects checked from the capture ${codes% *}, read ${codes#* }" >&3
		[ "${hits#* }" = 0 ]
		[ "$f" = deep ] || at_least "${hits% *}" 100
		at_least "${codes% *}" 500
		awk -v h="${codes% *}" -v r="${codes#* }" 'BEGIN { exit !(r * 20 <= h) }'
	done
}

@test "python capture: a stack taken from its thread's last capture is the one a walk finds (Debian's python3)" {
	need_captures
	use_python debian
	memo_check "$PY"
}

@test "python capture: a stack taken from its thread's last capture is the one a walk finds (pyenv 3.12, shims on the C stack)" {
	need_captures
	use_python 3.12
	memo_check "$PY"
}

@test "python capture: a stack taken from its thread's last capture is the one a walk finds (pyenv 3.13)" {
	need_captures
	use_python 3.13
	memo_check "$PY"
}

@test "python capture: the default where BPF is allowed, for record and attach" {
	need_captures
	record_to d.data -- "$PYTHON3" "$PYDIR/split.py" 0.5
	at_least "$(copied d.data)" 90
	"$PYTHON3" "$PYDIR/split.py" 3 >/dev/null &
	pid=$!
	sleep 0.3
	"$PROFTOOL" attach -q --duration 1 -o a.data "$pid"
	kill "$pid" 2>/dev/null || true
	wait "$pid" || true
	at_least "$(copied a.data)" 90
}

# turns.py behind a shell script that runs the interpreter through a variable: without
# captures, --python auto does not know the command is Python and reads late (14 % of the
# SHA-256 samples under the wrong function, README); with them, the stacks are as sampled
@test "python capture: behind a launcher that hides Python, --python auto reads turns.py as sampled" {
	need_captures
	printf '#!/bin/sh\nexec "$TURNS_PY" "%s" 2\n' "$PYDIR/turns.py" >turns.sh
	chmod +x turns.sh
	TURNS_PY=$PYTHON3 record_to t.data --python-capture auto -- ./turns.sh
	bad=$("$PROFTOOL" report --frames all --format folded t.data | awk '
		{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";") }
		tolower(line) ~ /sha2|libcrypto/ {
			for (j = k; j >= 1 && fr[j] !~ /\.py:[0-9]+\(/; j--)
				;
			with += n
			if (j < 1 || fr[j] !~ /\(hashing\)$/) bad += n
		}
		END { printf "%.2f\n", with ? 100 * bad / with : 100 }')
	echo "SHA-256 samples not under hashing: $bad%" >&3
	# (as python.bats allows: a process's first sample, before it is described, is read as
	# it wakes proftool, on whichever CPU; CI's ASan run, before that wake-up, had 1.11 %)
	awk -v b="$bad" 'BEGIN { exit !(b <= 2) }'
	at_least "$(copied t.data)" 90
}

@test "python capture: threads started later, forked workers and an exec'd interpreter are copied too" {
	need_captures
	record_to t.data --python-capture auto -- "$PYTHON3" "$PYDIR/threads.py" 1
	at_least "$(copied t.data)" 80
	record_to p.data --python-capture auto -- "$PYTHON3" "$PYDIR/procs.py" fork 0.6
	at_least "$(copied p.data)" 80
	record_to e.data --python-capture auto -- sh -c "exec $PYTHON3 $PYDIR/split.py 0.5"
	at_least "$(copied e.data)" 80
}

# What has nothing to copy is marked so once seen: the samples of a program without Python,
# and of a thread that never ran Python in a Python process, wake proftool no more than a
# Python thread's do (without that mark, each of theirs would wake it: 0.6 a sample here)
@test "python capture: a program without Python, and a native thread beside Python, do not wake proftool per sample" {
	need_captures
	need strace strace
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -c -o c.trace -e trace=epoll_wait \
		"$PROFTOOL" record -q --python-capture auto -o c.data -- "$WORKLOADS/threads" 0.5 >/dev/null
	n=$(samples_of c.data)
	ew=$(per_sample c.trace "$n" epoll_wait)
	echo "C program: $n samples, epoll_wait $ew per sample" >&3
	awk -v b="$ew" 'BEGIN { exit !(b <= 0.25) }'
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -c -o ct.trace -e trace=epoll_wait \
		"$PROFTOOL" record -q --python-capture auto -o ct.data -- "$PYTHON3" "$PYDIR/cthread.py" \
		"$WORKLOADS/libcspin.so" 1 >/dev/null
	n=$(samples_of ct.data)
	ew=$(per_sample ct.trace "$n" epoll_wait)
	echo "cthread.py: $n samples, epoll_wait $ew per sample" >&3
	awk -v b="$ew" 'BEGIN { exit !(b <= 0.25) }'
	# and the Python thread's stacks are still copied, the C thread's have no Python frames
	"$PROFTOOL" report --format folded ct.data >folded
	at_least "$(pyshare python_side <folded)" 35
	[ "$(grep -c 'spin_in_c.*\.py:\|\.py:.*spin_in_c' folded)" -eq 0 ]
}

# A long job meets its rarely run functions one by one for hours; each is new to proftool's
# cache, and lives as long as its module: no reason to hurry (hurrying after each, for
# 50 ms, took 1.2 epoll_wait a sample here, and a third of proftool's CPU on a PyTorch job
# whose workers each met a few). Code that is gone soon after it runs still hurries it, and
# keeps its names: module bodies and strings run by exec.
@test "python capture: functions met one after another do not wake proftool per sample; module bodies and exec'd code keep their names" {
	need_captures
	need strace strace
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -c -o f.trace -e trace=epoll_wait \
		"$PROFTOOL" record -q --python-capture auto -o f.data -- "$PYTHON3" "$PYDIR/imports.py" fresh 80 20 >/dev/null
	n=$(samples_of f.data)
	ew=$(per_sample f.trace "$n" epoll_wait)
	"$PROFTOOL" report --format folded f.data >folded
	share=$(awk '{ t += $NF; if ($0 ~ /\(fn_[0-9]+\)/) hit += $NF } END { printf "%.1f\n", 100 * hit / t }' folded)
	echo "fresh: $n samples, epoll_wait $ew per sample, $share% in the fn_ functions" >&3
	awk -v b="$ew" 'BEGIN { exit !(b <= 0.4) }'
	at_least "$share" 75
	# each of the 80 is named
	[ "$(grep -o '(fn_[0-9]*)' folded | sort -u | wc -l)" -ge 75 ]
	record_to g.data --python-capture auto -- "$PYTHON3" "$PYDIR/imports.py" gone 40 20
	"$PROFTOOL" report --format folded g.data >folded
	read -r mods strs settle < <(awk '{ n = $NF; t += n
		if ($0 ~ /gone_[0-9]+\.py:[0-9]+\(<module>\)/) g += n
		else if ($0 ~ /<string>:[0-9]+\(<module>\)/) s += n
		else if ($0 ~ /\(settle\)/) st += n }
		END { printf "%.1f %.1f %.1f\n", 100 * g / t, 100 * s / t, 100 * st / t }' folded)
	echo "gone: module bodies $mods%, exec'd strings $strs%, settle $settle%" >&3
	# a quarter each (21.9-26.8 % here): a frame whose code object is lost gives its
	# samples to its caller, gone()
	at_least "$mods" 18
	at_least "$strs" 18
	near "$settle" 49 6
}

# cow.py's forked workers fault a list in and exit within tens of milliseconds. The first
# sample of a process the program does not know wakes proftool, which reads it at once and
# describes the process; the samples copied after that are read when the buffer is swept,
# often after the worker has exited, and take their code objects from what proftool last
# read of them. Without both, up to 12 % of a worker's samples lost their Python frames.
@test "python capture: forked workers that exit within milliseconds keep their Python frames" {
	need_captures
	for ev in cpu-clock page-faults; do
		record_to cow.data --python-capture auto -e "$ev" -- "$PYTHON3" "$PYDIR/cow.py" 3 2
		"$PROFTOOL" report --per-process --format folded cow.data >all.folded
		parent=$(head -1 all.folded | sed 's/;.*//')
		workers=$(sed 's/;.*//' all.folded | sort -u | grep -vxF "$parent" | sed 's/.*(pid \([0-9]*\)).*/\1/')
		[ "$(wc -w <<<"$workers")" -eq 3 ]
		for w in $workers; do
			"$PROFTOOL" report --pid "$w" --format folded cow.data >w.folded
			echo "$ev: worker $w: $(pyshare read_all <w.folded)% under read_all" >&3
			near "$(pyshare read_all <w.folded)" 100 10
		done
	done
}

@test "python capture: a stack deeper than the copy is completed from the process, whole" {
	need_captures
	record_to d.data --python-capture auto -- "$PYTHON3" "$PYDIR/deep.py" 200 0.3
	"$PROFTOOL" report --format folded d.data >folded
	# the spinning innermost call's samples hold all 201 frames
	awk '{ n = $NF; c = gsub(/\(recurse\)/, "&"); if (c) with += n; if (c == 201) hit += n }
		END { exit !(with && hit >= 0.9 * with) }' folded
}

@test "python capture: not for another user: the stacks are read from the process, and the header says nothing of copies" {
	need_nobody
	public_dir "$PYDIR/split.py"
	(cd "$pub/out" && "${AS_NOBODY[@]}" "$pub/proftool" record -q --python-capture auto -o n.data -- \
		"$PYTHON3" "$pub/split.py" 1.5) ||
		skip "nobody may not record here (perf_event_paranoid): see nonroot.bats"
	[ -z "$(copied "$pub/out/n.data")" ]
	"$PROFTOOL" report --format folded "$pub/out/n.data" >folded
	# 1.5 s, not 0.5: at 0.5 s (about 500 samples) a fresh-clone make check once got 41 %
	near "$(pyshare load_batch <folded)" 50 8
}

# In a PID namespace of its own (a container's), the program would see the host's pids and
# the samples the namespace's: never a match, so no copies, and every sample would wake
# proftool on one drain thread. proftool reads after the sample there, as off does.
@test "python capture: in a PID namespace of its own, the stacks are read from the process, and the header says nothing of copies" {
	need_captures
	need unshare util-linux
	unshare -p -f --mount-proc true 2>/dev/null || skip "this machine refuses a new PID namespace"
	unshare -p -f --mount-proc "$PROFTOOL" record -q -o ns.data -- "$PYTHON3" "$PYDIR/split.py" 0.5 >/dev/null
	[ -z "$(copied ns.data)" ]
	"$PROFTOOL" report --format folded ns.data >folded
	near "$(pyshare load_batch <folded)" 50 8
}

@test "python capture: --python-capture takes auto or off; anything else is a usage error" {
	run --separate-stderr "$PROFTOOL" record --python-capture sometimes -o x.data -- true
	[ "$status" -eq 2 ]
	one_error_line
	[[ "$stderr" == *"--python-capture takes auto or off"* ]]
}
