package controllers

import (
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// EgressNode is a Node that owns one of the bot's public IPv4 addresses.
type EgressNode struct {
	Name string
	// IP is the Node's ExternalIP: the source address sites see.
	IP string
	// Running counts the crawls on the node now.
	Running int
}

// EgressFilter says which egress nodes may take crawls beyond being Ready.
type EgressFilter struct {
	// Healthy vetoes nodes that fail the FCrDNS self-check; nil trusts all.
	Healthy func(name string) bool
	// ExpectedIPs, when not empty, are the only source addresses allowed:
	// the ones published to site owners, who may allowlist exactly those.
	ExpectedIPs map[string]bool
	// Selector names the egress nodes; zero means the default label.
	Selector crawlpod.Egress
}

// EgressNodes picks the usable egress nodes out of a Node list: labelled as
// egress, Ready, schedulable, with an IPv4 ExternalIP, and passing the
// filter. Sorted by name.
func EgressNodes(nodes []corev1.Node, f EgressFilter) []EgressNode {
	var out []EgressNode
	for i := range nodes {
		n := &nodes[i]
		if !f.Selector.Selects(n.Labels) || n.Spec.Unschedulable || n.DeletionTimestamp != nil {
			continue
		}
		if !nodeReady(n) {
			continue
		}
		ip := crawlpod.ExternalIPv4(n)
		if ip == "" {
			continue
		}
		if len(f.ExpectedIPs) > 0 && !f.ExpectedIPs[ip] {
			continue
		}
		if f.Healthy != nil && !f.Healthy(n.Name) {
			continue
		}
		out = append(out, EgressNode{Name: n.Name, IP: ip})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ChooseEgressNode picks the node for a site's next crawl. A site keeps its
// current node while that node is usable, even when it must wait for a free
// slot there, so the site always sees the same source IP. Otherwise the least
// loaded node with a free slot wins, ties broken by a hash of the site so
// sites spread evenly and stably. ok is false when nothing is free.
func ChooseEgressNode(nodes []EgressNode, current, siteKey string, maxPerNode int) (EgressNode, bool) {
	for _, n := range nodes {
		if n.Name == current {
			return n, n.Running < maxPerNode
		}
	}
	var best EgressNode
	found := false
	for _, n := range nodes {
		if n.Running >= maxPerNode {
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
