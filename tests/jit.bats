#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Code without unwind information: JIT code (named from perf maps, else one row per
# mapping) and assembly without usable CFI (tests/workloads/nocfi.c). Each of nocfi's modes
# runs the same loop half the time through run_cfi -> cfi_loop (with CFI) and half through
# the mode's way.

load helpers

: "${WORKLOADS_NOFP:?run the suites through 'make check'}"

teardown() {
	[ -n "${target:-}" ] && kill -KILL "$target" 2>/dev/null || true
	[ -z "${mapfile:-}" ] || rm -f "$mapfile"
	return 0
}

# pid_of PROFILE: the pid of the profile's (only) process
pid_of() {
	pjson "$1" 'p["processes"][0]["pid"]'
}

# jit_leaves: the distinct innermost frames of the folded stacks on stdin that are JIT code
# nobody named
jit_leaves() {
	awk '{ sub(/ [0-9]+$/, ""); k = split($0, f, ";"); if (f[k] ~ /^\[jit\] /) print f[k] }' | sort -u
}

@test "JIT code nobody named is one row per mapping, and the header says how to name it" {
	for wl in "$WORKLOADS" "$WORKLOADS_NOFP"; do
		record_to j.data -- "$wl/nocfi" jit 0.5
		run --separate-stderr "$PROFTOOL" report --format folded j.data
		[ "$status" -eq 0 ]
		echo "$output" >j.folded
		# one mapping, one name: [jit] anon 0xSTART-0xEND
		run jit_leaves <j.folded
		[ "${#lines[@]}" -eq 1 ] || { echo "$output"; false; }
		[[ "${lines[0]}" =~ ^\[jit\]\ anon\ 0x[0-9a-f]+-0x[0-9a-f]+$ ]]
		leaf=${lines[0]}
		near "$(self_share "$leaf" <j.folded)" 50 5
		near "$(self_share cfi_loop <j.folded)" 50 5
		run ! grep -q '\[anon\]' j.folded
		run --separate-stderr "$PROFTOOL" report --limit 0 j.data
		[ "$status" -eq 0 ]
		grep -qF "%) in 1 mapping of JIT code nobody named; a JIT names its code in /tmp/perf-PID.map when asked: ONEDNN_JIT_PROFILE=2 in the environment the process starts with (oneDNN; record sets it), node --perf-basic-prof, python3 -X perf" <<<"$output"
		grep -qF "  $leaf" <<<"$output"
	done
}

@test "attach: the header says that JIT code was unnamed and how to name it" {
	"$WORKLOADS_NOFP/nocfi" jit 20 >/dev/null 2>&1 &
	target=$!
	burn_ticks "$target" 10
	run --separate-stderr "$PROFTOOL" attach -q --duration 1 -o a.data "$target"
	[ "$status" -eq 0 ]
	run --separate-stderr "$PROFTOOL" report a.data
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"JIT code: "*" samples ("*"%) in 1 mapping of JIT code nobody named; a JIT names its code in /tmp/perf-PID.map when asked: ONEDNN_JIT_PROFILE=2 in the environment the process starts with"* ]]
}

@test "record sets ONEDNN_JIT_PROFILE=2, names the code from the map it causes and removes that map" {
	record_to o.data -- "$WORKLOADS_NOFP/nocfi" jitonednn 0.5
	mapfile=/tmp/perf-$(pid_of o.data).map
	[ ! -e "$mapfile" ]
	run --separate-stderr "$PROFTOOL" report --format folded o.data
	[ "$status" -eq 0 ]
	near "$(self_share jit_fixture_kernel <<<"$output")" 50 5
	run --separate-stderr "$PROFTOOL" report o.data
	[[ "$output" == *"[jit](jit_fixture_kernel)"* ]]
	[[ "$output" != *"JIT code: "* ]]
}

@test "a value of ONEDNN_JIT_PROFILE the user chose stays, and so does the map it causes" {
	ONEDNN_JIT_PROFILE=0 record_to z.data -- "$WORKLOADS_NOFP/nocfi" jitonednn 0.2
	mapfile=/tmp/perf-$(pid_of z.data).map
	[ ! -e "$mapfile" ]
	[ "$("$PROFTOOL" report --format folded z.data | jit_leaves | wc -l)" -eq 1 ]
	ONEDNN_JIT_PROFILE=2 record_to u.data -- "$WORKLOADS_NOFP/nocfi" jitonednn 0.2
	mapfile=/tmp/perf-$(pid_of u.data).map
	[ -s "$mapfile" ]
	run --separate-stderr "$PROFTOOL" report --format folded u.data
	near "$(self_share jit_fixture_kernel <<<"$output")" 50 8
}

@test "a perf map the program writes of its own accord stays" {
	record_to m.data -- "$WORKLOADS_NOFP/nocfi" jitmap 0.2
	mapfile=/tmp/perf-$(pid_of m.data).map
	[ -s "$mapfile" ]
	grep -q ' jitted_loop$' "$mapfile"
	run --separate-stderr "$PROFTOOL" report --format folded m.data
	near "$(self_share jitted_loop <<<"$output")" 50 8
}

# oneDNN itself (libdnnl2 2.6): its kernels are named from the map record has it write
@test "oneDNN's JIT kernels are named, and its map removed" {
	[ -x "$WORKLOADS/dnnlprims" ] ||
		skip "$WORKLOADS/dnnlprims was not built (make builds it where libdnnl-dev is installed)"
	record_to d.data -- "$WORKLOADS/dnnlprims" 40000
	mapfile=/tmp/perf-$(pid_of d.data).map
	[ ! -e "$mapfile" ]
	run --separate-stderr "$PROFTOOL" report --format folded d.data
	[ "$status" -eq 0 ]
	# every JIT leaf named: oneDNN's generators are all jit_* (measured: 100 %; the kernels
	# are 7.7-10.7 % of the samples here, and were 2.8 % once in CI: present, at >= 1 %)
	named=$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[k] ~ /^_?jit_/) a += n; if (f[k] ~ /^\[jit\] /) u += n }
		END { printf "%.1f\n", a + u ? 100 * a / (a + u) : 0 }' <<<"$output")
	at_least "$named" 90
	at_least "$(awk '{ n = $NF; t += n; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[k] ~ /^_?jit_/) a += n } END { printf "%.1f\n", 100 * a / t }' <<<"$output")" 1
}

# ---- callers of code without usable CFI: found by scanning the stack ----

# exact_stacks FOLDED LEAF CALLER: every stack of the folded report FOLDED with LEAF innermost
# (the kernel's frames aside) is _start ... main;CALLER;LEAF (CALLER: one frame or more), and
# so are >= 95 % of LEAF's samples, and every stack of cfi_loop is main;run_cfi;cfi_loop: a
# scan invents no frame and loses none
exact_stacks() {
	local want="_start;__libc_start_main;__libc_start_call_main;main;$3;$2"
	awk -v leaf="$2" -v want="$want" '{
		n = $NF; sub(/ [0-9]+$/, ""); gsub(/;\[kernel\] [^;]*/, "")
		k = split($0, f, ";")
		if (f[k] == leaf) { t += n; if ($0 == want) ok += n; else bad[$0] += n }
		if (f[k] == "cfi_loop" && $0 !~ /;main;run_cfi;cfi_loop$/) wrong[$0] += n
	} END {
		for (s in bad) print "other stack of " leaf ": " s " (" bad[s] ")" > "/dev/stderr"
		for (s in wrong) { print "wrong stack of cfi_loop: " s > "/dev/stderr"; exit 1 }
		if (!t || ok < 0.95 * t) exit 1
		# a stack that is not the whole one may only be cut short, never a different one
		for (s in bad) if (index(want, s) != length(want) - length(s) + 1) exit 1
	}' "$1"
}

# The halves are the same work, so half the samples each: perf's cpu-clock keeps to that within
# 5 points. The ptrace backend's ticks are its own thread's, and under load (CI's ASan phase on
# 2 CPUs: one half at 57.8 %; beside two busy loops here 46.5-53.8 %) they wander further, so
# within 9 points for it; and for both, the two halves are >= 95 % of the samples: a sample the
# scan gave up on, or put under another function, would be missing there.
@test "the callers of assembly without CFI (innermost or in the middle), with a red-zone CFA and of JIT code are found, both backends" {
	local tol
	for backend in perf ptrace; do
		tol=5
		[ "$backend" = perf ] || tol=9
		for wl in "$WORKLOADS" "$WORKLOADS_NOFP"; do
			for mode in leaf:run_leaf:nocfi_loop redzone:run_redzone:redzone_loop \
				mid:"run_mid;mid_nocfi":mid_leaf jit:run_jit:jit; do
				IFS=: read -r m caller leaf <<<"$mode"
				record_to s.data --backend "$backend" -- "$wl/nocfi" "$m" 0.3
				run --separate-stderr "$PROFTOOL" report --format folded s.data
				[ "$status" -eq 0 ]
				echo "$output" >s.folded
				[ "$leaf" != jit ] || leaf=$(jit_leaves <s.folded)
				exact_stacks s.folded "$leaf" "$caller" ||
					{ echo "$backend $wl $m"; sort -k2 -nr s.folded | head; false; }
				near "$(self_share "$leaf" <s.folded)" 50 "$tol"
				near "$(self_share cfi_loop <s.folded)" 50 "$tol"
				at_least "$(awk -v a="$(self_share "$leaf" <s.folded)" \
					-v b="$(self_share cfi_loop <s.folded)" 'BEGIN { print a + b }')" 95
				# the header counts the stacks scanning completed
				run --separate-stderr "$PROFTOOL" report s.data
				[[ "$output" =~ Stack\ scanning:\ ([0-9]+)\ of\ ([0-9]+)\ stacks ]]
				near "$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))" 50 "$((tol + 1))"
				at_least "$(pjson s.data 'p["meta"]["unwind_scanned"]')" 1
			done
		done
	done
}

@test "a stack with CFI all the way is not scanned" {
	record_to c.data -- "$WORKLOADS_NOFP/split" 0.2
	run --separate-stderr "$PROFTOOL" report c.data
	[ "$status" -eq 0 ]
	[[ "$output" != *"Stack scanning:"* ]]
	[ "$(pjson c.data '"unwind_scanned" in p["meta"]')" = False ]
}

# OpenSSL's SHA-256 AVX2 rounds (hashlib.sha256 from Python) keep their frame address in the
# red zone and their frame aligned to 1 KiB: up to 12 stale return addresses lie between the
# stack pointer and the live one. When the scan gave up after 8 candidates, a run in three
# (as the stack happened to lie) lost the callers of 28 to 63 % of the samples, so four runs:
# every one keeps them.
@test "the callers of OpenSSL's SHA-256 rounds are found in every run" {
	for i in 1 2 3 4; do
		record_to h.data -- "$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/hashing.py" 0.2
		run --separate-stderr "$PROFTOOL" report --frames all --format folded h.data
		[ "$status" -eq 0 ]
		whole=$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); gsub(/;\[kernel\] [^;]*/, ""); k = split($0, f, ";")
			if (f[k] !~ /^libcrypto\.so/) next
			t += n; if ($0 ~ /^_start;.*hash_buffers\);.*_hashlib/) ok += n }
			END { printf "%.1f %d\n", t ? 100 * ok / t : 0, t }' <<<"$output")
		echo "run $i: $whole (% whole, samples in libcrypto)"
		at_least "${whole% *}" 95
		at_least "${whole#* }" 100
	done
}

@test "--unwind-scan off: no stack is scanned, the frame pointer is followed instead" {
	for wl in "$WORKLOADS" "$WORKLOADS_NOFP"; do
		record_to o.data --unwind-scan off -- "$wl/nocfi" leaf 0.2
		run --separate-stderr "$PROFTOOL" report o.data
		[ "$status" -eq 0 ]
		[[ "$output" != *"Stack scanning:"* ]]
		[ "$(pjson o.data '"unwind_scanned" in p["meta"]')" = False ]
		# run_leaf's frame is where the frame pointer skips it, or nowhere
		[ "$(ancestor_share nocfi_loop run_leaf < <("$PROFTOOL" report --format folded o.data))" = 0.0 ]
	done
	run --separate-stderr "$PROFTOOL" record --unwind-scan maybe -- true
	[ "$status" -eq 2 ]
	[ "$stderr" = "proftool: --unwind-scan takes on or off, not 'maybe'; see 'proftool record --help'" ]
}

# ---- PyTorch's convolutions: oneDNN's JIT kernels under libtorch ----

# jit_figures PROFILE: "SAMPLES CALLER NAMED" of the samples whose innermost frame is JIT code
# (the kernel's frames aside): how many, the % with a native frame (not JIT code, not Python)
# directly above their JIT frames, and the % whose JIT code is named (not '[jit] anon ...').
# Stacks with no native caller go to stderr.
jit_figures() {
	"$PROFTOOL" report --module '[jit]' --format folded "$1" | awk '
		{ n = $NF; sub(/ [0-9]+$/, ""); gsub(/;\[kernel\] [^;]*/, ""); k = split($0, f, ";")
		  t += n; if (f[k] !~ /^\[jit\] anon /) named += n
		  st[NR] = $0; cnt[NR] = n; jit[f[k]] = 1 }
		END {
			# the JIT frames are the innermost ones: the leaves, or unnamed JIT code
			for (i = 1; i <= NR; i++) {
				k = split(st[i], f, ";")
				for (j = k; j > 0 && (f[j] in jit || f[j] ~ /^\[jit\] /); j--)
					;
				if (j > 0 && f[j] !~ /\.py:[0-9]+\(|^<[^>]*>:[0-9]+\(|^\[/)
					ok += cnt[i]
				else
					print "no native caller (" cnt[i] "): " st[i] > "/dev/stderr"
			}
			printf "%d %.1f %.1f\n", t, t ? 100 * ok / t : 0, t ? 100 * named / t : 0
		}'
}

# need_torch: Debian's python3-torch, a workload of this suite, not something the set-up
# installs: plain skip without it
need_torch() {
	"$PYTHON3" -c 'import torch' 2>/dev/null ||
		skip "$PYTHON3 cannot import torch (Debian package python3-torch; extra coverage)"
}

# Measured (tests/workloads/py/conv.py 3; the JIT kernels about half the samples): 100 % of
# the JIT samples with a native caller and named, perf and ptrace backends. Before callers
# were found through CPython's tail calls (PyObject_Vectorcall -> _PyObject_MakeTpCall),
# the forward convolution's kernels had none.
@test "PyTorch's convolutions: oneDNN's JIT kernels keep their native callers and are named, both backends" {
	need_torch
	for backend in perf ptrace; do
		record_to t.data --backend "$backend" -- "$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/conv.py" 3
		run --separate-stderr jit_figures t.data
		[ "$status" -eq 0 ]
		read -r n caller named <<<"$output"
		echo "$backend: $n JIT samples, $caller % with a native caller, $named % named"
		echo "$stderr" | head -n 20
		at_least "$n" 500
		at_least "$caller" 90
		at_least "$named" 60
		# and above the native callers, the Python ones
		at_least "$("$PROFTOOL" report --module '[jit]' --format folded t.data | awk '
			{ n = $NF; t += n; if ($0 ~ /conv\.py:[0-9]+\(train_step\);/) ok += n }
			END { printf "%.1f\n", t ? 100 * ok / t : 0 }')" 90
	done
}

@test "PyTorch's convolutions: ONEDNN_JIT_PROFILE=0 in the environment stays, and the kernels are one row per mapping" {
	need_torch
	ONEDNN_JIT_PROFILE=0 record_to z.data -- "$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/conv.py" 1
	run --separate-stderr jit_figures z.data
	[ "$status" -eq 0 ]
	read -r n caller named <<<"$output"
	at_least "$n" 100
	at_least "$caller" 90
	[ "$named" = 0.0 ]
	run --separate-stderr "$PROFTOOL" report --limit 0 z.data
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"JIT code: "*" mapping"*" of JIT code nobody named; a JIT names its code in /tmp/perf-PID.map when asked: ONEDNN_JIT_PROFILE=2"* ]]
	[[ "$output" =~ \[jit\]\ anon\ 0x[0-9a-f]+-0x[0-9a-f]+ ]]
}
