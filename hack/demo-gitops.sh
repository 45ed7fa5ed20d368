#!/usr/bin/env bash
# `make demo-gitops`: the operator as a GitOps user runs it. On the dev
# cluster with a real node (as make demo-helm), Flux's source-, kustomize-
# and helm-controller (make flux-bin, Flux v2.9.5) run against the cluster;
# a Git server on this machine serves the fleet repository (docs/gitops's two
# Flux files, the release's tag set to the working copy's chart, and a
# CrawlTarget of the sample site) and a copy of this repository; a registry
# beside it holds the working copy's chart, pushed unsigned (a demo makes no
# release). The bootstrap Kustomization adds the laptop's values, the
# registry's address and "no verification" as patches (printed). The demo
# waits until Flux has installed the release and the sites Kustomization is
# Ready (its CrawlTarget crawled), then searches through the chart's index
# Service. Everything keeps running; `make dev-cluster-down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=hack/demo/lib.sh
. hack/demo/lib.sh

FLUX_STATE=$DEV/flux

started=$SECONDS
real_node_with_image

step "Flux: its CRDs, and source-, kustomize- and helm-controller as processes (logs in $FLUX_STATE)"
bin/devcluster flux down --state-dir "$FLUX_STATE"
bin/devcluster flux up --state-dir "$FLUX_STATE" --kubeconfig "$KUBECONFIG"
$KUBECTL get crds -o name | grep fluxcd

step "The fleet repository on a Git server here, and flux bootstrap's objects"
bin/devcluster flux fleet --state-dir "$FLUX_STATE" --kubeconfig "$KUBECONFIG" \
	--site "http://$RN_GW:8090/" --image-tag "${IMAGE##*:}"
echo "the fleet repository's files:"
(cd "$FLUX_STATE/work/fleet" && find . -type f | sort | sed 's|^\./|  |')

step "Waiting until Flux has installed the release and crawl-sites is Ready (its CrawlTarget crawled)"
ready() { $KUBECTL -n flux-system get kustomization "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true; }
for i in $(seq 1 300); do
	line=""
	for k in flux-system crawl-operator crawl-sites; do line="$line $k=$(ready "$k")"; done
	hr=$($KUBECTL -n "$NS" get helmrelease "$RELEASE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}' 2>/dev/null || true)
	ct=$($KUBECTL -n sites get crawltarget harbour-bakery -o jsonpath='{.status.phase}' 2>/dev/null || true)
	printf '  [%3ss] Ready:%s  HelmRelease: %-18s CrawlTarget: %s\n' "$((i * 2))" "$line" "${hr:--}" "${ct:--}"
	[ "$(ready crawl-sites)" = True ] && break
	if [ "$i" = 300 ]; then
		echo "crawl-sites is not Ready after 10 minutes; see $KUBECTL -n flux-system describe kustomizations and the logs in $FLUX_STATE" >&2
		exit 1
	fi
	sleep 2
done
$KUBECTL get gitrepositories,ocirepositories,kustomizations -n flux-system
$KUBECTL get helmreleases,deployments,pods -n "$NS"
$KUBECTL get crawltargets,siteindexes -n sites

search_through_service

cat <<MSG

Flux runs the operator from Git on the dev cluster's real node. Next:
  export KUBECONFIG=$KUBECONFIG
  edit $FLUX_STATE/work/fleet (a site in sites/, a value in infrastructure/crawl-operator/),
  then: bin/devcluster flux commit --state-dir $FLUX_STATE -m "what changed"
  $KUBECTL -n flux-system get kustomizations -w
  make dev-cluster-down    # stop everything, Flux included
MSG
echo "demo-gitops ready in $((SECONDS - started))s"
