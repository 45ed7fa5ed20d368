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
//	devcluster up [--real-nodes N] [--timeout D]
//	    starts the dev cluster in the background (.dev, bin/kubeconfig) and
//	    waits until its egress Nodes are Ready: two stand-in nodes, or N
//	    real nodes (root); a no-op when it already runs
//	devcluster down
//	    stops it and everything the demos started; removes the real nodes,
//	    the internet and Flux with every change they made to the machine
//	devcluster proc start NAME [--listen ADDR] [--replace] -- CMD ARGS... | stop NAME
//	    a demo's process (manager, sample site), kept in .dev until down
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
//	devcluster node egress-ip NODE ADDR
//	    the address the node's Pods reach the internet with (a NAT set up wrong)
//	devcluster internet up | down | check
//	    the internet in a box (--dir .dev/internet): a network namespace with
//	    public addresses, its DNS server, and the nodes' SNAT into it
//	devcluster internet site NAME [--ipv6]
//	    publishes NAME (A, and AAAA with --ipv6); prints the namespace and
//	    the addresses, where a web server can run with ip netns exec
//	devcluster internet dns
//	    prints the internet's DNS server's address
//	devcluster flux up | fleet --site URL | commit -m MSG | down
//	    Flux's controllers and a fleet repository (make demo-gitops)
//	devcluster git-server --root R --addr A
//	    serves the bare repositories under R (started by flux fleet)
//	devcluster registry up [--addr 127.0.0.1:5000] [--root .dev/registry] | down
//	    an OCI registry (distribution's) in the background, for make
//	    release-push; registry serve runs it in the foreground
func subcommand(name string, args []string) int {
	var err error
	switch name {
	case "up":
		err = upCommand(args)
	case "down":
		err = downCommand(args)
	case "proc":
		err = procCommand(args)
	case "nodes":
		err = nodesCommand(args)
	case "node":
		err = nodeCommand(args)
	case "internet":
		err = internetCommand(args)
	case "flux":
		err = fluxCommand(args)
	case "git-server":
		err = gitServer(args)
	case "registry":
		err = registryCommand(args)
	default:
		err = fmt.Errorf("unknown subcommand %q: want up, down, proc, nodes, node, internet, flux, git-server or registry", name)
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
