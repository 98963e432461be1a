#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the npm packages the export tests use into DIR: speedscope's app, and
# playwright-core to drive Debian's chromium (it downloads no browser).
# Usage: scripts/consumers.sh DIR
# Failing to install is not fatal: the tests that need a package skip, saying why (and fail
# under CI=true, where a check that cannot run must not pass).
set -u

dir=${1:?usage: scripts/consumers.sh DIR}
speedscope=speedscope@1.25.0
playwright=playwright-core@1.57.0

[ -f "$dir/node_modules/speedscope/package.json" ] && [ -f "$dir/node_modules/playwright-core/package.json" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
	echo "proftool: npm is missing; the browser checks will be skipped, or fail under CI=true (scripts/deps.sh check installs it)" >&2
	exit 0
fi
mkdir -p "$dir"
echo "proftool: installing $speedscope $playwright into $dir" >&2
if ! npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "$speedscope" "$playwright" >&2; then
	echo "proftool: could not install $speedscope $playwright; the browser checks will be skipped, or fail under CI=true" >&2
fi
exit 0
