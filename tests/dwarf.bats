#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# DWARF unwinding (the default): programs built without frame pointers, deep stacks,
# inline frames, separate debug info and C++ names.

load helpers

: "${WORKLOADS_NOFP:?run the suites through 'make check'}"

@test "-O2 -fomit-frame-pointer: dwarf finds main above >= 95% of leaf samples, shares within 5" {
	record_to d.data -g dwarf -- "$WORKLOADS_NOFP/split" 1.5
	run --separate-stderr "$PROFTOOL" report --format folded d.data
	[ "$status" -eq 0 ]
	echo "$output" >folded
	for leaf in leaf_a leaf_b leaf_c; do
		at_least "$(ancestor_share "$leaf" main <folded)" 95
	done
	near "$(self_share leaf_a <folded)" 50 5
	near "$(self_share leaf_b <folded)" 30 5
	near "$(self_share leaf_c <folded)" 20 5
	run --separate-stderr "$PROFTOOL" report d.data
	[[ "$output" == *"Stacks unwound to their root: "*"(9"[5-9]"."*"%)"* ]] ||
		[[ "$output" == *"(100.0%)"* ]]
}

@test "the same build with -g fp loses the callers: why dwarf is the default" {
	record_to f.data -g fp -- "$WORKLOADS_NOFP/split" 0.5
	fp=$("$PROFTOOL" report --format folded f.data | ancestor_share leaf_a main)
	record_to d.data -- "$WORKLOADS_NOFP/split" 0.5
	dw=$("$PROFTOOL" report --format folded d.data | ancestor_share leaf_a main)
	at_least "$dw" 95
	awk -v f="$fp" -v d="$dw" 'BEGIN { exit !(f + 20 < d) }'
	run --separate-stderr "$PROFTOOL" report f.data
	[[ "$output" == *"try -g dwarf"* ]]
}

@test "threads and forked children unwind to their entry points" {
	record_to t.data -- "$WORKLOADS_NOFP/threads" 0.4
	run --separate-stderr "$PROFTOOL" report --format folded t.data
	[ "$status" -eq 0 ]
	at_least "$(ancestor_share worker_fn_1 start_thread <<<"$output")" 95
	at_least "$(ancestor_share main_spin main <<<"$output")" 95
}

@test "a 2000-deep recursion: no crash, [truncated] roots, shares still right" {
	record_to deep.data -- "$WORKLOADS_NOFP/deep" 0.5
	run --separate-stderr "$PROFTOOL" report --format folded deep.data
	[ "$status" -eq 0 ]
	grep -q '^\[truncated\];dive;dive' <<<"$output"
	at_least "$(self_share bottom <<<"$output")" 85
	run --separate-stderr "$PROFTOOL" report deep.data
	# 32 KiB holds about a thousand of these frames: either limit may be the one hit
	[[ "$output" == *"Unwinding stopped early: "*" stack copy too small"* ]] ||
		[[ "$output" == *"Unwinding stopped early: "*" too many frames"* ]]
	# never a wrong caller: nothing but dive above bottom, under [truncated]
	! "$PROFTOOL" report --format folded deep.data | grep ';bottom ' | grep -vq '^\[truncated\];\(dive;\)*bottom ' || false
}

@test "--stack-size is honoured: a larger copy reaches deeper" {
	record_to small.data --stack-size 4096 -- "$WORKLOADS_NOFP/deep" 0.2 150
	record_to big.data --stack-size 65528 -- "$WORKLOADS_NOFP/deep" 0.2 150
	small=$("$PROFTOOL" report --format folded small.data | ancestor_share bottom main)
	big=$("$PROFTOOL" report --format folded big.data | ancestor_share bottom main)
	at_least "$big" 90
	awk -v s="$small" -v b="$big" 'BEGIN { exit !(s < b) }'
}

@test "an always_inline hot function is its own frame with its own line" {
	record_to i.data -- "$WORKLOADS_NOFP/inlined" 0.4
	run --separate-stderr "$PROFTOOL" report --format folded i.data
	[ "$status" -eq 0 ]
	at_least "$(ancestor_share hot_inline outer_fn <<<"$output")" 95
	at_least "$(self_share hot_inline <<<"$output")" 90
	line=$(grep -n 'uint64_t hot_inline(' "$BATS_TEST_DIRNAME/workloads/inlined.c" | cut -d: -f1)
	run --separate-stderr "$PROFTOOL" report --sort tottime i.data
	[[ "$output" == *"inlined.c:$line(hot_inline)"* ]]
}

@test "libc frames get file:line from Debian's separate debug info (libc6-dbg)" {
	need_package libc6-dbg
	record_to t.data -- "$WORKLOADS_NOFP/threads" 0.2
	run --separate-stderr "$PROFTOOL" report --limit 0 t.data
	[[ "$output" == *"pthread_create.c:"*"(start_thread)"* ]]
}

# start_thread above has no self time: this is the row a user looks at, libc's own hot code
@test "a hot libc function (qsort's sorting code) shows its libc source file:line in the table" {
	libc=$(ldd "$WORKLOADS_NOFP/libcsort" | awk '$1 ~ /^libc\.so/ { print $3 }')
	[ -n "$libc" ] || { echo "ldd finds no libc.so for libcsort"; false; }
	id=$(readelf -n "$libc" | awk '/Build ID:/ { print $3 }')
	if [ -z "$id" ] || [ ! -e "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]; then
		skip_or_fail "no separate debug info for $libc (build-id ${id:-none}) under /usr/lib/debug/.build-id: install libc6-dbg"
	fi
	record_to q.data -- "$WORKLOADS_NOFP/libcsort" 0.8
	run --separate-stderr "$PROFTOOL" report --sort tottime --limit 0 q.data
	[ "$status" -eq 0 ]
	# the rows with a fifth of the self time or more, other than the program's own functions
	awk '/filename:lineno\(function\)/ { on = 1; next }
		on && /^ *[0-9]+\/[0-9]+ / && $3 + 0 >= 20 && $6 !~ /libcsort/ { print $6 }' <<<"$output" >hot
	cat hot
	# qsort's code has most of the time (msort_with_tmp in glibc 2.36): one row at least,
	# and every such row is a libc function with its source file (stdlib/) and line
	[ -s hot ]
	while read -r row; do
		[[ "$row" =~ ^\.{1,2}/[^:]*stdlib/[^:]+\.c:[1-9][0-9]*\([^\)]*sort[^\)]*\)$ ]] ||
			{ echo "not a libc file:line(function): $row"; false; }
	done <hot
}

# libc's string functions are written in assembly: their DWARF has lines but no declaration
# line, and the table showed 'memset-vec-unaligned-erms.S:0(...)'. The line where the function
# begins stands in for it, as eu-addr2line gives for the symbol's address.
@test "a libc function written in assembly (memset) shows the line where it begins" {
	libc=$(ldd "$WORKLOADS_NOFP/libcsort" | awk '$1 ~ /^libc\.so/ { print $3 }')
	id=$(readelf -n "$libc" | awk '/Build ID:/ { print $3 }')
	debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	[ -n "$id" ] && [ -e "$debug" ] || skip_or_fail "no separate debug info for libc: install libc6-dbg"
	cat >ms.c <<-'EOF'
	#include <string.h>
	static char buf[1 << 18];
	int main(void)
	{
		volatile int s = 0;

		for (int i = 0; i < 30000; i++) {
			memset(buf, i, sizeof(buf));
			s += buf[i % 100];
		}
		return 0;
	}
	EOF
	gcc -O2 -g -o ms ms.c
	record_to ms.data -- ./ms
	run --separate-stderr "$PROFTOOL" report --sort tottime --limit 1 ms.data
	[ "$status" -eq 0 ]
	row=$(grep -E '^ +[0-9]+/[0-9]+ ' <<<"$output" | head -n1)
	echo "$row"
	[[ "$row" =~ memset[^:]*\.S:([1-9][0-9]*)\((__memset[a-z0-9_]*)\)$ ]]
	line=${BASH_REMATCH[1]} func=${BASH_REMATCH[2]}
	# the same line eu-addr2line gives for the function's first instruction
	if command -v eu-addr2line >/dev/null; then
		addr=$(nm "$debug" | awk -v f="$func" '$3 == f { print $1; exit }')
		[[ "$(eu-addr2line -e "$debug" "0x$addr")" == *":$line" ]]
	fi
}

# The other way separate debug info is found: a .gnu_debuglink naming a file next to the
# binary or in its .debug/ directory (what 'objcopy --only-keep-debug' and distributions
# without build-id directories make).
@test "debug info split out with .gnu_debuglink gives file:line, beside the binary or in .debug/" {
	for where in . .debug; do
		rm -rf "d-$where" && mkdir -p "d-$where/$where"
		cp "$WORKLOADS_NOFP/split" "d-$where/split"
		(
			cd "d-$where"
			objcopy --only-keep-debug split "$where/split.debug"
			# no build-id, so that only the debuglink can lead to the debug file
			objcopy --strip-debug --remove-section .note.gnu.build-id split
			objcopy --add-gnu-debuglink="$where/split.debug" split
		)
		! readelf -S "d-$where/split" | grep -q '\.debug_info' || false
		record_to "dl-$where.data" -- "d-$where/split" 0.3
		run --separate-stderr "$PROFTOOL" report "dl-$where.data"
		[ "$status" -eq 0 ] || { echo "$where: status $status: $stderr"; false; }
		[[ "$output" == *"tests/workloads/split.c:"*"(leaf_a)"* ]] || { echo "$where: $output"; false; }
	done
}

# Fedora and RHEL ship binaries stripped of .symtab but with MiniDebugInfo: an xz-compressed
# ELF in .gnu_debugdata holding the symbols of the local functions (gdb's "MiniDebugInfo").
# Built here the way their packaging does it.
@test "a stripped binary with MiniDebugInfo (.gnu_debugdata) is named from it" {
	need xz xz-utils
	cp "$WORKLOADS_NOFP/split" split
	nm -D split --format=posix --defined-only | awk '{ print $1 }' | sort >dynsyms
	nm split --format=posix --defined-only | awk '$2 == "T" || $2 == "t" { print $1 }' | sort >funcsyms
	comm -13 dynsyms funcsyms >keep
	grep -qx leaf_a keep
	objcopy --only-keep-debug split debug
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep debug mini
	strip --strip-all -R .comment split
	xz mini
	objcopy --add-section .gnu_debugdata=mini.xz split
	! readelf -S split | grep -q '\.symtab' || false
	record_to mdi.data -- ./split 0.5
	run --separate-stderr "$PROFTOOL" report --format folded mdi.data
	[ "$status" -eq 0 ]
	near "$(self_share leaf_a <<<"$output")" 50 6
	near "$(self_share leaf_b <<<"$output")" 30 6
	at_least "$(ancestor_share leaf_c main <<<"$output")" 95
}

@test "C++ names are demangled" {
	record_to c.data -- "$WORKLOADS/cxx" 0.3
	run --separate-stderr "$PROFTOOL" report --limit 0 c.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"(model::Layer<unsigned long>::forward(unsigned long, unsigned long) const"* ]]
	run --separate-stderr "$PROFTOOL" report --format folded c.data
	[[ "$output" != *"_ZN5model"* ]]
}

@test "a profile stays self-contained and small with dwarf" {
	record_to d.data -- "$WORKLOADS_NOFP/split" 1
	n=$(zcat d.data | grep -o '"samples":[0-9]*' | head -n1 | cut -d: -f2)
	size=$(stat -c %s d.data)
	# raw stack copies never reach the file: well under 100 bytes a sample
	awk -v s="$size" -v n="$n" 'BEGIN { exit !(s / n < 100) }'
}

kernel_frames_allowed() {
	[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ]
}

@test "kernel frames are named from kallsyms; --user-only hides them but keeps the time" {
	kernel_frames_allowed || skip "kernel frames need root or perf_event_paranoid <= 1"
	[ "$(head -c 16 /proc/kallsyms)" != 0000000000000000 ] || skip "kallsyms addresses are hidden (kptr_restrict)"
	record_to k.data -- dd if=/dev/zero of=/dev/null bs=4k count=150000
	run --separate-stderr "$PROFTOOL" report --format folded k.data
	[ "$status" -eq 0 ]
	grep -q ';\[kernel\] [a-z_]' <<<"$output"
	record_to u.data --user-only -- dd if=/dev/zero of=/dev/null bs=4k count=150000
	run --separate-stderr "$PROFTOOL" report --format folded u.data
	[ "$status" -eq 0 ]
	! grep -q 'kernel' <<<"$output" || false
	# the system-call time is still there, under the libc wrappers
	at_least "$(self_share read <<<"$output")" 10
}

@test "a stripped binary: one row per function, named by its start from the CFI" {
	cp "$WORKLOADS_NOFP/split" split-stripped
	strip split-stripped
	record_to s.data -- ./split-stripped 1
	run --separate-stderr "$PROFTOOL" report --format folded s.data
	[ "$status" -eq 0 ]
	# the leaves are three functions, so their self samples fall on three names
	leaves=$(awk '{ sub(/ [0-9]+$/, ""); k = split($0, f, ";"); if (f[k] ~ /^split-stripped\+0x/) print f[k] }' <<<"$output" | sort -u | wc -l)
	[ "$leaves" -le 4 ]
	shares=$(awk '{ n = $NF; t += n; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s[f[k]] += n }
		END { for (x in s) printf "%.0f\n", 100 * s[x] / t }' <<<"$output" | sort -rn | head -n3 | tr '\n' ' ')
	read -r a b c <<<"$shares"
	near "$a" 50 5
	near "$b" 30 5
	near "$c" 20 5
	# the stack still reaches the entry point: .eh_frame survives strip
	at_least "$(cum_share __libc_start_main <<<"$output")" 95
	# and the function at the ELF entry point is _start, so the header counts the stacks
	# whole, as for every stripped distribution binary (it said 0.1 % for ls before)
	at_least "$(cum_share _start <<<"$output")" 95
	run --separate-stderr "$PROFTOOL" report s.data
	pct=$(sed -n 's/^Stacks unwound to their root: [0-9]* of [0-9]* (\([0-9.]*\)%)$/\1/p' <<<"$output")
	at_least "$pct" 95
}

# Distributions ship libraries stripped of .symtab: only exported functions keep a name (in
# .dynsym), and a static function must not be taken for the exported one before it, nor show
# as one row per sampled address.
@test "a stripped library: its unnamed functions are one row each, libNAME.so+0xSTART, shares right" {
	need gcc gcc
	cat >libstripped.c <<'C'
#include <stdint.h>

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) uint64_t three_quarters(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
		__asm__ volatile("" : "+r" (x));
	}
	return x;
}

/* other constants, or gcc folds the two into one */
static __attribute__((noinline, noclone)) uint64_t one_quarter(uint64_t n)
{
	uint64_t x = sink + 1;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 2862933555777941757ULL + 3037000493ULL;
		x ^= x >> 31;
		__asm__ volatile("" : "+r" (x));
	}
	return x;
}

void stripped_work(uint64_t n)
{
	sink = three_quarters(3 * n);
	sink = one_quarter(n);
}
C
	cat >usestripped.c <<'C'
#include <stdint.h>

void stripped_work(uint64_t n);

int main(void)
{
	for (int i = 0; i < 100; i++)
		stripped_work(1300000);	/* about 1 s in all */
	return 0;
}
C
	gcc -O2 -fomit-frame-pointer -shared -fPIC -o libstripped.so libstripped.c
	strip --strip-all libstripped.so
	# shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker
	gcc -O2 -o usestripped usestripped.c -L. -lstripped -Wl,-rpath,'$ORIGIN'
	# only the exported function is left with a name
	[ -z "$(nm libstripped.so 2>/dev/null)" ]
	[[ "$(nm -D --defined-only libstripped.so)" == *" T stripped_work"* ]]
	[[ "$(nm -D --defined-only libstripped.so)" != *"quarter"* ]]
	record_to s.data -- ./usestripped
	run --separate-stderr "$PROFTOOL" report --sort tottime --limit 0 s.data
	[ "$status" -eq 0 ]
	# exactly two rows of the library without a name with time of their own: one per function,
	# not one per address (a sample in its start-up code, +0x1000 with a sample under it, was
	# seen once in CI)
	grep -E '[0-9]%  libstripped\.so\+0x[0-9a-f]+$' <<<"$output" |
		awk '{ s = $3; sub(/%/, "", s); if (s + 0 >= 1) print }' >rows
	cat rows
	[ "$(wc -l <rows)" -eq 2 ]
	read -r _ _ top _ _ top_off <<<"$(sed -n 1p rows)"
	read -r _ _ low _ _ low_off <<<"$(sed -n 2p rows)"
	near "${top%\%}" 75 5
	near "${low%\%}" 25 5
	# each named by the start of its function, from the CFI (.eh_frame survives strip)
	starts=$(readelf --debug-dump=frames libstripped.so | sed -n 's/.* FDE .* pc=0*\([0-9a-f]*\)\.\..*/\1/p')
	for off in "$top_off" "$low_off"; do
		grep -qx "${off#libstripped.so+0x}" <<<"$starts" || { echo "$off is no function start: $starts"; false; }
	done
	[ "$top_off" != "$low_off" ]
	# the exported function keeps its name, and is their caller
	[[ "$output" == *"libstripped.so(stripped_work)"* ]]
	run --separate-stderr "$PROFTOOL" report --format folded s.data
	at_least "$(ancestor_share "$top_off" stripped_work <<<"$output")" 95
	at_least "$(ancestor_share "$low_off" stripped_work <<<"$output")" 95
}

@test "[vdso] frames are named and unwound through" {
	record_to v.data -- "$WORKLOADS_NOFP/vdsoloop" 0.5
	run --separate-stderr "$PROFTOOL" report --format folded v.data
	[ "$status" -eq 0 ]
	at_least "$(self_share __vdso_clock_gettime <<<"$output")" 50
	at_least "$(ancestor_share __vdso_clock_gettime timing_loop <<<"$output")" 95
	run --separate-stderr "$PROFTOOL" report --sort tottime v.data
	[[ "$output" == *"[vdso](__vdso_clock_gettime)"* ]]
	# the hot libc wrapper around it has file:line from libc6-dbg
	if package_installed libc6-dbg; then
		[[ "$output" == *"clock_gettime.c:"*"(clock_gettime)"* ]]
	elif ci; then
		echo "libc6-dbg is not installed: clock_gettime's file:line cannot be checked"
		false
	fi
}

# remove_perf_maps PROFILE: the /tmp/perf-PID.map files the profiled processes wrote
remove_perf_maps() {
	local pid

	for pid in $(pjson "$1" '" ".join(str(x["pid"]) for x in p["processes"])'); do
		rm -f "/tmp/perf-$pid.map"
	done
}

# word_share WORD: the share of samples (percent, one decimal) in folded stacks on stdin with
# a frame that has WORD as a word of its name (JIT frames are named as the runtime likes)
word_share() {
	awk -v w="$1" '{
		n = $NF; total += n
		sub(/ [0-9]+$/, "")
		if ($0 ~ "(^|[^A-Za-z0-9_$])" w "([^A-Za-z0-9_$]|$)") hit += n
	} END { printf "%.1f\n", total ? 100 * hit / total : 0 }'
}

# The CPythons >= 3.12 with -X perf's trampoline, each once, by its own executable (not a
# pyenv shim): Debian's python3 (3.11 in Debian 12), python3.N on PATH, and pyenv's versions.
# Extra coverage: a fresh Debian 12 has none of them.
perf_pythons() {
	local c exe seen=" "

	for c in "$PYTHON3" $(compgen -c python3. | grep -E '^python3\.[0-9]+$' | sort -u) \
		"${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
		exe=$("$c" -X perf -c 'import sys
if sys.version_info >= (3, 12) and sys.is_stack_trampoline_active():
    print(sys.executable)' 2>/dev/null) || continue
		[ -n "$exe" ] || continue
		exe=$(readlink -f "$exe")
		[[ "$seen" != *" $exe "* ]] || continue
		seen+="$exe "
		echo "$exe"
	done
}

@test "python3 -X perf (CPython >= 3.12) shows Python function names" {
	mapfile -t pythons < <(perf_pythons)
	[ "${#pythons[@]}" -gt 0 ] ||
		skip "no CPython >= 3.12 here, which -X perf needs (Debian 12's python3 is $("$PYTHON3" --version 2>&1))"
	cat >hot.py <<'PY'
def hot_python_function(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
for _ in range(40):
    hot_python_function(200000)
PY
	for py in "${pythons[@]}"; do
		record_to py.data -- "$py" -X perf hot.py
		remove_perf_maps py.data
		run --separate-stderr "$PROFTOOL" report --format folded py.data
		[ "$status" -eq 0 ]
		# the function's name, however this CPython spells the rest (py::NAME:FILE)
		at_least "$(word_share hot_python_function <<<"$output")" 30 ||
			{ echo "$py ($("$py" --version 2>&1))"; false; }
	done
}

# Debian's node (scripts/deps.sh check installs nodejs), and as extra coverage the node PATH
# finds when that is another one (nvm's, say). What proftool guarantees is checked: the JS
# function's name is in the [jit](...) frames, and they hold its time. The rest of the name is
# V8's own spelling, different in every version: 'LazyCompile:*fibonacci_js /dir/jit.js:1' in
# Node 18 (Debian 12), 'JS:*fibonacci_js /dir/jit.js:1:22' in Node 20.
@test "JIT code is named from /tmp/perf-PID.map (node --perf-basic-prof)" {
	need "$NODE" nodejs
	nodes=("$NODE")
	other=$(command -v node || true)
	if [ -n "$other" ] && [ "$(readlink -f "$other")" != "$(readlink -f "$NODE")" ]; then
		nodes+=("$other")
	fi
	cat >jit.js <<'JS'
function fibonacci_js(n) { return n < 2 ? n : fibonacci_js(n - 1) + fibonacci_js(n - 2); }
let s = 0;
for (let i = 0; i < 30; i++) s += fibonacci_js(30);
console.log(s);
JS
	for node in "${nodes[@]}"; do
		record_to node.data -- "$node" --perf-basic-prof jit.js
		remove_perf_maps node.data
		run --separate-stderr "$PROFTOOL" report --sort tottime --limit 0 node.data
		[ "$status" -eq 0 ]
		grep -E '\[jit\]\((.*[^A-Za-z0-9_$])?fibonacci_js([^A-Za-z0-9_$]|$)' <<<"$output" ||
			{ echo "$node ($("$node" --version)): no [jit] frame names fibonacci_js"; false; }
		run --separate-stderr "$PROFTOOL" report --format folded node.data
		[ "$status" -eq 0 ]
		# (measured 53 to 78 %: the rest is node starting)
		at_least "$(word_share fibonacci_js <<<"$output")" 30 ||
			{ echo "$node ($("$node" --version))"; false; }
	done
}

@test "a binary deleted while it runs is still symbolized" {
	cp "$WORKLOADS_NOFP/split" doomed
	# removed once it runs (not after a fixed time, which a loaded machine can take to exec it)
	record_to del.data -- sh -c './doomed 0.6 & p=$! d=$(pwd -P)/doomed i=0
		while [ "$(readlink /proc/$p/exe)" != "$d" ] && [ $((i += 1)) -lt 2000 ]; do sleep 0.01; done
		rm doomed; wait'
	[ ! -e doomed ]
	run --separate-stderr "$PROFTOOL" report --format folded del.data
	[ "$status" -eq 0 ]
	near "$(self_share leaf_a <<<"$output")" 50 8
}

# A function that saves registers has a CFI row per push and pop: its samples must come out
# at the start of its FDE, not scattered over rows a few bytes apart (Debian's python3.11
# showed its allocator as 3-4 rows each).
@test "a stripped library: an unnamed function that pushes registers is one row at its FDE start" {
	cp "$WORKLOADS_NOFP/libpushy.so" .
	strip --strip-all libpushy.so
	[[ "$(nm -D --defined-only libpushy.so)" != *"hot_static"* ]]
	# several CFI rows in the function (one per saved register)
	rows=$(readelf --debug-dump=frames libpushy.so | grep -c 'DW_CFA_offset: r1[2-5]')
	[ "$rows" -ge 4 ]
	record_to p.data -- "$WORKLOADS_NOFP/dlcall" "$PWD/libpushy.so" 1
	run --separate-stderr "$PROFTOOL" report --sort tottime --limit 0 p.data
	[ "$status" -eq 0 ]
	grep -E '[0-9]%  libpushy\.so\+0x[0-9a-f]+$' <<<"$output" >rows
	cat rows
	# one row holds the function (a stray sample in the exported caller may make another,
	# under 1 %; rows a few bytes apart would each hold a real share)
	read -r _ _ share _ _ off <<<"$(head -n1 rows)"
	at_least "${share%\%}" 90
	tail -n +2 rows | awk '{ s = $3; sub(/%/, "", s); if (s + 0 >= 1) exit 1 }' ||
		{ echo "samples scattered over rows"; false; }
	starts=$(readelf --debug-dump=frames libpushy.so | sed -n 's/.* FDE .* pc=0*\([0-9a-f]*\)\.\..*/\1/p')
	grep -qx "${off#libpushy.so+0x}" <<<"$starts" || { echo "$off is no FDE start: $starts"; false; }
}

# The unwinder keeps each thread's last walk and takes from it the callers a new sample
# shares (symbolize/unwind.c). PROFTOOL_DEBUG_UNWIND walks every stack again without it and
# counts the walks that came out different: there must be none, on stacks of threads, deep
# recursion, code without CFI, signal handlers and Python's interpreter.
@test "the unwind memo: callers taken from a thread's last walk are those a whole walk finds" {
	need gcc gcc
	cat >sig.c <<'C'
#include <signal.h>
#include <sys/time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void in_handler(void)
{
	for (long i = 0; i < 300000; i++)
		sink += i;
}
static void on_prof(int sig)
{
	(void)sig;
	in_handler();
}
__attribute__((noinline)) static void outer(long n)
{
	for (long i = 0; i < n; i++)
		sink ^= i;
}
int main(void)
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };

	sa.sa_handler = on_prof;
	sigaction(SIGPROF, &sa, 0);
	setitimer(ITIMER_PROF, &it, 0);
	for (int r = 0; r < 10; r++)
		outer(30000000);
	return 0;
}
C
	gcc -O2 -fomit-frame-pointer -g -o sig sig.c
	check() {
		local min=$1 line n took differed
		shift
		PROFTOOL_DEBUG_UNWIND=1 "$PROFTOOL" record -q -o m.data -- "$@" >/dev/null 2>err
		line=$(grep 'proftool: debug: .* unwinds' err) || { cat err; false; }
		echo "$*: $line"
		read -r n took differed <<<"$(sed -E 's/.* ([0-9]+) unwinds, ([0-9]+) took .*; ([0-9]+) differed.*/\1 \2 \3/' <<<"$line")"
		[ "$differed" -eq 0 ]
		# the memo is used: MIN percent of the walks took callers from it. How often a
		# thread's new sample shares callers with its last one depends on how the scheduler
		# interleaves the threads: 75 % on threads under CI's load, 99 % alone
		at_least "$((100 * took / n))" "$min"
	}
	check 50 "$WORKLOADS_NOFP/threads" 0.4
	check 50 "$WORKLOADS_NOFP/recurse" 0.4
	check 30 "$WORKLOADS_NOFP/nocfi" jit 0.5
	check 50 ./sig
	check 50 "$PYTHON3" "$BATS_TEST_DIRNAME/workloads/py/split.py" 1
}
