#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The fault table: what a user sees when the target, the machine or another user misbehaves
# around a recording. Each case checks the exit status, that the profile is complete and
# readable, and that nothing is left behind: no temporary '.NAME.XXXXXX' file, no stopped or
# traced target, no stray process. (Crashing targets, SIGINT/SIGTERM, -o into a missing
# directory and -o /dev/null are in record.bats, attach.bats and errors.bats.)

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	mounts=()       # unmounted in teardown
	tmpdirs=()      # directories outside BATS_TEST_TMPDIR, removed in teardown (and $pub)
	pids=()         # PID:STARTTIME of processes killed in teardown if still there
}

# track PID: kill PID in teardown, if it is still the process started here
track() {
	pids+=("$1:$(starttime "$1")")
}

# starttime PID: when PID started (field 22 of /proc/PID/stat), to tell it from a reused pid
starttime() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $20 }'
}

teardown() {
	local p m

	for p in "${pids[@]}"; do
		if [ -n "${p#*:}" ] && [ "$(starttime "${p%%:*}")" = "${p#*:}" ]; then
			kill -CONT "${p%%:*}" 2>/dev/null || true
			kill -KILL "${p%%:*}" 2>/dev/null || true
		fi
	done
	cd "$BATS_TEST_TMPDIR" || true
	for m in "${mounts[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	for m in "${tmpdirs[@]}"; do
		rm -rf "$m"
	done
	[ -z "${pub:-}" ] || rm -rf "$pub"
	return 0
}

# ---- helpers ----

# untouched PID: running or sleeping (not stopped, not traced), with no tracer
untouched() {
	local s

	s=$(state "$1")
	[[ "$s" == [RSD] ]] || { echo "process $1 is in state $s" >&2; return 1; }
	[ "$(tracer "$1")" = 0 ] || { echo "process $1 is traced by $(tracer "$1")" >&2; return 1; }
}

# no_temp_files DIR: no temporary profile '.NAME.XXXXXX' is left in DIR
no_temp_files() {
	local left

	left=$(ls -A "$1" | grep -E '^\..+\.[A-Za-z0-9]{6}$' || true)
	[ -z "$left" ] || { echo "temporary files left in $1: $left" >&2; return 1; }
}

# no_process PATTERN: no process whose command line matches PATTERN (pgrep -f) is left
no_process() {
	local left

	left=$(pgrep -f "$1" || true)
	[ -z "$left" ] || { echo "processes left: $(ps -o pid,stat,args -p "${left//$'\n'/,}")" >&2; return 1; }
}

# peak_rss COMMAND...: runs COMMAND (output as it is), prints the peak resident set size in
# KiB of COMMAND and what it waited for, exits with COMMAND's status
peak_rss() {
	python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r)' "$@"
}

# mount_tmpfs DIR OPTIONS: a small tmpfs at DIR, unmounted in teardown; skips when not allowed
mount_tmpfs() {
	[ "$(id -u)" = 0 ] || skip "needs root to mount a small tmpfs"
	mkdir -p "$1"
	mount -t tmpfs -o "$2" proftool-faults "$1" 2>/dev/null || skip "mounting a tmpfs is not permitted here"
	mounts+=("$PWD/$1")
}

# Starts record in the background on a workload that runs until killed, waits until it has
# burnt some CPU; record's pid in $rec, the workload's in $child.
start_long_record() {
	"$PROFTOOL" record -q -o "$1" -- "$WORKLOADS/exitcode" "$2" 100 &
	rec=$!
	track "$rec"
	child=$(wait_child "$rec" exitcode)
	track "$child"
	burn_ticks "$child" 20
}

# ---- the target ----

# What the kernel does here, seen on Linux 6.x: a setuid exec under perf_event_open makes the
# task non-dumpable and the kernel takes the events off it (fs/exec.c calls
# perf_event_exit_task() when the new credentials are not the user's), so a user never gets
# samples (stack copies) of the privileged program; as root nothing changes unless the setuid
# owner is another user. Under ptrace the kernel ignores the setuid bit (LSM_UNSAFE_PTRACE) when
# the tracer could not trace the result: the program runs as the user, unprivileged, and is
# profiled; a program that needs its privileges then fails the way it does under strace.
@test "a target that execs a setuid program: nothing gained, the parts before and after profiled" {
	need_nobody
	public_dir "$WORKLOADS/suidexec"
	cp "$pub/suidexec" "$pub/suid"
	chown 0:0 "$pub/suid"
	chmod 4755 "$pub/suid"
	cd "$pub/out"

	# as root: the setuid-root program is profiled like any other
	run --separate-stderr "$pub/proftool" record -q -o root.data -- "$pub/suidexec" "$pub/suid"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$output" = "inner: ruid 0 euid 0 dumpable 1" ]
	run --separate-stderr "$pub/proftool" report --format folded root.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;before_exec_work "* ]]
	[[ "$output" == *"main;inside_setuid_work "* ]]
	[[ "$output" == *"main;after_exec_work "* ]]

	# as a user with perf: the program runs privileged, and none of it is sampled
	if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
		run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" record -q --backend perf -o perf.data \
			-- "$pub/suidexec" "$pub/suid"
		[ "$status" -eq 0 ] || { echo "$stderr"; false; }
		[ -z "$stderr" ]
		[ "$output" != "inner: ruid $nobody_uid euid $nobody_uid dumpable 1" ] ||
			skip "setuid bits have no effect here (a nosuid /tmp?)"
		[ "$output" = "inner: ruid $nobody_uid euid 0 dumpable 0" ]
		[ "$(stat -c %u perf.data)" = "$nobody_uid" ]
		run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" report --format folded perf.data
		[ "$status" -eq 0 ]
		[[ "$output" == *"main;before_exec_work "* ]]
		[[ "$output" == *"main;after_exec_work "* ]]
		[[ "$output" != *inside_setuid_work* ]]
	fi

	# as a user with ptrace: the setuid bit is ignored, the program runs as the user
	run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" record -q --backend ptrace -o ptrace.data \
		-- "$pub/suidexec" "$pub/suid"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$output" = "inner: ruid $nobody_uid euid $nobody_uid dumpable 1" ]
	run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" report --format folded ptrace.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;before_exec_work "* ]]
	[[ "$output" == *"main;inside_setuid_work "* ]] || { echo "$output"; false; }
	[[ "$output" == *"main;after_exec_work "* ]]
	no_temp_files .
	no_process "^$pub/"
}

@test "200 short-lived children in a burst: every process in the profile with its function" {
	# frame pointers: small records, so no sample is lost to a ring buffer that the burst
	# (200 runnable processes on a few CPUs) keeps proftool from draining
	run --separate-stderr "$PROFTOOL" record -g fp -o burst.data -- "$WORKLOADS/burst" 200
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[[ "$stderr" == "proftool: wrote burst.data: "*" samples, 0 lost, "* ]] ||
		skip_or_fail "samples were lost even with -g fp: $stderr"
	[ "$(pjson burst.data 'len(p["processes"])')" -eq 201 ]
	[ "$(pjson burst.data 'sum(pr["comm"] == "burst-child" and pr["ppid"] > 0 for pr in p["processes"])')" -eq 200 ]
	# each child burns about 5 ms: nearly every one has samples
	sampled=$(pjson burst.data 'len({p["threads"][t]["process"] for t in p["samples"]["thread"] if p["threads"][t]["comm"] == "burst-child"})')
	at_least "$sampled" 190
	run --separate-stderr "$PROFTOOL" report --format folded burst.data
	[ "$status" -eq 0 ]
	at_least "$(self_share burst_child_work <<<"$output")" 80
	# (CI's ASan run once had such a row, which 9 runs here did not: shown, to see why)
	unknown=$(grep '^\[unknown\]' <<<"$output" || true)
	[ -z "$unknown" ] || { echo "rows under [unknown]: $unknown"; false; }
	no_temp_files .
	no_process "^$WORKLOADS/burst 200"
}

@test "200 short-lived children with DWARF stacks: readable, losses said, stacks whole" {
	run --separate-stderr "$PROFTOOL" record -o burst.data -- "$WORKLOADS_NOFP/burst" 200
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	lost=$(pjson burst.data 'p["meta"]["lost"]')
	[[ "$stderr" == "proftool: wrote burst.data: "*" samples, $lost lost, "* ]]
	run --separate-stderr "$PROFTOOL" report burst.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"Lost samples: $lost ("* ]]
	[[ "$output" == *"burst.c:"*"(burst_child_work)"* ]]
	run --separate-stderr "$PROFTOOL" report --format folded burst.data
	at_least "$(ancestor_share burst_child_work main <<<"$output")" 95
	no_process "^$WORKLOADS_NOFP/burst 200"
}

@test "500 threads created and joined in a loop: every thread counted, memory bounded" {
	kib=$(peak_rss "$PROFTOOL" record -q -o loop.data -- "$WORKLOADS_NOFP/threadloop" 500)
	[ "$(pjson loop.data 'len(p["threads"])')" -eq 501 ]
	[ "$(pjson loop.data 'len(p["processes"])')" -eq 1 ]
	run --separate-stderr "$PROFTOOL" report loop.data
	[ "$status" -eq 0 ]
	# each thread burns about 2 ms: most have a sample or two (fewer if samples were lost)
	n=$(sed -n 's/.* from 1 process and \([0-9]*\) threads$/\1/p' <<<"$output")
	if [ "$(pjson loop.data 'p["meta"]["lost"]')" -eq 0 ]; then
		at_least "$n" 250
	else
		at_least "$n" 100
	fi
	[ "$n" -le 501 ]
	run --separate-stderr "$PROFTOOL" report --format folded loop.data
	at_least "$(self_share loop_thread_work <<<"$output")" 80
	at_least "$(ancestor_share loop_thread_work start_thread <<<"$output")" 95
	# a leak per thread (an unwinder, a stack copy) would show here: measured 28 MiB
	[ "$kib" -lt 204800 ] || { echo "peak RSS $kib KiB"; false; }
}

@test "a library loaded and unloaded in a loop: its hot function named, stacks whole at every address" {
	run --separate-stderr "$PROFTOOL" record -q -o dl.data -- "$WORKLOADS_NOFP/dlloop" \
		"$WORKLOADS_NOFP/libdlhot.so" "$WORKLOADS_NOFP/libdlcold.so" 20
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	# the scenario happened: the library came back at new addresses, the other one over it
	[[ "$output" =~ hot\ library\ at\ ([0-9]+)\ addresses,\ cold\ library\ where\ hot\ was\ ([0-9]+) ]]
	at_least "${BASH_REMATCH[1]}" 10
	at_least "${BASH_REMATCH[2]}" 10
	run --separate-stderr "$PROFTOOL" report dl.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"dlhot.c:"*"(hot_in_lib)"* ]]
	[[ "$output" == *"dlcold.c:"*"(cold_in_lib)"* ]]
	run --separate-stderr "$PROFTOOL" report --format folded dl.data
	echo "$output" >dl.folded
	near "$(self_share hot_in_lib <dl.folded)" 50 8
	near "$(self_share cold_in_lib <dl.folded)" 50 8
	# unwound through the right mapping: a load the unwinder did not know would stop here
	at_least "$(ancestor_share hot_in_lib call_lib <dl.folded)" 97
	at_least "$(ancestor_share cold_in_lib call_lib <dl.folded)" 97
	at_least "$(ancestor_share hot_in_lib main <dl.folded)" 97
}

# Code that moves: a second mapping of the program's own text is symbolized by file offset
# like the first (aliased_work, its stack whole); anonymous code has no symbols and no CFI,
# so it shows as JIT code nobody named, '[jit] anon 0xSTART-0xEND', one row per mapping
# (never per sampled address).
@test "code unmapped and mapped again elsewhere: no crash, samples where the code was" {
	run --separate-stderr "$PROFTOOL" record -q -o remap.data -- "$WORKLOADS_NOFP/remap" 20
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[[ "$output" =~ text\ alias\ at\ 20\ addresses ]]
	[[ "$output" =~ anonymous\ code\ at\ ([0-9]+)\ addresses ]]
	maps=${BASH_REMATCH[1]}
	run --separate-stderr "$PROFTOOL" report --format folded remap.data
	[ "$status" -eq 0 ]
	echo "$output" >remap.folded
	direct=$(self_share direct_work <remap.folded)
	aliased=$(self_share aliased_work <remap.folded)
	at_least "$direct" 20
	near "$aliased" "$direct" 8
	at_least "$(ancestor_share aliased_work main <remap.folded)" 95
	anon=$(awk '{ n = $NF; t += n; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[k] ~ /^\[jit\] anon 0x[0-9a-f]+-0x[0-9a-f]+$/) a += n } END { printf "%.1f\n", 100 * a / t }' remap.folded)
	at_least "$anon" 10
	rows=$(awk '{ sub(/ [0-9]+$/, ""); k = split($0, f, ";"); if (f[k] ~ /^\[jit\] /) print f[k] }' \
		remap.folded | sort -u | wc -l)
	[ "$rows" -ge 1 ] && [ "$rows" -le "$maps" ]
	run ! grep -q '\[anon\]' remap.folded
	run ! grep -q '^\[unknown\] ' remap.folded
}

@test "a target that closes every inherited file descriptor: profile complete, both backends" {
	for backend in perf ptrace; do
		run --separate-stderr "$PROFTOOL" record -q --backend "$backend" -o "fd-$backend.data" \
			-- "$WORKLOADS_NOFP/closefds"
		# closefds exits 1 if a descriptor survived its close loop
		[ "$status" -eq 0 ] || { echo "$backend: status $status: $stderr"; false; }
		[ -z "$stderr" ]
		run --separate-stderr "$PROFTOOL" report --format folded "fd-$backend.data"
		[ "$status" -eq 0 ]
		at_least "$(self_share after_close_work <<<"$output")" 85
		at_least "$(ancestor_share after_close_work main <<<"$output")" 95
	done
}

# ---- proftool's own signals and resources ----

@test "SIGHUP to record reaches the command; the profile is written" {
	start_long_record hup.data sleep
	kill -HUP "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 129 ]
	[ ! -d "/proc/$child" ]
	run --separate-stderr "$PROFTOOL" report --format folded hup.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;burn "* ]]
	no_temp_files .
}

# hup_attach BACKEND: attach with BACKEND, SIGHUP to proftool; it writes the profile, exits 0
# and leaves the target running, untouched, with no tracer on any of its threads.
hup_attach() {
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	track "$target"
	"$PROFTOOL" attach -q --backend "$1" -o hup.data "$target" &
	rec=$!
	track "$rec"
	wait_attached "$rec" "$target"
	burn_ticks "$target" 30
	kill -HUP "$rec"
	wait "$rec" && st=0 || st=$?
	[ "$st" -eq 0 ]
	untouched "$target"
	for t in /proc/"$target"/task/*; do
		[ "$(awk '/^TracerPid:/ { print $2 }' "$t/status")" = 0 ]
	done
	run --separate-stderr "$PROFTOOL" report --format folded hup.data
	[ "$status" -eq 0 ]
	[[ "$output" == *leaf_a* ]]
	no_temp_files .
}

@test "SIGHUP stops attach (perf backend): profile written, target running, untouched" {
	hup_attach perf
}

@test "SIGHUP stops attach (ptrace backend): profile written, target running, untraced" {
	hup_attach ptrace
}

# The ring buffers cannot be made smaller from the command line, so they are made to overflow
# the sure way: proftool is stopped (SIGSTOP) while its target burns 0.3 s of CPU, which at
# -F 10000 is 3000 samples of 32 KiB stack each against a few MiB of buffer. Which thread
# loses them is the scheduler's doing: a full ring buffer drops what its CPU runs, and a
# thread that ran alone while proftool was stopped loses them all (a Debian 12 chroot kept
# spin_odd at 68.6% of 50). So the header gives the bound (a share is off by at most the
# lost fraction) and the shares are held to it.
@test "ring buffers overflowing at -F 10000: the loss counted in the closing line and the header, the shares within its bound" {
	"$PROFTOOL" record -F 10000 -o over.data -- "$WORKLOADS_NOFP/spinners" 2 1 2>over.err &
	rec=$!
	track "$rec"
	child=$(wait_child "$rec" spinners)
	track "$child"
	burn_ticks "$child" 10
	kill -STOP "$rec"
	burn_ticks "$child" 30
	kill -CONT "$rec"
	wait "$rec" && st=0 || st=$?
	! grep -q 'perf_event_max_sample_rate' over.err || skip "$(cat over.err)"
	[ "$st" -eq 0 ] || { cat over.err; false; }
	[ "$(wc -l <over.err)" -eq 1 ]
	read -r samples lost < <(sed -n 's/^proftool: wrote over.data: \([0-9]*\) samples, \([0-9]*\) lost, .*/\1 \2/p' over.err)
	[ -n "$lost" ] || { cat over.err; false; }
	[ "$lost" -gt 0 ]
	[ "$(pjson over.data 'p["meta"]["lost"]')" -eq "$lost" ]
	run --separate-stderr "$PROFTOOL" report over.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"$samples samples over "* ]]
	pct=$(awk -v l="$lost" -v n="$samples" 'BEGIN { printf "%.1f", 100 * l / (l + n) }')
	[[ "$output" == *"Lost samples: $lost ($pct%), so a share below may be off by up to $pct points; "* ]] ||
		{ grep '^Lost' <<<"$output"; false; }
	# what was kept and what was lost add up to the CPU time sampled at 10 kHz
	total=$(pjson over.data '(len(p["samples"]["thread"]) + p["meta"]["lost"]) / (p["meta"]["cpu_time_ns"] / 1e9 * 10000)')
	near "$total" 1 0.3
	# the two threads do the same work: each share is within the bound of 50, give or take
	# 5 points of sampling noise
	run --separate-stderr "$PROFTOOL" report --format folded over.data
	[ "$status" -eq 0 ]
	odd=$(self_share spin_odd <<<"$output")
	even=$(self_share spin_even <<<"$output")
	echo "lost $pct%: spin_odd $odd%, spin_even $even%"
	near "$odd" 50 "$(awk -v p="$pct" 'BEGIN { print p + 5 }')"
	near "$even" 50 "$(awk -v p="$pct" 'BEGIN { print p + 5 }')"
	at_least "$(awk -v a="$odd" -v b="$even" 'BEGIN { print a + b }')" 95
	at_least "$(ancestor_share spin_odd start_thread <<<"$output")" 90
	no_temp_files .
}

@test "proftool's memory does not grow with the length of a recording" {
	# AddressSanitizer holds freed memory in quarantine (hundreds of MiB): RSS means nothing
	! { ldd "$PROFTOOL" 2>/dev/null | grep -q libasan; } || skip "an AddressSanitizer build (make asan)"
	# three times the work, three times the samples at -F 10000: a stack copy kept per
	# sample would add hundreds of MiB (measured: 33 and 36 MiB peak)
	need taskset util-linux
	# on two CPUs however many the machine has: under Linux 6.1 (Debian 12's) the ring-buffer
	# pages proftool has read count in its RSS, up to 4 MiB a CPU, and the longer run would
	# touch the buffers of more CPUs
	cpus=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0))[:2])))')
	short=$(peak_rss taskset -c "$cpus" "$PROFTOOL" record -q -F 10000 -o short.data -- "$WORKLOADS_NOFP/spinners" 2 0.3)
	long=$(peak_rss taskset -c "$cpus" "$PROFTOOL" record -q -F 10000 -o long.data -- "$WORKLOADS_NOFP/spinners" 2 0.9)
	[ $((long - short)) -lt 32768 ] || { echo "peak RSS $short KiB, then $long KiB"; false; }
	n_short=$(pjson short.data 'len(p["samples"]["thread"])')
	n_long=$(pjson long.data 'len(p["samples"]["thread"])')
	[ "$n_long" -gt "$n_short" ]
}

# Samples past a chunk (65536; PROFTOOL_SPILL_SAMPLES here) go to an unlinked file beside the
# output, so a long recording's memory stays flat (make longrun measures it over 10 minutes).
@test "samples spilled to a temporary file during recording: the same profile, nothing left" {
	need strace strace
	mkdir out
	# (LeakSanitizer cannot run under strace; the other tests check for leaks)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 PROFTOOL_SPILL_SAMPLES=100 run --separate-stderr \
		strace -f -qq -o trace -e trace=openat,pwrite64 \
		"$PROFTOOL" record -o out/p.data -- "$WORKLOADS/threads" 1
	[ "$status" -eq 0 ]
	# the spill file: opened unlinked in the output's directory, written in runs of 100 samples
	grep -E 'openat\(AT_FDCWD, "out", [^)]*O_TMPFILE' trace
	fd=$(grep -E 'O_TMPFILE' trace | sed 's/.* = //' | head -n1)
	# each run is written once while recording, then rewritten in place (symbolized, sorted):
	# 100 samples of 32 bytes
	runs=$(grep -E "pwrite64\($fd, .*, 3200, [0-9]+\)" trace | sed 's/.*, //; s/).*//' | sort -u | wc -l)
	[ "$runs" -ge 5 ]
	[ "$(ls -A out)" = p.data ]
	n=$(pjson out/p.data 'len(p["samples"]["thread"])')
	[[ "$stderr" == *"wrote out/p.data: $n samples"* ]]
	[ "$n" -ge $((runs * 100)) ]
	# in time order, every thread there, shares as without spilling
	[ "$(pjson out/p.data 'all(d >= 0 for d in p["samples"]["time_us_delta"][1:])')" = True ]
	run "$PROFTOOL" report --per-thread out/p.data
	[[ "$output" == *"worker-1"* && "$output" == *"worker-2"* && "$output" == *"worker-3"* ]]
	run --separate-stderr "$PROFTOOL" report --format folded out/p.data
	# 0.3 s of CPU in each worker, 0.2 s in main_spin
	for f in worker_fn_1 worker_fn_2 worker_fn_3; do
		near "$(self_share $f <<<"$output")" 27 7
	done
	near "$(self_share main_spin <<<"$output")" 18 7
	at_least "$(ancestor_share worker_fn_2 start_thread <<<"$output")" 95
}

@test "a disk too full for the spill file: samples kept in memory, the profile complete" {
	mount_tmpfs fs size=64k,mode=0755
	# 16 KiB left: the spill file (24 bytes a sample) fills it, the profile (a few KiB) fits
	avail=$(df -B1 --output=avail fs | tail -n1)
	head -c $((avail - 16384)) /dev/zero >fs/filler || true
	PROFTOOL_SPILL_SAMPLES=100 run --separate-stderr "$PROFTOOL" record -o fs/p.data -- "$WORKLOADS/split" 1.5
	[ "$status" -eq 0 ]
	n=$(pjson fs/p.data 'len(p["samples"]["thread"])')
	[ "$n" -gt 1000 ]
	[[ "$stderr" == *"wrote fs/p.data: $n samples"* ]]
	[ "$(ls -A fs | sort | tr '\n' ' ')" = "filler p.data " ]
	run --separate-stderr "$PROFTOOL" report --format folded fs/p.data
	near "$(self_share leaf_a <<<"$output")" 50 5
}

@test "a full output filesystem: one error line, no partial file, the old profile intact" {
	mount_tmpfs fs size=64k,mode=0755
	record_to fs/p.data -- "$WORKLOADS/split" 0.05
	cp fs/p.data before.data
	# one page left: the new profile (about 18 KiB) is partly written, then ENOSPC
	avail=$(df -B1 --output=avail fs | tail -n1)
	head -c $((avail - 4096)) /dev/zero >fs/filler || true
	[ "$(df -B1 --output=avail fs | tail -n1)" -le 4096 ]
	run --separate-stderr "$PROFTOOL" record -q -F 10000 -o fs/p.data -- "$WORKLOADS/threadloop" 500 0.5
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: cannot write 'fs/p.data': No space left on device; the profile was not saved (check the path and free space)" ]
	cmp fs/p.data before.data
	no_temp_files fs
	[ "$(ls -A fs | sort | tr '\n' ' ')" = "filler p.data " ]
}

@test "a read-only output filesystem: refused before anything runs, the old profile intact" {
	mount_tmpfs fs size=64k,mode=0755
	record_to fs/p.data -- "$WORKLOADS/split" 0.05
	cp fs/p.data before.data
	mount -o remount,ro fs
	run --separate-stderr "$PROFTOOL" record -o fs/p.data -- touch ran
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: cannot create 'fs/p.data': Read-only file system" ]
	[ ! -e ran ]
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	track "$target"
	run --separate-stderr "$PROFTOOL" attach -o fs/p.data "$target"
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: cannot create 'fs/p.data': Read-only file system" ]
	untouched "$target"
	cmp fs/p.data before.data
	[ "$(ls -A fs)" = p.data ]
}

@test "the output filesystem turns read-only during a recording: one error line, old profile intact" {
	mount_tmpfs fs size=64k,mode=0755
	record_to fs/p.data -- "$WORKLOADS/split" 0.05
	cp fs/p.data before.data
	"$PROFTOOL" record -q -o fs/p.data -- "$WORKLOADS/exitcode" sleep 100 2>err &
	rec=$!
	track "$rec"
	child=$(wait_child "$rec" exitcode)
	track "$child"
	burn_ticks "$child" 10
	mount -o remount,ro fs
	kill -INT "$rec"
	wait "$rec" && st=0 || st=$?
	# the command's status comes first (it died of SIGINT); the error is said
	[ "$st" -eq 130 ]
	[ "$(wc -l <err)" -eq 1 ]
	[[ "$(cat err)" == "proftool: cannot "*"'fs/p.data': Read-only file system; the profile was not saved"* ]]
	cmp fs/p.data before.data
	[ "$(ls -A fs)" = p.data ]
}

# ---- -o and other users ----

# perf record does about the same for a link to a file (it renames the link to NAME.old and
# writes a new file), but opens a dangling link with O_CREAT and so creates its target.
@test "-o naming a symlink replaces the link with the profile; what it pointed to is untouched" {
	echo precious >target.txt
	ln -s target.txt link.data
	record_to link.data -- "$WORKLOADS/split" 0.05
	[ -f link.data ]
	[ ! -L link.data ]
	[ "$(cat target.txt)" = precious ]
	"$PROFTOOL" report link.data >/dev/null
	mkdir elsewhere
	ln -s elsewhere/created dangling.data
	record_to dangling.data -- "$WORKLOADS/split" 0.05
	[ -f dangling.data ]
	[ ! -L dangling.data ]
	[ ! -e elsewhere/created ]
	no_temp_files .
}

@test "-o naming a FIFO: the reader gets the whole profile, once" {
	mkfifo out.fifo
	# the check before the command runs used to open and close the FIFO: the reader saw
	# its end there, and the profile then waited for a reader for ever
	timeout -k 5 120 cat out.fifo >got.data &
	reader=$!
	run --separate-stderr timeout -k 5 120 "$PROFTOOL" record -q -o out.fifo -- "$WORKLOADS/split" 0.05
	[ "$status" -eq 0 ] || { echo "status $status: $stderr"; false; }
	wait "$reader"
	[ -p out.fifo ]
	run --separate-stderr "$PROFTOOL" report --format folded got.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"main;leaf_a "* ]]
}

# In a sticky world-writable directory (/tmp), another user can put a link or a FIFO at the
# name -o gives. Writing through it would let them choose where the profile goes (a device, a
# file of the victim's, a pipe they read, or nowhere: open() of a FIFO nobody reads blocks
# for ever). proftool replaces such an entry by its own file (through the temporary file and
# rename, as root may), whatever fs.protected_symlinks and fs.protected_fifos say. The
# temporary name is random and created with O_EXCL, so names planted in advance are inert.
@test "-o in a sticky directory: another user's links, FIFOs and decoy names are never followed" {
	need_nobody
	sticky=$(mktemp -d /tmp/proftool-sticky.XXXXXX)
	tmpdirs+=("$sticky")
	chmod 1777 "$sticky"
	mkdir victim
	echo precious >victim/file
	mkfifo victim/fifo
	"${AS_NOBODY[@]}" ln -s "$PWD/victim/file" "$sticky/a.data"
	"${AS_NOBODY[@]}" ln -s "$PWD/victim/fifo" "$sticky/b.data"
	"${AS_NOBODY[@]}" mkfifo "$sticky/c.data"
	"${AS_NOBODY[@]}" ln -s "$PWD/victim/created" "$sticky/d.data"
	decoys=(.e.data.XXXXXX .e.data.tmp e.data.tmp e.data~ .e.data.swp e.data.old)
	for d in "${decoys[@]}"; do
		"${AS_NOBODY[@]}" ln -s "$PWD/victim/file" "$sticky/$d"
	done
	for f in a b c d e; do
		# 'timeout': the old behaviour blocked for ever on the FIFOs
		run --separate-stderr timeout -k 5 120 "$PROFTOOL" record -q -o "$sticky/$f.data" -- "$WORKLOADS/split" 0.05
		[ "$status" -eq 0 ] || { echo "$f.data: status $status: $stderr"; false; }
		[ -f "$sticky/$f.data" ]
		[ ! -L "$sticky/$f.data" ]
		[ "$(stat -c %u "$sticky/$f.data")" = 0 ]
		"$PROFTOOL" report "$sticky/$f.data" >/dev/null
	done
	[ "$(cat victim/file)" = precious ]
	[ -p victim/fifo ]
	[ ! -e victim/created ]
	for d in "${decoys[@]}"; do
		[ "$(readlink "$sticky/$d")" = "$PWD/victim/file" ]
	done
	[ "$(ls -A "$sticky" | wc -l)" -eq $((5 + ${#decoys[@]})) ]
}

@test "the temporary profile is created with O_EXCL next to the profile, then renamed over it" {
	need strace strace
	mkdir out
	# (LeakSanitizer cannot run under ptrace: an ASan build would fail at exit)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run strace -f -qq -o trace.txt -e trace=openat,rename,renameat,renameat2 \
		"$PROFTOOL" record -q -g fp -o out/p.data -- "$WORKLOADS/split" 0.05
	[ "$status" -eq 0 ] || { cat trace.txt; false; }
	grep -qE 'openat\(AT_FDCWD, "out/\.p\.data\.[A-Za-z0-9]{6}", O_RDWR\|O_CREAT\|O_EXCL' trace.txt
	grep -qE 'rename(at2?)?\((AT_FDCWD, )?"out/\.p\.data\.[A-Za-z0-9]{6}", (AT_FDCWD, )?"out/p\.data"' trace.txt
	! grep -E 'openat\(AT_FDCWD, "out/p\.data"' trace.txt || false
	no_temp_files out
}

@test "an unprivileged user cannot attach to another user's process, with either backend" {
	need_nobody
	public_dir
	"$WORKLOADS_NOFP/split" 8 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	track "$target"
	for backend in perf ptrace; do
		run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" attach -q --backend "$backend" \
			--duration 0.5 -o "$pub/out/never.data" "$target"
		[ "$status" -eq 1 ]
		one_error_line
		[[ "$stderr" == "proftool: not allowed to profile process $target of another user; "* ]]
		untouched "$target"
		[ -z "$(ls -A "$pub/out")" ]
	done
}

@test "an unprivileged user cannot attach to the setuid program it started: one clear line" {
	need_nobody
	public_dir "$WORKLOADS/exitcode"
	cp "$pub/exitcode" "$pub/suid-exitcode"
	chown 0:0 "$pub/suid-exitcode"
	chmod 4755 "$pub/suid-exitcode"
	"${AS_NOBODY[@]}" "$pub/suid-exitcode" sleep 100 >/dev/null 2>&1 &
	target=$!
	disown "$target"   # killed in teardown: no job notice
	track "$target"
	burn_ticks "$target" 2
	awk '/^Uid:/ { exit !($3 == 0) }' "/proc/$target/status" || skip "setuid bits have no effect here (a nosuid /tmp?)"
	# the kernel would refuse (perf_event_open and ptrace both check ptrace_may_access); the
	# error says why, without a perf_event_paranoid hint or a fallback notice
	for backend in auto perf ptrace; do
		run --separate-stderr "${AS_NOBODY[@]}" "$pub/proftool" attach -q --backend "$backend" \
			--duration 0.5 -o "$pub/out/never.data" "$target"
		[ "$status" -eq 1 ]
		one_error_line
		[[ "$stderr" == "proftool: not allowed to profile process $target: it runs with privileges you do not have"* ]]
		untouched "$target"
		[ -z "$(ls -A "$pub/out")" ]
	done
}
