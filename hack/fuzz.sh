#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each (default 3s).
# `make test` runs it briefly so each target's generator and invariants run
# in CI; `make fuzz` runs it for minutes. `go test -fuzz` takes one target of
# one package at a time, hence the loop. New failures are written by Go to
# the package's testdata/fuzz/ folder: commit them, they become regression
# cases that every `go test` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-${1:-3s}}
failed=0
while IFS=: read -r file target; do
	pkg=./$(dirname "$file")
	echo "fuzz $pkg $target ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
		cat /tmp/fuzz.$$.log
		failed=1
	fi
done < <(git ls-files '*_test.go' | xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/:func /:/' | sort)
rm -f /tmp/fuzz.$$.log
if [ "$failed" != 0 ]; then
	echo "fuzzing found failures (see above)"
	exit 1
fi
