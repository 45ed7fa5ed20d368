package egress

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// node is a Ready, labelled egress node with one public IPv4.
func node(name, ip string, mods ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{DefaultLabel: DefaultValue}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mods {
		m(&n)
	}
	return n
}

var (
	notReady     = func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	noConditions = func(n *corev1.Node) { n.Status.Conditions = nil }
	unknown      = func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }
	tainted      = func(key string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	cordoned   = func(n *corev1.Node) { n.Spec.Unschedulable = true }
	unlabelled = func(n *corev1.Node) { n.Labels = nil }
	deleting   = func(n *corev1.Node) { n.DeletionTimestamp = ptr.To(metav1.Now()) }
	addresses  = func(a ...corev1.NodeAddress) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Status.Addresses = a }
	}
)

// verifiedAt says which node the self-check verified at which address.
func verifiedAt(byNode map[string]string) func(node, ip string) string {
	return func(node, ip string) string {
		if byNode[node] == ip {
			return node + ".bot.lohisoft.com"
		}
		return ""
	}
}

// TestMayCrawlAndPublished is the map of egress node states: for each, may
// it take a crawl, and is its address published? The two differ on purpose
// only where a node is unhealthy for scheduling (NotReady, cordoned): its
// address stays the bot's, so it stays published.
func TestMayCrawlAndPublished(t *testing.T) {
	v := verifiedAt(map[string]string{
		"ready": "79.139.58.98", "not-ready": "79.139.58.2", "no-conditions": "79.139.58.3",
		"cordoned": "79.139.58.4", "unlabelled": "79.139.58.5", "deleting": "79.139.58.6",
		"unknown": "79.139.58.9", "unreachable": "79.139.58.10", "not-ready-taint": "79.139.58.11",
		"moved":      "79.139.58.70", // verified under its old address
		"unexpected": "203.0.113.9",
	})
	tests := []struct {
		name                string
		node                corev1.Node
		policy              Policy
		mayCrawl, published bool
		publishedHostname   string
	}{
		{"ready, verified", node("ready", "79.139.58.98"), Policy{Verified: v}, true, true, "ready.bot.lohisoft.com"},
		{"NotReady", node("not-ready", "79.139.58.2", notReady), Policy{Verified: v}, false, true, "not-ready.bot.lohisoft.com"},
		{"Ready Unknown (kubelet stopped reporting)", node("unknown", "79.139.58.9", unknown), Policy{Verified: v}, false, true, "unknown.bot.lohisoft.com"},
		{"Ready, unreachable taint not yet removed", node("unreachable", "79.139.58.10", tainted(corev1.TaintNodeUnreachable)), Policy{Verified: v}, false, true, "unreachable.bot.lohisoft.com"},
		{"Ready, not-ready taint not yet removed", node("not-ready-taint", "79.139.58.11", tainted(corev1.TaintNodeNotReady)), Policy{Verified: v}, false, true, "not-ready-taint.bot.lohisoft.com"},
		{"Ready, the egress taint only", node("ready", "79.139.58.98", tainted(DefaultLabel)), Policy{Verified: v}, true, true, "ready.bot.lohisoft.com"},
		{"no Ready condition yet", node("no-conditions", "79.139.58.3", noConditions), Policy{Verified: v}, false, true, "no-conditions.bot.lohisoft.com"},
		{"cordoned", node("cordoned", "79.139.58.4", cordoned), Policy{Verified: v}, false, true, "cordoned.bot.lohisoft.com"},
		{"not labelled as egress", node("unlabelled", "79.139.58.5", unlabelled), Policy{Verified: v}, false, false, ""},
		{"being deleted", node("deleting", "79.139.58.6", deleting), Policy{Verified: v}, false, false, ""},
		{"IPv6 ExternalIP only", node("v6", "2001:db8::2"), Policy{Verified: v}, false, false, ""},
		{"InternalIP only", node("internal", "79.139.58.1", addresses(corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "79.139.58.1"})), Policy{Verified: v}, false, false, ""},
		{"unverified, FCrDNS optional", node("unchecked", "79.139.58.8"), Policy{Verified: v}, true, true, ""},
		{"unverified, FCrDNS required", node("unchecked", "79.139.58.8"), Policy{Verified: v, RequireFCrDNS: true}, false, false, ""},
		{"verified under an old address, required", node("moved", "79.139.58.7"), Policy{Verified: v, RequireFCrDNS: true}, false, false, ""},
		{"verified, required", node("ready", "79.139.58.98"), Policy{Verified: v, RequireFCrDNS: true}, true, true, "ready.bot.lohisoft.com"},
		{"NotReady, verified, required", node("not-ready", "79.139.58.2", notReady), Policy{Verified: v, RequireFCrDNS: true}, false, true, "not-ready.bot.lohisoft.com"},
		{"not an expected address", node("unexpected", "203.0.113.9"), Policy{Verified: v, Expected: MustParseAddresses("79.139.58.98")}, false, false, ""},
		{"an expected address", node("ready", "79.139.58.98"), Policy{Verified: v, Expected: MustParseAddresses("79.139.58.98, 79.139.58.121")}, true, true, "ready.bot.lohisoft.com"},
		{"other selector", node("ready", "79.139.58.98"), Policy{Selector: Selector{LabelKey: "pool", LabelValue: "egress"}}, false, false, ""},
		{"nothing verifies", node("ready", "79.139.58.98"), Policy{}, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []corev1.Node{tt.node}
			crawl := tt.policy.MayCrawl(nodes)
			if got := len(crawl) == 1; got != tt.mayCrawl {
				t.Errorf("may crawl = %v, want %v", got, tt.mayCrawl)
			}
			pub := tt.policy.Published(nodes)
			if got := len(pub) == 1; got != tt.published {
				t.Fatalf("published = %v, want %v", got, tt.published)
			}
			if tt.published && (pub[0].Hostname != tt.publishedHostname || pub[0].IP != ExternalIPv4(&tt.node)) {
				t.Errorf("published %+v, want hostname %q", pub[0], tt.publishedHostname)
			}
			if tt.mayCrawl && !tt.published {
				t.Error("a node that may crawl must be published: ips.json lists every address crawls come from")
			}
		})
	}
}

func TestMayCrawlSortsAndTakesTheFirstIPv4(t *testing.T) {
	nodes := []corev1.Node{
		node("b-ok", "79.139.58.98"),
		node("a-ok", "", addresses(
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "2001:db8::1"},
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "79.139.58.121"},
		)),
	}
	got := Policy{}.MayCrawl(nodes)
	want := []Node{{Name: "a-ok", IP: "79.139.58.121"}, {Name: "b-ok", IP: "79.139.58.98"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MayCrawl = %+v, want %+v", got, want)
	}
}

func TestParseAddresses(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ,", want: nil},
		{in: "79.139.58.98", want: []string{"79.139.58.98"}},
		{in: "79.139.58.98, 79.139.58.121,79.139.58.98", want: []string{"79.139.58.98", "79.139.58.121"}},
		{in: "2001:db8::1", wantErr: true},
		{in: "79.139.58.98,example.com", wantErr: true},
		{in: "79.139.58.256", wantErr: true},
		{in: "::ffff:79.139.58.98", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAddresses(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got.List(), tt.want) {
			t.Errorf("ParseAddresses(%q) = %v, %v; want %v, error %v", tt.in, got.List(), err, tt.want, tt.wantErr)
		}
	}
	empty := Addresses{}
	if !empty.Allows("203.0.113.1") {
		t.Error("an empty set must allow any address")
	}
	set := MustParseAddresses("79.139.58.98")
	if !set.Allows("79.139.58.98") || set.Allows("79.139.58.99") {
		t.Error("a set must allow exactly its addresses")
	}
}

func TestChoose(t *testing.T) {
	two := func(a, b int) []Node {
		return []Node{{Name: "n1", IP: "1.1.1.1", Running: a}, {Name: "n2", IP: "2.2.2.2", Running: b}}
	}
	tests := []struct {
		name    string
		nodes   []Node
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
		{name: "a node on probation takes one crawl", nodes: probation(two(0, 3), "n1"), want: "n1", ok: true},
		{name: "a node on probation running its one crawl takes none", nodes: probation(two(1, 4), "n1"), ok: false},
		{name: "a site on a node on probation waits for its one slot", nodes: probation(two(1, 0), "n1"), current: "n1", want: "n1", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Choose(tt.nodes, tt.current, "https://example.com:443", 4)
			if ok != tt.ok || (tt.want != "" && got.Name != tt.want) {
				t.Errorf("Choose = %q, %v; want %q, %v", got.Name, ok, tt.want, tt.ok)
			}
		})
	}
}

func probation(nodes []Node, name string) []Node {
	for i := range nodes {
		nodes[i].Probation = nodes[i].Name == name
	}
	return nodes
}

func TestChooseSpreadsSitesStably(t *testing.T) {
	nodes := []Node{{Name: "n1"}, {Name: "n2"}}
	counts := map[string]int{}
	for i := range 200 {
		key := "https://site" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example:443"
		first, _ := Choose(nodes, "", key, 4)
		again, _ := Choose(nodes, "", key, 4)
		if first != again {
			t.Fatalf("choice for %s not stable", key)
		}
		counts[first.Name]++
	}
	if counts["n1"] < 60 || counts["n2"] < 60 {
		t.Errorf("sites not spread over equally loaded nodes: %v", counts)
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		label, taint string
		want         Selector
		wantErr      bool
	}{
		{label: "crawl.lohisoft.com/egress=true", taint: "crawl.lohisoft.com/egress=true:NoSchedule", want: DefaultSelector()},
		{label: "node-role/egress=", taint: "dedicated=crawler:NoExecute",
			want: Selector{LabelKey: "node-role/egress", TaintKey: "dedicated", TaintValue: "crawler", TaintEffect: corev1.TaintEffectNoExecute}},
		{label: "egress", taint: "a=b:NoSchedule", wantErr: true},
		{label: "bad key!=x", taint: "a=b:NoSchedule", wantErr: true},
		{label: "a=b", taint: "a=b", wantErr: true},
		{label: "a=b", taint: "a=b:Sometimes", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.label, tt.taint)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseSelector(%q, %q) = %+v, %v", tt.label, tt.taint, got, err)
		}
	}
}
