// Package cluster starts a local Kubernetes control plane for demos and
// end-to-end tests: etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager from bin/k8s, plus two registered egress Nodes.
// It is a test harness, not a way to run the operator in production.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// EgressNode is a Node the cluster registers with a public IPv4 address.
type EgressNode struct {
	Name string
	IP   string
}

// DefaultEgressNodes are the bot's two published source addresses.
var DefaultEgressNodes = []EgressNode{
	{Name: "egress-1", IP: "79.139.58.98"},
	{Name: "egress-2", IP: "79.139.58.121"},
}

// Options configure a Cluster.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-scheduler and
	// kube-controller-manager.
	BinDir string
	// Dir receives the kubeconfig and the component logs.
	Dir string
	// Nodes are registered as egress Nodes for the node agent; nil means
	// DefaultEgressNodes, empty means none (a real node joins instead).
	Nodes []EgressNode
	// Network, when set, makes the control plane one that Pods of a real
	// node can use as in any cluster: the API server is reachable at the
	// node's bridge address and through the `kubernetes` Service, its
	// certificate names those, and Pods get service account tokens.
	Network *Network
}

// Cluster is a running local control plane.
type Cluster struct {
	Config     *rest.Config
	Client     client.Client
	Kubeconfig string

	env   *envtest.Environment
	procs []*exec.Cmd
}

// Scheme knows the built-in kinds and the crawl.lohisoft.com kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(crawlv1.AddToScheme(s))
	return s
}

// Start brings the control plane up and registers the egress Nodes.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Nodes == nil {
		opts.Nodes = DefaultEgressNodes
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{env: &envtest.Environment{BinaryAssetsDirectory: opts.BinDir}}
	// A real kubelet (`devcluster nodes up`) registers its Hostname first; the
	// API server must reach it (kubectl logs) by its InternalIP instead, so
	// that the test node's name is never looked up in the machine's
	// resolver.
	c.env.ControlPlane.GetAPIServer().Configure().Set("kubelet-preferred-address-types", "InternalIP")
	var caFile string
	if opts.Network != nil {
		if caFile, err = servePods(c.env.ControlPlane.GetAPIServer(), filepath.Join(opts.Dir, "pki"), *opts.Network); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.Config, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w", err)
	}
	user, err := c.env.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(opts.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme()}); err != nil {
		return nil, err
	}
	certDir := c.env.ControlPlane.APIServer.CertDir
	if err := c.run(opts, "kube-scheduler",
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0"); err != nil {
		return nil, err
	}
	// The node agent is no kubelet: it sends no heartbeats, so node
	// lifecycle management (which would mark its Nodes unreachable) is off
	// for it. Real nodes' kubelets do send them: a node that stops (node
	// stop) is marked unknown within seconds, as on a real cluster, only
	// sooner. The garbage collector is what matters here: it removes a
	// deleted CrawlTarget's Pods, Secrets and SiteIndex.
	controllers := "--controllers=*,-node-lifecycle-controller,-node-ipam-controller"
	if opts.Network != nil {
		controllers = "--controllers=*,-node-ipam-controller"
	}
	kcm := []string{"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false", "--secure-port=0", controllers,
		"--node-monitor-period=2s", "--node-monitor-grace-period=40s",
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--use-service-account-credentials=false"}
	if caFile != "" {
		// Every namespace's kube-root-ca.crt, which service account token
		// volumes carry into Pods so that they can verify the API server.
		kcm = append(kcm, "--root-ca-file="+caFile)
	}
	if err := c.run(opts, "kube-controller-manager", kcm...); err != nil {
		return nil, err
	}
	for _, n := range opts.Nodes {
		if err := registerNode(ctx, c.Client, n); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) run(opts Options, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(opts.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(opts.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// Stop stops every component. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, p := range c.procs {
		if p.Process != nil {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	c.procs = nil
	if c.env != nil {
		// Start never sets etcd's data directory or the API server's
		// certificate directory, so envtest made both in TMPDIR; it removes
		// them only for processes that started, and an etcd that never ran
		// (no binary) left its empty directory behind on every failed start.
		var made []string
		if e := c.env.ControlPlane.Etcd; e != nil {
			made = append(made, e.DataDir)
		}
		if a := c.env.ControlPlane.APIServer; a != nil {
			made = append(made, a.CertDir)
		}
		_ = c.env.Stop()
		for _, dir := range made {
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
		}
		c.env = nil
	}
}

// registerNode creates an egress Node the way the chart expects them:
// labelled, tainted, Ready, with the public IPv4 as ExternalIP.
func registerNode(ctx context.Context, c client.Client, n EgressNode) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
			egress.DefaultLabel:      egress.DefaultValue,
			"kubernetes.io/hostname": n.Name,
			"kubernetes.io/os":       "linux",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: egress.DefaultLabel, Value: egress.DefaultValue, Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("register node %s: %w", n.Name, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("16"),
	}
	node.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeExternalIP, Address: n.IP},
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: n.Name},
		},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "DevNodeAgent",
			Message:           "pods run as local processes (hack/devcluster, a test harness)",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "dev-node-agent", OperatingSystem: "linux", Architecture: "amd64"},
	}
	if err := c.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("set status of node %s: %w", n.Name, err)
	}
	// The API server taints new Nodes not-ready; node lifecycle management
	// would lift that once the Node is Ready, but it is off here.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady
	})
	if err := c.Update(ctx, node); err != nil {
		return fmt.Errorf("untaint node %s: %w", n.Name, err)
	}
	return nil
}

// ErrNotRunning is returned when a pid file names no live process.
var ErrNotRunning = errors.New("dev cluster is not running")
