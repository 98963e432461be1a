#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Hostile inputs, hand-made and found by the fuzzers (make fuzz): report prints a report or
# fails with one 'proftool: ' line in every format, symbolizing never crashes or hangs, the
# region file reader never crashes or reads what the file cannot hold, and the CPython stack
# reader ends every walk of a forged process's memory within its bounds.

load helpers

REGRESS=$BATS_TEST_DIRNAME/fuzz-regress
FORMATS="table folded tree callers callees json timers speedscope chrome pprof svg html"

# survives [OPTIONS] FILE...: report exits 0, or 1 with one 'proftool: ' line; never a
# signal (status 128+N) or a hang (timeout's 124).
survives() {
	run --separate-stderr timeout 120 "$PROFTOOL" report "$@"
	if [ "$status" -ge 124 ]; then
		echo "report $*: status $status, a crash or a hang; stderr: $stderr" >&2
		return 1
	fi
	[ "$status" -eq 0 ] && return 0
	[ "$status" -eq 1 ] && one_error_line && return 0
	echo "report $*: status $status; stderr: $stderr" >&2
	return 1
}

# reports FILE [OPTIONS]: a report in every format, into out.FORMAT.
reports() {
	local file=$1 fmt
	shift
	for fmt in $FORMATS; do
		survives --format "$fmt" -o "out.$fmt" "$@" "$file" || return 1
		[ "$status" -eq 0 ] || { echo "--format $fmt: $stderr" >&2; return 1; }
	done
}

# rejects FILE TEXT: one error line containing TEXT, in every format.
rejects() {
	local file=$1 text=$2 fmt
	for fmt in $FORMATS; do
		survives --format "$fmt" -o "out.$fmt" "$file" || return 1
		[ "$status" -eq 1 ] || { echo "$file was accepted (--format $fmt)" >&2; return 1; }
		[[ "$stderr" == *"$text"* ]] || { echo "$file: '$stderr' lacks '$text'" >&2; return 1; }
	done
	[ ! -e "out.table" ] || { echo "a failed report left out.table behind" >&2; return 1; }
}

# json_ok FILE...: each parses as JSON.
json_ok() {
	python3 -c 'import json, sys
for f in sys.argv[1:]:
    json.load(open(f, encoding="utf-8"))' "$@"
}

@test "every reproducer in tests/fuzz-regress: a report or one line, in every format" {
	local f fmt n=0
	for f in "$REGRESS"/*.json; do
		n=$((n + 1))
		survives -o /dev/null "$f"
		# a file that cannot be read fails the same way in every format (next test)
		[ "$status" -eq 0 ] || continue
		for fmt in $FORMATS; do
			survives --format "$fmt" -o /dev/null "$f"
		done
		survives --format table -o /dev/null "$f" "$f"
		survives --per-thread --format folded "$f"
		survives --per-process --format tree --min-percent 0 "$f"
		survives --format callers --match '.' --limit 0 "$f"
	done
	at_least "$n" 10
}

@test "corrupt tables: the first broken rule, named" {
	rejects "$REGRESS/newer-version.json" "written by a newer proftool (format version 3, this one reads up to 2); upgrade proftool"
	rejects "$REGRESS/version-zero.json" "the file is corrupt (bad version)"
	rejects "$REGRESS/version-string.json" "the file is corrupt (bad version)"
	rejects "$REGRESS/column-lengths.json" "(field 'module' has 2 entries, expected 3)"
	rejects "$REGRESS/duplicate-stack.json" "(stack 2 is a duplicate)"
	rejects "$REGRESS/index-location-function.json" "(location function 2 is out of range)"
	rejects "$REGRESS/index-stack-parent.json" "(stack parent 1 is out of range)"
	rejects "$REGRESS/index-stack-location.json" "(stack location 2 is out of range)"
	rejects "$REGRESS/index-thread-process.json" "(thread 0 is malformed)"
	rejects "$REGRESS/index-sample-thread.json" "(sample thread 1 is out of range)"
	rejects "$REGRESS/index-sample-stack.json" "(sample stack 1 is out of range)"
	rejects "$REGRESS/negative-time.json" "(sample time 1 is out of range)"
	rejects "$REGRESS/time-overflow.json" "(sample time 0 is out of range)"
}

@test "huge numbers: a report, not an overflow" {
	reports "$REGRESS/huge-numbers.json"
	grep -q '^3 samples over 9223372036.855 s from 1 process and 1 thread$' out.table
	grep -q '^Lost samples: 9223372036854775807 ' out.table
	grep -q 'app.c:4294967295(work)' out.table
	[ "$(cat out.folded)" = "$(printf '_start;main 1\n_start;main;work 2')" ]
	json_ok out.json out.timers out.speedscope out.chrome
	# a line number and ids at the top of their ranges survive the round trip
	python3 -c 'import json, sys
d = json.load(open("out.json"))
assert max(f.get("line") or 0 for f in d["functions"]) == 4294967295, d["functions"]
assert d["threads"][0]["tid"] == 2147483647, d["threads"]'
	# fuzz_profile_read: equal unwind stops add up to what the file can hold, no more
	reports "$REGRESS/duplicate-stops.json"
	grep -q '^Unwinding stopped early: 9223372036854775807 no CFI (app 9223372036854775807)$' out.table
}

@test "names that need escaping: every format stays well-formed" {
	reports "$REGRESS/weird-names.json"
	json_ok out.json out.timers out.speedscope out.chrome
	python3 -c 'import xml.etree.ElementTree as E; E.parse("out.svg")'
	! grep -q '<script>alert' out.svg out.html || false
	# folded: one line per stack (13, each sampled twice), nothing split or run together
	[ "$(wc -l <out.folded)" -eq 13 ]
	! grep -qv ' 2$' out.folded || false
	grep -q '^_start;a:b:c;line break cr	tab;' out.folded
	for o in --per-thread --per-process; do
		FORMATS="table folded tree callers callees" reports "$REGRESS/weird-names.json" "$o" --limit 0
	done
	survives --comm 'p;<&>' --format folded "$REGRESS/weird-names.json"
	survives --format callees --match '^a;b;c$' "$REGRESS/weird-names.json"
	[ "$status" -eq 0 ]
}

@test "truncated, corrupt and odd gzip streams: one line each" {
	local size cut
	gzip -9c "$REGRESS/huge-numbers.json" >ok.data
	survives ok.data
	[ "$status" -eq 0 ]
	size=$(stat -c %s ok.data)
	for cut in 2 3 10 18 $((size / 2)) $((size - 8)) $((size - 1)); do
		head -c "$cut" ok.data >cut.data
		rejects cut.data "cannot read 'cut.data': the file is"
	done
	# a flipped byte inside the deflate data, and a gzip'd empty file
	cp ok.data flip.data
	printf '\377' | dd of=flip.data bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
	rejects flip.data "cannot read 'flip.data': the file is"
	: | gzip -c >empty.data
	rejects empty.data "the file is corrupt"
	# bytes after the gzip member, and two members: read or rejected, never a crash
	{ cat ok.data; printf 'trailing'; } >trail.data
	survives trail.data
	cat ok.data ok.data >twice.data
	survives twice.data
	# JSON that stops early, uncompressed
	head -c 300 "$REGRESS/huge-numbers.json" >cut.json
	rejects cut.json "the file is corrupt ("
}

@test "invalid UTF-8, NUL and lone surrogates in names: rejected as corrupt" {
	local f
	python3 - "$REGRESS/huge-numbers.json" <<'EOF'
import sys
good = open(sys.argv[1], "rb").read()
bad = [b"\xff", b"caf\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\\u0000", b"\\ud800", b"a\x01b"]
for i, b in enumerate(bad):
    open("bad-%d.json" % i, "wb").write(good.replace(b'"work"', b'"' + b + b'"'))
EOF
	for f in bad-*.json; do
		rejects "$f" "the file is corrupt ("
	done
}

# Writes a profile whose one stack is DEPTH frames deep, with samples at the leaf, the
# middle and the root; NFUNCS distinct functions (1: one function recursing).
deep_profile() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
out, depth, nfuncs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
json.dump({"format": "proftool-profile", "version": 1,
           "meta": {"callgraph": "fp", "freq": 1000, "period_ns": 1000000, "duration_ns": 3000000},
           "functions": {"name": ["f%d" % i for i in range(nfuncs)], "module": ["app"] * nfuncs,
                         "file": ["app.c"] * nfuncs, "line": list(range(nfuncs))},
           "locations": {"function": [i % nfuncs for i in range(depth)],
                         "line": [i // nfuncs for i in range(depth)]},
           "stacks": {"parent": list(range(-1, depth - 1)), "location": list(range(depth))},
           "processes": [{"pid": 1, "ppid": 0, "comm": "deep"}],
           "threads": [{"tid": 1, "process": 0, "comm": "deep"}],
           "samples": {"time_us_delta": [1000] * 3, "thread": [0] * 3,
                       "stack": [depth - 1, depth // 2, 0]}}, open(out, "w"))
EOF
}

@test "a 100000-frame stack, of distinct functions and of one recursing: no crash" {
	local f fmt
	deep_profile chain.json 100000 100
	deep_profile recursion.json 100000 1
	for f in chain.json recursion.json; do
		# tree and timers: see the next test
		FORMATS="table folded callers callees json speedscope chrome pprof svg html" reports "$f"
		[ "$(awk -F';' 'NR == 3 { print NF }' out.folded)" -eq 100000 ]
		json_ok out.json out.speedscope out.chrome
	done
	grep -q '100.0%  app.c:0(f0)$' out.table
}

@test "a 100000-frame stack: tree and timers" {
	# timers is written without recursion; tree caps its indentation (it was 10 GB of
	# spaces for this stack, and jansson's recursive writer overflowed the C stack)
	deep_profile chain.json 100000 100
	for fmt in timers tree; do
		survives --format "$fmt" -o "out.$fmt" chain.json
		[ "$status" -eq 0 ]
	done
	# every level is there, and the file stays small
	[ "$(wc -l <out.tree)" -ge 100000 ]
	[ "$(stat -c %s out.tree)" -lt 30000000 ]
	# the timers nest 100000 deep: Python's json recurses (Debian 12's 3.11 crashes, 3.12
	# raises RecursionError), V8's JSON.parse does not
	need "$NODE" nodejs
	"$NODE" -e "JSON.parse(require('fs').readFileSync('out.timers', 'utf8'))"
}

# Copies ELF file SRC to DST and overwrites LEN bytes at OFFSET with BYTE.
patch_elf() {
	cp "$1" "$2"
	head -c "$5" /dev/zero | tr '\0' "$4" | dd of="$2" bs=1 seek="$3" conv=notrunc 2>/dev/null
}

# Offset and size of section NAME in ELF file FILE ("OFF SIZE"), from readelf-free python.
section_of() {
	python3 - "$1" "$2" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
def sh(i):
    return struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize)
stroff = sh(shstrndx)[4]
for i in range(shnum):
    s = sh(i)
    name = d[stroff + s[0]:d.index(b"\0", stroff + s[0])].decode()
    if name == sys.argv[2]:
        print(s[4], s[5])
EOF
}

@test "hostile ELF files: truncated, bogus offsets and counts, scrambled DWARF and CFI" {
	[ -x "$TOOLS/fuzz-elf" ] || skip_or_fail "no $TOOLS/fuzz-elf (make bats builds it)"
	local src size cut sec off len n=0
	for src in "$WORKLOADS/inlined" "$WORKLOADS_NOFP/split" "$WORKLOADS/cxx"; do
		size=$(stat -c %s "$src")
		for cut in 16 64 100 1000 4096 $((size / 2)) $((size - 64)) $((size - 1)); do
			head -c "$cut" "$src" >"cut-$n-$cut"
		done
		# e_phoff, e_shoff, e_phnum/e_shnum/e_shstrndx: far out, and huge counts
		patch_elf "$src" "phoff-$n" 32 '\377' 8
		patch_elf "$src" "shoff-$n" 40 '\177' 8
		patch_elf "$src" "counts-$n" 56 '\377' 8
		for sec in .eh_frame .eh_frame_hdr .debug_info .debug_abbrev .debug_line .debug_str \
			   .debug_rnglists .symtab .strtab .dynsym .gnu_debuglink .note.gnu.build-id; do
			read -r off len < <(section_of "$src" "$sec") || continue
			[ -n "$off" ] || continue
			patch_elf "$src" "zero$sec-$n" "$off" '\0' "$len"
			patch_elf "$src" "ones$sec-$n" "$off" '\377' "$len"
			# only the middle: headers intact, contents wrong
			patch_elf "$src" "mid$sec-$n" $((off + len / 3)) '\201' $((len / 3 + 1))
		done
		n=$((n + 1))
	done
	# stripped, no build-id, a .gnu_debuglink naming nothing and no CRC: elfutils 0.188 took
	# the directory it searched for the debug file and lost the name (make asan's leak check)
	: >empty
	objcopy --strip-all --remove-section .note.gnu.build-id --add-gnu-debuglink=empty \
		"$WORKLOADS/inlined" nolink
	read -r off len < <(section_of nolink .gnu_debuglink)
	patch_elf nolink link.empty "$off" '\0' "$len"
	run timeout 300 "$TOOLS/fuzz-elf" cut-* phoff-* shoff-* counts-* zero.* ones.* mid.* link.empty
	[ "$status" -eq 0 ] || { echo "status $status: $output" >&2; return 1; }
	# and every file that was a fuzzer's finding
	shopt -s nullglob
	set -- "$REGRESS"/*.elf
	if [ "$#" -gt 0 ]; then
		run timeout 300 "$TOOLS/fuzz-elf" "$@"
		[ "$status" -eq 0 ]
	fi
}

@test "hostile region files: hand-made, cut and scrambled, read without a crash and checked" {
	[ -x "$TOOLS/fuzz-regions" ] || skip_or_fail "no $TOOLS/fuzz-regions (make bats builds it)"
	local f size cut
	# fuzz/rgn_seeds.py: threads, a tid given twice, a death, broken records, fuzz_regions_read's
	# findings; fuzz-regions checks what the reader makes of each (and aborts when it is wrong)
	python3 "$BATS_TEST_DIRNAME/../fuzz/rgn_seeds.py" seeds
	for f in seeds/*.rgn; do
		size=$(stat -c %s "$f")
		for cut in 0 8 79 80 4095 4096 4200 $((size / 2)) $((size - 17)) $((size - 1)); do
			[ "$cut" -lt "$size" ] && head -c "$cut" "$f" >"$f.cut$cut"
		done
	done
	python3 - seeds/*.rgn <<'PYEOF'
import random, sys
rnd = random.Random(7)
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    for k in range(20):
        d = bytearray(data)
        for _ in range(8):
            # mostly the header, the names and the first segment headers
            at = rnd.randrange(len(d) if k % 2 else min(len(d), 4096 + 512 + 64))
            d[at] = rnd.randrange(256)
        open("%s.flip%d" % (path, k), "wb").write(d)
PYEOF
	run timeout 120 "$TOOLS/fuzz-regions" seeds/*
	[ "$status" -eq 0 ] || { echo "status $status: $output" >&2; return 1; }
	[ "$(ls seeds | wc -l)" -gt 200 ]
	shopt -s nullglob
	set -- "$REGRESS"/*.rgn
	if [ "$#" -gt 0 ]; then
		run timeout 120 "$TOOLS/fuzz-regions" "$@"
		[ "$status" -eq 0 ]
	fi
}

# pyfz FILE: fuzz-python's account of forged process FILE (PYFZ_VERBOSE: each read's status,
# frames, calls and bytes, and its first four frames), into $output; never more than a page
pyfz() {
	run env PYFZ_VERBOSE=1 timeout 60 "$TOOLS/fuzz-python" "$1"
	[ "$status" -eq 0 ] || { echo "fuzz-python $1: status $status: $output" >&2; return 1; }
	[ "${#output}" -lt 4096 ] || { echo "fuzz-python $1: ${#output} bytes of output" >&2; return 1; }
}

# says TEXT: the last pyfz's output has TEXT
says() {
	[[ "$output" == *"$1"* ]] || { echo "'$1' is not in: $output" >&2; return 1; }
}

@test "forged Python processes: loops, huge lengths, pointers into themselves, each walk bounded" {
	[ -x "$TOOLS/fuzz-python" ] || skip_or_fail "no $TOOLS/fuzz-python (make bats builds it)"
	local v t
	# fuzz/python_seeds.c's cases, for 3.11, 3.12 and 3.13: fuzz-python aborts when a frame
	# breaks a promise of symbolize/python.h (names within PY_MAX_STR, stored and read back
	# exactly, known flags, code objects read) or a read costs more calls or bytes than the
	# reader's bounds allow
	mkdir seeds
	"$TOOLS/python-seeds" seeds
	[ "$(ls seeds | wc -l)" -ge 50 ]
	run timeout 300 "$TOOLS/fuzz-python" seeds/*
	[ "$status" -eq 0 ] || { echo "status $status: $output" >&2; return 1; }
	for v in 311 312 313; do
		pyfz seeds/good-$v
		says "round 0 tid 100: complete, 3 frames,"
		says "  /src/app.py:10(outer.<locals>.inner) line 11 flags 0"
		# frame chains that loop: the frames before the loop, then torn, also from the caches
		pyfz seeds/cycle-self-$v
		says "round 0 tid 100: torn, 1 frames,"
		says "round 1 tid 100: torn, 1 frames,"
		pyfz seeds/cycle-two-$v
		says "round 0 tid 100: torn, 2 frames,"
		pyfz seeds/cycle-deep-$v
		says "round 0 tid 100: torn, 21 frames,"
		# a frame that is its own code object, a code object its own name and line table, a
		# str whose UTF-8 copy is its own header (not UTF-8: its characters are taken)
		pyfz seeds/self-pointers-$v
		says "round 0 tid 100: torn, 0 frames,"
		says "round 0 tid 200: torn, 0 frames,"
		says "round 0 tid 300: complete, 2 frames,"
		says "  /f.py:1(ππ) line 0 flags 0"
		# lengths of 2^40, -1 and PY_MAX_STR + 1; characters past the end of the mapping
		pyfz seeds/huge-lengths-$v
		for t in 100 200 300; do
			says "round 0 tid $t: torn, 0 frames,"
		done
		says "round 0 tid 400: unreadable, 0 frames,"
		# strs of no kind, not compact, "ASCII" with bit 7; UTF-8 copies that are not UTF-8
		pyfz seeds/bad-strs-$v
		for t in 200 300 400; do
			says "round 0 tid $t: torn, 0 frames,"
		done
		says "round 0 tid 500: complete, 4 frames,"
		says "  /f.py:1(AB) line 1 flags 0"
		# thread and interpreter lists that loop
		pyfz seeds/list-cycles-$v
		says "round 0 tid 100: complete, 1 frames,"
		says "round 0 tid 200: torn, 0 frames,"
		# the bounds: PY_MAX_DEPTH frames, PY_MAX_THREADS thread states, PY_MAX_DECODE bytes
		# of names and line tables a read (the next goes on from the cache), PY_MAX_LINE_SCAN
		pyfz seeds/deep-chain-$v
		says "round 0 tid 100: too deep, 4096 frames,"
		pyfz seeds/many-threads-$v
		says "round 0 tid 400: torn, 0 frames,"
		pyfz seeds/many-codes-$v
		says "round 0 tid 100: too deep, 7 frames,"
		says "round 1 tid 100: too deep, 14 frames,"
		pyfz seeds/long-linetable-$v
		says "round 0 tid 100: too deep, 4096 frames,"
		says "  /f.py:10(alternating) line 11 flags 0"
		pyfz seeds/wide-names-$v
		says "round 0 tid 100: too deep, 1021 frames,"
		# the memory changes under the walk; the process goes away, reads fail short
		pyfz seeds/moving-$v
		says "round 0 tid 100: complete, 3 frames,"
		says "round 1 tid 100: torn, 3 frames,"
		pyfz seeds/faults-$v
		# a code object renamed between two reads is decoded again
		pyfz seeds/renamed-$v
		says "  /src/app.py:10(before) line 11 flags 0"
		says "  /src/app.py:10(after) line 11 flags 0"
		pyfz seeds/older-$v
		says "refused: Python 3.10 is not supported (3.11 to 3.13 are)"
	done
	# a shim frame on top (3.12+): the innermost eval loop runs no Python frame yet; two
	# shims in a row never happen; 3.11 has no shims
	for v in 312 313; do
		pyfz seeds/shims-$v
		says "round 0 tid 100: complete, 2 frames,"
		says "  /src/app.py:10(top) line 11 flags 3"
		says "round 0 tid 200: torn, 0 frames,"
	done
	pyfz seeds/shims-311
	says "round 0 tid 100: torn, 0 frames,"
	pyfz seeds/newer-313
	says "refused: Python 3.14 is not supported (the layout of its _Py_DebugOffsets is not known)"
	# a 3.13 runtime whose _Py_DebugOffsets give a str header too short for its type
	pyfz seeds/bad-offsets-313
	says "refused: the layout of Python 3.13 is out of bounds"
}
