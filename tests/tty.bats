#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# record's live status line: on stderr, only while stderr is a terminal, never with -q.
# script(1) gives the command a pseudo-terminal; what reached it is in $output.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	need script bsdutils
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
	run ! grep -q $'[\r\e]' stderr.txt
}

# A terminal's Ctrl-C goes to its whole foreground process group: the command, in record's
# group, has it already, and record must not send it a second one (Python and many shells
# quit at once on a second interrupt). A kill(1) aimed at record alone is still passed on
# (record.bats).
@test "Ctrl-C on the terminal reaches the command once, and the profile is written" {
	need "$PYTHON3" python3
	for backend in perf ptrace; do
		ctrl_c_on_tty "$backend"
	done
}

# ctrl_c_on_tty BACKEND: records exitcode trap-int on a pseudo-terminal and types Ctrl-C
ctrl_c_on_tty() {
	rm -f int.data
	run python3 - "$PROFTOOL" "$WORKLOADS/exitcode" "$1" <<'PY'
import os, pty, sys, time

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "record", "-q", "--backend", sys.argv[3], "-o", "int.data",
                           "--", sys.argv[2], "trap-int"])
# wait until the command runs with its handler installed (it has burnt some CPU)
deadline = time.time() + 30
while time.time() < deadline:
    ready = False
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        if "(exitcode)" in st and int(fields[1]) == pid and int(fields[11]) >= 5:
            ready = True
    if ready:
        break
    time.sleep(0.05)
os.write(fd, b"\x03")
out = b""
while True:
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(st))
PY
	echo "$1: $output"
	[[ "$output" == *"got SIGINT"* ]]
	[[ "$output" != *"times"* ]]
	[[ "$output" == *"exit 0"* ]]
	run "$PROFTOOL" report --format folded int.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"burn"* ]]
}
