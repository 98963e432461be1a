#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Symbol hygiene (make lint-symbols): no global name proftool defines may also be a name
# that libc or another library proftool loads exports. A library's call to such a name
# (libdw calling glibc's error(3) on its out-of-memory path, say) would bind to ours when
# the executable exports it, which the linker does as soon as some library refers to it.
#   scripts/check-symbols.sh BUILD_DIR
set -euo pipefail

o=${1:?usage: scripts/check-symbols.sh BUILD_DIR}
bin=$o/proftool
rt=$o/libproftool-rt.so
ours=$(mktemp) libs=$(mktemp)
trap 'rm -f "$ours" "$libs"' EXIT

# every library the binary loads, and libc for the runtime loaded into users' programs
{
	ldd "$bin" | awk '$3 ~ /^\// { print $3 }'
	ldd "$rt" | awk '$3 ~ /^\// { print $3 }'
} | sort -u | while read -r lib; do
	nm -D --defined-only "$lib" | awk 'NF == 3 { sub(/@.*/, "", $3); print $3 }'
done | sort -u >"$libs"

# what we define: the objects' globals (whatever their visibility in the linked binary),
# what the binary exports, and what the runtime exports
{
	nm -g --defined-only "$o"/libproftool.a "$o"/cmd/*.o 2>/dev/null | awk 'NF == 3 { print $3 }'
	nm -D --defined-only "$bin" | awk 'NF == 3 && $3 !~ /@/ { print $3 }'
	nm -D --defined-only "$rt" | awk 'NF == 3 && $3 !~ /@/ { print $3 }'
} | sort -u >"$ours"

# (a sanitizer build's objects define the instrumentation's own names, which its runtime
# shares on purpose: they are the compiler's, not proftool's)
clash=$(comm -12 "$ours" "$libs" | grep -vE '^_*(asan|ubsan|lsan|sanitizer|sancov|odr_asan)' || true)
if [ -n "$clash" ]; then
	for s in $clash; do
		echo "proftool: '$s' is defined by proftool and by a library it loads; rename ours (a library calling '$s' would call it)" >&2
	done
	exit 1
fi
# the binary exports nothing of its own: -fvisibility=hidden keeps it so
exported=$(nm -D --defined-only "$bin" | awk 'NF == 3 && $2 ~ /[TDR]/ && $3 !~ /@/ { print $3 }')
if [ -n "$exported" ]; then
	echo "proftool: $bin exports $(echo $exported | tr ' ' ','); build with -fvisibility=hidden" >&2
	exit 1
fi
echo "symbols: $(wc -l <"$ours") names of proftool's, none shadows one of $(wc -l <"$libs") library names"
