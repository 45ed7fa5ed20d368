package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostchange"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
)

// Fleet is the dev cluster's real nodes and the address plan they share,
// kept in Dir/fleet.json from Plan on, so that every later command (the
// control plane, up, down, stop, start) reads the same plan.
type Fleet struct {
	Dir     string          `json:"dir"`
	Network cluster.Network `json:"network"`
	Nodes   []Node          `json:"nodes"`
}

// Spec names the fleet's nodes: Name-1, Name-2, ... with bridges
// BridgePrefix1, BridgePrefix2, ..., each owning the next of the egress
// addresses.
type Spec struct {
	Count        int
	NamePrefix   string
	BridgePrefix string
	ExternalIPs  []netip.Addr
	// PodSubnet and ServiceCIDR are taken as they are when set; otherwise
	// free ranges of this machine are chosen.
	PodSubnet, ServiceCIDR netip.Prefix
}

// DefaultSpec is one node, realnode-1 on bridge crawlrn1, owning the bot's
// first address; Count 2 adds realnode-2 with the second.
func DefaultSpec() Spec {
	var ips []netip.Addr
	for _, n := range cluster.DefaultEgressNodes {
		ips = append(ips, netip.MustParseAddr(n.IP))
	}
	return Spec{Count: 1, NamePrefix: "realnode", BridgePrefix: "crawlrn", ExternalIPs: ips}
}

// PlanFleet names the nodes and their ranges; host is this machine's
// networks (cluster.HostNetworks).
func PlanFleet(dir string, s Spec, host []netip.Prefix) (Fleet, error) {
	if s.Count < 1 || s.Count > len(s.ExternalIPs) {
		return Fleet{}, fmt.Errorf("%d nodes: want 1 to %d, one for each egress address", s.Count, len(s.ExternalIPs))
	}
	if len(s.BridgePrefix)+len(fmt.Sprint(s.Count)) > 15 {
		return Fleet{}, fmt.Errorf("bridge prefix %q: a link name has at most 15 characters", s.BridgePrefix)
	}
	network, err := cluster.PlanNetwork(host, s.PodSubnet, s.ServiceCIDR)
	if err != nil {
		return Fleet{}, err
	}
	if network.MaxNodes() < s.Count {
		return Fleet{}, fmt.Errorf("Pod range %s holds %d nodes' /24s, not %d", network.PodSubnet, network.MaxNodes(), s.Count)
	}
	f := Fleet{Dir: dir, Network: network}
	for i := range s.Count {
		name := fmt.Sprintf("%s-%d", s.NamePrefix, i+1)
		f.Nodes = append(f.Nodes, Node{
			Name: name, ExternalIP: s.ExternalIPs[i], Index: i,
			Bridge: fmt.Sprintf("%s%d", s.BridgePrefix, i+1), Dir: filepath.Join(dir, name), Network: network,
		})
	}
	return f, nil
}

func fleetFile(dir string) string { return filepath.Join(dir, "fleet.json") }

// Save writes the plan.
func (f Fleet) Save() error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(fleetFile(f.Dir), b, 0o644)
}

// LoadFleet reads the plan of the fleet in dir.
func LoadFleet(dir string) (Fleet, error) {
	b, err := os.ReadFile(fleetFile(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Fleet{}, fmt.Errorf("no real nodes planned in %s (make dev-cluster REAL_NODE=1)", dir)
		}
		return Fleet{}, err
	}
	var f Fleet
	if err := json.Unmarshal(b, &f); err != nil {
		return Fleet{}, fmt.Errorf("%s: %w", fleetFile(dir), err)
	}
	return f, nil
}

// Planned reports whether dir holds a fleet's plan or its remains.
func Planned(dir string) bool {
	_, err := os.Stat(fleetFile(dir))
	return err == nil || hostchange.Exists(filepath.Join(dir, "journal.json"))
}

// Node finds a node of the fleet by name.
func (f Fleet) Node(name string) (Node, error) {
	var names []string
	for _, n := range f.Nodes {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	return Node{}, fmt.Errorf("no node %q in the dev cluster (it has %s)", name, strings.Join(names, ", "))
}

func (f Fleet) journalPath() string  { return filepath.Join(f.Dir, "journal.json") }
func (f Fleet) snapshotPath() string { return filepath.Join(f.Dir, "machine-before.json") }

// Up takes the machine's snapshot, makes what the nodes share (the chain
// an internet fills) and brings every node up, in order.
func (f Fleet) Up(ctx context.Context, o Options) error {
	if err := hostchange.Take().Save(f.snapshotPath()); err != nil {
		return err
	}
	j, err := hostchange.Open(f.journalPath())
	if err != nil {
		return err
	}
	if err := j.Do(hostchange.Change{Kind: hostchange.SharedMount, Name: hostchange.NetnsDir}); err != nil {
		return err
	}
	for _, fam := range []int{4, 6} {
		if err := j.Do(hostchange.Change{Kind: hostchange.Chain, Family: fam, Table: "filter", Name: InternetChain}); err != nil {
			return err
		}
	}
	for i := range f.Nodes {
		n := &f.Nodes[i]
		if n.KubeletPort == 0 {
			ports, err := freePort()
			if err != nil {
				return err
			}
			n.KubeletPort = ports
			if err := f.Save(); err != nil {
				return err
			}
		}
		o.Log("starting real node %s: Pods %s on bridge %s (%s), egress %s, kubelet :%d", n.Name, n.Subnet(), n.Bridge, n.Gateway(), n.ExternalIP, n.KubeletPort)
		if err := Up(ctx, *n, o); err != nil {
			return err
		}
	}
	return nil
}

// Down removes every node, newest first, then what they shared, then what
// the kubelets, kube-proxy and the CNI plugins made that the snapshot did
// not hold; the plan goes last. What it could not remove, it says.
func (f Fleet) Down(ctx context.Context, o Options) error {
	var errs []error
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		errs = append(errs, Down(ctx, f.Nodes[i], o.Client))
	}
	j, err := hostchange.Open(f.journalPath())
	if err != nil {
		return err
	}
	errs = append(errs, j.Undo())
	if snap, ok, err := hostchange.LoadSnapshot(f.snapshotPath()); err != nil {
		errs = append(errs, err)
	} else if ok {
		errs = append(errs, snap.Sweep())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left := f.Leftovers(); len(left) > 0 {
		return fmt.Errorf("real nodes down, but left behind:\n  %s", strings.Join(left, "\n  "))
	}
	for _, n := range f.Nodes {
		_ = os.RemoveAll(n.path())
	}
	_ = os.Remove(f.snapshotPath())
	return os.Remove(fleetFile(f.Dir))
}

// Leftovers lists what of the fleet is still on the machine.
func (f Fleet) Leftovers() []string {
	var out []string
	for _, n := range f.Nodes {
		out = append(out, Leftovers(n)...)
	}
	if j, err := hostchange.Open(f.journalPath()); err == nil {
		for _, c := range j.Changes() {
			out = append(out, "not undone: "+c.String())
		}
	}
	if snap, ok, _ := hostchange.LoadSnapshot(f.snapshotPath()); ok {
		out = append(out, snap.New().Lines()...)
	}
	return out
}

func freePort() (int, error) {
	p, err := hostproc.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
