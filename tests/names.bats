#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Names that are not UTF-8 and names of any length (the contract's "Names that are not
# UTF-8"): recorded as the bytes they are, read back exactly, printed as \xNN in every
# format; no name makes record or report fail, hang or write an unreadable profile.

load helpers

FORMATS="table tree callers callees folded groups json timers speedscope chrome pprof svg html"

# every_format FILE: each format of FILE's report exits 0 within a minute, into out.FMT
every_format() {
	local f
	for f in $FORMATS; do
		run --separate-stderr timeout 60 "$PROFTOOL" report -i "$1" --format "$f" -o "out.$f"
		[ "$status" -eq 0 ] || { echo "--format $f: status $status: $stderr"; false; }
		[ -s "out.$f" ] || { echo "--format $f wrote nothing"; false; }
	done
	# what JSON-based formats write is JSON, and UTF-8 throughout
	for f in json timers speedscope chrome; do
		python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' \
			"out.$f" || { echo "--format $f is not UTF-8 JSON"; false; }
	done
}

@test "names: a command line that is not UTF-8 is kept in the profile and printed as \\xNN" {
	record_to u.data -- "$WORKLOADS/names" 0.3 $'caf\xe9'
	# the file holds the bytes themselves
	[ "$(pjson u.data 'p["version"]')" = 2 ]
	pjson u.data 'p["meta"]["command"]' | grep -qF "caf\\\\xe9"
	run --separate-stderr "$PROFTOOL" report -i u.data --limit 3
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Profile u.data: $WORKLOADS/names 0.3 caf\\xe9" ]]
	every_format u.data
}

@test "names: symbols, thread names and regions that are not UTF-8, in every format" {
	record_to n.data -- "$WORKLOADS/names" 0.5
	every_format n.data
	# the symbol in the table, the folded stacks and the exports, escaped
	grep -qF 'work_caf\xe9' out.table
	# (awk, under the share helpers, reads \\ in a name as \)
	near "$(self_share 'work_caf\\xe9' <out.folded)" 40 10
	grep -qF '"work_caf\\xe9"' out.json
	grep -qF '"work_caf\\xe9"' out.speedscope
	grep -qF 'work_caf\\xe9' out.chrome
	grep -qF 'work_caf\xe9' out.svg
	# the thread's name
	run --separate-stderr "$PROFTOOL" report -i n.data --per-thread --limit 1
	[ "$status" -eq 0 ]
	grep -qF '=== w\xff (pid ' <<<"$output"
	# the region's name
	run --separate-stderr "$PROFTOOL" report -i n.data --format regions
	[ "$status" -eq 0 ]
	grep -qE ' caf\\xe9$' <<<"$output"
	# filters name them as reports print them, or by their bytes
	run --separate-stderr "$PROFTOOL" report -i n.data --comm 'w\xff' --format folded
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	run --separate-stderr "$PROFTOOL" report -i n.data --comm $'w\xff' --format folded
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	run --separate-stderr "$PROFTOOL" report -i n.data --region $'caf\xe9' --format folded
	[ "$status" -eq 0 ]
	# (a sample can fall in the few instructions of the runtime around its clock reading)
	at_least "$(cum_share 'work_caf\\xe9' <<<"$output")" 99
}

@test "names: an executable, a source file and an output file whose names are not UTF-8" {
	need gcc gcc
	mkdir $'dir\xfe'
	cat >$'dir\xfe/sp\xfflit.c' <<'EOF'
#include <stdio.h>
__attribute__((noinline)) static double spin(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += i * 0.5;
	return x;
}
int main(void) { printf("%f\n", spin(150000000)); return 0; }
EOF
	gcc -O1 -g -o $'dir\xfe/sp\xfflit' $'dir\xfe/sp\xfflit.c'
	record_to $'caf\xe9.data' -- $'./dir\xfe/sp\xfflit'
	run --separate-stderr "$PROFTOOL" report $'caf\xe9.data' --limit 0
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == 'Profile caf\xe9.data: ./dir\xfe/sp\xfflit' ]]
	# the module and the DWARF file name, whole and escaped
	grep -qF 'dir\xfe/sp\xfflit.c:2(spin)' <<<"$output"
	grep -qF 'sp\xfflit(_start)' <<<"$output"
	every_format $'caf\xe9.data'
	grep -qF 'sp\xfflit' out.groups
	# nothing printed holds a byte that is not UTF-8
	for f in table tree callers callees folded groups svg html; do
		python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "out.$f"
	done
}

@test "names: a Python script whose file name is not UTF-8, with functions named in Unicode" {
	printf 'def caf\xc3\xa9_loop(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n\ndef \xe4\xb8\xad\xe6\x96\x87(n):\n    return caf\xc3\xa9_loop(n)\n\n\xe4\xb8\xad\xe6\x96\x87(2500000)\n' >$'sp\xfflit.py'
	record_to p.data -- "$PYTHON3" $'sp\xfflit.py'
	run --separate-stderr "$PROFTOOL" report -i p.data --limit 0
	[ "$status" -eq 0 ]
	# the file name's bytes come back (Python holds them as surrogate escapes), valid UTF-8 as it is
	grep -qF $'sp\\xfflit.py:1(caf\xc3\xa9_loop)' <<<"$output"
	grep -qF $'sp\\xfflit.py:7(\xe4\xb8\xad\xe6\x96\x87)' <<<"$output"
	pjson p.data '[n for n in p["functions"]["file"] if isinstance(n, dict)]' | grep -qF 'sp\\xfflit.py'
	every_format p.data
}

@test "names: two symbols sharing a 1500-byte prefix and a 6000-byte symbol, whole in every format" {
	# no region: the timers are then the functions' (with regions, the regions')
	record_to n.data -- "$WORKLOADS/names" 0.3 plain
	every_format n.data
	q=$(printf 'q%.0s' $(seq 1500))
	l=$(printf 'L%.0s' $(seq 6000))
	for f in table tree folded json timers speedscope chrome; do
		grep -qF "${q}_left" "out.$f" || { echo "--format $f lost ${q:0:8}..._left"; false; }
		grep -qF "${q}_right" "out.$f" || { echo "--format $f lost ${q:0:8}..._right"; false; }
		grep -qF "$l" "out.$f" || { echo "--format $f cut the 6000-byte name"; false; }
	done
	# the timers tell the two siblings apart by their whole names
	python3 - out.timers "$q" <<'EOF'
import json, sys
t, q = json.load(open(sys.argv[1])), sys.argv[2]
def keys(node):
    for k, v in node.get("children", {}).items():
        yield k
        yield from keys(v)
ks = set(keys(t))
assert q + "_left" in ks and q + "_right" in ks, sorted(k[:20] for k in ks)
EOF
	near "$(self_share "${q}_left" <out.folded)" 20 8
	near "$(self_share "$l" <out.folded)" 20 8
}

@test "names: a profile written by a proftool before byte strings (version 1) still reads" {
	record_to v1.data -- "$WORKLOADS/names" 0.1
	# what the names workload records needs version 2; one without such names is version 1
	[ "$(pjson v1.data 'p["version"]')" = 2 ]
	python3 - v1.data <<'EOF'
import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
def plain(v):
    if isinstance(v, dict) and list(v) == ["$bytes"]:
        return "plain"
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v
p = plain(p)
p["version"] = 1
json.dump(p, gzip.open("old.data", "wt"))
EOF
	run --separate-stderr "$PROFTOOL" report -i old.data --format folded
	[ "$status" -eq 0 ]
	grep -q '^_start;' <<<"$output"
}
