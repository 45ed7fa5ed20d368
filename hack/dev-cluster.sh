#!/usr/bin/env bash
# Starts or stops the local dev cluster (hack/devcluster) in the background.
#   hack/dev-cluster.sh up     start it (no-op when running) and wait until Ready
#   hack/dev-cluster.sh down   stop it and everything `make demo` started
# State lives in .dev/: pid files, logs, crawler Pod logs (.dev/cluster/pods).
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=.dev
KUBECTL=bin/k8s/kubectl
export KUBECONFIG=$PWD/bin/kubeconfig

# alive NAME: the pid file names a live process that runs bin/NAME (a
# recycled pid after a reboot belongs to someone else).
alive() {
	local pid
	[ -f "$DEV/$1.pid" ] || return 1
	pid=$(cat "$DEV/$1.pid")
	kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "bin/$1"
}

stop() {
	local name=$1
	if alive "$name"; then
		local pid
		pid=$(cat "$DEV/$name.pid")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$pid" 2>/dev/null || true
		echo "stopped $name"
	fi
	rm -f "$DEV/$name.pid"
}

up() {
	mkdir -p "$DEV"
	if alive devcluster; then
		echo "dev cluster already running (KUBECONFIG=bin/kubeconfig)"
		return
	fi
	# A manager or sample site from an earlier cluster would talk to a
	# control plane that is gone.
	stop manager
	stop samplesite
	rm -f bin/kubeconfig
	nohup bin/devcluster --bin-dir bin/k8s --dir "$DEV/cluster" --kubeconfig-out bin/kubeconfig \
		--crawler bin/crawler >"$DEV/devcluster.log" 2>&1 &
	echo $! >"$DEV/devcluster.pid"
	printf "starting dev cluster (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, node agent)"
	for _ in $(seq 1 120); do
		if ! alive devcluster; then
			echo; echo "dev cluster failed to start; last lines of $DEV/devcluster.log:" >&2
			tail -n 20 "$DEV/devcluster.log" >&2
			exit 1
		fi
		if [ -f bin/kubeconfig ] && [ "$($KUBECTL get nodes -l crawl.lohisoft.com/egress=true --no-headers 2>/dev/null | grep -c ' Ready')" = 2 ]; then
			echo; $KUBECTL get nodes -o wide
			echo "dev cluster ready: export KUBECONFIG=$KUBECONFIG"
			return
		fi
		printf .; sleep 1
	done
	echo; echo "dev cluster not ready after 120s; see $DEV/devcluster.log" >&2
	exit 1
}

down() {
	stop manager
	stop samplesite
	stop devcluster
	rm -f bin/kubeconfig
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
