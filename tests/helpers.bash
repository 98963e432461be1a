# SPDX-License-Identifier: MIT
# Shared set-up for the bats suites: paths, workloads, the options of a --help text, and
# share arithmetic on folded output.
#
# The suites pass on a fresh Debian 12 with what scripts/deps.sh check and make consumers
# install, and nothing else. A test asserts what proftool guarantees, never how one version
# of another program spells its output (node's perf-map names, go tool pprof's layout), and
# runs the Debian package's program by its path ($PYTHON3, $NODE, $GO, $CHROMIUM below), not
# whatever comes first on PATH (a pyenv shim, nvm's node, a go from go.dev). When something
# the set-up installs is missing, the test calls need, need_package or skip_or_fail: it skips
# on a developer's machine but fails under CI=true, where a check that did not run must not
# pass as green. Plain skip is for extra coverage a fresh Debian 12 lacks (CPython >= 3.12
# for -X perf, a second node on PATH) and for what a machine may rightly deny (root,
# perf_event_paranoid, kptr_restrict, mounting a tmpfs). Nothing depends on the locale, the
# terminal or the number of CPUs, and a test waits for work done, not for time passed.

bats_require_minimum_version 1.5.0

: "${PROFTOOL:?run the suites through 'make check' (PROFTOOL is unset)}"
: "${WORKLOADS:?run the suites through 'make check' (WORKLOADS is unset)}"

# as make check does, also when a suite is run by hand
export LC_ALL=C

# The Debian packages' programs the tests run (scripts/deps.sh check installs them). NODE, GO
# and CHROMIUM may name others, to try another version on purpose.
PYTHON3=/usr/bin/python3
NODE=${NODE:-/usr/bin/node}
GO=${GO:-/usr/bin/go}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

# python3 in a test is Debian's, never a pyenv shim or a virtualenv's earlier on PATH
python3() {
	"$PYTHON3" "$@"
}

# ---- what the machine has ----

# ci: whether this is CI (CI=true), where everything the set-up installs must be there
ci() {
	[ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]
}

# skip_or_fail REASON: skips the test, but fails it under CI=true, saying why
skip_or_fail() {
	if ci; then
		echo "proftool tests: $1; under CI=true a check that cannot run fails" >&2
		return 1
	fi
	skip "$1"
}

# need PROGRAM PACKAGE: PROGRAM (a path, or a name on PATH) of the Debian package PACKAGE,
# which scripts/deps.sh check installs; skip_or_fail without it
need() {
	command -v "$1" >/dev/null 2>&1 ||
		skip_or_fail "$1 is missing (Debian package $2; scripts/deps.sh check installs it)"
}

# package_installed PACKAGE: whether dpkg has the Debian package PACKAGE installed
package_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

# need_package PACKAGE: the Debian package PACKAGE, which scripts/deps.sh check installs
need_package() {
	package_installed "$1" ||
		skip_or_fail "the Debian package $1 is not installed (scripts/deps.sh check installs it)"
}

# need_browser [speedscope]: Debian's node and chromium, playwright-core and (with
# 'speedscope') speedscope's app from make consumers; exports CHROMIUM and PLAYWRIGHT for
# the scripts in tests/tools
need_browser() {
	need "$NODE" nodejs
	need "$CHROMIUM" chromium
	[ -n "${CONSUMERS:-}" ] || skip_or_fail "CONSUMERS is unset (make check sets it; the npm packages live there)"
	[ -f "$CONSUMERS/node_modules/playwright-core/package.json" ] ||
		skip_or_fail "playwright-core is missing from $CONSUMERS/node_modules (make consumers installs it)"
	if [ "${1:-}" = speedscope ]; then
		[ -f "$CONSUMERS/node_modules/speedscope/dist/release/index.html" ] ||
			skip_or_fail "speedscope is missing from $CONSUMERS/node_modules (make consumers installs it)"
	fi
	export CHROMIUM PLAYWRIGHT=$CONSUMERS/node_modules/playwright-core
}

# need_nobody: root, setpriv and the user 'nobody'; AS_NOBODY then runs a command as
# nobody, whose uid is in $nobody_uid
need_nobody() {
	[ "$(id -u)" = 0 ] || skip "needs root to act as another user"
	need setpriv util-linux
	id nobody >/dev/null 2>&1 || skip_or_fail "there is no user 'nobody' (Debian's base-passwd has one)"
	nobody_uid=$(id -u nobody)
	AS_NOBODY=(setpriv --reuid="$nobody_uid" --regid="$(id -g nobody)" --clear-groups --)
}

# public_dir [FILE...]: a directory under /tmp for tests that run something as another user,
# its path in $pub: world-readable copies of proftool ($pub/proftool) and of each FILE, and a
# world-writable $pub/out. Whatever that user runs or reads must come from there: bats's
# directories are private, and so may be the checkout (in root's 0700 home the user could
# neither run $PROFTOOL nor read a workload's symbols). The suite's teardown removes $pub.
public_dir() {
	local f

	pub=$(mktemp -d /tmp/proftool-pub.XXXXXX)
	chmod 0755 "$pub"
	cp "$PROFTOOL" "$pub/proftool"
	for f in "$@"; do
		cp "$f" "$pub/"
	done
	chmod 0755 "$pub"/*
	mkdir -m 0777 "$pub/out"
}

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

# wait_ready: waits (up to 20 s) until the program $target has written its pid into the file
# 'ready' (its output in target.out is shown if it dies first)
wait_ready() {
	for _ in $(seq 400); do
		[ -s ready ] && break
		kill -0 "$target" 2>/dev/null || { cat target.out >&2; return 1; }
		sleep 0.05
	done
	[ "$(cat ready)" = "$target" ]
}

# wait_file FILE: waits (up to 60 s) until FILE exists
wait_file() {
	for _ in $(seq 1200); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "no $1 after 60 s" >&2
	return 1
}

# wait_text FILE TEXT: waits (up to 60 s) until FILE holds TEXT
wait_text() {
	for _ in $(seq 1200); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "'$2' never appeared in $1: $(cat "$1" 2>/dev/null)" >&2
	return 1
}

# wait_child PARENT COMM: waits (up to 20 s) for a child of PARENT named COMM, prints its pid
wait_child() {
	local c

	for _ in $(seq 400); do
		for c in $(pgrep -P "$1"); do
			if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$2" ]; then
				echo "$c"
				return 0
			fi
		done
		sleep 0.05
	done
	echo "no child '$2' of $1 appeared" >&2
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

# Interpreters beyond Debian's, for extra coverage where installed (never required).
PYENV=${PYENV_ROOT:-$HOME/.pyenv}

# pyenv_python MINOR: pyenv's python3 of version MINOR (3.12), if installed
pyenv_python() {
	local py
	for py in "$PYENV"/versions/"$1".*/bin/python3; do
		[ -x "$py" ] && { echo "$py"; return 0; }
	done
	return 1
}

# use_python debian|MINOR: sets PY to Debian's python3 (never skipped under CI) or to
# pyenv's MINOR (skipped when it is not installed: extra coverage)
use_python() {
	if [ "$1" = debian ]; then
		[ -x "$PYTHON3" ] || skip_or_fail "no $PYTHON3 (Debian 12's python3 package)"
		PY=$PYTHON3
	else
		PY=$(pyenv_python "$1") || skip "no pyenv $1 under $PYENV (extra coverage)"
	fi
}
