package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Network is the address plan of a cluster with real nodes: the Pods'
// range, a /24 of it on each node's bridge, and the Services' virtual
// range. Neither may overlap a network this machine has or routes to, or a
// Pod could reach (and kube-proxy would capture) the machine's own
// neighbours.
type Network struct {
	PodSubnet   netip.Prefix
	ServiceCIDR netip.Prefix
}

// NodeBits is the size of each node's Pod range.
const NodeBits = 24

// MaxNodes is how many nodes' ranges the Pod range holds.
func (n Network) MaxNodes() int {
	if n.PodSubnet.Bits() > NodeBits {
		return 0
	}
	return 1 << (NodeBits - n.PodSubnet.Bits())
}

// NodeSubnet is the i-th node's Pod range (from 0).
func (n Network) NodeSubnet(i int) netip.Prefix {
	a := n.PodSubnet.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i) << (32 - NodeBits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), NodeBits)
}

// Gateway is the first node's bridge address: where Pods reach the
// machine's API server (the kubernetes Service's endpoint).
func (n Network) Gateway() netip.Addr { return n.NodeSubnet(0).Addr().Next() }

// APIServiceIP is the ClusterIP of the `kubernetes` Service (the API server
// takes the first address of its range).
func (n Network) APIServiceIP() netip.Addr { return n.ServiceCIDR.Masked().Addr().Next() }

// DNSIP is the ClusterIP of the `kube-dns` Service, the tenth address of
// the range as in kubeadm and kind.
func (n Network) DNSIP() netip.Addr {
	a := n.ServiceCIDR.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	return a
}

// Candidate ranges, tried in order. Pods: /22s (four nodes) in the
// shared-address, private and CGNAT spaces, unlikely to be in use;
// Services: /24s likewise.
var (
	PodSubnetCandidates = prefixes("100.64.212.0/22", "10.213.44.0/22", "172.29.212.0/22",
		"192.168.216.0/22", "100.127.212.0/22")
	ServiceCIDRCandidates = prefixes("10.96.213.0/24", "172.30.213.0/24", "100.126.213.0/24",
		"192.168.214.0/24")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// PlanNetwork picks the first Pod range and the first Service range that
// overlap none of the machine's networks nor each other. A wanted range
// (non-zero) is taken as it is, or refused when it overlaps.
func PlanNetwork(host []netip.Prefix, wantPods, wantServices netip.Prefix) (Network, error) {
	pods, err := choose("Pod range", NodeBits, host, wantPods, PodSubnetCandidates)
	if err != nil {
		return Network{}, err
	}
	svcs, err := choose("Service range", 29, append(host, pods), wantServices, ServiceCIDRCandidates)
	if err != nil {
		return Network{}, err
	}
	return Network{PodSubnet: pods, ServiceCIDR: svcs}, nil
}

func choose(what string, maxBits int, taken []netip.Prefix, want netip.Prefix, candidates []netip.Prefix) (netip.Prefix, error) {
	if want.IsValid() {
		candidates = []netip.Prefix{want.Masked()}
	}
	for _, c := range candidates {
		if !c.Addr().Is4() || c.Bits() > maxBits {
			return netip.Prefix{}, fmt.Errorf("%s %s: want an IPv4 range of at least /%d", what, c, maxBits)
		}
		if t, ok := overlapping(c, taken); ok {
			if want.IsValid() {
				return netip.Prefix{}, fmt.Errorf("%s %s overlaps %s on this machine", what, c, t)
			}
			continue
		}
		return c, nil
	}
	return netip.Prefix{}, fmt.Errorf("no free %s among %v", what, candidates)
}

func overlapping(p netip.Prefix, taken []netip.Prefix) (netip.Prefix, bool) {
	for _, t := range taken {
		if t.Bits() == 0 {
			continue // a default route covers everything and reserves nothing
		}
		if p.Overlaps(t) {
			return t, true
		}
	}
	return netip.Prefix{}, false
}

// HostNetworks lists every IPv4 network this machine has an address in or
// a route to, in every routing table (`ip -json`).
func HostNetworks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	addrs, err := ipJSON("-4", "-json", "addr", "show")
	if err != nil {
		return nil, err
	}
	for _, l := range addrs {
		for _, a := range l.AddrInfo {
			if p, err := netip.ParsePrefix(fmt.Sprintf("%s/%d", a.Local, a.PrefixLen)); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	routes, err := ipJSON("-4", "-json", "route", "show", "table", "all")
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		if p, ok := routePrefix(r.Dst); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// routePrefix reads `ip -json route`'s dst: "default", an address (a /32)
// or a prefix.
func routePrefix(dst string) (netip.Prefix, bool) {
	if dst == "" || dst == "default" {
		return netip.Prefix{}, false
	}
	if !strings.Contains(dst, "/") {
		a, err := netip.ParseAddr(dst)
		if err != nil || !a.Is4() {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(a, 32), true
	}
	p, err := netip.ParsePrefix(dst)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

type ipEntry struct {
	Dst      string `json:"dst"`
	AddrInfo []struct {
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

func ipJSON(args ...string) ([]ipEntry, error) {
	b, err := exec.Command("ip", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	var out []ipEntry
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
