package egress

import (
	"hash/fnv"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// ExternalIPv4 returns the first IPv4 ExternalIP of a Node, or "": the
// public address an egress node crawls from.
func ExternalIPv4(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip.String()
		}
	}
	return ""
}

// Node is an egress node that may take crawls now.
type Node struct {
	Name string
	// IP is the Node's ExternalIP: the source address sites see.
	IP string
	// Running counts the crawls on the node now.
	Running int
	// Probation is set on a node back from a quarantine (Quarantine): it
	// takes one crawl at a time until a crawl there verifies its address.
	Probation bool
}

// Slots is how many crawls the node may run at once, of maxPerNode.
func (n Node) Slots(maxPerNode int) int {
	if n.Probation {
		return min(1, maxPerNode)
	}
	return maxPerNode
}

// Free is how many more crawls the node may start now.
func (n Node) Free(maxPerNode int) int { return max(0, n.Slots(maxPerNode)-n.Running) }

// Address is one published source address of the bot, with the hostname
// the FCrDNS self-check verified for it ("" when none).
type Address struct {
	IP       string
	Hostname string
}

// Policy decides, from the Nodes, where crawls may run and which addresses
// the bot publishes. Both answers come from the same rules so that
// /bot/ips.json lists exactly the addresses crawls can come from.
type Policy struct {
	// Selector names the egress nodes; zero means the default label.
	Selector Selector
	// Expected, when not empty, are the only addresses crawls may use.
	Expected Addresses
	// RequireFCrDNS keeps crawls off, and leaves out of the published
	// list, every address without a verified FCrDNS hostname.
	RequireFCrDNS bool
	// Verified returns the hostname the self-check verified for node at
	// exactly ip, or "". Nil means nothing is verified.
	Verified func(node, ip string) string
	// Changes receives a node whenever its self-check result changes, so
	// crawls waiting for a verified node start when it is, not at the
	// crawl queue's next resync. Nil means no such news.
	Changes <-chan event.GenericEvent
}

// source is the part both answers share: a labelled, live Node with an
// allowed IPv4 ExternalIP and, when required, a verified hostname.
func (p Policy) source(n *corev1.Node) (Address, bool) {
	if !p.Selector.Selects(n.Labels) || n.DeletionTimestamp != nil {
		return Address{}, false
	}
	ip := ExternalIPv4(n)
	if ip == "" || !p.Expected.Allows(ip) {
		return Address{}, false
	}
	var hostname string
	if p.Verified != nil {
		hostname = p.Verified(n.Name, ip)
	}
	if p.RequireFCrDNS && hostname == "" {
		return Address{}, false
	}
	return Address{IP: ip, Hostname: hostname}, true
}

// MayCrawl returns the egress nodes that may take crawls now, sorted by
// name: sources that are also Ready and schedulable.
func (p Policy) MayCrawl(nodes []corev1.Node) []Node {
	var out []Node
	for i := range nodes {
		n := &nodes[i]
		a, ok := p.source(n)
		if !ok || n.Spec.Unschedulable || !ready(n) || lifecycleTainted(n) {
			continue
		}
		out = append(out, Node{Name: n.Name, IP: a.IP})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Published returns the addresses the bot publishes, in Node order. Nodes
// that are NotReady or cordoned stay listed: the address is still the
// bot's, crawls running there still come from it, and a list that flaps
// with node health would make site owners' firewalls flap too.
func (p Policy) Published(nodes []corev1.Node) []Address {
	var out []Address
	for i := range nodes {
		if a, ok := p.source(&nodes[i]); ok {
			out = append(out, a)
		}
	}
	return out
}

// ready is false for a Ready condition that is False, Unknown (the node
// lifecycle controller's word for a kubelet that stopped reporting) or
// missing.
func ready(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// lifecycleTainted reports the node lifecycle controller's taints. They
// follow the Ready condition, but for a moment they can disagree (a node
// Ready again whose taint is not yet removed, or the other way round); a
// crawl started then would not be scheduled (crawler Pods do not tolerate
// them) and would hold a slot for nothing.
func lifecycleTainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			return true
		}
	}
	return false
}

// Choose picks the node for a site's next crawl. A site keeps its current
// node while that node may take crawls, even when it must wait for a free
// slot there, so the site always sees the same source IP. Otherwise the
// least loaded node with a free slot wins, ties broken by a hash of the
// site so sites spread evenly and stably. ok is false when nothing is free.
func Choose(nodes []Node, current, siteKey string, maxPerNode int) (Node, bool) {
	for _, n := range nodes {
		if n.Name == current {
			return n, n.Free(maxPerNode) > 0
		}
	}
	var best Node
	found := false
	for _, n := range nodes {
		if n.Free(maxPerNode) == 0 {
			continue
		}
		if !found || n.Running < best.Running ||
			(n.Running == best.Running && rendezvous(siteKey, n.Name) > rendezvous(siteKey, best.Name)) {
			best, found = n, true
		}
	}
	return best, found
}

func rendezvous(key, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(node))
	return h.Sum64()
}
