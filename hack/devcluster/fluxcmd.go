package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/hack/devcluster/flux"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/hack/gitserver"
	"github.com/lohisoft/crawl-operator/hack/release/helmchart"
)

// fluxCommand runs `devcluster flux up|fleet|down` (make demo-gitops,
// make dev-cluster-down) and `devcluster git-server` (the fleet's Git
// server, run by `flux fleet` as a process of the state directory).
func fluxCommand(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("flux wants up, fleet, commit or down")
	}
	fs := flag.NewFlagSet("flux "+args[0], flag.ContinueOnError)
	var o flux.Options
	root := repoRoot()
	fs.StringVar(&o.Root, "root", root, "Repository root.")
	fs.StringVar(&o.BinDir, "bin-dir", filepath.Join(root, "bin", "flux"), "Flux's controllers (make flux-bin).")
	fs.StringVar(&o.StateDir, "state-dir", filepath.Join(root, ".dev", "flux"), "Logs, pid files, artifacts and the Git repositories.")
	kubeconfig := kubeconfigFlag(fs)
	site := fs.String("site", "", "fleet: URL of the site the fleet's CrawlTarget crawls.")
	imageTag := fs.String("image-tag", "dev", "fleet: the manager image's tag (make image, imported into the node).")
	message := fs.String("m", "", "commit: the commit message.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	o.Root, o.BinDir, o.StateDir, o.Kubeconfig = abs(o.Root), abs(o.BinDir), abs(o.StateDir), abs(*kubeconfig)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "up":
		return flux.Up(ctx, o)
	case "down":
		return flux.Down(o.StateDir)
	case "fleet":
		if *site == "" {
			return fmt.Errorf("flux fleet needs --site")
		}
		return fleet(ctx, o, *site, *imageTag)
	case "commit":
		if *message == "" {
			return fmt.Errorf("flux commit needs -m MESSAGE")
		}
		return commit(ctx, o, *message)
	}
	return fmt.Errorf("flux %s: want up, fleet, commit or down", args[0])
}

// fleet serves the fleet and chart repositories from the state directory
// and applies the bootstrap objects, with one CrawlTarget for site.
func fleet(ctx context.Context, o flux.Options, site, imageTag string) error {
	ports, err := hostproc.FreePorts(2)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	regAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	gitRoot := filepath.Join(o.StateDir, "git")
	regRoot := filepath.Join(o.StateDir, "registry")
	// A second run starts the repositories again.
	for _, d := range []string{gitRoot, regRoot, filepath.Join(o.StateDir, "work")} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(gitRoot, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	git := hostproc.Proc{Dir: o.StateDir, Name: flux.GitServer}
	if err := git.Start(nil, self, "git-server", "--root", gitRoot, "--addr", addr); err != nil {
		return err
	}
	if err := waitListening(ctx, addr); err != nil {
		return fmt.Errorf("git server: %w (log: %s)", err, git.LogFile())
	}
	reg := hostproc.Proc{Dir: o.StateDir, Name: flux.Registry}
	if err := reg.Start(nil, self, "registry", "serve", "--addr", regAddr, "--root", regRoot); err != nil {
		return err
	}
	if err := waitListening(ctx, regAddr); err != nil {
		return fmt.Errorf("registry: %w (log: %s)", err, reg.LogFile())
	}
	chart, version, err := pushChart(ctx, o, regAddr)
	if err != nil {
		return err
	}
	// The repositories are written on disk here; the git-server process
	// serves whatever is there.
	local := &gitserver.Server{Root: gitRoot, URL: "http://" + addr}
	target, err := os.ReadFile(filepath.Join(o.Root, "hack", "demo", "crawltarget.yaml"))
	if err != nil {
		return err
	}
	target = bytes.Replace(target, []byte("http://127.0.0.1:8090/"), []byte(site), 1)
	f, err := flux.NewFleet(o.Root, local, filepath.Join(o.StateDir, "work"), map[string]string{"harbour-bakery.yaml": string(target)})
	if err != nil {
		return err
	}
	// The example names a release; here it is the working copy's chart.
	if err := f.SetChartTag(version); err != nil {
		return err
	}
	if err := f.Commit("crawl-operator " + version + ": the working copy's chart"); err != nil {
		return err
	}
	values, err := flux.LaptopValues(filepath.Join(o.Root, "hack", "demo", "helm-values.yaml"), imageTag)
	if err != nil {
		return err
	}
	// Unsigned: signing needs a release (make release), which the demo
	// does not make; the OCIRepository verifies nothing here.
	objs, err := flux.Bootstrap(f.URL, flux.Laptop{Values: values, Chart: flux.Chart{URL: chart}})
	if err != nil {
		return err
	}
	c, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("flux-bootstrap"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	fmt.Printf("fleet repository %s (working copy %s), samples repository %s/crawl-operator.git, chart %s --version %s (unsigned)\n", f.URL, f.Work, local.URL, chart, version)
	fmt.Printf("flux bootstrap's objects, with the laptop's differences as patches:\n%s", flux.Describe(objs))
	return nil
}

// pushChart packages the working copy's chart and pushes it to the
// registry at addr with bin/helm, as make release-push does with a
// release's; it returns the chart's oci:// URL and version.
func pushChart(ctx context.Context, o flux.Options, addr string) (url, version string, err error) {
	dir := filepath.Join(o.StateDir, "chart")
	if err := os.RemoveAll(dir); err != nil {
		return "", "", err
	}
	meta, err := os.ReadFile(filepath.Join(o.Root, "charts", "crawl-operator", "Chart.yaml"))
	if err != nil {
		return "", "", err
	}
	var chart struct{ Version string }
	if err := yaml.Unmarshal(meta, &chart); err != nil || chart.Version == "" {
		return "", "", fmt.Errorf("charts/crawl-operator/Chart.yaml: no version (%v)", err)
	}
	h := helmchart.Helm{Bin: filepath.Join(o.Root, "bin", "helm"), Home: filepath.Join(dir, "helm")}
	tgz, err := h.Package(ctx, filepath.Join(o.Root, "charts", "crawl-operator"), "", "", dir)
	if err != nil {
		return "", "", err
	}
	url = "oci://" + addr + "/charts"
	if _, err := h.Push(ctx, tgz, url, true); err != nil {
		return "", "", err
	}
	return url + "/crawl-operator", chart.Version, nil
}

func waitListening(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening on %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// gitServer serves the bare repositories under --root until a signal.
func gitServer(args []string) error {
	fs := flag.NewFlagSet("git-server", flag.ContinueOnError)
	root := fs.String("root", "", "Directory of bare repositories NAME.git.")
	addr := fs.String("addr", "127.0.0.1:0", "Address to serve on.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := gitserver.Start(*root, *addr)
	if err != nil {
		return err
	}
	fmt.Println("serving", *root, "at", s.URL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return s.Close()
}

// commit makes the fleet's working copy the next commit and asks Flux to
// fetch it now, as `flux reconcile source git flux-system` does.
func commit(ctx context.Context, o flux.Options, message string) error {
	local := &gitserver.Server{Root: filepath.Join(o.StateDir, "git")}
	if err := local.Commit("fleet", filepath.Join(o.StateDir, "work", "fleet"), message); err != nil {
		return err
	}
	c, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	return flux.RequestReconcile(ctx, c)
}
