package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, mods ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"crawl.lohisoft.com/egress": "true"}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "79.139.58.98"}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mods {
		m(&n)
	}
	return n
}

func TestEgressNodes(t *testing.T) {
	nodes := []corev1.Node{
		node("b-ok"),
		node("a-ok", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
				{Type: corev1.NodeExternalIP, Address: "2001:db8::1"},
				{Type: corev1.NodeExternalIP, Address: "79.139.58.121"},
			}
		}),
		node("no-label", func(n *corev1.Node) { n.Labels = nil }),
		node("not-ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
		node("no-conditions", func(n *corev1.Node) { n.Status.Conditions = nil }),
		node("cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("ipv6-only", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "2001:db8::2"}}
		}),
		node("internal-only", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "79.139.58.1"}}
		}),
		node("fails-fcrdns"),
		node("unpublished-ip", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}}
		}),
	}
	got := EgressNodes(nodes, EgressFilter{
		Healthy:     func(name string) bool { return name != "fails-fcrdns" },
		ExpectedIPs: map[string]bool{"79.139.58.98": true, "79.139.58.121": true},
	})
	want := []EgressNode{{Name: "a-ok", IP: "79.139.58.121"}, {Name: "b-ok", IP: "79.139.58.98"}}
	if len(got) != len(want) {
		t.Fatalf("EgressNodes = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("EgressNodes[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestEgressNodesWithoutExpectedIPsTakesAnyIPv4(t *testing.T) {
	n := node("any", func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}}
	})
	if got := EgressNodes([]corev1.Node{n}, EgressFilter{}); len(got) != 1 || got[0].IP != "203.0.113.7" {
		t.Errorf("EgressNodes = %+v", got)
	}
}

func TestChooseEgressNode(t *testing.T) {
	two := func(a, b int) []EgressNode {
		return []EgressNode{{Name: "n1", IP: "1.1.1.1", Running: a}, {Name: "n2", IP: "2.2.2.2", Running: b}}
	}
	tests := []struct {
		name    string
		nodes   []EgressNode
		current string
		want    string
		ok      bool
	}{
		{name: "no nodes", nodes: nil, ok: false},
		{name: "least loaded", nodes: two(3, 1), want: "n2", ok: true},
		{name: "sticky even if busier", nodes: two(3, 0), current: "n1", want: "n1", ok: true},
		{name: "sticky node full waits", nodes: two(4, 0), current: "n1", want: "n1", ok: false},
		{name: "current node gone moves", nodes: two(2, 1), current: "n9", want: "n2", ok: true},
		{name: "all full", nodes: two(4, 4), ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ChooseEgressNode(tt.nodes, tt.current, "https://example.com:443", 4)
			if ok != tt.ok || (tt.want != "" && got.Name != tt.want) {
				t.Errorf("ChooseEgressNode = %q, %v; want %q, %v", got.Name, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestChooseEgressNodeSpreadsSitesStably(t *testing.T) {
	nodes := []EgressNode{{Name: "n1"}, {Name: "n2"}}
	counts := map[string]int{}
	for i := range 200 {
		key := "https://site" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example:443"
		first, _ := ChooseEgressNode(nodes, "", key, 4)
		again, _ := ChooseEgressNode(nodes, "", key, 4)
		if first != again {
			t.Fatalf("choice for %s not stable", key)
		}
		counts[first.Name]++
	}
	if counts["n1"] < 60 || counts["n2"] < 60 {
		t.Errorf("sites not spread over equally loaded nodes: %v", counts)
	}
}
