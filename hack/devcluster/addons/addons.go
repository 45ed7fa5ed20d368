// Package addons turns the dev cluster with a real node into a cluster a
// workload can live in, as kind's node is: kube-proxy (iptables mode) so
// that Services, the `kubernetes` Service among them, work from Pods;
// cluster DNS (CoreDNS, Service kube-dns); and a default StorageClass with
// a dynamic provisioner (local-path-provisioner). Every image is built here
// (hack/image --addon) and imported into the node's containerd: no
// registry is ever asked. kube-proxy runs on the machine, as the kubelet
// does, because in iptables mode it runs the machine's iptables.
package addons

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/internal/yamldoc"
)

// Images of the add-ons, as hack/image --addon builds them.
const (
	CoreDNSImage     = "localhost/crawl-operator-coredns:dev"
	ProvisionerImage = "localhost/crawl-operator-local-path-provisioner:dev"
	HelperImage      = "localhost/crawl-operator-local-path-helper:dev"
	// ClusterDomain is the DNS domain of Services, as kubeadm's default.
	ClusterDomain = "cluster.local"
	// StorageClass is the default StorageClass the provisioner serves.
	StorageClass = "local-path"
)

var (
	//go:embed coredns.yaml
	coreDNSManifest string
	//go:embed local-path.yaml
	localPathManifest string
)

// Options say where the node is and how to reach it.
type Options struct {
	// Root is the repository (hack/image and the tools modules).
	Root string
	// StateDir holds the images, kube-proxy's config, log and pid file,
	// and the provisioner's volumes.
	StateDir   string
	Kubeconfig string
	KubeProxy  string
	// Node is where kube-proxy says it runs: one kube-proxy serves every
	// node of this machine, as they share its iptables.
	Node string
	// ContainerdSockets are the nodes' containerds: each gets the images,
	// wherever the scheduler puts the add-ons.
	ContainerdSockets []string
	Network           cluster.Network
	// Upstream is a DNS server (address) for every name outside the
	// cluster: the dev internet's, when there is one.
	Upstream string
}

// VolumeDir is where the provisioner makes volumes on the node.
func (o Options) VolumeDir() string { return filepath.Join(o.StateDir, "volumes") }

// Up builds and imports the images, starts kube-proxy, applies the
// manifests and waits until DNS and the provisioner are available.
func Up(ctx context.Context, o Options) error {
	for _, d := range []string{o.StateDir, filepath.Join(o.StateDir, "images"), o.VolumeDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := importImages(ctx, o); err != nil {
		return err
	}
	healthz, err := startKubeProxy(o)
	if err != nil {
		return err
	}
	c, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	if err := apply(ctx, c, o); err != nil {
		return err
	}
	if err := kubeProxy(o.StateDir).WaitHealthy(ctx, healthz, waitTimeout); err != nil {
		return err
	}
	for _, d := range []client.ObjectKey{coreDNS, {Namespace: "local-path-storage", Name: "local-path-provisioner"}} {
		if err := waitAvailable(ctx, c, d); err != nil {
			return err
		}
	}
	return nil
}

var coreDNS = client.ObjectKey{Namespace: "kube-system", Name: "coredns"}

func apply(ctx context.Context, c client.Client, o Options) error {
	objs, err := Manifests(o)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("devcluster"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured objects have no apply configuration
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// SetUpstream makes the cluster's DNS forward every name outside the
// cluster to upstream ("": to none), and waits until CoreDNS runs so.
func SetUpstream(ctx context.Context, o Options, upstream string) error {
	c, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.Upstream = upstream
	if err := apply(ctx, c, o); err != nil {
		return err
	}
	return waitAvailable(ctx, c, coreDNS)
}

// Manifests are the add-ons' objects for this node, in apply order.
func Manifests(o Options) ([]*unstructured.Unstructured, error) {
	data := map[string]string{
		"ClusterDomain":    ClusterDomain,
		"DNSIP":            o.Network.DNSIP().String(),
		"CoreDNSImage":     CoreDNSImage,
		"ProvisionerImage": ProvisionerImage,
		"HelperImage":      HelperImage,
		"VolumeDir":        o.VolumeDir(),
		"Upstream":         o.Upstream,
		"Node":             o.Node,
	}
	var out []*unstructured.Unstructured
	for _, m := range []string{coreDNSManifest, localPathManifest} {
		objs, err := render(m, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func render(manifest string, data any) ([]*unstructured.Unstructured, error) {
	t, err := template.New("").Option("missingkey=error").Parse(manifest)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return yamldoc.Decode(b.Bytes())
}

// importImages builds each add-on image and imports it into the node's
// containerd, where the kubelet finds it (imagePullPolicy: Never).
func importImages(ctx context.Context, o Options) error {
	for addon, ref := range map[string]string{
		"coredns":                CoreDNSImage,
		"local-path-provisioner": ProvisionerImage,
		"local-path-helper":      HelperImage,
	} {
		tar := filepath.Join(o.StateDir, "images", addon+".tar")
		if err := run(ctx, o.Root, "go", "run", "./hack/image", "--addon", addon, "--tag", ref, "--out", tar); err != nil {
			return err
		}
		for _, sock := range o.ContainerdSockets {
			if err := run(ctx, o.Root, "ctr", "-a", sock, "-n", "k8s.io", "images", "import", tar); err != nil {
				return err
			}
		}
	}
	return nil
}

func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// kubeProxyConfig keeps kube-proxy off what is not the dev cluster's: no
// NodePorts on the machine's own interfaces or on localhost (which would
// set route_localnet), and no conntrack sysctls.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{ .Kubeconfig }}
hostnameOverride: {{ .Node }}
mode: iptables
clusterCIDR: {{ .PodSubnet }}
nodePortAddresses: ["{{ .Gateway }}/32"]
healthzBindAddress: 127.0.0.1:{{ .HealthzPort }}
metricsBindAddress: 127.0.0.1:{{ .MetricsPort }}
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// kubeProxy is kube-proxy as a process of the state directory.
func kubeProxy(stateDir string) hostproc.Proc {
	return hostproc.Proc{Dir: stateDir, Name: "kube-proxy"}
}

// startKubeProxy starts kube-proxy, which outlives this command, and
// returns its health URL.
func startKubeProxy(o Options) (string, error) {
	ports, err := hostproc.FreePorts(2)
	if err != nil {
		return "", err
	}
	t := template.Must(template.New("").Parse(kubeProxyConfig))
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]any{
		"Kubeconfig": o.Kubeconfig, "Node": o.Node, "PodSubnet": o.Network.PodSubnet,
		"Gateway": o.Network.Gateway(), "HealthzPort": ports[0], "MetricsPort": ports[1],
	}); err != nil {
		return "", err
	}
	cfg := filepath.Join(o.StateDir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, b.Bytes(), 0o600); err != nil {
		return "", err
	}
	if err := kubeProxy(o.StateDir).Start(nil, o.KubeProxy, "--config="+cfg, "--v=2"); err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0]), nil
}

// Down stops kube-proxy. Its iptables chains stay: the nodes' teardown
// removes every chain they added, after their Pods are gone.
func Down(stateDir string) error { return kubeProxy(stateDir).Stop(10 * time.Second) }

func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: cluster.Scheme()})
}

const waitTimeout = 3 * time.Minute

func waitAvailable(ctx context.Context, c client.Client, key client.ObjectKey) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for {
		d := &appsv1.Deployment{}
		err := c.Get(ctx, key, d)
		// Rolled out: what runs is the newest template, and available.
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == d.Status.Replicas &&
			d.Status.AvailableReplicas > 0 && d.Status.AvailableReplicas == d.Status.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s not available after %s (kubectl -n %s describe pods)", key, waitTimeout, key.Namespace)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
