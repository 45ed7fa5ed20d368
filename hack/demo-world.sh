#!/usr/bin/env bash
# `make demo-world`: the bot as site owners meet it. Two real egress nodes
# (realnode-1 owns 79.139.58.98, realnode-2 79.139.58.121) and an internet
# in a box (bin/devcluster internet: public addresses, DNS, the bot's
# reverse zone); the chart installed with a real cluster's defaults (no
# crawler.allowPrivateAddresses, egress.requireFCrDNS on); sample sites
# served in the internet under names, one over HTTPS; CrawlTargets by
# name, Ready. Then what a site owner sees: the access log, an FCrDNS check
# with dig, and each source address in the manager's ips.json. Root.
# Everything keeps running; `make dev-cluster-down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=hack/demo/lib.sh
. hack/demo/lib.sh

HELM=${HELM:-bin/helm}
DC=bin/devcluster
WORLD=$DEV/world
started=$SECONDS

step "Two real egress nodes (kubelet, containerd, kube-proxy, CoreDNS, local-path-provisioner)"
$DC up --real-nodes 2 --image "$IMAGE"

step "The internet in a box: bin/devcluster internet up"
$DC internet up --dir "$DEV/internet"
mkdir -p "$WORLD"

# serve NAME ARGS...: publishes NAME and runs the sample site on its
# addresses inside the internet, its access log in $WORLD/NAME.log.
serve() {
	local name=$1 ipv4="" ipv6="" netns="" cert="" key="" ca=""
	shift
	eval "$($DC internet site "$name" --dir "$DEV/internet" "$@")"
	local http="$ipv4:80${ipv6:+,[$ipv6]:80}" tls=()
	if [ -n "$cert" ]; then
		tls=(--tls-addr "$ipv4:443" --tls-cert "$cert" --tls-key "$key" --redirect-https)
		CA=$ca
	fi
	echo "  $name: $ipv4${ipv6:+ and $ipv6} (${cert:+HTTPS, HTTP redirects to it; }ip netns exec $netns bin/samplesite)"
	nohup ip netns exec "$netns" bin/samplesite --addr "$http" "${tls[@]}" >"$WORLD/$name.log" 2>&1 &
}
step "Sample sites in the internet, under names"
CA=""
serve harbour-bakery.com --ipv6
serve secure-bakery.com --tls
sleep 1

args=(-f hack/demo/world-values.yaml --set "image.tag=${IMAGE##*:}" --set-file "crawler.extraCACerts=$CA")
step "Installing the chart: helm install $RELEASE charts/crawl-operator --namespace $NS --create-namespace ${args[*]}"
echo "  --set image.tag=${IMAGE##*:}: the tag the nodes were given"
echo "  --set-file crawler.extraCACerts=$CA: the internet's own CA, which signed secure-bakery.com's certificate"
echo "  hack/demo/world-values.yaml (everything else is the chart's default for a real cluster):"
grep -v '^#' hack/demo/world-values.yaml | sed 's/^/    /'
$HELM upgrade --install "$RELEASE" charts/crawl-operator --namespace "$NS" --create-namespace "${args[@]}" --wait --timeout 5m
$KUBECTL -n "$NS" rollout status "deployment/$RELEASE" --timeout=5m

step "CrawlTargets by name, as users write them: http:// (secure-bakery.com redirects to https; the crawl moves there, and status.site shows it)"
for site in http://harbour-bakery.com/ http://secure-bakery.com/; do
	name=${site#*://}
	name=${name%%.*}
	printf 'apiVersion: crawl.lohisoft.com/v1beta1\nkind: CrawlTarget\nmetadata: {name: %s, namespace: default}\nspec: {url: "%s", delay: 200ms}\n' "$name" "$site" | $KUBECTL apply -f -
done
$KUBECTL wait --for=condition=Ready crawltarget --all -n default --timeout=5m
$KUBECTL get crawltargets -n default -o wide
echo "  secure-bakery: spec.url $($KUBECTL get crawltarget secure-bakery -n default -o jsonpath='{.spec.url}'), status.site $($KUBECTL get crawltarget secure-bakery -n default -o jsonpath='{.status.site}')"

step "What a site owner sees: the access logs"
grep -h LohiSoftBot "$WORLD"/*.log | sed 's/^/  /'
sources=$(grep -h LohiSoftBot "$WORLD"/*.log | awk '{print $3}' | sed 's/:[0-9]*$//' | sort -u)

step "The site owner's own FCrDNS check: dig -x, then dig, against the internet's DNS ($($DC internet dns))"
for ip in $sources; do
	name=$(ip netns exec crawl-internet dig +short -x "$ip" "@$($DC internet dns)")
	back=$(ip netns exec crawl-internet dig +short "$name" "@$($DC internet dns)")
	verdict="FAILS"
	case $name in *.bot.lohisoft.com.) [ "$back" = "$ip" ] && verdict="passes" ;; esac
	echo "  $ip -> $name -> $back: $verdict"
done

search_through_service
step "Each source address in the manager's ips.json (http://$FORWARD/bot/ips.json)"
ips=$(curl -fsS "http://$FORWARD/bot/ips.json")
echo "  $ips"
for ip in $sources; do
	if grep -q "\"$ip/32\"" <<<"$ips"; then echo "  $ip: listed"; else echo "  $ip: NOT listed"; fi
done
echo "demo-world ready in $((SECONDS - started))s; make dev-cluster-down stops it"
