#!/usr/bin/env bash
# tool-bin.sh NAME MODULE PACKAGE... builds the commands PACKAGE... of the
# tools module hack/tools/MODULE into bin/NAME with one go build (commands
# of one module share their libraries: one build compiles them once). The
# build is keyed on the module's go.mod, go.sum and own sources: when
# bin/NAME/.key matches nothing is done; a finished build is kept in
# ~/.cache/crawl-operator/NAME-KEY, so a fresh clone on the same machine
# (CI) copies it instead of building.
set -euo pipefail
name=$1 module=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/hack/tools/$module
out=$root/bin/$name
key=$(cd "$src" && find . -name '*.go' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/crawl-operator/$name-$key

if [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ]; then
	echo "bin/$name is up to date"
	exit 0
fi
rm -rf "$out"
mkdir -p "$root/bin"
if [ "$(cat "$cache/.key" 2>/dev/null)" = "$key" ]; then
	cp -a "$cache" "$out"
	echo "copied bin/$name from $cache"
	exit 0
fi
echo "building $* into bin/$name"
mkdir -p "$out"
(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -ldflags "-s -w" -o "$out/" "$@")
echo "$key" > "$out/.key"
{ rm -rf "$cache" && mkdir -p "$(dirname "$cache")" && cp -a "$out" "$cache"; } || echo "could not cache bin/$name in $cache (continuing)"
