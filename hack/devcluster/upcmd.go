package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/hack/devcluster/flux"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/hack/devcluster/node"
)

// devFlags are the places `up` and `down` share: the same defaults, so
// that a bare `down` finds what a bare `up` started.
type devFlags struct {
	dir, kubeconfig, binDir, nodesDir string
}

func (d *devFlags) register(fs *flag.FlagSet) {
	root := repoRoot()
	fs.StringVar(&d.dir, "dir", filepath.Join(root, ".dev"), "The dev cluster's state: pid files, logs, component and crawler Pod logs (cluster/).")
	// Not $KUBECONFIG: up writes this file, and a user's own kubeconfig
	// must never be overwritten by it.
	fs.StringVar(&d.kubeconfig, "kubeconfig", filepath.Join(root, "bin", "kubeconfig"), "Where the dev cluster's admin kubeconfig is written.")
	fs.StringVar(&d.binDir, "bin-dir", filepath.Join(root, "bin", "k8s"), "The control-plane, kubelet and kube-proxy binaries (make k8s-bin).")
	fs.StringVar(&d.nodesDir, "nodes-dir", "", "The real nodes' state (default: $RN_DIR, else DIR/nodes).")
}

// abs settles the paths after parsing: the nodes live in the state
// directory unless told otherwise, so a test's cluster never touches the
// developer's nodes.
func (d *devFlags) abs() {
	if d.nodesDir == "" {
		d.nodesDir = os.Getenv("RN_DIR")
	}
	if d.nodesDir == "" {
		d.nodesDir = filepath.Join(d.dir, "nodes")
	}
	d.dir, d.kubeconfig, d.binDir, d.nodesDir = abs(d.dir), abs(d.kubeconfig), abs(d.binDir), abs(d.nodesDir)
}

// controlPlane is the background devcluster process of a state directory.
func (d devFlags) controlPlane() hostproc.Proc { return hostproc.Proc{Dir: d.dir, Name: "devcluster"} }

func (d devFlags) readyFile() string { return filepath.Join(d.dir, "devcluster.ready") }
func (d devFlags) modeFile() string  { return filepath.Join(d.dir, "mode") }

// upOptions is what `devcluster up` was asked for.
type upOptions struct {
	devFlags
	realNodes                int
	namePrefix, bridgePrefix string
	crawler, image, imageTar string
	controlPlaneBin          string
	timeout                  time.Duration
}

// mode names the kind of cluster: a running one of another kind is not
// reused.
func (o upOptions) mode() string {
	if o.realNodes > 0 {
		return "real-node"
	}
	return "agent"
}

// wantNodes is how many Ready egress Nodes make the cluster ready.
func (o upOptions) wantNodes() int {
	if o.realNodes > 0 {
		return o.realNodes
	}
	return len(fakeNodeNames())
}

// controlPlaneArgs are the flags of the background process (main.go).
func (o upOptions) controlPlaneArgs() []string {
	args := []string{
		"--bin-dir", o.binDir, "--dir", filepath.Join(o.dir, "cluster"), "--kubeconfig-out", o.kubeconfig,
		"--ready-file", o.readyFile(), "--crawler", o.crawler, "--fake-nodes=" + strconv.FormatBool(o.realNodes == 0),
	}
	if o.realNodes > 0 {
		args = append(args, "--fleet", o.nodesDir)
	}
	return args
}

// upCommand is `devcluster up`: the control plane in the background (as
// kind create cluster), the real nodes joined, back once the egress Nodes
// are Ready. Running again with a cluster of the same kind up is a no-op.
func upCommand(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	var o upOptions
	o.register(fs)
	fs.IntVar(&o.realNodes, "real-nodes", 0, "Real kubelet + containerd nodes (root), each owning one egress address; 0: two stand-in nodes whose node agent runs crawler Pods as local processes.")
	spec := node.DefaultSpec()
	fs.StringVar(&o.namePrefix, "name-prefix", spec.NamePrefix, "Real nodes are named PREFIX-1, PREFIX-2, ...")
	fs.StringVar(&o.bridgePrefix, "bridge-prefix", spec.BridgePrefix, "Their bridges PREFIX1, PREFIX2, ...")
	fs.StringVar(&o.crawler, "crawler", filepath.Join(repoRoot(), "bin", "crawler"), "Stand-in nodes: the binary that runs the crawler image's `crawler` command.")
	fs.StringVar(&o.image, "image", "ghcr.io/lohisoft/crawl-operator:dev", "Real nodes: the project's image, imported into every node.")
	fs.StringVar(&o.imageTar, "image-tar", "", "Real nodes: that image as a tar (default: built with hack/image).")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long to wait for Ready egress Nodes; after it, up stops what it started and fails with the end of the log.")
	exe, _ := os.Executable()
	fs.StringVar(&o.controlPlaneBin, "control-plane-bin", exe, "The program run in the background as the control plane (this one; tests put stand-ins here).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.realNodes < 0 {
		return fmt.Errorf("--real-nodes: %d is not a number of nodes", o.realNodes)
	}
	o.abs()
	o.crawler = abs(o.crawler)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return up(ctx, o)
}

func up(ctx context.Context, o upOptions) error {
	cp := o.controlPlane()
	if _, running := cp.PID(); running {
		if m := readTrimmed(o.modeFile()); m != o.mode() {
			return fmt.Errorf("dev cluster already running, but as %q, not %q: make dev-cluster-down first", m, o.mode())
		}
		fmt.Printf("dev cluster already running (KUBECONFIG=%s)\n", o.kubeconfig)
		return nil
	}
	// What an earlier cluster left would talk to a control plane that is
	// gone: the demos' processes and the real nodes.
	if err := stopProcs(o.dir); err != nil {
		return err
	}
	if err := nodesDown(ctx, o.nodesDir, o.kubeconfig); err != nil {
		return err
	}
	if o.realNodes > 0 {
		// Fail now, not after the control plane is up. Missing packages
		// are installed by nodes up.
		if why := node.Preflight(o.binDir); why != "" && !strings.HasPrefix(why, "missing ") {
			return fmt.Errorf("cannot add a real node: %s", why)
		}
		spec := node.DefaultSpec()
		spec.Count, spec.NamePrefix, spec.BridgePrefix = o.realNodes, o.namePrefix, o.bridgePrefix
		if err := planNodes(o.nodesDir, spec); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{o.kubeconfig, o.readyFile(), cp.LogFile()} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.WriteFile(o.modeFile(), []byte(o.mode()+"\n"), 0o644); err != nil {
		return err
	}
	if err := cp.Start(nil, o.controlPlaneBin, o.controlPlaneArgs()...); err != nil {
		return err
	}
	what := "node agent"
	if o.realNodes > 0 {
		what = fmt.Sprintf("%d real node(s): kubelet, containerd, kube-proxy, CoreDNS, local-path-provisioner", o.realNodes)
	}
	fmt.Printf("starting dev cluster (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, %s)", what)
	if err := waitUp(ctx, o); err != nil {
		fmt.Println()
		if serr := cp.Stop(30 * time.Second); serr != nil {
			err = errors.Join(err, serr)
		}
		_ = os.Remove(o.kubeconfig)
		_ = os.Remove(o.modeFile())
		return err
	}
	fmt.Println()
	kubectl := exec.Command(filepath.Join(o.binDir, "kubectl"), "get", "nodes", "-o", "wide")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+o.kubeconfig)
	kubectl.Stdout, kubectl.Stderr = os.Stdout, os.Stderr
	_ = kubectl.Run() // shown for the reader; readiness is already known
	fmt.Printf("dev cluster ready: export KUBECONFIG=%s\n", o.kubeconfig)
	return nil
}

// waitUp waits for what matters: the control plane's ready file (control
// plane up, kubeconfig written, node agent watching), then the real nodes
// joined, then the egress Nodes Ready as the API server says. Until then
// the only question about the process is whether it still runs.
func waitUp(ctx context.Context, o upOptions) error {
	cp := o.controlPlane()
	deadline := time.Now().Add(o.timeout)
	joined := o.realNodes == 0
	for {
		if _, running := cp.PID(); !running {
			return fmt.Errorf("dev cluster failed to start (devcluster: %s); last lines of %s:\n%s",
				exitStatus(cp), cp.LogFile(), lastLines(cp.LogFile(), 30))
		}
		if _, err := os.Stat(o.readyFile()); err == nil {
			if !joined {
				fmt.Println()
				if err := nodesUp(ctx, o.nodesDir, o.kubeconfig, o.binDir, o.image, o.imageTar); err != nil {
					return err
				}
				joined = true
			}
			if n, err := readyEgressNodes(ctx, o.kubeconfig); err == nil && n == o.wantNodes() {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dev cluster not ready after %s (--timeout); stopping it. Last lines of %s:\n%s",
				o.timeout, cp.LogFile(), lastLines(cp.LogFile(), 30))
		}
		fmt.Print(".")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// exitStatus is how the control plane ended; its starter (this process)
// records it a moment after the process is gone.
func exitStatus(p hostproc.Proc) string {
	for range 20 {
		if s := p.ExitStatus(); s != "" {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "exited"
}

func readyEgressNodes(ctx context.Context, kubeconfig string) (int, error) {
	c, err := newClient(kubeconfig)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{"crawl.lohisoft.com/egress": "true"}); err != nil {
		return 0, err
	}
	n := 0
	for _, nd := range nodes.Items {
		for _, cond := range nd.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, nil
}

// downCommand is `devcluster down`: everything `up` and the demos started,
// the real nodes while the control plane still answers (so their Pods go
// gracefully), even when it does not.
func downCommand(args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	var d devFlags
	d.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	d.abs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errs := []error{stopProcs(d.dir)}
	// make demo-gitops's Flux controllers and Git server, before the
	// cluster they talk to.
	fluxDir := filepath.Join(d.dir, "flux")
	errs = append(errs, flux.Down(fluxDir), os.RemoveAll(fluxDir))
	errs = append(errs, internetDown(ctx, filepath.Join(d.dir, "internet"), d.nodesDir, d.kubeconfig))
	errs = append(errs, nodesDown(ctx, d.nodesDir, d.kubeconfig))
	if _, running := d.controlPlane().PID(); running {
		fmt.Println("stopping devcluster")
	}
	// The node agent stops its crawler Pods (10 s grace) before it exits.
	errs = append(errs, d.controlPlane().Stop(30*time.Second))
	for _, f := range []string{d.kubeconfig, d.modeFile()} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// lastLines is the end of a log, for an error message.
func lastLines(path string, n int) string {
	lines := strings.Split(strings.TrimRight(hostproc.Tail(path, 16<<10), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
