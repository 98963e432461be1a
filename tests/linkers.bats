#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Programs linked by other linkers than GNU ld: lld (Rust's default, and clang's with
# -fuse-ld=lld) packs its segments, so that the code starts in the file page where the
# read-only data ends and two segments cover the same page-aligned offset.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	need ld.lld lld
}

@test "a program linked by lld, without frame pointers: DWARF stacks whole, shares right" {
	gcc -O2 -g -fomit-frame-pointer -fuse-ld=lld -I"$BATS_TEST_DIRNAME/workloads" \
		-o split-lld "$BATS_TEST_DIRNAME/workloads/split.c"
	# the layout that once gave a load bias a page off (1 stack in 77 reached main)
	off=$(readelf -lW split-lld | awk '$1 == "LOAD" && / R E / { print $2 }')
	[ -n "$off" ]
	(( off % 4096 != 0 ))
	record_to lld.data -- ./split-lld 1
	run --separate-stderr "$PROFTOOL" report --format folded lld.data
	[ "$status" -eq 0 ]
	near "$(self_share leaf_a <<<"$output")" 50 5
	near "$(self_share leaf_c <<<"$output")" 20 5
	at_least "$(ancestor_share leaf_a main <<<"$output")" 95
	run --separate-stderr "$PROFTOOL" report lld.data
	[[ "$output" == *"split.c:"*"(leaf_a)"* ]]
}
