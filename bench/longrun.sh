#!/bin/bash
# SPDX-License-Identifier: MIT
# proftool's memory over a long recording (make longrun, or by hand):
#
#   bench/longrun.sh [DURATION]      DURATION seconds, default 600 (or $DURATION)
#
# Records a busy 8-thread program (tests/workloads/spinners, default -g dwarf, -F 999) for
# DURATION seconds, reads proftool's VmRSS from /proc every $INTERVAL seconds (default 10),
# and prints the peak and final RSS and the slope of a least-squares line through the
# readings after the first minute (or after the first sixth of shorter runs), in KiB per
# minute and in bytes per recorded sample. proftool moves its samples to a temporary file
# as it goes, so the slope should be close to nothing.
# $O is the build directory (default build); extra record options go in $RECORD_OPTS.
# With RECORD_OPTS=--snapshot-every SEC it also prints what each snapshot cost: the time
# the recording's loop spent writing it (sampling itself goes on meanwhile), and its size.
set -eu

O=${O:-build}
DURATION=${1:-${DURATION:-600}}
INTERVAL=${INTERVAL:-10}
proftool=$O/proftool
spinners=$O/workloads/spinners

case $DURATION in
'' | *[!0-9]*) echo "longrun: DURATION must be a whole number of seconds, not '$DURATION'" >&2; exit 2 ;;
esac
if [ ! -x "$proftool" ] || [ ! -x "$spinners" ]; then
	echo "longrun: build first: make $proftool $spinners" >&2
	exit 1
fi
command -v python3 >/dev/null || { echo "longrun: needs python3" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# 8 threads with far more work than DURATION allows; timeout ends them with SIGINT, and
# record then writes the profile (its exit status is timeout's: 124). A python3 parent
# gives the true peak from wait4's rusage: symbolizing and writing at the end included.
# shellcheck disable=SC2086
python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:]).returncode
with open(sys.argv[1], "w") as f:
    print(r, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=f)' "$tmp/exit" \
	"$proftool" record ${RECORD_OPTS:-} -o "$tmp/long.data" -- \
	timeout -s INT "$DURATION" "$spinners" 8 100000 2>"$tmp/err" &
py=$!
# (not 'pgrep -P': python3 may be a wrapper script, pyenv's for one)
rec=
for _ in $(seq 100); do
	for p in $(pgrep -x proftool || true); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "-o $tmp/long.data" && rec=$p
	done
	[ -n "$rec" ] && break
	sleep 0.1
done
[ -n "$rec" ] || { echo "longrun: proftool did not start" >&2; exit 1; }
start=$(now)
echo "longrun: recording 8 busy threads for $DURATION s, RSS of proftool (pid $rec) every $INTERVAL s"
while :; do
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$rec/status" 2>/dev/null || true)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$rec/status" 2>/dev/null || true)
	[ -n "$rss" ] || break
	t=$(awk -v a="$(now)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
	echo "$t $rss $hwm" >>"$tmp/rss"
	printf '  %7.1f s  RSS %7d KiB  peak %7d KiB\n' "$t" "$rss" "$hwm"
	# a reading just before the end of the recording, then every half second
	sleep "$(awk -v t="$t" -v d="$DURATION" -v i="$INTERVAL" \
		'BEGIN { r = d - 1 - t; print (r >= i ? i : (r > 0.5 ? r : 0.5)) }')"
done
wait "$py" || true
cat "$tmp/err"
read -r st peak_kib <"$tmp/exit" || { echo "longrun: no exit status" >&2; exit 1; }
[ "$st" -eq 0 ] || [ "$st" -eq 124 ] || { echo "longrun: record exited $st" >&2; exit 1; }

python3 - "$tmp/rss" "$tmp/long.data" "$DURATION" "$peak_kib" <<'EOF'
import glob, gzip, json, os, sys

rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 3]
p = json.load(gzip.open(sys.argv[2]))
# with --snapshot-every, the parts OUT.N and the rest in OUT
parts = [p] + [json.load(gzip.open(f)) for f in glob.glob(sys.argv[2] + ".*")]
duration = float(sys.argv[3])
samples = sum(len(q["samples"]["thread"]) for q in parts)
lost = sum(q["meta"]["lost"] for q in parts)
recorded_ns = sum(q["meta"]["duration_ns"] for q in parts)
rec = [r for r in rows if r[0] < duration]          # while recording
warm = min(60.0, duration / 6)
fit = [r for r in rec if r[0] >= warm] or rec
n = len(fit)
mt = sum(r[0] for r in fit) / n
mr = sum(r[1] for r in fit) / n
var = sum((r[0] - mt) ** 2 for r in fit)
slope = sum((r[0] - mt) * (r[1] - mr) for r in fit) / var if var else 0.0   # KiB/s
rate = samples / (recorded_ns / 1e9)                                        # samples/s
peak = max([r[2] for r in rows] + [float(sys.argv[4])])
print(f"longrun: {samples} samples ({rate:.0f}/s), {lost} lost, {len(p['threads'])} threads, "
      f"profile {os.path.getsize(sys.argv[2]) / 1024:.0f} KiB")
print(f"longrun: RSS after {warm:.0f} s {fit[0][1]:.0f} KiB, at the end of recording {rec[-1][1]:.0f} KiB, "
      f"final {rows[-1][1]:.0f} KiB, peak {peak:.0f} KiB (symbolizing and writing included)")
print(f"longrun: slope {slope * 60:.1f} KiB/min over {fit[-1][0] - fit[0][0]:.0f} s = "
      f"{slope * 1024 / rate if rate else 0:.1f} bytes per sample")
EOF

# --snapshot-every: each part's samples, size and the time its writing took
if compgen -G "$tmp/long.data.*" >/dev/null; then
	python3 - "$tmp" <<'EOF'
import os, re, sys
tmp = sys.argv[1]
rows = []
for line in open(os.path.join(tmp, "err")).read().replace("\r", "\n").splitlines():
    m = re.search(r"wrote (\S+\.(\d+)): (\d+) samples, ([0-9.]+) s \(in (\d+) ms\)", line)
    if m and os.path.exists(m.group(1)):
        rows.append((int(m.group(2)), int(m.group(3)), float(m.group(4)), int(m.group(5)),
                     os.path.getsize(m.group(1))))
for n, samples, secs, ms, size in rows:
    print(f"longrun: snapshot {n}: {samples} samples over {secs:.1f} s, written in {ms} ms, {size / 1024:.0f} KiB")
if len(rows) > 1:
    later = sorted(r[3] for r in rows[1:])
    print(f"longrun: snapshots after the first: median {later[len(later) // 2]} ms, max {later[-1]} ms; "
          f"the first (every file opened and read once) {rows[0][3]} ms")
EOF
fi
