package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lohisoft/crawl-operator/hack/devcluster/addons"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
)

// subcommand runs `devcluster plan` or `devcluster addons up|down` and
// returns the exit status.
//
//	devcluster plan [--pod-subnet P] [--service-cidr S]
//	    prints the real node's address plan as shell assignments: free
//	    ranges of this machine, or the given ones when they are free
//	devcluster addons up --state-dir D --kubeconfig K --node N --containerd-socket S
//	    --kube-proxy bin/k8s/kube-proxy --pod-subnet P --service-cidr S
//	    kube-proxy, CoreDNS and the default StorageClass on the real node
//	devcluster addons down --state-dir D
//	    stops kube-proxy
//	devcluster flux up --state-dir D --kubeconfig K [--bin-dir bin/flux]
//	    Flux's CRDs and controllers (processes of D) against the cluster
//	devcluster flux fleet --state-dir D --kubeconfig K --site URL [--image-tag T]
//	    serves the fleet and chart repositories (a Git server process of D)
//	    and applies flux bootstrap's objects with the laptop's patches
//	devcluster flux down --state-dir D
//	    stops the controllers and the Git server
//	devcluster git-server --root R --addr A
//	    serves the bare repositories under R (started by flux fleet)
func subcommand(name string, args []string) int {
	var err error
	switch {
	case name == "plan":
		err = plan(args)
	case name == "addons" && len(args) > 0 && args[0] == "up":
		err = addonsUp(args[1:])
	case name == "addons" && len(args) > 0 && args[0] == "down":
		fs := flag.NewFlagSet("addons down", flag.ContinueOnError)
		stateDir := fs.String("state-dir", "", "The add-ons' state directory.")
		if err = fs.Parse(args[1:]); err == nil {
			err = addons.Down(abs(*stateDir))
		}
	case name == "flux":
		err = fluxCommand(args)
	case name == "git-server":
		err = gitServer(args)
	default:
		err = fmt.Errorf("unknown subcommand %q: want plan, addons up|down, flux up|fleet|down or git-server", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		return 1
	}
	return 0
}

func abs(p string) string { a, _ := filepath.Abs(p); return a }

func plan(args []string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	pods := fs.String("pod-subnet", "", "Pod range to take (default: the first free candidate).")
	services := fs.String("service-cidr", "", "Service range to take (default: the first free candidate).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var want [2]netip.Prefix
	for i, s := range []string{*pods, *services} {
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		want[i] = p
	}
	host, err := cluster.HostNetworks()
	if err != nil {
		return err
	}
	n, err := cluster.PlanNetwork(host, want[0], want[1])
	if err != nil {
		return err
	}
	fmt.Print(n.Env())
	return nil
}

func addonsUp(args []string) error {
	fs := flag.NewFlagSet("addons up", flag.ContinueOnError)
	var o addons.Options
	var pods, services string
	fs.StringVar(&o.Root, "root", ".", "Repository root.")
	fs.StringVar(&o.StateDir, "state-dir", "", "State directory (images, kube-proxy, volumes).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Admin kubeconfig of the cluster.")
	fs.StringVar(&o.KubeProxy, "kube-proxy", "bin/k8s/kube-proxy", "kube-proxy binary.")
	fs.StringVar(&o.Node, "node", "", "The real node's name.")
	fs.StringVar(&o.ContainerdSocket, "containerd-socket", "", "The node's containerd socket.")
	fs.StringVar(&pods, "pod-subnet", "", "The node's Pod range.")
	fs.StringVar(&services, "service-cidr", "", "The cluster's Service range.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.StateDir == "" || o.Kubeconfig == "" || o.Node == "" || o.ContainerdSocket == "" {
		return fmt.Errorf("addons up needs --state-dir, --kubeconfig, --node and --containerd-socket")
	}
	n, err := parseNetwork(pods, services)
	if err != nil {
		return err
	}
	if n == nil {
		return fmt.Errorf("addons up needs --pod-subnet and --service-cidr")
	}
	o.Network = *n
	o.Root, o.StateDir, o.Kubeconfig, o.KubeProxy = abs(o.Root), abs(o.StateDir), abs(o.Kubeconfig), abs(o.KubeProxy)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := addons.Up(ctx, o); err != nil {
		_ = addons.Down(o.StateDir)
		return err
	}
	return nil
}
