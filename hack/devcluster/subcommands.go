package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// subcommand runs a subcommand and returns the exit status. Every one
// finds the dev cluster's kubeconfig and state by itself, as kind's do.
//
//	devcluster nodes plan [--count N] [--name-prefix P] [--bridge-prefix B] [--external-ips A,B]
//	    plans real nodes in --dir (default .dev/nodes, or $RN_DIR): names,
//	    bridges, egress addresses and free Pod and Service ranges
//	devcluster nodes up [--image IMG] [--image-tar T]
//	    starts them (kubelet, containerd, bridge, firewall) and kube-proxy,
//	    CoreDNS and the default StorageClass; waits until they are Ready
//	devcluster nodes down | check | preflight
//	    removes them and every change they made to the machine | lists
//	    what is left | says why this machine cannot run them
//	devcluster node stop NODE | start NODE
//	    a node lost (kubelet, containerd and containers killed) and back
//	devcluster flux up | fleet --site URL | commit -m MSG | down
//	    Flux's controllers and a fleet repository (make demo-gitops)
//	devcluster git-server --root R --addr A
//	    serves the bare repositories under R (started by flux fleet)
func subcommand(name string, args []string) int {
	var err error
	switch name {
	case "nodes":
		err = nodesCommand(args)
	case "node":
		err = nodeCommand(args)
	case "flux":
		err = fluxCommand(args)
	case "git-server":
		err = gitServer(args)
	default:
		err = fmt.Errorf("unknown subcommand %q: want nodes, node, flux or git-server", name)
	}
	if errors.Is(err, errSilent) {
		return 1
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		return 1
	}
	return 0
}

func abs(p string) string { a, _ := filepath.Abs(p); return a }
