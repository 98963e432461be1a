#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every error is one 'proftool: ' line on stderr with a non-zero status (2 for usage).

load helpers

usage_fails() {
	run --separate-stderr "$PROFTOOL" "$@"
	[ "$status" -eq 2 ] || { echo "status $status for: $*"; return 1; }
	one_error_line
}

@test "usage errors exit 2 with one line" {
	usage_fails
	usage_fails frobnicate
	usage_fails record
	usage_fails record --
	usage_fails record -F 0 -- true
	usage_fails record -F 10001 -- true
	usage_fails record -F abc -- true
	usage_fails record -F 99x -- true
	usage_fails record -g bogus -- true
	usage_fails record -e bogus -- true
	usage_fails record --backend bogus -- true
	usage_fails record --mode bogus -- true
	usage_fails record --unwind-scan bogus -- true
	usage_fails record --duration -1 -- true
	usage_fails record --duration x -- true
	usage_fails record --no-such-option -- true
	usage_fails record -o
	usage_fails report --sort bogus
	usage_fails report --format bogus
	usage_fails report --limit -3
	usage_fails report --pid abc
	usage_fails report --tid 0
	usage_fails report --bogus
	usage_fails help frobnicate
}

@test "usage errors point at --help" {
	run --separate-stderr "$PROFTOOL" record -F 0 -- true
	[ "$stderr" = "proftool: -F must be a whole number from 1 to 10000, not '0'; see 'proftool record --help'" ]
	run --separate-stderr "$PROFTOOL" record
	[ "$stderr" = "proftool: no command given after '--'; see 'proftool record --help'" ]
}

@test "a missing profile" {
	run --separate-stderr "$PROFTOOL" report -i nothing-here.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == "proftool: cannot read 'nothing-here.data': No such file or directory; record one with"* ]]
}

@test "a directory, a garbage file, an empty file" {
	mkdir d
	run --separate-stderr "$PROFTOOL" report d
	[ "$status" -eq 1 ]
	one_error_line
	head -c 3000 /dev/urandom >garbage.data
	printf '\x00' | dd of=garbage.data bs=1 count=1 conv=notrunc 2>/dev/null
	run --separate-stderr "$PROFTOOL" report garbage.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"not a proftool profile"* ]]
	: >empty.data
	run --separate-stderr "$PROFTOOL" report empty.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"empty"* ]]
}

@test "a truncated profile" {
	record_to full.data -- "$WORKLOADS/split" 0.3
	size=$(stat -c %s full.data)
	head -c $((size / 2)) full.data >half.data
	run --separate-stderr "$PROFTOOL" report half.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"truncated"* ]]
	head -c $((size - 4)) full.data >short.data
	run --separate-stderr "$PROFTOOL" report short.data
	[ "$status" -eq 1 ]
	one_error_line
}

@test "a corrupted profile" {
	record_to full.data -- "$WORKLOADS/split" 0.3
	zcat full.data | sed 's/"stack":\[/"stack":[99999999,/' | gzip >bad-index.data
	run --separate-stderr "$PROFTOOL" report bad-index.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"corrupt"* ]]
	zcat full.data | head -c 500 | gzip >cut-json.data
	run --separate-stderr "$PROFTOOL" report cut-json.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"corrupt"* ]]
}

@test "a foreign file: JSON or gzip that is not a profile, and perf.data" {
	echo '{"traceEvents": []}' | gzip >foreign.data
	run --separate-stderr "$PROFTOOL" report foreign.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"not a proftool profile"* ]]
	printf 'PERFILE2\0\0\0\0' >perf.data
	run --separate-stderr "$PROFTOOL" report perf.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"not a proftool profile"* ]]
}

@test "a profile from a newer proftool" {
	echo '{"format":"proftool-profile","version":99}' | gzip >new.data
	run --separate-stderr "$PROFTOOL" report new.data
	[ "$status" -eq 1 ]
	one_error_line
	[[ "$stderr" == *"newer proftool"* ]]
}

@test "a profile without samples is an error, not an empty report" {
	run --separate-stderr "$PROFTOOL" record -o nos.data -- true
	[ "$status" -eq 0 ]
	if [ "$(zcat nos.data | grep -o '"samples":[0-9]*' | head -n1)" = '"samples":0' ]; then
		[[ "$stderr" == *"warning: no samples were recorded"* ]]
		run --separate-stderr "$PROFTOOL" report nos.data
		[ "$status" -eq 1 ]
		one_error_line
		[[ "$stderr" == *"no samples in 'nos.data'"* ]]
	fi
}

@test "report -o into a missing directory fails cleanly" {
	record_to p.data -- "$WORKLOADS/split" 0.2
	run --separate-stderr "$PROFTOOL" report -o no/such/dir/out.txt p.data
	[ "$status" -eq 1 ]
	one_error_line
}

@test "record -o into a missing directory fails before the command runs" {
	run --separate-stderr "$PROFTOOL" record -q -o no/such/dir/p.data -- touch ran
	[ "$status" -eq 1 ]
	one_error_line
	[ "$stderr" = "proftool: cannot create 'no/such/dir/p.data': No such file or directory" ]
	[ ! -e ran ]
}

@test "--help, help COMMAND and --version" {
	run "$PROFTOOL" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *record*attach*report* ]]
	run "$PROFTOOL" help record
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: proftool record"* ]]
	run "$PROFTOOL" report --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: proftool report"* ]]
	run "$PROFTOOL" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^proftool\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "a write error on stdout is a failure" {
	[ -w /dev/full ] || skip "no /dev/full"
	record_to p.data -- "$WORKLOADS/split" 0.2
	run --separate-stderr bash -c "'$PROFTOOL' report p.data >/dev/full"
	[ "$status" -eq 1 ]
	one_error_line
}

@test "-o naming a device writes to it and never replaces it" {
	[ -c /dev/null ] || skip "no /dev/null"
	run --separate-stderr "$PROFTOOL" record -q -o /dev/null -- "$WORKLOADS/split" 0.1
	[ "$status" -eq 0 ]
	[ -c /dev/null ]
	record_to p.data -- "$WORKLOADS/split" 0.1
	run --separate-stderr "$PROFTOOL" report -o /dev/null p.data
	[ "$status" -eq 0 ]
	[ -c /dev/null ]
	[ -z "$(ls -A /dev | grep '^\.null\.')" ]
}
