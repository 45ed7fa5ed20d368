package cluster

import (
	"net/netip"
	"strings"
	"testing"
)

func TestPlanNetwork(t *testing.T) {
	p := netip.MustParsePrefix
	cases := []struct {
		name              string
		host              []string
		wantPods, wantSvc netip.Prefix
		pods, svc         string
		err               string
	}{
		{name: "empty machine takes the first candidates", pods: "100.64.212.0/22", svc: "10.96.213.0/24"},
		{name: "a default route reserves nothing", host: []string{"0.0.0.0/0"}, pods: "100.64.212.0/22", svc: "10.96.213.0/24"},
		{name: "the CGNAT space in use moves the Pods on",
			host: []string{"100.64.0.0/10"}, pods: "10.213.44.0/22", svc: "10.96.213.0/24"},
		{name: "a host route inside a candidate counts",
			host: []string{"100.64.214.77/32", "10.96.0.0/12"}, pods: "10.213.44.0/22", svc: "172.30.213.0/24"},
		{name: "all of 10/8 in use",
			host: []string{"10.0.0.0/8", "100.64.0.0/10"}, pods: "172.29.212.0/22", svc: "172.30.213.0/24"},
		{name: "a wanted range is taken as it is", wantPods: p("10.250.0.0/23"), wantSvc: p("10.251.0.7/24"),
			pods: "10.250.0.0/23", svc: "10.251.0.0/24"},
		{name: "a wanted range that overlaps is refused", host: []string{"10.250.0.0/16"}, wantPods: p("10.250.4.0/22"),
			err: "Pod range 10.250.4.0/22 overlaps 10.250.0.0/16 on this machine"},
		{name: "Services may not overlap the Pods", wantPods: p("10.96.212.0/22"), wantSvc: p("10.96.0.0/16"),
			err: "Service range 10.96.0.0/16 overlaps 10.96.212.0/22"},
		{name: "a Pod range smaller than one node's", wantPods: p("10.250.0.0/25"), err: "at least /24"},
		{name: "a Service range too small", wantSvc: p("10.250.0.0/30"), err: "at least /29"},
		{name: "IPv6 refused", wantPods: p("fd00::/64"), err: "IPv4"},
		{name: "nothing free", host: []string{"10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16"},
			err: "no free Pod range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var host []netip.Prefix
			for _, h := range c.host {
				host = append(host, p(h))
			}
			n, err := PlanNetwork(host, c.wantPods, c.wantSvc)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.PodSubnet.String() != c.pods || n.ServiceCIDR.String() != c.svc {
				t.Fatalf("plan = %s, %s; want %s, %s", n.PodSubnet, n.ServiceCIDR, c.pods, c.svc)
			}
		})
	}
}

func TestNetworkAddresses(t *testing.T) {
	n := Network{PodSubnet: netip.MustParsePrefix("100.64.212.0/22"), ServiceCIDR: netip.MustParsePrefix("10.96.213.0/24")}
	for got, want := range map[string]string{
		n.NodeSubnet(0).String():  "100.64.212.0/24",
		n.NodeSubnet(1).String():  "100.64.213.0/24",
		n.NodeSubnet(3).String():  "100.64.215.0/24",
		n.Gateway().String():      "100.64.212.1",
		n.APIServiceIP().String(): "10.96.213.1",
		n.DNSIP().String():        "10.96.213.10",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if n.MaxNodes() != 4 {
		t.Errorf("MaxNodes = %d, want 4", n.MaxNodes())
	}
	// A range that ends at a byte boundary carries into the next octet.
	if got := (Network{PodSubnet: netip.MustParsePrefix("10.0.255.0/24")}).NodeSubnet(1).String(); got != "10.1.0.0/24" {
		t.Errorf("NodeSubnet(1) of 10.0.255.0/24 = %s, want 10.1.0.0/24", got)
	}
}

func TestRoutePrefix(t *testing.T) {
	for dst, want := range map[string]string{
		"default": "", "": "", "192.0.2.7": "192.0.2.7/32", "192.0.2.0/24": "192.0.2.0/24",
		"192.0.2.9/24": "192.0.2.0/24", "fe80::/64": "", "broadcast": "",
	} {
		p, ok := routePrefix(dst)
		got := ""
		if ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("routePrefix(%q) = %q, want %q", dst, got, want)
		}
	}
}

// HostNetworks reads this machine: whatever it has, its loopback is there.
func TestHostNetworksSeesLoopback(t *testing.T) {
	nets, err := HostNetworks()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		if n.Contains(netip.MustParseAddr("127.0.0.1")) {
			return
		}
	}
	t.Fatalf("HostNetworks() = %v, without 127.0.0.0/8", nets)
}
