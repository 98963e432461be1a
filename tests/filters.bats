#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool report's filters (--comm, --pid, --tid, --time-range, --state): the header
# describes the samples kept, the same way in table, tree, callers, callees and json, and
# agrees with the rows, the folded stacks, the sections and the profile file itself.

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	# two processes (train and its forked eval-worker), a loader and two compute threads
	"$PROFTOOL" record -q -o train.data -- "$WORKLOADS/train" 0.5 >/dev/null
	# wall mode: samples on and off CPU
	"$PROFTOOL" record -q --mode wall -o wall.data -- "$WORKLOADS_NOFP/sleepy" 1
	# 2000 frames deep with a 1 KiB stack copy: every stack in the recursion is cut
	"$PROFTOOL" record -q --stack-size 1024 -o deep.data -- "$WORKLOADS_NOFP/deep"
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# expect FILE [FILTER...]: what the header must say, worked out from the profile file
# itself: "kept total procs procs_total threads threads_total seconds complete truncated".
# The functions that start a thread are profile_func_is_root()'s (profile/profile.c).
expect() {
	python3 - "$@" <<'EOF'
import gzip, json, sys
path, args = sys.argv[1], sys.argv[2:]
raw = open(path, "rb").read()
p = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
f = {}
while args:
    k, v = args.pop(0), args.pop(0)
    f[k.lstrip("-")] = v
lo = hi = None
if "time-range" in f:
    a, b = f["time-range"].split("-")
    lo = int(float(a) * 1e9) if a else 0
    hi = int(float(b) * 1e9) if b else None
roots = {"_start", "__libc_start_main", "__libc_start_call_main", "_dl_start_user", "_dl_start",
         "clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3",
         "start_thread", "__libc_start_main_impl", "start"}
fn, loc, st = p["functions"], p["locations"], p["stacks"]
def outermost(s):
    while st["parent"][s] >= 0:
        s = st["parent"][s]
    i = loc["function"][st["location"][s]]
    return fn["name"][i], fn["module"][i]
threads, procs = p["threads"], p["processes"]
smp = p["samples"]
state = smp.get("state", [0] * len(smp["thread"]))
t = 0
kept = []
allt, allp = set(), set()
for i, d in enumerate(smp["time_us_delta"]):
    t += d * 1000
    th = threads[smp["thread"][i]]
    pr = procs[th["process"]]
    allt.add(smp["thread"][i]); allp.add(th["process"])
    if "pid" in f and pr["pid"] != int(f["pid"]): continue
    if "tid" in f and th["tid"] != int(f["tid"]): continue
    if "comm" in f and f["comm"] not in (th["comm"], pr["comm"]): continue
    if lo is not None and (t < lo or (hi is not None and t >= hi)): continue
    if "state" in f and state[i] != {"on-cpu": 1, "off-cpu": 2}[f["state"]]: continue
    kept.append((t, smp["thread"][i], th["process"], smp["stack"][i]))
n, total = len(kept), len(smp["thread"])
dur = p["meta"]["duration_ns"]
if n == total:
    span = dur
elif set(f) == {"time-range"}:
    span = min(hi if hi is not None else dur, dur) - min(lo, dur)
else:
    span = max(k[0] for k in kept) - min(k[0] for k in kept)
ends = [outermost(k[3]) for k in kept]
print(n, total, len({k[2] for k in kept}), len(allp), len({k[1] for k in kept}), len(allt),
      "%.3f" % (span / 1e9), sum(e[0] in roots for e in ends),
      sum(e == ("[truncated]", "[truncated]") for e in ends))
EOF
}

# header FILE [FILTER...]: the header of the table (up to the first empty line)
header() {
	"$PROFTOOL" report "$@" | sed '/^$/q'
}

# consistent FILE [FILTER...]: the header agrees with the file, the rows, the folded
# stacks, the --per-thread and --per-process sections and the json report; tree, callers
# and callees print the same header as the table.
consistent() {
	local file=$1 h n total procs ptotal threads ttotal secs complete truncated
	shift
	read -r n total procs ptotal threads ttotal secs complete truncated < <(expect "$file" "$@")
	echo "expected: $n of $total samples, $procs/$ptotal processes, $threads/$ttotal threads, $secs s, $complete complete, $truncated truncated" >&2
	[ "$n" -gt 0 ]
	[ "$n" -lt "$total" ] || { echo "the filter $* keeps every sample: no test" >&2; return 1; }
	h=$(header "$@" "$file")
	echo "$h" >&2

	# the counts, each with its total
	line="$n samples (of $total total) over $secs s from $procs process"
	[ "$procs" -eq 1 ] || line+="es"
	[ "$procs" -eq "$ptotal" ] || line+=" (of $ptotal)"
	line+=" and $threads thread"
	[ "$threads" -eq 1 ] || line+="s"
	[ "$threads" -eq "$ttotal" ] || line+=" (of $ttotal)"
	grep -qxF "$line" <<<"$h" || { echo "no line '$line'" >&2; return 1; }
	grep -q '^Whole recording: [0-9]* samples lost' <<<"$h"
	! grep -q '^Lost samples' <<<"$h" || return 1
	grep -qxF "Stacks unwound to their root: $complete of $n ($(awk -v c="$complete" -v n="$n" 'BEGIN { printf "%.1f", 100 * c / n }')%)" <<<"$h"

	# the folded stacks add up to the kept samples; [truncated] roots count as the file says
	"$PROFTOOL" report --format folded "$@" "$file" >folded
	[ "$(awk '{ s += $NF } END { print s }' folded)" -eq "$n" ]
	[ "$(awk '/^\[truncated\];/ { s += $NF } END { print s + 0 }' folded)" -eq "$truncated" ]
	# the stacks that stopped early: the counts on the header's line add up to the rest
	stopped=$(sed -n 's/^Unwinding stopped early: //p' <<<"$h" | sed 's/([^)]*)//g' |
		tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }')
	[ "$stopped" -eq "$((n - complete))" ]

	# as many sections as threads and processes, adding up to the kept samples
	"$PROFTOOL" report --per-thread "$@" "$file" >pt
	[ "$(grep -c '^=== ' pt)" -eq "$threads" ]
	[ "$(awk '/^=== / { s += $(NF - 2) } END { print s }' pt)" -eq "$n" ]
	"$PROFTOOL" report --per-process "$@" "$file" >pp
	[ "$(grep -c '^=== ' pp)" -eq "$procs" ]
	# the table's rows: the top row's cumulative count never exceeds the kept samples
	top=$(awk '/filename:lineno\(function\)/ { getline; split($1, a, "/"); print a[2]; exit }' pt)
	[ "$top" -le "$n" ]

	# the same header before the tree, the callers and the callees
	for fmt in tree callers callees; do
		[ "$(header --format "$fmt" "$@" "$file")" = "$h" ] ||
			{ echo "--format $fmt prints another header" >&2; return 1; }
	done

	# the json report carries the same figures, and the totals
	"$PROFTOOL" report --format json -o r.json "$@" "$file"
	python3 - r.json "$n" "$total" "$procs" "$ptotal" "$threads" "$ttotal" "$secs" "$complete" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))["meta"]
d = json.load(open(sys.argv[1]))
n, total, procs, ptotal, threads, ttotal = map(int, sys.argv[2:8])
secs, complete = sys.argv[8], int(sys.argv[9])
got = (m["samples"], m["samples_in_file"], m["process_count"], m["processes_in_file"],
       m["thread_count"], m["threads_in_file"], "%.3f" % (m["span_ns"] / 1e9), m["stacks_complete"])
assert got == (n, total, procs, ptotal, threads, ttotal, secs, complete), got
assert m["filtered"] is True
assert len(d["threads"]) == threads and len(d["processes"]) == procs
assert sum(t["samples"] for t in d["threads"]) == n
assert sum(s["count"] for s in m["unwind_stops_kept"]) == n - complete, m["unwind_stops_kept"]
assert sum(m["thread_states"].values()) == n
EOF
}

# tid_of FILE COMM, pid_of FILE COMM: the id of the first thread / process named COMM
tid_of() {
	pjson "$1" "[t['tid'] for t in p['threads'] if t['comm'] == '$2'][0]"
}
pid_of() {
	pjson "$1" "[q['pid'] for q in p['processes'] if q['comm'] == '$2'][0]"
}

@test "--comm: the header counts the kept samples, processes and threads" {
	consistent train.data --comm train
	consistent train.data --comm compute-1
	consistent train.data --comm eval-worker
}

@test "--pid: the header counts one process and its threads" {
	consistent train.data --pid "$(pid_of train.data eval-worker)"
	consistent train.data --pid "$(pid_of train.data train)"
}

@test "--tid: the header counts one thread" {
	consistent train.data --tid "$(tid_of train.data data-loader)"
	consistent train.data --tid "$(tid_of train.data compute-0)"
}

@test "--time-range: the header's time is the window, within the recording" {
	consistent train.data --time-range 0.1-0.4
	consistent train.data --time-range 0.3-
	consistent train.data --time-range -0.2
	# beyond the end of the recording the window stops at the end
	consistent train.data --time-range 0.2-1000
	# with another filter, the time is that of the kept samples
	consistent train.data --time-range 0.1-0.4 --comm compute-0
}

@test "--state: the header counts on- or off-CPU samples, all of one kind" {
	consistent wall.data --state off-cpu
	consistent wall.data --state on-cpu
	consistent wall.data --state on-cpu --comm sleepy-worker
	# the states line: every kept sample is of the kind kept
	run --separate-stderr "$PROFTOOL" report --state off-cpu wall.data
	n=$(sed -n 's/^\([0-9]*\) samples (of.*/\1/p' <<<"$output")
	grep -qxF "Thread states: on CPU (running or runnable) 0 (0.0%), off CPU (sleeping, blocked) $n (100.0%)" <<<"$output"
	on=$("$PROFTOOL" report --state on-cpu wall.data | sed -n 's/^\([0-9]*\) samples (of \([0-9]*\) total).*/\1 \2/p')
	[ "$((n + ${on% *}))" -eq "${on#* }" ]
}

@test "unfiltered, the header is the recording's" {
	run --separate-stderr "$PROFTOOL" report train.data
	read -r n total procs ptotal threads ttotal secs complete truncated < <(expect train.data)
	grep -qE "^$n samples over [0-9.]+ s from $procs processes and $threads threads$" <<<"$output"
	grep -q '^Lost samples: ' <<<"$output"
	! grep -q 'of .* total\|Whole recording\|whole recording' <<<"$output" || false
	"$PROFTOOL" report --format json -o all.json train.data
	python3 -c 'import json
m = json.load(open("all.json"))["meta"]
assert m["filtered"] is False and m["samples"] == m["samples_in_file"]
assert m["span_ns"] == m["duration_ns"] and m["unwind_stops_kept_exact"] is True'
	# a filter that keeps every sample changes nothing
	[ "$("$PROFTOOL" report --time-range 0- train.data)" = "$output" ]
}

@test "a filtered header gives the reasons unwinding stopped for the kept stacks" {
	reasons=$(pjson deep.data "sorted({s['reason'] for s in p['meta'].get('unwind_stops', [])})")
	[ "$reasons" = "['stack copy too small']" ] ||
		{ echo "deep with a 1 KiB copy stopped for $reasons" >&2; false; }
	consistent deep.data --time-range 0.1-
	run --separate-stderr "$PROFTOOL" report --time-range 0.1- deep.data
	read -r n total procs ptotal threads ttotal secs complete truncated < <(expect deep.data --time-range 0.1-)
	[ "$truncated" -gt 0 ]
	# the one reason of the recording, counted over the kept stacks: exact, nothing more to say
	grep -qE "^Unwinding stopped early: $truncated stack copy too small( \(deep $truncated\))?(, [0-9]+ at a frame that is not a thread's entry)?$" <<<"$output"
	# (a stack whose callers were found by scanning is counted over the whole recording,
	# and says so: CI's ASan run had one of 489, so that line is not this test's)
	! grep -v '^Stack scanning: ' <<<"$output" | grep -q 'whole recording' || false
	"$PROFTOOL" report --format json --time-range 0.1- -o d.json deep.data
	python3 -c 'import json, sys
m = json.load(open("d.json"))["meta"]
k = m["unwind_stops_kept"]
assert m["unwind_stops_kept_exact"] is True, m
assert k[0]["reason"] == "stack copy too small" and k[0]["count"] == '"$truncated"', k'
}

# mkprofile FILE STOPS: a hand-made profile. Thread app (pid 100) has 5 whole stacks at
# 1..5 ms, helper (tid 101, pid 100) 6 stacks cut short ([truncated]) at 0.5..5.5 ms,
# other (pid 200) 4 stacks ending in libx.so's lib_fn at 1.2..4.2 ms; STOPS is the
# meta's unwind_stops, as JSON.
mkprofile() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
samples = sorted([(t * 1000, 0, 2) for t in range(1, 6)] + [(t * 1000 + 500, 1, 4) for t in range(0, 6)] +
                 [(t * 1000 + 200, 2, 6) for t in range(1, 5)])
prev, delta = 0, []
for t, _, _ in samples:
    delta.append(t - prev)
    prev = t
p = {"format": "proftool-profile", "version": 1,
     "meta": {"tool_version": "0.1.0", "command": "./app", "event": "cpu-clock", "callgraph": "dwarf",
              "mode": "cpu", "backend": "perf", "host": "h", "kernel": "k", "freq": 1000,
              "period_ns": 1000000, "start_real_ns": 1700000000000000000, "duration_ns": 6000000,
              "lost": 0, "cpu_time_ns": 15000000, "exit_status": 0, "samples": len(samples),
              "unwind_stops": json.loads(sys.argv[2])},
     "functions": {"name": ["_start", "main", "work", "[truncated]", "lib_fn"],
                   "module": ["app", "app", "app", "[truncated]", "libx.so"],
                   "file": [None] * 5, "line": [0] * 5},
     "locations": {"function": [0, 1, 2, 3, 4], "line": [0] * 5},
     "stacks": {"parent": [-1, 0, 1, -1, 3, -1, 5], "location": [0, 1, 2, 3, 2, 4, 2]},
     "processes": [{"pid": 100, "ppid": 1, "comm": "app", "cmdline": "./app"},
                   {"pid": 200, "ppid": 100, "comm": "other", "cmdline": "./other"}],
     "threads": [{"tid": 100, "process": 0, "comm": "app"}, {"tid": 101, "process": 0, "comm": "helper"},
                 {"tid": 200, "process": 1, "comm": "other"}],
     "samples": {"time_us_delta": delta, "thread": [s[1] for s in samples], "stack": [s[2] for s in samples]}}
json.dump(p, open(sys.argv[1], "w"))
EOF
}

# stops FILE [FILTER...]: the header's unwinding lines
stops() {
	"$PROFTOOL" report "$@" | grep '^Unwinding stopped early'
}

@test "stop reasons the file tells apart only for the whole recording say so" {
	# one reason per kind of end: exact for any subset
	mkprofile one.json '[{"reason": "stack copy too small", "module": "app", "count": 6},
		{"reason": "no CFI", "module": "libx.so", "count": 4}]'
	[ "$(stops one.json)" = "Unwinding stopped early: 6 stack copy too small (app 6), 4 no CFI (libx.so 4)" ]
	consistent one.json --time-range 0.0029-
	[ "$(stops --time-range 0.0029- one.json)" = "Unwinding stopped early: 3 stack copy too small (app 3), 2 no CFI (libx.so 2)" ]
	[ "$(stops --tid 101 one.json)" = "Unwinding stopped early: 6 stack copy too small (app 6)" ]
	[ "$(stops --pid 200 one.json)" = "Unwinding stopped early: 4 no CFI (libx.so 4)" ]
	[ -z "$(stops --tid 100 one.json)" ]

	# stacks without a recorded reason ended at a frame with no caller
	mkprofile bare.json '[{"reason": "stack copy too small", "module": null, "count": 6}]'
	[ "$(stops --time-range 0.0029- bare.json)" = "Unwinding stopped early: 3 stack copy too small, 2 at a frame that is not a thread's entry" ]

	# two reasons for each kind: the kept stacks' are not known, the recording's follow
	mkprofile two.json '[{"reason": "stack copy too small", "module": null, "count": 4},
		{"reason": "too many frames", "module": null, "count": 2},
		{"reason": "no CFI", "module": "libx.so", "count": 3},
		{"reason": "unknown mapping", "module": null, "count": 1}]'
	consistent two.json --time-range 0.0029-
	[ "$(stops --time-range 0.0029- two.json)" = "Unwinding stopped early: 3 stack copy too small or too many frames, 2 for reasons known only for the whole recording
Unwinding stopped early in the whole recording (15 samples): 4 stack copy too small, 3 no CFI (libx.so 3), 2 too many frames, 1 unknown mapping" ]
	[ "$(stops --pid 200 --format tree two.json | head -n1)" = "Unwinding stopped early: 4 for reasons known only for the whole recording" ]
	"$PROFTOOL" report --format json --time-range 0.0029- -o two-r.json two.json
	python3 -c 'import json
m = json.load(open("two-r.json"))["meta"]
assert m["unwind_stops_kept"] == [
    {"reason": "stack copy too small or too many frames", "module": None, "count": 3},
    {"reason": None, "module": None, "count": 2}], m["unwind_stops_kept"]
assert m["unwind_stops_kept_exact"] is False and len(m["unwind_stops"]) == 4'
}
