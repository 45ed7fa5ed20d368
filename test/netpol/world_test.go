package netpol

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	corev1 "k8s.io/api/core/v1"
)

// A flow is one connection and whether the policies must let it through.
// The evaluator sees addresses after Service translation, as enforcing
// CNIs do: a connection to a Service is a connection to one of its
// endpoints.
type flow struct {
	name string
	// group says which promise the flow checks; the hostile and mutation
	// tests name groups.
	group    string
	from, to *matcher.TrafficPeer
	port     int
	portName string
	proto    corev1.Protocol
	allowed  bool
	// fromCrawler and toCrawler say whether a crawler Pod sends or
	// receives: a connection between two crawlers needs both policies.
	fromCrawler, toCrawler bool
}

const (
	groupPublic    = "public IPv4, any port"
	groupReserved  = "private and reserved IPv4, IPv6"
	groupNode      = "nodes and the API server"
	groupEgressIP  = "egress nodes' published IPs"
	groupExcept    = "networkPolicy.extraExceptCIDRs"
	groupDialer    = "as the crawler's dialer judges it"
	groupPods      = "other Pods"
	groupDNS       = "cluster DNS"
	groupManager   = "the manager's Pods"
	groupIngress   = "connections to a crawler"
	tcp, udp       = corev1.ProtocolTCP, corev1.ProtocolUDP
	resultsPort    = "results" // the name of the manager's results port
	crawlerIP      = "10.244.1.10"
	otherCrawlerIP = "10.244.1.11"
)

// The cluster around the crawler Pods is shaped like a kind cluster's:
// Pods in 10.244.0.0/16, Services in 10.96.0.0/12, the node and the API
// server's endpoint on the node network.
const (
	nodeIP       = "172.18.0.2"
	apiServiceIP = "10.96.0.1"
)

// host is an address outside every Pod.
type host struct {
	ip    string
	port  int
	proto corev1.Protocol
	why   string
}

// Public addresses crawler Pods must reach on any port: websites, the
// neighbours of the default egress IPs, a public resolver.
var publicHosts = []host{
	{"79.139.58.1", 443, tcp, "HTTPS"},
	{"79.139.58.97", 80, tcp, "next to an egress IP"},
	{"79.139.58.122", 8443, tcp, "next to an egress IP"},
	{"8.8.8.8", 443, tcp, "HTTPS"},
	{"8.8.8.8", 53, udp, "a public resolver"},
	{"1.1.1.1", 80, tcp, "HTTP"},
	{"1.1.1.1", 443, udp, "QUIC"},
	{"93.184.215.14", 8080, tcp, "a high port"},
	{"151.101.1.69", 65535, tcp, "the highest port"},
	{"203.0.114.1", 1, tcp, "the lowest port"},
	{"192.31.196.1", 80, tcp, "AS112-v4: special-purpose, globally reachable"},
}

// Addresses that are not the public IPv4 internet.
var reservedHosts = []host{
	{"10.0.0.1", 80, tcp, "10/8"},
	{"10.255.255.254", 443, tcp, "10/8"},
	{"172.16.0.1", 80, tcp, "172.16/12"},
	{"172.31.255.254", 443, tcp, "172.16/12"},
	{"192.168.0.1", 80, tcp, "192.168/16"},
	{"192.168.255.254", 8443, tcp, "192.168/16"},
	{"100.64.0.1", 80, tcp, "100.64/10, CGNAT"},
	{"100.127.255.254", 443, tcp, "100.64/10, CGNAT"},
	{"169.254.169.254", 80, tcp, "cloud metadata"},
	{"169.254.0.1", 53, udp, "link-local"},
	{"127.0.0.1", 8080, tcp, "loopback"},
	{"127.255.255.254", 22, tcp, "loopback"},
	{"0.0.0.1", 80, tcp, "0/8"},
	{"192.0.0.8", 80, tcp, "192.0.0/24"},
	{"192.0.0.9", 5351, udp, "PCP anycast: the NAT in front of the Pod"},
	{"192.0.2.2", 10256, tcp, "documentation; the development machine's own address"},
	{"198.51.100.1", 443, tcp, "documentation"},
	{"203.0.113.255", 80, tcp, "documentation"},
	{"192.88.99.1", 80, tcp, "6to4 relay anycast"},
	{"198.18.0.1", 80, tcp, "benchmarking"},
	{"224.0.0.251", 5353, udp, "multicast"},
	{"255.255.255.255", 67, udp, "broadcast"},
	{"2606:4700:4700::1111", 443, tcp, "public IPv6"},
	{"fd00::1", 80, tcp, "private IPv6"},
	{"::1", 80, tcp, "IPv6 loopback"},
}

// The node and the API server, seen from a Pod.
var nodeHosts = []host{
	{nodeIP, 10250, tcp, "the node's kubelet"},
	{nodeIP, 30080, tcp, "a NodePort"},
	{nodeIP, 22, tcp, "the node's SSH"},
	{apiServiceIP, 443, tcp, "the kubernetes Service"},
	{nodeIP, 6443, tcp, "the API server's endpoint"},
}

func podPeer(namespace string, labels map[string]string, ip string) *matcher.TrafficPeer {
	return &matcher.TrafficPeer{IP: ip, Internal: &matcher.InternalPeer{
		Namespace: namespace,
		// The API server sets this label on every namespace.
		NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": namespace},
		PodLabels:       labels,
	}}
}

func hostPeer(ip string) *matcher.TrafficPeer { return &matcher.TrafficPeer{IP: ip} }

// flows are the connections to check for a crawler Pod in namespace ns of
// the cluster f was installed in.
func (f *fixture) flows(t *testing.T, ns string) []flow {
	t.Helper()
	crawler := podPeer(ns, f.CrawlerPodLabels, crawlerIP)
	var out []flow
	toHosts := func(group string, allowed bool, hosts []host) {
		for _, h := range hosts {
			out = append(out, flow{name: fmt.Sprintf("%s:%d/%s (%s)", h.ip, h.port, h.proto, h.why), group: group,
				from: crawler, to: hostPeer(h.ip), port: h.port, proto: h.proto, allowed: allowed})
		}
	}
	toHosts(groupPublic, true, f.outsideExcepts(t, publicHosts))
	toHosts(groupReserved, false, reservedHosts)
	toHosts(groupNode, false, nodeHosts)
	for _, ip := range f.EgressIPs {
		toHosts(groupEgressIP, false, []host{{ip, 10250, tcp, "an egress node's kubelet"}, {ip, 30080, tcp, "an egress node's NodePort"}})
	}
	for _, cidr := range f.ExtraExceptCIDRs {
		first, last := bounds(t, cidr)
		toHosts(groupExcept, false, []host{{first, 443, tcp, "first of " + cidr}, {last, 80, tcp, "last of " + cidr}})
	}
	if len(f.DialerVerdicts) == 0 {
		t.Fatalf("scenario %s has no dialer verdicts: run `make netpol-fixtures`", f.Scenario)
	}
	excepts := f.ownExcepts()
	for _, v := range f.DialerVerdicts {
		// What the dialer refuses the policies refuse; what it allows
		// they allow, unless the install keeps crawlers from it too.
		allowed := v.Allowed && !slices.ContainsFunc(excepts, func(p netip.Prefix) bool { return p.Contains(netip.MustParseAddr(v.Addr)) })
		toHosts(groupDialer, allowed, []host{{v.Addr, 443, tcp, v.Where}})
	}

	toPod := func(group, what string, to *matcher.TrafficPeer, port int, portName string, proto corev1.Protocol, allowed bool) {
		out = append(out, flow{name: fmt.Sprintf("%s :%d/%s", what, port, proto), group: group,
			from: crawler, to: to, port: port, portName: portName, proto: proto, allowed: allowed})
	}
	manager := podPeer(f.Manager.Namespace, f.Manager.PodLabels, "10.244.0.20")
	results := 0
	for _, p := range f.Manager.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = tcp // the API server's default
		}
		// The results endpoint only: /bot, search, metrics and probes
		// are not for crawlers.
		toPod(groupManager, "manager Pod, port "+p.Name, manager, int(p.ContainerPort), p.Name, proto, p.Name == resultsPort)
		if p.Name == resultsPort {
			results = int(p.ContainerPort)
			toPod(groupManager, "manager Pod, results port over UDP", manager, results, p.Name, udp, false)
		}
	}
	if results == 0 {
		t.Fatalf("the manager's Pod has no port named %q: %v", resultsPort, f.Manager.Ports)
	}
	toPod(groupManager, "another Pod in the manager's namespace", podPeer(f.Manager.Namespace, map[string]string{"app": "postgres"}, "10.244.0.21"), results, "", tcp, false)
	toPod(groupManager, "a Pod with the manager's labels in the crawler's namespace", podPeer(ns, f.Manager.PodLabels, "10.244.1.20"), results, "", tcp, false)

	dns := podPeer(f.DNSNamespace, f.DNSPodLabels, "10.244.0.10")
	toPod(groupDNS, "DNS Pod", dns, 53, "dns", udp, true)
	toPod(groupDNS, "DNS Pod", dns, 53, "dns-tcp", tcp, true)
	toPod(groupDNS, "DNS Pod, metrics", dns, 9153, "metrics", tcp, false)
	toPod(groupDNS, "DNS Pod, health", dns, 8080, "", tcp, false)
	toPod(groupDNS, "DNS Pod, mDNS port", dns, 5353, "", udp, false)
	toPod(groupDNS, "another Pod in the DNS namespace", podPeer(f.DNSNamespace, map[string]string{"k8s-app": "metrics-server"}, "10.244.0.11"), 53, "", udp, false)
	toPod(groupDNS, "a Pod with the DNS labels in the crawler's namespace", podPeer(ns, f.DNSPodLabels, "10.244.1.21"), 53, "", udp, false)

	web := podPeer(ns, map[string]string{"app": "web"}, "10.244.1.30")
	elsewhere := podPeer("other", map[string]string{"app": "web"}, "10.244.2.30")
	otherCrawler := podPeer(ns, f.CrawlerPodLabels, otherCrawlerIP)
	toPod(groupPods, "a Pod in the crawler's namespace", web, 80, "http", tcp, false)
	toPod(groupPods, "a Pod in another namespace", elsewhere, 80, "http", tcp, false)
	toPod(groupPods, "another crawler Pod", otherCrawler, 8080, "", tcp, false)

	// Nothing may connect to a crawler, on any port.
	for _, src := range []struct {
		what string
		peer *matcher.TrafficPeer
	}{
		{"a Pod in the crawler's namespace", web},
		{"a Pod in another namespace", elsewhere},
		{"another crawler Pod", otherCrawler},
		{"the manager", manager},
		{"the DNS Pod", dns},
		{"the internet", hostPeer("8.8.8.8")},
		// The policy's word: CNIs let a Pod's own node in whatever it
		// says, which the evaluator does not model (limits_test.go).
		{"the node", hostPeer(nodeIP)},
	} {
		for _, port := range []int{8080, 443} {
			out = append(out, flow{name: fmt.Sprintf("from %s to the crawler :%d/TCP", src.what, port), group: groupIngress,
				from: src.peer, to: crawler, port: port, proto: tcp, allowed: false})
		}
	}
	for i := range out {
		out[i].fromCrawler, out[i].toCrawler = f.isCrawler(out[i].from), f.isCrawler(out[i].to)
	}
	return out
}

func (f *fixture) isCrawler(p *matcher.TrafficPeer) bool {
	return p.Internal != nil && maps.Equal(p.Internal.PodLabels, f.CrawlerPodLabels)
}

// outsideExcepts refuses a public host that the scenario's values put out
// of reach: the table of public hosts must not overlap them, or a verdict
// would say nothing.
func (f *fixture) outsideExcepts(t *testing.T, hosts []host) []host {
	t.Helper()
	for _, h := range hosts {
		for _, p := range f.ownExcepts() {
			if p.Contains(netip.MustParseAddr(h.ip)) {
				t.Fatalf("public host %s is in %s, which scenario %s keeps crawlers from: pick another", h.ip, p, f.Scenario)
			}
		}
	}
	return hosts
}

// ownExcepts are the ranges the install's values keep crawlers from: the
// egress IPs and networkPolicy.extraExceptCIDRs.
func (f *fixture) ownExcepts() []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range f.EgressIPs {
		out = append(out, netip.PrefixFrom(netip.MustParseAddr(ip), 32))
	}
	for _, c := range f.ExtraExceptCIDRs {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}

// bounds are the first and last addresses of an IPv4 CIDR.
func bounds(t *testing.T, cidr string) (string, string) {
	t.Helper()
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		t.Fatalf("extraExceptCIDRs: %q is not an IPv4 CIDR", cidr)
	}
	a := p.Masked().Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n |= 1<<(32-p.Bits()) - 1
	return p.Masked().Addr().String(), netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}
