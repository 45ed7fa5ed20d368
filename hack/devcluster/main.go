// Command devcluster runs a local Kubernetes cluster for the demo and the
// end-to-end tests, with no Docker: etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager from bin/k8s, two egress Nodes, and a node agent
// that runs crawler Pods bound to them as local processes of bin/crawler.
// It is a test harness; real clusters run real kubelets.
//
// It runs in the foreground until SIGINT/SIGTERM; `devcluster up` runs it
// in the background for `make dev-cluster`. Once everything is up it
// writes --ready-file (up waits for that file, then for Ready Nodes) and
// removes it again when it stops. With --fake-nodes=false it
// registers no Nodes and runs no agent: `make dev-cluster REAL_NODE=1` joins
// real kubelets instead (`devcluster nodes up`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lohisoft/crawl-operator/hack/devcluster/agent"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/hack/devcluster/node"
)

func main() {
	binDir := flag.String("bin-dir", "bin/k8s", "Directory with the control-plane binaries.")
	dir := flag.String("dir", ".dev/cluster", "Directory for component logs and Pod logs.")
	kubeconfig := flag.String("kubeconfig-out", "bin/kubeconfig", "Where to write the admin kubeconfig.")
	crawler := flag.String("crawler", "bin/crawler", "Local binary that runs the crawler image's `crawler` command.")
	fakeNodes := flag.Bool("fake-nodes", true, "Register egress-1 and egress-2 and run the node agent for them.")
	readyFile := flag.String("ready-file", "", "Written once the control plane is up, the kubeconfig written and (with fake nodes) the node agent watching Pods; removed on exit.")
	fleet := flag.String("fleet", "", "With --fake-nodes=false: the real nodes' directory (`devcluster nodes plan`); the API server then serves Pods in their ranges and through the kubernetes Service.")
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		// Subcommands say what they do themselves; the client's own
		// logging stays quiet.
		ctrl.SetLogger(logr.Discard())
		os.Exit(subcommand(os.Args[1], os.Args[2:]))
	}
	flag.Parse()
	ctrl.SetLogger(zap.New())
	network, err := fleetNetwork(*fleet)
	if err == nil {
		err = run(*binDir, *dir, *kubeconfig, *crawler, *readyFile, *fakeNodes, network)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

// fleetNetwork reads the real nodes' address plan, if any.
func fleetNetwork(dir string) (*cluster.Network, error) {
	if dir == "" {
		return nil, nil
	}
	f, err := node.LoadFleet(dir)
	if err != nil {
		return nil, err
	}
	return &f.Network, nil
}

func run(binDir, dir, kubeconfig, crawler, readyFile string, fakeNodes bool, network *cluster.Network) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts := cluster.Options{BinDir: abs(binDir), Dir: abs(dir), Network: network}
	if network != nil && fakeNodes {
		return fmt.Errorf("--fleet is for real nodes: add --fake-nodes=false")
	}
	if !fakeNodes {
		opts.Nodes = []cluster.EgressNode{}
	}
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Stop()

	kc, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := writeAtomic(kubeconfig, kc); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)
	// Deferred last, so it runs first: the cluster is no longer ready as
	// soon as it starts to stop.
	ready := func() error {
		if readyFile == "" {
			return nil
		}
		return writeAtomic(readyFile, fmt.Appendf(nil, "%d\n", os.Getpid()))
	}
	if readyFile != "" {
		defer os.Remove(readyFile)
	}

	if !fakeNodes {
		if err := ready(); err != nil {
			return err
		}
		fmt.Printf("dev cluster ready: KUBECONFIG=%s; no nodes yet (a real node joins)\n", kubeconfig)
		<-ctx.Done()
		return nil
	}
	podLogs := filepath.Join(abs(dir), "pods")
	if err := os.MkdirAll(podLogs, 0o755); err != nil {
		return err
	}
	mgr, err := agent.NewManager(c.Config, agent.Options{
		NodeNames: fakeNodeNames(),
		Commands:  map[string]string{"crawler": abs(crawler)},
		LogDir:    podLogs,
	})
	if err != nil {
		return err
	}
	// Ready once the agent's cache has synced: from then on it sees every
	// Pod bound to its Nodes.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		if err := ready(); err != nil {
			return err
		}
		fmt.Printf("dev cluster ready: KUBECONFIG=%s; crawler Pod logs in %s\n", kubeconfig, podLogs)
		<-ctx.Done()
		if readyFile != "" {
			_ = os.Remove(readyFile) // stopping: not ready any more
		}
		return nil
	})); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// fakeNodeNames are the stand-in egress Nodes the node agent serves.
func fakeNodeNames() []string {
	var names []string
	for _, n := range cluster.DefaultEgressNodes {
		names = append(names, n.Name)
	}
	return names
}

// writeAtomic writes a file that readers see whole or not at all.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
