#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages proftool needs to build and test, when missing.
# Usage: scripts/deps.sh [build|check|bench|fuzz|leaks]
# (g++ brings the libstdc++ development files that __cxa_demangle links against;
# libiberty-dev the static libiberty whose rust_demangle handles Rust names;
# libncurses-dev the terminal library of proftool top's screen.)
set -eu

want="gcc g++ make libc6-dev libelf-dev libdw-dev libjansson-dev zlib1g-dev libiberty-dev libncurses-dev"
case "${1:-build}" in
check)
	# the real consumers of the export formats: go tool pprof, a browser, node and npm for
	# speedscope; the tests run /usr/bin/node, so nodejs even where some npm is on PATH (nvm's)
	want="$want bats procps libc6-dbg groff-base man-db bash-completion python3 bsdutils strace lld xz-utils golang-go chromium fonts-dejavu-core nodejs"
	# a terminal whose screen the top tests can read back
	want="$want tmux"
	# oneDNN (libdnnl2, and the headers to build a program with it): ITT-instrumented code for
	# the ITT collector's tests
	want="$want libdnnl-dev"
	command -v npm >/dev/null 2>&1 || want="$want npm"
	;;
bench) want="$want bats procps libc6-dbg linux-perf" ;;
leaks) want="$want bats valgrind" ;;
fuzz)
	# libFuzzer and the sanitizer runtimes: clang 14's compiler-rt
	want="$want clang libclang-rt-14-dev"
	;;
esac

missing=
for pkg in $want; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $pkg" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "proftool: missing packages:$missing; install them with:" >&2
	echo "  sudo apt-get update && sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "proftool: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
