package egress

import (
	"sort"
	"sync"
	"time"
)

// Default quarantine lengths: the first after a mismatch, and the longest,
// which mismatches in a row double up to.
const (
	DefaultQuarantine    = 5 * time.Minute
	DefaultMaxQuarantine = time.Hour
)

// Quarantine keeps crawls off egress nodes whose crawlers could not verify
// that sites see the node's published address (crawler exit code
// runreport.ExitEgressUnverified: the echo reported another address, or
// none). Each crawler checks before its first request to a site, so the
// quarantine does not guard the promise, the check does; the quarantine
// saves crawls that would only fail there, and says which node to fix.
//
// A quarantined node takes no crawls until its quarantine ends. Then it is
// on probation: it takes one crawl at a time, whose crawler checks again,
// until one started after the quarantine verifies the address; then it is
// used as before. A probe that fails again quarantines the node for twice
// as long, up to Max.
//
// The state is this manager's memory. A restart (or a new leader) forgets
// it, which opens no window: every crawl still checks first, so a node
// that is still wrong is quarantined again by its first crawler, at the
// cost of that one crawl being retried elsewhere.
type Quarantine struct {
	// Base is the first quarantine of a node (DefaultQuarantine when
	// zero); Max the longest (DefaultMaxQuarantine, or Base if longer).
	Base, Max time.Duration

	mu    sync.Mutex
	nodes map[string]*quarantined
}

// quarantined is what is known of one node since its first mismatch.
type quarantined struct {
	// ip is the published address the node was checked against.
	ip string
	// observed is what the echo reported last ("" when nothing usable).
	observed string
	// inARow counts mismatches since the last verification.
	inARow int
	until  time.Time
	length time.Duration
	// run started the quarantine, or ended it (verifiedBy): asked again
	// for the same run (a reconcile replayed after its status patch
	// failed), the answer is the same.
	run, verifiedBy string
	// verified is set once a probe verified the address after the last
	// mismatch: the node is in use again.
	verified bool
}

// Mismatch records that run, a crawler on node, could not verify ip, the
// node's published address (observed is what the echo reported, "" if
// nothing usable), at now. It reports whether this run started a
// quarantine, and how long it lasts; a mismatch during a quarantine
// (another crawl that was already running there) changes nothing but
// observed.
func (q *Quarantine) Mismatch(node, run, ip, observed string, now time.Time) (started bool, length time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nodes == nil {
		q.nodes = map[string]*quarantined{}
	}
	e := q.nodes[node]
	if e == nil || e.verified {
		e = &quarantined{}
		q.nodes[node] = e
	}
	e.ip, e.observed = ip, observed
	if now.Before(e.until) {
		if run == e.run {
			return true, e.length
		}
		return false, 0
	}
	e.inARow++
	e.run, e.length = run, q.length(e.inARow)
	e.until = now.Add(e.length)
	return true, e.length
}

// length is the quarantine after n mismatches in a row.
func (q *Quarantine) length(n int) time.Duration {
	base := q.Base
	if base <= 0 {
		base = DefaultQuarantine
	}
	limit := max(q.Max, base)
	if q.Max <= 0 {
		limit = max(DefaultMaxQuarantine, base)
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Verified records that run, a crawl on node started at started, verified
// ip, the address the node published when the run started. That may be
// another address than the one that failed: a node fixed by publishing
// the address sites do see is fixed too. Only a crawl started after the
// quarantine ended lifts it: one that was already running may have
// checked before the address went wrong (started has the API's one-second
// resolution, hence the truncation). It reports whether the node is in
// use again because of this run.
func (q *Quarantine) Verified(node, run, ip string, started time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.nodes[node]
	if e == nil || started.Before(e.until.Truncate(time.Second)) {
		return false
	}
	if e.verified {
		return run == e.verifiedBy
	}
	e.ip, e.verified, e.verifiedBy, e.inARow = ip, true, run, 0
	return true
}

// Forget drops what is known of a node that is gone.
func (q *Quarantine) Forget(node string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.nodes, node)
}

// Apply returns the nodes that may take crawls at now: quarantined ones
// are left out, and those on probation marked so (one crawl at a time).
func (q *Quarantine) Apply(nodes []Node, now time.Time) []Node {
	if q == nil {
		return nodes
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.nodes) == 0 {
		return nodes
	}
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		e := q.nodes[n.Name]
		switch {
		case e == nil || e.verified:
		case now.Before(e.until):
			continue
		default:
			n.Probation = true
		}
		out = append(out, n)
	}
	return out
}

// NodeState is what the quarantine knows of one node.
type NodeState struct {
	Node string
	// Unverified is true from a mismatch until a probe verifies the node.
	Unverified bool
	// Published and Observed are the addresses of the last mismatch.
	Published, Observed string
	Until               time.Time
}

// States lists every node that has had a mismatch, by name.
func (q *Quarantine) States() []NodeState {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]NodeState, 0, len(q.nodes))
	for name, e := range q.nodes {
		out = append(out, NodeState{Node: name, Unverified: !e.verified, Published: e.ip, Observed: e.observed, Until: e.until})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
