# Shared by hack/demo.sh (make demo) and hack/demo-helm.sh (make demo-helm):
# sourced, with KUBECTL set.

step() { printf '\n==> %s\n' "$*"; }

listening() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }

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
