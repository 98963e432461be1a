# SPDX-License-Identifier: MIT
# Sourced by the bench scripts (after cd to the source root, with die defined): what they
# set up alike.

# bench_workdir NAME: a temporary directory $T, removed at exit, and $PT a copy of the
# proftool to measure in it (the same binary for every run, whatever happens to the build
# directory meanwhile).
bench_workdir() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/proftool-bench-$1.XXXXXX")
	trap 'rm -rf "$T"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	cp "$PT" "$T/proftool"
	PT=$T/proftool
}

# bench_tools: $BL, bench/benchload.c built into $T; PERF, the perf command line when perf
# works here (its build-id cache in $T, so that the bench leaves nothing behind), else ().
bench_tools() {
	BL=$T/benchload
	gcc -std=gnu11 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
		-Wall -Wextra -Werror -o "$BL" bench/benchload.c -lm
	PERF=()
	if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
		PERF=(perf --buildid-dir "$T/perf-debug")
		"${PERF[@]}" record -q -e cpu-clock -o "$T/probe.perf" -- true >/dev/null 2>&1 || PERF=()
		rm -f "$T/probe.perf"
	fi
}
