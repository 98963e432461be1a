#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The CPython stack reader (symbolize/python.c) on real interpreters, through
# tests/tools/pystack: Debian's /usr/bin/python3.11 (stripped, .dynsym only) always,
# and pyenv's interpreters (libpython3.X.so) where they are installed.

load helpers

SCRIPT=$BATS_TEST_DIRNAME/workloads/pystacks.py

teardown() {
	if [ -n "${PY_PID:-}" ]; then
		kill "$PY_PID" 2>/dev/null
		wait "$PY_PID" 2>/dev/null
	fi
	return 0
}

# line MARK: the line of pystacks.py marked "# @MARK"
line() {
	grep -n "# @$1\$" "$SCRIPT" | cut -d: -f1
}

# def_line NAME: the line of pystacks.py defining NAME (a function or class)
def_line() {
	grep -nE "^ *(async def|def|class) $1\b" "$SCRIPT" | cut -d: -f1
}

# start_python PY [ARG]: runs pystacks.py and waits until it says every thread is parked
start_python() {
	"$1" "$SCRIPT" ${2:+"$2"} >ready.out 2>python.err &
	PY_PID=$!
	for _ in $(seq 100); do
		grep -q '^ready$' ready.out && return 0
		kill -0 "$PY_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat python.err >&2
	return 1
}

# parked: every parked thread is in its time.sleep line in stacks.out
parked() {
	local m
	for m in inner recurse-leaf gen coro-leaf key; do
		grep -q "line $(line "$m")\b" stacks.out || return 1
	done
}

# read_stacks: pystack -s's output into stacks.out once every thread is parked
# ("ready" is printed a few instructions before the last thread reaches its line)
read_stacks() {
	for _ in $(seq 50); do
		"$TOOLS/pystack" -s "$PY_PID" >stacks.out || return 1
		parked && return 0
		sleep 0.1
	done
	cat stacks.out >&2
	return 1
}

# thread_of QUALNAME: the header and frames of the thread whose innermost frame is QUALNAME
thread_of() {
	awk -v q="($1)" '/^thread / { hdr = $0; first = 1; keep = 0; next }
		first { keep = index($0, q) > 0; first = 0; if (keep) print hdr }
		keep' stacks.out
}

# frame QUALNAME MARK: the expected frame line (without flags) of QUALNAME parked at MARK
frame() {
	local def
	def=$(def_line "${1##*.}")
	echo "  $SCRIPT:$def($1) line $(line "$2")"
}

check_python() {
	local py=$1 t
	start_python "$py"
	read_stacks
	head -1 stacks.out | grep -q "^python 30[bcd]"

	# nested functions and a method: names, first lines, current lines
	t=$(thread_of 'nested.<locals>.inner')
	[[ "$t" == "thread "*": complete, 5 frames"* ]]
	diff -u <(printf '%s\n' "$(frame nested.\<locals\>.inner inner)" "$(frame nested nested)" \
			"$(frame Klass.method method)" "$(frame outer outer)" \
			"  $SCRIPT:1(<module>) line $(line main) [entry]") \
		<(sed 1d <<<"$t")

	# 900-deep recursion: 901 frames of recurse, the innermost parked, then threading's
	t=$(thread_of recurse)
	[[ "$t" == "thread "*": complete, "*" frames"* ]]
	[ "$(grep -c '(recurse) line' <<<"$t")" -eq 901 ]
	[ "$(sed -n 2p <<<"$t")" == "$(frame recurse recurse-leaf)" ]
	[[ "$(sed -n 3p <<<"$t")" == "$(frame recurse recurse)"* ]]
	[[ "$(tail -1 <<<"$t")" == *"threading.py:"*"(Thread._bootstrap) line "*" [entry]" ]]

	# a generator, driven by a for loop
	t=$(thread_of gen)
	[[ "$t" == "thread "*": complete, "* ]]
	[[ "$(sed -n 2p <<<"$t")" == "$(frame gen gen)"*"[generator]" ]]
	[[ "$(sed -n 3p <<<"$t")" == "$(frame consume_gen consume)"* ]]

	# a coroutine awaiting another, run by asyncio: entered from the C Task
	t=$(thread_of coro_leaf)
	[[ "$t" == "thread "*": complete, "* ]]
	[[ "$(sed -n 2p <<<"$t")" == "$(frame coro_leaf coro-leaf)"*"[generator]" ]]
	[ "$(sed -n 3p <<<"$t")" == "$(frame coro coro) [entry] [generator]" ]
	grep -q 'asyncio/runners.py:[0-9]*(run) line' <<<"$t"

	# Python -> C (sorted) -> Python: the key function starts a run of its own
	t=$(thread_of key)
	[[ "$t" == "thread "*": complete, "* ]]
	[ "$(sed -n 2p <<<"$t")" == "$(frame key key) [entry]" ]
	[[ "$(sed -n 3p <<<"$t")" == "$(frame sorter sorter)"* ]]
}

@test "python3.11 of Debian (stripped, .dynsym only): names, lines, recursion, generator, coroutine, callback" {
	need /usr/bin/python3.11 python3.11
	check_python /usr/bin/python3.11
}

@test "pyenv's 3.11 (libpython3.11.so): the same stacks" {
	py=$(pyenv_python 3.11) || skip "no pyenv 3.11 under $PYENV (extra coverage)"
	check_python "$py"
}

@test "pyenv's 3.12 (shim frames): the same stacks" {
	py=$(pyenv_python 3.12) || skip "no pyenv 3.12 under $PYENV (extra coverage)"
	check_python "$py"
}

@test "pyenv's 3.13 (_Py_DebugOffsets): the same stacks" {
	py=$(pyenv_python 3.13) || skip "no pyenv 3.13 under $PYENV (extra coverage)"
	check_python "$py"
}

@test "a running thread read without stopping it: only its own frames" {
	need /usr/bin/python3.11 python3.11
	start_python /usr/bin/python3.11 spin
	for _ in $(seq 20); do
		"$TOOLS/pystack" "$PY_PID" >stacks.out
		t=$(thread_of spin)
		[ -z "$t" ] && continue
		# spin, Thread.run, Thread._bootstrap_inner, Thread._bootstrap
		[[ "$(head -1 <<<"$t")" == *": complete, 4 frames" ]]
		f=$(sed -n 2p <<<"$t")
		[ "$f" == "  $SCRIPT:$(def_line spin)(spin) line $(line spin) [entry]" ] ||
			[ "$f" == "  $SCRIPT:$(def_line spin)(spin) line $(($(line spin) - 1)) [entry]" ]
	done
	grep -q '(spin) line' stacks.out
}

@test "pyenv's 3.7 to 3.10: refused as unsupported, by name" {
	found=0
	for minor in 3.7 3.8 3.9 3.10; do
		py=$(pyenv_python "$minor") || continue
		found=1
		"$py" -c 'import time; print("ready", flush=True); time.sleep(60)' >ready.out &
		PY_PID=$!
		for _ in $(seq 50); do grep -q ready ready.out && break; sleep 0.1; done
		run "$TOOLS/pystack" "$PY_PID"
		kill "$PY_PID"
		wait "$PY_PID" || true
		PY_PID=
		[ "$status" -eq 3 ]
		[[ "${lines[0]}" == "python 3"*"0000 (from its name) in "*"libpython$minor"* ]]
		[ "${lines[1]}" == "unsupported: Python $minor is not supported (3.11 to 3.13 are)" ]
	done
	[ "$found" -eq 1 ] || skip "no pyenv 3.7 to 3.10 under $PYENV (extra coverage)"
}
