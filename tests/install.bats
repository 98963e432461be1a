#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# make install and make uninstall into a DESTDIR, and what they install: the binary runs, the
# man page renders, bash-completion finds the completion; and the completion offers exactly
# the commands, options and values --help lists, files, process ids and record's command.

load helpers

REPO=$BATS_TEST_DIRNAME/..
COMPLETION=$REPO/completion/proftool.bash
BASH_COMPLETION=/usr/share/bash-completion/bash_completion

teardown() {
	[ -z "${sleeper:-}" ] || kill "$sleeper" 2>/dev/null
	return 0
}

# repo_make ARGS...: make in the source tree, with the build directory of $PROFTOOL. The
# make that runs the suites passes its variables and jobserver down in MAKEFLAGS; this
# make needs neither (and fd 3 is bats' own, not a jobserver pipe), nor install paths
# from the environment.
repo_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u PREFIX -u DESTDIR -u BINDIR -u MANDIR \
		-u BASHCOMPDIR -u INCLUDEDIR -u PYTHONDIR -u RTDIR \
		make --no-print-directory -C "$REPO" O="$(dirname "$PROFTOOL")" "$@" 3>&-
}

# install_to DESTDIR: make install with PREFIX=/usr into DESTDIR
install_to() {
	run repo_make install DESTDIR="$1" PREFIX=/usr PYTHONDIR=/usr/lib/python3/dist-packages
	[ "$status" -eq 0 ] || { echo "make install failed: $output"; return 1; }
}

need_bash_completion() {
	need_package bash-completion
	[ -f "$BASH_COMPLETION" ] || skip_or_fail "no $BASH_COMPLETION, which the Debian package bash-completion installs"
}

@test "make install puts each file in its place under DESTDIR with its mode; make uninstall removes them all" {
	dest=$BATS_TEST_TMPDIR/dest
	install_to "$dest"
	# the binary that was built, not another one made on the way: the build is up to date
	cmp "$PROFTOOL" "$dest/usr/bin/proftool"
	cmp "$REPO/man/proftool.1" "$dest/usr/share/man/man1/proftool.1"
	cmp "$COMPLETION" "$dest/usr/share/bash-completion/completions/proftool"
	cmp "$(dirname "$PROFTOOL")/libproftool-rt.so" "$dest/usr/lib/proftool/libproftool-rt.so"
	{
		echo "755 usr/bin/proftool"
		echo "644 usr/share/man/man1/proftool.1"
		echo "644 usr/share/bash-completion/completions/proftool"
		echo "644 usr/lib/proftool/libproftool-rt.so"
		# what later versions of the tree bring: headers and a Python package
		for f in "$REPO"/include/*.h; do
			[ ! -f "$f" ] || echo "644 usr/include/${f##*/}"
		done
		if [ -d "$REPO/python/proftool" ]; then
			(cd "$REPO/python" && find proftool -name __pycache__ -prune -o -type f ! -name '*.py[co]' -print) |
				sed 's|^|644 usr/lib/python3/dist-packages/|'
		fi
	} | sort >expected
	(cd "$dest" && find . -type f -printf '%m %P\n' | sort) >installed
	diff -u expected installed

	run repo_make uninstall DESTDIR="$dest" PREFIX=/usr PYTHONDIR=/usr/lib/python3/dist-packages
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run find "$dest" -type f
	[ -z "$output" ] || { echo "left behind by make uninstall: $output"; false; }
	[ ! -e "$dest/usr/lib/python3/dist-packages/proftool" ]
}

@test "make install without PREFIX installs under /usr/local" {
	run repo_make -n install DESTDIR=/nonexistent
	[ "$status" -eq 0 ]
	[[ "$output" == *"/nonexistent/usr/local/bin/proftool"* ]]
	[[ "$output" == *"/nonexistent/usr/local/share/man/man1/proftool.1"* ]]
	[[ "$output" == *"/nonexistent/usr/local/share/bash-completion/completions/proftool"* ]]
}

@test "the installed proftool runs: --version, record and report" {
	install_to "$BATS_TEST_TMPDIR/dest"
	bin=$BATS_TEST_TMPDIR/dest/usr/bin/proftool
	run --separate-stderr "$bin" --version
	[ "$status" -eq 0 ]
	[ "$output" = "$("$PROFTOOL" --version)" ]
	[[ "$output" == "proftool "[0-9]* ]]
	"$bin" record -q -o split.data -- "$WORKLOADS/split" 0.5
	run --separate-stderr "$bin" report split.data
	[ "$status" -eq 0 ]
	[[ "$output" == *"split.c:"*"(leaf_a)"* ]]
	[[ "$output" == *"split.c:"*"(main)"* ]]
	# the headers compile, and the Python package imports, from where they were installed
	for h in "$BATS_TEST_TMPDIR"/dest/usr/include/*.h; do
		[ -f "$h" ] || continue
		echo "#include <${h##*/}>" | gcc -fsyntax-only -I"$BATS_TEST_TMPDIR/dest/usr/include" -x c -
	done
	if [ -d "$REPO/python/proftool" ]; then
		PYTHONPATH=$BATS_TEST_TMPDIR/dest/usr/lib/python3/dist-packages python3 -c 'import proftool'
	fi
}

@test "the installed man page renders, and man finds it under DESTDIR's share/man" {
	need man man-db
	need groff groff-base
	install_to "$BATS_TEST_TMPDIR/dest"
	page=$BATS_TEST_TMPDIR/dest/usr/share/man/man1/proftool.1
	run --separate-stderr env MANWIDTH=80 man -l "$page"
	[ "$status" -eq 0 ]
	[[ "$output" == *"proftool - sampling profiler"* ]]
	[[ "$output" == *"EXAMPLES"* ]]
	run --separate-stderr env MANPATH="$BATS_TEST_TMPDIR/dest/usr/share/man" man -w proftool
	[ "$status" -eq 0 ]
	[ "$output" = "$page" ]
	run --separate-stderr env MANPATH="$BATS_TEST_TMPDIR/dest/usr/share/man" MANWIDTH=80 man 1 proftool
	[ "$status" -eq 0 ]
	[[ "$output" == *"proftool record"* ]]
}

@test "bash-completion's loader finds the installed completion in PREFIX/share" {
	need_bash_completion
	install_to "$BATS_TEST_TMPDIR/dest"
	mkdir user
	# the default completion (complete -D) is bash-completion's loader: run it as bash
	# would on a first TAB after proftool
	run env -u BASH_ENV XDG_DATA_DIRS="$BATS_TEST_TMPDIR/dest/usr/share" \
		BASH_COMPLETION_USER_DIR="$PWD/user" bash --norc --noprofile -c '
			. "$1" || exit 1
			spec=$(complete -p -D) && loader=${spec#*-F } && loader=${loader%% *} || exit 1
			"$loader" proftool proftool ""
			complete -p proftool && shopt -s extdebug && declare -F _proftool' _ "$BASH_COMPLETION"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "complete -F _proftool proftool" ]
	[[ "${lines[1]}" == "_proftool "[0-9]*" $BATS_TEST_TMPDIR/dest/usr/share/bash-completion/completions/proftool" ]]
}

# ---- the completion ----

# completions MODE WORD...: what the completion offers when the command line is WORD...
# and the cursor is at the end of the last word, one per line, sorted. MODE is plain (the
# script alone) or bc (bash-completion loaded first). Readline splits "--sort=t" into
# the words "--sort" "=" "t", and so must the caller.
completions() {
	local mode=$1 out

	shift
	out=$(env -u BASH_ENV BASH_COMPLETION="$BASH_COMPLETION" bash --norc --noprofile -c '
		mode=$1 script=$2
		shift 2
		if [ "$mode" = bc ]; then
			. "$BASH_COMPLETION" || exit 1
		fi
		. "$script" || exit 1
		spec=$(complete -p proftool) || exit 1
		func=${spec#*-F } func=${func%% *}
		COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMP_LINE= COMP_TYPE=9 COMP_KEY=9
		prev=
		for w in "$@"; do
			if [ -z "$COMP_LINE" ] || [ "$w" = = ] || [ "$prev" = = ]; then
				COMP_LINE+=$w
			else
				COMP_LINE+=" $w"
			fi
			prev=$w
		done
		COMP_POINT=${#COMP_LINE}
		"$func" proftool "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"
	' _ "$mode" "$COMPLETION" "$@" 2>/dev/null) || { echo "the completion failed on '$*' ($mode)" >&2; return 1; }
	[ -z "$out" ] || sort -u <<<"$out"
}

# offers MODE WORD... :: EXPECTED...: the completions of WORD... are exactly EXPECTED
offers() {
	local mode=$1 words=() got

	shift
	while [ "$1" != :: ]; do
		words+=("$1")
		shift
	done
	shift
	got=$(completions "$mode" "${words[@]}")
	diff -u --label "expected for '${words[*]}'" --label "offered ($mode)" \
		<([ $# -eq 0 ] || printf '%s\n' "$@" | sort -u) <(echo -n "${got:+$got$'\n'}")
}

# includes MODE WORD... :: EXPECTED...: the completions of WORD... include each of EXPECTED
includes() {
	local mode=$1 words=() got

	shift
	while [ "$1" != :: ]; do
		words+=("$1")
		shift
	done
	shift
	got=$(completions "$mode" "${words[@]}")
	for w in "$@"; do
		grep -qxF -- "$w" <<<"$got" || { echo "'${words[*]}' does not offer '$w' ($mode): $got"; return 1; }
	done
}

# The commands of "proftool --help": its "commands:" list, and help.
commands_in_help() {
	"$PROFTOOL" --help | awk '/^commands:/ { c = 1; next } c && /^$/ { c = 0 } c { print $1 }'
	"$PROFTOOL" --help | grep -q '^ *proftool help COMMAND' && echo help
}

check_commands() {
	local cmds

	cmds=$(commands_in_help | sort -u)
	[ "$(wc -l <<<"$cmds")" -ge 4 ] || { echo "too few commands parsed from --help: $cmds"; false; }
	offers "$1" proftool '' :: $cmds
	offers "$1" proftool re :: $(grep '^re' <<<"$cmds")
	offers "$1" proftool help '' :: $(grep -vx help <<<"$cmds")
	offers "$1" proftool help report '' ::
	# the options of "proftool --help", and --help itself
	offers "$1" proftool - :: --help $("$PROFTOOL" --help | sed -nE 's/^ *proftool (--?[a-z][a-z-]*).*/\1/p')
}

# For every command, what "proftool CMD -" offers is what "proftool CMD --help" lists.
check_options() {
	local cmd help

	for cmd in $(commands_in_help | grep -vx help); do
		help=$("$PROFTOOL" "$cmd" --help | options_in_help)
		# every command has -h and --help at least (control and dump have little more)
		[ "$(wc -l <<<"$help")" -ge 2 ] || { echo "too few options parsed from $cmd --help: $help"; false; }
		offers "$1" proftool "$cmd" - :: $help
	done
	# after other options, an option's value and arguments
	offers "$1" proftool report --limit 5 a.data --p :: --per-process --per-thread --pid
	offers "$1" proftool attach -F 99 1 --d :: --delay --duration
	offers "$1" proftool diff --format = svg --l :: --limit
	offers "$1" proftool record -qF 99 --b :: --backend
}

# values_in_error CMD OPTION: the values the error for OPTION nonsense names
# ("... (use a, b or c)", "OPTION takes a, b or c, not 'nonsense'"), one per line
values_in_error() {
	"$PROFTOOL" "$1" "$2" nonsense 2>&1 >/dev/null |
		sed -E 's/.*(\(use |takes )//; s/(\)|, not ).*//; s/,? or /, /' | tr -d ' ' | tr , '\n'
}

# For every option with a set of values: the values offered are those the error for a wrong
# one names (and aliases), each is accepted, and each is in --help.
check_values() {
	local cmd_opt cmd opt v named offered

	for cmd_opt in record:-g record:-e record:--backend record:--mode record:--python record:--regions attach:-g attach:--mode \
		report:--sort report:--format report:--state report:--group-by diff:--format dump:--python; do
		cmd=${cmd_opt%%:*} opt=${cmd_opt#*:}
		named=$(values_in_error "$cmd" "$opt")
		[ "$(wc -l <<<"$named")" -ge 2 ] || { echo "no values parsed from the error for $cmd $opt: $named"; false; }
		includes "$1" proftool "$cmd" "$opt" '' :: $named
		offered=$(completions "$1" proftool "$cmd" "$opt" '')
		for v in $offered; do
			# record and attach then stop at the missing command or process id, report and
			# diff at the missing file: errors of their own, which do not name the value
			if [[ $cmd == record || $cmd == attach ]]; then
				run --separate-stderr "$PROFTOOL" "$cmd" "$opt" "$v"
			else
				run --separate-stderr "$PROFTOOL" "$cmd" "$opt" "$v" /nonexistent/a /nonexistent/b
			fi
			[[ "$stderr" != *"'$v'"* ]] || { echo "$cmd $opt $v, offered, is refused: $stderr"; false; }
			"$PROFTOOL" "$cmd" --help | grep -qw -- "$v" || { echo "$cmd --help does not name $opt $v"; false; }
		done
		# --opt=value as well as --opt value
		[[ "$opt" != --* ]] || [ "$(completions "$1" proftool "$cmd" "$opt" =)" = "$offered" ]
	done
	offers "$1" proftool report --sort = tot :: tottime
	offers "$1" proftool report --format s :: speedscope svg
	# --group-by's keys, separated by commas: the last one, among those not given yet
	offers "$1" proftool report --group-by comm,m :: comm,module
	offers "$1" proftool report --group-by module,comm, :: module,comm,process module,comm,thread module,comm,state module,comm,rank module,comm,host
	offers "$1" proftool record -g '' :: dwarf fp none
	offers "$1" proftool record -qg '' :: dwarf fp none
	# numbers, names and expressions get nothing (not files)
	touch 7.data
	offers "$1" proftool record -F '' ::
	offers "$1" proftool record --duration '' ::
	offers "$1" proftool report --limit '' ::
	offers "$1" proftool report --match '' ::
	offers "$1" proftool report --comm '' ::
}

check_files() {
	mkdir sub
	touch a.data b.data
	offers "$1" proftool report '' :: a.data b.data sub
	offers "$1" proftool report -i '' :: a.data b.data sub
	offers "$1" proftool report -i a :: a.data
	offers "$1" proftool report --sort name a.data -o '' :: a.data b.data sub
	offers "$1" proftool report -- - ::
	offers "$1" proftool record -o '' :: a.data b.data sub
	offers "$1" proftool attach -o b :: b.data
	offers "$1" proftool diff a.data '' :: a.data b.data sub
	offers "$1" proftool diff a.data b.data '' ::
	offers "$1" proftool diff -o '' :: a.data b.data sub
}

check_pids() {
	local got pid

	sleep 1000 3>&- &
	sleeper=$!
	includes "$1" proftool attach '' :: "$sleeper"
	includes "$1" proftool attach "${sleeper:0:1}" :: "$sleeper"
	includes "$1" proftool attach -q --duration 5 "$sleeper" :: "$sleeper"
	includes "$1" proftool attach slee :: "$sleeper"
	offers "$1" proftool attach "$sleeper" '' ::
	includes "$1" proftool dump '' :: "$sleeper"
	includes "$1" proftool dump --python off slee :: "$sleeper"
	offers "$1" proftool dump "$sleeper" '' ::
	got=$(completions "$1" proftool attach '')
	[ "$(wc -l <<<"$got")" -ge 2 ]
	for pid in $got; do
		[[ "$pid" =~ ^[0-9]+$ ]] || { echo "attach offers '$pid', not a process id"; false; }
		# not a kernel thread (PF_KTHREAD), where the process is still there to tell
		awk -v pid="$pid" '{ sub(/.*\) /, ""); if (int($7 / 2097152) % 2) { print pid " is a kernel thread"; exit 1 } }' \
			"/proc/$pid/stat" 2>/dev/null || [ ! -e "/proc/$pid" ]
	done
	got=$(completions "$1" proftool attach slee)
	for pid in $got; do
		[[ "$(cat "/proc/$pid/comm" 2>/dev/null || echo slee)" == slee* ]] || { echo "attach slee offers $pid"; false; }
	done
}

check_command() {
	touch a.data
	includes "$1" proftool record -- slee :: sleep
	includes "$1" proftool record slee :: sleep
	includes "$1" proftool record -F 99 -g fp -o x.data slee :: sleep
	includes "$1" proftool record --mode = wall -- slee :: sleep
	# what follows the command is the command's, not record's options
	run completions "$1" proftool record -- sleep --d
	[[ "$output" != *--duration* ]]
	run completions "$1" proftool record -q sleep -
	[[ "$output" != *--duration* ]]
}

@test "completion (bash alone): the commands of --help, and help's" {
	check_commands plain
}

@test "completion (bash-completion): the commands of --help, and help's" {
	need_bash_completion
	check_commands bc
}

@test "completion (bash alone): each command's options are exactly those its --help lists" {
	check_options plain
}

@test "completion (bash-completion): each command's options are exactly those its --help lists" {
	need_bash_completion
	check_options bc
}

@test "completion (bash alone): the values of -g, -e, --backend, --mode, --sort, --format, --state" {
	check_values plain
}

@test "completion (bash-completion): the values of -g, -e, --backend, --mode, --sort, --format, --state" {
	need_bash_completion
	check_values bc
}

@test "completion (bash alone): files for -i, -o and the profiles of report and diff" {
	check_files plain
}

@test "completion (bash-completion): files for -i, -o and the profiles of report and diff" {
	need_bash_completion
	check_files bc
}

@test "completion (bash alone): process ids for attach, by number or by name" {
	check_pids plain
}

@test "completion (bash-completion): process ids for attach, by number or by name" {
	need_bash_completion
	check_pids bc
}

@test "completion (bash alone): record's COMMAND, after -- or without it, then files" {
	check_command plain
	offers plain proftool record -- sleep '' :: a.data
}

@test "completion (bash-completion): record's COMMAND and that command's own completion" {
	need_bash_completion
	check_command bc
	# sort's completion (bash-completion's _longopt, from sort --help)
	includes bc proftool record -- sort --rev :: --reverse
	includes bc proftool record -q sort --rev :: --reverse
}

# typed MODE KEYS: types KEYS (\t for TAB) into an interactive bash on a terminal, with
# the completion loaded (after bash-completion with MODE bc), and prints the command line
# that readline ends up with: the completion as bash really runs it, compopt included.
typed() {
	python3 - "$1" "$2" "$COMPLETION" "$BASH_COMPLETION" <<'PY'
import os, pty, re, select, sys, time

mode, keys, script, bash_completion = sys.argv[1:]
env = dict(os.environ, TERM="dumb", INPUTRC="/dev/null", HISTFILE="/dev/null")
env.pop("BASH_ENV", None)
pid, fd = pty.fork()
if pid == 0:
    os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
out = b""

def until(pattern, timeout=30):
    global out
    end = time.time() + timeout
    while not re.search(pattern, out):
        left = end - time.time()
        r = select.select([fd], [], [], max(left, 0))[0]
        data = os.read(fd, 4096) if r else b""
        if not data:
            sys.exit("no %r from bash; it wrote %r" % (pattern, out))
        out += data

# the prompt is spelled differently in the command, so that its echo does not match
load = (". '%s'; " % bash_completion if mode == "bc" else "") + ". '%s'" % script
os.write(fd, ("PS1='READ''Y> '; %s\n" % load).encode())
until(rb"READY> ")
out = b""
# type the keys, go to the start of the line and make it an echo
os.write(fd, keys.replace("\\t", "\t").encode() + b"\x01echo LINE: \r")
until(rb"\nLINE: [^\r\n]*\r?\n")
print(re.search(rb"\nLINE: ([^\r\n]*)", out).group(1).decode().rstrip())
os.write(fd, b"exit\n")
os.close(fd)
os.waitpid(pid, 0)
PY
}

check_typed() {
	mkdir sub
	touch sub/x.data
	run typed "$1" 'proftool rep\t--sort=tot\t--form\ts\tv\tsu\tx\t'
	[ "$status" -eq 0 ]
	[ "$output" = "proftool report --sort=tottime --format svg sub/x.data" ] || { echo "got: $output"; false; }
}

@test "completion (bash alone) in an interactive bash: TAB completes commands, options, values and paths" {
	check_typed plain
}

@test "completion (bash-completion) in an interactive bash: TAB completes commands, options, values and paths" {
	need_bash_completion
	check_typed bc
	run typed bc 'proftool record -q -- sort --rev\t'
	[ "$status" -eq 0 ]
	[ "$output" = "proftool record -q -- sort --reverse" ] || { echo "got: $output"; false; }
}
