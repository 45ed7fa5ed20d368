#!/usr/bin/env bash
# Starts or stops the local dev cluster (hack/devcluster) in the background.
#   hack/dev-cluster.sh up     start it (no-op when running) and wait until Ready
#   hack/dev-cluster.sh down   stop it and everything `make demo` started
# State lives in .dev/: pid files, logs, crawler Pod logs (.dev/cluster/pods).
#
# REAL_NODE=N (1 or 2): no stand-in nodes; N real kubelet + containerd
# nodes join instead (root), with kube-proxy, cluster DNS and a default
# StorageClass, on an address plan of free ranges: `bin/devcluster nodes`
# (hack/devcluster/node) owns their lifecycle; `down` removes them and
# everything they set up on the machine. DEV_DIR, DEV_KUBECONFIG, K8S_BIN,
# DEVCLUSTER_BIN and CRAWLER_BIN move the state, the kubeconfig and the
# binaries; RN_DIR the nodes' state, RN_NAME_PREFIX and RN_BRIDGE_PREFIX
# their names and bridges, RN_IMAGE and RN_IMAGE_TAR the image they get
# (the end-to-end tests use them). DEV_CLUSTER_TIMEOUT (seconds, default 300)
# bounds the wait for a Ready cluster; after it, `up` stops what it started,
# prints the end of the log and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=${DEV_DIR:-.dev}
export K8S_BIN=${K8S_BIN:-bin/k8s}
KUBECTL=$K8S_BIN/kubectl
DEVCLUSTER=${DEVCLUSTER_BIN:-bin/devcluster}
CRAWLER=${CRAWLER_BIN:-bin/crawler}
export KUBECONFIG=${DEV_KUBECONFIG:-$PWD/bin/kubeconfig}
export RN_DIR=${RN_DIR:-$DEV/nodes}
REAL_NODE=${REAL_NODE:-}
[ "$REAL_NODE" = 0 ] && REAL_NODE=""

# alive NAME: the pid file names a live process whose program is NAME (a
# recycled pid after a reboot belongs to someone else). Only for processes
# started by an earlier run: one just started may not have exec'd yet.
alive() {
	local pid argv0
	[ -f "$DEV/$1.pid" ] || return 1
	pid=$(cat "$DEV/$1.pid")
	kill -0 "$pid" 2>/dev/null || return 1
	argv0=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | head -n 1)
	[ "$(basename "$argv0")" = "$1" ]
}

# running PID: the process exists and has not exited (a child of this
# shell that exited but is not yet reaped is a zombie: not running).
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# stop_pid NAME PID: SIGTERM, then SIGKILL after 30 s.
stop_pid() {
	local name=$1 pid=$2
	kill -TERM "$pid" 2>/dev/null || true
	# The node agent stops its crawler Pods (10 s grace) before it exits.
	for _ in $(seq 1 60); do running "$pid" || break; sleep 0.5; done
	kill -KILL "$pid" 2>/dev/null || true
	echo "stopped $name"
	rm -f "$DEV/$name.pid"
}

stop() {
	if alive "$1"; then
		stop_pid "$1" "$(cat "$DEV/$1.pid")"
	fi
	rm -f "$DEV/$1.pid"
}

up() {
	mkdir -p "$DEV"
	local mode=agent
	[ -n "$REAL_NODE" ] && mode=real-node
	if alive devcluster; then
		if [ "$(cat "$DEV/mode" 2>/dev/null || echo agent)" != "$mode" ]; then
			echo "dev cluster already running, but not with REAL_NODE=${REAL_NODE:-0}: make dev-cluster-down first" >&2
			exit 1
		fi
		echo "dev cluster already running (KUBECONFIG=$KUBECONFIG)"
		return
	fi
	# A manager or sample site from an earlier cluster would talk to a
	# control plane that is gone; so would a real node.
	stop manager
	stop samplesite
	if nodes_planned; then "$DEVCLUSTER" nodes down --dir "$RN_DIR" --kubeconfig "$KUBECONFIG"; fi
	if [ "$mode" = real-node ]; then
		# Fail now, not after the control plane is up.
		why=$("$DEVCLUSTER" nodes preflight --bin-dir "$K8S_BIN" 2>&1 | grep -v '^missing ' || true)
		if [ -n "$why" ]; then echo "cannot add a real node: $why" >&2; exit 1; fi
	fi
	rm -f "$KUBECONFIG" "$DEV/devcluster.ready"
	echo "$mode" >"$DEV/mode"
	local fake=true want=2 what="node agent" net=()
	if [ "$mode" = real-node ]; then
		want=$REAL_NODE
		[ "$want" -ge 1 ] 2>/dev/null || want=1
		fake=false what="$want real node(s): kubelet, containerd, kube-proxy, CoreDNS, local-path-provisioner"
		"$DEVCLUSTER" nodes plan --dir "$RN_DIR" --count "$want" \
			${RN_NAME_PREFIX:+--name-prefix "$RN_NAME_PREFIX"} ${RN_BRIDGE_PREFIX:+--bridge-prefix "$RN_BRIDGE_PREFIX"}
		net=(--fleet "$RN_DIR")
	fi
	nohup "$DEVCLUSTER" --bin-dir "$K8S_BIN" --dir "$DEV/cluster" --kubeconfig-out "$KUBECONFIG" \
		--ready-file "$DEV/devcluster.ready" --crawler "$CRAWLER" --fake-nodes=$fake "${net[@]}" >"$DEV/devcluster.log" 2>&1 &
	local pid=$!
	echo "$pid" >"$DEV/devcluster.pid"
	printf "starting dev cluster (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, %s)" "$what"
	# Ready is what devcluster says (its ready file: control plane up,
	# kubeconfig written, node agent watching) and what the API server says
	# (the egress Nodes Ready). Until then the only question about the
	# process is whether it still exists: it is our child, and its command
	# line says nothing useful while the shell forked for it has not yet
	# exec'd nohup and nohup has not yet exec'd devcluster.
	local timeout=${DEV_CLUSTER_TIMEOUT:-300} joined=""
	local deadline=$((SECONDS + timeout))
	while :; do
		if ! running "$pid"; then
			local rc=0
			wait "$pid" 2>/dev/null || rc=$?
			echo; echo "dev cluster failed to start (devcluster exited with status $rc); last lines of $DEV/devcluster.log:" >&2
			tail -n 30 "$DEV/devcluster.log" >&2
			rm -f "$DEV/devcluster.pid" "$DEV/mode"
			exit 1
		fi
		if [ -f "$DEV/devcluster.ready" ]; then
			if [ "$mode" = real-node ] && [ -z "$joined" ]; then
				echo
				if ! "$DEVCLUSTER" nodes up --dir "$RN_DIR" --kubeconfig "$KUBECONFIG" --bin-dir "$K8S_BIN" \
					--image "${RN_IMAGE:-ghcr.io/lohisoft/crawl-operator:dev}" ${RN_IMAGE_TAR:+--image-tar "$RN_IMAGE_TAR"}; then
					stop_pid devcluster "$pid"
					rm -f "$KUBECONFIG" "$DEV/mode"
					exit 1
				fi
				joined=1
			fi
			if [ "$($KUBECTL get nodes -l crawl.lohisoft.com/egress=true --no-headers 2>/dev/null | grep -c ' Ready')" = "$want" ]; then
				echo; $KUBECTL get nodes -o wide
				echo "dev cluster ready: export KUBECONFIG=$KUBECONFIG"
				return
			fi
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo; echo "dev cluster not ready after ${timeout}s (DEV_CLUSTER_TIMEOUT); stopping it. Last lines of $DEV/devcluster.log:" >&2
			tail -n 30 "$DEV/devcluster.log" >&2
			stop_pid devcluster "$pid"
			rm -f "$KUBECONFIG" "$DEV/mode"
			exit 1
		fi
		printf .; sleep 1
	done
}

# nodes_planned: real nodes, or their remains, are in $RN_DIR.
nodes_planned() { [ -f "$RN_DIR/fleet.json" ] || [ -f "$RN_DIR/journal.json" ]; }

# stop_port_forward ends the kubectl port-forward of make demo-helm.
stop_port_forward() {
	local pid
	pid=$(cat "$DEV/port-forward.pid" 2>/dev/null) || return 0
	if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'kubectl.* port-forward'; then
		kill "$pid" 2>/dev/null || true
	fi
	rm -f "$DEV/port-forward.pid"
}

down() {
	local failed=""
	stop manager
	stop samplesite
	stop_port_forward
	# make demo-gitops's Flux controllers and Git server, before the cluster
	# they talk to.
	"$DEVCLUSTER" flux down --state-dir "$DEV/flux" || true
	rm -rf "$DEV/flux"
	if [ -f "$DEV/internet/internet.json" ] || [ -f "$DEV/internet/journal.json" ]; then
		"$DEVCLUSTER" internet down --dir "$DEV/internet" --nodes-dir "$RN_DIR" --kubeconfig "$KUBECONFIG" || failed=1
	fi
	# The real nodes go while the control plane still answers, so their
	# Pods are deleted gracefully; they go even when it does not.
	if nodes_planned; then "$DEVCLUSTER" nodes down --dir "$RN_DIR" --kubeconfig "$KUBECONFIG" || failed=1; fi
	stop devcluster
	rm -f "$KUBECONFIG" "$DEV/mode"
	[ -z "$failed" ]
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
