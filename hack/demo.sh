#!/usr/bin/env bash
# `make demo`: the whole job on this machine. Brings up the dev cluster,
# installs the CRDs, runs the manager (SQLite index), serves a sample
# website on loopback, applies a CrawlTarget for it, waits until it is
# Ready, and shows the result, a search with the API and the result links
# of the search page that a browser shows. Everything keeps running
# afterwards; `make dev-cluster-down` stops it.
#
# REAL_NODE=1: the crawler Pod runs as a real container of the project's
# image on a real kubelet + containerd node (`bin/devcluster nodes`, root); the
# sample site and the results endpoint listen on the node's bridge address,
# which is all a Pod there can reach.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=hack/demo/lib.sh
. hack/demo/lib.sh

REAL_NODE=${REAL_NODE:-}
[ "$REAL_NODE" = 0 ] && REAL_NODE=""
INDEX=127.0.0.1:8082
RESULTS=127.0.0.1:8083
SITE=127.0.0.1:8090

started=$SECONDS
step "Starting the local cluster${REAL_NODE:+ with a real node}"
bin/devcluster up --real-nodes "${REAL_NODE:-0}" --image "$IMAGE"
if [ -n "$REAL_NODE" ]; then
	# shellcheck disable=SC1091
	. "$RN_DIR/env"
	RESULTS=$RN_GW:8083
	SITE=$RN_GW:8090
fi

step "Installing the CRDs"
$KUBECTL apply -f config/crd/bases
$KUBECTL wait --for=condition=Established --timeout=60s \
	crd/crawltargets.crawl.lohisoft.com crd/exclusions.crawl.lohisoft.com crd/siteindexes.crawl.lohisoft.com

step "Running the manager (index: SQLite in $DEV/index.db, API on http://$INDEX)"
if [ -n "$REAL_NODE" ]; then
	# The image imported into the node's containerd; never pulled.
	crawler_flags=(--crawler-image="$IMAGE" --crawler-image-pull-policy=Never)
else
	# The node agent runs the image's `crawler` command as bin/crawler.
	crawler_flags=(--crawler-image=crawler)
fi
# --crawler-allow-private: the sample site is on loopback, which the crawler
# refuses everywhere else. --crawler-network-policy=false: the manager runs
# on this machine, not in a Pod, so no NetworkPolicy rule could let crawler
# Pods reach its results endpoint.
bin/devcluster proc start manager --listen $INDEX -- bin/manager \
	--metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 \
	--results-bind-address=$RESULTS --results-url=http://$RESULTS --index-bind-address=$INDEX \
	--storage="sqlite://$PWD/$DEV/index.db" "${crawler_flags[@]}" --crawler-allow-private \
	--min-crawl-delay=500ms --require-egress-fcrdns=false --crawler-network-policy=false

step "Serving the sample site on http://$SITE/"
bin/devcluster proc start samplesite --listen $SITE -- bin/samplesite --addr=$SITE

sample_target "$SITE" "$DEV/manager.log and $DEV/cluster/pods/"

step "kubectl get crawltargets,siteindexes"
$KUBECTL get crawltargets,siteindexes -n default

step "kubectl get nodes,pods -o wide: where the crawler ran"
$KUBECTL get nodes -o wide
$KUBECTL get pods -n default -o wide

step "Which pages were indexed: the SiteIndex's compact record (url relative to spec.site, status, title, fetched at)"
$KUBECTL get siteindex harbour-bakery -n default \
	-o jsonpath='{.spec.site}{"\n"}{range .status.pages[*]}{"  "}{.url}{"  "}{.statusCode}{"  "}{.title}{"  "}{.fetchTime}{"\n"}{end}'

step "Everything the bot kept of each page (description, h1-h3, inbound anchors): the index backend, curl 'http://$INDEX/api/v1/sites/${SITE%:*}/pages'"
curl -fsS "http://$INDEX/api/v1/sites/${SITE%:*}/pages"
echo

step "Searching the index: curl 'http://$INDEX/api/v1/search?q=sourdough'"
for _ in $(seq 1 20); do
	out=$(curl -fsS "http://$INDEX/api/v1/search?q=sourdough&limit=5") && echo "$out" | grep -q '"url"' && break
	sleep 0.5
done
echo "$out"

step "The search page a browser shows: http://$INDEX/?q=sourdough (result links)"
page=$(curl -fsS "http://$INDEX/?q=sourdough")
links=$(echo "$page" | grep -o '<div class="result-title"><a href="[^"]*">[^<]*</a>' | sed 's/<div class="result-title"><a href="\([^"]*\)">\(.*\)<\/a>/  \2\n    \1/' || true)
if [ -z "$links" ]; then
	echo "the search page at http://$INDEX/ does not find the sample site; see $DEV/manager.log" >&2
	exit 1
fi
echo "$links"

pod_logs="crawler Pods in $DEV/cluster/pods/"
[ -n "$REAL_NODE" ] && pod_logs="crawler Pods: bin/k8s/kubectl logs POD; the real node's logs in $RN_DIR/realnode-1/"
cat <<MSG

The cluster, the manager and the sample site keep running. Next:
  open http://$INDEX/ in a browser: search the sample site (try sourdough, cinnamon, ?lang=nl)
  open http://$INDEX/sites in a browser: the crawl dashboard, and each site's pages
  export KUBECONFIG=$KUBECONFIG
  bin/k8s/kubectl get crawltargets,siteindexes,pods -A
  bin/k8s/kubectl get si harbour-bakery -o yaml      # which pages were indexed (url, title, statusCode, fetchTime)
  curl http://$INDEX/api/v1/sites/${SITE%:*}/pages   # everything kept of them: description, headings, link texts
  bin/k8s/kubectl annotate crawltarget harbour-bakery crawl.lohisoft.com/requested-at="\$(date -Is)" --overwrite   # crawl again now
  bin/k8s/kubectl apply -f config/samples/crawl_v1beta1_exclusion.yaml                                              # an Exclusion
  curl 'http://$INDEX/api/v1/search?q=cinnamon'      curl http://$INDEX/bot      curl http://$INDEX/bot/ips.json
  logs: $DEV/manager.log, $DEV/samplesite.log, $pod_logs
  make dev-cluster-down    # stop everything
MSG
echo "demo ready in $((SECONDS - started))s"
