#!/bin/sh
# SPDX-License-Identifier: MIT
# Makes the fuzzers' seed corpora: small real profiles, real ELF files, small region files, forged Python processes.
# Usage: fuzz/seeds.sh BUILD_DIR OUT_DIR
# BUILD_DIR holds the gcc build (proftool, workloads, workloads-nofp). Nothing
# here is checked in: profiles are recorded afresh, ELF files copied from the
# build and the system, so the seeds always match what proftool writes now.
set -eu

build=$1
out=$2
prof=$out/fuzz_profile_read
elf=$out/fuzz_elf
rgn=$out/fuzz_regions_read
py=$out/fuzz_python_read
mkdir -p "$prof" "$elf" "$rgn" "$py"

# Records one small profile; a machine that denies perf_event_open falls back
# to ptrace, one that denies both still gets the hand-made seeds below.
rec() {
	name=$1
	shift
	[ -s "$prof/$name.data" ] && return 0
	"$build/proftool" record -q -F 499 -o "$prof/$name.data" "$@" >/dev/null 2>&1 ||
		echo "proftool: fuzz seeds: could not record '$*' (skipped)" >&2
}

rec split-fp -g fp -- "$build/workloads/split" 0.05
rec split-dwarf -g dwarf --stack-size 4096 -- "$build/workloads-nofp/split" 0.05
rec threads -g fp -- "$build/workloads/threads" 0.05
rec cxx -g none -- "$build/workloads/cxx" 0.05
rec forker -g fp -- "$build/workloads/forker" 0.05
rec recurse -g fp -- "$build/workloads/recurse" 0.05
# stacks deeper than the copy: unwind stops in meta, [truncated] roots
rec deep -g dwarf --stack-size 1024 -- "$build/workloads-nofp/deep" 0.05 100
rec sleepy-wall --mode wall -- "$build/workloads/sleepy" 0.05
# names that are not UTF-8 ({"$bytes": ...} strings, version 2), a region, a 6000-byte symbol
rec names -g fp -- "$build/workloads/names" 0.05 "$(printf 'caf\351')"
# the reader takes plain JSON too, and JSON is what mutations can work on
for f in split-fp threads deep names; do
	[ -s "$prof/$f.data" ] && gzip -dc <"$prof/$f.data" >"$prof/$f.json"
done
# a Python job's profile (Python functions, meta.python), as tests/report_python.bats reads
command -v python3 >/dev/null && python3 tests/tools/pyprofile.py "$prof/python.json" --plain
# the example of docs/profile-format.md, and the hand-made regression inputs
sed -n '/^```json$/,/^```$/p' docs/profile-format.md | sed '1d;$d' >"$prof/doc-example.json"
for f in tests/fuzz-regress/*.json; do
	[ -f "$f" ] && cp "$f" "$prof/regress-$(basename "$f")"
done

# ELF files: -fp and -nofp builds (frame pointers vs CFI only), C++ with
# inlining, compressed DWARF 4, a shared library, a separate .debug file.
for w in split inlined threads; do
	cp "$build/workloads/$w" "$elf/$w"
	cp "$build/workloads-nofp/$w" "$elf/$w-nofp"
done
cp "$build/workloads/cxx" "$elf/cxx"
gcc -std=gnu11 -O2 -g -gdwarf-4 -gz -pthread -o "$elf/inlined-dwarf4-gz" tests/workloads/inlined.c
cp /bin/true "$elf/true"
for so in /usr/lib/x86_64-linux-gnu/libjansson.so.4 /lib/x86_64-linux-gnu/libjansson.so.4; do
	[ -f "$so" ] && { cp -L "$so" "$elf/libjansson.so.4"; break; }
done
# the smallest separate debug file there is (libc6-dbg and friends), if any
dbg=$(find /usr/lib/debug -name '*.debug' -size -128k -size +4k 2>/dev/null | head -n 1)
[ -n "$dbg" ] && cp "$dbg" "$elf/separate.debug"

# region event files: small hand-made ones (a runtime's are 2 MiB at the least)
python3 fuzz/rgn_seeds.py "$rgn"

# forged CPython processes (3.11, 3.12 and 3.13 layouts), good and hostile
"$build/tests/tools/python-seeds" "$py"
exit 0
