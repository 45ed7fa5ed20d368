// Package node runs the dev cluster's real nodes on this machine: for each,
// a kubelet (bin/k8s) and a containerd (Debian's, with runc and the CNI
// plugins) with their own state, socket, ports, cgroup root, bridge and Pod
// range, so that several share one machine as kind's node containers share
// one Docker host. Every change a node makes to the machine is recorded in
// its journal (hostchange) and undone by Down; what the kubelet, kube-proxy
// and the CNI plugins make by themselves is swept by the cluster (Fleet).
package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostchange"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// Node is one real node of the dev cluster.
type Node struct {
	Name string
	// ExternalIP is the public IPv4 the Node publishes: the egress address
	// its Pods leave with.
	ExternalIP netip.Addr
	// Index is the node's place in the cluster; its Pod range is the
	// cluster's Index-th /24 (cluster.Network.NodeSubnet).
	Index   int
	Bridge  string
	Dir     string
	Network cluster.Network
	// KubeletPort is chosen free when the node is first made; its Pods
	// and every other node's may not reach it.
	KubeletPort int
}

// Subnet is the node's Pod range.
func (n Node) Subnet() netip.Prefix { return n.Network.NodeSubnet(n.Index) }

// Gateway is the bridge's address: the node's InternalIP, its Pods'
// gateway, where its kubelet listens.
func (n Node) Gateway() netip.Addr { return n.Subnet().Addr().Next() }

// Socket is containerd's socket.
func (n Node) Socket() string { return n.path("containerd", "containerd.sock") }

// CgroupRoot is the kubelet's cgroup root: each node's Pods live under
// their own, so that the nodes can be told apart and removed.
func (n Node) CgroupRoot() string { return "/crawl-" + n.Name }

// CNINetwork is the name of the node's CNI network.
func (n Node) CNINetwork() string { return "crawl-" + n.Name }

// path is a file of the node's volatile state (removed by Down); logs, pid
// files and the journal stay directly in Dir.
func (n Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.Dir, "state"}, elem...)...)
}

func (n Node) journalPath() string { return filepath.Join(n.Dir, "journal.json") }

func (n Node) kubelet() hostproc.Proc    { return hostproc.Proc{Dir: n.Dir, Name: "kubelet"} }
func (n Node) containerd() hostproc.Proc { return hostproc.Proc{Dir: n.Dir, Name: "containerd"} }

// Chain names of the node's firewall (iptables allows 28 characters).
func (n Node) forwardChain() string { return "CRAWL-FWD-" + n.Bridge }
func (n Node) inputChain() string   { return "CRAWL-IN-" + n.Bridge }

// InternetChain is where a node's firewall sends what its Pods send off
// the cluster, and what comes back: empty, so dropped, until an internet
// (hack/devcluster/internet) accepts its own traffic there.
const InternetChain = "CRAWL-INTERNET"

// Sysctls the kubelet sets (and the bridge plugin: ip_forward); their
// values before are remembered and restored.
var kubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward"}

// Options are what a node needs from outside: binaries, the cluster and
// images to import.
type Options struct {
	KubeletBin string
	Kubeconfig string
	Client     client.Client
	// ImageTars are imported into the node's containerd (imagePullPolicy
	// Never: no registry is ever asked).
	ImageTars []string
	Log       func(format string, args ...any)
}

// Up starts the node and waits until it is a Ready egress node. On failure
// it leaves what it made for Down, which the caller runs.
func Up(ctx context.Context, n Node, o Options) error {
	j, err := hostchange.Open(n.journalPath())
	if err != nil {
		return err
	}
	if len(j.Changes()) > 0 {
		return fmt.Errorf("node %s: %s holds changes of an earlier run: take it down first", n.Name, n.journalPath())
	}
	if err := host(j, n); err != nil {
		return err
	}
	if err := writeConfigs(n); err != nil {
		return err
	}
	if err := startContainerd(ctx, n); err != nil {
		return err
	}
	for _, tar := range o.ImageTars {
		if err := ctr(ctx, n, "images", "import", tar); err != nil {
			return err
		}
	}
	if err := writeKubeletConfig(n); err != nil {
		return err
	}
	if err := startKubelet(n, o); err != nil {
		return err
	}
	return becomeEgressNode(ctx, n, o)
}

// host makes the node's part of the machine: state directory, cgroup root,
// bridge and firewall, each change recorded first.
func host(j *hostchange.Journal, n Node) error {
	changes := []hostchange.Change{
		{Kind: hostchange.Dir, Name: n.path()},
		{Kind: hostchange.Cgroup, Name: n.CgroupRoot()},
		{Kind: hostchange.Link, Name: n.Bridge, Args: []string{"type", "bridge"}},
	}
	for _, s := range kubeletSysctls {
		changes = append(changes, hostchange.Change{Kind: hostchange.Sysctl, Name: s})
	}
	// kube-proxy's Services need bridged traffic to pass iptables (its
	// replies are un-NATed there).
	changes = append(changes,
		hostchange.Change{Kind: hostchange.Sysctl, Name: "net.bridge.bridge-nf-call-iptables", Args: []string{"1"}},
		hostchange.Change{Kind: hostchange.Sysctl, Name: "net.bridge.bridge-nf-call-ip6tables", Args: []string{"1"}})
	changes = append(changes, Firewall(n)...)
	for _, c := range changes {
		if err := j.Do(c); err != nil {
			return err
		}
		if c.Kind == hostchange.Link {
			if err := bridgeUp(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// bridgeUp gives the bridge its address, without IPv6: the bot never
// speaks it, so its Pods have none. Both go with the link.
func bridgeUp(n Node) error {
	for _, args := range [][]string{
		{"sysctl", "-q", "-w", "net.ipv6.conf." + n.Bridge + ".disable_ipv6=1"},
		{"ip", "addr", "add", netip.PrefixFrom(n.Gateway(), n.Subnet().Bits()).String(), "dev", n.Bridge},
		{"ip", "link", "set", n.Bridge, "up"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Firewall is the node's part of the machine's firewall, for both
// families. Its Pods may reach the cluster's Pod ranges (other Pods, the
// gateways where the API server and the dev cluster's helpers listen) and,
// through InternetChain, whatever an internet accepts; nothing else the
// machine forwards, none of the machine's own addresses outside the Pod
// ranges (such as its uplink's, which no Node object lists), and not the
// kubelet's port.
func Firewall(n Node) []hostchange.Change {
	pods := n.Network.PodSubnet.String()
	var out []hostchange.Change
	for _, fam := range []int{4, 6} {
		rule := func(chain string, args ...string) hostchange.Change {
			return hostchange.Change{Kind: hostchange.Rule, Family: fam, Table: "filter", Args: append([]string{"-A", chain}, args...)}
		}
		fwd, in := n.forwardChain(), n.inputChain()
		out = append(out,
			hostchange.Change{Kind: hostchange.Chain, Family: fam, Table: "filter", Name: fwd},
			hostchange.Change{Kind: hostchange.Chain, Family: fam, Table: "filter", Name: in})
		// Answers to what this machine asked (a ClusterIP from the host
		// leaves with the uplink's address) pass; a Pod cannot open a
		// connection that way.
		out = append(out, rule(in, "-i", n.Bridge, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"))
		if fam == 4 {
			out = append(out,
				rule(fwd, "-i", n.Bridge, "-d", pods, "-j", "ACCEPT"),
				rule(fwd, "-o", n.Bridge, "-s", pods, "-j", "ACCEPT"),
				// Any node's Pods, not the machine itself (the API server
				// reaches the kubelet from the gateway's address, on lo).
				rule(in, "!", "-i", "lo", "-s", pods, "-p", "tcp", "--dport", strconv.Itoa(n.KubeletPort), "-j", "DROP"),
				rule(in, "-i", n.Bridge, "-d", pods, "-j", "RETURN"))
		}
		out = append(out,
			rule(fwd, "-i", n.Bridge, "-j", InternetChain),
			rule(fwd, "-o", n.Bridge, "-j", InternetChain),
			rule(fwd, "-i", n.Bridge, "-j", "DROP"),
			rule(fwd, "-o", n.Bridge, "-j", "DROP"),
			rule(in, "-i", n.Bridge, "-j", "DROP"),
			hostchange.Change{Kind: hostchange.Rule, Family: fam, Table: "filter", Args: []string{"-I", "FORWARD", "1", "-j", fwd}},
			hostchange.Change{Kind: hostchange.Rule, Family: fam, Table: "filter", Args: []string{"-I", "INPUT", "1", "-j", in}})
	}
	return out
}

func writeConfigs(n Node) error {
	for _, d := range [][]string{{"containerd"}, {"cni", "net.d"}, {"kubelet", "pki"}, {"pod-logs"}, {"runc"}} {
		if err := os.MkdirAll(n.path(d...), 0o755); err != nil {
			return err
		}
	}
	cd, err := ContainerdConfig(n)
	if err != nil {
		return err
	}
	cni, err := CNIConfig(n)
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.path("containerd", "config.toml"), cd, 0o644); err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "net.d", "10-"+n.CNINetwork()+".conflist"), cni, 0o644)
}

func writeKubeletConfig(n Node) error {
	b, err := kubeletYAML(n)
	if err != nil {
		return err
	}
	return os.WriteFile(n.path("kubelet", "config.yaml"), b, 0o644)
}

// startContainerd starts the node's containerd and waits until it
// answers; one that ends before it answers is started once more, and the
// error says how it ended. (A CI run once reported a containerd ended
// without a word in its log: hostproc.Start then returned before the new
// program's environment, where a process is found, was readable.)
func startContainerd(ctx context.Context, n Node) error {
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		if err = runContainerd(ctx, n); !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}

var errExited = errors.New("exited")

func runContainerd(ctx context.Context, n Node) error {
	p := n.containerd()
	if err := p.Start(nil, "containerd", "--config", n.path("containerd", "config.toml")); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(n.Socket()); err == nil && ctr(ctx, n, "version") == nil {
			return nil
		}
		if _, ok := p.PID(); !ok {
			time.Sleep(100 * time.Millisecond) // its reaper writes how it ended
			_ = os.Remove(p.PIDFile())
			return fmt.Errorf("containerd of %s %w (%s); see %s", n.Name, errExited, p.ExitStatus(), p.LogFile())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd of %s not answering after 20s; see %s", n.Name, p.LogFile())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ctr(ctx context.Context, n Node, args ...string) error {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"-a", n.Socket(), "-n", "k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func startKubelet(n Node, o Options) error {
	return n.kubelet().Start(nil, o.KubeletBin,
		"--config="+n.path("kubelet", "config.yaml"),
		"--kubeconfig="+o.Kubeconfig,
		"--root-dir="+n.path("kubelet"),
		"--cert-dir="+n.path("kubelet", "pki"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.Gateway().String(),
		"--node-labels="+egress.DefaultLabel+"="+egress.DefaultValue,
		"--cloud-provider=external",
		"--v=2")
}

// becomeEgressNode waits until the kubelet has registered a Ready Node,
// then plays the cloud controller manager this control plane lacks: the
// uninitialized taint goes, and the Node gets its public IPv4 as
// ExternalIP (the kubelet keeps it with --cloud-provider=external).
func becomeEgressNode(ctx context.Context, n Node, o Options) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		node := &corev1.Node{}
		err := o.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node)
		if err == nil && ready(node) {
			break
		}
		if _, ok := n.kubelet().PID(); !ok {
			return fmt.Errorf("kubelet of %s exited; the end of %s:\n%s", n.Name, n.kubelet().LogFile(), hostproc.Tail(n.kubelet().LogFile(), 3000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready after 2m; see %s", n.Name, n.kubelet().LogFile())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return SetExternalIP(ctx, o.Client, n.Name, n.ExternalIP)
}

func ready(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// SetExternalIP lifts the taints a cloud controller manager and the node
// lifecycle controller would lift, and makes ip the Node's one ExternalIP.
func SetExternalIP(ctx context.Context, c client.Client, name string, ip netip.Addr) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	before := node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
	})
	if err := c.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return err
	}
	before = node.DeepCopy()
	node.Status.Addresses = slices.DeleteFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool {
		return a.Type == corev1.NodeExternalIP
	})
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip.String()})
	return c.Status().Patch(ctx, node, client.MergeFrom(before))
}

// Down removes the node: its Pods gracefully while the kubelet runs, the
// Node, the processes, whatever still runs in its cgroups, the mounts under
// its state and every recorded change. What it could not remove, it says.
func Down(ctx context.Context, n Node, c client.Client) error {
	if _, ok := n.kubelet().PID(); ok && c != nil {
		drain(ctx, n, c)
	}
	if c != nil {
		// A control plane already gone is no reason to stop.
		_ = client.IgnoreNotFound(c.Delete(ctx, nodeObject(n.Name)))
	}
	var errs []error
	errs = append(errs, PowerOff(n))
	errs = append(errs, unmountUnder(n.Dir))
	j, err := hostchange.Open(n.journalPath())
	if err != nil {
		return err
	}
	errs = append(errs, j.Undo())
	errs = append(errs, removeLogLinks(n.Dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s down: %w", n.Name, err)
	}
	if left := Leftovers(n); len(left) > 0 {
		return fmt.Errorf("node %s down, but left behind: %s", n.Name, strings.Join(left, "; "))
	}
	return nil
}

func nodeObject(name string) *corev1.Node {
	node := &corev1.Node{}
	node.Name = name
	return node
}

// drain deletes the node's Pods and waits up to 40 s for them to go: their
// containers get SIGTERM and their grace period, as on a node being
// drained.
func drain(ctx context.Context, n Node, c client.Client) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	for {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods); err != nil {
			return
		}
		left := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != n.Name {
				continue
			}
			left++
			if p.DeletionTimestamp == nil {
				_ = c.Delete(ctx, p)
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// PowerOff ends the node as a lost machine ends: the kubelet, every
// container, the containerd shims and containerd are killed at once. Its
// state stays, so that Start boots it again.
func PowerOff(n Node) error {
	var errs []error
	errs = append(errs, n.kubelet().Stop(0))
	for _, pid := range hostchange.CgroupProcs(n.CgroupRoot()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for range 3 {
		for _, pid := range shims(n) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(shims(n)) == 0 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	errs = append(errs, n.containerd().Stop(0))
	return errors.Join(errs...)
}

// Start boots a node that PowerOff stopped: containerd, then the kubelet
// with the same configuration; it waits until the Node is Ready again.
func Start(ctx context.Context, n Node, o Options) error {
	if _, ok := n.kubelet().PID(); ok {
		return fmt.Errorf("node %s runs", n.Name)
	}
	if _, err := os.Stat(n.path("kubelet", "config.yaml")); err != nil {
		return fmt.Errorf("node %s was never up here (%w)", n.Name, err)
	}
	if err := unmountUnder(n.path("containerd")); err != nil {
		return err
	}
	if err := startContainerd(ctx, n); err != nil {
		return err
	}
	if err := startKubelet(n, o); err != nil {
		return err
	}
	return becomeEgressNode(ctx, n, o)
}

// shims are the containerd shims serving the node's containerd: their
// command line names its socket.
func shims(n Node) []int {
	return processesWith(func(argv []string) bool {
		return strings.Contains(filepath.Base(argv[0]), "containerd-shim") && slices.Contains(argv, n.Socket())
	})
}

// processesWith lists the processes whose command line matches.
func processesWith(match func(argv []string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); match(argv) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	prefix := filepath.Clean(dir) + "/"
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(unescapeMount(f[4]), prefix) {
			out = append(out, unescapeMount(f[4]))
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out)
}

// unescapeMount reads mountinfo's octal escapes (a space is \040).
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// unmountUnder unmounts everything under dir (overlay root filesystems,
// sandbox shm, ...), deepest first, lazily when busy.
func unmountUnder(dir string) error {
	for range 3 {
		ms := mountsUnder(dir)
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			if err := syscall.Unmount(m, 0); err != nil {
				_ = syscall.Unmount(m, syscall.MNT_DETACH)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	if ms := mountsUnder(dir); len(ms) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(ms, ", "))
	}
	return nil
}

// removeLogLinks removes the kubelet's links in /var/log/containers into
// the node's state.
func removeLogLinks(dir string) error {
	entries, err := os.ReadDir("/var/log/containers")
	if err != nil {
		return nil
	}
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, filepath.Clean(dir)+"/") {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Leftovers lists what of the node is still on the machine: processes,
// container processes, mounts, the bridge, its cgroups and changes its
// journal has not undone.
func Leftovers(n Node) []string {
	var out []string
	for _, p := range []hostproc.Proc{n.kubelet(), n.containerd()} {
		if pid, ok := p.PID(); ok {
			out = append(out, fmt.Sprintf("process %s (pid %d)", p.Name, pid))
		}
	}
	for _, pid := range shims(n) {
		out = append(out, fmt.Sprintf("containerd shim (pid %d)", pid))
	}
	for _, pid := range hostchange.CgroupProcs(n.CgroupRoot()) {
		out = append(out, fmt.Sprintf("container process %d", pid))
	}
	for _, m := range mountsUnder(n.Dir) {
		out = append(out, "mount "+m)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); err == nil {
		out = append(out, "bridge "+n.Bridge)
	}
	for _, d := range hostchange.CgroupDirs(n.CgroupRoot()) {
		out = append(out, "cgroup "+d)
	}
	if j, err := hostchange.Open(n.journalPath()); err == nil {
		for _, c := range j.Changes() {
			out = append(out, "not undone: "+c.String())
		}
	}
	return out
}
