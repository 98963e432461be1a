# SPDX-License-Identifier: MIT
# Finds the negated commands of the bats suites that can never fail a test, for make lint:
#
#     awk -f scripts/lint-bats.awk tests/*.bats tests/helpers.bash
#
# bats runs a test under 'set -e', and bash does not exit on a command negated with '!'
# (nor on any command of a && or || list but the last), so a line '! grep -q x out' in the
# middle of a test checks nothing: the test goes on whatever grep finds. A '!' that starts
# a command is accepted only as a condition (if, elif, while, until) or when the negated
# command is followed by '||' and something that fails (false, return N, exit, skip, a
# '{ ...; }' block); write 'run ! CMD' (bats >= 1.5) or '! CMD || false' instead. The last
# command of a test would fail it, but is refused too: a line added after it would make it
# dead without a word.
#
# The shell is read as far as that takes: quotes (also across lines: the Python and awk
# programs the tests pass in single quotes), $(...), <(...), here-documents, comments,
# line continuations, and && / || / | at the end of a line.

BEGIN {
	bad = 0
}

FNR == 1 {
	reset_file()
}

{
	if (hd_term != "") {
		l = $0
		if (hd_strip)
			sub(/^\t+/, "", l)
		if (l == hd_term)
			hd_term = ""
		next
	}
	lex($0, FNR)
	if (nhd > 0) {
		# the body of the first here-document starts on the next line (one at a time)
		hd_term = hd[1]
		hd_strip = hd_s[1]
		nhd = 0
	}
	if (sd > 0 || cont)
		next
	if (nt > 0 && (tok[nt] == "|" || tok[nt] == "||" || tok[nt] == "&&") && kind[nt] == "op")
		next
	check()
	nt = 0
}

END {
	if (nt > 0)
		check()
	exit bad
}

function reset_file() {
	nt = 0
	sd = 0
	cont = 0
	word = ""
	inword = 0
	hd_term = ""
	nhd = 0
}

# add(KIND, TEXT, LINE): a token of the logical line
function add(k, t, ln) {
	nt++
	kind[nt] = k
	tok[nt] = t
	tline[nt] = ln
}

function endword(ln) {
	if (inword)
		add("word", word, wline)
	word = ""
	inword = 0
}

function wchar(c, ln) {
	if (!inword)
		wline = ln
	inword = 1
	word = word c
}

# lex(LINE, NR): splits a physical line into words and operators, keeping the quoting
# state (stack st[1..sd]: ' " $' $( ) from one line to the next
function lex(s, ln,    i, n, c, c2, top, m) {
	n = length(s)
	cont = 0
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		c2 = substr(s, i, 2)
		top = sd > 0 ? st[sd] : ""
		if (top == "'") {
			wchar(c, ln)
			if (c == "'")
				sd--
			continue
		}
		if (top == "$'") {
			wchar(c, ln)
			if (c == "\\") {
				wchar(substr(s, i + 1, 1), ln)
				i++
			} else if (c == "'") {
				sd--
			}
			continue
		}
		if (top == "\"") {
			wchar(c, ln)
			if (c == "\\") {
				wchar(substr(s, i + 1, 1), ln)
				i++
			} else if (c == "\"") {
				sd--
			} else if (c2 == "$(") {
				wchar("(", ln)
				i++
				st[++sd] = "("
			}
			continue
		}
		# the shell itself, or inside $( ) / <( ), where only the parentheses count
		if (c == "\\") {
			if (i == n) {
				cont = 1
				break
			}
			wchar(c substr(s, i + 1, 1), ln)
			i++
			continue
		}
		if (c == "'") {
			wchar(c, ln)
			st[++sd] = "'"
			continue
		}
		if (c == "\"") {
			wchar(c, ln)
			st[++sd] = "\""
			continue
		}
		if (c2 == "$'") {
			wchar(c2, ln)
			i++
			st[++sd] = "$'"
			continue
		}
		if (c2 == "$(" || c2 == "<(" || c2 == ">(") {
			wchar(c2, ln)
			i++
			st[++sd] = "("
			continue
		}
		if (top == "(") {
			wchar(c, ln)
			if (c == "(")
				st[++sd] = "("
			else if (c == ")")
				sd--
			continue
		}
		if (c == " " || c == "\t") {
			endword(ln)
			continue
		}
		if (c == "#" && !inword)
			break
		if (substr(s, i, 3) == "<<<") {
			wchar("<<<", ln)
			i += 2
			continue
		}
		if (c2 == "<<") {
			# a here-document: its word, quoted or not, ends the body
			m = substr(s, i + 2)
			hd_s[nhd + 1] = sub(/^-/, "", m)
			sub(/^[ \t]*/, "", m)
			if (match(m, /^['"]?[A-Za-z_][A-Za-z0-9_]*/)) {
				nhd++
				hd[nhd] = substr(m, 1, RLENGTH)
				gsub(/['"]/, "", hd[nhd])
			}
			wchar(c2, ln)
			i++
			continue
		}
		if (c == ";" || c == "(" || c == ")" || c == "|" || c == "&") {
			# redirections: 2>&1, >&2, &>file, >|file
			if ((c == "&" && (word ~ /[<>]$/ || substr(s, i + 1, 1) == ">")) ||
			    (c == "|" && word ~ />$/)) {
				wchar(c, ln)
				continue
			}
			endword(ln)
			if (c2 == "&&" || c2 == "||" || c2 == ";;") {
				add("op", c2, ln)
				i++
			} else {
				add("op", c, ln)
			}
			continue
		}
		wchar(c, ln)
	}
	if (sd > 0) {
		wchar("\n", ln)
		return
	}
	if (!cont)
		endword(ln)
}

# failing(I): whether the words from token I on fail for sure (what follows '||')
function failing(i) {
	if (i > nt || kind[i] != "word")
		return 0
	if (tok[i] == "false" || tok[i] == "exit" || tok[i] == "skip" || tok[i] == "skip_or_fail" ||
	    tok[i] == "{")
		return 1
	if (tok[i] == "return")
		return i + 1 > nt || kind[i + 1] != "word" || tok[i + 1] != "0"
	return 0
}

# check(): the logical line in tok[1..nt]
function check(    i, j, depth, start, cond, w, ok, end) {
	start = 1
	cond = 0
	for (i = 1; i <= nt; i++) {
		if (kind[i] == "op") {
			start = tok[i] != ")"
			continue
		}
		w = tok[i]
		if (!start)
			continue
		if (w == "if" || w == "elif" || w == "while" || w == "until") {
			cond = 1
			continue
		}
		if (w == "then" || w == "do" || w == "else") {
			cond = 0
			continue
		}
		if (w == "{" || w == "}" || w == "time")
			continue
		if (w != "!") {
			start = 0
			continue
		}
		if (cond)
			continue
		# where the negated pipeline ends, at its own level of { } and ( )
		depth = 0
		end = ""
		for (j = i + 1; j <= nt; j++) {
			if (kind[j] == "op") {
				if (tok[j] == "(") {
					depth++
				} else if (tok[j] == ")") {
					if (depth-- == 0) {
						end = ")"
						break
					}
				} else if (depth == 0 && tok[j] != "|") {
					end = tok[j]
					break
				}
			} else if (tok[j] == "{" && (kind[j - 1] == "op" || tok[j - 1] == "!")) {
				depth++
			} else if (tok[j] == "}" && kind[j - 1] == "op" && tok[j - 1] == ";") {
				if (depth-- == 0) {
					end = "}"
					break
				}
			}
		}
		ok = end == "||" && failing(j + 1)
		if (!ok) {
			printf "%s:%d: '! CMD' here cannot fail the test (set -e ignores a negated command); " \
			       "write 'run ! CMD', or '! CMD || false' to keep $output\n", FILENAME, tline[i]
			bad = 1
		}
	}
}
