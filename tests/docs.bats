#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Documentation is tested: --help, man/proftool.1 and CLI-CONTRACT.md list the same options,
# the man page's EXAMPLES run as written, and the page renders without warnings.

load helpers

MAN=$BATS_TEST_DIRNAME/../man/proftool.1
CONTRACT=$BATS_TEST_DIRNAME/../../shared/CLI-CONTRACT.md

teardown() {
	# the --duration example leaves its command running: end what is left of it
	[ -n "${examples_dir:-}" ] || return 0
	cd "$BATS_TEST_TMPDIR" || return 1
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" != "$$" ] || continue
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$examples_dir" ] && kill "${p#/proc/}" 2>/dev/null
	done
	return 0
}

# Options in the .TP tags of subsection ".SS NAME" of the OPTIONS section of the man page.
options_in_man() {
	awk -v ss="$1" '
		/^\.SH/ { in_opts = ($0 == ".SH OPTIONS"); in_ss = 0; next }
		/^\.SS/ { in_ss = in_opts && $0 == ".SS " ss; next }
		!in_ss { next }
		/^\.TP/ { tag = 1; next }
		tag { tag = 0; print }
	' "$MAN" | sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f\[[A-Z]*\]//g' |
		grep -oE '(^|[ ",|])--?[A-Za-z][A-Za-z-]*' | sed -E 's/^[ ",|]//' | sort -u
}

# Options in the first column of the table under "## HEADING" of the contract.
options_in_contract() {
	awk -v h="$1" '
		/^##/ { in_sec = ($0 == "## " h); next }
		in_sec && /^\| `/ { gsub(/\\\|/, "/"); split($0, cell, "|"); print cell[2] }
	' "$CONTRACT" | grep -oE '(^|[ `,])--?[A-Za-z][A-Za-z-]*' | sed -E 's/^[ `,]//' | sort -u
}

# help_matches_man COMMAND: the options of "proftool COMMAND --help" are those of ".SS COMMAND options".
help_matches_man() {
	run --separate-stderr "$PROFTOOL" "$1" --help
	[ "$status" -eq 0 ]
	help=$(options_in_help <<<"$output")
	man=$(options_in_man "$1 options")
	# a parser that finds nothing would make the comparison vacuous
	[ "$(wc -l <<<"$help")" -ge 5 ] || { echo "too few options parsed from --help: $help"; false; }
	[ "$(wc -l <<<"$man")" -ge 5 ] || { echo "too few options parsed from the man page: $man"; false; }
	diff -u --label "proftool $1 --help" --label "man/proftool.1 ($1 options)" \
		<(echo "$help") <(echo "$man")
}

# Options the contract lists for capabilities whose issues are still open, with the issue
# that builds them. They are the only ones allowed to be missing from --help, and each must
# leave this list in the commit that adds it (the test fails on a listed option --help has).
PENDING=""

# help_covers_contract COMMAND HEADING: every option in the contract's table is in --help,
# but for the pending ones above.
help_covers_contract() {
	[ -f "$CONTRACT" ] || skip "no CLI contract at $CONTRACT"
	run --separate-stderr "$PROFTOOL" "$1" --help
	[ "$status" -eq 0 ]
	help=$(options_in_help <<<"$output")
	contract=$(options_in_contract "$2")
	[ "$(wc -l <<<"$contract")" -ge 5 ] || { echo "too few options parsed from the contract: $contract"; false; }
	missing=$(comm -23 <(echo "$contract") <(echo "$help"))
	for p in $PENDING; do
		if grep -qx -- "${p%%:*}" <<<"$help"; then
			echo "${p%%:*} is in '$1 --help' now: remove it from PENDING in tests/docs.bats"
			false
		fi
		missing=$(grep -vx -- "${p%%:*}" <<<"$missing" || true)
	done
	[ -z "$missing" ] || { echo "in the contract's '$2' table but not in '$1 --help':" $missing; false; }
}

@test "record --help lists exactly the record options of the man page" {
	help_matches_man record
}

@test "report --help lists exactly the report options of the man page" {
	help_matches_man report
}

@test "diff --help lists exactly the diff options of the man page" {
	help_matches_man diff
}

@test "dump --help lists exactly the dump options of the man page" {
	help_matches_man dump
}

@test "top --help lists exactly the top options of the man page" {
	help_matches_man top
}

@test "every format of report --help is described in the man page, and the help and man list the same" {
	run --separate-stderr "$PROFTOOL" report --format nonsense
	for fmt in table tree callers callees folded json timers speedscope chrome pprof svg html; do
		[[ "$stderr" == *"$fmt"* ]] || { echo "the format error does not name $fmt"; false; }
		"$PROFTOOL" report --help | grep -qw "$fmt" || { echo "--help does not name $fmt"; false; }
		grep -q "^\.B $fmt\$" "$MAN" || { echo "the man page does not describe $fmt"; false; }
	done
}

@test "every option of the contract's record/attach table is in record --help" {
	help_covers_contract record "record / attach options"
}

@test "every option of the contract's report table is in report --help" {
	help_covers_contract report "report options"
}

@test "attach --help lists exactly the options of record --help (the man page: attach takes them)" {
	run --separate-stderr "$PROFTOOL" record --help
	[ "$status" -eq 0 ]
	record=$(options_in_help <<<"$output")
	run --separate-stderr "$PROFTOOL" attach --help
	[ "$status" -eq 0 ]
	attach=$(options_in_help <<<"$output")
	[ "$(wc -l <<<"$record")" -ge 5 ] || { echo "too few options parsed from record --help: $record"; false; }
	diff -u --label "proftool record --help" --label "proftool attach --help" \
		<(echo "$record") <(echo "$attach")
}

@test "the EXAMPLES of the man page run as written, in order, in one directory" {
	examples=$(awk '
		/^\.SH/ { in_ex = ($0 == ".SH EXAMPLES"); next }
		in_ex && /^\.EX/ { ex = 1; next }
		in_ex && /^\.EE/ { ex = 0; next }
		in_ex && ex && /^proftool / { print }
	' "$MAN")
	[ "$(wc -l <<<"$examples")" -ge 2 ] || { echo "no examples found: $examples"; false; }
	[[ "$examples" == *"proftool record "* ]] || { echo "no record example"; false; }

	mkdir bin examples
	printf '#!/usr/bin/env bash\nexec %q "$@"\n' "$PROFTOOL" >bin/proftool
	chmod +x bin/proftool
	examples_dir=$(cd examples && pwd -P)
	cd examples
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		# the reader types what the page shows; an escape would show differently (see its header)
		[[ "$line" != *\\* ]] || { echo "example $n has a troff escape: $line"; false; }
		PATH=$BATS_TEST_TMPDIR/bin:$PATH sh -c "$line" >"out.$n" 2>"err.$n" </dev/null 3>&- && st=0 || st=$?
		if [ "$st" -ne 0 ]; then
			echo "example $n exited $st: $line"
			cat "err.$n"
			false
		fi
	done <<<"$examples"
}

@test "groff -man -ww renders the man page without warnings" {
	need groff groff-base
	run --separate-stderr groff -man -ww -z -Tutf8 "$MAN"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "$stderr"; false; }
}

@test "man -l renders the man page without warnings" {
	need man man-db
	need groff groff-base
	run --separate-stderr env MANWIDTH=80 man --warnings=w -l "$MAN"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "$stderr"; false; }
	[[ "$output" == *"EXAMPLES"* ]]
}
