package egress

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultLostAfter is how long an egress node may stay not Ready, counted
// from its Ready condition's lastTransitionTime, before the crawls on it
// are declared lost (--egress-node-lost-after).
//
// The node lifecycle controller marks a node Unknown only after its
// --node-monitor-grace-period (40 s by default) without a heartbeat, so a
// stopped kubelet costs its crawls about 40 s + 1 m before they start
// again elsewhere. A minute rides out a kubelet restart or a short
// network blip, which would otherwise throw away a crawl that is still
// running fine; much longer and a site's crawl, and its host's one slot,
// wait on a node that is gone (crawls run minutes, not hours).
const DefaultLostAfter = time.Minute

// Loss says whether the crawls on an egress node are lost: the node is
// gone, or has not been Ready for longer than the grace.
type Loss struct {
	Lost bool
	// Why names the node and its state, for messages ("" when Ready).
	Why string
	// In is how long until the node's crawls are lost, when it is not
	// Ready but still within the grace; zero otherwise.
	In time.Duration
}

// NodeLoss decides, at now, whether the crawls on node (nil: the Node is
// gone, or no longer an egress node) are lost after a grace of after. Only
// the Ready condition counts: the unreachable and not-ready taints follow
// it, and a tainted node that reports Ready again is a kubelet that is back.
func NodeLoss(name string, node *corev1.Node, now time.Time, after time.Duration) Loss {
	if node == nil {
		return Loss{Lost: true, Why: fmt.Sprintf("egress node %s is gone (deleted, or no longer labelled as an egress node)", name)}
	}
	c := readyCondition(node)
	if c != nil && c.Status == corev1.ConditionTrue {
		return Loss{}
	}
	status, since, detail := corev1.ConditionStatus("missing"), node.CreationTimestamp.Time, "the node has not reported"
	if c != nil {
		status, since, detail = c.Status, c.LastTransitionTime.Time, c.Message
		if since.IsZero() {
			since = c.LastHeartbeatTime.Time
		}
	}
	l := Loss{Why: fmt.Sprintf("egress node %s has been Ready=%s since %s (%s)", name, status, since.UTC().Format(time.RFC3339), detail)}
	if left := since.Add(after).Sub(now); left > 0 {
		l.In = left
		return l
	}
	l.Lost = true
	return l
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
