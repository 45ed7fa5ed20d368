package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Network is the address plan of a cluster with a real node: the Pods'
// range on the node's bridge and the Services' virtual range. Neither may
// overlap a network this machine has or routes to, or a Pod could reach
// (and kube-proxy would capture) the machine's own neighbours.
type Network struct {
	PodSubnet   netip.Prefix
	ServiceCIDR netip.Prefix
}

// Gateway is the bridge's address: where Pods reach the machine, the API
// server among it.
func (n Network) Gateway() netip.Addr { return n.PodSubnet.Masked().Addr().Next() }

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

// Env is the plan as shell assignments, read by hack/dev-cluster.sh and
// hack/realnode.sh.
func (n Network) Env() string {
	return fmt.Sprintf("RN_SUBNET=%s\nRN_GW=%s\nRN_SERVICE_CIDR=%s\nRN_API_SERVICE_IP=%s\nRN_CLUSTER_DNS=%s\n",
		n.PodSubnet, n.Gateway(), n.ServiceCIDR, n.APIServiceIP(), n.DNSIP())
}

// Candidate ranges, tried in order. Pods: /24s in the shared-address,
// private and CGNAT spaces, unlikely to be in use; Services: /24s likewise.
var (
	PodSubnetCandidates = prefixes("100.64.213.0/24", "10.213.47.0/24", "172.29.213.0/24",
		"192.168.213.0/24", "100.127.213.0/24")
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
	pods, err := choose("Pod range", host, wantPods, PodSubnetCandidates)
	if err != nil {
		return Network{}, err
	}
	svcs, err := choose("Service range", append(host, pods), wantServices, ServiceCIDRCandidates)
	if err != nil {
		return Network{}, err
	}
	return Network{PodSubnet: pods, ServiceCIDR: svcs}, nil
}

func choose(what string, taken []netip.Prefix, want netip.Prefix, candidates []netip.Prefix) (netip.Prefix, error) {
	if want.IsValid() {
		candidates = []netip.Prefix{want.Masked()}
	}
	for _, c := range candidates {
		if !c.Addr().Is4() || c.Bits() > 29 {
			return netip.Prefix{}, fmt.Errorf("%s %s: want an IPv4 range of at least 8 addresses", what, c)
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
