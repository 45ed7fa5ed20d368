#!/usr/bin/env bash
# A real egress node for the dev cluster: kubelet v1.37 (bin/k8s/kubelet),
# containerd + runc from Debian with their own root, state and socket, and a
# bridge CNI on a private bridge whose range collides with no network of this
# machine and has no route off it. Crawler Pods run there as real containers
# of the project's image (make image), under the restricted Pod Security
# profile. Needs root; `make dev-cluster REAL_NODE=1` runs it.
#
#   hack/realnode.sh preflight   say in one line why this machine cannot run a real node (exit 1), or nothing
#   hack/realnode.sh up          install missing packages, start the node, wait until it is a Ready egress node
#   hack/realnode.sh down        remove everything up made: Pods, Node, kubelet, containerd, shims, mounts,
#                                network namespaces, bridge, iptables chains, kubepods cgroups, sysctls
#   hack/realnode.sh check       list whatever of the above is still on the machine (exit 1 if anything)
#
# Settings (environment): KUBECONFIG (default bin/kubeconfig), RN_DIR (state, default .dev/realnode),
# RN_NODE (realnode-1), RN_EXTERNAL_IP (79.139.58.98), RN_BRIDGE (crawlrn0), RN_SUBNET,
# RN_SERVICE_CIDR and RN_CLUSTER_DNS (the address plan: `bin/devcluster plan`, which hack/dev-cluster.sh
# runs; chosen from free ranges of this machine when RN_SUBNET is empty), RN_IMAGE (ghcr.io/lohisoft/crawl-operator:dev), RN_IMAGE_TAR (built when
# empty), RN_KUBELET_PORT (10250). After `up`, $RN_DIR/env holds what callers need (RN_GW: the
# bridge address, where Pods reach the results endpoint and sample sites).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

KUBECONFIG=${KUBECONFIG:-$REPO/bin/kubeconfig}
export KUBECONFIG
K8S_BIN=${K8S_BIN:-$REPO/bin/k8s}
R=${RN_DIR:-$REPO/.dev/realnode}
mkdir -p "$R" && R=$(cd "$R" && pwd)
NODE=${RN_NODE:-realnode-1}
EXT_IP=${RN_EXTERNAL_IP:-79.139.58.98}
BR=${RN_BRIDGE:-crawlrn0}
SUBNET=${RN_SUBNET:-}
SERVICE_CIDR=${RN_SERVICE_CIDR:-}
CLUSTER_DNS=${RN_CLUSTER_DNS:-}
DEVCLUSTER=${DEVCLUSTER_BIN:-$REPO/bin/devcluster}
IMAGE=${RN_IMAGE:-ghcr.io/lohisoft/crawl-operator:dev}
PAUSE_IMAGE=localhost/crawl-operator-pause:dev
KUBELET_PORT=${RN_KUBELET_PORT:-10250}
CNI_BIN=/usr/lib/cni
CNI_NET=crawl-realnode
SOCK=$R/containerd/containerd.sock
KUBECTL=$K8S_BIN/kubectl
# Sysctls the kubelet sets (and the bridge plugin: ip_forward); restored by down.
# kube-proxy's Services need bridged traffic to pass iptables (its replies
# are un-NATed there): net.bridge.bridge-nf-call-iptables.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables"
PACKAGES="containerd runc containernetworking-plugins iptables"
# Directories outside $RN_DIR that containerd, the CNI plugins, the kubelet
# and libmount create when missing; down removes those it did not find.
OUTSIDE="/run/containerd /run/netns /run/mount /var/log/containers /var/log/pods /var/lib/cni /var/lib/kubelet /etc/cni /opt/cni /opt/containerd"

log() { printf '%s\n' "$*" >&2; }
step() { [ -z "${RN_VERBOSE:-}" ] || printf '  [%ss] %s\n' "$SECONDS" "$*" >&2; }
kc() { "$KUBECTL" --request-timeout=10s "$@"; }

# ---- preflight ------------------------------------------------------------

missing_tools() {
	local m=()
	for c in containerd containerd-shim-runc-v2 runc ctr iptables ip6tables ip findmnt; do
		command -v "$c" >/dev/null 2>&1 || m+=("$c")
	done
	for p in bridge host-local loopback; do [ -x "$CNI_BIN/$p" ] || m+=("$CNI_BIN/$p"); done
	echo "${m[*]}"
}

# reason prints why this machine cannot run a real node now, or nothing.
reason() {
	local install=${1:-}
	[ "$(uname -s)" = Linux ] || { echo "not Linux"; return; }
	[ "$(id -u)" = 0 ] || { echo "needs root (kubelet, containerd, bridge, iptables, cgroups)"; return; }
	if [ ! -d /sys/fs/cgroup/memory ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "no cgroup memory controller under /sys/fs/cgroup"; return
	fi
	local m
	m=$(missing_tools)
	if [ -n "$m" ] && [ -z "$install" ]; then
		echo "missing $m (apt-get install $PACKAGES; make dev-cluster REAL_NODE=1 installs them)"; return
	fi
	[ -x "$K8S_BIN/kubelet" ] || { echo "no kubelet in $K8S_BIN (make k8s-bin builds it)"; return; }
	[ -x "$K8S_BIN/kube-proxy" ] || { echo "no kube-proxy in $K8S_BIN (make k8s-bin builds it)"; return; }
	[ -f /proc/sys/net/bridge/bridge-nf-call-iptables ] || { echo "no br_netfilter (/proc/sys/net/bridge): Services cannot answer Pods on the bridge"; return; }
	if ! ip_ok; then return; fi
	if ip link show "$BR" >/dev/null 2>&1 && [ ! -f "$R/env" ]; then
		echo "bridge $BR exists: another real node runs here (make dev-cluster-down, or RN_DIR of that node + hack/realnode.sh down)"; return
	fi
	if [ -n "$(find /sys/fs/cgroup -maxdepth 2 -name 'kubepods*' -print -quit 2>/dev/null)" ] && [ ! -f "$R/env" ]; then
		echo "kubepods cgroups exist: another kubelet runs (or ran) on this machine"; return
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$KUBELET_PORT") 2>/dev/null; then
		echo "port $KUBELET_PORT is in use: another kubelet runs here (RN_KUBELET_PORT picks another)"; return
	fi
}

ip_ok() {
	if ! ip link add "crp$$" type bridge 2>/dev/null; then
		echo "cannot create a bridge (ip link add type bridge)"; return 1
	fi
	ip link del "crp$$"
}

install_packages() {
	[ -z "$(missing_tools)" ] && return
	command -v apt-get >/dev/null || return 0
	log "installing $PACKAGES"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends $PACKAGES >"$R/apt.log" 2>&1 ||
		{ apt-get update -q >>"$R/apt.log" 2>&1 && apt-get install -y -q --no-install-recommends $PACKAGES >>"$R/apt.log" 2>&1; } ||
		{ log "apt-get install failed; see $R/apt.log"; return 1; }
}

# ---- addresses ------------------------------------------------------------

# plan sets SUBNET, SERVICE_CIDR and CLUSTER_DNS: the caller's, or free
# ranges of this machine (hack/devcluster/cluster.PlanNetwork).
plan() {
	if [ -n "$SUBNET" ] && [ -n "$SERVICE_CIDR" ] && [ -n "$CLUSTER_DNS" ]; then return; fi
	local env
	env=$("$DEVCLUSTER" plan ${SUBNET:+--pod-subnet "$SUBNET"} ${SERVICE_CIDR:+--service-cidr "$SERVICE_CIDR"}) || return 1
	SUBNET=$(sed -n 's/^RN_SUBNET=//p' <<<"$env")
	SERVICE_CIDR=$(sed -n 's/^RN_SERVICE_CIDR=//p' <<<"$env")
	CLUSTER_DNS=$(sed -n 's/^RN_CLUSTER_DNS=//p' <<<"$env")
}

# ---- processes ------------------------------------------------------------

# alive NAME: $R/NAME.pid names a live process whose command line has NAME.
alive() {
	local pid
	pid=$(cat "$R/$1.pid" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "$1"
}

# running NAME: the process of $R/NAME.pid exists (just started, it may not
# have exec'd NAME yet).
running() { kill -0 "$(cat "$R/$1.pid" 2>/dev/null)" 2>/dev/null; }

stop_proc() { # name seconds
	alive "$1" || { rm -f "$R/$1.pid"; return 0; }
	local pid
	pid=$(cat "$R/$1.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 $(($2 * 4))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	rm -f "$R/$1.pid"
}

# our_shims: containerd shims serving our containerd (their command line
# names our socket).
our_shims() {
	local f
	# One grep over every command line (arguments are NUL-separated), then
	# a closer look at the few that name the socket.
	for f in $(grep -lzxF -- "$SOCK" /proc/[0-9]*/cmdline 2>/dev/null); do
		if tr '\0' ' ' 2>/dev/null <"$f" | grep -q "containerd-shim.* -address $SOCK"; then
			f=${f#/proc/}
			echo "${f%/cmdline}"
		fi
	done
}

# kubepods_procs: every process in a kubepods cgroup (the containers).
kubepods_procs() {
	find /sys/fs/cgroup -path '*kubepods*' -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
}

# ---- state of the machine -------------------------------------------------

chains() { # list "<cmd> <table> <chain>" of our kinds
	local ipt tb
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		for tb in filter nat mangle raw; do
			$ipt -w -t $tb -S 2>/dev/null | awk -v i=$ipt -v t=$tb '$1=="-N" && $2 ~ /^(KUBE|CNI|CRAWL)-/ {print i, t, $2}'
		done
	done
}

cni_netns() { ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'; }

record_before() {
	mkdir -p "$R/before"
	[ -f "$R/before/sysctl" ] || for s in $SYSCTLS; do echo "$s=$(sysctl -n "$s")"; done >"$R/before/sysctl"
	chains >"$R/before/chains"
	cni_netns >"$R/before/netns"
	for d in $OUTSIDE; do
		if [ -e "$d" ]; then echo "$d"; fi
	done >"$R/before/paths"
}

# ---- up ---------------------------------------------------------------------

up() {
	if [ -f "$R/env" ] && alive kubelet && alive containerd; then
		log "real node $NODE already up ($R)"
		return
	fi
	if [ -f "$R/env" ] || [ -d "$R/before" ]; then
		log "removing the remains of an earlier real node in $R"
		down >/dev/null 2>&1 || true
	fi
	install_packages
	local why
	why=$(reason)
	[ -z "$why" ] || { log "cannot run a real node: $why"; exit 1; }
	[ -s "$KUBECONFIG" ] || { log "no cluster: $KUBECONFIG is missing (make dev-cluster)"; exit 1; }
	local start=$SECONDS
	rm -rf "$R/containerd" "$R/kubelet" "$R/cni" "$R/pod-logs" "$R/runc"
	mkdir -p "$R/logs" "$R/images" "$R/kubelet/pki" "$R/pod-logs" "$R/containerd" "$R/cni/net.d" "$R/runc"
	# The previous run's logs are kept once.
	local l
	for l in "$R"/logs/*.log; do [ -f "$l" ] && mv -f "$l" "$l.1"; done
	record_before
	trap 'log "real node failed to start; removing what was set up (logs in $R/logs)"; down >/dev/null 2>&1 || true; exit 1' ERR

	plan
	local base=${SUBNET%.*/*}
	GW=$base.1
	log "real node $NODE: pod range $SUBNET on bridge $BR ($GW), no route off the machine"

	# Images: the project's image and the sandbox (pause) image, no registry.
	if [ -z "${RN_IMAGE_TAR:-}" ]; then
		RN_IMAGE_TAR=$R/images/crawl-operator.tar
		go run ./hack/image --tag "$IMAGE" --out "$RN_IMAGE_TAR" >&2
	fi
	go run ./hack/image --addon pause --tag "$PAUSE_IMAGE" --out "$R/images/pause.tar" >&2

	# The bridge. Pods get an address in SUBNET and no default route, so
	# they reach only the bridge's range and the Services' (through the
	# bridge's address, where kube-proxy's rules send them on); the CRAWL-RN
	# chains drop anything forwarded to or from the bridge (even with
	# ip_forward on) and keep Pods away from the kubelet's port.
	sysctl -q -w net.bridge.bridge-nf-call-iptables=1
	ip link add "$BR" type bridge
	sysctl -q -w "net.ipv6.conf.$BR.disable_ipv6=1" || true
	ip addr add "$GW/24" dev "$BR"
	ip link set "$BR" up
	for ipt in iptables ip6tables; do
		$ipt -w -N CRAWL-RN-FORWARD
		$ipt -w -A CRAWL-RN-FORWARD -i "$BR" -o "$BR" -j ACCEPT
		$ipt -w -A CRAWL-RN-FORWARD -i "$BR" -j DROP
		$ipt -w -A CRAWL-RN-FORWARD -o "$BR" -j DROP
		$ipt -w -I FORWARD 1 -j CRAWL-RN-FORWARD
		$ipt -w -N CRAWL-RN-INPUT
		$ipt -w -A CRAWL-RN-INPUT -i "$BR" -p tcp --dport "$KUBELET_PORT" -j DROP
		$ipt -w -I INPUT 1 -j CRAWL-RN-INPUT
	done

	cat >"$R/cni/net.d/10-$CNI_NET.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "$CNI_NET",
  "plugins": [
    {"type": "bridge", "bridge": "$BR", "isGateway": true, "isDefaultGateway": false, "ipMasq": false,
     "hairpinMode": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET", "gateway": "$GW"}]], "dataDir": "$R/cni/ipam",
              "routes": [{"dst": "$SERVICE_CIDR"}]}}
  ]
}
EOF

	cat >"$R/containerd/config.toml" <<EOF
version = 2
root = "$R/containerd/root"
state = "$R/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$R/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  # No CAP_SYS_RESOURCE on some machines: runc cannot give the sandbox the
  # oom_score_adj the kubelet asks (-998); clamp to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$R/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$R/cni/net.d"
    max_conf_num = 1
EOF
	setsid containerd --config "$R/containerd/config.toml" >>"$R/logs/containerd.log" 2>&1 </dev/null &
	echo $! >"$R/containerd.pid"
	for _ in $(seq 1 100); do
		[ -S "$SOCK" ] && ctr -a "$SOCK" version >/dev/null 2>&1 && break
		running containerd || { log "containerd exited; see $R/logs/containerd.log"; false; }
		sleep 0.2
	done
	ctr -a "$SOCK" version >/dev/null
	ctr -a "$SOCK" -n k8s.io images import "$RN_IMAGE_TAR" >&2
	ctr -a "$SOCK" -n k8s.io images import "$R/images/pause.tar" >&2

	cat >"$R/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine's cgroups (v1 or hybrid), no systemd as PID 1.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$SOCK
address: $GW
port: $KUBELET_PORT
readOnlyPort: 0
healthzPort: 0
# Reached only from this machine (CRAWL-RN-INPUT drops Pods' packets to it).
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
maxPods: 16
podLogsDir: $R/pod-logs
resolvConf: ""
# Cluster DNS: the kube-dns Service (hack/devcluster/addons).
clusterDNS: ["$CLUSTER_DNS"]
clusterDomain: cluster.local
registerWithTaints:
- {key: crawl.lohisoft.com/egress, value: "true", effect: NoSchedule}
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
shutdownGracePeriod: 0s
EOF
	setsid "$K8S_BIN/kubelet" \
		--config="$R/kubelet/config.yaml" \
		--kubeconfig="$KUBECONFIG" \
		--root-dir="$R/kubelet" --cert-dir="$R/kubelet/pki" \
		--hostname-override="$NODE" --node-ip="$GW" \
		--node-labels=crawl.lohisoft.com/egress=true \
		--cloud-provider=external \
		--v=2 >>"$R/logs/kubelet.log" 2>&1 </dev/null &
	echo $! >"$R/kubelet.pid"

	local ready=""
	for _ in $(seq 1 240); do
		running kubelet || { log "kubelet exited; last lines of $R/logs/kubelet.log:"; tail -n 15 "$R/logs/kubelet.log" >&2; false; }
		if [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; then
			ready=1
			break
		fi
		sleep 0.5
	done
	[ -n "$ready" ] || { log "node $NODE not Ready after 120s; see $R/logs/kubelet.log"; false; }

	# No node-lifecycle controller and no cloud controller manager in the dev
	# control plane: play both. Lift the not-ready and uninitialized taints,
	# give the node its public IPv4 as ExternalIP (the kubelet keeps it with
	# --cloud-provider=external).
	kc taint nodes "$NODE" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
	kc taint nodes "$NODE" node.cloudprovider.kubernetes.io/uninitialized:NoSchedule- >/dev/null 2>&1 || true
	kc patch node "$NODE" --subresource=status --type=json \
		-p "[{\"op\":\"add\",\"path\":\"/status/addresses/-\",\"value\":{\"type\":\"ExternalIP\",\"address\":\"$EXT_IP\"}}]" >/dev/null
	cat >"$R/env" <<EOF
RN_NODE=$NODE
RN_BRIDGE=$BR
RN_SUBNET=$SUBNET
RN_SERVICE_CIDR=$SERVICE_CIDR
RN_CLUSTER_DNS=$CLUSTER_DNS
RN_GW=$GW
RN_EXTERNAL_IP=$EXT_IP
RN_IMAGE=$IMAGE
RN_SOCK=$SOCK
RN_DIR=$R
EOF
	trap - ERR
	log "real node $NODE Ready in $((SECONDS - start))s (containerd $(containerd --version | awk '{print $3}'), kubelet $("$K8S_BIN/kubelet" --version | awk '{print $2}')); state in $R"
}

# ---- down -------------------------------------------------------------------

down() {
	local node=$NODE
	if [ -f "$R/env" ]; then
		# shellcheck disable=SC1091
		node=$(. "$R/env"; echo "$RN_NODE")
		BR=$(. "$R/env"; echo "$RN_BRIDGE")
	fi
	# Pods first, while the kubelet runs: their containers get SIGTERM and
	# their grace period, as on any node being drained.
	if alive kubelet && [ -s "$KUBECONFIG" ] && kc get node "$node" >/dev/null 2>&1; then
		kc delete pods -A --field-selector "spec.nodeName=$node" --wait=true --timeout=40s >/dev/null 2>&1 || true
		kc delete node "$node" --wait=false >/dev/null 2>&1 || true
	fi
	step "pods deleted"
	stop_proc kubelet 15
	step "kubelet stopped"
	# Whatever still runs in a Pod, then the shims' tasks.
	local p
	if [ -d "$R/before" ]; then
		# kubepods is ours: up refuses to start when it exists.
		for p in $(kubepods_procs); do kill -KILL "$p" 2>/dev/null || true; done
	fi
	if alive containerd; then
		for t in $(timeout 10 ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
			timeout 10 ctr -a "$SOCK" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true
			timeout 10 ctr -a "$SOCK" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true
		done
	fi
	step "tasks killed"
	stop_proc containerd 10
	step "containerd stopped"
	for _ in 1 2 3; do
		for p in $(our_shims); do kill -KILL "$p" 2>/dev/null || true; done
		[ -z "$(our_shims)" ] && break
		sleep 0.5
	done
	# Mounts under the state directory (overlay rootfs, sandbox shm, ...),
	# deepest first.
	local m
	for _ in 1 2 3; do
		findmnt -rn -o TARGET | awk -v r="$R/" 'index($0, r) == 1' | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
		[ -z "$(findmnt -rn -o TARGET | awk -v r="$R/" 'index($0, r) == 1')" ] && break
		sleep 0.3
	done
	step "mounts removed"
	ip link del "$BR" 2>/dev/null || true
	# What follows is told apart from what other software made by the record
	# of the machine taken before up; without it, it is left alone.
	if [ ! -d "$R/before" ]; then
		rm -rf "$R/containerd" "$R/kubelet" "$R/cni" "$R/pod-logs" "$R/runc" "$R/images" "$R/addons" "$R/env"
		log "real node down (no record of the machine before it: iptables chains, network namespaces and cgroups not touched)"
		return 0
	fi
	# Pod network namespaces this node made.
	local ns
	for ns in $(cni_netns); do
		grep -qx "$ns" "$R/before/netns" 2>/dev/null || ip netns delete "$ns" 2>/dev/null || true
	done
	# iptables: jumps from the built-in chains into chains we added, then the
	# chains themselves (the kubelet's KUBE-*, CNI plugins' CNI-*, our CRAWL-RN-*).
	local ipt tb c rule
	while read -r ipt tb c; do
		[ -n "$c" ] || continue
		grep -qx "$ipt $tb $c" "$R/before/chains" 2>/dev/null && continue
		$ipt -w -t "$tb" -S 2>/dev/null | awk -v c="$c" '$1=="-A" && $0 ~ ("-j " c "( |$)")' | sed 's/^-A /-D /' |
			while read -r rule; do eval "$ipt -w -t $tb $rule" 2>/dev/null || true; done
		$ipt -w -t "$tb" -F "$c" 2>/dev/null || true
	done < <(chains)
	while read -r ipt tb c; do
		[ -n "$c" ] || continue
		grep -qx "$ipt $tb $c" "$R/before/chains" 2>/dev/null && continue
		$ipt -w -t "$tb" -X "$c" 2>/dev/null || true
	done < <(chains)
	step "iptables cleaned"
	# kubepods cgroups, deepest first (a cgroup goes once its tasks are gone).
	for _ in $(seq 1 20); do
		find /sys/fs/cgroup -depth -type d -path '*kubepods*' -exec rmdir {} \; 2>/dev/null || true
		[ -z "$(find /sys/fs/cgroup -type d -name 'kubepods*' -print -quit 2>/dev/null)" ] && break
		sleep 0.25
	done
	step "cgroups removed"
	if [ -f "$R/before/sysctl" ]; then
		sysctl -q -p "$R/before/sysctl" >/dev/null || true
	fi
	local d
	for d in $OUTSIDE; do
		[ -e "$d" ] || continue
		if [ -f "$R/before/paths" ] && ! grep -qx "$d" "$R/before/paths"; then rm -rf "$d"; fi
	done
	find /var/lib/cni -name "*$CNI_NET*" -exec rm -rf {} + 2>/dev/null || true
	find /var/log/containers -lname "$R/*" -delete 2>/dev/null || true
	rm -rf "$R/containerd" "$R/kubelet" "$R/cni" "$R/pod-logs" "$R/runc" "$R/images" "$R/addons" "$R/env"
	if [ -n "$(leftovers)" ]; then
		log "real node down, but left behind:"
		leftovers >&2
		return 1
	fi
	rm -rf "$R/before"
	log "real node down: nothing left behind"
}

# leftovers lists what of a real node is still on this machine.
leftovers() {
	local f cmd
	for f in $(grep -lzF -- "$R/" /proc/[0-9]*/cmdline 2>/dev/null); do
		# kubelet, containerd and shims of this node: their command lines name $R.
		cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
		case "${cmd%% *}" in
		kubelet | */kubelet | kube-proxy | */kube-proxy | containerd | */containerd | *containerd-shim*) ;;
		*) continue ;;
		esac
		f=${f#/proc/}
		echo "process ${f%/cmdline}: $cmd"
	done
	local p
	for p in $(kubepods_procs); do echo "container process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"; done
	findmnt -rn -o TARGET | awk -v r="$R/" 'index($0, r) == 1 {print "mount " $0}'
	if ip link show "$BR" >/dev/null 2>&1; then echo "bridge $BR"; fi
	[ -d "$R/before" ] || return 0
	local ns
	for ns in $(cni_netns); do
		grep -qx "$ns" "$R/before/netns" 2>/dev/null || echo "netns $ns"
	done
	chains | while read -r ipt tb c; do
		grep -qx "$ipt $tb $c" "$R/before/chains" 2>/dev/null || echo "iptables chain $ipt $tb $c"
	done
	find /sys/fs/cgroup -type d -name 'kubepods*' 2>/dev/null | sed 's/^/cgroup /'
	local d
	for d in $OUTSIDE; do
		[ -e "$d" ] && [ -f "$R/before/paths" ] && ! grep -qx "$d" "$R/before/paths" && echo "path $d"
	done
	if [ -f "$R/before/sysctl" ]; then
		local kv
		while IFS= read -r kv; do
			[ "$(sysctl -n "${kv%%=*}")" = "${kv#*=}" ] || echo "sysctl ${kv%%=*} = $(sysctl -n "${kv%%=*}"), was ${kv#*=}"
		done <"$R/before/sysctl"
	fi
}

case "${1:-}" in
preflight)
	why=$(reason)
	[ -z "$why" ] || { echo "$why"; exit 1; }
	;;
up) up ;;
down) down ;;
check)
	out=$(leftovers)
	[ -z "$out" ] || { echo "$out"; exit 1; }
	;;
*)
	echo "usage: $0 preflight|up|down|check" >&2
	exit 2
	;;
esac
