#!/usr/bin/env bash
# `make demo-helm`: the operator as users install it. On the dev cluster
# with a real node (kubelet, containerd, kube-proxy, CoreDNS, a default
# StorageClass: make dev-cluster REAL_NODE=1), it builds the image
# (make image), imports it into the node, installs the chart exactly as
# the README's Install section says plus only the values a laptop needs
# (each printed with its reason), waits for the rollout, applies the sample
# CrawlTarget with kubectl, waits until it is Ready and searches through
# the chart's own index Service with kubectl port-forward. The manager runs
# as the chart's Pod; only the sample website runs on this machine.
# Everything keeps running; `make dev-cluster-down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=hack/demo/lib.sh
. hack/demo/lib.sh

HELM=${HELM:-bin/helm}

started=$SECONDS
real_node_with_image

# The values a laptop needs, each with its reason, are in
# hack/demo/helm-values.yaml; nothing else differs from the README.
args=(-f hack/demo/helm-values.yaml --set "image.tag=${IMAGE##*:}")
step "Installing the chart: helm install $RELEASE charts/crawl-operator --namespace $NS --create-namespace ${args[*]}"
echo "  --set image.tag=${IMAGE##*:}: the tag make image built; hack/demo/helm-values.yaml:"
grep -v '^#' hack/demo/helm-values.yaml | sed 's/^/    /'
if $HELM status "$RELEASE" -n "$NS" >/dev/null 2>&1; then
	# A second run: the same values, and a new Pod for a new image.
	$HELM upgrade "$RELEASE" charts/crawl-operator --namespace "$NS" "${args[@]}" --wait --timeout 5m
	$KUBECTL -n "$NS" rollout restart "deployment/$RELEASE"
else
	$HELM install "$RELEASE" charts/crawl-operator --namespace "$NS" --create-namespace "${args[@]}" --wait --timeout 5m
fi
$KUBECTL -n "$NS" rollout status "deployment/$RELEASE" --timeout=5m

step "The manager: a Pod of the chart's Deployment, its PVC bound by the default StorageClass"
$KUBECTL -n "$NS" get deployment,pods,pvc,services,networkpolicies -o wide
$KUBECTL -n "$NS" get lease -o custom-columns=LEASE:.metadata.name,HOLDER:.spec.holderIdentity

sample_target "$RN_GW:8090" "$KUBECTL -n $NS logs deploy/$RELEASE"
$KUBECTL get crawltargets,siteindexes -n default

search_through_service

cat <<MSG

The chart runs on the dev cluster's real node. Next:
  export KUBECONFIG=$KUBECONFIG
  $HELM -n $NS status $RELEASE
  $KUBECTL -n $NS logs deploy/$RELEASE
  open http://$FORWARD/ in a browser (kubectl port-forward runs until make dev-cluster-down)
  make dev-cluster-down    # stop everything
MSG
echo "demo-helm ready in $((SECONDS - started))s"
