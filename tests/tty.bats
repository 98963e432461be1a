#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# record's live status line: on stderr, only while stderr is a terminal, never with -q.
# script(1) gives the command a pseudo-terminal; what reached it is in $output.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	command -v script >/dev/null || skip "script (bsdutils) is needed for a pseudo-terminal"
}

# on_tty SHELL-COMMAND: runs SHELL-COMMAND (bash syntax) with a terminal as stdin, stdout
# and stderr, except where it redirects them itself.
on_tty() {
	run env SHELL="$BASH" script -qec "$1" /dev/null </dev/null
}

@test "on a terminal, stderr shows a live status line with the sample count, erased before the closing line" {
	printf -v cmd '%q ' "$PROFTOOL" record -o tty.data -- "$WORKLOADS/split" 1
	on_tty "$cmd >stdout.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"proftool: recording "* ]]
	grep -qE 'proftool: recording [0-9]+\.[0-9] s, [1-9][0-9]* samples, [0-9]+ lost, ' <<<"$output"
	[[ "$output" == *$'\r\e[K'"proftool: wrote tty.data: "*" samples, "* ]]
	[ -e stdout.txt ] && [ ! -s stdout.txt ]
}

@test "on a terminal, -q shows nothing at all" {
	printf -v cmd '%q ' "$PROFTOOL" record -q -o q.data -- "$WORKLOADS/split" 1
	on_tty "$cmd"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -s q.data ]
}

@test "without a terminal, stderr has only the closing line" {
	run --separate-stderr "$PROFTOOL" record -o plain.data -- "$WORKLOADS/split" 0.5
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "proftool: wrote plain.data: "*" samples, "* ]]
	[[ "$stderr" != *$'\r'* && "$stderr" != *$'\e'* ]]
}

@test "with stdout on a terminal but not stderr, there is no status line" {
	printf -v cmd '%q ' "$PROFTOOL" record -o out.data -- "$WORKLOADS/split" 1
	on_tty "$cmd 2>stderr.txt"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	mapfile -t lines <stderr.txt
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "proftool: wrote out.data: "*" samples, "* ]]
	! grep -q $'[\r\e]' stderr.txt
}
