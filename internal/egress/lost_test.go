package egress

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeLoss(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	since := func(status corev1.ConditionStatus, ago time.Duration) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Conditions[0].Status = status
			n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-ago))
		}
	}
	heartbeatOnly := func(n *corev1.Node) {
		n.Status.Conditions[0].Status = corev1.ConditionUnknown
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(now.Add(-2 * time.Minute))
	}
	created := func(ago time.Duration) func(*corev1.Node) {
		return func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
	}
	ptr := func(n corev1.Node) *corev1.Node { return &n }
	tests := []struct {
		name string
		node *corev1.Node
		lost bool
		in   time.Duration
		why  string
	}{
		{"Ready", ptr(node("n", "79.139.58.98")), false, 0, ""},
		{"Ready for long, tainted unreachable (kubelet back, taint not yet removed)",
			ptr(node("n", "79.139.58.98", since(corev1.ConditionTrue, time.Hour), tainted(corev1.TaintNodeUnreachable))), false, 0, ""},
		{"Unknown within the grace", ptr(node("n", "79.139.58.98", since(corev1.ConditionUnknown, 20*time.Second))), false, 40 * time.Second, "Ready=Unknown since 2026-12-01T11:59:40Z"},
		{"Unknown exactly at the grace", ptr(node("n", "79.139.58.98", since(corev1.ConditionUnknown, time.Minute))), true, 0, "Ready=Unknown"},
		{"Unknown past the grace", ptr(node("n", "79.139.58.98", since(corev1.ConditionUnknown, 5*time.Minute))), true, 0, "egress node n has been Ready=Unknown"},
		{"False past the grace", ptr(node("n", "79.139.58.98", since(corev1.ConditionFalse, 2*time.Minute))), true, 0, "Ready=False"},
		{"no transition time: the last heartbeat counts", ptr(node("n", "79.139.58.98", heartbeatOnly)), true, 0, "since 2026-12-01T11:58:00Z"},
		{"no Ready condition, new node", ptr(node("n", "79.139.58.98", noConditions, created(10*time.Second))), false, 50 * time.Second, "Ready=missing"},
		{"no Ready condition, old node", ptr(node("n", "79.139.58.98", noConditions, created(time.Hour))), true, 0, "has not reported"},
		{"gone", nil, true, 0, "egress node n is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NodeLoss("n", tt.node, now, DefaultLostAfter)
			if got.Lost != tt.lost || got.In != tt.in || !strings.Contains(got.Why, tt.why) {
				t.Errorf("NodeLoss = %+v; want lost %v in %v, why containing %q", got, tt.lost, tt.in, tt.why)
			}
			if tt.why == "" && got.Why != "" {
				t.Errorf("a Ready node has no loss to tell: %q", got.Why)
			}
		})
	}
}
