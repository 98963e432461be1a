#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool report: sort keys, limits, folded output, merging, filters, output files.

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PROFTOOL" record -q -o split.data -- "$WORKLOADS/split" 0.6
	"$PROFTOOL" record -q -o rec.data -- "$WORKLOADS/recurse" 0.5
	"$PROFTOOL" record -q -o thr.data -- "$WORKLOADS/threads" 0.3
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# Prints the table rows only (after the column header), as "self cum tottime cumtime label".
rows() {
	awk '/filename:lineno\(function\)/ { on = 1; next } on && /^ *[0-9]+\/[0-9]+ / {
		split($1, n, "/"); print n[1], n[2], $2, $4, $6 }'
}

# sorted_by COLUMN ORDER: checks the rows on stdin are ordered (n = numeric desc, s = string asc).
sorted_by() {
	awk -v c="$1" -v o="$2" 'NR > 1 && ((o == "n" && $c + 0 > prev + 0) || (o == "s" && $c < prev)) {
		print "row " NR " breaks the order: " $0 > "/dev/stderr"; bad = 1 }
		{ prev = $c } END { exit bad }'
}

@test "default sort is cumtime, descending" {
	run --separate-stderr "$PROFTOOL" report split.data
	[ "$status" -eq 0 ]
	rows <<<"$output" >r
	[ "$(wc -l <r)" -ge 4 ]
	sorted_by 4 n <r
}

@test "--sort cumtime and its alias cumulative agree" {
	a=$("$PROFTOOL" report --sort cumtime split.data)
	b=$("$PROFTOOL" report --sort cumulative split.data)
	[ "$a" = "$b" ]
}

@test "--sort tottime (alias time) orders by self time" {
	run --separate-stderr "$PROFTOOL" report --sort tottime split.data
	[ "$status" -eq 0 ]
	rows <<<"$output" >r
	sorted_by 3 n <r
	[ "$(head -n1 r | awk '{ print $5 }')" = "split.c:$(grep -n '^leaf_a\|leaf_a(' "$BATS_TEST_DIRNAME/workloads/split.c" | head -n1 | cut -d: -f1)(leaf_a)" ] ||
		[[ "$(head -n1 r)" == *"(leaf_a)" ]]
	[ "$("$PROFTOOL" report --sort time split.data)" = "$output" ]
}

@test "--sort nsamples (aliases ncalls, calls) orders by self samples" {
	run --separate-stderr "$PROFTOOL" report --sort nsamples split.data
	[ "$status" -eq 0 ]
	rows <<<"$output" >r
	sorted_by 1 n <r
	[ "$("$PROFTOOL" report --sort ncalls split.data)" = "$output" ]
	[ "$("$PROFTOOL" report --sort calls split.data)" = "$output" ]
}

@test "--sort name orders by function name" {
	run --separate-stderr "$PROFTOOL" report --sort name --limit 0 split.data
	[ "$status" -eq 0 ]
	# the function name: inside the parentheses, or the whole label ("[kernel]", "libc.so.6+0x10")
	rows <<<"$output" | awk '{ l = $5; if (match(l, /\(.*\)$/)) l = substr(l, RSTART + 1, RLENGTH - 2); print l }' >names
	sort -c names
}

# keys: the table rows on stdin as "name<TAB>file<TAB>line", the file being the module when
# the row has no file (as the man page says --sort filename and nfl use them), line 0 then
keys() {
	awk '/filename:lineno\(function\)/ { on = 1; next }
	on && /^ *[0-9]+\/[0-9]+ / {
		l = $0
		for (i = 1; i <= 5; i++) sub(/^ *[^ ]+/, "", l)
		sub(/^ +/, "", l)
		if (match(l, /^[^(]*:[0-9]+\(/)) {            # file:line(name)
			head = substr(l, 1, RLENGTH - 1); name = substr(l, RLENGTH + 1)
			k = match(head, /:[0-9]+$/); file = substr(head, 1, k - 1); line = substr(head, k + 1)
		} else if (l ~ /^\[kernel\] /) {               # [kernel] name
			name = l; file = "[kernel]"; line = 0
		} else if (match(l, /^[^(]+\(/)) {             # module(name)
			file = substr(l, 1, RLENGTH - 1); name = substr(l, RLENGTH + 1); line = 0
		} else {                                        # module+0xOFFSET
			name = l; file = l; sub(/\+0x.*/, "", file); line = 0
		}
		sub(/\)$/, "", name)
		print name "\t" file "\t" line
	}'
}

@test "--sort filename and nfl order by file, then line / by name, file, line" {
	run --separate-stderr "$PROFTOOL" report --sort filename --limit 0 split.data
	[ "$status" -eq 0 ]
	keys <<<"$output" >fl
	cat fl
	[ "$(wc -l <fl)" -ge 6 ]
	# ascending by file (or module) in byte order, then by line; ties in any order (-s)
	LC_ALL=C sort -s -t $'\t' -k2,2 -k3,3n -c fl
	# split.c's functions come together, in the order of their lines
	lines=$(awk -F '\t' '$2 ~ /split\.c$/ { print NR, $1, $3 }' fl)
	echo "$lines"
	[ "$(awk '{ print $2 }' <<<"$lines" | tr '\n' ' ')" = "leaf_a leaf_b leaf_c main " ]
	awk 'NR > 1 && ($1 != prev + 1 || $3 <= pline) { exit 1 } { prev = $1; pline = $3 }' <<<"$lines"
	src="$BATS_TEST_DIRNAME/workloads/split.c"
	[ "$(awk '$2 == "leaf_a" { print $3 }' <<<"$lines")" -eq "$(grep -n 'void leaf_a(' "$src" | cut -d: -f1)" ]
	[ "$(awk '$2 == "main" { print $3 }' <<<"$lines")" -eq "$(grep -n '^int main(' "$src" | cut -d: -f1)" ]
	# the order covers rows of other files and modules too (libc's start-up code, _start)
	[ "$(cut -f2 fl | sort -u | wc -l)" -ge 3 ]

	run --separate-stderr "$PROFTOOL" report --sort nfl --limit 0 split.data
	[ "$status" -eq 0 ]
	keys <<<"$output" >nfl
	cat nfl
	# the same rows, ordered by name, then file, then line
	[ "$(sort fl)" = "$(sort nfl)" ]
	LC_ALL=C sort -s -t $'\t' -k1,1 -k2,2 -k3,3n -c nfl
	[ "$(awk -F '\t' '$1 ~ /^(leaf_[abc]|main)$/ { printf "%s ", $1 }' nfl)" = "leaf_a leaf_b leaf_c main " ]
	# and the two orders are not the same one
	[ "$(cut -f1 fl)" != "$(cut -f1 nfl)" ]
}

@test "--limit shows that many rows and says how many are hidden" {
	run --separate-stderr "$PROFTOOL" report --limit 2 split.data
	[ "$status" -eq 0 ]
	[ "$(rows <<<"$output" | wc -l)" -eq 2 ]
	[[ "$output" == *"more function"*"--limit 0 shows all"* ]]
	run --separate-stderr "$PROFTOOL" report --limit 0 split.data
	[ "$(rows <<<"$output" | wc -l)" -ge 5 ]
}

@test "folded output parses as 'stack count' and adds up to the sample count" {
	run --separate-stderr "$PROFTOOL" report --format folded split.data
	[ "$status" -eq 0 ]
	while IFS= read -r line; do
		[[ "$line" =~ ^[^\ ].*\ [0-9]+$ ]] || { echo "bad line: $line"; false; }
	done <<<"$output"
	total=$(awk '{ s += $NF } END { print s }' <<<"$output")
	header=$("$PROFTOOL" report split.data | sed -n 's/^\([0-9]*\) samples over.*/\1/p')
	[ "$total" -eq "$header" ]
	# root first: main comes before the leaf
	grep -q 'main;leaf_a [0-9]*$' <<<"$output"
}

@test "recursion is not counted twice in cumulative time" {
	run --separate-stderr "$PROFTOOL" report --limit 0 rec.data
	[ "$status" -eq 0 ]
	rows <<<"$output" >r
	# no function exceeds 100% cumulative, and recurse's count is at most the total
	awk '{ if ($2 + 0 > max) max = $2 } END { print max }' r >max
	total=$(sed -n 's/^\([0-9]*\) samples over.*/\1/p' <<<"$output")
	[ "$(cat max)" -le "$total" ]
	grep -q '(recurse)$' r
	rec_cum=$(awk '/\(recurse\)$/ { print $2 }' r)
	fold=$("$PROFTOOL" report --format folded rec.data)
	near "$(cum_share recurse <<<"$fold")" "$(awk -v a="$rec_cum" -v t="$total" 'BEGIN { printf "%.1f", 100 * a / t }')" 0.1
	near "$(cum_share recurse <<<"$fold")" 50 8
	near "$(cum_share ping <<<"$fold")" 50 8
}

@test "several files are merged and add up" {
	a=$("$PROFTOOL" report split.data | sed -n 's/^\([0-9]*\) samples over.*/\1/p')
	b=$("$PROFTOOL" report thr.data | sed -n 's/^\([0-9]*\) samples over.*/\1/p')
	run --separate-stderr "$PROFTOOL" report split.data thr.data
	[ "$status" -eq 0 ]
	[[ "$output" == "Profile of 2 merged files"* ]]
	[[ "$output" == *"$((a + b)) samples over"* ]]
	[[ "$output" == *"(leaf_a)"* ]]
	[[ "$output" == *"(worker_fn_1)"* ]]
	run --separate-stderr "$PROFTOOL" report -i split.data -i thr.data
	[[ "$output" == *"$((a + b)) samples over"* ]]
}

@test "--comm, --tid and --pid keep only matching samples" {
	run --separate-stderr "$PROFTOOL" report --comm worker-2 --format folded thr.data
	[ "$status" -eq 0 ]
	[[ "$output" == *worker_fn_2* ]]
	[[ "$output" != *worker_fn_1* ]]
	tid=$("$PROFTOOL" report --per-thread thr.data | sed -n 's/^=== worker-3 (pid \([0-9]*\), tid \([0-9]*\)) ===.*/\2/p')
	pid=$("$PROFTOOL" report --per-thread thr.data | sed -n 's/^=== worker-3 (pid \([0-9]*\), tid \([0-9]*\)) ===.*/\1/p')
	[ -n "$tid" ]
	run --separate-stderr "$PROFTOOL" report --tid "$tid" --format folded thr.data
	[[ "$output" == *worker_fn_3* ]]
	[[ "$output" != *worker_fn_2* ]]
	run --separate-stderr "$PROFTOOL" report --pid "$pid" --format folded thr.data
	[[ "$output" == *worker_fn_1* ]]
	run --separate-stderr "$PROFTOOL" report --pid 1 thr.data
	[ "$status" -eq 1 ]
	one_error_line
}

@test "-o writes the report to a file, same as stdout" {
	run --separate-stderr "$PROFTOOL" report -o out.txt split.data
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(cat out.txt)" = "$("$PROFTOOL" report split.data)" ]
}

@test "the report never opens the profiled binaries" {
	mkdir -p moved && cp "$WORKLOADS/split" moved/split
	"$PROFTOOL" record -q -o moved.data -- moved/split 0.3
	rm -rf moved
	run --separate-stderr "$PROFTOOL" report moved.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"split.c:"*"(leaf_a)"* ]]
}

@test "--format tree: the call tree, totals add up, recursion nested, small nodes folded" {
	run --separate-stderr "$PROFTOOL" report --format tree split.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"function (callees indented under their callers)"* ]]
	# leaf_a sits under main, indented further
	main_indent=$(awk '/\(main\)$/ { match($0, /  +[^ ]+\(main\)$/); print RLENGTH; exit }' <<<"$output")
	[ -n "$main_indent" ]
	grep -qE '\(leaf_a\)$' <<<"$output"
	# a root's samples equal the header's count
	total=$(sed -n 's/^\([0-9]*\) samples over.*/\1/p' <<<"$output")
	root=$(awk '/^ *[0-9.]+% +[0-9.]+% / && $0 ~ /\(_start\)$/ { print $5; exit }' <<<"$output")
	[ "$root" -le "$total" ]
	at_least "$root" "$((total * 95 / 100))"
	# recursion: recurse appears nested under itself, never above 100%
	run --separate-stderr "$PROFTOOL" report --format tree --min-percent 0 rec.data
	[ "$(grep -c '(recurse)$' <<<"$output")" -ge 10 ]
	awk '/^ *[0-9.]+% / { v = $1; sub(/%/, "", v); if (v + 0 > 100) bad = 1 } END { exit bad }' <<<"$output"
	# --min-percent folds the small nodes into one line per parent
	run --separate-stderr "$PROFTOOL" report --format tree --min-percent 25 split.data
	[[ "$output" == *"… 1 more below 25.0%"* ]]
	! grep -q '(leaf_c)$' <<<"$output" || false
}

@test "--format callers and callees, with --match" {
	run --separate-stderr "$PROFTOOL" report --format callers --match '^leaf_' split.data
	[ "$status" -eq 0 ]
	[ "$(grep -c '^ *<- .*(main)$' <<<"$output")" -eq 3 ]
	# the samples of an edge add up to the function's cumulative samples here
	a=$(awk '/\(leaf_a\)  \(/ { sub(/.*\(/, ""); print $1; exit }' <<<"$output")
	e=$(awk '/\(leaf_a\)  \(/ { getline; print $2 }' <<<"$output")
	[ "$a" = "$e" ]
	run --separate-stderr "$PROFTOOL" report --format callees --match '^main$' split.data
	[ "$status" -eq 0 ]
	for leaf in leaf_a leaf_b leaf_c; do
		grep -q "^ *-> .*($leaf)$" <<<"$output"
	done
	run --separate-stderr "$PROFTOOL" report --format callers --match 'no_such_fn' split.data
	[ "$status" -eq 1 ]
	one_error_line
	[ -z "$output" ]
	run --separate-stderr "$PROFTOOL" report --format callers --match '(' split.data
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" report --format tree --min-percent 200 split.data
	[ "$status" -eq 2 ]
}

@test "--per-process gives one section per process; --time-range keeps a window of samples" {
	"$PROFTOOL" record -q -o fork.data -- "$WORKLOADS/forker" 0.4 "$WORKLOADS/split" 0.3
	run --separate-stderr "$PROFTOOL" report --per-process fork.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"=== forked-child (pid "*") === "* ]]
	[[ "$output" == *"=== split (pid "*") === "* ]]
	! grep -q 'tid' <<<"$(grep '^===' <<<"$output")" || false
	# the sections add up to the whole
	total=$(sed -n 's/^\([0-9]*\) samples over.*/\1/p' <<<"$output")
	sum=$(sed -n 's/^=== .* === \([0-9]*\) samples (.*/\1/p' <<<"$output" | awk '{ s += $1 } END { print s }')
	[ "$sum" -eq "$total" ]
	# a time window keeps fewer samples, and the two halves add up
	all=$("$PROFTOOL" report split.data | sed -n 's/^\([0-9]*\) samples over.*/\1/p')
	a=$("$PROFTOOL" report --time-range -0.3 split.data | sed -n "s/^\([0-9]*\) samples (of $all total) over.*/\1/p")
	b=$("$PROFTOOL" report --time-range 0.3- split.data | sed -n "s/^\([0-9]*\) samples (of $all total) over.*/\1/p")
	[ "$a" -gt 0 ]
	[ "$b" -gt 0 ]
	[ "$a" -lt "$all" ]
	[ "$((a + b))" -eq "$all" ]
	run --separate-stderr "$PROFTOOL" report --time-range 5-2 split.data
	[ "$status" -eq 2 ]
	one_error_line
	run --separate-stderr "$PROFTOOL" report --time-range 1000- split.data
	[ "$status" -eq 1 ]
	one_error_line
}
