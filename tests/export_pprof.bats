#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool report --format pprof: what the real consumer, go tool pprof, shows of the file.

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PROFTOOL" record -q -o split.data -- "$WORKLOADS/split" 1.0
	"$PROFTOOL" record -q -o thr.data -- "$WORKLOADS/threads" 0.5
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
	# go wants a writable cache and home; never let it fetch a newer toolchain
	export HOME=$BATS_TEST_TMPDIR GOCACHE=$BATS_TEST_TMPDIR/gocache GOTOOLCHAIN=local GOFLAGS=
	export PPROF_TMPDIR=$BATS_TEST_TMPDIR
}

# go tool pprof is Debian's (golang-go; GO= may name another to try it). The tests read its
# reports for what proftool wrote, not for how one version of pprof lays them out: -raw
# gained a column to file:line in 2024, -tags an "of TOTAL (P%)" in 2025.
need_go() {
	need "$GO" golang-go
}

# pprof ARGS...: go tool pprof
pprof() {
	"$GO" tool pprof "$@"
}

# The sample count in proftool's report header.
header_samples() {
	"$PROFTOOL" report "$@" | sed -n 's/^\([0-9]*\) samples\{0,1\} over.*/\1/p'
}

# table_count FILE FUNCTION self|cum|tottime: FUNCTION's samples in proftool's
# table, or its self time in milliseconds.
table_count() {
	"$PROFTOOL" report --limit 0 "$1" |
		awk -v f="($2)" -v w="$3" 'substr($NF, length($NF) - length(f) + 1) == f && $1 ~ /^[0-9]+\/[0-9]+$/ {
			split($1, n, "/"); print (w == "self" ? n[1] : w == "cum" ? n[2] : $2 * 1000); exit }'
}

# top_col FUNCTION COLUMN: a column of FUNCTION's row in pprof -top output on stdin
# (1 flat, 2 flat%, 4 cum, 5 cum%; the percent sign dropped).
top_col() {
	awk -v f="$1" -v c="$2" 'NF == 6 && $6 == f { v = $c; sub(/%$/, "", v); print v; exit }'
}

# tag_count KEY VALUE: the samples pprof -tags (on stdin) gives VALUE of tag KEY (its
# headers read "KEY: Total N", or "KEY: Total N of M (P%)" since 2025).
tag_count() {
	awk -v k="$1:" -v v="$2" '/^ *[a-z]+: Total / { sec = $1; next }
		sec == k && $NF == v { print $1 + 0; exit }'
}

# pprof's "Total samples = N" with -sample_index=samples.
pprof_total() {
	sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p'
}

@test "go tool pprof -top: the 50/30/20 split, same counts as proftool's table" {
	need_go
	run --separate-stderr "$PROFTOOL" report --format pprof -o p.pb.gz split.data
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ -z "$stderr" ]

	run --separate-stderr pprof -top -nodecount=50 p.pb.gz
	[ "$status" -eq 0 ]
	[[ "$output" == *"Type: cpu"* ]]
	for fn in leaf_a leaf_b leaf_c main; do
		[ -n "$(top_col "$fn" 1 <<<"$output")" ] || { echo "no $fn in: $output"; false; }
	done

	run --separate-stderr pprof -top -nodecount=50 -sample_index=samples p.pb.gz
	[ "$status" -eq 0 ]
	[[ "$output" == *"Type: samples"* ]]
	top=$output
	# the same samples: pprof's total is proftool's sample count, and so is every function's
	[ "$(pprof_total <<<"$top")" -eq "$(header_samples split.data)" ]
	for fn in leaf_a leaf_b leaf_c; do
		[ "$(top_col "$fn" 1 <<<"$top")" -eq "$(table_count split.data "$fn" self)" ]
		[ "$(top_col "$fn" 4 <<<"$top")" -eq "$(table_count split.data "$fn" cum)" ]
	done
	[ "$(top_col main 4 <<<"$top")" -eq "$(table_count split.data main cum)" ]
	# the shares agree with the folded stacks, and with the workload's split
	folded=$("$PROFTOOL" report --format folded split.data)
	near "$(top_col leaf_a 2 <<<"$top")" "$(self_share leaf_a <<<"$folded")" 0.1
	near "$(top_col leaf_b 2 <<<"$top")" "$(self_share leaf_b <<<"$folded")" 0.1
	near "$(top_col leaf_c 2 <<<"$top")" "$(self_share leaf_c <<<"$folded")" 0.1
	near "$(top_col leaf_a 2 <<<"$top")" 50 5
	near "$(top_col leaf_b 2 <<<"$top")" 30 5
	near "$(top_col leaf_c 2 <<<"$top")" 20 5
	at_least "$(top_col main 5 <<<"$top")" 95
	# the default values are CPU time: proftool's tottime (seconds, 3 decimals) in ms
	cpu=$(pprof -top -nodecount=50 -unit=ms p.pb.gz)
	for fn in leaf_a leaf_b leaf_c; do
		near "$(top_col "$fn" 1 <<<"$cpu" | sed 's/ms$//')" "$(table_count split.data "$fn" tottime)" 1
	done
}

@test "go tool pprof -raw and -lines: source files, lines and the command line" {
	need_go
	"$PROFTOOL" report --format pprof -o p.pb.gz split.data
	# proftool's table says where leaf_a is declared: split.c:LINE(leaf_a)
	decl=$("$PROFTOOL" report --limit 0 split.data | awk '$NF ~ /\(leaf_a\)$/ { print $NF; exit }')
	file=${decl%%:*}
	line=${decl#*:}
	line=${line%%(*}
	[[ "$file" == *split.c ]]
	run --separate-stderr pprof -raw p.pb.gz
	[ "$status" -eq 0 ]
	[[ "$output" == "Comment: $WORKLOADS/split 1.0"* ]]
	[[ "$output" == *"PeriodType: cpu nanoseconds"* ]]
	[[ "$output" == *"samples/count cpu/nanoseconds"* ]]
	# each location: its function, file:line inside it (file:line:column in newer pprof), and
	# the declaration line
	grep -qE "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ leaf_a $file:[0-9]+(:[0-9]+)? s=$line\$" <<<"$output"
	grep -qE "thread:\[split\]" <<<"$output"
	run --separate-stderr pprof -top -lines -sample_index=samples p.pb.gz
	[ "$status" -eq 0 ]
	grep -qE " leaf_a $file:[0-9]+\$" <<<"$output"
	grep -qE " leaf_b $file:[0-9]+\$" <<<"$output"
}

@test "go tool pprof -tags and -traces: threads keep their names and ids" {
	need_go
	run --separate-stderr "$PROFTOOL" report --format pprof -o t.pb.gz thr.data
	[ "$status" -eq 0 ]
	run --separate-stderr pprof -tags -sample_index=samples t.pb.gz
	[ "$status" -eq 0 ]
	tags=$output
	per_thread=$("$PROFTOOL" report --per-thread thr.data)
	for name in main-thr worker-1 worker-2 worker-3; do
		# "=== worker-1 (pid P, tid T) === N samples (x%)" against pprof's "N.0 (x%): worker-1"
		want=$(sed -n "s/^=== $name (pid [0-9]*, tid [0-9]*) === \([0-9]*\) samples.*/\1/p" <<<"$per_thread")
		tid=$(sed -n "s/^=== $name (pid [0-9]*, tid \([0-9]*\)) ===.*/\1/p" <<<"$per_thread")
		[ -n "$want" ]
		[ -n "$tid" ]
		got=$(tag_count thread "$name" <<<"$tags")
		[ "$got" = "$want" ] || { echo "$name: pprof $got samples, proftool $want"; false; }
		# the tid tag carries the same count
		[ "$(tag_count tid "$tid" <<<"$tags")" = "$want" ]
	done
	pid=$(sed -n 's/^=== worker-1 (pid \([0-9]*\),.*/\1/p' <<<"$per_thread")
	[ "$(tag_count pid "$pid" <<<"$tags")" = "$(header_samples thr.data)" ]

	# -traces labels each stack with its thread
	run --separate-stderr pprof -traces t.pb.gz
	[ "$status" -eq 0 ]
	grep -qE '^ +thread: +worker-2$' <<<"$output"
	grep -qE '^ +tid: +[0-9]+$' <<<"$output"
	# -tagfocus picks one thread's stacks
	run --separate-stderr pprof -top -tagfocus=thread=worker-2 t.pb.gz
	[ "$status" -eq 0 ]
	[[ "$output" == *" worker_fn_2"* ]]
	[[ "$output" != *" worker_fn_1"* ]]
	# and proftool's own filters apply before the export
	"$PROFTOOL" report --format pprof --comm worker-3 -o w3.pb.gz thr.data
	run --separate-stderr pprof -tags w3.pb.gz
	[[ "$output" == *": worker-3"* ]]
	[[ "$output" != *": worker-1"* ]]
}

@test "merged inputs: pprof's total is the sum of both files" {
	need_go
	a=$(header_samples split.data)
	b=$(header_samples thr.data)
	run --separate-stderr "$PROFTOOL" report --format pprof -o m.pb.gz split.data thr.data
	[ "$status" -eq 0 ]
	run --separate-stderr pprof -top -nodecount=100 -sample_index=samples m.pb.gz
	[ "$status" -eq 0 ]
	[ "$(pprof_total <<<"$output")" -eq "$((a + b))" ]
	[[ "$output" == *" leaf_a"* ]]
	[[ "$output" == *" worker_fn_1"* ]]
}

@test "in wall-clock mode the time values are called wall" {
	need_go
	record_to wall.data --mode wall -- "$WORKLOADS/split" 0.3
	"$PROFTOOL" report --format pprof -o wall.pb.gz wall.data
	run --separate-stderr pprof -raw wall.pb.gz
	[ "$status" -eq 0 ]
	[[ "$output" == *"samples/count wall/nanoseconds"* ]]
	run --separate-stderr pprof -top wall.pb.gz
	[[ "$output" == *"Type: wall"* ]]
	[[ "$output" == *" leaf_a"* ]]
}

@test "the file is gzip with no timestamp: stdout and -o give the same bytes every time" {
	"$PROFTOOL" report --format pprof split.data >stdout.pb.gz
	"$PROFTOOL" report --format pprof -o o.pb.gz split.data
	# magic 1f 8b, deflate, no flags, then MTIME 0
	[ "$(od -An -tx1 -N8 stdout.pb.gz | tr -d ' \n')" = 1f8b080000000000 ]
	gzip -t stdout.pb.gz
	cmp stdout.pb.gz o.pb.gz
	"$PROFTOOL" report --format pprof -o again.pb.gz split.data
	cmp o.pb.gz again.pb.gz
}

@test "pprof output to a terminal is refused: it is binary" {
	need script bsdutils
	printf -v cmd '%q ' "$PROFTOOL" report --format pprof split.data
	run env SHELL="$BASH" script -qec "$cmd" /dev/null </dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"proftool: "*"-o FILE"* ]]
	[[ "$output" != *$'\x1f'* ]]
}
