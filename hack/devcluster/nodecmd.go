package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/hack/devcluster/addons"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/hack/devcluster/node"
	"github.com/lohisoft/crawl-operator/internal/repo"
)

// nodesCommand runs `devcluster nodes plan|up|down|check|preflight`: the
// dev cluster's real nodes as a whole.
func nodesCommand(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("nodes wants plan, up, down, check or preflight")
	}
	fs := flag.NewFlagSet("nodes "+args[0], flag.ContinueOnError)
	dir := fs.String("dir", defaultNodesDir(), "The nodes' state: the plan (fleet.json), each node's directory, journals and logs.")
	kubeconfig := kubeconfigFlag(fs)
	binDir := fs.String("bin-dir", filepath.Join(repoRoot(), "bin", "k8s"), "The kubelet and kube-proxy (make k8s-bin).")
	spec := node.DefaultSpec()
	fs.IntVar(&spec.Count, "count", spec.Count, "plan: how many nodes (each owns the next egress address).")
	fs.StringVar(&spec.NamePrefix, "name-prefix", spec.NamePrefix, "plan: nodes are named PREFIX-1, PREFIX-2, ...")
	fs.StringVar(&spec.BridgePrefix, "bridge-prefix", spec.BridgePrefix, "plan: their bridges PREFIX1, PREFIX2, ...")
	ips := fs.String("external-ips", "", "plan: the egress addresses, comma-separated (default: the bot's 79.139.58.98,79.139.58.121).")
	pods := fs.String("pod-subnet", "", "plan: the Pods' range, a /24 a node (default: a free /22 of this machine).")
	services := fs.String("service-cidr", "", "plan: the Services' range (default: a free /24).")
	image := fs.String("image", "ghcr.io/lohisoft/crawl-operator:dev", "up: the project's image, imported into every node.")
	imageTar := fs.String("image-tar", "", "up: that image as a tar (default: built with hack/image).")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	*dir = abs(*dir)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "plan":
		if *ips != "" {
			spec.ExternalIPs = nil
			for _, s := range strings.Split(*ips, ",") {
				a, err := netip.ParseAddr(strings.TrimSpace(s))
				if err != nil || !a.Is4() {
					return fmt.Errorf("--external-ips: %q is not an IPv4 address", s)
				}
				spec.ExternalIPs = append(spec.ExternalIPs, a)
			}
		}
		var err error
		if spec.PodSubnet, spec.ServiceCIDR, err = parseRanges(*pods, *services); err != nil {
			return err
		}
		return planNodes(*dir, spec)
	case "preflight":
		if why := node.Preflight(abs(*binDir)); why != "" {
			fmt.Println(why)
			return errSilent
		}
		return nil
	case "up":
		return nodesUp(ctx, *dir, *kubeconfig, abs(*binDir), *image, *imageTar)
	case "down":
		return nodesDown(ctx, *dir, *kubeconfig)
	case "check":
		f, err := node.LoadFleet(*dir)
		if err != nil {
			return err
		}
		if left := f.Leftovers(); len(left) > 0 {
			fmt.Println(strings.Join(left, "\n"))
			return errSilent
		}
		return nil
	}
	return fmt.Errorf("nodes %s: want plan, up, down, check or preflight", args[0])
}

// errSilent fails a command whose output already says why.
var errSilent = errors.New("")

func parseRanges(pods, services string) (p, s netip.Prefix, err error) {
	if pods != "" {
		if p, err = netip.ParsePrefix(pods); err != nil {
			return p, s, fmt.Errorf("--pod-subnet: %w", err)
		}
	}
	if services != "" {
		if s, err = netip.ParsePrefix(services); err != nil {
			return p, s, fmt.Errorf("--service-cidr: %w", err)
		}
	}
	return p, s, nil
}

func planNodes(dir string, spec node.Spec) error {
	if node.Planned(dir) {
		return fmt.Errorf("%s already holds real nodes (devcluster nodes down --dir %s)", dir, dir)
	}
	host, err := cluster.HostNetworks()
	if err != nil {
		return err
	}
	f, err := node.PlanFleet(dir, spec, host)
	if err != nil {
		return err
	}
	if err := f.Save(); err != nil {
		return err
	}
	fmt.Printf("planned %d real node(s) in %s: Pods %s, Services %s\n", len(f.Nodes), dir, f.Network.PodSubnet, f.Network.ServiceCIDR)
	return nil
}

// nodesUp starts the planned nodes and the add-ons that make them a
// cluster a workload can live in. On failure it takes down what it made.
func nodesUp(ctx context.Context, dir, kubeconfig, binDir, image, imageTar string) (err error) {
	f, err := node.LoadFleet(dir)
	if err != nil {
		return err
	}
	if err := node.InstallPackages(filepath.Join(dir, "apt.log")); err != nil {
		return err
	}
	if why := node.Preflight(binDir); why != "" {
		return fmt.Errorf("cannot run a real node: %s", why)
	}
	c, err := newClient(kubeconfig)
	if err != nil {
		return err
	}
	o := node.Options{KubeletBin: filepath.Join(binDir, "kubelet"), Kubeconfig: kubeconfig, Client: c, Log: logf}
	defer func() {
		if err != nil {
			logf("real nodes failed to start; removing what was set up (logs in %s)", dir)
			if derr := nodesDown(context.Background(), dir, kubeconfig); derr != nil {
				logf("%v", derr)
			}
		}
	}()
	if o.ImageTars, err = nodeImages(ctx, dir, image, imageTar); err != nil {
		return err
	}
	if err := f.Up(ctx, o); err != nil {
		return err
	}
	f, err = node.LoadFleet(dir) // with the kubelets' ports
	if err != nil {
		return err
	}
	logf("starting kube-proxy, CoreDNS and local-path-provisioner")
	if err := addons.Up(ctx, addonOptions(f, kubeconfig, binDir)); err != nil {
		return err
	}
	return writeEnv(f, image)
}

// nodeImages builds the project's image (unless given) and the sandbox
// image, as tars to import.
func nodeImages(ctx context.Context, dir, image, imageTar string) ([]string, error) {
	images := filepath.Join(dir, "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		return nil, err
	}
	pause := filepath.Join(images, "pause.tar")
	builds := [][]string{{"--addon", "pause", "--tag", node.PauseImage, "--out", pause}}
	if imageTar == "" {
		imageTar = filepath.Join(images, "crawl-operator.tar")
		builds = append(builds, []string{"--tag", image, "--out", imageTar})
	}
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./hack/image"}, b...)...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go run ./hack/image %s: %w\n%s", strings.Join(b, " "), err, out)
		}
	}
	return []string{abs(imageTar), pause}, nil
}

// writeEnv leaves the first node's facts as shell assignments in the
// nodes' directory, for the demos' scripts.
func writeEnv(f node.Fleet, image string) error {
	n := f.Nodes[0]
	env := fmt.Sprintf("RN_NODE=%s\nRN_BRIDGE=%s\nRN_SUBNET=%s\nRN_SERVICE_CIDR=%s\nRN_CLUSTER_DNS=%s\nRN_GW=%s\nRN_EXTERNAL_IP=%s\nRN_IMAGE=%s\nRN_SOCK=%s\nRN_DIR=%s\n",
		n.Name, n.Bridge, n.Subnet(), f.Network.ServiceCIDR, f.Network.DNSIP(), n.Gateway(), n.ExternalIP, image, n.Socket(), f.Dir)
	return os.WriteFile(filepath.Join(f.Dir, "env"), []byte(env), 0o644)
}

// nodesDown removes the nodes, kube-proxy and everything they set up on
// the machine; with no plan in dir there is nothing to do.
func nodesDown(ctx context.Context, dir, kubeconfig string) error {
	if !node.Planned(dir) {
		return nil
	}
	f, err := node.LoadFleet(dir)
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, addons.Down(filepath.Join(dir, "addons")))
	var c client.Client
	if _, err := os.Stat(kubeconfig); err == nil {
		c, _ = newClient(kubeconfig)
	}
	errs = append(errs, f.Down(ctx, node.Options{Client: c}))
	_ = os.RemoveAll(filepath.Join(dir, "addons"))
	_ = os.Remove(filepath.Join(dir, "env"))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logf("real nodes down: nothing left behind")
	return nil
}

// nodeCommand runs `devcluster node stop|start NODE`, one node lost and
// back, as a machine that loses power and boots again, and `devcluster
// node egress-ip NODE ADDR`.
func nodeCommand(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("node wants stop NODE, start NODE or egress-ip NODE ADDR")
	}
	if args[0] == "egress-ip" {
		return egressIPCommand(args[1], args[2:])
	}
	fs := flag.NewFlagSet("node "+args[0], flag.ContinueOnError)
	dir := fs.String("dir", defaultNodesDir(), "The nodes' state.")
	kubeconfig := kubeconfigFlag(fs)
	binDir := fs.String("bin-dir", filepath.Join(repoRoot(), "bin", "k8s"), "The kubelet (make k8s-bin).")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	f, err := node.LoadFleet(abs(*dir))
	if err != nil {
		return err
	}
	n, err := f.Node(args[1])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "stop":
		if err := node.PowerOff(n); err != nil {
			return err
		}
		logf("node %s stopped: kubelet, containerd and its containers killed", n.Name)
		return nil
	case "start":
		c, err := newClient(*kubeconfig)
		if err != nil {
			return err
		}
		if err := node.Start(ctx, n, node.Options{KubeletBin: filepath.Join(abs(*binDir), "kubelet"), Kubeconfig: *kubeconfig, Client: c, Log: logf}); err != nil {
			return err
		}
		logf("node %s Ready again", n.Name)
		return nil
	}
	return fmt.Errorf("node %s: want stop, start or egress-ip", args[0])
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// repoRoot is the repository: the parent of bin/ when this is
// bin/devcluster, else the module around the working directory.
func repoRoot() string { return repo.RootOfCommand() }

// defaultNodesDir is where `make dev-cluster REAL_NODE=1` keeps its nodes
// ($RN_DIR moves it).
func defaultNodesDir() string {
	if d := os.Getenv("RN_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(), ".dev", "nodes")
}

// kubeconfigFlag is --kubeconfig, found as kind's commands find theirs:
// the flag, else $KUBECONFIG, else the dev cluster's own bin/kubeconfig.
func kubeconfigFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("KUBECONFIG")
	if def == "" || strings.Contains(def, string(os.PathListSeparator)) {
		def = filepath.Join(repoRoot(), "bin", "kubeconfig")
	}
	return fs.String("kubeconfig", def, "Admin kubeconfig of the dev cluster (default: $KUBECONFIG, else the repository's bin/kubeconfig).")
}

func newClient(kubeconfig string) (client.Client, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig")
	}
	if fi, err := os.Stat(kubeconfig); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("no dev cluster: kubeconfig %s is missing (make dev-cluster)", kubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: cluster.Scheme()})
}
