// Package crawlqueue decides which due CrawlTargets may start a crawl now:
// at most MaxPerNode crawls on each egress node, one crawl per host
// fleet-wide, and the oldest due target first. It keeps, in memory, the
// slots crawler Pods hold (from the cache, plus the Pods the manager has
// created and the cache has not shown yet) and the targets waiting for
// one, and wakes exactly the waiting targets that can start when a crawl
// ends, a node changes or a waiting target leaves. Nothing in it reads
// the API server.
package crawlqueue

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lohisoft/crawl-operator/internal/egress"
)

// Slot is what one unfinished crawler Pod holds: a crawl slot on its node
// and its host.
type Slot struct {
	Pod    types.NamespacedName
	Node   string
	Host   string
	Target types.UID
}

// Waiter is a CrawlTarget that is due for a crawl.
type Waiter struct {
	Target types.NamespacedName
	// Due is when the crawl became due; the oldest due goes first.
	Due time.Time
	// Host is the host hash: one crawl per host at a time.
	Host string
	// Site is the site key that spreads sites over nodes (egress.Choose).
	Site string
	// Node is the site's current egress node, kept while it is usable.
	Node string
}

// before orders waiters: the oldest due first, then by namespace/name so
// the order is total and stable.
func (w Waiter) before(o Waiter) bool {
	if !w.Due.Equal(o.Due) {
		return w.Due.Before(o.Due)
	}
	if w.Target.Namespace != o.Target.Namespace {
		return w.Target.Namespace < o.Target.Namespace
	}
	return w.Target.Name < o.Target.Name
}

// Wait says why a waiter cannot start now.
type Wait int

const (
	// NoNode: no egress node may take crawls.
	NoNode Wait = iota + 1
	// HostBusy: a crawl of the host runs (Decision.HostPod).
	HostBusy
	// NodeFull: the site's node runs MaxPerNode crawls (Decision.Node).
	NodeFull
	// AllFull: every node runs MaxPerNode crawls.
	AllFull
	// Behind: a slot and the host are free, but older waiters take them
	// first.
	Behind
)

// Decision is what a waiter is told: Wait is zero when it may start on
// Node.
type Decision struct {
	Wait Wait
	// Node is where the crawl starts, or the full node the site keeps
	// (NodeFull).
	Node egress.Node
	// HostPod is the namespace/name of the Pod crawling the host
	// (HostBusy).
	HostPod string
}

// Load is what the unfinished crawls hold.
type Load struct {
	PerNode map[string]int
	// BusyHosts maps a host hash to the namespace/name of its crawler Pod.
	BusyHosts map[string]string
}

// LoadOf adds up slots.
func LoadOf(slots []Slot) Load {
	l := Load{PerNode: map[string]int{}, BusyHosts: map[string]string{}}
	for _, s := range slots {
		l.PerNode[s.Node]++
		l.BusyHosts[s.Host] = s.Pod.String()
	}
	return l
}

// Plan decides which of waiters, sorted oldest due first, start now and
// where, given what runs: each in turn takes the node egress.Choose picks
// for it among the slots still free and claims its host, so an older
// waiter always gets a slot or a host before a younger one. It stops at
// the first point where no slot is left anywhere.
func Plan(waiters []*Waiter, load Load, nodes []egress.Node, maxPerNode int) map[types.NamespacedName]egress.Node {
	planned := withLoad(nodes, load)
	free := 0
	for _, n := range planned {
		free += n.Free(maxPerNode)
	}
	out := map[types.NamespacedName]egress.Node{}
	claimed := map[string]bool{}
	for _, w := range waiters {
		if free == 0 {
			break
		}
		if _, busy := load.BusyHosts[w.Host]; busy || claimed[w.Host] {
			continue
		}
		n, ok := egress.Choose(planned, w.Node, w.Site, maxPerNode)
		if !ok {
			continue
		}
		for i := range planned {
			if planned[i].Name == n.Name {
				planned[i].Running++
			}
		}
		free--
		claimed[w.Host] = true
		out[w.Target] = n
	}
	return out
}

// Why says why a waiter that Plan did not start waits, in the terms of
// what runs now.
func Why(w Waiter, load Load, nodes []egress.Node, maxPerNode int) Decision {
	if len(nodes) == 0 {
		return Decision{Wait: NoNode}
	}
	if pod, busy := load.BusyHosts[w.Host]; busy {
		return Decision{Wait: HostBusy, HostPod: pod}
	}
	n, ok := egress.Choose(withLoad(nodes, load), w.Node, w.Site, maxPerNode)
	switch {
	case ok:
		return Decision{Wait: Behind}
	case n.Name != "":
		return Decision{Wait: NodeFull, Node: n}
	default:
		return Decision{Wait: AllFull}
	}
}

// withLoad returns a copy of nodes with Running taken from load.
func withLoad(nodes []egress.Node, load Load) []egress.Node {
	out := make([]egress.Node, len(nodes))
	for i, n := range nodes {
		n.Running = load.PerNode[n.Name]
		out[i] = n
	}
	return out
}
