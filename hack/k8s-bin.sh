#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kubectl,
# kube-scheduler, kube-controller-manager) and the real node's kubelet and
# kube-proxy into bin/k8s from the Go module proxy. No release download is
# reachable from our CI machines, so envtest and the local dev cluster use
# these. A stamp file records the pinned versions: when it matches, nothing
# is rebuilt. A finished build is also kept in a per-user cache outside the
# checkout (~/.cache/crawl-operator), so a fresh clone on the same machine
# (CI) copies it instead of building; only binaries missing from both are
# built. The first build takes ~15 minutes on two cores; later builds are
# served by the Go build cache.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${K8S_BIN_DIR:-$root/bin/k8s}
kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$root/hack/tools/kube/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$root/hack/tools/etcd/go.mod")
stamp="kubernetes=$kube_version etcd=$etcd_version"
bins=(etcd kube-apiserver kubectl kube-scheduler kube-controller-manager kubelet kube-proxy)

up_to_date() {
	[ "$(cat "$out/.versions" 2>/dev/null)" = "$stamp" ] || return 1
	for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}

if up_to_date; then
	echo "bin/k8s is up to date ($stamp)"
	exit 0
fi
# Two builds at once (make test in two shells, parallel CI steps) would
# delete each other's half-built binaries: the second waits for the first.
mkdir -p "$out"
exec 9>"$out.lock"
flock 9
if up_to_date; then
	echo "bin/k8s is up to date ($stamp)"
	exit 0
fi
cache=${K8S_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crawl-operator/k8s-${kube_version}-etcd-${etcd_version}}
mkdir -p "$out"
if [ "$(cat "$out/.versions" 2>/dev/null)" != "$stamp" ]; then
	# Other versions: none of them may be kept.
	for b in "${bins[@]}"; do rm -f "$out/$b"; done
fi
rm -f "$out/.versions"
if [ "$(cat "$cache/.versions" 2>/dev/null)" = "$stamp" ]; then
	echo "copying binaries from $cache"
	for b in "${bins[@]}"; do
		if [ ! -x "$out/$b" ] && [ -x "$cache/$b" ]; then cp -a "$cache/$b" "$out/$b"; fi
	done
fi

# Without these the binaries report v0.0.0-master and kubectl warns about skew.
minor=$(echo "$kube_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

export CGO_ENABLED=0 GOFLAGS=-mod=mod
if [ ! -x "$out/etcd" ]; then
	echo "building etcd $etcd_version into $out"
	(cd "$root/hack/tools/etcd" && go build -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
fi
# One go build for all the missing Kubernetes commands: it compiles the
# packages they share once and links one binary while compiling the next,
# which a loop of builds cannot.
pkgs=()
for cmd in kube-apiserver kubectl kube-scheduler kube-controller-manager kubelet kube-proxy; do
	[ -x "$out/$cmd" ] || pkgs+=("k8s.io/kubernetes/cmd/$cmd")
done
if [ ${#pkgs[@]} -gt 0 ]; then
	echo "building ${pkgs[*]##*/} $kube_version into $out"
	(cd "$root/hack/tools/kube" && go build -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
fi
echo "$stamp" > "$out/.versions"
if mkdir -p "$cache" 2>/dev/null; then
	if [ "$(cat "$cache/.versions" 2>/dev/null)" != "$stamp" ]; then rm -rf "${cache:?}"/* "$cache/.versions"; fi
	cp -a "$out/." "$cache/" || echo "could not cache the binaries in $cache (continuing)"
fi
echo "bin/k8s is ready ($stamp)"
