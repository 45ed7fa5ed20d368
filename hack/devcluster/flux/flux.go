// Package flux runs Flux's source-, kustomize- and helm-controller (the
// controllers of Flux v2.9.5, built by `make flux-bin` from hack/tools/flux)
// against the dev cluster, as `flux install` would, for make demo-gitops and
// the GitOps end-to-end test. They run on the machine, like kube-proxy, not
// as Pods: their images would have to be built here too, and as processes
// they reach the Git server and source-controller's artifacts on loopback.
// Nothing is pulled: the CRDs come from the controllers' own Go modules.
package flux

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/internal/yamldoc"
)

// Namespace is where Flux's own objects live, as `flux install` makes it.
const Namespace = "flux-system"

// Controllers are the Flux controllers run here, each with the Go module
// that holds its CRDs (config/crd/bases) at the version hack/tools/flux
// pins.
var Controllers = []string{"source-controller", "kustomize-controller", "helm-controller"}

// Options say where the controllers and the cluster are.
type Options struct {
	// Root is the repository (hack/tools/flux pins the versions).
	Root string
	// BinDir holds the controllers (make flux-bin: bin/flux).
	BinDir string
	// StateDir holds their logs, pid files and source-controller's
	// artifacts; it is removed by the caller after Down.
	StateDir   string
	Kubeconfig string
}

// Up installs Flux's CRDs and namespace, starts the controllers and waits
// until each is healthy.
func Up(ctx context.Context, o Options) error {
	for _, c := range Controllers {
		if _, err := os.Stat(filepath.Join(o.BinDir, c)); err != nil {
			return fmt.Errorf("no %s in %s (make flux-bin builds it)", c, o.BinDir)
		}
	}
	c, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	crds, err := CRDs(ctx, o.Root)
	if err != nil {
		return err
	}
	if err := installCRDs(ctx, c, crds); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return err
	}
	ports, err := hostproc.FreePorts(1 + 2*len(Controllers))
	if err != nil {
		return err
	}
	storage := "127.0.0.1:" + strconv.Itoa(ports[0])
	// source-controller refuses a storage path that does not exist.
	if err := os.MkdirAll(filepath.Join(o.StateDir, "artifacts"), 0o755); err != nil {
		return err
	}
	var health []string
	for i, name := range Controllers {
		metrics, probes := "127.0.0.1:"+strconv.Itoa(ports[1+2*i]), "127.0.0.1:"+strconv.Itoa(ports[2+2*i])
		args := Args(name, metrics, probes, storage, filepath.Join(o.StateDir, "artifacts"))
		env := []string{"KUBECONFIG=" + o.Kubeconfig, "RUNTIME_NAMESPACE=" + Namespace}
		if err := proc(o.StateDir, name).Start(env, filepath.Join(o.BinDir, name), args...); err != nil {
			_ = Down(o.StateDir)
			return err
		}
		health = append(health, "http://"+probes+"/readyz")
	}
	for i, url := range health {
		if err := proc(o.StateDir, Controllers[i]).WaitHealthy(ctx, url, 2*time.Minute); err != nil {
			_ = Down(o.StateDir)
			return err
		}
	}
	return nil
}

// Args are a controller's flags here: everything on loopback, no leader
// election (one copy), every namespace watched, no event recorder to
// send to (there is no notification-controller), and dependencies
// retried every 5 s instead of 30 s, so that a Kustomization waiting on
// another starts soon after it is Ready.
func Args(name, metrics, probes, storage, artifacts string) []string {
	args := []string{
		"--metrics-addr=" + metrics,
		"--health-addr=" + probes,
		"--enable-leader-election=false",
		"--watch-all-namespaces=true",
		"--log-encoding=json",
	}
	switch name {
	case "source-controller":
		args = append(args,
			"--storage-path="+artifacts,
			"--storage-addr="+storage,
			// The other controllers download artifacts from here.
			"--storage-adv-addr="+storage)
	case "kustomize-controller":
		args = append(args, "--requeue-dependency=5s")
	case "helm-controller":
		args = append(args, "--requeue-dependency=5s",
			// A release cut short by down is rolled back by the next
			// reconcile; 10 s keeps make dev-cluster-down quick.
			"--graceful-shutdown-timeout=10s")
	}
	return args
}

func proc(stateDir, name string) hostproc.Proc { return hostproc.Proc{Dir: stateDir, Name: name} }

// GitServer is the name of the Git server process `devcluster flux
// fleet` starts in the same state directory (make demo-gitops).
const GitServer = "git-server"

// Registry is the name of the OCI registry process `devcluster flux fleet`
// starts beside the Git server: the chart comes from it, as a release does.
const Registry = "registry"

// helpers are the processes of a fleet besides the controllers.
var helpers = []string{GitServer, Registry}

// Down stops the controllers, the Git server and the registry. The CRDs and objects stay
// in the cluster, which make dev-cluster-down removes with it.
func Down(stateDir string) error {
	var errs []string
	for _, name := range append(slices.Clone(Controllers), helpers...) {
		if err := proc(stateDir, name).Stop(20 * time.Second); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Running lists the controllers and Git server of stateDir that still run.
func Running(stateDir string) []string {
	var out []string
	for _, name := range append(slices.Clone(Controllers), helpers...) {
		if _, ok := proc(stateDir, name).PID(); ok {
			out = append(out, name)
		}
	}
	return out
}

// CRDs reads the controllers' CRDs from their Go modules at the versions
// hack/tools/flux pins (downloading them from the module proxy if needed).
func CRDs(ctx context.Context, root string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, c := range Controllers {
		dir, err := moduleDir(ctx, filepath.Join(root, "hack", "tools", "flux"), "github.com/fluxcd/"+c)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s/config/crd/bases", dir)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			objs, err := yamldoc.Decode(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

func moduleDir(ctx context.Context, tools, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s in %s: %w", module, tools, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", module, m.Error)
	}
	return m.Dir, nil
}

func installCRDs(ctx context.Context, c client.Client, crds []*unstructured.Unstructured) error {
	for _, u := range crds {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("flux-install"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured objects have no apply configuration
			return fmt.Errorf("apply CRD %s: %w", u.GetName(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, u := range crds {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd)
			if err == nil && established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %v", u.GetName(), err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}
