# SPDX-License-Identifier: MIT
# Sourced by the bench scripts: puts a table between its markers in bench/README.md.

# save_table NAME TABLE README: replaces what stands between the lines
# <!-- bench-NAME:start --> and <!-- bench-NAME:end --> of README with the file TABLE (as a
# code block), unless BENCH_NO_README=1; says on stderr what it did.
save_table() {
	local name=$1 table=$2 readme=$3

	[ "${BENCH_NO_README:-0}" != 1 ] || return 0
	if [ -f "$readme" ] && grep -q "^<!-- bench-$name:start -->\$" "$readme" &&
		grep -q "^<!-- bench-$name:end -->\$" "$readme"; then
		awk -v tf="$table" -v start="<!-- bench-$name:start -->" -v end="<!-- bench-$name:end -->" '
			$0 == start { print; print "```"; while ((getline l < tf) > 0) print l; print "```"; skip = 1; next }
			$0 == end { skip = 0 }
			!skip { print }' "$readme" >"$readme.new.$$"
		cat "$readme.new.$$" >"$readme"
		rm -f "$readme.new.$$"
		echo "bench: $name table written to bench/README.md" >&2
	else
		echo "bench: bench/README.md has no <!-- bench-$name:start --> / <!-- bench-$name:end --> markers; table not saved" >&2
	fi
}
