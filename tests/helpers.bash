# SPDX-License-Identifier: MIT
# Shared set-up for the bats suites: paths, workloads, the options of a --help text, and
# share arithmetic on folded output.

bats_require_minimum_version 1.5.0

: "${PROFTOOL:?run the suites through 'make check' (PROFTOOL is unset)}"
: "${WORKLOADS:?run the suites through 'make check' (WORKLOADS is unset)}"

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

# Records COMMAND quietly into FILE: record_to FILE [record options] -- COMMAND...
record_to() {
	local out=$1
	shift
	"$PROFTOOL" record -q -o "$out" "$@"
}

# pjson FILE EXPR: evaluates the Python expression EXPR on the profile FILE (bound to p)
pjson() {
	python3 -c 'import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2"
}

# ---- help texts ----

# Options named at the start of the option lines of a --help text on stdin:
# "  -o FILE   ...", "  -h, --help   ...", "  --pid P, --tid T   ..." (one per line, sorted).
options_in_help() {
	awk '/^[ \t]+-/ {
		sub(/^[ \t]+/, "")
		sub(/(  |\t).*/, "")            # the description column
		n = split($0, item, /, /)
		for (i = 1; i <= n; i++) {
			split(item[i], w, " ")
			if (w[1] ~ /^-/)
				print w[1]
		}
	}' | sort -u
}

# ---- processes ----

# state PID: the one-letter state from /proc/PID/stat
state() {
	sed 's/.*) \(.\).*/\1/' "/proc/$1/stat"
}

# tracer PID: the TracerPid of PID (0 when untraced)
tracer() {
	awk '/^TracerPid:/ { print $2 }' "/proc/$1/status"
}

# CPU time of PID so far, in clock ticks (user + system)
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# burn_ticks PID N: waits until PID has used N more clock ticks of CPU (or ended); counts
# the target's work, not time, so that a loaded machine does not leave the profile empty
burn_ticks() {
	local c0 s

	c0=$(cpu_ticks "$1")
	for _ in $(seq 2400); do
		s=$(state "$1" 2>/dev/null || echo X)
		[[ "$s" == [ZX] ]] && return 0
		[ $(($(cpu_ticks "$1") - c0)) -ge "$2" ] && return 0
		sleep 0.025
	done
	echo "process $1 did not use $2 ticks of CPU in a minute" >&2
	return 1
}

# wait_attached REC TARGET: waits (up to 20 s: a loaded machine is slow) until attach (pid
# REC) samples TARGET and TARGET runs again. perf: REC holds perf events; ptrace: one of
# REC's threads is TARGET's tracer (it seizes with the options that follow clones and forks).
wait_attached() {
	local t

	for _ in $(seq 1000); do
		t=$(tracer "$2")
		if { ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'perf_event' ||
		     { [ "$t" != 0 ] && [ -d "/proc/$1/task/$t" ]; }; } &&
		   [[ "$(state "$2")" != [Tt] ]]; then
			return 0
		fi
		kill -0 "$1" 2>/dev/null || { echo "attach $1 ended before it got hold of $2" >&2; return 1; }
		sleep 0.02
	done
	echo "attach $1 never got hold of $2" >&2
	return 1
}

# Self share (percent, one decimal) of function NAME in a folded report on stdin.
self_share() {
	awk -v f="$1" '{
		n = $NF; total += n
		sub(/ [0-9]+$/, "")
		k = split($0, fr, ";")
		if (fr[k] == f) hit += n
	} END { printf "%.1f\n", total ? 100 * hit / total : 0 }'
}

# Cumulative share of NAME: samples whose stack holds it anywhere (once per stack).
cum_share() {
	awk -v f="$1" '{
		n = $NF; total += n
		sub(/ [0-9]+$/, "")
		k = split($0, fr, ";")
		for (i = 1; i <= k; i++) if (fr[i] == f) { hit += n; break }
	} END { printf "%.1f\n", total ? 100 * hit / total : 0 }'
}

# Share of samples under NAME that also have ANCESTOR above it.
ancestor_share() {
	awk -v f="$1" -v a="$2" '{
		n = $NF
		sub(/ [0-9]+$/, "")
		k = split($0, fr, ";")
		if (fr[k] != f) next
		total += n
		for (i = 1; i < k; i++) if (fr[i] == a) { hit += n; break }
	} END { printf "%.1f\n", total ? 100 * hit / total : 0 }'
}

# near ACTUAL EXPECTED TOLERANCE: |actual - expected| <= tolerance, with a message.
near() {
	if awk -v a="$1" -v e="$2" -v t="$3" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(d <= t) }'; then
		return 0
	fi
	echo "expected $2 +/- $3, got $1" >&2
	return 1
}

# at_least ACTUAL MIN
at_least() {
	if awk -v a="$1" -v m="$2" 'BEGIN { exit !(a >= m) }'; then
		return 0
	fi
	echo "expected at least $2, got $1" >&2
	return 1
}

# Exactly one line on stderr, starting "proftool: ".
one_error_line() {
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "stderr has ${#stderr_lines[@]} lines: $stderr" >&2; return 1; }
	[[ "${stderr_lines[0]}" == "proftool: "* ]] || { echo "stderr: $stderr" >&2; return 1; }
}
