# Shared by hack/demo.sh (make demo) and hack/demo-helm.sh (make demo-helm):
# sourced, with KUBECTL set.

# Where the demos keep their state and find their tools; the image and
# chart release of the real-node demos; the port of their port-forward.
DEV=.dev
KUBECTL=bin/k8s/kubectl
export KUBECONFIG=$PWD/bin/kubeconfig
export RN_DIR=${RN_DIR:-$DEV/nodes}
IMAGE=${RN_IMAGE:-ghcr.io/lohisoft/crawl-operator:dev}
IMAGE_TAR=${IMAGE_TAR:-bin/crawl-operator-image.tar}
RELEASE=crawl-operator
NS=crawl-system
FORWARD=127.0.0.1:18082

step() { printf '\n==> %s\n' "$*"; }

# sample_target SITE applies the demo's CrawlTarget for http://SITE/ with
# kubectl and waits until it is Ready, showing its progress; it fails
# after 3 minutes with HINT, where to look.
sample_target() {
	local site=$1 hint=$2 target line pages i
	step "Applying a CrawlTarget with kubectl"
	target=$(sed "s|http://127.0.0.1:8090/|http://$site/|" hack/demo/crawltarget.yaml)
	echo "$target"
	echo "$target" | $KUBECTL apply -f -

	step "Waiting until the CrawlTarget is Ready"
	for i in $(seq 1 90); do
		line=$($KUBECTL get crawltarget harbour-bakery -n default \
			-o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason} {.status.egressIP}' 2>/dev/null || true)
		pages=$($KUBECTL get siteindex harbour-bakery -n default -o jsonpath='{.status.stats.pages}' 2>/dev/null || true)
		printf '  [%3ss] phase/ready/reason/egress: %-45s pages so far: %s\n' "$((i * 2))" "$line" "${pages:-0}"
		if [ "$(echo "$line" | awk '{print $2}')" = True ]; then return 0; fi
		sleep 2
	done
	echo "the CrawlTarget did not become Ready; see $hint" >&2
	return 1
}

# The real-node demos (make demo-helm, make demo-gitops) share what follows;
# they use the variables above.

# real_node_with_image starts the dev cluster with the real node, imports
# the image make image builds and serves the sample site on the node's
# bridge address, http://$RN_GW:8090/ (sourcing $RN_DIR/env).
real_node_with_image() {
	step "Starting the local cluster with a real node (kubelet, containerd, kube-proxy, CoreDNS, local-path-provisioner)"
	bin/devcluster up --real-nodes 1 --image "$IMAGE"
	# shellcheck disable=SC1091
	. "$RN_DIR/env"
	$KUBECTL get nodes -o wide
	$KUBECTL get pods -A -o wide
	$KUBECTL get storageclass

	step "make image, imported into the node's containerd (no registry: imagePullPolicy Never)"
	go run ./hack/image --tag "$IMAGE" --out "$IMAGE_TAR"
	ctr -a "$RN_SOCK" -n k8s.io images import "$IMAGE_TAR"

	step "Serving the sample site on http://$RN_GW:8090/ (the node's bridge address: all a Pod here can reach)"
	bin/devcluster proc start samplesite --listen "$RN_GW:8090" -- bin/samplesite --addr="$RN_GW:8090"
}

# search_through_service searches the sample site's pages through the
# chart's index Service with kubectl port-forward on $FORWARD, which keeps
# running (bin/devcluster proc; make dev-cluster-down stops it).
search_through_service() {
	local out=""
	step "Searching through the chart's index Service: kubectl -n $NS port-forward svc/$RELEASE-index ${FORWARD#*:}:8082"
	bin/devcluster proc start port-forward --replace --listen "$FORWARD" -- \
		$KUBECTL -n "$NS" port-forward "svc/$RELEASE-index" "${FORWARD#*:}:8082" --address "${FORWARD%:*}"
	for _ in $(seq 1 20); do
		out=$(curl -fsS "http://$FORWARD/api/v1/search?q=sourdough&limit=5" || true)
		echo "$out" | grep -q '"url"' && break
		sleep 0.5
	done
	echo "$out"
	echo "$out" | grep -q '"url"' || { echo "no search answer through the index Service" >&2; return 1; }
}
